package lethe_test

import (
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdContainer returns a container with a change feed and a default TTL
// of 10 s holding items "a" (the default's) and "b" (its own 9 s), both
// written at t0, on a store whose reaper is off.
func holdContainer(t *testing.T) (*lethe.Container, *lethe.ManualClock) {
	t.Helper()
	c, clock := feedContainer(t, lethe.ContainerProperties{DefaultTimeToLive: 10})
	create(t, c, `{"id":"a"}`)
	create(t, c, `{"id":"b","ttl":9}`)
	return c, clock
}

// expiredInFeed returns, by id, the instant (crts) of each expiry c's
// change feed reports.
func expiredInFeed(t *testing.T, c *lethe.Container) map[string]int64 {
	t.Helper()
	items, _ := readAll(t, c, lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
	out := map[string]int64{}
	for _, ch := range decodeChanges(t, items) {
		if ch.Metadata.TimeToLiveExpired {
			out[ch.Metadata.ID] = ch.Metadata.CRTS
		}
	}
	return out
}

// TestHoldExpiriesKeepsUntilReplace: while held at t0+8 s, neither Purge
// nor the change feed takes the items past their expiry (t0+9 s, t0+10 s);
// a default raised as of t0+8 s (ReplaceAt) keeps "a" alive, and after the
// release "b", expired under its own TTL all the same, is purged and
// reported at its expiry.
func TestHoldExpiriesKeepsUntilReplace(t *testing.T) {
	c, clock := holdContainer(t)
	change := t0.Add(8 * time.Second)
	release := c.HoldExpiries(change)
	clock.Advance(13 * time.Second)
	n, err := c.Purge(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "purged while held")
	assert.Empty(t, expiredInFeed(t, c), "reported while held")

	props, err := c.Read(ctx)
	require.NoError(t, err)
	props.DefaultTimeToLive = 1000
	require.NoError(t, c.ReplaceAt(ctx, props, change))
	release()
	release() // a second call does nothing

	n, err = c.Purge(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, err = c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	assert.NoError(t, err, "kept by the raised default")
	_, err = c.ReadItem(ctx, lethe.NewPartitionKey(), "b", nil)
	assert.ErrorIs(t, err, lethe.ErrNotFound)
	assert.Equal(t, map[string]int64{"b": t0.Add(9 * time.Second).Unix()}, expiredInFeed(t, c))
}

// TestHoldExpiriesEarliest: overlapping holds: the earliest in force
// holds, and releasing it lets the later one hold.
func TestHoldExpiriesEarliest(t *testing.T) {
	c, clock := holdContainer(t)
	late := c.HoldExpiries(t0.Add(9500 * time.Millisecond))
	early := c.HoldExpiries(t0.Add(5 * time.Second))
	clock.Advance(20 * time.Second)
	purge := func() int {
		n, err := c.Purge(ctx)
		require.NoError(t, err)
		return n
	}
	assert.Zero(t, purge(), "under the earlier hold")
	early()
	assert.Equal(t, 1, purge(), "under the later hold, b (expired at 9 s) only")
	late()
	assert.Equal(t, 1, purge(), "released: a")
}

// TestHoldExpiriesReaperAndClose: the reaper purges nothing held, purges
// it once released, and a held container neither keeps Close waiting nor
// makes its release fail after it.
func TestHoldExpiriesReaperAndClose(t *testing.T) {
	clock := lethe.NewManualClock(t0)
	s, err := lethe.Open(&lethe.Options{Clock: clock})
	require.NoError(t, err)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})
	create(t, c, `{"id":"a","ttl":1}`)
	release := c.HoldExpiries(t0)
	rounds := lethe.ReaperRounds(s)
	clock.Advance(2 * time.Second) // wakes the reaper, whose round finds the item held
	require.Eventually(t, func() bool { return lethe.ReaperRounds(s) > rounds }, time.Minute, time.Millisecond)
	_, err = c.Purge(ctx)
	require.NoError(t, err)
	assert.Zero(t, c.Stats().Purged)
	release() // wakes the reaper: no clock moves from here on
	require.Eventually(t, func() bool { return c.Stats().Purged == 1 }, time.Minute, time.Millisecond)

	create(t, c, `{"id":"b","ttl":1}`)
	held := c.HoldExpiries(clock.Now())
	clock.Advance(2 * time.Second)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("Close waits for a held container")
	}
	held()
	_, err = c.Purge(ctx)
	assert.ErrorIs(t, err, lethe.ErrClosed)
}

// TestHoldExpiriesSubscribers: an expiry held is not delivered to a
// subscriber; once released it is, at its own instant (the release wakes
// the notifier: no clock moves after it).
func TestHoldExpiriesSubscribers(t *testing.T) {
	c, clock := holdContainer(t)
	sub, err := c.SubscribeExpiries(nil)
	require.NoError(t, err)
	defer sub.Close()
	release := c.HoldExpiries(t0.Add(5 * time.Second))
	clock.Advance(9500 * time.Millisecond)
	require.Eventually(t, func() bool { return lethe.NotifierIdle(c) }, time.Minute, time.Millisecond, "the notifier sleeps through the hold")
	select {
	case ev := <-sub.Events():
		t.Fatalf("delivered while held: %s", ev.ID)
	default:
	}
	release()
	select {
	case ev := <-sub.Events():
		assert.Equal(t, "b", ev.ID)
		assert.Equal(t, t0.Add(9*time.Second).UTC(), ev.ExpiredAt)
	case <-time.After(time.Minute):
		t.Fatal("not delivered once released")
	}
}

// TestHoldExpiriesRaisedBySettings: a settings change made under a hold,
// at a later instant, moves the hold there: a default lowered to 1 s as of
// t0+8 s expires "a" at t0+8 s, not at the hold's t0+5 s, while "b"
// (expiring at t0+9 s) stays held.
func TestHoldExpiriesRaisedBySettings(t *testing.T) {
	c, clock := holdContainer(t)
	release := c.HoldExpiries(t0.Add(5 * time.Second))
	defer release()
	clock.Advance(13 * time.Second)
	props, err := c.Read(ctx)
	require.NoError(t, err)
	props.DefaultTimeToLive = 1
	require.NoError(t, c.ReplaceAt(ctx, props, t0.Add(8*time.Second)))
	n, err := c.Purge(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "a only")
	assert.Equal(t, map[string]int64{"a": t0.Add(8 * time.Second).Unix()}, expiredInFeed(t, c))
}
