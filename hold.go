package lethe

import (
	"slices"
	"sync"
	"time"
)

// HoldExpiries stops the container's expiries after at from happening
// until release is called: the reaper and Purge remove no item that
// expires after at, and the change feed and expiry subscribers are told
// of none, as if the container's time stood at at (what has already
// expired, or been reported, stays so: an at earlier than that holds from
// there). Reads are not held: an item past its expiry reads as gone, held
// or not. An account replaying a settings change made elsewhere at at
// holds the replica's container this way until the change is replayed
// there (ReplaceAt), so that nothing the change keeps alive is purged
// meanwhile.
//
// A settings change (Replace, ReplaceAt) made under a hold at a later
// instant moves the hold to that instant: the change is made as of it,
// the expiries up to it under the old settings first, and no look under
// the new settings goes back before it.
//
// Holds may overlap: the earliest one still held is in force. release
// may be called more than once, and after Store.Close (a held container
// never keeps Close waiting); the expiries held back then happen at once,
// at the instants they would have.
func (c *Container) HoldExpiries(at time.Time) (release func()) {
	h := &expiryHold{at: unixNanos(at)}
	c.lockAll() // the reaper purges under a shard lock: it sees the hold from here on
	c.mu.Lock()
	c.mu.holds = append(c.mu.holds, h)
	c.updateHoldLocked()
	c.mu.Unlock()
	c.unlockAll()
	var once sync.Once
	return func() { once.Do(func() { c.releaseHold(h) }) }
}

// expiryHold is one HoldExpiries call's hold, told apart by its address.
type expiryHold struct{ at int64 }

// releaseHold ends hold h and wakes the reaper and the notifier for what
// it held back (both sleep through a hold).
func (c *Container) releaseHold(h *expiryHold) {
	c.mu.Lock()
	c.mu.holds = slices.DeleteFunc(c.mu.holds, func(x *expiryHold) bool { return x == h })
	c.updateHoldLocked()
	c.mu.Unlock()
	if c.store == nil {
		return
	}
	now := c.store.clock.now()
	c.store.reaper.notify(now)
	if n := c.store.notifier.Load(); n != nil {
		n.notify(now)
	}
}

// raiseHolds moves every hold earlier than at, the instant of a settings
// change, to at. The caller holds every shard lock.
func (c *Container) raiseHolds(at int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.mu.holds {
		h.at = max(h.at, at)
	}
	c.updateHoldLocked()
}

// updateHoldLocked sets c.held to the earliest hold's instant, or 0 when
// nothing is held (a hold at 0, the Unix epoch, holds from a nanosecond
// before). The caller holds c.mu.
func (c *Container) updateHoldLocked() {
	var at int64
	for i, h := range c.mu.holds {
		if i == 0 || h.at < at {
			at = h.at
		}
	}
	if at == 0 && len(c.mu.holds) > 0 {
		at = -1
	}
	c.held.Store(at)
}

// heldNow returns how far the container's expiries may go at now: now,
// or the instant of the earliest hold (HoldExpiries) if earlier.
func (c *Container) heldNow(now int64) int64 {
	if h := c.held.Load(); h != 0 {
		return min(now, h)
	}
	return now
}
