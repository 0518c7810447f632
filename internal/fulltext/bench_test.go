package fulltext

import (
	"fmt"
	"testing"
)

// BenchmarkTerms: analyzing a short English text (eight words).
func BenchmarkTerms(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Terms("Searching the indexes of expiring documents quickly and exactly", "en-US")
	}
}

// BenchmarkIndexReplace: replacing a document of eight words in an index
// of 100,000 such documents (Remove, then Add).
func BenchmarkIndexReplace(b *testing.B) {
	x := NewIndex("en-US")
	texts := make([]string, 1000)
	for i := range texts {
		texts[i] = fmt.Sprintf("word%d searching documents term%d expiring index%d data lethe", i%97, i%13, i%501)
	}
	docs := make([]int32, 0, 100_000)
	for i := range 100_000 {
		docs = append(docs, x.Add(texts[i%len(texts)]))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		x.Remove(docs[i])
		docs[i] = x.Add(texts[i%len(texts)])
		i = (i + 1) % len(docs)
	}
}
