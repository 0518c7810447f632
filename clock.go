package lethe

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Clock is the store's only source of time. Every expiry decision, every
// _ts and every throughput refill reads it. Tests inject a fake one, such as
// a ManualClock.
type Clock interface{ Now() time.Time }

// ManualClock is a Clock that moves only when told to. It is safe for
// concurrent use. Use it to test code that relies on expiry without waiting:
//
//	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
//	store, _ := lethe.Open(&lethe.Options{Clock: clock})
//	...
//	clock.Advance(time.Hour) // everything with a TTL of an hour or less is gone
//
// Items are invisible the moment the clock passes their expiry. A store's
// reaper, when it runs, is woken by every Advance and Set, so it purges what
// expired at once rather than at its next poll; it still purges in the
// background, so Stats' split between ExpiredPending and Purged settles a
// moment later (Container.Purge purges synchronously).
type ManualClock struct {
	mu       sync.Mutex
	now      time.Time
	watchers []chan<- struct{} // woken, without blocking, when the clock moves
}

// NewManualClock returns a ManualClock that reads start until moved.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward if d is negative) and
// returns the new time.
func (c *ManualClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.wakeLocked()
	return c.now
}

// Set moves the clock to t. Moving a store's clock backwards is for tests
// only: an expired item that the reaper has not purged yet is visible again
// while the clock is before its expiry, one already purged is not.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	c.wakeLocked()
}

func (c *ManualClock) wakeLocked() {
	for _, w := range c.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// watch makes every move of the clock send on ch, without blocking.
func (c *ManualClock) watch(ch chan<- struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchers = append(c.watchers, ch)
}

// unwatch undoes watch.
func (c *ManualClock) unwatch(ch chan<- struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchers = slices.DeleteFunc(c.watchers, func(w chan<- struct{}) bool { return w == ch })
}

// storeClock turns the configured Clock into Unix nanoseconds. The system
// clock is read through the monotonic clock alone (one vDSO call, where
// time.Now makes two), anchored to the wall clock when the store opened: so
// TTLs are immune to steps of the wall clock, and a read pays half the time.
type storeClock struct {
	clock     Clock     // nil: the system clock
	start     time.Time // when the store opened (with a monotonic reading)
	startUnix int64
}

func newStoreClock(c Clock) storeClock {
	start := time.Now()
	return storeClock{clock: c, start: start, startUnix: start.UnixNano()}
}

// now returns the current time in Unix nanoseconds.
func (c *storeClock) now() int64 {
	if c.clock == nil {
		return c.startUnix + int64(time.Since(c.start))
	}
	return unixNanos(c.clock.Now())
}

// The instants that Unix nanoseconds in an int64 can hold: from 1677 to
// 2262.
var (
	minUnixNanos = time.Unix(0, math.MinInt64)
	maxUnixNanos = time.Unix(0, math.MaxInt64)
)

// unixNanos is t in Unix nanoseconds, saturated at the ends of int64: a
// time outside 1677–2262 (an If-Modified-Since in year 9999) is the
// nearest end, where t.UnixNano would wrap around.
func unixNanos(t time.Time) int64 {
	switch {
	case t.Before(minUnixNanos):
		return math.MinInt64
	case t.After(maxUnixNanos):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// floorSeconds converts an instant in Unix nanoseconds to Unix seconds,
// rounding down.
func floorSeconds(at int64) int64 {
	s := at / 1e9
	if at < 0 && at%1e9 != 0 {
		s--
	}
	return s
}
