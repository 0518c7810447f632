package lethe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func comparePos(a, b posRec) int { return cmp.Compare(a.pos, b.pos) }

// TestSortByPos: the radix sort of candidates by position agrees with a
// comparison sort, whatever the spread of the positions (one byte, several,
// the top one), the length (below and above where it turns to a comparison
// sort) and the order it is given them in (sorted, reversed, random).
func TestSortByPos(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	for _, n := range []int{0, 1, 2, 63, 64, 65, 300, 5000} {
		for _, spread := range []uint64{1 << 8, 1 << 20, 1 << 40, 1<<64 - 1} {
			for order := range 3 {
				rs := make([]posRec, n)
				seen := map[uint64]bool{}
				spread := max(spread, 4*uint64(n)) // room for n distinct positions
				for i := range rs {
					p := rng.Uint64N(spread)
					for seen[p] {
						p = rng.Uint64N(spread)
					}
					seen[p] = true
					rs[i] = posRec{pos: p, rec: record(string(rune('a' + i%26)))}
				}
				switch order {
				case 0:
					slices.SortFunc(rs, comparePos)
				case 1:
					slices.SortFunc(rs, func(a, b posRec) int { return comparePos(b, a) })
				}
				want := slices.Clone(rs)
				slices.SortFunc(want, comparePos)
				got := sortByPos(slices.Clone(rs))
				if !slices.Equal(got, want) {
					t.Fatalf("n %d, spread %d, order %d: sortByPos differs from a comparison sort", n, spread, order)
				}
			}
		}
	}
}

// checkPathIndexes fails t unless every index of a path in c holds one
// entry per stored item (expired or not), of its current record, with the
// record's key at the path, in order.
func checkPathIndexes(t *testing.T, c *Container, where string) {
	t.Helper()
	defer c.freeze()()
	stored := map[string]record{}
	for i := range c.shards {
		c.shards[i].items.all(func(rec record) bool {
			stored[rec.posKey()] = rec
			return true
		})
	}
	for key, idx := range c.mu.indexes.secondary {
		n := 0
		var prev *indexEntry
		idx.t.Ascend(func(e indexEntry) bool {
			n++
			if rec := stored[e.rec.posKey()]; rec != e.rec {
				t.Fatalf("%s: index %q holds a record of position %d that is not the item's stored one", where, key, e.rec.pos())
			}
			if e.key.Compare(keyAt(e.rec, idx.path)) != 0 {
				t.Fatalf("%s: index %q: an entry's key is not its record's", where, key)
			}
			if prev != nil && compareIndexEntries(*prev, e) >= 0 {
				t.Fatalf("%s: index %q: entries out of order", where, key)
			}
			prev = &e
			return true
		})
		if n != len(stored) {
			t.Fatalf("%s: index %q has %d entries for %d items", where, key, n, len(stored))
		}
	}
}

// TestIndexEntriesFollowItems: random creates, replaces (which keep an
// item's position), deletes and creates again (which give a new one),
// changes of the indexed value and expiries, some made while the index is
// being built (replayed into it after): each path index keeps one entry
// per item, of its current version, and an equality through it returns
// what a scan returns, in order.
func TestIndexEntriesFollowItems(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := Open(&Options{Clock: clock, Reaper: ReaperOptions{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	c, err := s.CreateContainer(ctx, ContainerProperties{ID: "c", DefaultTimeToLive: TTLNever})
	if err != nil {
		t.Fatal(err)
	}
	write := func() {
		id := fmt.Sprint("i", rng.IntN(300))
		var err error
		switch rng.IntN(6) {
		case 0:
			_, err = c.DeleteItem(ctx, NewPartitionKey(), id, nil)
			if errors.Is(err, ErrNotFound) {
				err = nil
			}
		case 1:
			_, err = c.UpsertItem(ctx, NewPartitionKey(), fmt.Appendf(nil, `{"id":%q,"g":%d,"ttl":%d}`, id, rng.IntN(3), 1+rng.IntN(3)), nil)
		default:
			_, err = c.UpsertItem(ctx, NewPartitionKey(), fmt.Appendf(nil, `{"id":%q,"g":%d}`, id, rng.IntN(3)), nil)
		}
		if err != nil {
			t.Error(err)
		}
	}
	ids := func(q string) []string {
		var out []string
		for item, err := range c.QueryItems(ctx, q, NewPartitionKey(), &QueryOptions{PageSizeHint: 7}) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(item))
		}
		return out
	}
	for range 400 {
		write()
	}
	hooksOf(c).afterBuildShard = func(int) {
		done := make(chan struct{})
		go func() { // a write may take the locks the build let go of
			defer close(done)
			for range 3 {
				write()
			}
		}()
		<-done
	}
	defer func() { hooksOf(c).afterBuildShard = nil }()
	ids(`SELECT * FROM c WHERE c.g = 1`) // the first filter scans,
	ids(`SELECT * FROM c WHERE c.g = 1`) // the second makes the index, writes going on
	hooksOf(c).afterBuildShard = nil
	if len(c.mu.indexes.secondary) != 1 {
		t.Fatalf("%d indexes made, want 1", len(c.mu.indexes.secondary))
	}
	for step := range 30 {
		checkPathIndexes(t, c, fmt.Sprint("step ", step))
		for g := range 3 {
			q := fmt.Sprintf(`SELECT * FROM c WHERE c.g = %d`, g)
			got := ids(q)
			hooksOf(c).noIndexes = true
			want := ids(q)
			hooksOf(c).noIndexes = false
			if !slices.Equal(got, want) {
				t.Fatalf("step %d (seed %d): %s through the index differs from a scan", step, seed, q)
			}
		}
		for range 1 + rng.IntN(40) {
			write()
		}
		clock.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
	}
}
