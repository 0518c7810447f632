package lethe

import (
	"fmt"
	"math"
	"runtime"
	"testing"
)

// TestChangeFeedReusesChunks: a full feed, forgetting its oldest change at
// every write, reuses the chunk it emptied instead of allocating a new
// one, and keeps exactly the changes its policy allows, in order.
func TestChangeFeedReusesChunks(t *testing.T) {
	const keep = 100
	f := newChangeFeed(ChangeFeedPolicy{MaxChanges: keep, MaxBytes: 1 << 40}, 1)
	recs := make([]record, 16)
	for i := range recs {
		recs[i] = buildRecordFrom([]byte(`{}`), fmt.Sprint("i", i), TTLOff, 2, "", 1, uint64(i+1), uint64(i+1))
	}
	i := 0
	add := func() { f.add(changeReplace, int64(i), recs[i%len(recs)]); i++ }
	for range 3 * feedChunk {
		add()
	}
	// Mallocs counts the whole process's allocations, a stray one of the
	// runtime's or of another test's goroutine among them: the fewest of a
	// few rounds is the feed's. A feed that allocates a chunk as it fills
	// does so in every round (3 to 6 times).
	least := uint64(math.MaxUint64)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 3 * feedChunk {
			add()
		}
		runtime.ReadMemStats(&after)
		least = min(least, after.Mallocs-before.Mallocs)
	}
	if least != 0 {
		t.Errorf("%d allocations in %d changes to a full feed, want 0", least, 3*feedChunk)
	}
	if f.retained() != keep || f.first != f.next-keep {
		t.Fatalf("the feed keeps %d changes from lsn %d to %d, want %d", f.retained(), f.first, f.next, keep)
	}
	want := f.first
	f.scan(0, func(e *feedEntry) bool {
		if e.lsn != want || e.rec != recs[(e.lsn-1)%uint64(len(recs))] {
			t.Fatalf("change %d holds lsn %d", want, e.lsn)
		}
		want++
		return true
	})
	if want != f.next {
		t.Fatalf("the scan stopped at %d, want %d", want, f.next)
	}
}
