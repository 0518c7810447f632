package lethe

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var seedFlag = flag.Uint64("lethe.seed", 0, "seed of the randomized model test (0: a new one)")

// refItem and refModel are a reference model of SPEC §2 and §3, written
// independently of the store: a map and the rule, nothing else.
type refItem struct {
	ttl     TTL // TTLOff: inherit
	written int64
	value   string // what the store returned on the write
	etag    string
}

type refModel struct {
	def   TTL
	items map[string]refItem
}

func (m *refModel) expired(it refItem, now int64) bool {
	if m.def == TTLOff {
		return false
	}
	eff := m.def
	if it.ttl != TTLOff {
		eff = it.ttl
	}
	return eff != TTLNever && now >= it.written+int64(eff)*int64(time.Second)
}

func (m *refModel) live(id string, now int64) (refItem, bool) {
	it, ok := m.items[id]
	if !ok || m.expired(it, now) {
		return refItem{}, false
	}
	return it, true
}

// setDefault applies a change of the container default: items expired
// under the old one are gone for good.
func (m *refModel) setDefault(def TTL, now int64) {
	for id, it := range m.items {
		if m.expired(it, now) {
			delete(m.items, id)
		}
	}
	m.def = def
}

func (m *refModel) liveCount(now int64) int64 {
	n := int64(0)
	for id := range m.items {
		if _, ok := m.live(id, now); ok {
			n++
		}
	}
	return n
}

// TestModel runs random operation sequences against the store and the
// reference model, comparing every result, and checks the store's
// invariants after every operation. Replay a failure with -lethe.seed.
func TestModel(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -lethe.seed=%d)", seed, seed)
	rounds, steps := 40, 1000
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		runModel(t, rng, steps, fmt.Sprintf("seed %d round %d", seed, round))
		if t.Failed() {
			return
		}
	}
}

func runModel(t *testing.T, rng *rand.Rand, steps int, name string) {
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := Open(&Options{Clock: clock, Reaper: ReaperOptions{Disabled: true, BatchSize: 1 + rng.IntN(8)}})
	require.NoError(t, err)
	defer s.Close()
	defs := []TTL{TTLOff, TTLNever, 1, 5, 10, 30}
	m := &refModel{def: defs[rng.IntN(len(defs))], items: map[string]refItem{}}
	c, err := s.CreateContainer(context.Background(), ContainerProperties{ID: "m", DefaultTimeToLive: m.def})
	require.NoError(t, err)
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	ttls := []string{"", `,"ttl":null`, `,"ttl":-1`, `,"ttl":1`, `,"ttl":3`, `,"ttl":7`, `,"ttl":20`, `,"ttl":0`, `,"ttl":-5`, `,"ttl":"3"`}
	var stale string

	for step := range steps {
		now := clock.Now().UnixNano()
		id := ids[rng.IntN(len(ids))]
		where := fmt.Sprintf("%s step %d", name, step)
		var o *ItemOptions
		switch rng.IntN(4) {
		case 0:
			o = &ItemOptions{IfMatchEtag: stale}
		case 1:
			if it, ok := m.items[id]; ok {
				o = &ItemOptions{IfMatchEtag: it.etag}
			}
		}
		ifMatch := func(it refItem) bool { return o == nil || o.IfMatchEtag == "" || o.IfMatchEtag == it.etag }
		ttlText := ttls[rng.IntN(len(ttls))]
		doc := fmt.Sprintf(`{"id":%q,"step":%d%s}`, id, step, ttlText)
		var itemTTL TTL
		validTTL := true
		switch ttlText {
		case `,"ttl":-1`:
			itemTTL = TTLNever
		case `,"ttl":1`:
			itemTTL = 1
		case `,"ttl":3`:
			itemTTL = 3
		case `,"ttl":7`:
			itemTTL = 7
		case `,"ttl":20`:
			itemTTL = 20
		case `,"ttl":0`, `,"ttl":-5`, `,"ttl":"3"`:
			validTTL = false
		}
		stored := func(r ItemResponse) {
			m.items[id] = refItem{ttl: itemTTL, written: now, value: string(r.Value), etag: r.ETag}
		}

		switch op := rng.IntN(10); op {
		case 0, 1: // read
			r, err := c.ReadItem(context.Background(), id, nil)
			if it, ok := m.live(id, now); ok {
				require.NoError(t, err, where)
				require.Equal(t, it.value, string(r.Value), where)
			} else {
				require.ErrorIs(t, err, ErrNotFound, where)
			}
		case 2: // create
			r, err := c.CreateItem(context.Background(), []byte(doc), o)
			_, live := m.live(id, now)
			switch {
			case !validTTL:
				require.ErrorIs(t, err, ErrBadRequest, where)
			case live:
				require.ErrorIs(t, err, ErrConflict, where)
			default:
				require.NoError(t, err, where)
				require.Equal(t, 201, r.StatusCode, where)
				stored(r)
			}
		case 3: // replace
			r, err := c.ReplaceItem(context.Background(), id, []byte(doc), o)
			it, live := m.live(id, now)
			switch {
			case !validTTL:
				require.ErrorIs(t, err, ErrBadRequest, where)
			case !live:
				require.ErrorIs(t, err, ErrNotFound, where)
			case !ifMatch(it):
				require.ErrorIs(t, err, ErrPreconditionFailed, where)
			default:
				require.NoError(t, err, where)
				require.Equal(t, 200, r.StatusCode, where)
				stored(r)
			}
		case 4: // upsert
			r, err := c.UpsertItem(context.Background(), []byte(doc), o)
			it, live := m.live(id, now)
			switch {
			case !validTTL:
				require.ErrorIs(t, err, ErrBadRequest, where)
			case live && !ifMatch(it):
				require.ErrorIs(t, err, ErrPreconditionFailed, where)
			case live:
				require.NoError(t, err, where)
				require.Equal(t, 200, r.StatusCode, where)
				stored(r)
			default:
				require.NoError(t, err, where)
				require.Equal(t, 201, r.StatusCode, where)
				stored(r)
			}
		case 5: // delete
			r, err := c.DeleteItem(context.Background(), id, o)
			it, live := m.live(id, now)
			switch {
			case !live:
				require.ErrorIs(t, err, ErrNotFound, where)
			case !ifMatch(it):
				require.ErrorIs(t, err, ErrPreconditionFailed, where)
			default:
				require.NoError(t, err, where)
				require.Equal(t, 204, r.StatusCode, where)
				stale = it.etag
				delete(m.items, id)
			}
		case 6, 7: // time passes, sometimes to the nanosecond
			d := time.Duration(rng.IntN(8)) * time.Second
			if rng.IntN(3) == 0 {
				d += time.Duration(rng.IntN(3)-1) + time.Duration(rng.IntN(1000))*time.Millisecond
			}
			clock.Advance(max(d, 0))
		case 8: // the container default changes
			def := defs[rng.IntN(len(defs))]
			require.NoError(t, c.Replace(context.Background(), ContainerProperties{ID: "m", DefaultTimeToLive: def}), where)
			m.setDefault(def, now)
		case 9: // a purge, bounded or full
			if rng.IntN(2) == 0 {
				c.reap(now, s.opts.Reaper, false, nil)
			} else {
				_, err := c.Purge(context.Background())
				require.NoError(t, err, where)
			}
		}
		if it, ok := m.items[id]; ok && rng.IntN(5) == 0 {
			stale = it.etag
		}
		require.Equal(t, m.liveCount(clock.Now().UnixNano()), c.Stats().Items, where)
		checkInvariants(t, c, where)
	}
}

// checkInvariants verifies that a container's primary index and its expiry
// index agree: every item that can expire has exactly one entry, in the
// right tree at the right place, no entry points at a stale record, the
// counts match, and the expiry index's view of what is expired now (the
// rule's cutoffs, the running counts) agrees with expiryRule.expiresAt for
// every item.
func checkInvariants(t testing.TB, c *Container, where string) {
	t.Helper()
	for i := range c.shards {
		c.shards[i].mu.RLock()
	}
	c.expiry.mu.Lock()
	defer func() {
		c.expiry.mu.Unlock()
		for i := range c.shards {
			c.shards[i].mu.RUnlock()
		}
	}()
	now := c.store.clock.now()
	ci, co := cutoffs(&c.rule, now)
	var items, bytes, expired, expiredBytes int64
	oldest := int64(never)
	want := 0
	for i := range c.shards {
		n := 0
		c.shards[i].items.all(func(rec record) bool {
			n++
			id := rec.id()
			if sh, h := c.shardFor(id); sh != &c.shards[i] || sh.items.get(id, h) != rec {
				t.Fatalf("%s: item %q cannot be found in its shard", where, id)
			}
			items++
			bytes += int64(rec.jsonLen())
			isExpired := !c.rule.live(rec, now)
			if isExpired {
				expired++
				expiredBytes += int64(rec.jsonLen())
				oldest = min(oldest, c.rule.expiredAt(rec.ttl(), rec.written()))
			}
			tree, e := c.expiry.treeFor(rec)
			if tree == nil {
				if isExpired {
					t.Fatalf("%s: item %q with ttl -1 is expired", where, id)
				}
				return true
			}
			want++
			if got, ok := tree.t.Get(e); !ok || got.rec != rec {
				t.Fatalf("%s: item %q (ttl %v) missing from the expiry index", where, id, rec.ttl())
			}
			cutoff := ci
			if tree == &c.expiry.own {
				cutoff = co
			}
			if inPrefix := lessEntry(e, cutoff); inPrefix != isExpired {
				t.Fatalf("%s: item %q: expired by expiresAt %v, by the index's cutoff %v", where, id, isExpired, inPrefix)
			}
			return true
		})
		if n != c.shards[i].items.n {
			t.Fatalf("%s: shard %d counts %d items, holds %d", where, i, c.shards[i].items.n, n)
		}
	}
	check := func(name string, tree *expiryTree) int {
		n := 0
		var front, frontBytes int64
		tree.t.Ascend(func(e expiryEntry) bool {
			n++
			if sh, h := c.shardFor(e.rec.id()); sh.items.get(e.rec.id(), h) != e.rec {
				t.Fatalf("%s: %s tree holds a stale or purged record of %q", where, name, e.rec.id())
			}
			if !lessEntry(tree.front, e) {
				front++
				frontBytes += int64(e.rec.jsonLen())
			}
			return true
		})
		if front != tree.n || frontBytes != tree.bytes {
			t.Fatalf("%s: %s tree counts %d entries (%d bytes) before its front, holds %d (%d bytes)", where, name, tree.n, tree.bytes, front, frontBytes)
		}
		return n
	}
	got := check("inherit", &c.expiry.inherit) + check("own", &c.expiry.own)
	if got != want || items != c.expiry.items || bytes != c.expiry.bytes {
		t.Fatalf("%s: expiry index has %d entries for %d expiring items; counts %d/%d items, %d/%d bytes",
			where, got, want, c.expiry.items, items, c.expiry.bytes, bytes)
	}
	for !c.expiry.countExpired(&c.rule, now, 3) {
	}
	if n, b := c.expiry.expired(); n != expired || b != expiredBytes {
		t.Fatalf("%s: running counts say %d expired (%d bytes), expiresAt says %d (%d bytes)", where, n, b, expired, expiredBytes)
	}
	if expired > 0 {
		if got := c.expiry.oldestExpiry(&c.rule, now); got != oldest {
			t.Fatalf("%s: oldest expiry %d, want %d", where, got, oldest)
		}
	}
}
