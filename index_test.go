package lethe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queryAll runs q through one pager, page by page, and returns every result
// and the first page's index metrics.
func queryAll(t *testing.T, c *lethe.Container, q string, params []lethe.QueryParameter, pk lethe.PartitionKey) ([]string, string) {
	t.Helper()
	p := c.NewQueryItemsPager(q, pk, &lethe.QueryOptions{QueryParameters: params, PageSizeHint: 7, PopulateIndexMetrics: true})
	var out []string
	metrics := ""
	for p.More() {
		r, err := p.NextPage(ctx)
		require.NoError(t, err, q)
		if metrics == "" {
			metrics = r.IndexMetrics
		}
		out = append(out, texts(r.Items)...)
	}
	return out, metrics
}

// TestIndexDifferential: a randomized corpus, changed by random writes,
// deletes, expiries, purges and transactional batches, queried with random
// filters that an index can answer: every query returns exactly what a scan
// returns (items, order, pages), never an expired item, and the queries an
// index can serve use one.
func TestIndexDifferential(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	s, clock := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}},
		IndexingPolicy: &lethe.IndexingPolicy{CompositeIndexes: [][]lethe.CompositeIndex{
			{{Path: "/n"}, {Path: "/status", Order: lethe.CompositeIndexDescending}},
			{{Path: "/a/b", Order: lethe.CompositeIndexAscending}, {Path: "/n"}},
		}}})
	statuses := []string{"active", "pending", "paused", "banned", "p", ""}
	randValue := func() any {
		switch rng.IntN(8) {
		case 0:
			return nil
		case 1:
			return rng.IntN(2) == 0
		case 2:
			return statuses[rng.IntN(len(statuses))]
		case 3:
			return []int{rng.IntN(3)}
		case 4:
			return rng.Float64() * 10
		}
		return rng.IntN(10)
	}
	doc := func(id int) map[string]any {
		d := map[string]any{"id": fmt.Sprint("i", id), "pk": fmt.Sprint("p", id%3)}
		if rng.IntN(6) > 0 {
			d["status"] = statuses[rng.IntN(len(statuses))]
		}
		if rng.IntN(5) > 0 {
			d["n"] = randValue()
		}
		if rng.IntN(3) > 0 {
			d["a"] = map[string]any{"b": randValue()}
		}
		if rng.IntN(4) == 0 {
			d["ttl"] = 1 + rng.IntN(20)
		}
		return d
	}
	write := func() {
		id := rng.IntN(60)
		d := doc(id)
		b, err := json.Marshal(d)
		require.NoError(t, err)
		pk := lethe.NewPartitionKeyString(d["pk"].(string))
		switch rng.IntN(10) {
		case 0:
			_, _ = c.DeleteItem(ctx, pk, d["id"].(string), nil)
		case 1:
			batch := c.NewTransactionalBatch(pk)
			batch.UpsertItem(b, nil)
			batch.DeleteItem(fmt.Sprint("i", (id+3)%60), nil) // same partition
			_, err := c.ExecuteTransactionalBatch(ctx, batch, nil)
			require.NoError(t, err)
		default:
			_, err := c.UpsertItem(ctx, pk, b, nil)
			require.NoError(t, err)
		}
	}
	queries := []string{
		`SELECT * FROM c WHERE c.status = @s`,
		`SELECT VALUE c.id FROM c WHERE c.status = "active" AND c.n > 3`,
		`SELECT c.id, c.n FROM c WHERE c.n > @n`,
		`SELECT VALUE c.id FROM c WHERE c.n >= 2 AND c.n < 7`,
		`SELECT VALUE c.id FROM c WHERE @n <= c.n`,
		`SELECT VALUE c.id FROM c WHERE c.n BETWEEN 1 AND 4`,
		`SELECT VALUE c.id FROM c WHERE c.status IN ("active", "paused", @s, "active", undefined)`,
		`SELECT VALUE c.id FROM c WHERE STARTSWITH(c.status, "pa")`,
		`SELECT VALUE c.id FROM c WHERE STARTSWITH(c.status, "PA", true)`,
		`SELECT VALUE c.id FROM c WHERE c.a.b = @n OR c.n = 1`,
		`SELECT VALUE c.id FROM c WHERE c.a.b = @n`,
		`SELECT VALUE c.id FROM c WHERE c.a.b < "q"`,
		`SELECT VALUE c.id FROM c WHERE c.n = null`,
		`SELECT VALUE c.id FROM c WHERE c.n = true`,
		`SELECT VALUE c.id FROM c WHERE c.n = [0]`,
		`SELECT TOP 5 c.id FROM c WHERE c.n > 1 ORDER BY c.n DESC`,
		`SELECT VALUE COUNT(1) FROM c WHERE c.status = @s`,
		`SELECT c.status, COUNT(1) AS k FROM c WHERE c.n >= 0 GROUP BY c.status`,
		`SELECT DISTINCT VALUE c.status FROM c WHERE c.n < 5`,
		`SELECT VALUE c.id FROM c JOIN x IN c.n WHERE c.status = "p"`,
		`SELECT VALUE c.id FROM c WHERE c["status"] = "pending" AND c.id > "i3"`,
		`SELECT VALUE c.id FROM c WHERE c._ts > 0 AND c.status != "x"`,
		`SELECT VALUE c.id FROM c WHERE c.n IN (1, [1])`,
		`SELECT TOP 5 c.id, c.n FROM c ORDER BY c.n`,
		`SELECT TOP @n VALUE c.id FROM c ORDER BY c.status DESC`,
		`SELECT c.id FROM c WHERE c.n > 2 ORDER BY c.a.b OFFSET 2 LIMIT 3`,
		`SELECT TOP 3 c.id FROM c JOIN t IN c.n ORDER BY c.n DESC`,
		`SELECT TOP 2 c.id, c.a FROM c ORDER BY c.a DESC`,
	}
	// ORDER BY several paths: the first three through a composite index
	// (the second walks it backwards), the fourth has none that serves it.
	composite := []string{
		`SELECT TOP 5 c.id, c.n, c.status FROM c ORDER BY c.n, c.status DESC`,
		`SELECT TOP @n VALUE c.id FROM c ORDER BY c.n DESC, c.status ASC`,
		`SELECT c.id, c.a FROM c ORDER BY c.a.b, c.n OFFSET 2 LIMIT 4`,
		`SELECT TOP 3 c.id FROM c ORDER BY c.n, c.status`,
	}
	queries = append(queries, composite...)
	// Streamed: more results than a page (7), each page a walk of the
	// index from where the last ended.
	streamed := []string{
		`SELECT c.id, c.n FROM c ORDER BY c.n`,
		`SELECT VALUE c.id FROM c ORDER BY c.status DESC`,
		`SELECT c.id FROM c WHERE c.n >= 3 ORDER BY c.n`,
		`SELECT TOP 20 VALUE c.id FROM c ORDER BY c.a.b DESC`,
		`SELECT c.id, c.n, c.status FROM c ORDER BY c.n, c.status DESC`,
		`SELECT TOP 20 VALUE c.id FROM c ORDER BY c.n DESC, c.status ASC`,
		`SELECT c.id FROM c ORDER BY c.a.b, c.n OFFSET 3 LIMIT 12`,
		// A filter an index answers, with no ORDER BY: the candidates
		// are evaluated in item order as far as a page needs; the other
		// conditions drop most of them.
		`SELECT c.id, c.status FROM c WHERE c.n >= 1 AND c.status IN ("p", "banned")`,
		`SELECT TOP 9 VALUE c.id FROM c WHERE c.n >= 0 AND IS_STRING(c.a.b)`,
		`SELECT c.id FROM c WHERE c.status = @s AND c.n > 4 OFFSET 2 LIMIT 10`,
		// Filters the index decides: the candidates are the results.
		`SELECT * FROM c WHERE c.n >= 2 AND c.n < 8`,
		`SELECT VALUE c FROM c WHERE c.status IN ("active", "p") OFFSET 1 LIMIT 9`,
		`SELECT TOP 11 * FROM c WHERE STARTSWITH(c.status, "pa")`,
		`SELECT COUNT(1) AS k FROM c WHERE c.a.b >= 3`,
	}
	queries = append(queries, streamed...)
	usedComposite := map[string]bool{}
	used := map[string]bool{}
	for step := range 400 {
		for range 1 + rng.IntN(4) {
			write()
		}
		switch rng.IntN(8) {
		case 0:
			clock.Advance(time.Duration(rng.IntN(5000)) * time.Millisecond)
		case 1:
			_, err := c.Purge(ctx)
			require.NoError(t, err)
		}
		q := queries[rng.IntN(len(queries))]
		params := []lethe.QueryParameter{{Name: "@s", Value: statuses[rng.IntN(len(statuses))]}, {Name: "@n", Value: rng.IntN(10)}}
		var pk lethe.PartitionKey
		if rng.IntN(3) == 0 {
			pk = lethe.NewPartitionKeyString(fmt.Sprint("p", rng.IntN(3)))
		} else {
			pk = lethe.NewPartitionKey()
		}
		var kept []lethe.QueryParameter
		for _, p := range params {
			if strings.Contains(q, p.Name) {
				kept = append(kept, p)
			}
		}
		withIndex, metrics := queryAll(t, c, q, kept, pk)
		was := lethe.SetUseIndexes(c, false)
		scan, _ := queryAll(t, c, q, kept, pk)
		lethe.SetUseIndexes(c, was)
		require.Equal(t, scan, withIndex, "step %d: %s %v", step, q, kept)
		if strings.Contains(metrics, `"UtilizedSingleIndexes":[{`) {
			used[q] = true
		}
		if strings.Contains(metrics, `"UtilizedCompositeIndexes":[{`) {
			usedComposite[q] = true
		}
		// Never an expired item: every item a SELECT * returns is live.
		if strings.HasPrefix(q, "SELECT * ") {
			live := lethe.LiveIDs(c, clock.Now())
			for _, it := range withIndex {
				var d map[string]any
				require.NoError(t, json.Unmarshal([]byte(it), &d))
				require.True(t, live[d["id"].(string)], "step %d: %s returned %s, which is not live", step, q, it)
			}
		}
	}
	for _, q := range []string{queries[0], queries[2], queries[6], queries[7], queries[10], queries[23], queries[24], queries[25]} {
		assert.True(t, used[q], "the index was never used by %s", q)
	}
	for _, q := range []string{queries[8], queries[9], queries[14], queries[21], queries[22]} {
		assert.False(t, used[q], "an index answered %s, which it cannot", q)
	}
	for _, q := range append(composite[:3], streamed[4:7]...) {
		assert.True(t, usedComposite[q], "the composite index was never used by %s", q)
	}
	for _, q := range append(streamed[:4], streamed[7:]...) {
		assert.True(t, used[q], "the index was never used by %s", q)
	}
	assert.False(t, usedComposite[composite[3]], "a composite index answered %s, which none serves", composite[3])
	lethe.CheckInvariants(t, c, "end")
}

// TestIndexingPolicy: paths are validated (a bad one changes nothing),
// excluded paths and the none mode are not indexed, and index metrics say
// what was used and what could have been.
func TestIndexingPolicy(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	for _, bad := range []string{"status/?", "/status", "/a/b", "/?", `/"a/?`, "/a/[]/?"} {
		_, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "bad",
			IndexingPolicy: &lethe.IndexingPolicy{IncludedPaths: []lethe.IndexPath{{Path: bad}}}})
		require.ErrorIs(t, err, lethe.ErrBadRequest, bad)
		assert.Contains(t, err.Error(), "indexing policy path", bad)
	}
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", IndexingPolicy: &lethe.IndexingPolicy{
		IncludedPaths: []lethe.IndexPath{{Path: "/*"}},
		ExcludedPaths: []lethe.IndexPath{{Path: "/secret/?"}, {Path: "/big/*"}},
	}})
	for i := range 20 {
		create(t, c, fmt.Sprintf(`{"id":"i%d","status":"s%d","secret":%d,"big":{"x":%d}}`, i, i%4, i%5, i%2))
	}
	check := func(q, used, potential string, n int) {
		t.Helper()
		got, metrics := queryAll(t, c, q, nil, lethe.NewPartitionKey())
		assert.Len(t, got, n, q)
		type single struct {
			IndexSpec                         string
			FilterPreciseSet, IndexPreciseSet bool
			IndexImpactScore                  string
		}
		var m map[string][]single
		require.NoError(t, json.Unmarshal([]byte(metrics), &m), metrics)
		for _, l := range m {
			for _, e := range l {
				assert.True(t, e.FilterPreciseSet && e.IndexPreciseSet && e.IndexImpactScore == "High", metrics)
			}
		}
		spec := func(l []single) string {
			if len(l) == 0 {
				return ""
			}
			return l[0].IndexSpec
		}
		assert.Equal(t, used, spec(m["UtilizedSingleIndexes"]), "%s: %s", q, metrics)
		assert.Equal(t, potential, spec(m["PotentialSingleIndexes"]), "%s: %s", q, metrics)
	}
	// The first filter on a path scans; the second makes the index.
	check(`SELECT * FROM c WHERE c.status = "s1"`, "", "", 5)
	assert.Equal(t, 0, lethe.IndexCount(c))
	check(`SELECT * FROM c WHERE c.status = "s1"`, "/status/?", "", 5)
	assert.Equal(t, 1, lethe.IndexCount(c))
	check(`SELECT * FROM c WHERE c.secret = 1`, "", "/secret/?", 4)
	check(`SELECT * FROM c WHERE c.big.x = 1`, "", "/big/x/?", 10)
	check(`SELECT * FROM c WHERE c.secret = 1 AND c.status = "s1"`, "/status/?", "/secret/?", 1)
	assert.Equal(t, 1, lethe.IndexCount(c))
	// ORDER BY with TOP makes its index at once (its scan sorts every item).
	check(`SELECT TOP 3 * FROM c ORDER BY c.id`, "/id/?", "", 3)
	assert.Equal(t, 2, lethe.IndexCount(c))
	for range 2 {
		check(`SELECT * FROM c WHERE c.secret = 1`, "", "/secret/?", 4)
	}
	assert.Equal(t, 2, lethe.IndexCount(c), "an excluded path is never indexed")

	// Excluding a path drops its index; the none mode keeps none.
	p, err := c.Read(ctx)
	require.NoError(t, err)
	p.IndexingPolicy.ExcludedPaths = append(p.IndexingPolicy.ExcludedPaths, lethe.IndexPath{Path: "/status/?"})
	require.NoError(t, c.Replace(ctx, p))
	assert.Equal(t, 1, lethe.IndexCount(c), "the index of /id/? stays")
	check(`SELECT * FROM c WHERE c.status = "s1"`, "", "/status/?", 5)
	p.IndexingPolicy = &lethe.IndexingPolicy{IndexingMode: lethe.IndexingModeNone}
	require.NoError(t, c.Replace(ctx, p))
	check(`SELECT * FROM c WHERE c.big.x = 0`, "", "/big/x/?", 10)
	assert.Equal(t, 0, lethe.IndexCount(c))

	// A bad path in a replace changes nothing.
	p.IndexingPolicy = &lethe.IndexingPolicy{ExcludedPaths: []lethe.IndexPath{{Path: "nope"}}}
	require.ErrorIs(t, c.Replace(ctx, p), lethe.ErrBadRequest)
	got, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, lethe.IndexingModeNone, got.IndexingPolicy.IndexingMode)
}

// TestCompositeIndexes: composite paths are validated (a bad one changes
// nothing), a query ordered by several paths uses the composite index that
// serves it (in its directions or all reversed) and names the one that
// would when there is none, and a policy change drops the composite
// indexes it no longer declares.
func TestCompositeIndexes(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	for _, bad := range [][]lethe.CompositeIndex{
		{{Path: "/a"}},
		{{Path: "/a/?"}, {Path: "/b"}},
		{{Path: "/a"}, {Path: "/b/*"}},
		{{Path: "a"}, {Path: "/b"}},
		{{Path: "/a"}, {Path: "/b", Order: "up"}},
	} {
		_, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "bad",
			IndexingPolicy: &lethe.IndexingPolicy{CompositeIndexes: [][]lethe.CompositeIndex{bad}}})
		require.ErrorIs(t, err, lethe.ErrBadRequest, "%v", bad)
		assert.Contains(t, err.Error(), "composite index", "%v", bad)
	}
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", IndexingPolicy: &lethe.IndexingPolicy{
		CompositeIndexes: [][]lethe.CompositeIndex{{{Path: "/name"}, {Path: "/age", Order: lethe.CompositeIndexDescending}}},
	}})
	for i := range 30 {
		create(t, c, fmt.Sprintf(`{"id":"i%02d","name":"n%d","age":%d}`, i, i%3, i%7))
	}
	composite := func(q string) (used, potential string, ids []string) {
		t.Helper()
		got, metrics := queryAll(t, c, q, nil, lethe.NewPartitionKey())
		var m map[string][]struct{ IndexSpecs []string }
		require.NoError(t, json.Unmarshal([]byte(metrics), &m), metrics)
		if l := m["UtilizedCompositeIndexes"]; len(l) > 0 {
			used = strings.Join(l[0].IndexSpecs, ", ")
		}
		if l := m["PotentialCompositeIndexes"]; len(l) > 0 {
			potential = strings.Join(l[0].IndexSpecs, ", ")
		}
		for _, g := range got {
			var d struct{ ID string }
			require.NoError(t, json.Unmarshal([]byte(g), &d))
			ids = append(ids, d.ID)
		}
		return used, potential, ids
	}
	used, potential, ids := composite(`SELECT TOP 4 c.id FROM c ORDER BY c.name, c.age DESC`)
	assert.Equal(t, "/name ASC, /age DESC", used)
	assert.Empty(t, potential)
	// name n0 (i = 0, 3, ..., 27), the oldest first: age 6 at i = 6 and 27, 5 at i = 12, 4 at i = 18.
	assert.Equal(t, []string{"i06", "i27", "i12", "i18"}, ids)
	used, _, ids = composite(`SELECT TOP 2 c.id FROM c ORDER BY c.name DESC, c.age ASC`)
	assert.Equal(t, "/name ASC, /age DESC", used, "walked backwards")
	assert.Equal(t, []string{"i14", "i08"}, ids) // name n2, age 0 at i = 14, then age 1 at i = 8
	used, potential, _ = composite(`SELECT TOP 2 c.id FROM c ORDER BY c.name, c.age`)
	assert.Empty(t, used)
	assert.Equal(t, "/name ASC, /age ASC", potential)
	assert.Equal(t, 1, lethe.CompositeCount(c))

	p, err := c.Read(ctx)
	require.NoError(t, err)
	p.IndexingPolicy.CompositeIndexes[0][1].Order = "down"
	require.ErrorIs(t, c.Replace(ctx, p), lethe.ErrBadRequest)
	assert.Equal(t, 1, lethe.CompositeCount(c), "a bad replace changes nothing")
	p.IndexingPolicy.CompositeIndexes = nil
	require.NoError(t, c.Replace(ctx, p))
	assert.Equal(t, 0, lethe.CompositeCount(c))
	used, potential, _ = composite(`SELECT TOP 4 c.id FROM c ORDER BY c.name, c.age DESC`)
	assert.Empty(t, used)
	assert.Equal(t, "/name ASC, /age DESC", potential)
}

// TestIndexBuildWhileWriting: an index is made while writes go on. Between
// the shards the build reads, writes to items of every shard (creates,
// replaces, deletes, expiries) complete without waiting for the build, and
// the index made has every one of them: queries through it return what
// scans return.
func TestIndexBuildWhileWriting(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"path", "composite", "path, replayed in rounds", "composite, replayed in rounds"} {
		t.Run(kind, func(t *testing.T) {
			inRounds := strings.HasSuffix(kind, "rounds")
			kind = strings.TrimSuffix(kind, ", replayed in rounds")
			s, clock := newStore(t)
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever,
				IndexingPolicy: &lethe.IndexingPolicy{CompositeIndexes: [][]lethe.CompositeIndex{{{Path: "/n"}, {Path: "/id"}}}}})
			if inRounds {
				// The changes logged during the build are replayed in
				// rounds without the lock, all but the last few.
				was := lethe.SetCatchUpFew(c, 4)
				t.Cleanup(func() { lethe.SetCatchUpFew(c, was) })
			}
			const n = 2000
			for i := range n {
				create(t, c, fmt.Sprintf(`{"id":"i%04d","n":%d}`, i, i%10))
			}
			query := `SELECT VALUE c.id FROM c WHERE c.n = @n`
			if kind == "composite" {
				query = `SELECT TOP 50 VALUE c.id FROM c WHERE c.n >= @n OR c.n = 99 ORDER BY c.n, c.id`
			} else {
				queryAll(t, c, query, []lethe.QueryParameter{{Name: "@n", Value: 1}}, lethe.NewPartitionKey()) // the first scans
			}
			rounds := 0
			lethe.SetAfterBuildShard(c, func(shard int) {
				if shard%4 != 0 {
					return
				}
				rounds++
				done := make(chan struct{})
				go func() {
					defer close(done)
					for j := range 40 {
						i := (rounds*97 + j*53) % n
						switch j % 4 {
						case 0:
							upsert(t, c, fmt.Sprintf(`{"id":"i%04d","n":%d}`, i, (i+rounds)%10))
						case 1:
							_, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), fmt.Sprintf("i%04d", i), nil)
							if errors.Is(err, lethe.ErrNotFound) {
								err = nil
							}
							assert.NoError(t, err)
						case 2:
							upsert(t, c, fmt.Sprintf(`{"id":"new%d-%d","n":%d}`, rounds, j, j%10))
						case 3:
							upsert(t, c, fmt.Sprintf(`{"id":"i%04d","n":%d,"ttl":1}`, i, i%10))
						}
					}
				}()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Error("a write waited for the index build")
				}
			})
			t.Cleanup(func() { lethe.SetAfterBuildShard(c, nil) })
			queryAll(t, c, query, []lethe.QueryParameter{{Name: "@n", Value: 1}}, lethe.NewPartitionKey()) // makes the index
			lethe.SetAfterBuildShard(c, nil)
			require.Positive(t, rounds)
			if kind == "composite" {
				require.Equal(t, 1, lethe.CompositeCount(c))
			} else {
				require.Equal(t, 1, lethe.IndexCount(c))
			}
			clock.Advance(2 * time.Second) // the items written with "ttl": 1 expire
			for v := range 10 {
				params := []lethe.QueryParameter{{Name: "@n", Value: v}}
				withIndex, metrics := queryAll(t, c, query, params, lethe.NewPartitionKey())
				if kind == "composite" {
					assert.Contains(t, metrics, `"UtilizedCompositeIndexes":[{`)
				} else {
					assert.Contains(t, metrics, `"UtilizedSingleIndexes":[{`)
				}
				was := lethe.SetUseIndexes(c, false)
				scan, _ := queryAll(t, c, query, params, lethe.NewPartitionKey())
				lethe.SetUseIndexes(c, was)
				require.Equal(t, scan, withIndex, "n = %d", v)
			}
			lethe.CheckInvariants(t, c, "end")
		})
	}
}

// TestCompositeSystemProperties: a composite index may hold _ts and _etag,
// which are kept apart from the stored document; it orders by them as a
// scan does, for TOP and for streamed pages.
func TestCompositeSystemProperties(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}},
		IndexingPolicy: &lethe.IndexingPolicy{CompositeIndexes: [][]lethe.CompositeIndex{
			{{Path: "/_ts", Order: lethe.CompositeIndexDescending}, {Path: "/id"}},
			{{Path: "/pk"}, {Path: "/_ts", Order: lethe.CompositeIndexDescending}},
		}}})
	for i := range 20 {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString("a"), []byte(fmt.Sprintf(`{"id":"i%02d","pk":"a"}`, 19-i)), nil)
		require.NoError(t, err)
		clock.Advance(2 * time.Second)
	}
	for _, q := range []string{
		`SELECT TOP 3 VALUE c.id FROM c ORDER BY c._ts DESC, c.id ASC`,
		`SELECT VALUE c.id FROM c ORDER BY c.pk, c._ts DESC`,
	} {
		withIndex, metrics := queryAll(t, c, q, nil, lethe.NewPartitionKey())
		assert.Contains(t, metrics, `"UtilizedCompositeIndexes":[{`, q)
		was := lethe.SetUseIndexes(c, false)
		scan, _ := queryAll(t, c, q, nil, lethe.NewPartitionKey())
		lethe.SetUseIndexes(c, was)
		require.Equal(t, scan, withIndex, q)
	}
}

// TestIndexDroppedDuringQuery: a policy change that drops the index a
// query has chosen, before the query walks it, makes the query scan: it
// never returns what the index, no longer kept, would still hold.
func TestIndexDroppedDuringQuery(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})
	for i := range 10 {
		create(t, c, fmt.Sprintf(`{"id":"i%02d","n":%d}`, i, i))
	}
	const q = `SELECT TOP 3 VALUE c.id FROM c ORDER BY c.n`
	queryAll(t, c, q, nil, lethe.NewPartitionKey()) // makes the index
	once := false
	lethe.SetBeforeOrderedWalk(c, func() {
		if once {
			return
		}
		once = true
		p, err := c.Read(ctx)
		require.NoError(t, err)
		p.IndexingPolicy = &lethe.IndexingPolicy{ExcludedPaths: []lethe.IndexPath{{Path: "/n/?"}}}
		require.NoError(t, c.Replace(ctx, p))
		_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "i00", nil)
		require.NoError(t, err)
		create(t, c, `{"id":"new","n":-1}`)
	})
	t.Cleanup(func() { lethe.SetBeforeOrderedWalk(c, nil) })
	got, _ := queryAll(t, c, q, nil, lethe.NewPartitionKey())
	require.True(t, once)
	require.Equal(t, []string{`"new"`, `"i01"`, `"i02"`}, got)
}

// TestStreamedPagesManyTies: when most items share the ORDER BY value, a
// pager stops walking the same items for every page: paging the whole
// result through the index costs no more than twice a scan's pages.
func TestStreamedPagesManyTies(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})
	for i := range 2000 {
		create(t, c, fmt.Sprintf(`{"id":"i%04d","m":%d}`, i, i%2))
	}
	const q = `SELECT VALUE c.id FROM c ORDER BY c.m`
	charge := func() (float64, int) {
		total, n := 0.0, 0
		p := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 50})
		for p.More() {
			page, err := p.NextPage(ctx)
			require.NoError(t, err)
			total += page.RequestCharge
			n += len(page.Items)
		}
		return total, n
	}
	queryAll(t, c, `SELECT TOP 1 c.id FROM c ORDER BY c.m`, nil, lethe.NewPartitionKey()) // makes the index
	indexed, n := charge()
	require.Equal(t, 2000, n)
	was := lethe.SetUseIndexes(c, false)
	scan, _ := charge()
	lethe.SetUseIndexes(c, was)
	assert.LessOrEqual(t, indexed, 2*scan, "paging through the index cost %.1f RU, a scan %.1f", indexed, scan)
}

// TestStreamedPagesNeverShowExpired: an item that expires between two pages
// of a streamed query (each page a walk of the index at its own instant)
// is on no later page, as with a pager evaluated once.
func TestStreamedPagesNeverShowExpired(t *testing.T) {
	t.Parallel()
	for _, indexed := range []bool{true, false} {
		s, clock := newStore(t)
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})
		createTTLEvery(t, c, 30, func(i int) string { return fmt.Sprintf(`"n":%d`, i) }, func(i int) bool { return i%2 == 1 })
		const q = `SELECT VALUE c.id FROM c ORDER BY c.n`
		queryAll(t, c, q, nil, lethe.NewPartitionKey()) // makes the index
		was := lethe.SetUseIndexes(c, indexed)
		p := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 5, PopulateIndexMetrics: true})
		first, err := p.NextPage(ctx)
		require.NoError(t, err)
		assert.Equal(t, indexed, strings.Contains(first.IndexMetrics, `"UtilizedSingleIndexes":[{`))
		require.Len(t, first.Items, 5)
		clock.Advance(6 * time.Second) // every odd item expires
		var later []string
		for p.More() {
			page, err := p.NextPage(ctx)
			require.NoError(t, err)
			later = append(later, texts(page.Items)...)
		}
		lethe.SetUseIndexes(c, was)
		var even []string
		for i := 6; i < 30; i += 2 {
			even = append(even, fmt.Sprintf(`"i%02d"`, i))
		}
		assert.Equal(t, even, later, "indexed %v", indexed)
	}
}

// TestIndexCountModel: SELECT VALUE COUNT(1) with a filter an index
// decides is counted from the index alone, and agrees with a reference
// model and with a scan, while items are written with and without their
// own ttl (the container's default expires the others), deleted, and
// expire on the injected clock without being purged (so the index holds
// expired items), with and without a partition key. Run with -count to
// try more seeds; the seed is logged.
func TestIndexCountModel(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	s, clock := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 6,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	type item struct {
		pk, s   string
		g       any
		written time.Time
		ttl     int // 0: the default's; -1: never
	}
	model := map[string]item{}
	live := func(it item, now time.Time) bool {
		ttl := it.ttl
		if ttl == 0 {
			ttl = 6
		}
		return ttl < 0 || now.Before(it.written.Add(time.Duration(ttl)*time.Second))
	}
	gs := []any{0, 1, 2, 3, 4, 5, "2", nil, []int{1}}
	strs := []string{"apple", "apricot", "banana", "ap", "b", ""}
	queries := []struct {
		text string
		keep func(it item) bool
	}{
		{`SELECT VALUE COUNT(1) FROM c WHERE c.g = 2`, func(it item) bool { return it.g == 2 }},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.g >= 1 AND c.g < 4`, func(it item) bool {
			n, ok := it.g.(int)
			return ok && n >= 1 && n < 4
		}},
		{`SELECT COUNT(1) AS n FROM c WHERE c.g IN (0, "2", null)`, func(it item) bool { return it.g == 0 || it.g == "2" || it.g == nil }},
		{`SELECT VALUE COUNT(1) FROM c WHERE STARTSWITH(c.s, "ap")`, func(it item) bool { return strings.HasPrefix(it.s, "ap") }},
	}
	indexOnly := 0
	for step := range 600 {
		for range 1 + rng.IntN(3) {
			id := fmt.Sprint("i", rng.IntN(80))
			pk := fmt.Sprint("p", rng.IntN(3))
			switch op := rng.IntN(10); {
			case op == 0: // delete (in whichever partition it lives)
				if it, ok := model[id]; ok {
					_, err := c.DeleteItem(ctx, lethe.NewPartitionKeyString(it.pk), id, nil)
					if live(it, clock.Now()) {
						require.NoError(t, err)
					} else {
						require.Equal(t, 404, status(err), "deleting expired %s", id) // SPEC: an expired item is not found
					}
					delete(model, id)
				}
			default:
				if it, ok := model[id]; ok {
					pk = it.pk // one item per id across partitions, to keep the model simple
				}
				it := item{pk: pk, s: strs[rng.IntN(len(strs))], g: gs[rng.IntN(len(gs))], written: clock.Now(), ttl: []int{0, 0, -1, 2, 9}[rng.IntN(5)]}
				d := map[string]any{"id": id, "pk": pk, "s": it.s, "g": it.g}
				if it.ttl != 0 {
					d["ttl"] = it.ttl
				}
				b, err := json.Marshal(d)
				require.NoError(t, err)
				_, err = c.UpsertItem(ctx, lethe.NewPartitionKeyString(pk), b, nil)
				require.NoError(t, err)
				model[id] = it
			}
		}
		if rng.IntN(3) == 0 {
			clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
		}
		if rng.IntN(40) == 0 {
			_, err := c.Purge(ctx)
			require.NoError(t, err)
		}
		q := queries[rng.IntN(len(queries))]
		pk, inPK := lethe.NewPartitionKey(), ""
		if rng.IntN(3) == 0 {
			inPK = fmt.Sprint("p", rng.IntN(3))
			pk = lethe.NewPartitionKeyString(inPK)
		}
		want := 0
		for _, it := range model {
			if live(it, clock.Now()) && (inPK == "" || it.pk == inPK) && q.keep(it) {
				want++
			}
		}
		p := c.NewQueryItemsPager(q.text, pk, &lethe.QueryOptions{PopulateIndexMetrics: true})
		r, err := p.NextPage(ctx)
		require.NoError(t, err)
		require.Len(t, r.Items, 1, "step %d: %s", step, q.text)
		got := string(r.Items[0])
		if strings.Contains(q.text, " AS n ") {
			require.Equal(t, fmt.Sprintf(`{"n":%d}`, want), got, "step %d (seed %d): %s in %q", step, seed, q.text, inPK)
		} else {
			require.Equal(t, fmt.Sprint(want), got, "step %d (seed %d): %s in %q", step, seed, q.text, inPK)
		}
		if m := parseMetrics(t, r.QueryMetrics); strings.Contains(r.IndexMetrics, `"UtilizedSingleIndexes":[{`) && m["retrievedDocumentSize"] == 0 && m["retrievedDocumentCount"] == float64(want) {
			indexOnly++ // counted, no document read
		}
		was := lethe.SetUseIndexes(c, false)
		scan, _ := queryAll(t, c, q.text, nil, pk)
		lethe.SetUseIndexes(c, was)
		require.Equal(t, []string{got}, scan, "step %d (seed %d): %s in %q", step, seed, q.text, inPK)
	}
	assert.Greater(t, indexOnly, 400, "counts answered from the index alone")
}

// TestIndexOrderPages: a SELECT * whose filter an index decides is paged
// from the index's candidates with the same pages as a scan gives, a
// continuation token of either resumes the other with the same rows, and
// OFFSET, LIMIT, TOP and MaxPageBytes apply as they do in a scan. Between
// the pages of one pager, items are created, rewritten, deleted and
// expire: no page holds an item not live at its instant, no item twice,
// and, without OFFSET, LIMIT or TOP, every item the filter matched that
// stayed live and unwritten throughout.
func TestIndexOrderPages(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 13))
	s, clock := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	groups := map[string]int{} // the model: each item's g, by id
	write := func(i int) {
		d := map[string]any{"id": fmt.Sprint("i", i), "pk": fmt.Sprint("p", i%2), "g": rng.IntN(4), "pad": strings.Repeat("x", rng.IntN(40))}
		groups[d["id"].(string)] = d["g"].(int)
		if rng.IntN(4) == 0 {
			d["ttl"] = 1 + rng.IntN(4)
		}
		b, err := json.Marshal(d)
		require.NoError(t, err)
		_, err = c.UpsertItem(ctx, lethe.NewPartitionKeyString(d["pk"].(string)), b, nil)
		require.NoError(t, err)
	}
	for range 120 {
		write(rng.IntN(200))
	}
	queries := []string{
		`SELECT * FROM c WHERE c.g = 1`,
		`SELECT * FROM c WHERE c.g >= 1 AND c.g <= 2`,
		`SELECT VALUE c FROM c WHERE c.g IN (0, 3)`,
		`SELECT * FROM c WHERE c.g > 0 OFFSET 5 LIMIT 17`,
		`SELECT TOP 23 * FROM c WHERE c.g < 3`,
	}
	// The filters of the unbounded queries, in the model.
	matches := map[string]func(g int) bool{
		queries[0]: func(g int) bool { return g == 1 },
		queries[1]: func(g int) bool { return g >= 1 && g <= 2 },
		queries[2]: func(g int) bool { return g == 0 || g == 3 },
	}
	type page struct {
		items   []string
		token   string
		indexed bool // the page's pager used an index
	}
	pages := func(q string, pk lethe.PartitionKey, o lethe.QueryOptions, tokens bool) []page {
		var out []page
		p := c.NewQueryItemsPager(q, pk, &o)
		for p.More() {
			if tokens && len(out) > 0 {
				o.ContinuationToken = out[len(out)-1].token
				p = c.NewQueryItemsPager(q, pk, &o)
			}
			r, err := p.NextPage(ctx)
			require.NoError(t, err, q)
			used := strings.Contains(r.IndexMetrics, `"UtilizedSingleIndexes":[{`)
			if len(out) > 0 && !tokens {
				used = out[0].indexed
			}
			out = append(out, page{texts(r.Items), r.ContinuationToken, used})
		}
		return out
	}
	for _, q := range queries {
		pages(q, lethe.NewPartitionKey(), lethe.QueryOptions{}, false) // the first filter scans,
		pages(q, lethe.NewPartitionKey(), lethe.QueryOptions{}, false) // the second makes the index
	}
	for step := range 60 {
		q := queries[rng.IntN(len(queries))]
		pk, pkValue := lethe.NewPartitionKey(), "" // "": every partition
		if rng.IntN(3) == 0 {
			pkValue = fmt.Sprint("p", rng.IntN(2))
			pk = lethe.NewPartitionKeyString(pkValue)
		}
		o := lethe.QueryOptions{PageSizeHint: int32(1 + rng.IntN(9)), PopulateIndexMetrics: true}
		if rng.IntN(4) == 0 {
			o.MaxPageBytes = 100 + rng.IntN(300)
		}
		desc := fmt.Sprintf("step %d (seed %d): %s, %+v", step, seed, q, o)
		tokens := rng.IntN(2) == 0
		indexed := pages(q, pk, o, tokens)
		was := lethe.SetUseIndexes(c, false)
		scanned := pages(q, pk, o, tokens)
		lethe.SetUseIndexes(c, was)
		// The same pages; the tokens may differ where a scan's page
		// passed over items the index never met (they resume alike).
		require.Len(t, indexed, len(scanned), desc)
		for i := range scanned {
			require.Equal(t, scanned[i].items, indexed[i].items, "%s: page %d", desc, i)
			require.Equal(t, scanned[i].token == "", indexed[i].token == "", "%s: page %d", desc, i)
			require.True(t, indexed[i].indexed, "%s: page %d used no index", desc, i)
		}
		// Each token resumes the other way with the same rows.
		for i, pg := range indexed[:len(indexed)-1] {
			ro := o
			ro.ContinuationToken = pg.token
			lethe.SetUseIndexes(c, i%2 == 0)
			r, err := c.NewQueryItemsPager(q, pk, &ro).NextPage(ctx)
			lethe.SetUseIndexes(c, was)
			require.NoError(t, err, desc)
			require.Equal(t, indexed[i+1].items, texts(r.Items), "%s: page %d resumed", desc, i+1)
		}

		// One pager, with changes between its pages.
		p := c.NewQueryItemsPager(q, pk, &o)
		seen := map[string]bool{}
		liveAtStart := lethe.LiveIDs(c, clock.Now())
		touched := map[string]bool{} // deleted or written during the paging
		for p.More() {
			r, err := p.NextPage(ctx)
			require.NoError(t, err, desc)
			live := lethe.LiveIDs(c, clock.Now())
			for _, it := range r.Items {
				var d struct{ ID string }
				require.NoError(t, json.Unmarshal(it, &d))
				require.True(t, live[d.ID], "%s: %s is not live", desc, d.ID)
				require.False(t, seen[d.ID], "%s: %s twice", desc, d.ID)
				seen[d.ID] = true
			}
			for range rng.IntN(3) {
				switch rng.IntN(3) {
				case 0:
					i := rng.IntN(200)
					touched[fmt.Sprint("i", i)] = true
					_, _ = c.DeleteItem(ctx, lethe.NewPartitionKeyString(fmt.Sprint("p", i%2)), fmt.Sprint("i", i), nil)
				case 1:
					clock.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
				default:
					i := 200 + rng.IntN(50)
					touched[fmt.Sprint("i", i)] = true
					write(i) // new items only: a rewritten one may come again
				}
			}
		}
		// Every stable item the filter matches was on a page.
		if match := matches[q]; match != nil {
			liveAtEnd := lethe.LiveIDs(c, clock.Now())
			for id, g := range groups {
				var i int
				_, err := fmt.Sscanf(id, "i%d", &i)
				require.NoError(t, err)
				inPK := pkValue == "" || pkValue == fmt.Sprint("p", i%2)
				if match(g) && inPK && liveAtStart[id] && liveAtEnd[id] && !touched[id] {
					require.True(t, seen[id], "%s: %s, live and unwritten throughout, is on no page", desc, id)
				}
			}
		}
	}
}

// TestIndexPagesAfterChanges: the later pages of a SELECT * whose filter
// an index decides skip what is no longer live at their instant, whatever
// made it so between the pages: time alone (an item's own ttl), a change
// of the container's default ttl, a delete, a replace with a ttl that has
// run out, or nothing but new items (which the pager does not return);
// the rest come as they were listed, once each.
func TestIndexPagesAfterChanges(t *testing.T) {
	t.Parallel()
	for _, change := range []string{"time", "default ttl", "delete", "replace", "create", "index dropped", "index rebuilt"} {
		t.Run(change, func(t *testing.T) {
			s, clock := newStore(t)
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})
			createTTLEvery(t, c, 30, func(i int) string { return fmt.Sprintf(`"g":%d`, i%2) }, func(i int) bool { return i%3 == 0 })
			q := `SELECT VALUE c.id FROM c WHERE c.g = 0`
			queryAll(t, c, q, nil, lethe.NewPartitionKey()) // the first filter scans,
			queryAll(t, c, q, nil, lethe.NewPartitionKey()) // the second makes the index
			p := c.NewQueryItemsPager(`SELECT * FROM c WHERE c.g = 0`, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 4})
			first, err := p.NextPage(ctx)
			require.NoError(t, err)
			require.Len(t, first.Items, 4)
			// The items of g = 0 after the first page: i08, i10, ..., i28.
			want := map[string]bool{}
			for i := 8; i < 30; i += 2 {
				want[fmt.Sprintf("i%02d", i)] = true
			}
			switch change {
			case "time": // the items with "ttl": 5 expire: i12, i18, i24
				clock.Advance(6 * time.Second)
				delete(want, "i12")
				delete(want, "i18")
				delete(want, "i24")
			case "default ttl": // every item written more than 3 s ago expires, but those of their own ttl
				clock.Advance(4 * time.Second)
				props, err := c.Read(ctx)
				require.NoError(t, err)
				props.DefaultTimeToLive = 3
				require.NoError(t, c.Replace(ctx, props))
				for id := range want {
					if id != "i12" && id != "i18" && id != "i24" {
						delete(want, id)
					}
				}
			case "delete":
				_, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), "i10", nil)
				require.NoError(t, err)
				delete(want, "i10")
			case "replace":
				upsert(t, c, `{"id":"i14","g":0,"ttl":1}`)
				clock.Advance(2 * time.Second)
				delete(want, "i14")
			case "create":
				create(t, c, `{"id":"new","g":0}`)
			case "index dropped", "index rebuilt": // the index the first page used goes; an item goes with it
				props, err := c.Read(ctx)
				require.NoError(t, err)
				indexed := props.IndexingPolicy
				props.IndexingPolicy = &lethe.IndexingPolicy{IndexingMode: lethe.IndexingModeConsistent, ExcludedPaths: []lethe.IndexPath{{Path: "/g/?"}}}
				require.NoError(t, c.Replace(ctx, props))
				_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "i10", nil)
				require.NoError(t, err)
				delete(want, "i10")
				if change == "index rebuilt" { // a new index of the same path, which has seen no change
					props.IndexingPolicy = indexed
					require.NoError(t, c.Replace(ctx, props))
					queryAll(t, c, q, nil, lethe.NewPartitionKey())
					queryAll(t, c, q, nil, lethe.NewPartitionKey())
				}
			}
			got := map[string]bool{}
			for _, id := range restIDs(t, p) {
				require.False(t, got[id], "%s returned twice", id)
				got[id] = true
			}
			assert.Equal(t, want, got)
		})
	}
}

// TestQueryFirstPageRetried: a first page in item order refused (429, the
// container's throughput spent) and retried later never returns an item
// that expired or was deleted meanwhile, with an index and without.
func TestQueryFirstPageRetried(t *testing.T) {
	t.Parallel()
	for _, indexed := range []bool{true, false} {
		for _, change := range []string{"expire", "delete"} {
			t.Run(fmt.Sprintf("indexed=%v/%s", indexed, change), func(t *testing.T) {
				s, clock := newStore(t)
				c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever, Throughput: 1000})
				create(t, c, `{"id":"b","g":0}`)
				q := `SELECT VALUE c.id FROM c WHERE c.g = 0`
				query := `SELECT * FROM c`
				if indexed {
					queryAll(t, c, q, nil, lethe.NewPartitionKey()) // the first filter scans,
					queryAll(t, c, q, nil, lethe.NewPartitionKey()) // the second makes the index
					query = `SELECT * FROM c WHERE c.g = 0`
				}
				if change == "expire" {
					create(t, c, `{"id":"a","g":0,"ttl":1}`)
				} else {
					create(t, c, `{"id":"a","g":0}`)
				}
				c.ChargeScriptTime(2 * time.Second) // the second's budget spent
				p := c.NewQueryItemsPager(query, lethe.NewPartitionKey(), nil)
				_, err := p.NextPage(ctx)
				require.ErrorIs(t, err, lethe.ErrTooManyRequests)
				clock.Advance(5 * time.Second) // the budget back; a expires
				want := []string{"b"}
				if change == "delete" {
					_, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), "b", nil)
					require.NoError(t, err)
					want = []string{"a"}
				}
				assert.ElementsMatch(t, want, restIDs(t, p))
			})
		}
	}
}

// restIDs reads p's pages to the end and returns the ids of their items,
// in order.
func restIDs(t *testing.T, p *lethe.QueryItemsPager) (ids []string) {
	t.Helper()
	for p.More() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		for _, item := range page.Items {
			var d struct{ ID string }
			require.NoError(t, json.Unmarshal(item, &d))
			ids = append(ids, d.ID)
		}
	}
	return ids
}

// createTTLEvery creates n items, "i00" on, each with the members
// members(i) gives, and "ttl": 5 where withTTL(i).
func createTTLEvery(t *testing.T, c *lethe.Container, n int, members func(i int) string, withTTL func(i int) bool) {
	t.Helper()
	for i := range n {
		ttl := ""
		if withTTL(i) {
			ttl = `,"ttl":5`
		}
		create(t, c, fmt.Sprintf(`{"id":"i%02d",%s%s}`, i, members(i), ttl))
	}
}

// TestIndexSlashInName: a property whose name holds a slash ("a/b") and the
// nested path a.b are different paths, to a path index (made by either
// query first) and to a full-text index the policy declares on /s/t, which
// indexes s.t and not the property "s/t": each query returns the items of
// its own path.
func TestIndexSlashInName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, nestedFirst := range []bool{true, false} {
		t.Run(fmt.Sprint("nestedFirst=", nestedFirst), func(t *testing.T) {
			s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
			require.NoError(t, err)
			defer s.Close()
			c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c",
				FullTextPolicy: &lethe.FullTextPolicy{DefaultLanguage: "en-US", FullTextPaths: []lethe.FullTextPath{{Path: "/s/t"}}},
				IndexingPolicy: &lethe.IndexingPolicy{FullTextIndexes: []lethe.FullTextIndex{{Path: "/s/t"}}}})
			require.NoError(t, err)
			for _, doc := range []string{
				`{"id":"x","a":{"b":1},"a/b":2,"s":{"t":"apple"},"s/t":"pear"}`,
				`{"id":"y","a":{"b":2},"a/b":1,"s":{"t":"pear"},"s/t":"apple"}`,
			} {
				_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(doc), nil)
				require.NoError(t, err)
			}
			run := func(q string) []string {
				var ids []string
				for item, err := range c.QueryItems(ctx, q, lethe.NewPartitionKey(), nil) {
					require.NoError(t, err)
					var id string
					require.NoError(t, json.Unmarshal(item, &id))
					ids = append(ids, id)
				}
				return ids
			}
			nested := map[string]string{
				`SELECT VALUE c.id FROM c WHERE c.a.b = 1`:                        "x",
				`SELECT VALUE c.id FROM c WHERE c.a.b > 1`:                        "y",
				`SELECT VALUE c.id FROM c WHERE FullTextContains(c.s.t, "apple")`: "x",
			}
			slashed := map[string]string{
				`SELECT VALUE c.id FROM c WHERE c["a/b"] = 1`:                        "y",
				`SELECT VALUE c.id FROM c WHERE c["a/b"] > 1`:                        "x",
				`SELECT VALUE c.id FROM c WHERE FullTextContains(c["s/t"], "apple")`: "y",
			}
			order := []map[string]string{slashed, nested}
			if nestedFirst {
				order = []map[string]string{nested, slashed}
			}
			for _, qs := range order {
				for range 3 { // the second asking makes a path index
					for q, want := range qs {
						require.Equal(t, []string{want}, run(q), q)
					}
				}
			}
		})
	}
}

// TestIndexingModeAnyCase: azcosmos spells the modes "Consistent", "Lazy"
// and "None"; they are kept in their canonical lower case.
func TestIndexingModeAnyCase(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	for i, mode := range []string{"Consistent", "LAZY", "consistent"} {
		id := "c" + string(rune('0'+i))
		c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: id, DefaultTimeToLive: 10,
			IndexingPolicy: &lethe.IndexingPolicy{IndexingMode: lethe.IndexingMode(mode)}})
		require.NoError(t, err, mode)
		p, err := c.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, lethe.IndexingMode(strings.ToLower(mode)), p.IndexingPolicy.IndexingMode)
	}
	_, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "n", DefaultTimeToLive: 10,
		IndexingPolicy: &lethe.IndexingPolicy{IndexingMode: "None"}})
	require.ErrorIs(t, err, lethe.ErrBadRequest, "None in any case is none: no default TTL")
	_, err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "x",
		IndexingPolicy: &lethe.IndexingPolicy{IndexingMode: "sometimes"}})
	require.ErrorIs(t, err, lethe.ErrBadRequest)
}
