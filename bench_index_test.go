package lethe_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
)

// BenchmarkIndexedQuery compares a query answered through a secondary index
// with the same query scanning (IndexingModeNone), on 100k items: an
// equality that selects 1% of them, a range that selects 1%, and
// TOP 10 ORDER BY on a range, TOP 10 ORDER BY on a path of 100k distinct
// values, TOP 10 ORDER BY two paths (through a composite index), the
// first ten items of an equality, counts of an equality (1%) and a range
// (10%), and a projection of the equality's items. "first" is the first
// such query, which makes the index; "upsert" measures what a write pays
// for the indexes made.
func BenchmarkIndexedQuery(b *testing.B) {
	const n = 100_000
	for _, mode := range []lethe.IndexingMode{lethe.IndexingModeConsistent, lethe.IndexingModeNone} {
		s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
		if err != nil {
			b.Fatal(err)
		}
		policy := &lethe.IndexingPolicy{IndexingMode: mode}
		if mode != lethe.IndexingModeNone {
			policy.CompositeIndexes = [][]lethe.CompositeIndex{{{Path: "/bucket", Order: lethe.CompositeIndexDescending}, {Path: "/name"}}}
		}
		c, err := s.CreateContainer(context.Background(), lethe.ContainerProperties{ID: "c", IndexingPolicy: policy})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			doc := fmt.Appendf(nil, `{"id":"u%d","bucket":%d,"status":"s%d","name":"user %d with some text"}`, i, i%100, i%100, i)
			if _, err := c.CreateItem(context.Background(), lethe.NewPartitionKey(), doc, &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
				b.Fatal(err)
			}
		}
		for _, q := range []struct{ name, text string }{
			{"equality-1%", `SELECT * FROM c WHERE c.status = "s42"`},
			{"range-1%", `SELECT * FROM c WHERE c.bucket > 41 AND c.bucket < 43`},
			{"top10-range", `SELECT TOP 10 c.id FROM c WHERE c.bucket >= 98 ORDER BY c.bucket`},
			{"top10-orderby", `SELECT TOP 10 c.id, c.name FROM c ORDER BY c.name DESC`},
			{"top10-composite", `SELECT TOP 10 c.id, c.name FROM c ORDER BY c.bucket DESC, c.name`},
			{"top10-equality", `SELECT TOP 10 * FROM c WHERE c.status = "s42"`},
			{"count-equality", `SELECT VALUE COUNT(1) FROM c WHERE c.status = "s42"`},
			{"count-range", `SELECT VALUE COUNT(1) FROM c WHERE c.bucket >= 10 AND c.bucket < 20`},
			{"projection-equality", `SELECT c.id, c.name FROM c WHERE c.status = "s42"`},
		} {
			run := func(b *testing.B) {
				got := 0
				for _, err := range c.QueryItems(context.Background(), q.text, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 1000}) {
					if err != nil {
						b.Fatal(err)
					}
					got++
				}
				if got == 0 {
					b.Fatal("no results")
				}
			}
			// The first two queries (a filter's first scans, its second
			// makes the index): timed on their own, logged.
			start := time.Now()
			run(b)
			run(b)
			b.Logf("%s/%s: the first two queries took %v", q.name, mode, time.Since(start))
			b.Run(q.name+"/"+string(mode), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					run(b)
				}
			})
		}
		// The first page (100 results) of an ORDER BY with no TOP: streamed
		// through the index, sorted in full without one.
		b.Run("orderby-first-page/"+string(mode), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p := c.NewQueryItemsPager(`SELECT c.id, c.name FROM c ORDER BY c.name`, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 100})
				page, err := p.NextPage(context.Background())
				if err != nil || len(page.Items) != 100 || page.ContinuationToken == "" {
					b.Fatal(err, len(page.Items))
				}
			}
		})
		b.Run("upsert/"+string(mode), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				doc := fmt.Appendf(nil, `{"id":"u%d","bucket":%d,"status":"s%d","name":"user %d with some text"}`, i%n, i%100, (i+1)%100, i)
				if _, err := c.UpsertItem(context.Background(), lethe.NewPartitionKey(), doc, &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		s.Close()
	}
}

// BenchmarkIndexMemory reports what one index costs in heap bytes per item,
// for a path of numbers (bucket) and one of strings (status), 100 values
// each over 200k items, and the position index: the heap after a GC with
// the index made, less before it. The second query filtering on a path makes its index (the
// first scans); a third, with index metrics, shows the index was used. By
// hand: an entry is 48 bytes (a 32-byte query.IndexKey, a 16-byte record,
// whose string the key's shares), and a build inserts them into a B-tree
// of degree 32 last first (fill), so that each node is the upper half of
// a split, 31 entries in an array of 32 (1,536 bytes) and a 64-byte node:
// 50 bytes an entry with the separator its parent holds, and a thirty-
// second more for the inner nodes, 51.6.
func BenchmarkIndexMemory(b *testing.B) {
	const n = 200_000
	ctx := context.Background()
	for b.Loop() {
		s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
		if err != nil {
			b.Fatal(err)
		}
		c, _ := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c"})
		for i := range n {
			doc := fmt.Appendf(nil, `{"id":"u%d","bucket":%d,"status":"s%d"}`, i, i%100, i%100)
			if _, err := c.CreateItem(ctx, lethe.NewPartitionKey(), doc, &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
				b.Fatal(err)
			}
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heap := ms.HeapAlloc
		for _, f := range []struct{ path, value string }{{"bucket", "1"}, {"status", `"s1"`}} {
			q := fmt.Sprintf(`SELECT VALUE COUNT(1) FROM c WHERE c.%s = %s`, f.path, f.value)
			for range 2 { // the first filter scans, the second makes the index
				for _, err := range c.QueryItems(ctx, q, lethe.NewPartitionKey(), nil) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			r, err := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PopulateIndexMetrics: true}).NextPage(ctx)
			if err != nil || !strings.Contains(r.IndexMetrics, `"UtilizedSingleIndexes":[{`) || string(r.Items[0]) != fmt.Sprint(n/100) {
				b.Fatalf("%s: no index used (%v): %s %s", q, err, r.IndexMetrics, r.Items)
			}
			runtime.GC()
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(int64(ms.HeapAlloc)-int64(heap))/n, "B/item/"+f.path)
			heap = ms.HeapAlloc
		}
		// The position index: made by the first query in item order
		// resumed from a token.
		o := &lethe.QueryOptions{PageSizeHint: 1}
		r, err := c.NewQueryItemsPager(`SELECT c.id FROM c`, lethe.NewPartitionKey(), o).NextPage(ctx)
		if err != nil {
			b.Fatal(err)
		}
		o.ContinuationToken = r.ContinuationToken
		if _, err := c.NewQueryItemsPager(`SELECT c.id FROM c`, lethe.NewPartitionKey(), o).NextPage(ctx); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(int64(ms.HeapAlloc)-int64(heap))/n, "B/item/positions")
		runtime.KeepAlive(c)
		s.Close()
	}
}

// BenchmarkIndexBuild measures making the index of one path over 200k
// items, as the first ORDER BY with TOP on the path does, and the slowest
// write of a writer that goes on meanwhile.
func BenchmarkIndexBuild(b *testing.B) {
	const n = 200_000
	s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, _ := s.CreateContainer(context.Background(), lethe.ContainerProperties{ID: "c"})
	for i := range n {
		doc := fmt.Appendf(nil, `{"id":"user-%d","name":"user %d","email":"user%d@example.com","age":%d,"score":%d,"city":"city%d","tags":["a","b"],"bucket":%d,"status":"s%d"}`, i*7919, i, i, i%80, i*31%10000, i%50, i%100, i%100)
		if _, err := c.CreateItem(context.Background(), lethe.NewPartitionKey(), doc, &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
			b.Fatal(err)
		}
	}
	p, err := c.Read(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var worstWrite time.Duration
	for b.Loop() {
		// A policy change drops the index; the query makes it again.
		b.StopTimer()
		p.IndexingPolicy = &lethe.IndexingPolicy{ExcludedPaths: []lethe.IndexPath{{Path: "/bucket/?"}}}
		if err := c.Replace(context.Background(), p); err != nil {
			b.Fatal(err)
		}
		p.IndexingPolicy = nil
		if err := c.Replace(context.Background(), p); err != nil {
			b.Fatal(err)
		}
		// A writer goes on meanwhile: its slowest write is what the build
		// makes writers wait.
		stop, done := make(chan struct{}), make(chan time.Duration)
		go func() {
			var worst time.Duration
			for i := 0; ; i++ {
				select {
				case <-stop:
					done <- worst
					return
				default:
				}
				start := time.Now()
				doc := fmt.Appendf(nil, `{"id":"user-%d","bucket":%d}`, i%n*7919, i%100)
				if _, err := c.UpsertItem(context.Background(), lethe.NewPartitionKey(), doc, &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
					panic(err)
				}
				worst = max(worst, time.Since(start))
			}
		}()
		b.StartTimer()
		for _, err := range c.QueryItems(context.Background(), `SELECT TOP 1 c.id FROM c ORDER BY c.bucket`, lethe.NewPartitionKey(), nil) {
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		close(stop)
		worstWrite = max(worstWrite, <-done)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/item")
	b.ReportMetric(float64(worstWrite.Microseconds()), "worst-write-µs")
}
