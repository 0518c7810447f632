package lethe

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReapLearnsFit: a batch MaxHold bounds takes as many items as fit in
// three quarters of MaxHold at the last batch's pace (the first at
// reapItemGuess an item), at most twice the last's size, never fewer than
// reapCheckEvery nor more than BatchSize, whatever MaxHold a user sets (the
// largest too).
func TestReapLearnsFit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		hold    time.Duration
		batch   int
		fit     int           // before (0: none learnt)
		elapsed time.Duration // of the last batch
		n       int           // its items
		want    int
	}{
		{"first batch, as guessed", 100 * time.Microsecond, 256, 0, 75 * time.Microsecond, 75, 75},
		{"faster: doubles at most", 100 * time.Microsecond, 256, 20, 2 * time.Microsecond, 20, 40},
		{"fits three quarters", 100 * time.Microsecond, 256, 64, 64 * time.Microsecond, 64, 75},
		{"slower: shrinks at once", 100 * time.Microsecond, 256, 75, 225 * time.Microsecond, 75, 25},
		{"much slower: the least", 100 * time.Microsecond, 256, 75, 10 * time.Millisecond, 75, reapCheckEvery},
		{"1 ns MaxHold", time.Nanosecond, 256, 0, time.Microsecond, 16, reapCheckEvery},
		{"no time taken", 100 * time.Microsecond, 256, 40, 0, 40, 80},
		{"BatchSize bounds", MaxReaperMaxHold, 256, 200, 200 * time.Microsecond, 200, 256},
		{"BatchSize under the least", 100 * time.Microsecond, 5, 0, time.Nanosecond, 5, 5},
		{"nothing chosen: unchanged", 100 * time.Microsecond, 256, 50, time.Microsecond, 0, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f batchFit
			f.n.Store(int32(tc.fit))
			o := ReaperOptions{BatchSize: tc.batch, MaxHold: tc.hold}
			f.learn(tc.elapsed, tc.n, o)
			require.Equal(t, tc.want, f.fitting(o))
		})
	}
}

// TestReapBatchFitsMaxHold: with users served (MaxHold bounds each batch)
// and every purge taking 3 µs of the reaper's clock (not the 1 µs reap
// guesses before it has timed a batch), each batch after the first, which
// is guessed, takes close to three quarters of MaxHold and none more than
// MaxHold: reap learns the pace, and the bound holds inside a batch, not
// only between batches (a batch of BatchSize items would take 768 µs, one
// of the guess's size 225 µs), and the batches are not left at the least
// size.
func TestReapBatchFitsMaxHold(t *testing.T) {
	t.Parallel()
	c, clock := manualContainer(t)
	ctx := context.Background()
	const n = 3000
	for i := range n {
		_, err := c.CreateItem(ctx, NewPartitionKey(), fmt.Appendf(nil, `{"id":"%d"}`, i), nil)
		require.NoError(t, err)
	}
	clock.Advance(time.Minute)
	base := time.Unix(0, 0)
	const perItem = 3 * time.Microsecond
	hooksOf(c).reapNow = func() time.Time { return base.Add(time.Duration(c.purged.Load()) * perItem) }
	t.Cleanup(func() { hooksOf(c).reapNow = nil })
	o := ReaperOptions{BatchSize: 256, MaxHold: 100 * time.Microsecond}
	scratch := newReapScratch(o.BatchSize)
	var sizes []int
	for total := 0; total < n; {
		k, _ := c.reap(c.store.clock.now(), o, false, &scratch)
		require.Positive(t, k)
		if len(sizes) > 0 {
			require.LessOrEqual(t, time.Duration(k)*perItem, o.MaxHold, "batch %d (sizes so far %v)", len(sizes), sizes)
		}
		sizes = append(sizes, k)
		total += k
	}
	for i, k := range sizes[4 : len(sizes)-1] {
		require.GreaterOrEqual(t, k, 23, "batch %d of %v", i+4, sizes)
	}
}

// TestOldestExpiredKeepsScratch: with more earlier defaults holding expired
// items than the scratch's first capacity allows for, oldestExpired grows
// the caller's scratch once and keeps it grown: the batches after the
// first allocate nothing, nor do the reaper's.
func TestOldestExpiredKeepsScratch(t *testing.T) {
	c, clock := manualContainer(t)
	// Each change finds items expired under the default before.
	def := shortenDefaults(t, c, clock, 8, 300, time.Second, 100, 10)
	clock.Advance(time.Duration(def) * time.Second)
	require.Greater(t, len(c.rule.past), 4)
	const limit = 256
	scratch := newReapScratch(limit).entries
	first := cap(scratch)
	now := c.store.clock.now()
	batch, _ := c.oldestExpired(&c.rule, now, limit, &scratch)
	require.Len(t, batch, limit)
	require.Greater(t, cap(scratch), first, "the scratch did not need to grow: the test does not test")
	allocs := testing.AllocsPerRun(20, func() {
		batch, _ = c.oldestExpired(&c.rule, now, limit, &scratch)
	})
	require.Len(t, batch, limit)
	require.Zero(t, allocs, "allocations per batch with a kept scratch")

	// The reaper's batches too: it keeps its scratch.
	o := ReaperOptions{BatchSize: limit, MaxHold: uncut}
	rs := newReapScratch(limit)
	c.reap(now, o, true, &rs)
	purged := 0
	allocs = testing.AllocsPerRun(4, func() {
		k, _ := c.reap(now, o, true, &rs)
		purged += k
	})
	require.Equal(t, 5*limit, purged)
	require.Zero(t, allocs, "allocations per reaper batch")
}

// TestPurgeCostTimed is not a check: it is TestPurgeCost's purge as the
// reaper makes it while users are served, for counting instructions per
// purged item under valgrind. n items expire at distinct instants, 1 µs
// apart, and are purged in batches the default MaxHold bounds, timed by a
// clock on which each purge takes 1 µs (so the batches' sizes do not
// depend on valgrind's pace). It runs only with LETHE_PURGECOST=n; the
// cost of a purge is Container.reap's inclusive count over n:
//
//	CGO_ENABLED=0 go test -c -o lethe.test . && LETHE_PURGECOST=200000 GOGC=off GOMAXPROCS=1 \
//	  GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind ./lethe.test -test.run TestPurgeCostTimed &&
//	callgrind_annotate --inclusive=yes callgrind.out.* | grep 'Container).reap '
func TestPurgeCostTimed(t *testing.T) {
	t.Parallel()
	n, _ := strconv.Atoi(os.Getenv("LETHE_PURGECOST"))
	if n <= 0 {
		t.Skip("LETHE_PURGECOST=n not set")
	}
	c, clock := manualContainer(t)
	ctx := context.Background()
	for i := range n {
		clock.Advance(time.Microsecond)
		_, err := c.CreateItem(ctx, NewPartitionKey(), fmt.Appendf(nil, `{"id":"u%d","status":"pending","n":12345}`, i), nil)
		require.NoError(t, err)
	}
	clock.Advance(time.Minute)
	hooksOf(c).reapNow = func() time.Time { return time.Unix(0, 0).Add(time.Duration(c.purged.Load()) * time.Microsecond) }
	t.Cleanup(func() { hooksOf(c).reapNow = nil })
	o := ReaperOptions{BatchSize: DefaultReaperBatchSize, MaxHold: DefaultReaperMaxHold}
	scratch := newReapScratch(o.BatchSize)
	got, batches := 0, 0
	for ; got < n; batches++ {
		k, _ := c.reap(c.store.clock.now(), o, false, &scratch)
		got += k
	}
	t.Logf("%d batches, %.1f items a batch", batches, float64(n)/float64(batches))
}

// reapFitStore opens a store on a manual clock with no reaper of its own
// and n items in each of the containers props describes, all expired.
func reapFitStore(t *testing.T, n int, props ...ContainerProperties) ([]*Container, *ManualClock) {
	t.Helper()
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := Open(&Options{Clock: clock, Reaper: ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	var cs []*Container
	for _, p := range props {
		c, err := s.CreateContainer(ctx, p)
		require.NoError(t, err)
		for i := range n {
			_, err := c.CreateItem(ctx, NewPartitionKey(), fmt.Appendf(nil, `{"id":"%d"}`, i), nil)
			require.NoError(t, err)
		}
		cs = append(cs, c)
	}
	clock.Advance(time.Minute)
	return cs, clock
}

// TestReapFitPerContainer: each container's batches are sized by its own
// pace. The reaper serves a container whose purges take 1 µs and one whose
// take 4 µs, in turn, with one scratch: after each has had a batch timed,
// no batch of either runs past MaxHold (with one fit for both, every batch
// of the slow one took 1.4 times MaxHold).
func TestReapFitPerContainer(t *testing.T) {
	t.Parallel()
	cs, _ := reapFitStore(t, 3000, ContainerProperties{ID: "fast", DefaultTimeToLive: 10}, ContainerProperties{ID: "slow", DefaultTimeToLive: 10})
	cost := [2]time.Duration{time.Microsecond, 4 * time.Microsecond}
	hooksOf(cs[0]).reapNow = func() time.Time {
		return time.Unix(0, 0).Add(time.Duration(cs[0].purged.Load())*cost[0] + time.Duration(cs[1].purged.Load())*cost[1])
	}
	t.Cleanup(func() { hooksOf(cs[0]).reapNow = nil })
	o := ReaperOptions{BatchSize: 256, MaxHold: 100 * time.Microsecond}
	scratch := newReapScratch(o.BatchSize)
	for round := range 20 {
		for i, c := range cs {
			before := c.purged.Load()
			c.reap(c.store.clock.now(), o, false, &scratch)
			took := time.Duration(c.purged.Load()-before) * cost[i]
			if round > 0 {
				require.LessOrEqual(t, took, o.MaxHold, "round %d, container %s", round, c.id)
			}
		}
	}
}

// TestReapFitNotFromStarvedBatch: a batch the spare budget cuts short (the
// users spent it) does not teach the pace: it took the time of choosing a
// batch and purged little, and learning from it doubled the next batch's
// size each time, so that when the spare came back one batch ran 2.6
// times MaxHold.
func TestReapFitNotFromStarvedBatch(t *testing.T) {
	t.Parallel()
	cs, clock := reapFitStore(t, 3000, ContainerProperties{ID: "c", DefaultTimeToLive: 10, Throughput: 100_000})
	c := cs[0]
	hooksOf(c).reapNow = func() time.Time { return time.Unix(0, 0).Add(time.Duration(c.purged.Load()) * time.Microsecond) }
	t.Cleanup(func() { hooksOf(c).reapNow = nil })
	o := ReaperOptions{BatchSize: 256, MaxHold: 100 * time.Microsecond}
	scratch := newReapScratch(o.BatchSize)
	for range 5 {
		c.reap(c.store.clock.now(), o, true, &scratch)
	}
	b := c.budget()
	for range 4 {
		b.mu.Lock() // the users took the spare
		b.refillLocked(c.store.clock.now())
		b.spare = 0
		b.mu.Unlock()
		k, _ := c.reap(c.store.clock.now(), o, true, &scratch)
		require.Zero(t, k, "the test does not starve the reaper")
	}
	clock.Advance(time.Second) // the spare is back
	before := c.purged.Load()
	c.reap(c.store.clock.now(), o, true, &scratch)
	took := time.Duration(c.purged.Load()-before) * time.Microsecond
	require.Positive(t, took)
	require.LessOrEqual(t, took, o.MaxHold)
}
