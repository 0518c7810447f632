package lethe

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// ExpiryEvent reports that an item expired.
type ExpiryEvent struct {
	ID           string
	PartitionKey PartitionKey
	ETag         string    // the _etag of the version that expired
	ExpiredAt    time.Time // when it expired, by the store's clock
	// LSN is the expiry's log sequence number in the container's change
	// feed, 0 if the container keeps none.
	LSN uint64

	rec record // the version that expired
}

// Item returns the version that expired, as a read returned it; the caller
// owns it. Events carry the stored version, which nothing changes, and copy
// it only when asked, so that a subscriber that needs only the id pays for
// no copy.
func (e ExpiryEvent) Item() []byte {
	if e.rec == "" {
		return nil
	}
	return e.rec.jsonBytes()
}

// ExpirySubscriptionOptions are the options of SubscribeExpiries. A nil
// *ExpirySubscriptionOptions means the defaults.
type ExpirySubscriptionOptions struct {
	// QueueSize is how many events may wait for the subscriber; 0 means
	// DefaultExpiryQueueSize.
	QueueSize int
}

// DefaultExpiryQueueSize is the queue size of a subscription without one.
const DefaultExpiryQueueSize = 4096

// An ExpirySubscription receives a container's expiry events on Events.
type ExpirySubscription struct {
	c       *Container
	events  chan ExpiryEvent
	dropped atomic.Int64
	closed  bool // under c.subs.mu
}

// Events returns the channel the events arrive on. It is closed when the
// subscription is closed: by Close, by the container's deletion or by
// Store.Close.
func (s *ExpirySubscription) Events() <-chan ExpiryEvent { return s.events }

// Dropped returns how many events were dropped because the queue was full.
func (s *ExpirySubscription) Dropped() int64 { return s.dropped.Load() }

// Close ends the subscription and closes Events; it is idempotent.
func (s *ExpirySubscription) Close() {
	c := s.c
	c.subs.mu.Lock()
	c.subs.removeLocked(s)
	notify := len(c.subs.list) > 0
	c.subs.mu.Unlock()
	if !notify {
		c.mu.Lock()
		c.mu.watch.notify = false
		c.mu.watch.found = nil
		c.stopWatchLocked()
		c.publishDueLocked()
		c.mu.Unlock()
	}
}

// subscriptions are a container's expiry subscribers.
type subscriptions struct {
	mu      sync.Mutex
	list    []*ExpirySubscription
	dropped atomic.Int64 // events dropped over every subscription, for Stats
}

// removeLocked takes s off the list and closes its channel, once.
func (ss *subscriptions) removeLocked(s *ExpirySubscription) {
	if s.closed {
		return
	}
	s.closed = true
	close(s.events)
	for i, x := range ss.list {
		if x == s {
			ss.list = append(ss.list[:i:i], ss.list[i+1:]...)
			break
		}
	}
}

// closeAll ends every subscription (the container was deleted or the store
// closed).
func (ss *subscriptions) closeAll() {
	ss.mu.Lock()
	for len(ss.list) > 0 {
		ss.removeLocked(ss.list[0])
	}
	ss.mu.Unlock()
}

// SubscribeExpiries subscribes to the container's expiries: from now on,
// each item that expires is reported on the subscription's Events once, in
// expiry order, at the instant it expires by the store's clock (not when
// the reaper purges it, which may be much later when throughput is short).
// An item written again or deleted before its expiry is not reported; one
// that a shorter default TTL expires at once is reported at that change.
//
// Events are found and delivered by a goroutine of the store, outside every
// lock of the store, and never block it: when the subscriber does not keep
// up and its queue is full, the event is dropped and counted (Dropped, and
// ContainerStats.ExpiryEventsDropped). A container with a change feed has
// every expiry in its all-versions-and-deletes feed as well, with the
// event's LSN, so a subscriber that dropped events can find them there.
// Items that expired before the subscription are not reported. A clock set
// backwards (ManualClock) delays events until it passes their expiry again.
func (c *Container) SubscribeExpiries(o *ExpirySubscriptionOptions) (*ExpirySubscription, error) {
	const op = "SubscribeExpiries"
	if err := c.check(context.Background(), op, ""); err != nil {
		return nil, err
	}
	size := DefaultExpiryQueueSize
	if o != nil && o.QueueSize != 0 {
		if o.QueueSize < 0 {
			return nil, withContext(badRequest("the queue size %d is negative", o.QueueSize), op, c.id, "")
		}
		size = o.QueueSize
	}
	s := &ExpirySubscription{c: c, events: make(chan ExpiryEvent, size)}
	c.subs.mu.Lock()
	if c.store.closed.Load() || c.deleted.Load() { // closeAll has run, or is about to
		c.subs.mu.Unlock()
		return nil, c.check(context.Background(), op, "")
	}
	c.subs.list = append(c.subs.list, s)
	c.subs.mu.Unlock()
	now := c.store.clock.now()
	c.lockAll() // the watch may start: see startWatchLocked
	c.mu.Lock()
	if !c.mu.watch.notify {
		c.findExpiriesLocked(now, false) // what expired before is not for s
		c.startWatchLocked(now)
		c.mu.watch.notify = true
	}
	c.publishDueLocked()
	c.mu.Unlock()
	c.unlockAll()
	c.store.startNotifier()
	return s, nil
}

// publishDueLocked makes the watch's next due instant visible to the write
// path, and to the notifier, which it wakes if it sleeps past it.
func (c *Container) publishDueLocked() {
	w := &c.mu.watch
	due := int64(never)
	if w.on {
		due = w.due
	}
	if c.watchDue.Load() != due { // a store each write would bounce its cache line between cores
		c.watchDue.Store(due)
	}
	if n := c.store.notifier.Load(); w.notify && n != nil {
		n.notify(due)
	}
}

// wakeNotifier wakes the notifier if found expiries wait for it.
func (c *Container) wakeNotifier(found int) {
	if found > 0 {
		if n := c.store.notifier.Load(); n != nil {
			n.notify(never - 1)
		}
	}
}

// notifier is the store's goroutine that finds the expiries its
// subscribers wait for, at the instant they happen, and delivers them. It
// runs from the first subscription until Store.Close.
type notifier struct {
	store      *Store
	wake       chan struct{} // buffered: a pending wake-up
	stop       chan struct{}
	done       chan struct{}
	sleepUntil atomic.Int64 // the instant it sleeps until; never - 1 while awake
}

// startNotifier starts the notifier if it is not running.
func (s *Store) startNotifier() {
	s.notifierOnce.Do(func() {
		n := &notifier{store: s, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		n.sleepUntil.Store(never - 1)
		if mc, ok := s.opts.Clock.(*ManualClock); ok {
			mc.watch(n.wake)
		}
		s.notifierMu.Lock()
		defer s.notifierMu.Unlock()
		if s.closed.Load() {
			return
		}
		s.notifier.Store(n)
		go n.run()
	})
}

// stopNotifier stops the notifier, if it runs, and waits for it.
func (s *Store) stopNotifier() {
	s.notifierMu.Lock()
	n := s.notifier.Load()
	s.notifierMu.Unlock()
	if n == nil {
		return
	}
	if mc, ok := s.opts.Clock.(*ManualClock); ok {
		mc.unwatch(n.wake)
	}
	close(n.stop)
	<-n.done
}

// notify wakes the notifier if it sleeps past at.
func (n *notifier) notify(at int64) {
	if at >= n.sleepUntil.Load() {
		return
	}
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *notifier) run() {
	defer close(n.done)
	s := n.store
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		n.sleepUntil.Store(never - 1)
		now := s.clock.now()
		wakeAt := int64(never)
		for _, c := range s.containerList() {
			wakeAt = min(wakeAt, c.deliverExpiries(now))
		}
		n.sleepUntil.Store(wakeAt)
		var fire <-chan time.Time
		if wakeAt != never {
			d := time.Duration(wakeAt - s.clock.now())
			if s.clock.clock != nil {
				d = min(d, maxCustomClockSleep)
			}
			if d <= 0 {
				continue
			}
			timer.Reset(d)
			fire = timer.C
		}
		select {
		case <-n.stop:
			timer.Stop()
			return
		case <-n.wake:
		case <-fire:
		}
		timer.Stop()
	}
}

// deliverExpiries finds the container's expiries up to now and delivers
// them, and what the write path found, to its subscribers, a chunk at a
// time, letting go of c.mu to deliver each. It returns when the
// next one is due.
func (c *Container) deliverExpiries(now int64) (due int64) {
	for {
		c.mu.Lock()
		w := &c.mu.watch
		if !w.notify {
			c.mu.Unlock()
			return never
		}
		_, done := c.findSomeExpiriesLocked(now, false, deliverChunk)
		c.watchDue.Store(w.due) // not publishDueLocked: that would wake the notifier itself
		found := w.found
		w.found = nil
		due = w.due
		if due <= now && c.held.Load() != 0 {
			due = never // held back (HoldExpiries): the release wakes the notifier
		}
		c.mu.Unlock()
		c.deliver(found)
		if done {
			return due
		}
	}
}

// deliverChunk is how many expiries the notifier finds per hold of a
// container's mu.
const deliverChunk = 1024

// deliver sends found expiries to every subscriber, dropping (and
// counting) those a full queue cannot take.
func (c *Container) deliver(found []expiryNote) {
	if len(found) == 0 {
		return
	}
	c.subs.mu.Lock()
	defer c.subs.mu.Unlock()
	for _, s := range c.subs.list {
		for _, f := range found {
			ev := ExpiryEvent{
				ID:           f.rec.id(),
				PartitionKey: PartitionKey{enc: f.rec.pk(), n: uint8(len(c.pkPaths.segs))},
				ETag:         f.rec.etag(),
				ExpiredAt:    time.Unix(0, f.at).UTC(),
				LSN:          f.lsn,
				rec:          f.rec,
			}
			select {
			case s.events <- ev:
			default:
				s.dropped.Add(1)
				c.subs.dropped.Add(1)
			}
		}
	}
}
