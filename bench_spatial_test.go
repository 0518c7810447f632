package lethe_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/lethedb/lethe"
)

// spatialBenchContainer makes a container of n items, each a Point at
// /loc drawn uniformly in a square of 20° by 20° around [0, 0] (about
// 0.2 points a square kilometer for a million), with a spatial index of
// the path.
func spatialBenchContainer(b *testing.B, n int) *lethe.Container {
	// A scan of a million items takes longer than the service's 5 s a
	// page, and holds more than 64 MiB.
	s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}, QueryBudget: lethe.QueryBudget{Time: 10 * time.Minute, Memory: 1 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	c, err := s.CreateContainer(context.Background(), lethe.ContainerProperties{ID: "c",
		IndexingPolicy: &lethe.IndexingPolicy{ExcludedPaths: []lethe.IndexPath{{Path: "/*"}}, IncludedPaths: []lethe.IndexPath{{Path: "/id/?"}},
			SpatialIndexes: []lethe.SpatialIndex{{Path: "/loc/?", Types: []lethe.SpatialType{lethe.SpatialPoint}}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range n {
		d := fmt.Appendf(nil, `{"id":"p%d","n":%d,"loc":{"type":"Point","coordinates":[%.7f,%.7f]}}`, i, rng.IntN(100), rng.Float64()*20-10, rng.Float64()*20-10)
		if _, err := c.CreateItem(context.Background(), lethe.NewPartitionKey(), d, &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
			b.Fatal(err)
		}
	}
	return c
}

// BenchmarkSpatialRadius: SELECT c.id, c.loc FROM c WHERE
// ST_DISTANCE(c.loc, @p) < 12600 (meters) over 1,000,000 points
// (spatialBenchContainer): about 100 results (results=), through the
// spatial index (via=index) and scanning (via=scan). The index's setup
// reports its memory per item (B/item).
func BenchmarkSpatialRadius(b *testing.B) {
	const n = 1_000_000
	c := spatialBenchContainer(b, n)
	const q = `SELECT c.id, c.loc FROM c WHERE ST_DISTANCE(c.loc, @p) < 12600`
	p := lethe.QueryParameter{Name: "@p", Value: map[string]any{"type": "Point", "coordinates": []float64{1.5, -2.25}}}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	found := textQuery(b, c, q, -1, p) // makes the index
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	perItem := float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc)) / n
	for _, index := range []bool{true, false} {
		name := "via=scan"
		if index {
			name = "via=index"
		}
		b.Run(name, func(b *testing.B) {
			was := lethe.SetUseIndexes(c, index)
			defer lethe.SetUseIndexes(c, was)
			b.ReportAllocs()
			for b.Loop() {
				textQuery(b, c, q, found, p)
			}
			b.ReportMetric(float64(found), "results")
			if index {
				b.ReportMetric(perItem, "B/item")
			}
		})
	}
	runtime.KeepAlive(c)
}
