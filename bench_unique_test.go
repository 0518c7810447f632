package lethe_test

import (
	"strconv"
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
