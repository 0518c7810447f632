package lethe_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// pagingModel is what TestQueryPagingModel knows of the container: for each
// item, when it was last written, its ttl (0: none) and the value of "v"
// it was written with.
type pagingModel struct {
	items map[string]pagingItem
}

type pagingItem struct {
	written time.Time
	ttl     int
	v       int
}

func (m *pagingModel) live(id string, now time.Time) bool {
	it, ok := m.items[id]
	return ok && (it.ttl == 0 || now.Before(it.written.Add(time.Duration(it.ttl)*time.Second)))
}

// TestQueryPagingModel pages through queries, through one pager or through
// tokens and fresh pagers, while items are created, rewritten, deleted and
// expire between pages, and checks against a model that:
//   - no result is of an item that is not live at the instant of its page;
//   - no item is returned twice unless it was written in between;
//   - every item live from the first page to the last and never written
//     nor deleted in between is returned.
//
// Run with -lethe.seed=N to replay a failure.
func TestQueryPagingModel(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	if f := flag.Lookup("lethe.seed"); f != nil && f.Value.String() != "0" {
		seed, _ = strconv.ParseUint(f.Value.String(), 10, 64)
	}
	t.Logf("seed %d (replay with -lethe.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	c, clock := newContainer(t, lethe.TTLNever)
	m := &pagingModel{items: map[string]pagingItem{}}
	version := 0

	write := func(id string) {
		version++
		ttl := []int{0, 0, 1, 2, 3, 5, 8}[rng.IntN(7)]
		doc := fmt.Sprintf(`{"id":%q,"v":%d,"g":%d`, id, version, version%2)
		if ttl > 0 {
			doc += fmt.Sprintf(`,"ttl":%d`, ttl)
		}
		_, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(doc+"}"), nil)
		require.NoError(t, err)
		m.items[id] = pagingItem{written: clock.Now(), ttl: ttl, v: version}
	}
	for i := range 30 {
		write(fmt.Sprintf("k%02d", i))
	}

	queries := []struct {
		text string
		even bool // only items with an even v match
	}{
		{"SELECT c.id, c.v FROM c", false},
		{"SELECT c.id, c.v FROM c ORDER BY c.v", false},
		{"SELECT c.id, c.v FROM c ORDER BY c.v DESC", false},
		{"SELECT c.id, c.v FROM c WHERE c.v % 2 = 0 ORDER BY c.v", true},
		// Filters an index decides (from their second query on): the
		// items are the results, copied from the index's candidates.
		{"SELECT * FROM c WHERE c.g = 0", true},
		{"SELECT VALUE c FROM c WHERE c.v >= 0", false},
	}
	for round := range 300 {
		qq := queries[rng.IntN(len(queries))]
		q := qq.text
		size := int32(1 + rng.IntN(6))
		tokens := rng.IntN(2) == 0
		desc := fmt.Sprintf("seed %d round %d: %q pages of %d, tokens %v", seed, round, q, size, tokens)

		start := clock.Now()
		liveAtStart := map[string]bool{}
		for id := range m.items {
			if m.live(id, start) {
				liveAtStart[id] = true
			}
		}
		touched := map[string]bool{}  // written or deleted since the start
		writtenAt := map[string]int{} // page number of each item's last write
		returnedAt := map[string]int{}
		var p *lethe.QueryItemsPager
		token := ""
		var last time.Time
		for page := 0; ; page++ {
			if p == nil || tokens {
				p = c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: size, ContinuationToken: token})
			}
			r, err := p.NextPage(ctx)
			require.NoError(t, err, desc)
			last = clock.Now()
			for _, raw := range r.Items {
				var res struct {
					ID string
					V  int
				}
				require.NoError(t, json.Unmarshal(raw, &res), desc)
				require.True(t, m.live(res.ID, last), "%s: page %d returned %s, not live", desc, page, res.ID)
				if prev, ok := returnedAt[res.ID]; ok {
					w, written := writtenAt[res.ID]
					require.True(t, written && w > prev, "%s: page %d returned %s again (first on page %d) though not written since", desc, page, res.ID, prev)
				}
				returnedAt[res.ID] = page
			}
			if r.ContinuationToken == "" {
				require.False(t, p.More(), desc)
				break
			}
			token = r.ContinuationToken

			// Change things before the next page.
			for range rng.IntN(4) {
				id := fmt.Sprintf("k%02d", rng.IntN(40))
				switch op := rng.IntN(10); {
				case op < 4: // create or rewrite
					write(id)
					touched[id] = true
					writtenAt[id] = page + 1
				case op < 6: // delete
					_, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), id, nil)
					if m.live(id, clock.Now()) {
						require.NoError(t, err, desc)
						delete(m.items, id)
						touched[id] = true
					} else {
						require.ErrorIs(t, err, lethe.ErrNotFound, desc)
					}
				default:
					clock.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
				}
			}
		}
		for id := range liveAtStart {
			if !touched[id] && m.live(id, last) && (!qq.even || m.items[id].v%2 == 0) {
				_, ok := returnedAt[id]
				require.True(t, ok, "%s: %s was live throughout and untouched but never returned", desc, id)
			}
		}
		// Now and then, let time pass between queries too.
		clock.Advance(time.Duration(rng.IntN(3)) * time.Second)
		for id := range m.items {
			if !m.live(id, clock.Now()) {
				delete(m.items, id)
			}
		}
		for len(m.items) < 20 {
			write(fmt.Sprintf("k%02d", rng.IntN(40)))
		}
	}
}
