package lethe_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReaperSleepsUntilExpiry: the reaper wakes at the next expiry, not
// before, purges, and stops on Close (synctest fails the test if its
// goroutine outlives the bubble).
func TestReaperSleepsUntilExpiry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, err := lethe.Open(nil)
		require.NoError(t, err)
		defer s.Close()
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 10})
		upsert(t, c, `{"id":"a"}`)
		synctest.Wait()
		rounds := lethe.ReaperRounds(s)

		time.Sleep(10*time.Second - time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, rounds, lethe.ReaperRounds(s), "the reaper woke before the expiry")
		assert.Equal(t, int64(0), c.Stats().Purged)

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		st := c.Stats()
		assert.Equal(t, int64(1), st.Purged)
		assert.Equal(t, int64(0), st.ExpiredPending)
		assert.LessOrEqual(t, lethe.ReaperRounds(s)-rounds, int64(2), "the reaper polled")

		// Idle with nothing to expire: it sleeps for good.
		rounds = lethe.ReaperRounds(s)
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		assert.Equal(t, rounds, lethe.ReaperRounds(s))
	})
}

// TestReaperWokenByEarlierWrite: a write that brings an earlier expiry wakes
// the sleeping reaper.
func TestReaperWokenByEarlierWrite(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, err := lethe.Open(nil)
		require.NoError(t, err)
		defer s.Close()
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})
		upsert(t, c, `{"id":"late","ttl":100}`)
		synctest.Wait() // asleep until 100 s
		upsert(t, c, `{"id":"early","ttl":5}`)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		st := c.Stats()
		assert.Equal(t, int64(1), st.Purged, "the early item was not purged at its expiry")
		assert.Equal(t, int64(1), st.Items)

		// So does a change of the default that brings expiry forward.
		upsert(t, c, `{"id":"inherits"}`)
		synctest.Wait()
		require.NoError(t, c.Replace(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 2}))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, int64(2), c.Stats().Purged)
	})
}

// TestReaperStopsOnClose: Close waits for the reaper, even mid-backlog.
func TestReaperStopsOnClose(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{BatchSize: 1}})
		require.NoError(t, err)
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1})
		for i := range 1000 {
			upsert(t, c, fmt.Sprintf(`{"id":"%d"}`, i))
		}
		time.Sleep(time.Second)
		require.NoError(t, s.Close())
		if !lethe.ReaperStopped(s) {
			t.Fatal("Close returned before the reaper stopped")
		}
		require.NoError(t, s.Close())
	})
}

// TestReaperRealTime runs the reaper on the system clock, with generous
// bounds: every expired item goes, no live one does.
func TestReaperRealTime(t *testing.T) {
	t.Parallel()
	s, err := lethe.Open(nil)
	require.NoError(t, err)
	defer s.Close()
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1})
	for i := range 2000 {
		upsert(t, c, fmt.Sprintf(`{"id":"%d"}`, i))
		upsert(t, c, fmt.Sprintf(`{"id":"keep%d","ttl":-1}`, i))
	}
	require.Eventually(t, func() bool {
		st := c.Stats()
		return st.Purged == 2000 && st.ExpiredPending == 0
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, int64(2000), c.Stats().Items)
	lethe.CheckInvariants(t, c, "after the purge")
}

// TestReaperFairness: one round serves every container, so a huge backlog
// in one does not delay another's purge.
func TestReaperFairness(t *testing.T) {
	t.Parallel()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true, BatchSize: 100, MaxHold: lethe.MaxReaperMaxHold}})
	require.NoError(t, err)
	defer s.Close()
	big := mustContainer(t, s, lethe.ContainerProperties{ID: "a-big", DefaultTimeToLive: 1})
	small := mustContainer(t, s, lethe.ContainerProperties{ID: "b-small", DefaultTimeToLive: 1})
	for i := range 5000 {
		upsert(t, big, fmt.Sprintf(`{"id":"%d"}`, i))
	}
	for i := range 10 {
		upsert(t, small, fmt.Sprintf(`{"id":"%d"}`, i))
	}
	clock.Advance(time.Second)
	wakeAt := lethe.ReaperRound(s, clock.Now()) // a reaper driven by hand
	assert.Equal(t, int64(10), small.Stats().Purged, "the small container waited behind the big one")
	assert.Equal(t, int64(100), big.Stats().Purged, "one batch per container per round")
	assert.LessOrEqual(t, wakeAt.UnixNano(), clock.Now().UnixNano(), "more is waiting: the reaper must go round again")
}

// TestReaperOldestFirst: within a container, the oldest expiry goes first,
// across items that inherit and items with their own ttl.
func TestReaperOldestFirst(t *testing.T) {
	t.Parallel()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true, BatchSize: 1}})
	require.NoError(t, err)
	defer s.Close()
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 10})
	upsert(t, c, `{"id":"inherit-10"}`)
	upsert(t, c, `{"id":"own-3","ttl":3}`)
	clock.Advance(time.Second)
	upsert(t, c, `{"id":"own-5","ttl":5}`) // expires at 6
	upsert(t, c, `{"id":"inherit-11"}`)
	clock.Advance(time.Hour)
	for _, want := range []string{"own-3", "own-5", "inherit-10", "inherit-11"} {
		n := lethe.Reap(c, clock.Now(), false)
		require.Equal(t, 1, n)
		assert.False(t, lethe.Stored(c, want), "%s should have been purged by now", want)
	}
}

// TestReaperOldestFirstAcrossShards: each shard keeps its own expiry index,
// but the reaper's order stays the container's: after every batch, exactly
// the items with the earliest expiries are gone, across shards and across
// items that inherit and items with their own ttl. (A batch MaxHold bounds
// is sized to fit in it: the test allows it all the time it needs.)
func TestReaperOldestFirstAcrossShards(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 28))
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true, BatchSize: 37, MaxHold: lethe.MaxReaperMaxHold}})
	require.NoError(t, err)
	defer s.Close()
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1000})
	const n = 1000
	type item struct {
		id  string
		exp time.Time
	}
	items := make([]item, n)
	ttls := rng.Perm(n) // distinct, so that no two items expire together
	for i := range items {
		clock.Advance(time.Millisecond)
		it := item{id: fmt.Sprintf("item-%d", i), exp: clock.Now().Add(1000 * time.Second)}
		if ttl := ttls[i] + 1; ttl != 1000 && rng.IntN(2) == 0 {
			it.exp = clock.Now().Add(time.Duration(ttl) * time.Second)
			upsert(t, c, fmt.Sprintf(`{"id":%q,"ttl":%d}`, it.id, ttl))
		} else {
			upsert(t, c, fmt.Sprintf(`{"id":%q}`, it.id))
		}
		items[i] = it
	}
	slices.SortFunc(items, func(a, b item) int { return a.exp.Compare(b.exp) })
	clock.Advance(time.Hour)
	gone := 0
	for gone < n {
		k := lethe.Reap(c, clock.Now(), false)
		require.Equal(t, min(37, n-gone), k, "a batch runs to its size")
		gone += k
		for i, it := range items {
			require.Equal(t, i >= gone, lethe.Stored(c, it.id), "after %d purges, item %d by expiry (%s)", gone, i, it.id)
		}
	}
}

// TestReaperNeverPurgesRewritten: a candidate rewritten after it was
// chosen is a new life and stays.
func TestReaperNeverPurgesRewritten(t *testing.T) {
	t.Parallel()
	c, clock := newContainer(t, 5)
	upsert(t, c, `{"id":"a"}`)
	clock.Advance(5 * time.Second)
	batch := lethe.OldestExpired(c, clock.Now(), 10)
	require.Len(t, batch, 1)
	upsert(t, c, `{"id":"a","new":true}`) // rewritten after the reaper chose it
	ok := lethe.PurgeCandidate(c, batch[0], clock.Now())
	assert.False(t, ok)
	assert.True(t, lethe.Stored(c, "a"))
	lethe.CheckInvariants(t, c, "after a stale purge")
}

// TestReaperRandomWorkloads: across random workloads with a fake clock,
// every expired item is purged and no live item ever is, and the indexes
// agree after every batch. It runs 5 workloads;
// TestReaperRandomWorkloadsWithoutRace runs 20, which the race detector
// would take seconds over (withoutrace_test.go).
func TestReaperRandomWorkloads(t *testing.T) {
	t.Parallel()
	runReaperWorkloads(t, 5)
}

// runReaperWorkloads runs TestReaperRandomWorkloads's rounds random
// workloads.
func runReaperWorkloads(t *testing.T, rounds int) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for round := range rounds {
		clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
		s, err := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true, BatchSize: 1 + rng.IntN(50)}})
		require.NoError(t, err)
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTL(1 + rng.IntN(20))})
		for step := range 2000 {
			switch rng.IntN(4) {
			case 0, 1:
				ttl := []string{"", `,"ttl":-1`, fmt.Sprintf(`,"ttl":%d`, 1+rng.IntN(30))}[rng.IntN(3)]
				upsert(t, c, fmt.Sprintf(`{"id":"%d"%s}`, rng.IntN(300), ttl))
			case 2:
				clock.Advance(time.Duration(rng.IntN(2000)) * time.Millisecond)
			case 3:
				now := clock.Now()
				before := lethe.LiveIDs(c, now)
				lethe.Reap(c, now, false)
				after := lethe.LiveIDs(c, now)
				require.Equal(t, before, after, "round %d step %d: a purge changed what is live", round, step)
				lethe.CheckInvariants(t, c, fmt.Sprintf("round %d step %d", round, step))
			}
		}
		_, err = c.Purge(ctx)
		require.NoError(t, err)
		st := c.Stats()
		assert.Equal(t, int64(0), st.ExpiredPending)
		assert.Equal(t, st.Items, lethe.ExpiryIndexItems(c), "expired items remain after a full purge")
		require.NoError(t, s.Close())
	}
}

// userOutcome is what a user sees of one operation.
type userOutcome struct {
	status int
	retry  time.Duration
}

// runUserWorkload runs a fixed workload against a throughput-limited
// container, optionally letting the reaper purge between operations. With
// shared, the workload is spread over two containers that draw on their
// store's shared throughput, and the reaper purges either; the stats are
// their sums.
func runUserWorkload(t *testing.T, seed uint64, withReaper, shared bool) ([]userOutcome, lethe.ContainerStats) {
	rng := rand.New(rand.NewPCG(seed, 1))
	reaperRng := rand.New(rand.NewPCG(seed, 2))
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	opts := lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true, BatchSize: 8}}
	props := lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1, Throughput: 100}
	if shared {
		opts.Throughput, props.Throughput = 100, 0
	}
	s, err := lethe.Open(&opts)
	require.NoError(t, err)
	defer s.Close()
	cs := []*lethe.Container{mustContainer(t, s, props)}
	if shared {
		props.ID = "d"
		cs = append(cs, mustContainer(t, s, props))
	}
	var out []userOutcome
	for i := range 3000 {
		c := cs[rng.IntN(len(cs))]
		id := fmt.Sprintf("%d", rng.IntN(200))
		var r lethe.ItemResponse
		var err error
		switch rng.IntN(3) {
		case 0:
			r, err = c.ReadItem(ctx, lethe.NewPartitionKey(), id, nil)
		default:
			r, err = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"`+id+`","pad":"`+strings.Repeat("x", rng.IntN(3000))+`"}`), nil)
		}
		o := userOutcome{status: r.StatusCode}
		if e := (*lethe.Error)(nil); err != nil && errors.As(err, &e) {
			o.retry = e.RetryAfter
		}
		out = append(out, o)
		if rng.IntN(50) == 0 {
			clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond) // a lull
		} else {
			clock.Advance(time.Duration(rng.IntN(40)) * time.Millisecond)
		}
		if withReaper && reaperRng.IntN(2) == 0 {
			lethe.Reap(cs[reaperRng.IntN(len(cs))], clock.Now(), true)
		}
		_ = i
	}
	var sum lethe.ContainerStats
	for _, c := range cs {
		st := c.Stats()
		sum.Throttled += st.Throttled
		sum.Purged += st.Purged
		sum.ReaperCharge += st.ReaperCharge
	}
	return out, sum
}

// TestSpareBudgetNeverThrottlesUsers: property (a) of the issue: a user
// workload sees exactly the same throttling decisions whether the reaper
// runs or not; also when two containers share their store's throughput and
// the reaper purges either.
func TestSpareBudgetNeverThrottlesUsers(t *testing.T) {
	t.Parallel()
	t.Run("own", func(t *testing.T) { testSpareBudgetNeverThrottlesUsers(t, false) })
	t.Run("shared", func(t *testing.T) { testSpareBudgetNeverThrottlesUsers(t, true) })
}

func testSpareBudgetNeverThrottlesUsers(t *testing.T, shared bool) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	without, st0 := runUserWorkload(t, seed, false, shared)
	with, st1 := runUserWorkload(t, seed, true, shared)
	require.Equal(t, without, with)
	assert.Positive(t, st0.Throttled, "the workload must be heavy enough to be throttled")
	assert.Equal(t, st0.Throttled, st1.Throttled)
	assert.Positive(t, st1.Purged, "the reaper must have had spare budget to purge with")
	assert.GreaterOrEqual(t, st1.ReaperCharge, float64(st1.Purged)*5.5, "each purge is charged like a delete")
}

// TestSpareBudgetFullLoad: property (b): under a workload that uses all of
// the throughput the reaper purges nothing, and it resumes when load drops.
func TestSpareBudgetFullLoad(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever, Throughput: 100})
	for i := range 10 {
		upsert(t, c, fmt.Sprintf(`{"id":"%d","ttl":1}`, i)) // 55 RU
	}
	upsert(t, c, `{"id":"reader","ttl":-1}`) // 60.5 RU spent, nothing spare yet
	// Reads of 1 RU every 10 ms use exactly the refill of 100 RU/s, for
	// three seconds: the items expire one second in.
	for range 300 {
		// The bucket never overflows, so the reaper finds nothing spare.
		clock.Advance(10 * time.Millisecond)
		_, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "reader", nil)
		require.NoError(t, err)
		lethe.Reap(c, clock.Now(), true)
	}
	st := c.Stats()
	require.Equal(t, int64(10), st.ExpiredPending)
	require.Equal(t, int64(0), st.Purged, "the reaper purged under full load")
	// Load drops: within a second the bucket is full again and refill spills
	// over to the reaper.
	clock.Advance(1500 * time.Millisecond)
	lethe.Reap(c, clock.Now(), true)
	assert.Equal(t, int64(10), c.Stats().Purged, "the reaper did not resume after the load dropped")
}

// TestThrottling: an operation that would overdraw the budget gets a 429
// with RetryAfter and changes nothing; after RetryAfter it succeeds.
func TestThrottling(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", Throughput: 10})
	create(t, c, `{"id":"a"}`)                                                      // 5.5 of 10
	r, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"b"}`), nil) // 5.5 of 4.5: refused
	require.ErrorIs(t, err, lethe.ErrTooManyRequests)
	assert.Equal(t, http.StatusTooManyRequests, r.StatusCode)
	var e *lethe.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 100*time.Millisecond, e.RetryAfter)
	assert.False(t, lethe.Stored(c, "b"), "a throttled create changed the store")
	_, err = c.ReplaceItem(ctx, lethe.NewPartitionKey(), "a", []byte(`{"id":"a","v":2}`), nil)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests)
	got, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.NoError(t, err)
	assert.NotContains(t, string(got.Value), `"v"`, "a throttled replace changed the item")
	_, err = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a","v":3}`), nil)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests)
	_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests)
	got, err = c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.NoError(t, err)
	assert.NotContains(t, string(got.Value), `"v"`, "a throttled upsert or delete changed the item")
	assert.Equal(t, int64(4), c.Stats().Throttled)

	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"b"}`), nil) // two reads took 2 RU: 5.5 of 2.5
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 300*time.Millisecond, e.RetryAfter)
	clock.Advance(e.RetryAfter - 1)
	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"b"}`), nil)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests, "one nanosecond before RetryAfter")
	clock.Advance(1)
	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"b"}`), nil)
	require.NoError(t, err, "the operation must succeed after RetryAfter")

	// Raising the throughput takes effect at once; 0 is unlimited.
	require.NoError(t, c.Replace(ctx, lethe.ContainerProperties{ID: "c", Throughput: 0}))
	for i := range 100 {
		_, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(fmt.Sprintf(`{"id":"%d"}`, i)), nil)
		require.NoError(t, err)
	}
}

// TestThrottleLargeOperation: an operation costing more than a second of
// throughput runs when the bucket is full rather than never.
func TestThrottleLargeOperation(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", Throughput: 5})
	big := `{"id":"big","pad":"` + strings.Repeat("x", 20000) + `"}`
	create(t, c, big)
	_, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "big", nil)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests)
	clock.Advance(10 * time.Second)
	_, err = c.ReadItem(ctx, lethe.NewPartitionKey(), "big", nil)
	require.NoError(t, err)
}

// TestManualClockWakesReaper: moving a ManualClock wakes the reaper at once,
// rather than at its next poll of a custom clock; Close stops the watching.
func TestManualClockWakesReaper(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
		s, err := lethe.Open(&lethe.Options{Clock: clock})
		require.NoError(t, err)
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 10})
		upsert(t, c, `{"id":"a"}`)
		synctest.Wait()
		clock.Advance(time.Minute)
		synctest.Wait() // no virtual time passes: only the wake-up can purge
		st := c.Stats()
		assert.Equal(t, int64(1), st.Purged)
		assert.Equal(t, int64(0), st.ExpiredPending)
		require.NoError(t, s.Close())
		assert.Zero(t, lethe.ClockWatchers(clock), "Close leaves the clock watched")
	})
}

// TestReaperPacesOnlyForUsers: through a backlog the reaper rests after a
// stretch of work only if the store served a user operation during it.
// With nobody there it never rests, however long the purge; with a reader
// reading throughout, it does. The counts are the reaper's own, not
// timings, so the test does not depend on the machine's speed beyond the
// purge taking more than one stretch (a few milliseconds).
func TestReaperPacesOnlyForUsers(t *testing.T) {
	t.Parallel()
	const n = 20_000
	for _, reading := range []bool{false, true} {
		t.Run(fmt.Sprintf("reader=%v", reading), func(t *testing.T) {
			clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
			s, err := lethe.Open(&lethe.Options{Clock: clock})
			require.NoError(t, err)
			defer s.Close()
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1})
			upsert(t, c, `{"id":"live","ttl":-1}`)
			for i := range n {
				upsert(t, c, fmt.Sprintf(`{"id":"%d","pad":"%0200d"}`, i, i))
			}
			done := make(chan struct{})
			readerDone := make(chan struct{})
			go func() {
				defer close(readerDone)
				for reading {
					select {
					case <-done:
						return
					default:
					}
					if _, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "live", nil); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			clock.Advance(time.Second) // wakes the reaper: all n expired
			require.Eventually(t, func() bool { return c.Stats().Purged == n }, time.Minute, time.Millisecond)
			close(done)
			<-readerDone
			stretches, rests := lethe.ReaperPacing(s)
			t.Logf("%d stretches of work, %d rests", stretches, rests)
			if !reading {
				assert.Zero(t, rests, "the reaper rested with nobody there")
				return
			}
			require.NotZero(t, stretches, "the purge took less than one stretch: make n larger")
			assert.NotZero(t, rests, "the reaper never rested while a reader read")
		})
	}
}

// TestReaperBatchesRunToSizeAlone: with nobody served, a batch is not cut
// at MaxHold (here 1 ns, which cuts every batch after its first few
// items) but runs to BatchSize, so the purge takes one round per batch.
func TestReaperBatchesRunToSizeAlone(t *testing.T) {
	t.Parallel()
	const n, batch = 5000, 100
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{BatchSize: batch, MaxHold: time.Nanosecond}})
	require.NoError(t, err)
	defer s.Close()
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1})
	for i := range n {
		upsert(t, c, fmt.Sprintf(`{"id":"%d"}`, i))
	}
	rounds := lethe.ReaperRounds(s)
	clock.Advance(time.Second)
	require.Eventually(t, func() bool { return c.Stats().Purged == n }, time.Minute, time.Millisecond)
	assert.LessOrEqual(t, lethe.ReaperRounds(s)-rounds, int64(n/batch+2), "batches were cut short with nobody served")
}

// expiringItem is an item of the reaper's order tests: its id, when it
// expires, and its place in write order (which breaks ties of expiry, as
// the store's write sequence does).
type expiringItem struct {
	id    string
	exp   time.Time
	order int
}

// compareExpiring orders items as the reaper must purge them: by expiry,
// then write order.
func compareExpiring(a, b expiringItem) int {
	if c := a.exp.Compare(b.exp); c != 0 {
		return c
	}
	return a.order - b.order
}

// writeExpiring writes n items to c (default TTL def seconds), each
// either inheriting or with its own ttl, the clock moving 0 or 1 ms
// between writes so that many expire at the same instant (also an
// inheriting item and one with its own ttl), and returns them in the order
// the reaper must purge them.
func writeExpiring(t *testing.T, rng *rand.Rand, c *lethe.Container, clock *lethe.ManualClock, n, def int) []expiringItem {
	items := make([]expiringItem, n)
	for i := range items {
		clock.Advance(time.Duration(rng.IntN(2)) * time.Millisecond)
		it := expiringItem{id: fmt.Sprintf("item-%d", i), exp: clock.Now().Add(time.Duration(def) * time.Second), order: i}
		if rng.IntN(2) == 0 {
			ttl := def - 2 + rng.IntN(5) // around the default: ties across the kinds
			it.exp = clock.Now().Add(time.Duration(ttl) * time.Second)
			upsert(t, c, fmt.Sprintf(`{"id":%q,"ttl":%d}`, it.id, ttl))
		} else {
			upsert(t, c, fmt.Sprintf(`{"id":%q}`, it.id))
		}
		items[i] = it
	}
	slices.SortFunc(items, compareExpiring)
	return items
}

// requirePurgedInOrder reaps c by calling reap until every item is gone,
// and checks after each call that exactly the first items, in the order
// the reaper must purge them, are gone: a batch cut short has purged no
// item that expired after one it left, in any shard. The first call must
// purge some of a batch of batch items, not all of it: cut short.
func requirePurgedInOrder(t *testing.T, c *lethe.Container, items []expiringItem, batch int, reap func() int) {
	t.Helper()
	gone := 0
	for call := 0; gone < len(items); call++ {
		k := reap()
		if call == 0 {
			require.Positive(t, k, "the first batch purged nothing")
			require.Less(t, k, batch, "the first batch was not cut short: the test does not test")
		}
		gone += k
		for i, it := range items {
			require.Equal(t, i >= gone, lethe.Stored(c, it.id), "call %d, after %d purges: item %d in expiry order (%s, expires %v)", call, gone, i, it.id, it.exp)
		}
		require.Less(t, call, 100*len(items), "the purge does not progress")
	}
}

// orderBatch is the batch size of the reaper's order tests.
const orderBatch = 256

// expiredBacklog opens a store on a manual clock (closed when t ends), its
// reaper disabled and its batches of orderBatch cut by hold, writes 1000
// items to a container with a default ttl of 100 s (writeExpiring), and
// moves the clock on an hour: every item is expired, none purged.
func expiredBacklog(t *testing.T, hold time.Duration) (*lethe.Container, *lethe.ManualClock, []expiringItem) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 51))
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	s := openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true, BatchSize: orderBatch, MaxHold: hold}})
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 100})
	items := writeExpiring(t, rng, c, clock, 1000, 100)
	clock.Advance(time.Hour)
	return c, clock, items
}

// TestReaperSmallBatchesKeepOrder: batches made small by MaxHold (1 ns
// sizes every batch at the least, reapCheckEvery items, as if each were
// cut there) have purged the items that expired first, across every
// shard, not a shard's later items before another's earlier ones (SPEC §5:
// oldest expiry first).
func TestReaperSmallBatchesKeepOrder(t *testing.T) {
	t.Parallel()
	c, clock, items := expiredBacklog(t, time.Nanosecond)
	requirePurgedInOrder(t, c, items, orderBatch, func() int { return lethe.Reap(c, clock.Now(), false) })
	lethe.CheckInvariants(t, c, "after the purge")
}

// TestReaperCutByBudgetKeepsOrder: a batch cut short because the spare
// request units ran out has purged the items that expired first, across
// every shard.
func TestReaperCutByBudgetKeepsOrder(t *testing.T) {
	t.Parallel()
	c, clock, items := expiredBacklog(t, lethe.MaxReaperMaxHold)
	// Throughput from now on: the bucket starts full, with nothing spare;
	// every 100 ms then spills 100 RU to the reaper, enough for a few purges.
	require.NoError(t, c.Replace(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 100, Throughput: 1000}))
	requirePurgedInOrder(t, c, items, orderBatch, func() int {
		clock.Advance(100 * time.Millisecond)
		return lethe.Reap(c, clock.Now(), true)
	})
	assert.Positive(t, c.Stats().ReaperCharge)
	lethe.CheckInvariants(t, c, "after the purge")
}

// TestReaperOrderModel: random writes (inheriting, own ttl, ttl -1;
// rewrites), clock moves (some of none, so that expiries tie) and reaper
// batches, some cut short by MaxHold or by the spare budget, against a
// model of what is stored and when it expires. After each batch: it purged
// only expired items, and none that expired after an expired item it
// left (ties broken by write order).
func TestReaperOrderModel(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 53))
	type version struct {
		exp   time.Time // zero: never
		order int
	}
	for round := range 12 {
		hold := []time.Duration{time.Nanosecond, lethe.MaxReaperMaxHold}[rng.IntN(2)]
		spend := rng.IntN(2) == 0
		def := 1 + rng.IntN(20)
		clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
		s, err := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true, BatchSize: 1 + rng.IntN(80), MaxHold: hold}})
		require.NoError(t, err)
		props := lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTL(def)}
		if spend {
			props.Throughput = 200 // spares a few purges a second
		}
		c := mustContainer(t, s, props)
		model := map[string]version{} // what is stored
		writes := 0
		for step := range 1500 {
			where := fmt.Sprintf("round %d (hold %v, spend %v) step %d", round, hold, spend, step)
			switch rng.IntN(5) {
			case 0, 1:
				id := fmt.Sprintf("%d", rng.IntN(200))
				v := version{exp: clock.Now().Add(time.Duration(def) * time.Second), order: writes}
				doc := fmt.Sprintf(`{"id":%q}`, id)
				switch rng.IntN(3) {
				case 0:
					v.exp = time.Time{}
					doc = fmt.Sprintf(`{"id":%q,"ttl":-1}`, id)
				case 1:
					ttl := 1 + rng.IntN(30)
					v.exp = clock.Now().Add(time.Duration(ttl) * time.Second)
					doc = fmt.Sprintf(`{"id":%q,"ttl":%d}`, id, ttl)
				}
				if _, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(doc), nil); err != nil {
					require.ErrorIs(t, err, lethe.ErrTooManyRequests, where)
					continue
				}
				model[id] = v
				writes++
			case 2:
				clock.Advance(time.Duration(rng.IntN(3)) * time.Duration(rng.IntN(1000)) * time.Millisecond)
			default:
				now := clock.Now()
				k := lethe.Reap(c, now, spend)
				expired := func(v version) bool { return !v.exp.IsZero() && !now.Before(v.exp) }
				key := func(v version) expiringItem { return expiringItem{exp: v.exp, order: v.order} }
				var purged, left []expiringItem
				for id, v := range model {
					switch stored := lethe.Stored(c, id); {
					case !stored:
						require.True(t, expired(v), "%s: live item %s purged", where, id)
						purged = append(purged, key(v))
						delete(model, id)
					case expired(v):
						left = append(left, key(v))
					}
				}
				require.Len(t, purged, k, where)
				if len(purged) > 0 && len(left) > 0 {
					last := slices.MaxFunc(purged, compareExpiring)
					first := slices.MinFunc(left, compareExpiring)
					require.Negative(t, compareExpiring(last, first), "%s: purged an item expiring %v (write %d), left one expiring %v (write %d)", where, last.exp, last.order, first.exp, first.order)
				}
			}
		}
		lethe.CheckInvariants(t, c, fmt.Sprintf("round %d", round))
		require.NoError(t, s.Close())
	}
}
