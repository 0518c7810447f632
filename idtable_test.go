package lethe

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIDTable runs random puts, gets and removes against a Go map, with
// hashes drawn from a small space so that probe chains, wrap-around and
// backward shifts are exercised hard, and a write's put into the slot its
// lookup found (putAt), at every load up to growing. Keys are (partition
// key, id) pairs in which the same id comes under several partition keys,
// with one hash for the id, so that only the partition key tells them apart.
// It runs 2,000 steps in each hash space; TestIDTableWithoutRace runs
// 20,000, which the race detector would take seconds over
// (withoutrace_internal_test.go).
func TestIDTable(t *testing.T) {
	t.Parallel()
	runIDTable(t, 2000)
}

// runIDTable runs TestIDTable's random sequence, steps steps in each hash
// space, from a new seed.
func runIDTable(t *testing.T, steps int) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, hashes := range []uint32{1, 3, 16, 1 << 30} {
		var tab idTable
		ref := map[string]record{}
		hashOf := map[string]uint32{}
		for step := range steps {
			id := fmt.Sprint(rng.IntN(300))
			pk := []string{"", "s\x01a", "s\x01b"}[rng.IntN(3)]
			key := pk + "\x00" + id
			h, ok := hashOf[id]
			if !ok {
				h = rng.Uint32() % hashes
				if hashes == 3 {
					h = h<<30 | 5 // same home, different hashes
				}
				hashOf[id] = h
			}
			where := fmt.Sprintf("hashes %d step %d id %s", hashes, step, id)
			switch rng.IntN(3) {
			case 0:
				p := parsedItem{id: id}
				rec := buildRecord([]byte(`{}`), &p, pk, int64(step), uint64(step+1), uint64(step+1))
				switch {
				case step%4 == 0: // a write's lookup, then its put into the slot found
					old, slot := tab.lookup(pk, id, h)
					require.Equal(t, ref[key], old, "the record looked up: "+where)
					tab.putAt(slot, h, rec)
				case step%2 == 0:
					tab.put(h, rec)
				default:
					require.Equal(t, ref[key], tab.exchange(h, rec), "the record replaced: "+where)
				}
				ref[key] = rec
			case 1:
				switch step % 3 {
				case 0:
					tab.remove(pk, id, h)
				case 1:
					require.Equal(t, ref[key], tab.take(pk, id, h), "the record removed: "+where)
				default:
					if old := ref[key]; old != "" {
						require.True(t, tab.holds(h, old), where)
						copied := record(strings.Clone(string(old)))
						require.False(t, tab.holds(h, copied), "equal bytes are not the record: "+where)
						require.False(t, tab.removeRecord(h, copied), "equal bytes are not the record: "+where)
					}
					require.Equal(t, ref[key] != "", tab.removeRecord(h, ref[key]), "the record removed by identity: "+where)
				}
				delete(ref, key)
			}
			require.Equal(t, ref[key], tab.get(pk, id, h), where+" pk "+pk)
			require.Equal(t, len(ref), tab.n, where)
			if step%500 == 0 {
				seen := 0
				tab.all(func(rec record) bool {
					seen++
					require.Equal(t, ref[rec.pk()+"\x00"+rec.id()], rec, where)
					return true
				})
				require.Equal(t, len(ref), seen, where)
				if len(ref) > 1 {
					seen = 0
					tab.all(func(record) bool { seen++; return false })
					require.Equal(t, 1, seen, where+": the walk stops when told")
				}
				for _, rec := range ref {
					require.Equal(t, rec, tab.get(rec.pk(), rec.id(), hashOf[rec.id()]), where)
				}
			}
		}
	}
}

// TestIDTableRemoveAcrossTheEnd removes records from probe chains that
// wrap from the table's last slot to its first, where backward-shift
// deletion must keep a record that sits at or after its home across the
// wrap and move one whose home lies before the hole. Each case places
// records by home slot in an 8-slot table (home(h) is h>>29 there), removes
// one and finds every other: the random sequence of TestIDTable reaches
// these layouts too rarely to catch a wrong wrap test.
func TestIDTableRemoveAcrossTheEnd(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		homes  []int // the home slot of each record, inserted in order
		remove int   // the record removed (an index into homes)
	}{
		{"the record after the wrap is at its home and stays", []int{7, 0}, 0},
		{"the record after the wrap came from before the hole and stays", []int{6, 7, 7}, 0},
		{"the record after the wrap moves back across the end", []int{7, 7, 0}, 0},
		{"a record moves back to the last slot, the next to the first", []int{7, 7, 7, 0}, 0},
		{"the hole is after the wrap", []int{7, 7, 7, 0}, 1},
		{"the hole is after the wrap, a wrapped record moves into it", []int{7, 7, 7}, 1},
		{"no wrap: the next record stays at its home", []int{2, 3}, 0},
		{"no wrap: the next record moves back", []int{2, 2, 3}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tab idTable
			tab.reserve(1) // minTableSize slots
			require.Len(t, tab.slots, 8)
			recs := make([]record, len(tc.homes))
			hashes := make([]uint32, len(tc.homes))
			for i, home := range tc.homes {
				p := parsedItem{id: fmt.Sprint("id", i)}
				recs[i] = buildRecord([]byte(`{}`), &p, "", 1, uint64(i+1), uint64(i+1))
				hashes[i] = uint32(home)<<29 | uint32(i+1)
				require.Equal(t, home, tab.home(hashes[i]))
				tab.put(hashes[i], recs[i])
			}
			require.Len(t, tab.slots, 8, "the table must not have grown")
			gone := recs[tc.remove]
			tab.remove(gone.pk(), gone.id(), hashes[tc.remove])
			for i, rec := range recs {
				want := rec
				if i == tc.remove {
					want = ""
				}
				require.Equal(t, want, tab.get(rec.pk(), rec.id(), hashes[i]), "record %d (home %d)", i, tc.homes[i])
			}
			require.Equal(t, len(recs)-1, tab.n)
		})
	}
}
