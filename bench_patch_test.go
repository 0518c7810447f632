package lethe_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lethedb/lethe"
)

// doc1K is an item of about 1 KB of JSON, of the shape of a user profile:
// strings, numbers, a nested object and arrays.
func doc1K(id string) []byte {
	return []byte(`{"id":"` + id + `","name":"Ada Lovelace","email":"ada@example.com","plan":"pro","country":"GB",` +
		`"visits":1234,"score":98.5,"active":true,"lastSeen":1700000000,` +
		`"address":{"street":"12 St James's Square","city":"London","zip":"SW1Y 4JH","geo":{"lat":51.5074,"lon":-0.1337}},` +
		`"tags":["analytical","engine","notes","poetry","mathematics"],` +
		`"devices":[{"kind":"phone","os":"android","seen":1699990000},{"kind":"laptop","os":"linux","seen":1699999000}],` +
		`"bio":"` + strings.Repeat("Wrote the first published algorithm for a machine. ", 9) + `",` +
		`"prefs":{"theme":"dark","lang":"en-GB","tz":"Europe/London","mail":{"news":false,"digest":"weekly"}}}`)
}

// BenchmarkUpdateOneField compares changing one field of a 1 KB item with
// PatchItem against the read-modify-replace a caller would write without
// it (read, decode, change, encode, replace with If-Match).
func BenchmarkUpdateOneField(b *testing.B) {
	defer lethe.SetPatchCrossCheck(lethe.SetPatchCrossCheck(false))
	setup := func(b *testing.B) (*lethe.Container, lethe.PartitionKey) {
		s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 3600})
		if err != nil {
			b.Fatal(err)
		}
		pk := lethe.NewPartitionKey()
		if len(doc1K("u1")) < 1000 || len(doc1K("u1")) > 1100 {
			b.Fatalf("the item is %d bytes", len(doc1K("u1")))
		}
		if _, err := c.CreateItem(ctx, pk, doc1K("u1"), nil); err != nil {
			b.Fatal(err)
		}
		return c, pk
	}
	b.Run("way=patch", func(b *testing.B) {
		c, pk := setup(b)
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			var ops lethe.PatchOperations
			ops.AppendSet("/lastSeen", n)
			if _, err := c.PatchItem(ctx, pk, "u1", ops, &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("way=read-modify-replace", func(b *testing.B) {
		c, pk := setup(b)
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			r, err := c.ReadItem(ctx, pk, "u1", nil)
			if err != nil {
				b.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(r.Value, &m); err != nil {
				b.Fatal(err)
			}
			m["lastSeen"] = n
			doc, err := json.Marshal(m)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.ReplaceItem(ctx, pk, "u1", doc, &lethe.ItemOptions{IfMatchEtag: r.ETag, NoContentResponseOnWrite: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWrite100 compares 100 upserts of about 250 bytes in one
// transactional batch with the same upserts one call each, in memory and
// on a durable store under SyncAlways (one writer: every single write
// waits for its own fsync, the batch for one).
func BenchmarkWrite100(b *testing.B) {
	docs := make([][]byte, 100)
	for i := range docs {
		docs[i] = benchDoc(fmt.Sprintf("u%03d", i), "")
	}
	pk := lethe.NewPartitionKey()
	for _, store := range []string{"memory", "durable"} {
		setup := func(b *testing.B) *lethe.Container {
			opts := &lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}}
			if store == "durable" {
				opts.Dir = b.TempDir()
			}
			s, err := lethe.Open(opts)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 3600})
			if err != nil {
				b.Fatal(err)
			}
			return c
		}
		b.Run("store="+store+"/way=batch", func(b *testing.B) {
			c := setup(b)
			b.ReportAllocs()
			for b.Loop() {
				batch := c.NewTransactionalBatch(pk)
				for _, d := range docs {
					batch.UpsertItem(d, nil)
				}
				resp, err := c.ExecuteTransactionalBatch(ctx, batch, nil)
				if err != nil || !resp.Success {
					b.Fatal(err, resp.Success)
				}
			}
		})
		b.Run("store="+store+"/way=single", func(b *testing.B) {
			c := setup(b)
			b.ReportAllocs()
			o := &lethe.ItemOptions{NoContentResponseOnWrite: true}
			for b.Loop() {
				for _, d := range docs {
					if _, err := c.UpsertItem(ctx, pk, d, o); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
