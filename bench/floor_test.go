package main

import (
	"sync/atomic"
	"testing"
)

// BenchmarkFloor measures what this machine allows two goroutines to gain
// over one, with nothing shared between them: run it with -cpu 1,2 beside
// the root package's BenchmarkUpsertItemParallel, and take each variant's
// ns/op at 1 over its ns/op at 2 (b.RunParallel splits the same count of
// operations over GOMAXPROCS goroutines, so perfect scaling halves ns/op):
//
//		go test -run '^$' -bench 'Floor' -cpu 1,2 -count 5
//
//	  - cpu: a loop of arithmetic on registers, touching no memory.
//	  - private: each goroutine rewrites random slots of its own table of
//	    partItems records, copying a 300-byte document into the record in
//	    place: an upsert's memory traffic (a random slot, a record's lines)
//	    without the allocator.
//	  - alloc: the same, but each rewrite allocates its record and drops the
//	    old one, as an upsert does: the heap stays the same size and the
//	    garbage collector, which is the process's, not the goroutine's, runs.
//
// Each goroutine's table, records and counters are its own (allocated by
// it, padded apart), so no cache line is written by two goroutines.
func BenchmarkFloor(b *testing.B) {
	b.Run("cpu", func(b *testing.B) {
		var sink atomic.Uint64
		b.RunParallel(func(pb *testing.PB) {
			x := uint64(88172645463325252)
			for pb.Next() {
				for range 500 {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
				}
			}
			sink.Add(x)
		})
	})
	b.Run("private", func(b *testing.B) {
		var seed atomic.Uint64
		b.RunParallel(func(pb *testing.PB) {
			t := newPartTable(seed.Add(1))
			for pb.Next() {
				rec := &t.recs[t.next()]
				copy(rec[:], partDoc)
				rec[0] = byte(t.x)
			}
		})
	})
	b.Run("alloc", func(b *testing.B) {
		var seed atomic.Uint64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			t := newPartTable(seed.Add(1))
			for pb.Next() {
				rec := make([]byte, len(partDoc))
				copy(rec, partDoc)
				rec[0] = byte(t.x)
				t.slots[t.next()] = rec
			}
		})
	})
}

// partItems is each goroutine's table size, BenchmarkUpsertItemParallel's
// item count.
const partItems = 100_000

// partDoc is a document of an upsert's size.
var partDoc = make([]byte, 300)

// partTable is one goroutine's own: a random walk over its slots, and
// records in place (private) or allocated (alloc).
type partTable struct {
	_     [64]byte
	x     uint64
	slots [][]byte
	recs  [][300]byte
	_     [64]byte
}

func newPartTable(seed uint64) *partTable {
	t := &partTable{x: seed*0x9e3779b97f4a7c15 | 1, slots: make([][]byte, partItems), recs: make([][300]byte, partItems)}
	for i := range t.slots {
		t.slots[i] = make([]byte, len(partDoc))
	}
	return t
}

// next returns a random slot.
func (t *partTable) next() int {
	t.x ^= t.x << 13
	t.x ^= t.x >> 7
	t.x ^= t.x << 17
	return int(t.x % partItems)
}
