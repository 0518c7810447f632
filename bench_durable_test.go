package lethe_test

import (
	"fmt"
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
