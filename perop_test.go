package lethe_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/lethedb/lethe"
)

// TestPerOpCost is not a check: it runs bench/ W1's inserts and W2's reads
// (ReadItemAppend into a reused buffer) in the functions perOpInserts and
// perOpReads, for counting their instructions and cache misses under
// valgrind, which this machine has in place of hardware counters. It runs
// only with LETHE_PEROP=n (items; reads as many), e.g.:
//
//	CGO_ENABLED=0 go test -c -o lethe.test . &&
//	LETHE_PEROP=200000 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
//	  --toggle-collect='*perOpReads' ./lethe.test -test.run TestPerOpCost
//
// (--toggle-collect='*perOpInserts' for inserts; the collected total over n
// is the cost of one operation; Go's preemption signal aborts callgrind,
// hence asyncpreemptoff.) BENCHMARKS.md has the figures. The toggles can be
// left on or off by Go's stack switches, so a count from them is checked
// against TestInsertCost's difference of totals, which uses none.
func TestPerOpCost(t *testing.T) {
	t.Parallel()
	n, _ := strconv.Atoi(os.Getenv("LETHE_PEROP"))
	if n <= 0 {
		t.Skip("LETHE_PEROP=n not set")
	}
	c := perOpContainer(t)
	ids, docs := perOpItems(n)
	perOpInserts(t, c, docs)
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]string, n)
	for i := range order {
		order[i] = ids[rng.IntN(n)]
	}
	perOpReads(t, c, order)
}

// perOpContainer opens an in-memory store as bench/'s (the system clock,
// the reaper running), closed when tb ends, and makes W1's container.
func perOpContainer(tb testing.TB) *lethe.Container {
	tb.Helper()
	s := openStore(tb, &lethe.Options{})
	return mustContainer(tb, s, lethe.ContainerProperties{ID: "users", DefaultTimeToLive: lethe.TTLNever})
}

// perOpItems returns n items shaped as bench/'s: about 235 bytes, a third
// with "ttl": 3600, a third 7200, a third none.
func perOpItems(n int) (ids []string, docs [][]byte) {
	rng := rand.New(rand.NewPCG(3, 4))
	ids, docs = make([]string, n), make([][]byte, n)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(10_000_000+rng.IntN(90_000_000)) + "-" + strconv.Itoa(i)
		b := fmt.Appendf(nil, `{"id":%q,"name":"ada lovelace","email":"ada.lovelace%d@example.com","status":"active","age":%d,"city":"Berlin","country":"DE","score":%d.%02d,"tags":["cache","index"],"bio":"`,
			ids[i], i%1000, 18+i%70, i%10000, i%100)
		for len(b) < 222 {
			b = append(b, "storage "...)
		}
		b = append(b[:len(b)-1], '"')
		docs[i] = append(b, []string{`,"ttl":3600}`, `,"ttl":7200}`, `}`}[i%3]...)
	}
	return ids, docs
}

func perOpInserts(t *testing.T, c *lethe.Container, docs [][]byte) {
	nc := &lethe.ItemOptions{NoContentResponseOnWrite: true}
	for _, doc := range docs {
		if _, err := c.CreateItem(context.Background(), lethe.NewPartitionKey(), doc, nc); err != nil {
			t.Fatal(err)
		}
	}
}

func perOpReads(t *testing.T, c *lethe.Container, order []string) {
	var buf []byte
	for _, id := range order {
		r, err := c.ReadItemAppend(context.Background(), buf[:0], lethe.NewPartitionKey(), id, nil)
		if err != nil {
			t.Fatal(err)
		}
		buf = r.Value
	}
}

// TestInsertCost is not a check: it runs n of W1's inserts (or, with
// LETHE_INSERTCOST_PART=parse, only the parse of their documents; =docs,
// only making the documents, to subtract) for
// counting instructions under valgrind without --toggle-collect, whose
// toggles Go's stack switches can leave on or off. Run it for two n and take
// the difference of the totals over the difference of the n:
//
//	CGO_ENABLED=0 go test -c -o lethe.test . &&
//	for n in 20000 40000; do LETHE_INSERTCOST=$n GOGC=off GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 \
//	  valgrind --tool=callgrind ./lethe.test -test.run TestInsertCost 2>&1 | grep Collected; done
//
// GOGC=off leaves the garbage collector out: with it on, the two sizes
// fall on different numbers of GC cycles, and the difference swings by
// some 3,000 instructions an insert from one build to the next.
func TestInsertCost(t *testing.T) {
	t.Parallel()
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
	c := perOpContainer(t)
	perOpInserts(t, c, docs)
}

// insertDocs are W1's documents for BenchmarkInsertW1, made once.
var insertDocs = sync.OnceValue(func() [][]byte {
	_, docs := perOpItems(200_000)
	return docs
})

// BenchmarkInsertW1 creates W1's items (perOpItems) in a new container, as
// bench/ W1 does with one goroutine. Each item is created once: past the
// 200000 documents, a fresh container takes the next round (made with the
// timer stopped), so any -benchtime works; a fixed count of at most 200000
// (-benchtime 100000x) measures one container's growth, as W1 does.
func BenchmarkInsertW1(b *testing.B) {
	docs := insertDocs()
	c := perOpContainer(b)
	nc := &lethe.ItemOptions{NoContentResponseOnWrite: true}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(docs) {
			b.StopTimer()
			c, i = perOpContainer(b), 0
			b.StartTimer()
		}
		if _, err := c.CreateItem(b.Context(), lethe.NewPartitionKey(), docs[i], nc); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkReadW2 reads bench/ W2's items (perOpItems) at random from a
// container of a million, one goroutine, as bench/ W2 does: "append" with
// ReadItemAppend into one reused buffer, "fresh" with ReadItem. The keys are
// read from an array in order, so that the loop's only random accesses are
// the store's and the key's text. Run it as
//
//	go test -run '^$' -bench BenchmarkReadW2 -count 10
//
// (the million items are loaded once per process).
func BenchmarkReadW2(b *testing.B) {
	const n = 1_000_000
	c := perOpContainer(b)
	ids := perOpLoad(b, c, n)
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]string, 1<<21)
	for i := range order {
		order[i] = ids[rng.IntN(n)]
	}
	pk := lethe.NewPartitionKey()
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		i := 0
		for b.Loop() {
			r, err := c.ReadItemAppend(b.Context(), buf[:0], pk, order[i&(len(order)-1)], nil)
			if err != nil {
				b.Fatal(err)
			}
			buf = r.Value
			i++
		}
	})
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := c.ReadItem(b.Context(), pk, order[i&(len(order)-1)], nil); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// perOpLoad creates n of W1's items (perOpItems) in c and returns their ids.
func perOpLoad(tb testing.TB, c *lethe.Container, n int) []string {
	ids, docs := perOpItems(n)
	nc := &lethe.ItemOptions{NoContentResponseOnWrite: true}
	for _, doc := range docs {
		if _, err := c.CreateItem(context.Background(), lethe.NewPartitionKey(), doc, nc); err != nil {
			tb.Fatal(err)
		}
	}
	return ids
}
