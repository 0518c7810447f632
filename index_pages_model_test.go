package lethe

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pmItem is what TestIndexPagesModel knows of one item: its position (as
// lethe gave it when the item was created), its content (v is unique to
// each write) and what decides its expiry.
type pmItem struct {
	pk, id  string
	pos     uint64
	v, g    int
	s       string
	ttl     TTL   // its own ttl; TTLOff when absent
	written int64 // its last write, Unix nanoseconds
}

// pmModel holds the live items of a container, by partition key and id,
// and its default ttl. Expiry is final (SPEC): sweep drops every item
// expired at an instant, before the default changes, so the model holds
// exactly the items live now.
type pmModel struct {
	items map[string]pmItem
	def   TTL
}

func pmKey(pk, id string) string { return pk + "/" + id }

// expired reports whether it is expired at now under the default def, as
// SPEC's table says: nothing expires with the default off; an item's own
// ttl wins over the default; -1 never expires.
func (m *pmModel) expired(it pmItem, now int64) bool {
	eff := it.ttl
	if eff == TTLOff {
		eff = m.def
	}
	if m.def == TTLOff || eff == TTLNever {
		return false
	}
	return now >= it.written+int64(eff)*int64(time.Second)
}

func (m *pmModel) sweep(now int64) {
	for k, it := range m.items {
		if m.expired(it, now) {
			delete(m.items, k)
		}
	}
}

// liveAs reports whether the item it is a version of (the same position)
// is live.
func (m *pmModel) liveAs(it pmItem) bool {
	cur, ok := m.items[pmKey(it.pk, it.id)]
	return ok && cur.pos == it.pos
}

// pmQuery is a query of TestIndexPagesModel and its meaning in the model.
type pmQuery struct {
	text  string
	match func(pmItem) bool
	order int // 0: item order; 1: ORDER BY c.g; -1: ORDER BY c.g DESC
}

// compareKeys compares two results of q in the order of their keys: the
// ORDER BY value, then the item's position.
func (q pmQuery) compareKeys(a, b pmItem) int {
	if c := cmp.Compare(a.g, b.g) * q.order; c != 0 {
		return c
	}
	return cmp.Compare(a.pos, b.pos)
}

// TestIndexPagesModel pages through queries in containers with an index of
// the path they filter or order on and without, with random changes
// between the pages: creates, replaces (of the indexed value or not),
// upserts, deletes, patches, time passing past some expiries, changes of
// the default ttl, the index dropped and made again (a policy change),
// purges and other queries (which make indexes). A model of the live items
// and of what each pager has listed decides what each page must hold,
// exactly, as NewQueryItemsPager's documentation promises:
//
//   - A query in item order lists the items live at its pager's first
//     page; each page returns, from where the last ended to where it ends
//     (the pager's cursor), those of the list still live (the same
//     position) at its instant, with the listed content. A pager resumed
//     from a token, with no index to list from, walks the items live at
//     each page's instant instead.
//   - Any other query is evaluated at the instant of a page that
//     evaluates it (the pager's first, each page of a streamed pager, a
//     pager given a token), from the key of the last result on; the other
//     pages return its next results, less those whose item is not live
//     at their instant.
//
// So no page holds an item expired or deleted at its instant, no item
// comes twice (item order), results come in strictly increasing keys, and
// every item live and unwritten throughout a query comes. Run with
// -lethe.seed=N to replay a failure. It runs 2 rounds (a container with
// an index, one without); TestIndexPagesModelWithoutRace runs 6, which
// the race detector would take seconds over (withoutrace_internal_test.go).
func TestIndexPagesModel(t *testing.T) {
	t.Parallel()
	runIndexPagesModel(t, 2)
}

// runIndexPagesModel runs TestIndexPagesModel's sequence for rounds
// rounds.
func runIndexPagesModel(t *testing.T, rounds int) {
	seed := rand.Uint64()
	if f := flag.Lookup("lethe.seed"); f != nil && f.Value.String() != "0" {
		seed, _ = strconv.ParseUint(f.Value.String(), 10, 64)
	}
	t.Logf("seed %d (replay with -lethe.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 17))
	ctx := context.Background()
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := Open(&Options{Clock: clock, Reaper: ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	defer s.Close()

	queries := []pmQuery{
		{`SELECT * FROM c WHERE c.g = 1`, func(it pmItem) bool { return it.g == 1 }, 0},
		{`SELECT * FROM c WHERE c.g >= 1 AND c.g < 3`, func(it pmItem) bool { return it.g >= 1 && it.g < 3 }, 0},
		{`SELECT * FROM c WHERE c.g IN (0, 3)`, func(it pmItem) bool { return it.g == 0 || it.g == 3 }, 0},
		{`SELECT * FROM c WHERE c.g = 2 AND c.s = "a"`, func(it pmItem) bool { return it.g == 2 && it.s == "a" }, 0},
		{`SELECT * FROM c`, func(pmItem) bool { return true }, 0},
		{`SELECT * FROM c WHERE c.g >= 2 ORDER BY c.g`, func(it pmItem) bool { return it.g >= 2 }, 1},
		{`SELECT * FROM c ORDER BY c.g DESC`, func(pmItem) bool { return true }, -1},
		{`SELECT * FROM c WHERE c.g <= 2 ORDER BY c.g DESC`, func(it pmItem) bool { return it.g <= 2 }, -1},
	}
	noIndex := &IndexingPolicy{IndexingMode: IndexingModeConsistent, ExcludedPaths: []IndexPath{{Path: "/g/?"}}}
	defs := []TTL{TTLOff, TTLNever, 2, 5}
	pages, sessions, snapshots, indexed, evaluations := 0, 0, 0, 0, 0
	for round := range rounds {
		props := ContainerProperties{ID: fmt.Sprint("c", round), DefaultTimeToLive: defs[rng.IntN(len(defs))],
			PartitionKeyDefinition: PartitionKeyDefinition{Paths: []string{"/pk"}}}
		if round%2 == 1 {
			props.IndexingPolicy = noIndex
		}
		c, err := s.CreateContainer(ctx, props)
		require.NoError(t, err)
		m := &pmModel{items: map[string]pmItem{}, def: props.DefaultTimeToLive}
		version := 0
		now := func() int64 { return clock.Now().UnixNano() }
		advance := func(d time.Duration) {
			clock.Advance(d)
			m.sweep(now())
		}

		// write makes one random change of an item, and the same in the
		// model, checking its outcome.
		write := func(desc string) {
			pk, id := fmt.Sprint("p", rng.IntN(2)), fmt.Sprint("i", rng.IntN(40))
			key := pmKey(pk, id)
			old, exists := m.items[key]
			version++
			it := pmItem{pk: pk, id: id, v: version, g: rng.IntN(5), s: []string{"a", "b"}[rng.IntN(2)],
				ttl: []TTL{TTLOff, TTLOff, TTLNever, 1, 2, 4}[rng.IntN(6)], written: now()}
			if exists && rng.IntN(3) == 0 {
				it.g = old.g // a write that leaves the indexed value as it was
			}
			doc := fmt.Appendf(nil, `{"id":%q,"pk":%q,"g":%d,"s":%q,"v":%d`, id, pk, it.g, it.s, it.v)
			if it.ttl != TTLOff {
				doc = fmt.Appendf(doc, `,"ttl":%d`, it.ttl)
			}
			doc = append(doc, '}')
			kpk := NewPartitionKeyString(pk)
			op := rng.IntN(5)
			switch op {
			case 0:
				_, err = c.CreateItem(ctx, kpk, doc, nil)
			case 1:
				_, err = c.ReplaceItem(ctx, kpk, id, doc, nil)
			case 2:
				_, err = c.UpsertItem(ctx, kpk, doc, nil)
			case 3:
				_, err = c.DeleteItem(ctx, kpk, id, nil)
			case 4: // patch: g and v; the rest as it was
				var ops PatchOperations
				ops.AppendSet("/g", it.g)
				ops.AppendSet("/v", it.v)
				_, err = c.PatchItem(ctx, kpk, id, ops, nil)
				it.s, it.ttl = old.s, old.ttl
			}
			switch {
			case op == 0 && exists:
				require.ErrorIs(t, err, ErrConflict, "%s: create of live %s", desc, key)
				return
			case (op == 1 || op == 3 || op == 4) && !exists:
				require.ErrorIs(t, err, ErrNotFound, "%s: op %d of missing %s", desc, op, key)
				return
			}
			require.NoError(t, err, "%s: op %d of %s", desc, op, key)
			if op == 3 {
				delete(m.items, key)
				return
			}
			rec := currentRecord(c, kpk, id)
			require.NotEmpty(t, rec, desc)
			it.pos = rec.pos()
			if exists {
				require.Equal(t, old.pos, it.pos, "%s: a write of live %s keeps its position", desc, key)
			} else {
				for _, o := range m.items {
					require.Less(t, o.pos, it.pos, "%s: a new item comes after every other", desc)
				}
			}
			m.items[key] = it
		}

		// change makes one random change between pages.
		change := func(desc string) {
			switch op := rng.IntN(20); {
			case op < 12:
				write(desc)
			case op < 15:
				advance(time.Duration(rng.IntN(2500)) * time.Millisecond)
			case op == 15: // the default ttl
				p, err := c.Read(ctx)
				require.NoError(t, err)
				p.DefaultTimeToLive = defs[rng.IntN(len(defs))]
				require.NoError(t, c.Replace(ctx, p), desc)
				m.def = p.DefaultTimeToLive
				m.sweep(now())
			case op == 16: // the index of g dropped, or allowed again
				p, err := c.Read(ctx)
				require.NoError(t, err)
				if p.IndexingPolicy != nil && len(p.IndexingPolicy.ExcludedPaths) > 0 {
					p.IndexingPolicy = &IndexingPolicy{IndexingMode: IndexingModeConsistent}
				} else {
					p.IndexingPolicy = noIndex
				}
				require.NoError(t, c.Replace(ctx, p), desc)
			case op == 17:
				_, err := c.Purge(ctx)
				require.NoError(t, err, desc)
			default: // another query, to the end: it may make an index
				q := queries[rng.IntN(len(queries))]
				for _, err := range c.QueryItems(ctx, q.text, NewPartitionKey(), nil) {
					require.NoError(t, err, desc)
				}
			}
		}

		for range 60 {
			write("setup")
		}
		for qi := range 120 {
			q := queries[rng.IntN(len(queries))]
			pk, pkValue := NewPartitionKey(), ""
			if rng.IntN(3) == 0 {
				pkValue = fmt.Sprint("p", rng.IntN(2))
				pk = NewPartitionKeyString(pkValue)
			}
			o := QueryOptions{PageSizeHint: int32(1 + rng.IntN(5))}
			if q.order == 0 && rng.IntN(4) == 0 {
				o.MaxPageBytes = 60 + rng.IntN(200)
			}
			tokens := rng.IntN(3) == 0
			desc := fmt.Sprintf("seed %d round %d query %d: %s in %q, %+v, tokens %v", seed, round, qi, q.text, pkValue, o, tokens)
			selected := func(it pmItem) bool { return (pkValue == "" || it.pk == pkValue) && q.match(it) }
			liveAtStart := maps2slice(m.items)
			touched := map[string]bool{}
			returned := map[string]bool{}
			returnedPos := map[uint64]bool{}

			// The state of the pager the model follows.
			var (
				p       *QueryItemsPager
				token   string
				from    uint64   // item order: the first position the next page may return
				list    []pmItem // item order: the pager's list (snapshot); ORDER BY: its evaluation
				listed  bool     // item order: the pager has a list (else it walks)
				next    int      // ORDER BY: the evaluation's next result
				lastKey *pmItem  // ORDER BY: the key of the last result passed
				prevRes *pmItem  // the last result returned
			)
			for page := 0; ; page++ {
				pdesc := fmt.Sprintf("%s: page %d", desc, page)
				newPager := p == nil || tokens
				if newPager {
					o.ContinuationToken = token
					p = c.NewQueryItemsPager(q.text, pk, &o)
					sessions++
					if token != "" && q.order == 0 {
						ct, err := decodeToken(token)
						require.NoError(t, err, pdesc)
						from = binary.BigEndian.Uint64([]byte(ct.Key.Item())) + 1
					}
				}
				evaluates := q.order != 0 && !p.ran
				nowPage := now()
				r, err := p.NextPage(ctx)
				require.NoError(t, err, pdesc)
				pages++
				var want []pmItem
				if q.order == 0 {
					end := uint64(math.MaxUint64)
					if p.More() {
						end = p.ip.st.from
					}
					require.GreaterOrEqual(t, end, from, "%s: the cursor went back", pdesc)
					if newPager {
						// The first page of a pager: the items live now.
						list = nil
						for _, it := range m.items {
							if selected(it) {
								list = append(list, it)
							}
						}
						slices.SortFunc(list, func(a, b pmItem) int { return cmp.Compare(a.pos, b.pos) })
						listed = !p.More() || p.ip.snapshot
						if listed && p.More() {
							snapshots++
							if p.ip.guard.gen != 0 {
								indexed++
							}
						}
						for _, it := range list {
							if it.pos >= from && it.pos < end {
								want = append(want, it)
							}
						}
					} else if listed {
						for _, it := range list {
							if it.pos >= from && it.pos < end && m.liveAs(it) {
								want = append(want, it)
							}
						}
					} else {
						for _, it := range m.items {
							if selected(it) && it.pos >= from && it.pos < end {
								want = append(want, it)
							}
						}
						slices.SortFunc(want, func(a, b pmItem) int { return cmp.Compare(a.pos, b.pos) })
					}
					from = end
				} else {
					if evaluates {
						evaluations++
						list, next = nil, 0
						for _, it := range m.items {
							if selected(it) && (lastKey == nil || q.compareKeys(it, *lastKey) > 0) {
								list = append(list, it)
							}
						}
						slices.SortFunc(list, q.compareKeys)
					}
					n := min(int(o.PageSizeHint), len(list)-next)
					if evaluates && r.ContinuationToken != "" {
						n = len(r.Items) // a streamed page may end early; its pager evaluates again after it
					}
					for _, it := range list[next : next+n] {
						if m.liveAs(it) {
							want = append(want, it)
						}
					}
					if n > 0 {
						lastKey = &list[next+n-1]
					}
					next += n
				}
				got := make([]pmItem, len(r.Items))
				for i, raw := range r.Items {
					var d struct {
						ID string `json:"id"`
						PK string `json:"pk"`
						V  int    `json:"v"`
					}
					require.NoError(t, json.Unmarshal(raw, &d), pdesc)
					got[i] = pmItem{pk: d.PK, id: d.ID, v: d.V}
				}
				wantIDs, gotIDs := pmIDs(want), pmIDs(got)
				require.Equal(t, wantIDs, gotIDs, "%s (at %d)", pdesc, nowPage)
				for _, it := range want {
					require.True(t, m.liveAs(it), "%s: %s/%s is not live", pdesc, it.pk, it.id)
					if prevRes != nil {
						if q.order == 0 {
							require.Greater(t, it.pos, prevRes.pos, "%s: item order", pdesc)
						} else {
							require.Positive(t, q.compareKeys(it, *prevRes), "%s: key order", pdesc)
						}
					}
					if q.order == 0 { // an item is its position: one created again is another
						require.False(t, returnedPos[it.pos], "%s: %s/%s twice", pdesc, it.pk, it.id)
						returnedPos[it.pos] = true
					}
					returned[pmKey(it.pk, it.id)] = true
					prev := it
					prevRes = &prev
				}
				if r.ContinuationToken == "" {
					require.False(t, p.More(), pdesc)
					if q.order != 0 {
						require.Equal(t, len(list), next, "%s: the last page left results of its evaluation", pdesc)
					}
					break
				}
				token = r.ContinuationToken
				for range rng.IntN(4) {
					before := maps2slice(m.items)
					change(pdesc)
					for _, it := range before {
						if cur, ok := m.items[pmKey(it.pk, it.id)]; !ok || cur.v != it.v {
							touched[pmKey(it.pk, it.id)] = true
						}
					}
				}
			}
			// Implied by the pages' checks, said on its own: every item
			// selected, live and untouched throughout was returned.
			for _, it := range liveAtStart {
				k := pmKey(it.pk, it.id)
				if selected(it) && !touched[k] && m.liveAs(it) {
					require.True(t, returned[k], "%s: %s, live and untouched throughout, was never returned", desc, k)
				}
			}
			if rng.IntN(4) == 0 {
				advance(time.Duration(rng.IntN(3)) * time.Second)
			}
			for len(m.items) < 30 {
				write(desc)
			}
		}
	}
	t.Logf("%d pages of %d pagers; %d pagers' later pages read an item list, %d of them an index's; %d evaluations of ORDER BY", pages, sessions, snapshots, indexed, evaluations)
}

// currentRecord returns the record of the item id in pk as stored now
// (expired or not), or "" if there is none.
func currentRecord(c *Container, pk PartitionKey, id string) record {
	sh, h := c.shardFor(pk.enc, id)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.items.get(pk.enc, id, h)
}

func maps2slice(m map[string]pmItem) []pmItem {
	out := make([]pmItem, 0, len(m))
	for _, it := range m {
		out = append(out, it)
	}
	return out
}

// pmIDs names each item as a page shows it: partition, id and version.
func pmIDs(its []pmItem) []string {
	out := make([]string, len(its))
	for i, it := range its {
		out[i] = fmt.Sprintf("%s/%s@v%d", it.pk, it.id, it.v)
	}
	return out
}
