package lethe

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

func comparePos(a, b posRec) int { return cmp.Compare(a.pos, b.pos) }

// TestSortByPos: the radix sort of candidates by position agrees with a
// comparison sort, whatever the spread of the positions (one byte, several,
// the top one), the length (below and above where it turns to a comparison
// sort) and the order it is given them in (sorted, reversed, random).
func TestSortByPos(t *testing.T) {
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
