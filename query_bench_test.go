package lethe_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lethedb/lethe"
)

// BenchmarkQuerySmall runs a scan query (COUNT over every item) on small
// containers, where what a query costs besides its items (parsing, the
// size hint, the shards' locks, the page) shows, one query at a time and
// as many at once as there are procs.
func BenchmarkQuerySmall(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			c, _ := benchContainer(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				p := c.NewQueryItemsPager("SELECT VALUE COUNT(1) FROM c", lethe.NewPartitionKey(), nil)
				if _, err := p.NextPage(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/parallel", n), func(b *testing.B) {
			c, _ := benchContainer(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p := c.NewQueryItemsPager("SELECT VALUE COUNT(1) FROM c", lethe.NewPartitionKey(), nil)
					if _, err := p.NextPage(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
