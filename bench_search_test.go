package lethe_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/lethedb/lethe"
)

// BenchmarkVectorTopK: SELECT TOP 10 ... ORDER BY VectorDistance over
// 100,000 items holding vectors of 128 float32 values (cosine, exact:
// every vector is read and compared), the query vector a parameter.
func BenchmarkVectorTopK(b *testing.B) {
	const n, dims = 100_000, 128
	s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, err := s.CreateContainer(context.Background(), lethe.ContainerProperties{ID: "c",
		VectorEmbeddingPolicy: &lethe.VectorEmbeddingPolicy{VectorEmbeddings: []lethe.VectorEmbedding{{Path: "/v", Dimensions: dims}}},
		IndexingPolicy:        &lethe.IndexingPolicy{ExcludedPaths: []lethe.IndexPath{{Path: "/v/*"}}, VectorIndexes: []lethe.VectorIndex{{Path: "/v", Type: lethe.VectorIndexTypeFlat}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func(dst []byte) []byte {
		dst = append(dst, '[')
		for d := range dims {
			if d > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendFloat(dst, float64(float32(rng.NormFloat64())), 'g', -1, 32)
		}
		return append(dst, ']')
	}
	for i := range n {
		doc := fmt.Appendf(nil, `{"id":"v%d","v":`, i)
		doc = append(vec(doc), '}')
		if _, err := c.CreateItem(context.Background(), lethe.NewPartitionKey(), doc, &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
			b.Fatal(err)
		}
	}
	q := make([]float64, dims)
	for d := range q {
		q[d] = rng.NormFloat64()
	}
	params := []lethe.QueryParameter{{Name: "@q", Value: q}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got := 0
		for _, err := range c.QueryItems(context.Background(), `SELECT TOP 10 c.id, VectorDistance(c.v, @q) AS score FROM c ORDER BY VectorDistance(c.v, @q)`, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: params}) {
			if err != nil {
				b.Fatal(err)
			}
			got++
		}
		if got != 10 {
			b.Fatalf("%d results", got)
		}
	}
}
