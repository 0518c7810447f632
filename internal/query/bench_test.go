package query

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// benchDocs generates n documents of about 250 bytes.
func benchDocs(n int) []Doc {
	statuses := []string{"active", "inactive", "pending", "deleted"}
	docs := make([]Doc, n)
	for i := range docs {
		id := fmt.Sprintf("doc-%08d", i)
		js := fmt.Sprintf(`{"id":%q,"name":"User number %d","status":%q,"age":%d,"email":"user%d@example.com","tags":["a","b","c"],"address":{"city":"Springfield","zip":"%05d"},"score":%d.5,"_ts":1700000000,"_etag":"\"0000%04x-0000-0000-0000-000000000000\""}`,
			id, i, statuses[i%len(statuses)], 20+i%50, i, i%100000, i%1000, i%65536)
		docs[i] = Doc{ID: id, JSON: []byte(js)}
	}
	return docs
}

func runBench(b *testing.B, text string, params map[string]any) {
	docs := benchDocs(100_000)
	q, err := Parse(text)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		r, err := Exec(ctx, q, params, docs, now)
		if err != nil {
			b.Fatal(err)
		}
		n += r.Examined
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/doc")
}

func BenchmarkFilterScan(b *testing.B) {
	runBench(b, `SELECT * FROM c WHERE c.status = @s`, map[string]any{"@s": "pending"})
}

func BenchmarkCount(b *testing.B) {
	runBench(b, `SELECT VALUE COUNT(1) FROM c`, nil)
}

func BenchmarkFilterScanNoMatch(b *testing.B) {
	runBench(b, `SELECT * FROM c WHERE c.status = @s`, map[string]any{"@s": "nope"})
}

// BenchmarkWorstShape is issue 30's worst query shape: two JOINs over
// 40-element arrays, 1,600 rows an item, here 20 items (32,000 rows). It
// reports the cost and the allocation of each row.
func BenchmarkWorstShape(b *testing.B) {
	const items, arr = 20, 40
	xs := make([]string, arr)
	for i := range xs {
		xs[i] = fmt.Sprint(i)
	}
	a := "[" + strings.Join(xs, ",") + "]"
	docs := make([]Doc, items)
	for i := range docs {
		id := fmt.Sprintf("d%03d", i)
		docs[i] = Doc{ID: id, JSON: fmt.Appendf(nil, `{"id":%q,"pk":%q,"xs":%s,"ys":%s}`, id, id, a, a)}
	}
	q, err := Parse(`SELECT c.id, a, b FROM c JOIN a IN c.xs JOIN b IN c.ys`)
	if err != nil {
		b.Fatal(err)
	}
	ctx, now := context.Background(), time.Now()
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rows := 0
	for b.Loop() {
		r, err := Exec(ctx, q, nil, docs, now)
		if err != nil || len(r.Items) != items*arr*arr {
			b.Fatal(err, len(r.Items))
		}
		rows += len(r.Items)
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(rows), "B/row")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(rows), "allocs/row")
}
