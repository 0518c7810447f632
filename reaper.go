package lethe

import (
	"context"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

// reaper is the store's background goroutine that physically deletes
// expired items. It sleeps until the earliest expiry of any container (a
// write that brings an earlier one wakes it), then serves the containers
// round-robin, one bounded batch each, so that one container's backlog
// cannot starve another's. It holds a lock only while it deletes one item.
// On a container with throughput it spends only what users leave unused.
//
// Through a backlog it paces itself only when someone is there to be
// slowed: after each stretch of work it rests if the store served a user
// operation during the stretch (Store.users), and otherwise goes straight
// on, yielding to the Go scheduler between batches all the same.
type reaper struct {
	store *Store
	wake  chan struct{} // buffered: a pending wake-up
	stop  chan struct{} // closed by Store.Close
	done  chan struct{} // closed when run returns

	scratch reapScratch // reused by every batch: the reaper makes no garbage

	// sleepUntil is the instant the reaper sleeps until, or never while it
	// works: a write whose expiry is earlier wakes it.
	sleepUntil atomic.Int64
	rounds     atomic.Int64 // rounds over the containers so far, for tests
	stretches  atomic.Int64 // stretches of reaperWorkSlice ended with more to purge, for tests
	rests      atomic.Int64 // the rests after them, for tests
}

func newReaper(s *Store) *reaper {
	r := &reaper{
		store: s,
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	r.sleepUntil.Store(never)
	r.scratch = newReapScratch(s.opts.Reaper.BatchSize)
	return r
}

// notify tells the reaper that an item expires at at.
func (r *reaper) notify(at int64) {
	if r == nil || at >= r.sleepUntil.Load() {
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// While it works through a backlog the reaper works for reaperWorkSlice,
// then, if users were served meanwhile, rests for reaperRest (a timer's
// resolution is about a millisecond: a shorter rest sleeps as long).
//
// The work slice bounds a reader's worst wait when the OS gives the
// reaper's thread the core a reader's thread was on (on a machine whose
// cores are all busy, the reaper, just back from a rest, is the thread the
// OS favours): the reader waits out the whole slice. A runtime trace of
// bench W5 on a loaded 2-core machine shows every slow read spanning one
// stretch of the reaper's, the reader's goroutine running all along.
const (
	reaperWorkSlice = time.Millisecond
	reaperRest      = time.Millisecond
)

// maxCustomClockSleep bounds a sleep under a custom Clock, whose time need
// not pass at the pace of timers.
const maxCustomClockSleep = time.Second

func (r *reaper) run() {
	defer close(r.done)
	s := r.store
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	busySince := time.Time{} // when the current stretch of purging began
	woke := true             // no stretch has begun since the reaper last woke
	for turn := 0; ; turn++ {
		// Any write from here on with an expiry wakes the next sleep.
		r.sleepUntil.Store(never)
		now := s.clock.now()
		wakeAt, stopped := r.round(now, turn)
		if stopped {
			return
		}
		if wakeAt <= now {
			// More to purge: go round again. After each stretch of work,
			// rest a while if users were served during it, so that the
			// reaper does not hold a core for long while they wait: on a
			// machine with few cores, a busy reaper makes the OS and the
			// Go scheduler take cores from readers. With nobody there, it
			// goes on at full speed.
			if busySince.IsZero() {
				busySince = time.Now()
				if woke {
					// The first stretch of a backlog: only the users
					// served during it count, not the writes that made
					// the backlog (round has seen it, so they are done).
					// Later stretches begin where the last one's look
					// cleared the flag.
					s.users.Store(false)
					woke = false
				}
			}
			if time.Since(busySince) < reaperWorkSlice {
				runtime.Gosched()
				continue
			}
			busySince = time.Time{}
			r.stretches.Add(1)
			if !s.users.Swap(false) {
				runtime.Gosched()
				continue
			}
			r.rests.Add(1)
			timer.Reset(reaperRest)
			select {
			case <-r.stop:
				return
			case <-timer.C:
			}
			continue
		}
		busySince = time.Time{}
		r.sleepUntil.Store(wakeAt)
		var fire <-chan time.Time
		if wakeAt != never {
			d := time.Duration(wakeAt - now)
			if s.clock.clock != nil {
				d = min(d, maxCustomClockSleep)
			}
			timer.Reset(d)
			fire = timer.C
		}
		select {
		case <-r.stop:
			return
		case <-r.wake:
		case <-fire:
		}
		timer.Stop()
		// The users served while it slept are gone: the first batches of
		// a backlog with nobody there run to size.
		s.users.Store(false)
		woke = true
	}
}

// uncut is the MaxHold of a batch nothing cuts short: the reaper's when
// nobody is served, Purge's. No option can set it (MaxReaperMaxHold bounds
// MaxHold), so a MaxHold a user sets, even the largest, is kept.
const uncut = time.Duration(1<<63 - 1)

// round gives every container one batch, starting with the turn-th so that
// no container always goes first, and returns when the reaper is next
// needed. It reports whether the reaper was stopped meanwhile.
func (r *reaper) round(now int64, turn int) (wakeAt int64, stopped bool) {
	r.rounds.Add(1)
	cs := r.store.containerList()
	o := r.store.opts.Reaper
	if !r.store.users.Load() {
		// Nobody served since the reaper last looked: nobody to be slowed
		// by a batch that runs to its size, rather than being cut at
		// MaxHold and its rest found again in the next.
		o.MaxHold = uncut
	}
	wakeAt = never
	for i := range cs {
		c := cs[(turn+i)%len(cs)]
		_, next := c.reap(now, o, true, &r.scratch)
		wakeAt = min(wakeAt, next)
		select {
		case <-r.stop:
			return wakeAt, true
		default:
		}
	}
	return wakeAt, false
}

// reap purges up to one batch of the items expired at now, oldest expiry
// first, and returns how many it purged and when the container next needs
// the reaper (at or before now: more is waiting now). With spend, each purge
// draws on the spare budget of the budget the container draws on (its own,
// or its store's shared one, whose spare is what the users of all its
// containers left); without, the budget is not consulted. scratch
// (may be nil) is working memory for the batch.
//
// While MaxHold can cut it (users are served), a batch is sized by time:
// as many items as the batches before show fit well inside MaxHold, its
// choice included (batchFit.learn). It is never cut part way, so a
// batch cut short, by MaxHold or by the spare budget running out, has
// purged the items that expired first, in every shard: the batch comes in
// order of expiry (oldestExpired), its purges are paid for before it is
// purged, in order, and it ends before the first the spare budget cannot
// pay for. The batch is then purged shard by shard: each shard's items
// under one hold of its lock and of its expiry index's, so that the locks
// are taken once for several items, and the id-table slots of a shard's
// items are looked up together, their cache misses overlapping; each
// shard's still come in the order of its trees, so each is its tree's
// first. Between shards the reaper yields the processor every
// reapCheckEvery items or so, so that on a machine with few cores the Go
// scheduler runs other work (the garbage collector's, say) on the reaper's
// core rather than taking the core of a reader.
func (c *Container) reap(now int64, o ReaperOptions, spend bool, scratch *reapScratch) (purged int, next int64) {
	if c.deleted.Load() {
		return 0, never
	}
	if scratch == nil {
		s := newReapScratch(o.BatchSize)
		scratch = &s
	}
	timed := o.MaxHold != uncut
	hooks := c.store.testHooks()
	timer := time.Now // the clock batches are timed by against MaxHold
	if hooks != nil && hooks.reapNow != nil {
		timer = hooks.reapNow
	}
	var start time.Time
	limit := o.BatchSize
	if timed {
		start = timer()
		limit = c.fit.fitting(o)
	}
	c.mu.Lock()
	rule := c.rule
	c.mu.Unlock()
	// Under a hold (HoldExpiries) only what expired by its instant goes;
	// purgeShard looks again, a hold placed meanwhile included.
	batch, more := c.oldestExpired(&rule, c.heldNow(now), limit, &scratch.entries)
	for i := range batch {
		e := &batch[i]
		si, h := c.shardIndex(e.rec.pk(), e.rec.id())
		e.shard, e.h = uint8(si), h
	}
	if hooks != nil && hooks.afterReapFetch != nil {
		hooks.afterReapFetch(batch) // with no lock held: a test's writes land between fetch and purge
	}
	chosen := len(batch)
	var b *budget // nil: purges are not paid for
	var prepaid, unpaid int64
	if spend {
		if b = c.budget(); b != nil {
			batch, prepaid, unpaid = prepay(b, batch, now)
		}
	}
	// Group the batch by shard, keeping its order within each shard.
	ordered := slices.Grow(batch[len(batch):], len(batch))[:len(batch)]
	var count [shardCount + 1]int32
	for i := range batch {
		count[batch[i].shard+1]++
	}
	for i := 1; i <= shardCount; i++ {
		count[i] += count[i-1]
	}
	pos := count
	for _, e := range batch {
		ordered[pos[e.shard]] = e
		pos[e.shard]++
	}
	ms := scratch.ms[:0]
	var paid int64
	failed := false
	sinceYield := 0 // items purged since the reaper last yielded
	for si := range shardCount {
		group := ordered[count[si]:count[si+1]]
		if len(group) == 0 {
			continue
		}
		if sinceYield >= reapCheckEvery {
			runtime.Gosched()
			sinceYield = 0
		}
		sinceYield += len(group)
		n, cost, f := c.purgeShard(&c.shards[si], group, now, ms[:0])
		purged, paid, failed = purged+n, paid+cost, f
		if failed {
			break
		}
	}
	if prepaid > paid {
		b.returnSpare(prepaid - paid) // for items rewritten since, or deleted
	}
	if timed && unpaid == 0 {
		// A batch the spare budget cut short took the time of what it
		// chose but purged less: it says nothing of the pace.
		c.fit.learn(timer().Sub(start), chosen, o)
	}
	switch {
	case failed:
		return purged, never // the log has failed: nothing can be purged until the store reopens
	case unpaid > 0:
		return purged, now + int64(b.spareWait(unpaid, now))
	case more:
		return purged, now
	}
	next = c.nextExpiry(&rule)
	if next <= now && c.held.Load() != 0 {
		next = never // held back (HoldExpiries): the release wakes the reaper
	}
	return purged, next
}

// prepay draws from b's spare budget the charges of the purges of batch, in
// order, and returns the items it paid for (a prefix of batch), what it
// drew, and the charge of the first item it could not pay for (0: none). It
// pays before purgeShard learns whether each item is still to be purged:
// one rewritten or deleted since the batch was taken is paid for and the
// units given back, and when it is the first the budget cannot pay, the
// batch ends there and the reaper waits for units it will not spend: a
// delay, never a wrong order or units lost.
func prepay(b *budget, batch []expiredEntry, now int64) (paid []expiredEntry, drawn, unpaid int64) {
	for i := range batch {
		cost := charge(opDelete, batch[i].rec.chargeSize())
		if !b.takeSpare(cost, now) {
			return batch[:i], drawn, cost
		}
		drawn += cost
	}
	return batch, drawn, 0
}

// reapScratch is the working memory of reap: room for a batch, its merge
// and its reordering (entries, kept as oldestExpired grows it), and for the
// changes of one shard (ms).
type reapScratch struct {
	entries []expiredEntry
	ms      []mutation
}

func newReapScratch(batchSize int) reapScratch {
	return reapScratch{entries: make([]expiredEntry, 0, 5*batchSize+8*shardCount), ms: make([]mutation, 0, batchSize)}
}

// batchFit is the size of a container's next batch that MaxHold bounds,
// learnt from its last: each container has its own, as its items' cost is
// its own. Only the reaper's goroutine changes it.
type batchFit struct {
	n atomic.Int32 // items (0: no batch timed yet)
}

// fitting returns how many items the next batch MaxHold bounds takes.
// Before any batch is timed, it guesses reapItemGuess an item.
func (f *batchFit) fitting(o ReaperOptions) int {
	if n := f.n.Load(); n > 0 {
		return int(n)
	}
	return fitIn(o, reapItemGuess)
}

// learn sizes the next batch MaxHold bounds from the last one, whose n items
// (chosen, whether purged or not) took elapsed: as many as fit in three
// quarters of MaxHold at that pace (fitIn), and at most twice the last's
// size, so that a fast batch of items gone already (rewritten) cannot make
// the next overrun by more than that.
func (f *batchFit) learn(elapsed time.Duration, n int, o ReaperOptions) {
	if n == 0 {
		return
	}
	f.n.Store(int32(min(fitIn(o, elapsed/time.Duration(n)), 2*f.fitting(o)))) // at most BatchSize
}

// fitIn returns how many items taking perItem each fit in three quarters of
// MaxHold (the rest is the margin for a batch slower than the last), within
// reapCheckEvery and BatchSize.
func fitIn(o ReaperOptions, perItem time.Duration) int {
	fit := o.MaxHold * 3 / 4 / max(perItem, 1) // MaxHold is at most MaxReaperMaxHold: it fits an int
	return min(max(int(fit), reapCheckEvery), o.BatchSize)
}

// reapItemGuess is the time a purge takes, as reap guesses it before it
// has timed a batch (bench/ W4 purges 1-1.5M items a second).
const reapItemGuess = time.Microsecond

// reapCheckEvery is how many items the reaper purges between yields, and
// the least a batch MaxHold bounds takes.
const reapCheckEvery = 16

// purgeShard deletes the items of group, all in shard sh, whose record is
// still the item's current version and still expired (a rewrite after
// expiry is a new life), and returns how many it deleted and their charge
// (the reaper's, whether or not a budget pays for it); failed reports that
// the log has failed. ms is working memory.
func (c *Container) purgeShard(sh *shard, group []expiredEntry, now int64, ms []mutation) (purged int, cost int64, failed bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.items.touch(group)
	upTo := c.heldNow(now) // a hold placed since the batch was chosen stands
	for i := range group {
		e := &group[i]
		if !sh.items.holds(e.h, e.rec) || c.rule.live(e.rec, upTo) {
			continue
		}
		cost += charge(opDelete, e.rec.chargeSize())
		// Grown in place: a mutation is large, and most of it stays zero.
		ms = slices.Grow(ms, 1)[:len(ms)+1]
		m := &ms[len(ms)-1]
		*m = mutation{}
		m.cause, m.now, m.sh, m.h, m.old = causePurge, now, sh, e.h, e.rec
	}
	if len(ms) == 0 {
		return 0, 0, false
	}
	if _, err := c.applyItems(ms, false, 0); err != nil {
		return 0, 0, true // the log has failed: nothing more can be purged
	}
	c.reaperCharge.Add(cost)
	return len(ms), cost, false
}

// Purge deletes every item of the container that has expired, now, in
// batches, and returns how many it deleted. It does not wait for spare
// throughput (the purges are charged to the reaper all the same). It stops
// early, with ctx's error, when ctx is done. On a durable store whose log has
// failed it purges nothing and fails with ErrUnavailable, as writes do.
func (c *Container) Purge(ctx context.Context) (int, error) {
	if err := c.check(ctx, "Purge", ""); err != nil {
		return 0, err
	}
	now := c.store.clock.now()
	total := 0
	o := c.store.opts.Reaper
	o.MaxHold = uncut
	scratch := newReapScratch(o.BatchSize)
	for {
		n, next := c.reap(now, o, false, &scratch)
		total += n
		if next > now {
			if w := c.store.wal; w != nil {
				if err := w.failure(); err != nil {
					return total, storageError(err, "Purge", c.id, "")
				}
			}
			return total, nil
		}
		if ctx != nil {
			if err := ctx.Err(); err != nil {
				return total, err
			}
		}
	}
}
