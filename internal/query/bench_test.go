package query

import (
	"context"
	"fmt"
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
