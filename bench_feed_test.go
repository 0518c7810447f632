package lethe_test

import (
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe"
)

// BenchmarkWriteFeed measures upserts (of 10k items, round robin, from
// every GOMAXPROCS goroutine) on a container without a change feed, with
// one that keeps 100k changes, and with one and an expiry subscriber, in
// memory and on a durable store (SyncNever, so that the figure is the
// CPU's, not the disk's): what the feed costs a write. The feed is full
// before the timer starts, as it is in a store that has run for a while:
// each write then makes the feed forget its oldest change. (While a feed
// fills, each write grows the heap by the version it keeps, which costs
// more.) gc-% is the share of the CPU time the garbage collector took
// during the timed writes (runtime/metrics).
func BenchmarkWriteFeed(b *testing.B) {
	for _, store := range []string{"mem", "durable"} {
		for _, mode := range []string{"none", "feed", "feed+subscriber"} {
			b.Run(store+"/"+mode, func(b *testing.B) { benchWriteFeed(b, store == "durable", mode) })
		}
	}
}

func benchWriteFeed(b *testing.B, durable bool, mode string) {
	o := &lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}}
	if durable {
		o.Dir, o.Sync = b.TempDir(), lethe.SyncNever
	}
	s, err := lethe.Open(o)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	props := lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 3600}
	if mode != "none" {
		props.ChangeFeedPolicy = &lethe.ChangeFeedPolicy{MaxChanges: 100_000}
	}
	c, err := s.CreateContainer(ctx, props)
	if err != nil {
		b.Fatal(err)
	}
	if mode == "feed+subscriber" {
		sub, err := c.SubscribeExpiries(nil)
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
	}
	const n = 10_000
	docs := make([][]byte, n)
	for i := range docs {
		docs[i] = benchDoc("item-"+strconv.Itoa(i), "")
	}
	var next atomic.Int64
	pk := lethe.NewPartitionKey()
	for i := range 100_000 {
		if _, err := c.UpsertItem(ctx, pk, docs[i%n], nil); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	gc := gcShare()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		o := &lethe.ItemOptions{NoContentResponseOnWrite: true}
		for pb.Next() {
			i := next.Add(1) % n
			if _, err := c.UpsertItem(ctx, pk, docs[i], o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(100*gc(), "gc-%")
}

// gcShare returns a function that returns the share of the process's busy
// CPU time the garbage collector took since gcShare was called (as the
// runtime accounts it, at the end of each collection).
func gcShare() func() float64 {
	samples := []metrics.Sample{
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/total:cpu-seconds"},
		{Name: "/cpu/classes/idle:cpu-seconds"},
	}
	read := func() (gc, busy float64) {
		metrics.Read(samples)
		return samples[0].Value.Float64(), samples[1].Value.Float64() - samples[2].Value.Float64()
	}
	gc0, busy0 := read()
	return func() float64 {
		gc, busy := read()
		gc, all := gc-gc0, busy-busy0
		if all <= 0 {
			return 0
		}
		return gc / all
	}
}

// BenchmarkCheckpointFeed measures a snapshot of a durable store whose
// one container keeps a full change feed of 100k changes (of 10k items):
// the snapshot writes every version the feed keeps.
func BenchmarkCheckpointFeed(b *testing.B) {
	s, err := lethe.Open(&lethe.Options{Dir: b.TempDir(), Sync: lethe.SyncNever, Reaper: lethe.ReaperOptions{Disabled: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 3600, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 100_000}})
	if err != nil {
		b.Fatal(err)
	}
	pk := lethe.NewPartitionKey()
	for i := range 100_000 {
		if _, err := c.UpsertItem(ctx, pk, benchDoc("item-"+strconv.Itoa(i%10_000), ""), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Checkpoint(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExpiryEventLatency writes 100k items that all expire at the
// same instant and reports how long after it their events reach a
// subscriber that keeps up: p50, p99 and max, in real time. The store runs
// on a ManualClock, which stands still while the items are written and
// then jumps to their expiry: the instant every one of them expires is the
// instant of the jump, and the delays are those of finding and delivering
// them.
func BenchmarkExpiryEventLatency(b *testing.B) {
	const n = 100_000
	for range b.N {
		clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
		s, err := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: os.Getenv("LETHE_BENCH_NOREAPER") != ""}})
		if err != nil {
			b.Fatal(err)
		}
		c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1})
		if err != nil {
			b.Fatal(err)
		}
		sub, err := c.SubscribeExpiries(&lethe.ExpirySubscriptionOptions{QueueSize: n})
		if err != nil {
			b.Fatal(err)
		}
		pk := lethe.NewPartitionKey()
		for i := range n {
			if _, err := c.UpsertItem(ctx, pk, benchDoc("item-"+strconv.Itoa(i), ""), nil); err != nil {
				b.Fatal(err)
			}
		}
		lat := make([]time.Duration, 0, n)
		var wg sync.WaitGroup
		var start time.Time
		ready := make(chan struct{})
		wg.Go(func() {
			<-ready
			for range sub.Events() {
				lat = append(lat, time.Since(start))
				if len(lat) == n {
					return
				}
			}
		})
		runtime.GC() // the garbage of writing the items is not the events' to collect
		start = time.Now()
		close(ready)
		clock.Advance(time.Second)
		wg.Wait()
		s.Close()
		if sub.Dropped() != 0 {
			b.Fatalf("%d events dropped", sub.Dropped())
		}
		slices.Sort(lat)
		us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
		b.ReportMetric(us(lat[0]), "first-µs")
		b.ReportMetric(us(lat[n/2]), "p50-µs")
		b.ReportMetric(us(lat[n*99/100]), "p99-µs")
		b.ReportMetric(us(lat[n-1]), "max-µs")
	}
}
