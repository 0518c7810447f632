package lethe_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/fulltext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// textProps are the properties of a container whose /text (en-US) and
// /doc/body (lang) have full-text indexes.
func textProps(lang string) lethe.ContainerProperties {
	return lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}},
		FullTextPolicy: &lethe.FullTextPolicy{DefaultLanguage: "en-US", FullTextPaths: []lethe.FullTextPath{
			{Path: "/text"}, {Path: "/doc/body", Language: lang}}},
		IndexingPolicy: &lethe.IndexingPolicy{FullTextIndexes: []lethe.FullTextIndex{{Path: "/text"}, {Path: "/doc/body"}}},
	}
}

// TestTextIndexDifferential: full-text filters and FullTextScore rankings
// through a container's full-text indexes return exactly what scans
// return (items, projection, order, ties broken alike), while items are
// created, upserted, replaced, patched, deleted and written in batches,
// expire between queries (purged or not), the store is closed and
// recovered, and the policy drops an index, adds it back and changes a
// path's language; the index's BM25 scores are those of a reference
// computed from the live items.
func TestTextIndexDifferential(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 26))
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	t.Cleanup(func() { s.Close() })
	lang := "en-US"
	c := mustContainer(t, s, textProps(lang))
	words := strings.Fields("search searching searched index indexes the cosmos data lethe expire expiring go Daten Suche")
	text := func() string {
		switch rng.IntN(14) {
		case 0:
			return `42`
		case 1:
			return `null`
		case 2:
			return `""`
		}
		var b []string
		for range rng.IntN(7) {
			b = append(b, words[rng.IntN(len(words))])
		}
		return strconv.Quote(strings.Join(b, " "))
	}
	doc := func(id, pk string) string {
		ttl := ""
		if rng.IntN(4) == 0 {
			ttl = fmt.Sprintf(`,"ttl":%d`, 1+rng.IntN(5))
		}
		body := ""
		if rng.IntN(5) > 0 {
			body = fmt.Sprintf(`,"doc":{"body":%s}`, text())
		}
		if rng.IntN(10) == 0 {
			return fmt.Sprintf(`{"id":%q,"pk":%q,"n":%d%s%s}`, id, pk, rng.IntN(10), body, ttl)
		}
		return fmt.Sprintf(`{"id":%q,"pk":%q,"n":%d,"text":%s%s%s}`, id, pk, rng.IntN(10), text(), body, ttl)
	}
	write := func() {
		// An id is in one partition alone: the scores are by id.
		n := rng.IntN(50)
		id, pk := strconv.Itoa(n), strconv.Itoa(n%3)
		key := lethe.NewPartitionKeyString(pk)
		var err error
		switch rng.IntN(8) {
		case 0:
			_, err = c.DeleteItem(ctx, key, id, nil)
		case 1:
			_, err = c.CreateItem(ctx, key, []byte(doc(id, pk)), nil)
			if errors.Is(err, lethe.ErrConflict) {
				err = nil
			}
		case 2:
			_, err = c.ReplaceItem(ctx, key, id, []byte(doc(id, pk)), nil)
		case 3:
			var ops lethe.PatchOperations
			ops.AppendSet("/text", words[rng.IntN(len(words))]+" "+words[rng.IntN(len(words))])
			_, err = c.PatchItem(ctx, key, id, ops, nil)
		case 4:
			b := c.NewTransactionalBatch(key)
			b.UpsertItem([]byte(doc(id, pk)), nil)
			b.UpsertItem([]byte(doc(strconv.Itoa(51+3*rng.IntN(4)+n%3), pk)), nil)
			_, err = c.ExecuteTransactionalBatch(ctx, b, nil)
		default:
			_, err = c.UpsertItem(ctx, key, []byte(doc(id, pk)), nil)
		}
		if err != nil {
			require.ErrorIs(t, err, lethe.ErrNotFound)
		}
	}
	run := func(q string, pk lethe.PartitionKey, params []lethe.QueryParameter) []string {
		t.Helper()
		p := c.NewQueryItemsPager(q, pk, &lethe.QueryOptions{QueryParameters: params, PageSizeHint: 100})
		var out []string
		for p.More() {
			r, err := p.NextPage(ctx)
			require.NoError(t, err, q)
			out = append(out, texts(r.Items)...)
		}
		return out
	}
	for range 60 {
		write()
	}
	used := false
	for round := range 40 {
		for range rng.IntN(12) {
			write()
		}
		clock.Advance(time.Duration(rng.IntN(2000)) * time.Millisecond)
		switch round % 10 {
		case 3:
			_, err := c.Purge(ctx)
			require.NoError(t, err)
		case 5:
			require.NoError(t, s.Close())
			s = openDurable(t, dir, clock)
			var err error
			c, err = s.Container("c")
			require.NoError(t, err)
		case 7:
			props := textProps(lang)
			props.IndexingPolicy.FullTextIndexes = props.IndexingPolicy.FullTextIndexes[1:]
			require.NoError(t, c.Replace(ctx, props))
			assert.LessOrEqual(t, lethe.TextIndexCount(c), 1, "the index of /text is dropped with its policy")
		case 8:
			if lang == "en-US" {
				lang = "de-DE"
			} else {
				lang = "en-US"
			}
			require.NoError(t, c.Replace(ctx, textProps(lang)))
			assert.Zero(t, lethe.TextIndexCount(c), "the index of /doc/body is dropped when its language changes")
		}
		word := func() string { return words[rng.IntN(len(words))] }
		params := []lethe.QueryParameter{{Name: "@a", Value: word()}, {Name: "@b", Value: word()},
			{Name: "@p", Value: word() + " " + word()}, {Name: "@k", Value: []int{1, 2, 3, 5, 10}[rng.IntN(5)]}}
		pk := lethe.NewPartitionKey()
		if rng.IntN(3) == 0 {
			pk = lethe.NewPartitionKeyString(strconv.Itoa(rng.IntN(3)))
		}
		for _, q := range []string{
			`SELECT TOP @k c.id, c.pk, c.text FROM c ORDER BY RANK FullTextScore(c.text, @a, @b)`,
			`SELECT TOP @k VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, [@a, @p])`,
			`SELECT VALUE c.id FROM c WHERE c.n > 3 ORDER BY RANK FullTextScore(c.text, @a) OFFSET 1 LIMIT @k`,
			`SELECT TOP @k VALUE c.id FROM c ORDER BY RANK FullTextScore(c.doc.body, @a, "Suche")`,
			`SELECT TOP @k VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, @a), FullTextScore(c.doc.body, @b))`,
			`SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, @a)`,
			`SELECT c.id, c.n FROM c WHERE FullTextContains(c.text, @p) AND c.n > 2`,
			`SELECT VALUE c.id FROM c WHERE FullTextContainsAll(c.text, @a, @b)`,
			`SELECT VALUE c.id FROM c WHERE FullTextContainsAny(c.doc.body, @a, @p, "the")`,
			`SELECT TOP 3 VALUE c.id FROM c WHERE FullTextContains(c.text, @a) ORDER BY c.n`,
			`SELECT TOP @k VALUE c.id FROM c WHERE FullTextContainsAny(c.text, @a, @b) ORDER BY RANK FullTextScore(c.text, @a, @b)`,
		} {
			indexed := run(q, pk, params)
			lethe.SetUseIndexes(c, false)
			scanned := run(q, pk, params)
			lethe.SetUseIndexes(c, true)
			require.Equal(t, scanned, indexed, "round %d: %s %v", round, q, params)
		}
		if lethe.TextIndexCount(c) > 0 {
			used = true
		}
		// The scores of the index of /text against BM25 by brute force
		// over the live items.
		strs := []string{word(), word()}
		got := lethe.TextScores(c, []string{"text"}, strs)
		if got == nil {
			continue
		}
		require.Equal(t, referenceScores(t, run(`SELECT c.id, c.text FROM c`, lethe.NewPartitionKey(), nil), strs), roundScores(got), "round %d: %v", round, strs)
	}
	assert.True(t, used, "the full-text indexes were made")
}

// referenceScores computes, from items {"id", "text"}, the BM25 score of
// each item whose text holds a term of strs (en-US), rounded to 9 digits.
func referenceScores(t *testing.T, items []string, strs []string) map[string]float64 {
	var terms []string
	for _, s := range strs {
		for _, w := range fulltext.Terms(s, "en-US") {
			if !contains(terms, w) {
				terms = append(terms, w)
			}
		}
	}
	type item struct {
		ID   string `json:"id"`
		Text any    `json:"text"`
	}
	docs := map[string][]string{}
	total := 0
	for _, raw := range items {
		var it item
		require.NoError(t, json.Unmarshal([]byte(raw), &it))
		if s, ok := it.Text.(string); ok {
			docs[it.ID] = fulltext.Terms(s, "en-US")
			total += len(docs[it.ID])
		}
	}
	n := float64(len(docs))
	avg := float64(total) / n
	out := map[string]float64{}
	for _, term := range terms {
		df := 0.0
		for _, ts := range docs {
			if contains(ts, term) {
				df++
			}
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for id, ts := range docs {
			tf := 0.0
			for _, w := range ts {
				if w == term {
					tf++
				}
			}
			if tf > 0 {
				out[id] += idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*float64(len(ts))/avg))
			}
		}
	}
	return roundScores(out)
}

func roundScores(m map[string]float64) map[string]float64 {
	for k, v := range m {
		m[k] = math.Round(v*1e9) / 1e9
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestTextIndexBuildWhileWriting: writes made while a full-text index is
// being made (between the shards it reads, replayed with and without the
// lock) are in it: afterwards, queries through it return what scans
// return, and its scores are the reference's.
func TestTextIndexBuildWhileWriting(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := mustContainer(t, s, textProps("en-US"))
	words := strings.Fields("search searching data index cosmos expire lethe go")
	doc := func(id string, i int, ttl string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"pk":"a","text":"%s %s %s"%s}`, id, words[i%8], words[i%5], words[i%3], ttl)
	}
	const n = 300
	for i := range n {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString("a"), doc(fmt.Sprintf("i%d", i), i, ""), nil)
		require.NoError(t, err)
	}
	was := lethe.SetCatchUpFew(c, 4)
	t.Cleanup(func() { lethe.SetCatchUpFew(c, was) })
	rounds := writeWhileBuilding(t, c, n, doc)
	query := `SELECT TOP 7 c.id, c.text FROM c ORDER BY RANK FullTextScore(c.text, @a, @b)`
	params := []lethe.QueryParameter{{Name: "@a", Value: "search"}, {Name: "@b", Value: "cosmos"}}
	queryAll(t, c, query, params, lethe.NewPartitionKey()) // makes the index
	lethe.SetAfterBuildShard(c, nil)
	require.Positive(t, rounds())
	require.Equal(t, 1, lethe.TextIndexCount(c))
	clock.Advance(2 * time.Second) // the items written with "ttl": 1 expire
	for _, q := range [][2]string{{"search", "cosmos"}, {"data", "go"}, {"expiring", "lethe"}} {
		params := []lethe.QueryParameter{{Name: "@a", Value: q[0]}, {Name: "@b", Value: q[1]}}
		for _, text := range []string{query, `SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, @a)`} {
			withIndex, _ := queryAll(t, c, text, params, lethe.NewPartitionKey())
			was := lethe.SetUseIndexes(c, false)
			scan, _ := queryAll(t, c, text, params, lethe.NewPartitionKey())
			lethe.SetUseIndexes(c, was)
			require.Equal(t, scan, withIndex, "%v", q)
		}
		live, _ := queryAll(t, c, `SELECT c.id, c.text FROM c`, nil, lethe.NewPartitionKey())
		require.Equal(t, referenceScores(t, live, q[:]), roundScores(lethe.TextScores(c, []string{"text"}, q[:])))
	}
}

// TestTextIndexUse: the index is made for a path of the policy's
// full-text indexes alone; a ranking it cannot answer alone (fewer items
// hold a term than TOP asks for) is a scan's, the others last in item
// order; an expired item is never a result, purged or not.
func TestTextIndexUse(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	props := textProps("en-US")
	props.FullTextPolicy.FullTextPaths = append(props.FullTextPolicy.FullTextPaths, lethe.FullTextPath{Path: "/other"})
	c := mustContainer(t, s, props)
	for i, text := range []string{"searching data", "data data data", "nothing", "search search", "the", "searches"} {
		ttl := ""
		if i == 3 {
			ttl = `,"ttl":10`
		}
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString("a"), fmt.Appendf(nil, `{"id":"%d","pk":"a","text":%q,"other":%q%s}`, i, text, text, ttl), nil)
		require.NoError(t, err)
	}
	ids := func(q string) []string {
		got, _ := queryAll(t, c, q, nil, lethe.NewPartitionKey())
		for i := range got {
			got[i] = strings.Trim(got[i], `"`)
		}
		return got
	}
	assert.Equal(t, []string{"0", "3", "5"}, ids(`SELECT VALUE c.id FROM c WHERE FullTextContains(c.other, "searched")`))
	assert.Zero(t, lethe.TextIndexCount(c), "no full-text index of /other")
	assert.Equal(t, []string{"3", "5", "0"}, ids(`SELECT TOP 3 VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, "search")`))
	assert.Equal(t, 1, lethe.TextIndexCount(c))
	assert.Equal(t, []string{"0", "3", "5"}, ids(`SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, "searched")`))
	assert.Equal(t, []string{"3", "5", "0", "1", "2", "4"}, ids(`SELECT TOP 6 VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, "search")`))

	clock.Advance(time.Minute) // item 3 expires
	assert.Equal(t, []string{"5", "0"}, ids(`SELECT TOP 2 VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, "search")`))
	assert.Equal(t, []string{"0", "5"}, ids(`SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, "search")`))
	_, err := c.Purge(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"5", "0"}, ids(`SELECT TOP 2 VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, "search")`))
}

// TestTextIndexConcurrent: queries through the full-text index run while
// other goroutines write, under -race, and each ranking has the TOP it
// asks for.
func TestTextIndexConcurrent(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, textProps("en-US"))
	words := strings.Fields("search data index cosmos expire lethe go")
	doc := func(i int) []byte {
		return fmt.Appendf(nil, `{"id":"%d","pk":"a","text":"%s %s"}`, i%100, words[i%7], words[i%5])
	}
	for i := range 100 {
		_, err := c.UpsertItem(ctx, lethe.NewPartitionKeyString("a"), doc(i), nil)
		require.NoError(t, err)
	}
	done := make(chan error, 4)
	for w := range 2 {
		go func() {
			for i := range 300 {
				var err error
				if i%5 == 0 {
					_, err = c.DeleteItem(ctx, lethe.NewPartitionKeyString("a"), strconv.Itoa((i*7+w)%100), nil)
					if errors.Is(err, lethe.ErrNotFound) {
						err = nil
					}
				} else {
					_, err = c.UpsertItem(ctx, lethe.NewPartitionKeyString("a"), doc(i*3+w), nil)
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		go func() {
			for i := range 100 {
				q := fmt.Sprintf(`SELECT TOP 5 VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, %q)`, words[i%7])
				if i%2 == 1 {
					q = fmt.Sprintf(`SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, %q)`, words[i%7])
				}
				p := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), nil)
				r, err := p.NextPage(ctx)
				if err == nil && i%2 == 0 && len(r.Items) != 5 {
					err = fmt.Errorf("%s: %d results", q, len(r.Items))
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		require.NoError(t, <-done)
	}
	assert.Equal(t, 1, lethe.TextIndexCount(c))
}
