package lethe_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lethedb/lethe"
)

// newSharedStore opens a store on a manual clock, reaper disabled, with
// the shared throughput opts gives.
func newSharedStore(t *testing.T, throughput, autoscaleMax int32) (*lethe.Store, *lethe.ManualClock) {
	t.Helper()
	clock := lethe.NewManualClock(t0)
	s := openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true},
		Throughput: throughput, AutoscaleMaxThroughput: autoscaleMax})
	return s, clock
}

// TestSharedThroughput: the containers without throughput of their own
// draw on one budget, the store's: the sum of their traffic is throttled;
// a container with its own throughput is not part of it.
func TestSharedThroughput(t *testing.T) {
	t.Parallel()
	s, clock := newSharedStore(t, 10, 0)
	assert.True(t, s.SharedThroughput())
	a := mustContainer(t, s, lethe.ContainerProperties{ID: "a"})
	b := mustContainer(t, s, lethe.ContainerProperties{ID: "b"})
	own := mustContainer(t, s, lethe.ContainerProperties{ID: "own", Throughput: 100})
	create(t, a, `{"id":"x"}`) // 5.5 of the shared 10
	_, err := b.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"x"}`), nil)
	var e *lethe.Error
	require.ErrorAs(t, err, &e, "b's 5.5 RU must not fit in the 4.5 a left")
	assert.ErrorIs(t, err, lethe.ErrTooManyRequests)
	assert.Equal(t, 100*time.Millisecond, e.RetryAfter)
	assert.Equal(t, int64(1), b.Stats().Throttled)
	for i := range 15 { // 82.5 RU: its own budget, untouched by the shared one
		create(t, own, fmt.Sprintf(`{"id":"%d"}`, i))
	}
	clock.Advance(e.RetryAfter)
	create(t, b, `{"id":"x"}`)
	assert.Equal(t, int32(0), a.ScaledThroughput(), "a has no throughput of its own")
	assert.Equal(t, int32(100), own.ScaledThroughput())

	// A container given throughput of its own leaves the shared budget;
	// one whose own throughput is removed joins it.
	require.NoError(t, a.Replace(ctx, lethe.ContainerProperties{ID: "a", Throughput: 1000}))
	require.NoError(t, own.Replace(ctx, lethe.ContainerProperties{ID: "own"}))
	create(t, a, `{"id":"y"}`)
	_, err = own.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"z"}`), nil)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests, "own now draws on the shared budget b emptied")

	// Without shared throughput, such containers are unlimited.
	plain, _ := newStore(t)
	assert.False(t, plain.SharedThroughput())
	c := mustContainer(t, plain, lethe.ContainerProperties{ID: "c"})
	for i := range 100 {
		create(t, c, fmt.Sprintf(`{"id":"%d"}`, i))
	}
}

// TestSharedThroughputReaper: the reaper of any container of a store with
// shared throughput spends only what the users of all of them left: under
// a load on one container that uses the whole budget, the other's expired
// items wait; when the load stops, they are purged.
func TestSharedThroughputReaper(t *testing.T) {
	t.Parallel()
	s, clock := newSharedStore(t, 100, 0)
	busy := mustContainer(t, s, lethe.ContainerProperties{ID: "busy", DefaultTimeToLive: lethe.TTLNever})
	idle := mustContainer(t, s, lethe.ContainerProperties{ID: "idle", DefaultTimeToLive: lethe.TTLNever})
	for i := range 10 {
		upsert(t, idle, fmt.Sprintf(`{"id":"%d","ttl":1}`, i)) // 55 RU
	}
	upsert(t, busy, `{"id":"reader","ttl":1000}`) // 60.5 RU of 100: nothing spare yet
	for range 300 {
		// 1 RU every 10 ms on busy: all the refill of 100 RU/s.
		clock.Advance(10 * time.Millisecond)
		_, err := busy.ReadItem(ctx, lethe.NewPartitionKey(), "reader", nil)
		require.NoError(t, err)
		lethe.Reap(idle, clock.Now(), true)
		lethe.Reap(busy, clock.Now(), true)
	}
	st := idle.Stats()
	require.Equal(t, int64(10), st.ExpiredPending)
	require.Equal(t, int64(0), st.Purged, "idle's reaper spent budget busy's users needed")
	assert.Zero(t, busy.Stats().Throttled, "the reaper never throttles a user")
	clock.Advance(1500 * time.Millisecond)
	lethe.Reap(idle, clock.Now(), true)
	assert.Equal(t, int64(10), idle.Stats().Purged, "the spare budget the users left was not spent")
	assert.InDelta(t, 55, idle.Stats().ReaperCharge, 0.001)
}

// TestReplaceStoreThroughput: the shared throughput changes at run time;
// invalid settings are refused and change nothing.
func TestReplaceStoreThroughput(t *testing.T) {
	t.Parallel()
	s, _ := newSharedStore(t, 0, 0)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	for i := range 5 {
		create(t, c, fmt.Sprintf(`{"id":"%d"}`, i)) // unlimited
	}
	require.NoError(t, s.ReplaceThroughput(ctx, 10, 0))
	m, a := s.Throughput()
	assert.Equal(t, [2]int32{10, 0}, [2]int32{m, a})
	create(t, c, `{"id":"a"}`) // 5.5 of a full 10
	_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"b"}`), nil)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests)

	for _, tc := range []struct{ throughput, autoscaleMax int32 }{{-1, 0}, {0, -1000}, {400, 1000}} {
		err := s.ReplaceThroughput(ctx, tc.throughput, tc.autoscaleMax)
		require.ErrorIs(t, err, lethe.ErrBadRequest, "%+v", tc)
		m, a := s.Throughput()
		assert.Equal(t, [2]int32{10, 0}, [2]int32{m, a}, "a refused setting changed the store")
	}

	require.NoError(t, s.ReplaceThroughput(ctx, 0, 1000))
	m, a = s.Throughput()
	assert.Equal(t, [2]int32{0, 1000}, [2]int32{m, a})
	create(t, c, `{"id":"b"}`) // the new budget starts full
	require.NoError(t, s.ReplaceThroughput(ctx, 0, 0))
	assert.False(t, s.SharedThroughput())
	for i := range 200 {
		upsert(t, c, fmt.Sprintf(`{"id":"%d"}`, i))
	}
	require.NoError(t, s.Close())
	assert.ErrorIs(t, s.ReplaceThroughput(ctx, 10, 0), lethe.ErrClosed)
}

// TestAutoscaleThroughput: an autoscale budget allows its maximum every
// second, and reports the throughput it has scaled to: what users drew in
// the current or the previous whole second, at least a tenth of the
// maximum, at most the maximum.
func TestAutoscaleThroughput(t *testing.T) {
	t.Parallel()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0)) // on a whole second
	s, err := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}, AutoscaleMaxThroughput: 1000})
	require.NoError(t, err)
	defer s.Close()
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", AutoscaleMaxThroughput: 100})
	shared := mustContainer(t, s, lethe.ContainerProperties{ID: "shared"})
	assert.Equal(t, int32(10), c.ScaledThroughput(), "idle: a tenth of the maximum")
	assert.Equal(t, int32(100), s.ScaledThroughput())

	for i := range 4 { // 22 RU
		create(t, c, fmt.Sprintf(`{"id":"%d"}`, i))
	}
	assert.Equal(t, int32(22), c.ScaledThroughput())
	clock.Advance(time.Second) // the previous second still counts
	assert.Equal(t, int32(22), c.ScaledThroughput())
	create(t, c, `{"id":"4"}`) // 5.5 RU, rounded up
	assert.Equal(t, int32(22), c.ScaledThroughput())
	clock.Advance(time.Second)
	assert.Equal(t, int32(10), c.ScaledThroughput(), "5.5 RU a second is under the floor")
	clock.Advance(5 * time.Second)
	assert.Equal(t, int32(10), c.ScaledThroughput())

	// The maximum is the budget: 18 creates (99 RU) fit, the 19th does not.
	for i := range 18 {
		create(t, c, fmt.Sprintf(`{"id":"m%d"}`, i))
	}
	assert.Equal(t, int32(99), c.ScaledThroughput())
	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"over"}`), nil)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests)
	assert.Equal(t, int32(99), c.ScaledThroughput(), "a refused operation draws nothing")

	// An operation costing more than the whole budget may run when it is
	// full; the figure stays at most the maximum.
	clock.Advance(3 * time.Second)
	big := `{"id":"big","pad":"` + strings.Repeat("x", 300_000) + `"}`
	create(t, c, big)
	assert.Equal(t, int32(100), c.ScaledThroughput())

	// The store's shared autoscale throughput scales with its containers'.
	for i := range 40 { // 220 RU
		create(t, shared, fmt.Sprintf(`{"id":"%d"}`, i))
	}
	assert.Equal(t, int32(220), s.ScaledThroughput())
	assert.Equal(t, int32(0), shared.ScaledThroughput())
}

// TestThroughputSettingsRefused: a container's throughput settings are
// checked: never negative, never both a throughput and an autoscale
// maximum. The refusal changes nothing.
func TestThroughputSettingsRefused(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", AutoscaleMaxThroughput: 4000})
	for _, tc := range []lethe.ContainerProperties{
		{ID: "c", Throughput: -1},
		{ID: "c", AutoscaleMaxThroughput: -1},
		{ID: "c", Throughput: 400, AutoscaleMaxThroughput: 4000},
	} {
		_, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "new", Throughput: tc.Throughput, AutoscaleMaxThroughput: tc.AutoscaleMaxThroughput})
		require.ErrorIs(t, err, lethe.ErrBadRequest, "%+v", tc)
		require.ErrorIs(t, c.Replace(ctx, tc), lethe.ErrBadRequest, "%+v", tc)
	}
	assert.Equal(t, []string{"c"}, s.ContainerIDs())
	p, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(4000), p.AutoscaleMaxThroughput)
	assert.Zero(t, p.Throughput)
}

// TestAutoscaleDurable: a durable store keeps a container's autoscale
// maximum, in its log and in its snapshots.
func TestAutoscaleDurable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, checkpoint := range []bool{false, true} {
		s, err := lethe.Open(&lethe.Options{Dir: dir})
		require.NoError(t, err)
		if !checkpoint {
			mustContainer(t, s, lethe.ContainerProperties{ID: "c", AutoscaleMaxThroughput: 4000})
		} else {
			require.NoError(t, s.Checkpoint(ctx))
		}
		require.NoError(t, s.Close())
		s, err = lethe.Open(&lethe.Options{Dir: dir})
		require.NoError(t, err)
		c, err := s.Container("c")
		require.NoError(t, err)
		p, err := c.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, int32(4000), p.AutoscaleMaxThroughput)
		assert.Equal(t, int32(400), c.ScaledThroughput())
		require.NoError(t, s.Close())
	}
}

// TestChargeScriptTime: a script's execution is charged 1 RU a millisecond
// or part of one, drawn from the container's throughput even past what its
// bucket holds (the time is spent), so the operations after it are refused
// until refill repays it; a shared budget pays for its containers' scripts.
func TestChargeScriptTime(t *testing.T) {
	t.Parallel()
	s, clock := newSharedStore(t, 100, 0)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	for _, tc := range []struct {
		d    time.Duration
		want float64
	}{{0, 0}, {-time.Second, 0}, {time.Nanosecond, 1}, {time.Millisecond, 1}, {time.Millisecond + 1, 2}, {40 * time.Millisecond, 40}} {
		assert.Equal(t, tc.want, c.ChargeScriptTime(tc.d), "%v", tc.d)
	}
	clock.Advance(time.Second) // the bucket is full again: 100 RU
	assert.Equal(t, 250.0, c.ChargeScriptTime(250*time.Millisecond), "drawn past what the bucket holds")
	_, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "x", nil)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests, "the debt of 150 RU refuses the next operation")
	clock.Advance(1500 * time.Millisecond) // repays 150 RU; 1 RU is needed
	_, err = c.ReadItem(ctx, lethe.NewPartitionKey(), "x", nil)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests, "not yet: the bucket is at 0")
	clock.Advance(20 * time.Millisecond)
	_, err = c.ReadItem(ctx, lethe.NewPartitionKey(), "x", nil)
	require.ErrorIs(t, err, lethe.ErrNotFound, "repaid: the read runs")

	free := mustContainer(t, newStoreNoThroughput(t), lethe.ContainerProperties{ID: "free"})
	assert.Equal(t, 3.0, free.ChargeScriptTime(3*time.Millisecond), "charged, with nothing to draw from")
}

// newStoreNoThroughput opens a store with unlimited throughput.
func newStoreNoThroughput(t *testing.T) *lethe.Store {
	t.Helper()
	s := openStore(t, nil)
	return s
}
