package lethe_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lethedb/lethe"
)

// BenchmarkRecoverFeedSnapshot measures the Open of a durable store whose
// snapshot holds a container with a change feed of 100k changes (of 10k
// items, so 90k of them replaces): recovery loads every change from the
// snapshot's feed frame, and its log is empty. It reports the snapshot's
// size too.
func BenchmarkRecoverFeedSnapshot(b *testing.B) {
	o := &lethe.Options{Dir: b.TempDir(), Sync: lethe.SyncNever, Reaper: lethe.ReaperOptions{Disabled: true}}
	s, err := lethe.Open(o)
	if err != nil {
		b.Fatal(err)
	}
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 100_000}})
	if err != nil {
		b.Fatal(err)
	}
	pk := lethe.NewPartitionKey()
	for i := range 100_000 {
		if _, err := c.UpsertItem(ctx, pk, fmt.Appendf(nil, `{"id":"item-%d","v":%d}`, i%10_000, i), nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Checkpoint(ctx); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	snaps, err := filepath.Glob(filepath.Join(o.Dir, "snap-*.db"))
	if err != nil || len(snaps) != 1 {
		b.Fatal(snaps, err)
	}
	fi, err := os.Stat(snaps[0])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := lethe.Open(o)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close() // its new segment is empty: every Open loads the same snapshot
		b.StartTimer()
	}
	b.ReportMetric(float64(fi.Size()), "snapshot-bytes")
}
