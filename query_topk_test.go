package lethe_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// unindexedContainer opens a store on a manual clock with the query page
// budget b and a container whose policy indexes only ids: an ORDER BY of
// any other path sorts. Items with a ttl expire.
func unindexedContainer(t *testing.T, b lethe.QueryBudget) (*lethe.Container, *lethe.ManualClock) {
	t.Helper()
	clock := lethe.NewManualClock(t0)
	s := openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}, QueryBudget: b})
	return mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever,
		IndexingPolicy: &lethe.IndexingPolicy{ExcludedPaths: []lethe.IndexPath{{Path: "/*"}}, IncludedPaths: []lethe.IndexPath{{Path: "/id/?"}}}}), clock
}

// TestTopOrderByUnindexedFitsItsBudget: SELECT TOP k ... ORDER BY a path
// no index serves, over more items than one page's memory budget holds
// rows of, holds about k rows and answers (before, it held every row and
// failed with 408); so does each page of the same query without TOP
// resumed from a continuation token, which holds a page's rows.
func TestTopOrderByUnindexedFitsItsBudget(t *testing.T) {
	t.Parallel()
	// 4000 rows pass 64 KiB (96 bytes each, and their results); 2 × 11 fit.
	c, _ := unindexedContainer(t, lethe.QueryBudget{Memory: 64 << 10})
	const n = 4000
	item := func(x int) string { return fmt.Sprintf(`{"id":"i%04d","x":%d}`, (x*7919)%n, x) }
	// The 11 greatest first, so that the query's first page (which holds
	// every row: the pager's later pages come from it) fits the budget.
	for x := n - 1; x >= n-11; x-- {
		create(t, c, item(x))
	}
	q := "SELECT c.id, c.x FROM c ORDER BY c.x DESC"
	first, err := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 10}).NextPage(ctx)
	require.NoError(t, err)
	require.Len(t, first.Items, 10)
	for x := n - 12; x >= 0; x-- {
		create(t, c, item(x))
	}

	top := "SELECT TOP 10 c.id, c.x FROM c ORDER BY c.x DESC"
	var got []string
	for it, err := range c.QueryItems(ctx, top, lethe.NewPartitionKey(), nil) {
		require.NoError(t, err)
		got = append(got, string(it))
	}
	var want []string
	for x := n - 1; x >= n-10; x-- {
		want = append(want, item(x))
	}
	require.Equal(t, want, got)

	tok, x := first.ContinuationToken, n-11
	for page := range 3 {
		r, err := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 10, ContinuationToken: tok}).NextPage(ctx)
		require.NoError(t, err, "page %d", page+2)
		require.Len(t, r.Items, 10)
		for _, it := range r.Items {
			require.Equal(t, item(x), string(it))
			x--
		}
		tok = r.ContinuationToken
	}
	// The first page of all, which holds every row, is refused as before.
	_, err = c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 10}).NextPage(ctx)
	require.Equal(t, 408, status(err), "%v", err)
}

// orderValue is a value of an ORDER BY path in TestOrderByUnindexedModel:
// missing (undefined), null, a bool, a number or a string.
type orderValue struct {
	kind int // 0 undefined, 1 null, 2 bool, 3 number, 4 string: Cosmos DB's order of types
	b    bool
	n    float64
	s    string
}

func (v orderValue) json() string {
	switch v.kind {
	case 1:
		return "null"
	case 2:
		return fmt.Sprint(v.b)
	case 3:
		return fmt.Sprint(v.n)
	case 4:
		return fmt.Sprintf("%q", v.s)
	}
	return ""
}

func compareOrderValues(a, b orderValue) int {
	if c := cmp.Compare(a.kind, b.kind); c != 0 {
		return c
	}
	switch a.kind {
	case 2:
		return cmp.Compare(boolInt(a.b), boolInt(b.b))
	case 3:
		return cmp.Compare(a.n, b.n)
	case 4:
		return strings.Compare(a.s, b.s)
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// modelItem is an item of TestOrderByUnindexedModel: its id, its values
// at the paths a, b and n, when it expires (zero: never) and its place in
// creation order.
type modelItem struct {
	id      string
	vals    map[string]orderValue
	expires time.Time
	pos     int
}

// TestOrderByUnindexedModel is a model test of sorted queries on paths no
// index serves: over random items (values of every type the order knows,
// many ties, some items expiring) and random queries (one to three ORDER
// BY paths in either direction, TOP, OFFSET and LIMIT, results kept as
// stored or computed), read in random page sizes each from a fresh pager
// given the last page's continuation token, as the REST front reads them,
// with the clock moving between pages, each page is exactly the model's:
// the first results, after the last one returned, among the items live at
// the page's instant, ordered by their values and then by creation, none
// past TOP or LIMIT; and one pager reading the rest from a token reads
// what the model does. Replay a failure with -lethe.seed=N.
func TestOrderByUnindexedModel(t *testing.T) {
	t.Parallel()
	seed := cmp.Or(*seedFlag, rand.Uint64())
	t.Logf("seed %d (replay with -lethe.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	values := []orderValue{{}, {kind: 1}, {kind: 2}, {kind: 2, b: true}, {kind: 3, n: -1}, {kind: 3}, {kind: 3, n: 1.5}, {kind: 3, n: 2}, {kind: 4}, {kind: 4, s: "a"}, {kind: 4, s: "b"}, {kind: 4, s: "ab"}}
	paths := []string{"a", "b", "n"}
	for round := range 30 {
		c, clock := unindexedContainer(t, lethe.QueryBudget{})
		items := make([]modelItem, 20+rng.IntN(150))
		for i := range items {
			it := modelItem{id: fmt.Sprintf("i%03d", rng.IntN(1000)) + fmt.Sprint(i), vals: map[string]orderValue{}, pos: i}
			doc := fmt.Sprintf(`{"id":%q`, it.id)
			for _, p := range paths {
				v := values[rng.IntN(len(values))]
				it.vals[p] = v
				if v.kind > 0 {
					doc += fmt.Sprintf(",%q:%s", p, v.json())
				}
			}
			if rng.IntN(3) == 0 {
				ttl := 1 + rng.IntN(30)
				doc += fmt.Sprintf(`,"ttl":%d`, ttl)
				it.expires = clock.Now().Add(time.Duration(ttl) * time.Second)
			}
			create(t, c, doc+"}")
			items[i] = it
		}

		// The query.
		var order []string
		var desc []bool
		for _, i := range rng.Perm(len(paths))[:1+rng.IntN(3)] {
			order, desc = append(order, paths[i]), append(desc, rng.IntN(2) == 0)
		}
		var obs []string
		for i, p := range order {
			obs = append(obs, "c."+p+map[bool]string{true: " DESC", false: " ASC"}[desc[i]])
		}
		top, offset, limit := -1, 0, -1
		sel := []string{"VALUE c.id", "*", "c.id, c.a"}[rng.IntN(3)]
		text := fmt.Sprintf("SELECT %s FROM c ORDER BY %s", sel, strings.Join(obs, ", "))
		switch rng.IntN(3) {
		case 0:
			top = rng.IntN(40)
			text = fmt.Sprintf("SELECT TOP %d %s FROM c ORDER BY %s", top, sel, strings.Join(obs, ", "))
		case 1:
			offset, limit = rng.IntN(10), rng.IntN(60)
			text += fmt.Sprintf(" OFFSET %d LIMIT %d", offset, limit)
		}
		what := fmt.Sprintf("round %d: %s", round, text)
		less := func(a, b modelItem) int {
			for i, p := range order {
				if c := compareOrderValues(a.vals[p], b.vals[p]); c != 0 {
					if desc[i] {
						return -c
					}
					return c
				}
			}
			return cmp.Compare(a.pos, b.pos)
		}
		// model returns the ids of the live items after last (nil: from
		// the start), in order.
		model := func(last *modelItem) []string {
			now := clock.Now()
			var live []modelItem
			for _, it := range items {
				if (it.expires.IsZero() || now.Before(it.expires)) && (last == nil || less(it, *last) > 0) {
					live = append(live, it)
				}
			}
			slices.SortFunc(live, less)
			ids := make([]string, len(live))
			for i, it := range live {
				ids[i] = it.id
			}
			return ids
		}
		byID := map[string]modelItem{}
		for _, it := range items {
			byID[it.id] = it
		}
		bound := func(ids []string, consumed int) []string {
			for _, n := range []int{top, limit} {
				if n >= 0 {
					ids = ids[:min(len(ids), max(0, n-consumed))]
				}
			}
			return ids
		}

		// Pages from fresh pagers, the clock moving between them.
		tok, consumed := "", 0
		var last *modelItem
		for page := 0; ; page++ {
			size := 1 + rng.IntN(15)
			clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
			want := model(last)
			if last == nil {
				want = want[min(offset, len(want)):]
			}
			want = bound(want, consumed)
			r, err := c.NewQueryItemsPager(text, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: int32(size), ContinuationToken: tok}).NextPage(ctx)
			require.NoError(t, err, what)
			got := resultIDs(t, r.Items)
			require.Equal(t, want[:min(size, len(want))], got, "%s: page %d", what, page)
			consumed += len(got)
			if len(got) > 0 {
				it := byID[got[len(got)-1]]
				last = &it
			}
			if tok = r.ContinuationToken; tok == "" {
				require.LessOrEqual(t, len(want), size, "%s: page %d has no token, and the model has more", what, page)
				break
			}
			if rng.IntN(4) == 0 {
				// One pager reads the rest, the clock standing still.
				want := bound(model(last), consumed)
				var got []string
				for it, err := range c.QueryItems(ctx, text, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: int32(size), ContinuationToken: tok}) {
					require.NoError(t, err, what)
					got = append(got, resultIDs(t, [][]byte{it})...)
				}
				require.Equal(t, want, got, "%s: the rest from page %d, by one pager", what, page)
				break
			}
		}
	}
}

// resultIDs returns the ids of results that are ids or objects with one.
func resultIDs(t *testing.T, items [][]byte) []string {
	t.Helper()
	ids := []string{}
	for _, it := range items {
		var id string
		if json.Unmarshal(it, &id) != nil {
			var o struct{ ID string }
			require.NoError(t, json.Unmarshal(it, &o))
			id = o.ID
		}
		ids = append(ids, id)
	}
	return ids
}
