package lethe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe"
)

// benchDoc is an item of about 250 bytes of JSON. Its "tenant" is one of
// 100, from the id's last two characters.
func benchDoc(id string, ttl string) []byte {
	return []byte(`{"id":"` + id + `","name":"user ` + id + `","email":"` + id + `@example.com","tenant":"` + benchTenant(id) + `",` +
		`"plan":"pro","country":"PL","visits":1234,"score":98.5,"tags":["a","b","c"],"address":{"city":"Kraków","zip":"30-001"}` +
		ttl + `,"pad":"` + strings.Repeat("x", 40) + `"}`)
}

// benchTenant is the tenant of the bench item id.
func benchTenant(id string) string {
	if len(id) < 2 {
		return "t-" + id
	}
	return "t-" + id[len(id)-2:]
}

// benchLayout is how a bench container is partitioned: by nothing, by the
// id (every item its own partition), or by one of 100 tenants.
type benchLayout struct {
	name string // the suffix of the benchmark's name; "" for no partition key
	path string // the partition key path
}

var benchLayouts = []benchLayout{{"", ""}, {"/pk-id", "/id"}, {"/pk-tenant", "/tenant"}}

// benchTenantKeys holds the key of each tenant, built once, as a program
// that serves a few tenants holds them (a key per item would put a million
// small strings in memory, and a cache miss of the benchmark's own in every
// read). Benchmarks call key from one goroutine.
var benchTenantKeys = map[string]lethe.PartitionKey{}

// key returns the partition key value of the bench item id.
func (l benchLayout) key(id string) lethe.PartitionKey {
	switch l.path {
	case "/id":
		return lethe.NewPartitionKeyString(id)
	case "/tenant":
		t := benchTenant(id)
		pk, ok := benchTenantKeys[t]
		if !ok {
			pk = lethe.NewPartitionKeyString(t)
			benchTenantKeys[t] = pk
		}
		return pk
	}
	return lethe.NewPartitionKey()
}

// benchContainer returns a container of n items, not partitioned, and
// their ids; every third item has its own ttl, every third never expires,
// the rest inherit a one-hour default.
func benchContainer(b *testing.B, n int) (*lethe.Container, []string) {
	c, ids, _, release := benchContainerIn(b, n, benchLayouts[0])
	b.Cleanup(release)
	return c, ids
}

// benchContainerIn is benchContainer partitioned as l says; it also returns
// each item's partition key value, and release, which closes the store.
// Callers release a container before they make the next, and it starts
// with a GC, so that each variant is measured with the same heap (three
// live containers of 1M items would make the last variant's GCs slower).
func benchContainerIn(b *testing.B, n int, l benchLayout) (c *lethe.Container, ids []string, pks []lethe.PartitionKey, release func()) {
	b.Helper()
	runtime.GC()
	s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
	if err != nil {
		b.Fatal(err)
	}
	release = func() { s.Close() }
	props := lethe.ContainerProperties{ID: "bench", DefaultTimeToLive: 3600}
	if l.path != "" {
		props.PartitionKeyDefinition.Paths = []string{l.path}
	}
	c, err = s.CreateContainer(context.Background(), props)
	if err != nil {
		b.Fatal(err)
	}
	ids = make([]string, n)
	pks = make([]lethe.PartitionKey, n)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa(i)
		pks[i] = l.key(ids[i])
		ttl := []string{"", `,"ttl":7200`, `,"ttl":-1`}[i%3]
		if _, err := c.CreateItem(context.Background(), pks[i], benchDoc(ids[i], ttl), nil); err != nil {
			b.Fatal(err)
		}
	}
	return c, ids, pks, release
}

var benchSizes = []int{1_000, 1_000_000}

func sizeName(n int) string {
	if n >= 1_000_000 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return fmt.Sprintf("%dk", n/1_000)
}

// BenchmarkReadItem reads random live items. "never" reads only items that
// cannot expire (no clock read at all), "expiring" only items that can (one
// monotonic clock read each). The "/pk-id" and "/pk-tenant" variants read
// from containers partitioned by "/id" and by "/tenant", with the items'
// partition key values built beforehand, as a program holds them.
func BenchmarkReadItem(b *testing.B) {
	for _, n := range benchSizes {
		for _, l := range benchLayouts {
			benchReadItem(b, n, l)
		}
	}
}

func benchReadItem(b *testing.B, n int, l benchLayout) {
	c, ids, pks, release := benchContainerIn(b, n, l)
	defer release()
	kinds := []struct {
		name string
		pick func(i int) bool
	}{{"mixed", func(int) bool { return true }}, {"never", func(i int) bool { return i%3 == 2 }}, {"expiring", func(i int) bool { return i%3 != 2 }}}
	if l.path != "" {
		kinds = kinds[:1]
	}
	// Random reads over the whole pool: a short cycle of ids would keep
	// their items in the CPU cache and flatter the figures. The order holds
	// the keys themselves, read in sequence, so that the loop's only random
	// accesses are the store's own and the key's text (an index into ids
	// and pks would add two cache misses of the benchmark's own per read).
	type ref struct {
		pk lethe.PartitionKey
		id string
	}
	randomOrder := func(pool []int) []ref {
		rng := rand.New(rand.NewPCG(1, 2))
		order := make([]ref, 1<<21)
		for i := range order {
			k := pool[rng.IntN(len(pool))]
			order[i] = ref{pks[k], ids[k]}
		}
		return order
	}
	for _, kind := range kinds {
		var pool []int
		for i := range ids {
			if kind.pick(i) {
				pool = append(pool, i)
			}
		}
		order := randomOrder(pool)
		b.Run(sizeName(n)+"/"+kind.name+l.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			i := 0
			for b.Loop() {
				k := order[i&(len(order)-1)]
				if _, err := c.ReadItem(ctx, k.pk, k.id, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	b.Run(sizeName(n)+"/append"+l.name, func(b *testing.B) {
		b.ReportAllocs()
		all := make([]int, len(ids))
		for i := range all {
			all[i] = i
		}
		order := randomOrder(all)
		ctx := context.Background()
		var buf []byte
		i := 0
		for b.Loop() {
			k := order[i&(len(order)-1)]
			r, err := c.ReadItemAppend(ctx, buf[:0], k.pk, k.id, nil)
			if err != nil {
				b.Fatal(err)
			}
			buf = r.Value
			i++
		}
	})
	if l.path != "" {
		return
	}
	b.Run(sizeName(n)+"/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
			ctx := context.Background()
			for pb.Next() {
				if _, err := c.ReadItem(ctx, lethe.NewPartitionKey(), ids[rng.IntN(len(ids))], nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// createSeq numbers the items BenchmarkCreateItem creates, across runs.
var createSeq int

// BenchmarkCreateItem creates new items in a container of n, not
// partitioned, partitioned by "/id" ("/pk-id") and by "/tenant"
// ("/pk-tenant"). The partition key value is built in the loop from the
// new item's id, as a program builds it, or, for a tenant, taken from the
// keys held for the 100 tenants.
func BenchmarkCreateItem(b *testing.B) {
	for _, n := range benchSizes {
		for _, l := range benchLayouts {
			c, _, _, release := benchContainerIn(b, n, l)
			b.Run(sizeName(n)+l.name, func(b *testing.B) {
				b.ReportAllocs()
				ctx := context.Background()
				for b.Loop() {
					createSeq++
					id := "new-" + strconv.Itoa(createSeq)
					if _, err := c.CreateItem(ctx, l.key(id), benchDoc(id, `,"ttl":3600`), nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			release()
		}
	}
}

// BenchmarkUpsertItemTTL rewrites random existing items with a ttl.
func BenchmarkUpsertItemTTL(b *testing.B) {
	for _, n := range benchSizes {
		c, ids := benchContainer(b, n)
		docs := make([][]byte, 1<<12)
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range docs {
			docs[i] = benchDoc(ids[rng.IntN(len(ids))], `,"ttl":600`)
		}
		b.Run(sizeName(n), func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			i := 0
			for b.Loop() {
				if _, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), docs[i&(len(docs)-1)], nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkUpsertItemParallel rewrites random existing items from every
// goroutine: run it with -cpu 1,2 to see how writes scale across cores.
// Each rewrite leaves the old version as garbage, so the heap reaches a
// steady size and the figure is lethe's own, not the cost of faulting in
// fresh memory (which the bench's W1 column pays).
func BenchmarkUpsertItemParallel(b *testing.B) {
	c, ids := benchContainer(b, 100_000)
	docs := make([][]byte, 1<<12)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range docs {
		docs[i] = benchDoc(ids[rng.IntN(len(ids))], `,"ttl":600`)
	}
	var seed atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer() // RunParallel, unlike b.Loop, does not leave out the setup
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := int(seed.Add(1) * 997)
		for pb.Next() {
			if _, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), docs[i&(len(docs)-1)], &lethe.ItemOptions{NoContentResponseOnWrite: true}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkParseItem compares lethe's single-pass scanner with what
// encoding/json needs for the same job (validate, find id and ttl, check
// the depth): the scanner is the write path's choice because it is several
// times faster and allocates once. (encoding/json/jsontext is not in this Go
// release without GOEXPERIMENT.)
func BenchmarkParseItem(b *testing.B) {
	doc := benchDoc("user-1", `,"ttl":3600`)
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if err := lethe.ParseItem(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			var m map[string]json.RawMessage // every member, to find id and ttl and drop _ts and _etag
			if err := json.Unmarshal(doc, &m); err != nil {
				b.Fatal(err)
			}
			var id string
			if err := json.Unmarshal(m["id"], &id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkClock compares time.Now with the store's clock, which reads the
// monotonic clock alone.
func BenchmarkClock(b *testing.B) {
	b.Run("time.Now", func(b *testing.B) {
		var sink int64
		for b.Loop() {
			sink += time.Now().UnixNano()
		}
		_ = sink
	})
	b.Run("storeClock", func(b *testing.B) {
		c := lethe.NewStoreClock(nil)
		var sink int64
		for b.Loop() {
			sink += c.UnixNano()
		}
		_ = sink
	})
}

// BenchmarkPurge purges n expired items with Purge: items per second.
func BenchmarkPurge(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		b.StopTimer()
		clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
		s, _ := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
		c, _ := s.CreateContainer(context.Background(), lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1})
		for i := range n {
			c.CreateItem(context.Background(), lethe.NewPartitionKey(), benchDoc("u"+strconv.Itoa(i), ""), nil)
		}
		clock.Advance(time.Second)
		b.StartTimer()
		if got, _ := c.Purge(context.Background()); got != n {
			b.Fatalf("purged %d of %d", got, n)
		}
		s.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkPurgeStall is the stall probe: n items expire at one instant
// while one goroutine reads live items in a loop; it reports the read
// latency percentiles during the background purge ("purge") and with
// nothing to purge ("idle"), and the purge rate. "alone" is the same purge
// with no reader: the reaper then has nobody to pace itself for, and the
// rate is its full speed. As in the bench's W4, the n items inherit the
// container's default TTL, off while they are written; once the last is a
// second old, the default becomes 1 s and all of them are expired at once.
func BenchmarkPurgeStall(b *testing.B) {
	const n = 1_000_000
	for _, mode := range []string{"idle", "purge", "alone"} {
		purge, read := mode != "idle", mode != "alone"
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				s, _ := lethe.Open(nil)
				ctx := context.Background()
				c, _ := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})
				live := make([]string, 10_000)
				for i := range live {
					live[i] = "live-" + strconv.Itoa(i)
					c.CreateItem(ctx, lethe.NewPartitionKey(), benchDoc(live[i], `,"ttl":-1`), nil)
				}
				for i := range n {
					c.CreateItem(ctx, lethe.NewPartitionKey(), benchDoc("exp-"+strconv.Itoa(i), ""), nil)
				}
				time.Sleep(1100 * time.Millisecond)
				if purge {
					c.Replace(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1})
				}
				b.StartTimer()
				lat := make([]time.Duration, 0, 1<<20)
				rng := rand.New(rand.NewPCG(1, 1))
				purgeStart := time.Now()
				for read {
					t := time.Now()
					c.ReadItem(ctx, lethe.NewPartitionKey(), live[rng.IntN(len(live))], nil)
					lat = append(lat, time.Since(t))
					if len(lat)%1024 == 0 {
						if purge && c.Stats().Purged == n {
							break
						}
						if !purge && time.Since(purgeStart) > 500*time.Millisecond {
							break
						}
					}
				}
				for !read && c.Stats().Purged < n {
					time.Sleep(time.Millisecond)
				}
				elapsed := time.Since(purgeStart)
				b.StopTimer()
				s.Close()
				if purge {
					b.ReportMetric(float64(n)/elapsed.Seconds(), "purged/s")
				}
				if !read {
					b.StartTimer()
					continue
				}
				slicesSort(lat)
				q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) }
				b.StartTimer()
				b.ReportMetric(q(0.50), "p50-ns")
				b.ReportMetric(q(0.99), "p99-ns")
				b.ReportMetric(q(0.999), "p99.9-ns")
				b.ReportMetric(q(1), "max-ns")
			}
		})
	}
}

func slicesSort(d []time.Duration) { slices.Sort(d) }

// BenchmarkReaperSpareBudget runs a user workload at half of a container's
// throughput (10,000 RU/s) over a large backlog of expired items, in real
// time, and reports what users and the reaper spent per second: the reaper
// must stay within the spare half. The first second is not measured: in it
// the reaper spends the spare it saved while the container was idle.
func BenchmarkReaperSpareBudget(b *testing.B) {
	const (
		throughput = 10_000
		backlog    = 200_000
		warmup     = time.Second // the reaper first spends what it saved while idle
		run        = 3 * time.Second
	)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, _ := lethe.Open(nil)
		ctx := context.Background()
		c, _ := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})
		c.CreateItem(ctx, lethe.NewPartitionKey(), benchDoc("reader", ""), nil)
		written := time.Now()
		for i := range backlog {
			c.CreateItem(ctx, lethe.NewPartitionKey(), benchDoc("exp-"+strconv.Itoa(i), `,"ttl":3`), nil)
		}
		if err := c.Replace(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever, Throughput: throughput}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Until(written.Add(3 * time.Second)))
		b.StartTimer()
		// Users: 1 RU reads, 5,000 a second, on schedule.
		start := time.Now()
		var userRU float64
		var before lethe.ContainerStats
		measured := false
		for k := 0; ; k++ {
			if !measured && time.Since(start) >= warmup {
				before, userRU, measured = c.Stats(), 0, true
			}
			due := start.Add(time.Duration(k) * time.Second / 5000)
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
			if time.Since(start) > run {
				break
			}
			if r, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "reader", nil); err == nil {
				userRU += r.RequestCharge
			}
		}
		elapsed := time.Since(start) - warmup
		st := c.Stats()
		b.StopTimer()
		s.Close()
		b.StartTimer()
		b.ReportMetric(userRU/elapsed.Seconds(), "user-RU/s")
		b.ReportMetric((st.ReaperCharge-before.ReaperCharge)/elapsed.Seconds(), "reaper-RU/s")
		b.ReportMetric(float64(st.Throttled-before.Throttled), "throttled")
	}
}

// BenchmarkQuery runs queries over n items through the store, reported per
// item examined.
func BenchmarkQuery(b *testing.B) {
	for _, n := range benchSizes {
		c, _ := benchContainer(b, n)
		for _, q := range []struct {
			name, text string
			params     []lethe.QueryParameter
		}{
			{"filter", "SELECT * FROM c WHERE c.status = @s", []lethe.QueryParameter{{Name: "@s", Value: "none"}}},
			{"filter-match-all", "SELECT * FROM c WHERE c.status = @s", []lethe.QueryParameter{{Name: "@s", Value: "active"}}},
			{"count", "SELECT VALUE COUNT(1) FROM c", nil},
		} {
			b.Run(sizeName(n)+"/"+q.name, func(b *testing.B) {
				b.ReportAllocs()
				ctx := context.Background()
				for b.Loop() {
					p := c.NewQueryItemsPager(q.text, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: q.params, PageSizeHint: 1 << 30})
					if _, err := p.NextPage(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
			})
		}
	}
}

// BenchmarkMemPerItem reports the heap a container of 1M items of about
// 250 bytes (a third each with ttl 3600, 7200 and none) uses beyond the raw
// ids and JSON.
func BenchmarkMemPerItem(b *testing.B) {
	const n = 1_000_000
	for i := 0; i < b.N; i++ {
		docs := make([][]byte, n)
		raw := 0
		for i := range docs {
			id := "user-" + strconv.Itoa(100000+i)
			docs[i] = benchDoc(id, []string{"", `,"ttl":3600`, `,"ttl":7200`}[i%3])
			raw += len(docs[i]) + len(id)
		}
		s, _ := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
		c, _ := s.CreateContainer(context.Background(), lethe.ContainerProperties{ID: "m", DefaultTimeToLive: lethe.TTLNever})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, d := range docs {
			c.CreateItem(context.Background(), lethe.NewPartitionKey(), d, nil)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)-int64(raw))/n, "B/item")
		runtime.KeepAlive(docs)
		s.Close()
	}
}
