package lethe_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/lethedb/lethe"
)

// BenchmarkDurableUpsert measures single upserts of about 250 bytes on a
// durable store, under each sync policy: SyncAlways waits for an fsync per
// write (one writer), SyncNever only for the write to the operating system,
// so it shows the log's own cost (framing, the committer, the write call).
// It is the benchmark the file-system seam (internal/vfs) is held to.
func BenchmarkDurableUpsert(b *testing.B) {
	docs := make([][]byte, 256)
	for i := range docs {
		docs[i] = benchDoc(fmt.Sprintf("u%03d", i), "")
	}
	pk := lethe.NewPartitionKey()
	for _, policy := range []lethe.SyncPolicy{lethe.SyncAlways, lethe.SyncNever} {
		b.Run(policy.String(), func(b *testing.B) {
			s, err := lethe.Open(&lethe.Options{Dir: b.TempDir(), Sync: policy, Reaper: lethe.ReaperOptions{Disabled: true}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 3600})
			if err != nil {
				b.Fatal(err)
			}
			o := &lethe.ItemOptions{NoContentResponseOnWrite: true}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := c.UpsertItem(ctx, pk, docs[i&255], o); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkDurableUpsertParallel measures upserts from 16 writers at once
// under SyncAlways, on a container without and with a change feed: the
// writers share each fsync (group commit). Each write holds its item's
// shard lock until its record is synced (mutation.go), so writers to one
// shard take turns; the figure shows what that costs.
func BenchmarkDurableUpsertParallel(b *testing.B) {
	docs := make([][]byte, 1024)
	for i := range docs {
		docs[i] = benchDoc(fmt.Sprintf("u%04d", i), "")
	}
	pk := lethe.NewPartitionKey()
	for _, feed := range []bool{false, true} {
		b.Run(fmt.Sprintf("feed=%v", feed), func(b *testing.B) {
			s, err := lethe.Open(&lethe.Options{Dir: b.TempDir(), Reaper: lethe.ReaperOptions{Disabled: true}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			props := lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 3600}
			if feed {
				props.ChangeFeedPolicy = &lethe.ChangeFeedPolicy{}
			}
			c, err := s.CreateContainer(ctx, props)
			if err != nil {
				b.Fatal(err)
			}
			o := &lethe.ItemOptions{NoContentResponseOnWrite: true}
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(8) // 16 writers on 2 cores
			b.RunParallel(func(p *testing.PB) {
				for p.Next() {
					i := next.Add(1)
					if _, err := c.UpsertItem(ctx, pk, docs[i&1023], o); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
