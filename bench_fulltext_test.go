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

// textVocabulary returns n made-up words of four to nine letters, the
// more frequent first (textBenchDoc draws them by Zipf's law).
func textVocabulary(n int) []string {
	rng := rand.New(rand.NewPCG(26, 1))
	seen := map[string]bool{}
	var words []string
	for len(words) < n {
		b := make([]byte, 4+rng.IntN(6))
		for i := range b {
			b[i] = "etaoinshrdlucmfwypvbgk"[rng.IntN(22)]
		}
		if w := string(b); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}

// textBenchContainer makes a container of n items, each a short text
// (eight words drawn by Zipf's law, s = 1.1, from a vocabulary of 10,000)
// at /text, with a full-text policy of the path and, when indexed, a
// full-text index of it. It returns the container, the vocabulary and a
// maker of more items.
func textBenchContainer(b *testing.B, n int, indexed bool) (*lethe.Container, []string, func() []byte) {
	// A scan of a million items takes longer than the service's 5 s a
	// page, and holds more than 64 MiB.
	s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}, QueryBudget: lethe.QueryBudget{Time: 10 * time.Minute, Memory: 1 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ip := &lethe.IndexingPolicy{ExcludedPaths: []lethe.IndexPath{{Path: "/*"}}, IncludedPaths: []lethe.IndexPath{{Path: "/id/?"}}}
	if indexed {
		ip.FullTextIndexes = []lethe.FullTextIndex{{Path: "/text"}}
	}
	c, err := s.CreateContainer(context.Background(), lethe.ContainerProperties{ID: "c",
		FullTextPolicy: &lethe.FullTextPolicy{DefaultLanguage: "en-US", FullTextPaths: []lethe.FullTextPath{{Path: "/text"}}},
		IndexingPolicy: ip,
	})
	if err != nil {
		b.Fatal(err)
	}
	words := textVocabulary(10_000)
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 1, uint64(len(words)-1))
	next := 0
	doc := func() []byte {
		d := fmt.Appendf(nil, `{"id":"t%d","n":%d,"text":"`, next, rng.IntN(100))
		next++
		for i := range 8 {
			if i > 0 {
				d = append(d, ' ')
			}
			d = append(d, words[zipf.Uint64()]...)
		}
		return append(d, '"', '}')
	}
	for range n {
		if _, err := c.CreateItem(context.Background(), lethe.NewPartitionKey(), doc(), &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
			b.Fatal(err)
		}
	}
	return c, words, doc
}

// textQuery runs q with params and fails b unless it gives want results
// (-1: any number); it returns how many it gave.
func textQuery(b *testing.B, c *lethe.Container, q string, want int, params ...lethe.QueryParameter) int {
	got := 0
	for _, err := range c.QueryItems(context.Background(), q, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: params, PageSizeHint: 1000}) {
		if err != nil {
			b.Fatal(err)
		}
		got++
	}
	if want >= 0 && got != want {
		b.Fatalf("%s: %d results, want %d", q, got, want)
	}
	return got
}

const textTopK = `SELECT TOP 10 c.id, c.text FROM c ORDER BY RANK FullTextScore(c.text, @a, @b)`

// BenchmarkFullTextScore: SELECT TOP 10 ... ORDER BY RANK
// FullTextScore(c.text, @a, @b) over 1,000,000 items of eight words
// (textBenchContainer): through the full-text index (index) and scanning
// the items' JSON (scan), for the 10th and 100th most frequent words
// (terms=mid: in about 14% and 1.2% of the items) and for the two most
// frequent (terms=common: in about 88% and 57%). The index's setup
// reports its memory per item (B/item).
func BenchmarkFullTextScore(b *testing.B) {
	const n = 1_000_000
	c, words, _ := textBenchContainer(b, n, true)
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	textQuery(b, c, textTopK, 10, lethe.QueryParameter{Name: "@a", Value: words[9]}, lethe.QueryParameter{Name: "@b", Value: words[99]}) // makes the index
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	perItem := float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc)) / n
	for _, tc := range []struct {
		name string
		a, b string
	}{{"mid", words[9], words[99]}, {"common", words[0], words[1]}} {
		params := []lethe.QueryParameter{{Name: "@a", Value: tc.a}, {Name: "@b", Value: tc.b}}
		b.Run("terms="+tc.name+"/via=index", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				textQuery(b, c, textTopK, 10, params...)
			}
			b.ReportMetric(perItem, "B/item")
		})
		b.Run("terms="+tc.name+"/via=scan", func(b *testing.B) {
			was := lethe.SetUseIndexes(c, false)
			defer lethe.SetUseIndexes(c, was)
			b.ReportAllocs()
			for b.Loop() {
				textQuery(b, c, textTopK, 10, params...)
			}
		})
	}
	runtime.KeepAlive(c)
}

// BenchmarkFullTextContains: SELECT VALUE c.id FROM c WHERE
// FullTextContains(c.text, @w) over the same 1,000,000 items, @w the
// 1000th most frequent word (in about 0.06% of the items): through the
// full-text index (via=index), scanning (via=scan), and the substring
// search CONTAINS(LOWER(c.text), @w) an application would write without
// full-text search (via=contains-lower; a scan, no index answers it).
func BenchmarkFullTextContains(b *testing.B) {
	const n = 1_000_000
	c, words, _ := textBenchContainer(b, n, true)
	w := lethe.QueryParameter{Name: "@w", Value: words[999]}
	const ftc = `SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, @w)`
	const lower = `SELECT VALUE c.id FROM c WHERE CONTAINS(LOWER(c.text), @w)`
	found := textQuery(b, c, ftc, -1, w) // makes the index
	b.Logf("%d items hold %q", found, words[999])
	for _, tc := range []struct {
		name, q string
		index   bool
	}{{"index", ftc, true}, {"scan", ftc, false}, {"contains-lower", lower, false}} {
		b.Run("via="+tc.name, func(b *testing.B) {
			was := lethe.SetUseIndexes(c, tc.index)
			defer lethe.SetUseIndexes(c, was)
			b.ReportAllocs()
			for b.Loop() {
				textQuery(b, c, tc.q, -1, w)
			}
		})
	}
	runtime.KeepAlive(c)
}

// BenchmarkFullTextUpsert: upserting an item of eight words into a
// container of 100,000 such items with a full-text index of the text made
// (index=fulltext) and with none (index=none): the index's added cost per
// write.
func BenchmarkFullTextUpsert(b *testing.B) {
	for _, indexed := range []bool{false, true} {
		name := "index=none"
		if indexed {
			name = "index=fulltext"
		}
		b.Run(name, func(b *testing.B) {
			c, words, doc := textBenchContainer(b, 100_000, indexed)
			textQuery(b, c, textTopK, 10, lethe.QueryParameter{Name: "@a", Value: words[9]}, lethe.QueryParameter{Name: "@b", Value: words[99]})
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
