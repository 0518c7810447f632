package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/tidwall/buntdb"
)

// W7 per result, lethe against BuntDB, in one process: the stores loaded
// with the same items (LETHE_W7N of them, 200,000 by default), their
// indexes made, then one query at a time. BenchmarkW7PerResult times each
// query and reports ns/result; TestW7Cost runs LETHE_W7COST queries of one
// kind and nothing else, for counting instructions under valgrind: the
// queries of each kind come between two calls of w7Mark, at which
// callgrind dumps its counts, so the load is apart.
//
//	go test -run '^$' -bench W7PerResult -count 10 .
//	CGO_ENABLED=0 go test -c -o w7.test . && GODEBUG=asyncpreemptoff=1 \
//	  LETHE_W7COST=lethe-eq:10,buntdb-eq:10,lethe-range:10,buntdb-range:10,lethe-count:10 \
//	  valgrind --tool=callgrind --dump-before='*w7Mark' ./w7.test -test.run TestW7Cost
//
// Each callgrind.out.PID.N then holds one kind's queries (N = 2 the
// first), and whatever collections they happen to trigger: with a large
// heap, few; B/op in the benchmark tells the rest.

// w7Fixture is both stores loaded with the same items, and the queries.
type w7Fixture struct {
	ls            *letheStore
	bs            *buntStore
	age, score    int // the results of the equality and of the range
	eqText, rgTxt string
}

var (
	w7Once sync.Once
	w7Fix  *w7Fixture
)

// w7Items is the fixture's item count: LETHE_W7N, or 200,000.
func w7Items() int {
	if n, err := strconv.Atoi(os.Getenv("LETHE_W7N")); err == nil && n > 0 {
		return n
	}
	return 200_000
}

// loadW7 loads both stores once, makes BuntDB's JSON indexes and lethe's
// (its second filter on a path makes the index), and checks the counts.
func loadW7() *w7Fixture {
	w7Once.Do(func() {
		d := newDataset(w7Items(), 1)
		f := &w7Fixture{
			ls:     openLethe(storeOpts{noPurge: true}).(*letheStore),
			bs:     openBunt(storeOpts{}).(*buntStore),
			eqText: fmt.Sprintf(`SELECT * FROM c WHERE c.age = %d`, w7Age),
			rgTxt:  fmt.Sprintf(`SELECT * FROM c WHERE c.score >= %d AND c.score < %d`, w7ScoreLo, w7Score),
		}
		f.age, f.score, _ = d.w7Want()
		for i := range d.docs {
			f.ls.insert(d.ids[i], d.docs[i], d.ttls[i])
			f.bs.insert(d.ids[i], d.docs[i], d.ttls[i])
		}
		for _, p := range []string{"age", "score"} {
			if err := f.bs.db.CreateIndex(p, "*", buntdb.IndexJSON(p)); err != nil {
				panic(err)
			}
		}
		for range 2 {
			f.check("lethe-eq")
			f.check("lethe-range")
		}
		for _, k := range []string{"buntdb-eq", "buntdb-range", "lethe-count"} {
			f.check(k)
		}
		w7Fix = f
	})
	return w7Fix
}

// check runs the query kind once and panics if its count is wrong.
func (f *w7Fixture) check(kind string) {
	fn, want := f.query(kind)
	if got := fn(); got != want {
		panic(fmt.Sprintf("%s: %d results, want %d", kind, got, want))
	}
}

// query returns the query of a kind (lethe-eq, lethe-range, lethe-count,
// buntdb-eq, buntdb-range), which returns its count of results, and the
// count it must return.
func (f *w7Fixture) query(kind string) (func() int, int) {
	lq := func(q string) func() int {
		return func() int {
			n := 0
			for item, err := range f.ls.c.QueryItems(bg, q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 1000}) {
				if err != nil {
					panic(err)
				}
				if len(item) > 0 {
					n++
				}
			}
			return n
		}
	}
	bq := func(walk func(tx *buntdb.Tx, fn func(k, v string) bool) error) func() int {
		return func() (n int) {
			f.bs.db.View(func(tx *buntdb.Tx) error {
				return walk(tx, func(k, v string) bool {
					if len(v) > 0 {
						n++
					}
					return true
				})
			})
			return n
		}
	}
	switch kind {
	case "lethe-eq":
		return lq(f.eqText), f.age
	case "lethe-range":
		return lq(f.rgTxt), f.score
	case "lethe-count":
		count := lq(fmt.Sprintf(`SELECT VALUE COUNT(1) FROM c WHERE c.age = %d`, w7Age))
		return func() int { count(); return f.age }, f.age
	case "buntdb-eq":
		return bq(func(tx *buntdb.Tx, fn func(k, v string) bool) error {
			return tx.AscendEqual("age", fmt.Sprintf(`{"age":%d}`, w7Age), fn)
		}), f.age
	case "buntdb-range":
		return bq(func(tx *buntdb.Tx, fn func(k, v string) bool) error {
			return tx.AscendRange("score", fmt.Sprintf(`{"score":%d}`, w7ScoreLo), fmt.Sprintf(`{"score":%d}`, w7Score), fn)
		}), f.score
	}
	panic("unknown W7 query kind " + kind)
}

// BenchmarkW7PerResult times W7's equality and range on both stores (and
// lethe's count of the equality), per result (per item counted).
func BenchmarkW7PerResult(b *testing.B) {
	f := loadW7()
	for _, kind := range []string{"lethe-eq", "buntdb-eq", "lethe-range", "buntdb-range", "lethe-count"} {
		b.Run(kind, func(b *testing.B) {
			fn, want := f.query(kind)
			b.ReportAllocs()
			for b.Loop() {
				fn()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(want), "ns/result")
		})
	}
}

// TestW7Cost runs the queries LETHE_W7COST names (kind:count, comma
// separated), and nothing else, after loading the fixture, calling w7Mark
// before each kind and after the last: see the comment at the top.
func TestW7Cost(t *testing.T) {
	spec := os.Getenv("LETHE_W7COST")
	if spec == "" {
		t.Skip("set LETHE_W7COST=kind:count,... (lethe-eq, lethe-range, lethe-count, buntdb-eq, buntdb-range)")
	}
	f := loadW7()
	for _, one := range strings.Split(spec, ",") {
		kind, count, _ := strings.Cut(one, ":")
		n, err := strconv.Atoi(count)
		if err != nil || n < 0 {
			t.Fatalf("LETHE_W7COST=%q: want kind:count,...", spec)
		}
		fn, want := f.query(kind)
		w7Mark()
		for range n {
			if got := fn(); got != want {
				t.Fatalf("%s: %d results, want %d", kind, got, want)
			}
		}
		t.Logf("%s: %d queries of %d results", kind, n, want)
	}
	w7Mark()
}

// w7Mark marks the start of each kind's queries in TestW7Cost, for
// callgrind's --dump-before.
//
//go:noinline
func w7Mark() {}
