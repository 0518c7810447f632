package lethe_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/vector/vectortest"
)

// vectorBenchStore opens a store and makes an empty container in it with
// a vector embedding of /v (cosine, float32, dims dimensions) and no
// vector index; it returns the container and its properties.
func vectorBenchStore(b *testing.B, dims int) (*lethe.Container, lethe.ContainerProperties) {
	// A scan of 768 dimensions takes longer than the service's 5 s a page.
	s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}, QueryBudget: lethe.QueryBudget{Time: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	props := lethe.ContainerProperties{ID: "c",
		VectorEmbeddingPolicy: &lethe.VectorEmbeddingPolicy{VectorEmbeddings: []lethe.VectorEmbedding{{Path: "/v", Dimensions: uint32(dims)}}},
		IndexingPolicy:        &lethe.IndexingPolicy{ExcludedPaths: []lethe.IndexPath{{Path: "/v/*"}}},
	}
	c, err := s.CreateContainer(context.Background(), props)
	if err != nil {
		b.Fatal(err)
	}
	return c, props
}

// vectorBenchContainer makes a container of n items holding vectors of
// dims standard normal float32 values at /v (cosine), and gives it a vector
// index of the path (flat up to 505 dimensions,
// quantizedFlat above, both exact), waiting until the index is made. It
// returns the container, a query vector, and the heap the index added
// per vector.
func vectorBenchContainer(b *testing.B, n, dims int) (c *lethe.Container, q []float64, perVector float64) {
	c, props := vectorBenchStore(b, dims)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		d := fmt.Appendf(nil, `{"id":"v%d","v":[`, i)
		for j := range dims {
			if j > 0 {
				d = append(d, ',')
			}
			d = strconv.AppendFloat(d, float64(float32(rng.NormFloat64())), 'g', -1, 32)
		}
		d = append(d, ']', '}')
		if _, err := c.CreateItem(context.Background(), lethe.NewPartitionKey(), d, &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
			b.Fatal(err)
		}
	}
	q = make([]float64, dims)
	for d := range q {
		q[d] = rng.NormFloat64()
	}
	typ := lethe.VectorIndexTypeFlat
	if dims > 505 {
		typ = lethe.VectorIndexTypeQuantizedFlat
	}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	props.IndexingPolicy.VectorIndexes = []lethe.VectorIndex{{Path: "/v", Type: typ}}
	if err := c.Replace(context.Background(), props); err != nil {
		b.Fatal(err)
	}
	lethe.WaitVectorIndexes(c)
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	return c, q, float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc)) / float64(n)
}

const vectorTopK = `SELECT TOP 10 c.id, VectorDistance(c.v, @q) AS score FROM c ORDER BY VectorDistance(c.v, @q)`

func vectorQuery(b *testing.B, c *lethe.Container, q []float64) {
	got := 0
	for _, err := range c.QueryItems(context.Background(), vectorTopK, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: []lethe.QueryParameter{{Name: "@q", Value: q}}}) {
		if err != nil {
			b.Fatal(err)
		}
		got++
	}
	if got != 10 {
		b.Fatalf("%d results", got)
	}
}

// BenchmarkVectorTopK: SELECT TOP 10 ... ORDER BY VectorDistance over
// 100,000 items holding vectors of 128 and 768 float32 values (cosine,
// exact), the query vector a parameter: through the vector index (index),
// the same with no float32 pruning (unpruned: every vector compared in
// float64, as before it), and scanning the items' JSON (scan); floor reads
// the same number of float32 values once from memory, the least an exact
// search can do. The index's setup reports its memory per vector
// (B/vector).
func BenchmarkVectorTopK(b *testing.B) {
	const n = 100_000
	for _, dims := range []int{128, 768} {
		c, q, perVector := vectorBenchContainer(b, n, dims)
		b.Run(fmt.Sprintf("dims=%d/via=index", dims), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				vectorQuery(b, c, q)
			}
			b.ReportMetric(perVector, "B/vector")
		})
		// without times the query with a switch (which returns what it
		// was) turned off.
		without := func(set func(c *lethe.Container, on bool) (was bool)) func(*testing.B) {
			return func(b *testing.B) {
				defer set(c, set(c, false))
				b.ReportAllocs()
				for b.Loop() {
					vectorQuery(b, c, q)
				}
			}
		}
		b.Run(fmt.Sprintf("dims=%d/via=unpruned", dims), without(lethe.SetPruneVectorScans))
		b.Run(fmt.Sprintf("dims=%d/via=scan", dims), without(lethe.SetUseIndexes))
		b.Run(fmt.Sprintf("dims=%d/via=floor", dims), func(b *testing.B) { memoryFloor(b, n, dims) })
		runtime.KeepAlive(c)
	}
}

// annBench is the container of BenchmarkVectorANN: n items holding
// vectors of dims float32 values at /v that vary along few directions, as
// embeddings do (vectortest.Latent), and queries of the same kind.
type annBench struct {
	c       *lethe.Container
	props   lethe.ContainerProperties
	queries [][]float64
}

func newANNBench(b *testing.B, n, dims int) *annBench {
	c, props := vectorBenchStore(b, dims)
	const queries = 100
	vs := vectortest.Latent(rand.New(rand.NewPCG(1, 2)), n+queries, dims)
	for i, v := range vs[:n] {
		d := fmt.Appendf(nil, `{"id":"v%d","v":[`, i)
		for j, x := range v {
			if j > 0 {
				d = append(d, ',')
			}
			d = strconv.AppendFloat(d, float64(x), 'g', -1, 32)
		}
		d = append(d, ']', '}')
		if _, err := c.CreateItem(context.Background(), lethe.NewPartitionKey(), d, &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
			b.Fatal(err)
		}
	}
	ab := &annBench{c: c, props: props}
	for _, v := range vs[n:] {
		q := make([]float64, dims)
		for j, x := range v {
			q[j] = float64(x)
		}
		ab.queries = append(ab.queries, q)
	}
	return ab
}

// index gives the container a vector index of /v of type typ (none: "")
// and waits until it is made, linked, and returns the time that took and
// the heap it added per vector.
func (ab *annBench) index(b *testing.B, typ lethe.VectorIndexType) (took time.Duration, perVector float64) {
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	ab.props.IndexingPolicy.VectorIndexes = nil
	if typ != "" {
		ab.props.IndexingPolicy.VectorIndexes = []lethe.VectorIndex{{Path: "/v", Type: typ}}
	}
	start := time.Now()
	if err := ab.c.Replace(context.Background(), ab.props); err != nil {
		b.Fatal(err)
	}
	lethe.WaitVectorIndexes(ab.c)
	took = time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	return took, float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc)) / float64(ab.c.Stats().Items)
}

// top returns the ids of the TOP 10 by VectorDistance to q, brute force
// or not.
func (ab *annBench) top(b *testing.B, q []float64, bruteForce bool) []string {
	text := `SELECT TOP 10 VALUE c.id FROM c ORDER BY VectorDistance(c.v, @q, false)`
	if bruteForce {
		text = `SELECT TOP 10 VALUE c.id FROM c ORDER BY VectorDistance(c.v, @q, true)`
	}
	var ids []string
	for it, err := range ab.c.QueryItems(context.Background(), text, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: []lethe.QueryParameter{{Name: "@q", Value: q}}}) {
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, string(it))
	}
	if len(ids) != 10 {
		b.Fatalf("%d results", len(ids))
	}
	return ids
}

// BenchmarkVectorANN: TOP 10 by VectorDistance (cosine) over 100,000 items
// holding 768 float32 values that vary along few directions, as
// embeddings do (LETHE_BENCH_VECTORS=n,dims changes the size): through a
// diskANN index (graph: approximate, with its recall@10 against the exact
// result), through the same index with bruteForce (exact), through a
// quantizedFlat index (exact; unpruned: with no float32 pruning, every
// vector compared in float64), and reading the vectors once from memory
// (floor). The setup of each index reports how long it took to make
// (build-s) and the heap it added per vector (B/vector).
func BenchmarkVectorANN(b *testing.B) {
	n, dims := 100_000, 768
	if env := os.Getenv("LETHE_BENCH_VECTORS"); env != "" {
		if _, err := fmt.Sscanf(env, "%d,%d", &n, &dims); err != nil {
			b.Fatal(err)
		}
	}
	ab := newANNBench(b, n, dims)
	run := func(name string, bruteForce bool, build time.Duration, perVector float64) {
		recall := 0.0
		if !bruteForce {
			for _, q := range ab.queries {
				want, got := ab.top(b, q, true), ab.top(b, q, false)
				for _, id := range got {
					if slices.Contains(want, id) {
						recall++
					}
				}
			}
			recall /= float64(10 * len(ab.queries))
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ab.top(b, ab.queries[i%len(ab.queries)], bruteForce)
				i++
			}
			b.ReportMetric(build.Seconds(), "build-s")
			b.ReportMetric(perVector, "B/vector")
			if !bruteForce {
				b.ReportMetric(recall, "recall@10")
			}
		})
	}
	took, perVector := ab.index(b, lethe.VectorIndexTypeQuantizedFlat)
	run("index=quantizedFlat", false, took, perVector)
	was := lethe.SetPruneVectorScans(ab.c, false)
	run("index=quantizedFlat/via=unpruned", false, took, perVector)
	lethe.SetPruneVectorScans(ab.c, was)
	ab.index(b, "")
	took, perVector = ab.index(b, lethe.VectorIndexTypeDiskANN)
	run("index=diskANN/via=graph", false, took, perVector)
	run("index=diskANN/via=bruteForce", true, took, perVector)
	b.Run("floor", func(b *testing.B) { memoryFloor(b, n, dims) })
}

// memoryFloor reads n vectors of dims float32 values once from memory, eight
// sums at once (bound by memory, not by the latency of adds): the least an
// exact search can cost.
func memoryFloor(b *testing.B, n, dims int) {
	data := make([]float32, n*dims)
	for i := range data {
		data[i] = float32(i)
	}
	var sink float32
	for b.Loop() {
		var sum [8]float32
		for i := 0; i+8 <= len(data); i += 8 {
			x := data[i : i+8 : i+8]
			sum[0] += x[0]
			sum[1] += x[1]
			sum[2] += x[2]
			sum[3] += x[3]
			sum[4] += x[4]
			sum[5] += x[5]
			sum[6] += x[6]
			sum[7] += x[7]
		}
		for _, x := range sum {
			sink += x
		}
	}
	_ = sink
}

// BenchmarkVectorUpsert: upserting an item holding a vector of 768
// float32 values, into a container of 10,000 such items with no vector
// index, a quantizedFlat one (exact) or a diskANN one (a graph): the
// index's added cost per write. The graph is linked in the background;
// the time of a write includes its share of that work, waited for at the
// end.
func BenchmarkVectorUpsert(b *testing.B) {
	for _, typ := range []lethe.VectorIndexType{"", lethe.VectorIndexTypeQuantizedFlat, lethe.VectorIndexTypeDiskANN} {
		b.Run("index="+cmp.Or(string(typ), "none"), func(b *testing.B) {
			ab := newANNBench(b, 10_000, 768)
			ab.index(b, typ)
			docs := make([][]byte, 1000)
			for i := range docs {
				d := fmt.Appendf(nil, `{"id":"v%d","v":[`, i)
				for j, x := range ab.queries[i%len(ab.queries)] {
					if j > 0 {
						d = append(d, ',')
					}
					d = strconv.AppendFloat(d, x+float64(i), 'g', -1, 32)
				}
				docs[i] = append(d, ']', '}')
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ab.c.UpsertItem(context.Background(), lethe.NewPartitionKey(), docs[i%len(docs)], &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			lethe.WaitVectorIndexes(ab.c)
		})
	}
}
