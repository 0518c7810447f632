package vector

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// boundData makes pairs of vectors of one kind: the ones that make float32
// sums err most (cancellation, overflow, underflow, mixed magnitudes).
var boundData = map[string]func(rng *rand.Rand, n int) (v, q []float32){
	"random": func(rng *rand.Rand, n int) (v, q []float32) {
		return normal(rng, n, 1), normal(rng, n, 1)
	},
	"near": func(rng *rand.Rand, n int) (v, q []float32) { // cosines near 1, distances near 0
		q = normal(rng, n, 1)
		v = make([]float32, n)
		for i := range v {
			v[i] = q[i] * (1 + float32(rng.NormFloat64())*1e-6)
		}
		return v, q
	},
	"cancel": func(rng *rand.Rand, n int) (v, q []float32) { // huge products that cancel, small ones left
		v, q = normal(rng, n, 1), normal(rng, n, 1)
		for i := 0; i+1 < n; i += 2 {
			big := float32(math.Ldexp(1, rng.IntN(40)))
			v[i], v[i+1], q[i], q[i+1] = big, big, big, -big
		}
		return v, q
	},
	"huge": func(rng *rand.Rand, n int) (v, q []float32) { // products and sums near and past float32's limit
		s := math.Ldexp(1, 40+rng.IntN(88))
		v, q = normal(rng, n, s), normal(rng, n, s)
		if rng.IntN(2) == 0 {
			v[0] = math.MaxFloat32
		}
		return v, q
	},
	"tiny": func(rng *rand.Rand, n int) (v, q []float32) { // products below float32's least subnormal
		s := math.Ldexp(1, -60-rng.IntN(90))
		v, q = normal(rng, n, s), normal(rng, n, s)
		if rng.IntN(2) == 0 {
			copy(v, q)
		}
		return v, q
	},
	"mixed": func(rng *rand.Rand, n int) (v, q []float32) { // every magnitude in one vector, and zeros
		v, q = make([]float32, n), make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(250)-125))
			q[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(250)-125))
			if rng.IntN(5) == 0 {
				v[i] = 0
			}
		}
		return v, q
	},
	"integers": func(rng *rand.Rand, n int) (v, q []float32) { // exact in float32: ties
		v, q = make([]float32, n), make([]float32, n)
		for i := range v {
			v[i], q[i] = float32(rng.IntN(5)-2), float32(rng.IntN(5)-2)
		}
		return v, q
	},
}

func normal(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return v
}

// TestBoundsHold: every score lies within the Range of its float32
// approximation, with the AVX2 kernels and the portable loops, for every
// metric and length (the kernels' blocks of 32, 16 and 8 and their tails),
// on data made to err; and the range is narrow where the data is not
// extreme (a cosine of 768 values known to ±0.0001).
func TestBoundsHold(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	type kernel struct {
		name      string
		dot, l2sq func(a, b []float32) float32
	}
	kernels := []kernel{{"go", dot32Go, l2sq32Go}}
	if Fast() {
		kernels = append(kernels, kernel{"simd", dot32, l2sq32})
	}
	for _, kind := range slices.Sorted(maps.Keys(boundData)) { // in order: the seed replays the test
		gen := boundData[kind]
		for _, m := range []Metric{Cosine, DotProduct, Euclidean} {
			refused, margin := 0, 0.5
			for range 400 {
				n := []int{1, 7, 8, 9, 31, 32, 33, 47, 100, 768}[rng.IntN(10)]
				v, q := gen(rng, n)
				want, ok := m.Score(v, q)
				for _, k := range kernels {
					b := NewBounds(m, q)
					b.dot, b.l2sq = k.dot, k.l2sq
					lo, hi, bok := b.Range(v, SumSquares(v))
					if !ok {
						if bok {
							t.Fatalf("%s %s %s n=%d: Range ok for a score that is not", kind, m, k.name, n)
						}
						continue
					}
					if !bok {
						refused++
						continue
					}
					if !(lo <= want && want <= hi) {
						t.Fatalf("%s %s %s n=%d: score %g outside [%g, %g]", kind, m, k.name, n, want, lo, hi)
					}
					if hi > lo && (lo > 0 || m != Euclidean) { // (a distance's range stops at 0)
						margin = min(margin, (want-lo)/(hi-lo), (hi-want)/(hi-lo))
					}
					if kind == "random" && n == 768 && m == Cosine && hi-lo > 2e-4 {
						t.Fatalf("cosine of 768 random values: range %g wide", hi-lo)
					}
				}
			}
			t.Logf("%-8s %-10s refused %3d of %d; nearest an end of its range: %.2g of its width", kind, m, refused, 400*len(kernels), margin)
		}
	}
}
