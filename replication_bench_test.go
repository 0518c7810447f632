package lethe_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lethedb/lethe"
)

// BenchmarkReplication measures a replica's side of replication against a
// client's write of the same item into the same kind of container (with a
// change feed, as cosmosrest gives every container): ApplyReplicaChange of
// an upsert of one of 10,000 items, ApplyReplicaChangeResolved of the same
// (in a container without and with a unique key policy, whose values never
// collide), and ReplicaChanges reading a hub's feed a page of 100 at a time.
func BenchmarkReplication(b *testing.B) {
	const items = 10_000
	props := lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}}
	doc := func(i int) []byte {
		return fmt.Appendf(nil, `{"id":"item-%d","name":"a name of some length","n":%d,"tags":["a","b","c"],"ttl":3600}`, i%items, i)
	}
	b.Run("UpsertItem", func(b *testing.B) {
		c := mustContainer(b, openStore(b, &lethe.Options{Clock: lethe.NewManualClock(t0)}), props)
		i := 0
		for b.Loop() {
			if _, err := c.UpsertItem(ctx, noPK, doc(i), &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("ApplyReplicaChange", func(b *testing.B) {
		c := mustContainer(b, openStore(b, &lethe.Options{Clock: lethe.NewManualClock(t0)}), props)
		i := 0
		for b.Loop() {
			ch := lethe.ReplicaChange{Kind: lethe.ReplicaWrite, ID: fmt.Sprintf("item-%d", i%items), Item: doc(i),
				Written: t0.Add(time.Duration(i)), ETag: fmt.Sprintf("%016x", i+1)}
			if err := c.ApplyReplicaChange(ctx, ch); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	for _, unique := range []bool{false, true} {
		p := props
		name := "ApplyReplicaChangeResolved"
		if unique {
			p.UniqueKeyPolicy = &lethe.UniqueKeyPolicy{UniqueKeys: []lethe.UniqueKey{{Paths: []string{"/n"}}}}
			name += "/unique"
		}
		b.Run(name, func(b *testing.B) {
			c := mustContainer(b, openStore(b, &lethe.Options{Clock: lethe.NewManualClock(t0)}), p)
			i := 0
			for b.Loop() {
				ch := lethe.ReplicaChange{Kind: lethe.ReplicaWrite, ID: fmt.Sprintf("item-%d", i%items), Item: doc(i),
					Written: t0.Add(time.Duration(i)), ETag: fmt.Sprintf("%016x", i+1)}
				if i >= items {
					ch.Replaces = fmt.Sprintf("%016x", i+1-items)
				}
				if _, err := c.ApplyReplicaChangeResolved(ctx, ch, lethe.ConflictRule{}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	b.Run("MultiWriteDeleteCreate", func(b *testing.B) {
		// A store of two write regions deletes one of its items and
		// creates it again: the create finds the delete's generation.
		c := mustContainer(b, openStore(b, &lethe.Options{Clock: lethe.NewManualClock(t0), WriteRegions: 2}), props)
		for i := range items {
			if _, err := c.CreateItem(ctx, noPK, doc(i), nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := c.DeleteItem(ctx, noPK, fmt.Sprintf("item-%d", i%items), nil); err != nil {
				b.Fatal(err)
			}
			if _, err := c.CreateItem(ctx, noPK, doc(i), &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("ReplicaChanges", func(b *testing.B) {
		hub := mustContainer(b, openStore(b, &lethe.Options{Clock: lethe.NewManualClock(t0)}), props)
		for i := range 100_000 {
			if _, err := hub.UpsertItem(ctx, noPK, doc(i), nil); err != nil {
				b.Fatal(err)
			}
		}
		lsn := uint64(0)
		for b.Loop() {
			chs, last, err := hub.ReplicaChanges(lsn, 100)
			if err != nil {
				b.Fatal(err)
			}
			if lsn = last; len(chs) < 100 {
				lsn = 0
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/change")
	})
}
