package lethe_test

import (
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/lethedb/lethe"
)

// TestInsertCost is not a check: it runs n of W1's inserts (or, with
// LETHE_INSERTCOST_PART=parse, only the parse of their documents; =docs,
// only making the documents, to subtract) for
// counting instructions under valgrind without --toggle-collect, whose
// toggles Go's stack switches can leave on or off. Run it for two n and take
// the difference of the totals over the difference of the n:
//
//	CGO_ENABLED=0 go test -c -o lethe.test . &&
//	for n in 20000 40000; do LETHE_INSERTCOST=$n GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 \
//	  valgrind --tool=callgrind ./lethe.test -test.run TestInsertCost 2>&1 | grep Collected; done
func TestInsertCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LETHE_INSERTCOST"))
	if n <= 0 {
		t.Skip("LETHE_INSERTCOST=n not set")
	}
	switch os.Getenv("LETHE_INSERTCOST_PART") {
	case "docs": // the baseline for inserts: making the documents
		perOpItems(n)
		return
	case "parse": // 1000 documents, parsed in turn
		_, docs := perOpItems(1000)
		for i := range n {
			if err := lethe.ParseItem(docs[i%len(docs)]); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	_, docs := perOpItems(n)
	s, err := lethe.Open(&lethe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.CreateContainer(t.Context(), lethe.ContainerProperties{ID: "users", DefaultTimeToLive: lethe.TTLNever})
	if err != nil {
		t.Fatal(err)
	}
	perOpInserts(t, c, docs)
}

// insertDocs are W1's documents for BenchmarkInsertW1, made once.
var insertDocs = sync.OnceValue(func() [][]byte {
	_, docs := perOpItems(200_000)
	return docs
})

// BenchmarkInsertW1 creates W1's items (perOpItems) in a new container, as
// bench/ W1 does with one goroutine. Run it with a fixed count of at most
// 200000 (-benchtime 100000x): each item is created once.
func BenchmarkInsertW1(b *testing.B) {
	docs := insertDocs()
	s, err := lethe.Open(&lethe.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, err := s.CreateContainer(b.Context(), lethe.ContainerProperties{ID: "users", DefaultTimeToLive: lethe.TTLNever})
	if err != nil {
		b.Fatal(err)
	}
	nc := &lethe.ItemOptions{NoContentResponseOnWrite: true}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := c.CreateItem(b.Context(), lethe.NewPartitionKey(), docs[i%len(docs)], nc); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
