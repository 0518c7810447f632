package vector

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// testData returns n vectors of dims values: standard normal ones, or
// (clustered) ones scattered around 100 random centres, as embeddings of
// related texts are.
func testData(rng *rand.Rand, n, dims int, clustered bool) [][]float32 {
	centres := make([][]float32, 100)
	for i := range centres {
		centres[i] = make([]float32, dims)
		for d := range centres[i] {
			centres[i][d] = float32(rng.NormFloat64())
		}
	}
	vs := make([][]float32, n)
	for i := range vs {
		v := make([]float32, dims)
		c := centres[rng.IntN(len(centres))]
		for d := range v {
			v[d] = float32(rng.NormFloat64())
			if clustered {
				v[d] = c[d] + 0.4*v[d]
			}
		}
		vs[i] = v
	}
	return vs
}

// exactTop returns the ids of the k vectors of vs nearest q by m, exactly.
func exactTop(m Metric, vs [][]float32, q []float32, k int, accept func(uint32) bool) []uint32 {
	type sc struct {
		s  float64
		id uint32
	}
	var all []sc
	for i, v := range vs {
		if accept != nil && !accept(uint32(i)) {
			continue
		}
		s, ok := m.Score(v, q)
		if !ok {
			continue
		}
		if !m.HigherIsCloser() {
			s = -s
		}
		all = append(all, sc{s, uint32(i)})
	}
	slices.SortFunc(all, func(a, b sc) int {
		if a.s > b.s {
			return -1
		}
		if a.s < b.s {
			return 1
		}
		return int(a.id) - int(b.id)
	})
	var ids []uint32
	for _, x := range all[:min(k, len(all))] {
		ids = append(ids, x.id)
	}
	return ids
}

func recallOf(got, want []uint32) float64 {
	hit := 0
	for _, id := range want {
		if slices.Contains(got, id) {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}

func buildGraph(m Metric, vs [][]float32) *Graph {
	g := NewGraph(m, 16, 100, func(id uint32) []float32 { return vs[id] })
	for range vs {
		g.Add()
	}
	return g
}

// TestGraphRecall checks recall@10 against an exact search, on random and
// clustered data, for each metric.
func TestGraphRecall(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	n, dims, queries := 3000, 32, 50
	for _, clustered := range []bool{false, true} {
		for _, m := range []Metric{Cosine, DotProduct, Euclidean} {
			rng := rand.New(rand.NewPCG(seed, uint64(m)))
			vs := testData(rng, n, dims, clustered)
			g := buildGraph(m, vs)
			var sum float64
			for _, q := range testData(rng, queries, dims, clustered) {
				got := g.Search(q, 100, nil)
				sum += recallOf(got[:min(10, len(got))], exactTop(m, vs, q, 10, nil))
			}
			r := sum / float64(queries)
			t.Logf("clustered %v %s: recall@10 %.3f", clustered, m, r)
			if r < 0.95 {
				t.Errorf("clustered %v %s: recall@10 %.3f, want at least 0.95 (seed %d)", clustered, m, r, seed)
			}
		}
	}
}

// TestGraphLarge measures recall and time per search on LETHE_ANN_N
// vectors of LETHE_ANN_DIMS values (cosine); it is skipped when
// LETHE_ANN_N is unset.
func TestGraphLarge(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LETHE_ANN_N"))
	if n == 0 {
		t.Skip("LETHE_ANN_N not set")
	}
	dims, _ := strconv.Atoi(os.Getenv("LETHE_ANN_DIMS"))
	if dims == 0 {
		dims = 768
	}
	clustered := os.Getenv("LETHE_ANN_RANDOM") == ""
	rng := rand.New(rand.NewPCG(1, 2))
	vs := testData(rng, n, dims, clustered)
	start := time.Now()
	g := buildGraph(Cosine, vs)
	t.Logf("build %v", time.Since(start))
	qs := testData(rng, 100, dims, clustered)
	for _, ef := range []int{10, 20, 40, 100, 200, 400} {
		var sum float64
		var took time.Duration
		for _, q := range qs {
			start := time.Now()
			got := g.Search(q, ef, nil)
			took += time.Since(start)
			sum += recallOf(got[:min(10, len(got))], exactTop(Cosine, vs, q, 10, nil))
		}
		t.Logf("ef %d: recall@10 %.3f, %v a search", ef, sum/float64(len(qs)), took/time.Duration(len(qs)))
	}
}

func BenchmarkDot32(b *testing.B) {
	x, y := make([]float32, 768), make([]float32, 768)
	for i := range x {
		x[i], y[i] = float32(i), float32(768-i)
	}
	for b.Loop() {
		dot32(x, y)
	}
}

func BenchmarkDot32Go(b *testing.B) {
	x, y := make([]float32, 768), make([]float32, 768)
	for b.Loop() {
		dot32Go(x, y)
	}
}

// TestDot32 compares the assembly distances with the portable ones.
func TestDot32(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 80 {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		for _, f := range []struct {
			name     string
			got, ref float32
		}{{"dot", dot32(a, b), dot32Go(a, b)}, {"l2sq", l2sq32(a, b), l2sq32Go(a, b)}} {
			if d := f.got - f.ref; d > 1e-4 || d < -1e-4 {
				t.Errorf("%s of %d: %v, portable %v", f.name, n, f.got, f.ref)
			}
		}
	}
}
