package lethe

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lethedb/lethe/internal/vfs"
)

// BenchmarkWalAddExpire measures the logging of one expiry a change feed
// found (wal.addExpire) on a healthy log: the frame appended to the
// buffer, which is emptied after each (no committer runs, nothing is
// written), so that the figure is the append's alone.
func BenchmarkWalAddExpire(b *testing.B) {
	w := newWAL(vfs.OS, b.TempDir(), storeID{}, 1, SyncNever, nil, nil)
	rec := buildRecordFrom([]byte(`{"a":"a value of some eighty bytes, as a small document's would be, give or take"}`), "item", TTLOff, 2, "", 1, 1, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.addExpire("c", 1, 1, rec); err != nil {
			b.Fatal(err)
		}
		w.buf = w.buf[:0]
	}
}

// BenchmarkRecoverFeed measures the Open of a durable store whose log
// holds 100k writes (of 10k items, with a ttl) to a container with a
// change feed, and 10k of their expiries: recovery replays each write to
// the feed.
func BenchmarkRecoverFeed(b *testing.B) {
	ctx := context.Background()
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	o := &Options{Dir: b.TempDir(), Sync: SyncNever, Clock: clock, Reaper: ReaperOptions{Disabled: true}}
	s, err := Open(o)
	if err != nil {
		b.Fatal(err)
	}
	c, err := s.CreateContainer(ctx, ContainerProperties{ID: "c", DefaultTimeToLive: 3600, ChangeFeedPolicy: &ChangeFeedPolicy{MaxChanges: 200_000}})
	if err != nil {
		b.Fatal(err)
	}
	pk := NewPartitionKey()
	for i := range 100_000 {
		if i == 50_000 { // 10k expiries logged halfway
			clock.Advance(2 * time.Hour)
			if _, err := c.ReadChangeFeed(ctx, nil); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := c.UpsertItem(ctx, pk, fmt.Appendf(nil, `{"id":"item-%d","v":%d}`, i%10_000, i), nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := Open(o)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close() // its new segment is empty: every Open replays the same
		b.StartTimer()
	}
}
