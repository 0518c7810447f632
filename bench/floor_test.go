package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lethedb/lethe"
)

// BenchmarkFloor measures what this machine allows two goroutines to gain
// over one, with nothing shared between them: run it with -cpu 1,2 beside
// the root package's BenchmarkUpsertItemParallel, and take each variant's
// ns/op at 1 over its ns/op at 2 (b.RunParallel splits the same count of
// operations over GOMAXPROCS goroutines, so perfect scaling halves ns/op):
//
//	go test -run '^$' -bench 'Floor' -cpu 1,2 -count 5
//
// The variants:
//
//   - cpu: a loop of arithmetic on registers, touching no memory.
//
//   - private: each goroutine rewrites random slots of its own table of
//     partItems records, copying a 300-byte document into the record in
//     place: an upsert's memory traffic (a random slot, a record's lines)
//     without the allocator.
//
//   - alloc: the same, but each rewrite allocates its record and drops the
//     old one, as an upsert does: the heap stays the same size and the
//     garbage collector, which is the process's, not the goroutine's, runs.
//
//   - alloc+seq: alloc, and one atomic add to a counter all goroutines
//     share, as each lethe write adds to its store's write sequence (the
//     ETag): the one cache line a write to a plain container still writes
//     that another core's write also writes.
//
//   - alloc+log: alloc, and each rewrite appended to one log that all
//     goroutines share, under one mutex, as a change feed must number its
//     changes 1, 2, 3, ... in commit order: the entry (its number, its
//     instant, its kind, the record) written at the log's tail, and the
//     oldest forgotten once the log holds feedRing entries. It is the
//     least a single ordered log costs a write: one lock and the tail's
//     cache lines, written by every goroutine in turn.
//
//   - lethe: BenchmarkUpsertItemParallel's upserts (random rewrites of
//     partItems items of about 300 bytes, each with a ttl), in the same run.
//
//   - lethe+feed: the same upserts to a container with a change feed that
//     keeps feedRing changes, full before the timing starts. The feed's
//     cost at 2 goroutines, lethe+feed minus lethe, is then to be read
//     against what a single ordered log costs, alloc+log minus alloc.
//
// Each goroutine's table, records and counters are its own (allocated by
// it, padded apart), so no cache line is written by two goroutines but the
// counter of alloc+seq. Each variant also reports the process's CPU time
// per operation (cpu-ns/op, garbage collection included): on a machine
// that other work keeps busy, wall-clock scaling says little, while what
// two goroutines add to each operation's CPU time (cache lines moving
// between cores, locks, the collector) still shows.
func BenchmarkFloor(b *testing.B) {
	b.Run("cpu", func(b *testing.B) {
		var sink atomic.Uint64
		parallelCPU(b, func(pb *testing.PB) {
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
		table := partTables()
		parallelCPU(b, func(pb *testing.PB) {
			t := table()
			for pb.Next() {
				rec := &t.recs[t.next()]
				copy(rec[:], partDoc)
				rec[0] = byte(t.x)
			}
		})
	})
	b.Run("alloc", func(b *testing.B) { floorAlloc(b, nil, nil) })
	b.Run("lethe", func(b *testing.B) { floorLethe(b, false) })
	b.Run("alloc+seq", func(b *testing.B) { floorAlloc(b, new(atomic.Uint64), nil) })
	b.Run("alloc+log", func(b *testing.B) { floorAlloc(b, nil, newFloorLog()) })
	b.Run("lethe+feed", func(b *testing.B) { floorLethe(b, true) })
}

// floorLethe runs the lethe variant, or lethe+feed with feed.
func floorLethe(b *testing.B, feed bool) {
	s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	props := lethe.ContainerProperties{ID: "floor", DefaultTimeToLive: 3600}
	if feed {
		props.ChangeFeedPolicy = &lethe.ChangeFeedPolicy{MaxChanges: feedRing}
	}
	c, err := s.CreateContainer(ctx, props)
	if err != nil {
		b.Fatal(err)
	}
	docs := make([][]byte, partItems)
	for i := range docs {
		docs[i] = fmt.Appendf(nil, `{"id":"user-%d","name":"ada lovelace","email":"ada%d@example.com","status":"active","city":"Berlin","tags":["cache","index"],"bio":"%s","ttl":600}`,
			i, i, strings.Repeat("storage ", 22))
	}
	for i := range max(partItems, feedRing) { // the feed full, as in a store that has run a while
		if _, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), docs[i%partItems], nil); err != nil {
			b.Fatal(err)
		}
	}
	var seed atomic.Uint64
	nc := &lethe.ItemOptions{NoContentResponseOnWrite: true}
	runtime.GC()
	parallelCPU(b, func(pb *testing.PB) {
		t := &partTable{x: seed.Add(1)*0x9e3779b97f4a7c15 | 1}
		for pb.Next() {
			if _, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), docs[t.next()], nc); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// feedRing is the changes lethe+feed's feed and alloc+log's log keep.
const feedRing = 100_000

// floorLogEntry is alloc+log's change: what lethe's feed keeps of one.
type floorLogEntry struct {
	lsn, prev uint64
	at        int64
	kind      uint8
	rec       []byte
}

// floorLog is alloc+log's shared log: a ring of feedRing entries.
type floorLog struct {
	mu      sync.Mutex
	entries []floorLogEntry
	next    uint64 // the next change's number
}

func newFloorLog() *floorLog {
	return &floorLog{entries: make([]floorLogEntry, feedRing), next: 1}
}

// add numbers a change of rec at the instant at and writes it at the
// tail, over the oldest.
func (l *floorLog) add(at int64, rec []byte) {
	l.mu.Lock()
	lsn := l.next
	l.next++
	l.entries[lsn%feedRing] = floorLogEntry{lsn: lsn, prev: lsn - 1, at: at, kind: 2, rec: rec}
	l.mu.Unlock()
}

// floorAlloc runs the alloc variant; alloc+seq when seq, which every
// goroutine adds to, is not nil; alloc+log when log, which every goroutine
// appends to, is not nil.
func floorAlloc(b *testing.B, seq *atomic.Uint64, log *floorLog) {
	table := partTables()
	parallelCPU(b, func(pb *testing.PB) {
		t := table()
		for pb.Next() {
			rec := make([]byte, len(partDoc))
			copy(rec, partDoc)
			rec[0] = byte(t.x)
			if seq != nil {
				rec[0] = byte(seq.Add(1))
			}
			t.slots[t.next()] = rec
			if log != nil {
				log.add(int64(t.x), rec)
			}
		}
	})
}

// parallelCPU is b.RunParallel(body) that also reports the process's CPU
// time per operation.
func parallelCPU(b *testing.B, body func(*testing.PB)) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	b.RunParallel(body)
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
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

// partTables makes a table for each goroutine RunParallel will start (one
// a P), before the timing starts, and returns what hands them out.
func partTables() func() *partTable {
	ts := make([]*partTable, runtime.GOMAXPROCS(0))
	for i := range ts {
		ts[i] = newPartTable(uint64(i + 1))
	}
	runtime.GC()
	var next atomic.Int64
	return func() *partTable { return ts[next.Add(1)-1] }
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
