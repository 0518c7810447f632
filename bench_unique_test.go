package lethe_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/lethedb/lethe"
)

// BenchmarkCreateItemUnique creates items of new unique values in a
// container partitioned by /pk over 100 partitions, with a unique key
// policy on /email ("unique") and without one ("plain"), to show what
// the check costs.
func BenchmarkCreateItemUnique(b *testing.B) {
	for _, policy := range []bool{false, true} {
		name := "plain"
		props := lethe.ContainerProperties{ID: "u", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}}
		if policy {
			name = "unique"
			props.UniqueKeyPolicy = &lethe.UniqueKeyPolicy{UniqueKeys: []lethe.UniqueKey{{Paths: []string{"/email"}}}}
		}
		b.Run(name, func(b *testing.B) {
			s, _ := newStore(b)
			c := mustContainer(b, s, props)
			pks := make([]lethe.PartitionKey, 100)
			for i := range pks {
				pks[i] = lethe.NewPartitionKeyString("t" + strconv.Itoa(i))
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				id := strconv.Itoa(n)
				t := n % len(pks)
				doc := []byte(`{"id":"` + id + `","pk":"t` + strconv.Itoa(t) + `","email":"user` + id + `@example.com","n":1}`)
				if _, err := c.CreateItem(ctx, pks[t], doc, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDurableUniqueParallel measures upserts from 16 writers at once
// on a durable store under SyncAlways, over 1024 items in 100 partitions,
// in a container without ("plain") and with a unique key policy on /email
// ("unique"): the writers share each fsync (group commit), which a unique
// key check must not undo (fsyncs/op: how many writes share one).
func BenchmarkDurableUniqueParallel(b *testing.B) {
	docs := make([][]byte, 1024)
	pks := make([]lethe.PartitionKey, len(docs))
	for i := range docs {
		t := strconv.Itoa(i % 100)
		docs[i] = []byte(`{"id":"` + strconv.Itoa(i) + `","pk":"t` + t + `","email":"user` + strconv.Itoa(i) + `@example.com","n":1}`)
		pks[i] = lethe.NewPartitionKeyString("t" + t)
	}
	for _, policy := range []bool{false, true} {
		name := "plain"
		props := lethe.ContainerProperties{ID: "u", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}}
		if policy {
			name = "unique"
			props.UniqueKeyPolicy = &lethe.UniqueKeyPolicy{UniqueKeys: []lethe.UniqueKey{{Paths: []string{"/email"}}}}
		}
		b.Run(name, func(b *testing.B) {
			s, err := lethe.Open(&lethe.Options{Dir: b.TempDir(), Reaper: lethe.ReaperOptions{Disabled: true}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			c := mustContainer(b, s, props)
			o := &lethe.ItemOptions{NoContentResponseOnWrite: true}
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(8) // 16 writers on 2 cores
			syncs := s.Stats().LogSyncs
			b.RunParallel(func(p *testing.PB) {
				for p.Next() {
					i := next.Add(1) & 1023
					if _, err := c.UpsertItem(ctx, pks[i], docs[i], o); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(s.Stats().LogSyncs-syncs)/float64(b.N), "fsyncs/op")
		})
	}
}
