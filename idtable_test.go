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
