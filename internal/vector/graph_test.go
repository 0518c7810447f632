package vector

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe/internal/vector/vectortest"
)

// testData returns n vectors of dims values, clustered or random.
func testData(rng *rand.Rand, n, dims int, clustered bool) [][]float32 {
	if clustered {
		return vectortest.Clustered(rng, n, dims)
	}
	return vectortest.Random(rng, n, dims)
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
	n, dims, queries := 2000, 16, 30
	if raceEnabled {
		n = 200
	}
	for _, clustered := range []bool{false, true} {
		for _, m := range []Metric{Cosine, DotProduct, Euclidean} {
			rng := rand.New(rand.NewPCG(seed, uint64(m)))
			vs := testData(rng, n, dims, clustered)
			g := buildGraph(m, vs)
			var sum float64
			for _, q := range testData(rng, queries, dims, clustered) {
				got := g.Search(q, 30, nil)
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

// TestGraphConcurrent: searches run while nodes are added (with -race:
// no data race), and return only nodes added, each once.
func TestGraphConcurrent(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	vs := vectortest.Clustered(rng, 600, 8)
	qs := vectortest.Clustered(rng, 50, 8)
	g := NewGraph(Euclidean, 8, 40, func(id uint32) []float32 { return vs[id] })
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range vs {
			g.Add()
		}
	}()
	for searching := true; searching; {
		select {
		case <-done:
			searching = false
		default:
		}
		for _, q := range qs {
			n := g.Len()
			seen := map[uint32]bool{}
			for _, id := range g.Search(q, 10, func(id uint32) bool { return id%3 != 0 }) {
				// The node being added (id Len()) may be reached already.
				if id%3 == 0 || seen[id] || int(id) > g.Len() {
					t.Fatalf("search found %d (of %d nodes), refused, twice or not added", id, n)
				}
				seen[id] = true
			}
		}
	}
	q := qs[0]
	got := g.Search(q, 40, nil)
	if r := recallOf(got[:10], exactTop(Euclidean, vs, q, 10, nil)); r < 0.8 {
		t.Errorf("recall@10 %.2f after concurrent searches", r)
	}
}

// TestGraphLarge measures recall and time per search on LETHE_ANN_N
// vectors of LETHE_ANN_DIMS values (768 by default; cosine) of the kind
// LETHE_ANN_DATA names (latent, the default; clustered; random); it is
// skipped when LETHE_ANN_N is unset.
func TestGraphLarge(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LETHE_ANN_N"))
	if n == 0 {
		t.Skip("LETHE_ANN_N not set")
	}
	dims, _ := strconv.Atoi(os.Getenv("LETHE_ANN_DIMS"))
	if dims == 0 {
		dims = 768
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var all [][]float32
	const queries = 50
	switch os.Getenv("LETHE_ANN_DATA") {
	case "random":
		all = testData(rng, n+queries, dims, false)
	case "clustered":
		all = testData(rng, n+queries, dims, true)
	default:
		all = vectortest.Latent(rng, n+queries, dims)
	}
	vs, qs := all[:n], all[n:]
	var dists atomic.Int64
	start := time.Now()
	g := NewGraph(Cosine, 16, 100, func(id uint32) []float32 { dists.Add(1); return vs[id] })
	for range vs {
		g.Add()
	}
	t.Logf("build %v, %d distances a node", time.Since(start), dists.Load()/int64(n))
	want := make([][]uint32, len(qs))
	for i, q := range qs {
		want[i] = exactTop(Cosine, vs, q, 10, nil)
	}
	for _, ef := range []int{10, 20, 40, 100, 200, 400} {
		var sum float64
		var took time.Duration
		dists.Store(0)
		for i, q := range qs {
			start := time.Now()
			got := g.Search(q, ef, nil)
			took += time.Since(start)
			sum += recallOf(got[:min(10, len(got))], want[i])
		}
		t.Logf("ef %d: recall@10 %.3f, %v a search, %d distances", ef, sum/float64(len(qs)), took/time.Duration(len(qs)), dists.Load()/int64(len(qs)))
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

// TestGraphLenCountsWholeNodes: while Add links a node, Len does not count
// it yet. A caller takes the ids below Len as the graph's to find and
// scans the others itself; a node counted before its neighbours link to it
// was missed by both (a new item at the point of a deleted one vanished
// from about one vector query in six).
func TestGraphLenCountsWholeNodes(t *testing.T) {
	var vs [][]float32
	for i := range 100 {
		vs = append(vs, []float32{float32(i % 10), float32(i / 10)})
	}
	vs = append(vs, []float32{0, 0}) // 100: at the point of 0
	g := NewGraph(Euclidean, 16, 100, func(id uint32) []float32 { return vs[id] })
	checked := 0
	testHookAdding = func(g *Graph, id uint32) {
		if got := g.Len(); got != int(id) {
			t.Errorf("Len %d while node %d is being linked", got, id)
		}
		checked++
	}
	t.Cleanup(func() { testHookAdding = nil })
	for range vs {
		g.Add()
	}
	if g.Len() != len(vs) || checked != len(vs) {
		t.Fatalf("Len %d, %d nodes checked; want %d", g.Len(), checked, len(vs))
	}
	got := g.Search([]float32{0, 0}, 3, func(id uint32) bool { return id != 0 })
	if len(got) == 0 || got[0] != 100 {
		t.Errorf("search near (0,0) without node 0 found %v, want 100 first", got)
	}
}
