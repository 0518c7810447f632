package lethe_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/lethedb/lethe"
)

// vectorBenchContainer makes a container of n items holding vectors of
// dims float32 values at /v (cosine), with a vector index of the path
// (flat up to 505 dimensions, quantizedFlat above, both exact in lethe)
// when indexed, and returns it with a query vector.
func vectorBenchContainer(b *testing.B, n, dims int, indexed bool) (*lethe.Container, []float64, func() []byte) {
	// A scan of 768 dimensions takes longer than the service's 5 s a page.
	s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}, QueryBudget: lethe.QueryBudget{Time: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ip := &lethe.IndexingPolicy{ExcludedPaths: []lethe.IndexPath{{Path: "/v/*"}}}
	if indexed {
		typ := lethe.VectorIndexTypeFlat
		if dims > 505 {
			typ = lethe.VectorIndexTypeQuantizedFlat
		}
		ip.VectorIndexes = []lethe.VectorIndex{{Path: "/v", Type: typ}}
	}
	c, err := s.CreateContainer(context.Background(), lethe.ContainerProperties{ID: "c",
		VectorEmbeddingPolicy: &lethe.VectorEmbeddingPolicy{VectorEmbeddings: []lethe.VectorEmbedding{{Path: "/v", Dimensions: uint32(dims)}}},
		IndexingPolicy:        ip,
	})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	next := 0
	doc := func() []byte {
		d := fmt.Appendf(nil, `{"id":"v%d","v":[`, next)
		next++
		for i := range dims {
			if i > 0 {
				d = append(d, ',')
			}
			d = strconv.AppendFloat(d, float64(float32(rng.NormFloat64())), 'g', -1, 32)
		}
		return append(d, ']', '}')
	}
	for range n {
		if _, err := c.CreateItem(context.Background(), lethe.NewPartitionKey(), doc(), &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
			b.Fatal(err)
		}
	}
	q := make([]float64, dims)
	for d := range q {
		q[d] = rng.NormFloat64()
	}
	return c, q, doc
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
// and scanning the items' JSON (scan); floor reads the same number of
// float32 values once from memory, the least an exact search can do. The
// index's setup reports its memory per vector (B/vector).
func BenchmarkVectorTopK(b *testing.B) {
	const n = 100_000
	for _, dims := range []int{128, 768} {
		c, q, _ := vectorBenchContainer(b, n, dims, true)
		var ms0, ms1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		vectorQuery(b, c, q) // makes the index
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		perVector := float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc)) / n
		b.Run(fmt.Sprintf("dims=%d/via=index", dims), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				vectorQuery(b, c, q)
			}
			b.ReportMetric(perVector, "B/vector")
		})
		b.Run(fmt.Sprintf("dims=%d/via=scan", dims), func(b *testing.B) {
			was := lethe.SetUseIndexes(false)
			defer lethe.SetUseIndexes(was)
			b.ReportAllocs()
			for b.Loop() {
				vectorQuery(b, c, q)
			}
		})
		b.Run(fmt.Sprintf("dims=%d/via=floor", dims), func(b *testing.B) {
			data := make([]float32, n*dims)
			for i := range data {
				data[i] = float32(i)
			}
			var sink float32
			for b.Loop() {
				// Eight sums at once: bound by memory, not by the latency of adds.
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
		})
		runtime.KeepAlive(c)
	}
}

// BenchmarkVectorUpsert: upserting an item holding a vector of 768
// float32 values, into a container of 10,000 such items with a vector
// index of the path made (index) and with none (none): the index's added
// cost per write.
func BenchmarkVectorUpsert(b *testing.B) {
	for _, indexed := range []bool{false, true} {
		name := "index=none"
		if indexed {
			name = "index=flat"
		}
		b.Run(name, func(b *testing.B) {
			c, q, doc := vectorBenchContainer(b, 10_000, 768, indexed)
			vectorQuery(b, c, q)
			docs := make([][]byte, 1000)
			for i := range docs {
				docs[i] = doc()
				if _, err := c.UpsertItem(context.Background(), lethe.NewPartitionKey(), docs[i], &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
					b.Fatal(err)
				}
			}
			// The timed upserts replace those items.
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := c.UpsertItem(context.Background(), lethe.NewPartitionKey(), docs[i%len(docs)], &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
