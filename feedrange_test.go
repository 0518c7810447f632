package lethe_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/epk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEffectivePartitionKey: the root's keys reach internal/epk's hashing
// by the container's version and kind (values from @azure/cosmos, as in
// internal/epk's table).
func TestEffectivePartitionKey(t *testing.T) {
	v2 := lethe.PartitionKeyDefinition{Paths: []string{"/pk"}, Version: 2}
	v1 := lethe.PartitionKeyDefinition{Paths: []string{"/pk"}, Version: 1}
	multi := lethe.PartitionKeyDefinition{Paths: []string{"/a", "/b", "/c"}, Kind: lethe.PartitionKeyKindMultiHash, Version: 2}
	tests := []struct {
		def  lethe.PartitionKeyDefinition
		pk   lethe.PartitionKey
		want string
	}{
		{v2, lethe.NewPartitionKeyString("a"), "3A5381E1114EB8D3FCC90795045B49B7"},
		{lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}, lethe.NewPartitionKeyString("a"), "3A5381E1114EB8D3FCC90795045B49B7"},
		{v2, lethe.NewPartitionKeyNumber(-123.456), "1757D540B589DD9962861CED15A7DA57"},
		{v2, lethe.NewPartitionKeyBool(true), "0E711127C5B5A8E4726AC6DD306A3E59"},
		{v2, lethe.NullPartitionKey, "378867E4430E67857ACE5C908374FE16"},
		{v2, lethe.NonePartitionKey, "11622DAA78F835834610ABE56EFF5CB5"},
		{v1, lethe.NewPartitionKeyString("hello"), "05C1EFF74961FE0869666D6D7000"},
		{v1, lethe.NewPartitionKeyNumber(1), "05C1ED172B6B2605BFF0"},
		{multi, lethe.NewPartitionKeyString("a").AppendNumber(1).AppendBool(true),
			"3A5381E1114EB8D3FCC90795045B49B720CD98B339BA78A5D0CF6953B87070B00E711127C5B5A8E4726AC6DD306A3E59"},
		{multi, lethe.NullPartitionKey.AppendNone().AppendBool(false),
			"378867E4430E67857ACE5C908374FE1611622DAA78F835834610ABE56EFF5CB52FE1BE91E90A3439635E0E9E37361EF2"},
		{lethe.PartitionKeyDefinition{}, lethe.NewPartitionKey(), ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, lethe.EffectivePartitionKey(tt.def, tt.pk), "%v %s", tt.def, tt.pk)
	}
}

// rangesOf divides the space into n feed ranges, as a container of n
// ranges has them.
func rangesOf(version int, multi bool, n int) []lethe.FeedRange {
	b := append(append([]string{epk.Min}, epk.Bounds(version, multi, n)...), epk.Max)
	out := make([]lethe.FeedRange, n)
	for i := range out {
		out[i] = lethe.FeedRange{MinInclusive: b[i], MaxExclusive: b[i+1]}
	}
	return out
}

// rangedContainer makes a container partitioned by /pk (version v) with
// an index on /n and a change feed, and n items of 40 keys.
func rangedContainer(t *testing.T, version, items int) (*lethe.Container, lethe.PartitionKeyDefinition) {
	t.Helper()
	s, _ := newStore(t)
	def := lethe.PartitionKeyDefinition{Paths: []string{"/pk"}, Version: version}
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", PartitionKeyDefinition: def, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
	for i := range items {
		pk := fmt.Sprintf("k%d", i%40)
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString(pk), fmt.Appendf(nil, `{"id":"%d","pk":%q,"n":%d}`, i, pk, i), nil)
		require.NoError(t, err)
	}
	return c, def
}

// queryRange reads every page of a query over one feed range.
func queryRange(t *testing.T, c *lethe.Container, text string, r *lethe.FeedRange, pageSize int32) [][]byte {
	t.Helper()
	var out [][]byte
	p := c.NewQueryItemsPager(text, lethe.NewPartitionKey(), &lethe.QueryOptions{FeedRange: r, PageSizeHint: pageSize})
	for p.More() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		out = append(out, page.Items...)
	}
	return out
}

// TestQueryFeedRanges: queries over each of a division of the space into
// ranges (version 1 and 2, 1 to 5 ranges) return every item exactly once,
// each from the range its key lies in, in every shape the library plans
// apart: a scan in item order, a filter an index answers, an ORDER BY an
// index streams, an index count and an aggregate over the whole range.
func TestQueryFeedRanges(t *testing.T) {
	for _, version := range []int{1, 2} {
		c, def := rangedContainer(t, version, 300)
		for _, n := range []int{1, 2, 3, 5} {
			t.Run(fmt.Sprintf("v%d/%d", version, n), func(t *testing.T) {
				for _, q := range []string{"SELECT * FROM c", "SELECT * FROM c WHERE c.n >= 100", "SELECT * FROM c ORDER BY c.n"} {
					seen := map[string]int{}
					for _, r := range rangesOf(version, false, n) {
						for _, item := range queryRange(t, c, q, &r, 7) {
							var doc struct{ ID, PK string }
							require.NoError(t, json.Unmarshal(item, &doc))
							seen[doc.ID]++
							key := lethe.EffectivePartitionKey(def, lethe.NewPartitionKeyString(doc.PK))
							assert.True(t, epk.InRange(key, r.MinInclusive, r.MaxExclusive), "%s: item %s of key %s in range %v", q, doc.ID, key, r)
						}
					}
					want := 300
					if q == "SELECT * FROM c WHERE c.n >= 100" {
						want = 200
					}
					assert.Len(t, seen, want, q)
					for id, k := range seen {
						assert.Equal(t, 1, k, "%s: item %s seen %d times", q, id, k)
					}
				}
				var total, filtered float64
				for _, r := range rangesOf(version, false, n) {
					for _, v := range queryRange(t, c, "SELECT VALUE COUNT(1) FROM c", &r, 0) {
						total += num(t, v)
					}
					for _, v := range queryRange(t, c, "SELECT VALUE COUNT(1) FROM c WHERE c.n < 50", &r, 0) {
						filtered += num(t, v)
					}
				}
				assert.Equal(t, 300.0, total)
				assert.Equal(t, 50.0, filtered)
			})
		}
	}
}

func num(t *testing.T, b []byte) float64 {
	t.Helper()
	var f float64
	require.NoError(t, json.Unmarshal(b, &f), "%s", b)
	return f
}

// TestQueryFeedRangeResumes: a continuation token of a query over one
// range resumes over the two halves of it (a split), and the pages
// together hold every item of the range once.
func TestQueryFeedRangeResumes(t *testing.T) {
	c, _ := rangedContainer(t, 2, 200)
	whole := lethe.FeedRange{MaxExclusive: lethe.MaxEffectivePartitionKey}
	halves := rangesOf(2, false, 2)
	for _, q := range []string{"SELECT * FROM c", "SELECT * FROM c ORDER BY c.n"} {
		p := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{FeedRange: &whole, PageSizeHint: 30})
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, page.ContinuationToken)
		seen := map[string]int{}
		for _, item := range ids(t, page.Items) {
			seen[item]++
		}
		for _, h := range halves {
			p := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{FeedRange: &h, PageSizeHint: 30, ContinuationToken: page.ContinuationToken})
			for p.More() {
				next, err := p.NextPage(ctx)
				require.NoError(t, err)
				for _, item := range ids(t, next.Items) {
					seen[item]++
				}
			}
		}
		assert.Len(t, seen, 200, q)
		for id, k := range seen {
			assert.Equal(t, 1, k, "%s: item %s seen %d times", q, id, k)
		}
	}
}

// TestChangeFeedFeedRanges: the change feed of each range of a division
// holds exactly the changes of its items, in both modes, and together the
// ranges' feeds hold every change once; a continuation of the whole feed
// resumes over each half.
func TestChangeFeedFeedRanges(t *testing.T) {
	c, def := rangedContainer(t, 2, 120)
	for i := range 30 {
		pk := fmt.Sprintf("k%d", i%40)
		_, err := c.DeleteItem(ctx, lethe.NewPartitionKeyString(pk), fmt.Sprint(i), nil)
		require.NoError(t, err)
	}
	for _, mode := range []lethe.ChangeFeedMode{lethe.ChangeFeedModeLatestVersion, lethe.ChangeFeedModeAllVersionsAndDeletes} {
		var lsns []uint64
		for _, r := range rangesOf(2, false, 4) {
			items, _ := readAll(t, c, lethe.ChangeFeedOptions{Mode: mode, FeedRange: &r, MaxItemCount: 9})
			for _, item := range items {
				var doc struct {
					PK       string `json:"pk"`
					LSN      uint64 `json:"_lsn"`
					Metadata struct {
						LSN          uint64            `json:"lsn"`
						PartitionKey map[string]string `json:"partitionKey"`
					} `json:"metadata"`
					Current, Previous struct {
						PK string `json:"pk"`
					}
				}
				require.NoError(t, json.Unmarshal(item, &doc))
				pk, lsn := doc.PK, doc.LSN
				if mode == lethe.ChangeFeedModeAllVersionsAndDeletes {
					pk, lsn = doc.Current.PK+doc.Previous.PK, doc.Metadata.LSN
				}
				key := lethe.EffectivePartitionKey(def, lethe.NewPartitionKeyString(pk))
				assert.True(t, epk.InRange(key, r.MinInclusive, r.MaxExclusive), "change %d of key %s in range %v", lsn, key, r)
				lsns = append(lsns, lsn)
			}
		}
		slices.Sort(lsns)
		want := 90
		if mode == lethe.ChangeFeedModeAllVersionsAndDeletes {
			want = 150
		}
		require.Len(t, lsns, want)
		assert.Len(t, slices.Compact(lsns), want, "a change read twice")
	}

	// A continuation taken over the whole space resumes over each half.
	whole := lethe.FeedRange{MaxExclusive: lethe.MaxEffectivePartitionKey}
	first, err := c.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, FeedRange: &whole, MaxItemCount: 50})
	require.NoError(t, err)
	total := len(first.Items)
	for _, h := range rangesOf(2, false, 2) {
		items, _ := readAll(t, c, lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, FeedRange: &h, Continuation: first.ContinuationToken})
		total += len(items)
	}
	assert.Equal(t, 150, total)
}

// TestPrefixFeedRange: on a hierarchical key, a prefix's feed range reads
// exactly the items it begins, by query and by change feed.
func TestPrefixFeedRange(t *testing.T) {
	s, _ := newStore(t)
	def := lethe.PartitionKeyDefinition{Paths: []string{"/t", "/u"}, Kind: lethe.PartitionKeyKindMultiHash}
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "h", PartitionKeyDefinition: def, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
	want := map[string][]string{}
	for i := range 60 {
		tn, u := fmt.Sprintf("t%d", i%4), fmt.Sprintf("u%d", i%7)
		id := fmt.Sprint(i)
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString(tn).AppendString(u), fmt.Appendf(nil, `{"id":%q,"t":%q,"u":%q}`, id, tn, u), nil)
		require.NoError(t, err)
		want[tn] = append(want[tn], id)
	}
	for tn, w := range want {
		r := lethe.PrefixFeedRange(lethe.NewPartitionKeyString(tn))
		got := ids(t, queryRange(t, c, "SELECT * FROM c", &r, 0))
		assert.ElementsMatch(t, w, got, tn)
		items, _ := readAll(t, c, lethe.ChangeFeedOptions{FeedRange: &r})
		assert.ElementsMatch(t, w, ids(t, items), tn)
	}
}

// TestFeedRangeRefused: bounds that are not hexadecimal, or an empty
// range, are a 400 naming what is wrong, for queries and change feeds.
func TestFeedRangeRefused(t *testing.T) {
	c, _ := rangedContainer(t, 2, 1)
	for _, r := range []lethe.FeedRange{{}, {MinInclusive: "zz", MaxExclusive: "FF"}, {MinInclusive: "20", MaxExclusive: "10"}, {MinInclusive: "10", MaxExclusive: "10"}} {
		_, err := c.NewQueryItemsPager("SELECT * FROM c", lethe.NewPartitionKey(), &lethe.QueryOptions{FeedRange: &r}).NextPage(ctx)
		assert.ErrorIs(t, err, lethe.ErrBadRequest, "%v", r)
		assert.ErrorContains(t, err, "feed range")
		_, err = c.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{FeedRange: &r})
		assert.ErrorIs(t, err, lethe.ErrBadRequest, "%v", r)
		assert.ErrorContains(t, err, "feed range")
	}
	// Lower-case bounds are the same keys.
	r := lethe.FeedRange{MinInclusive: "", MaxExclusive: "ff"}
	assert.Len(t, queryRange(t, c, "SELECT * FROM c", &r, 0), 1)
}

// TestFeedRangeMultiHashOnePath: a MultiHash container of one path (even
// of hash version 1) is hashed as hierarchical, as EffectivePartitionKey
// and PrefixFeedRange hash it: a key's prefix range holds exactly its
// items, for queries and the change feed.
func TestFeedRangeMultiHashOnePath(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	def := lethe.PartitionKeyDefinition{Paths: []string{"/t"}, Kind: lethe.PartitionKeyKindMultiHash, Version: 1}
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "m1", PartitionKeyDefinition: def, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
	want := map[string][]string{}
	for i := range 40 {
		tn, id := fmt.Sprintf("t%d", i%5), fmt.Sprint(i)
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString(tn), fmt.Appendf(nil, `{"id":%q,"t":%q}`, id, tn), nil)
		require.NoError(t, err)
		want[tn] = append(want[tn], id)
	}
	for tn, w := range want {
		r := lethe.PrefixFeedRange(lethe.NewPartitionKeyString(tn))
		assert.ElementsMatch(t, w, ids(t, queryRange(t, c, "SELECT * FROM c", &r, 0)), tn)
		items, _ := readAll(t, c, lethe.ChangeFeedOptions{FeedRange: &r})
		assert.ElementsMatch(t, w, ids(t, items), tn)
	}
}
