package lethe

import (
	"math"
	"math/bits"
)

// expiryWatch finds a container's expiries as they happen, so that each is
// reported once, in expiry order, at the instant it happened: to the change
// feed (as a delete with timeToLiveExpired) and to expiry subscribers. It
// is on while the container has a change feed or subscribers.
//
// It keeps, in each tree of the expiry index, a front like the one Stats
// counts with: the entries at or before it have been reported. As time
// passes (or a settings change moves the cutoffs at once) entries cross
// the fronts; findExpiriesLocked reports those that crossed, in order of
// their expiry. An item written again, or deleted, before its expiry leaves
// the index without crossing, and is never reported; one purged after its
// expiry crossed first. Because the cutoffs never go back (expiry is final),
// neither do the fronts.
//
// The container's mu guards it.
type expiryWatch struct {
	on      bool
	notify  bool        // there are subscribers: keep what is found for them
	inherit expiryEntry // front of the inherit tree: entries at or before it are reported
	own     expiryEntry // front of the own tree
	at      int64       // every expiry at or before at has been found
	// scan is the latest instant through which the watch has begun to
	// look (at, once a look gets there): a version written at an instant
	// before it may have had its place passed while it was out of the
	// index (reportPassedLocked).
	scan int64
	due  int64 // the earliest expiry not yet found; never if none
	// numbered has bit i set when shard i may have a numbered change
	// (expiryIndex.numbered), which the watch makes in the index before
	// it reads it (addNumberedLocked).
	numbered uint32
	// hold, while a settings change at that instant waits for the log,
	// is how far a look may go (findBeforeSettings): the expiries after
	// it follow the change's, which the change finds once made; 0: none.
	hold int64

	found      []expiryNote   // found for the subscribers, not yet delivered
	scratch    []expiredEntry // reused by findSomeExpiriesLocked
	scratchOwn []expiredEntry
	// scratchMerged is findSomeExpiriesLocked's merge of the two.
	scratchMerged []expiredEntry
}

// expiryWatch.numbered has a bit for each shard: this fails to compile if
// a container has more shards than it has bits.
var _ [32 - shardCount]struct{}

// expiryNote is an expiry found: the version that expired, when, and its
// lsn in the change feed (0 without one).
type expiryNote struct {
	rec record
	at  int64
	lsn uint64
}

// startWatchLocked turns the watch on at now: what expired before now is
// not reported (nobody was watching), what expires after is. The caller
// holds c.mu and every shard lock (the container's writers must take
// c.mu from now on: see the locking note), or is alone with the
// container.
func (c *Container) startWatchLocked(now int64) {
	w := &c.mu.watch
	if w.on {
		return
	}
	w.on = true
	c.updateSharedLocked()
	w.inherit, w.own = cutoffs(&c.rule, now)
	w.at, w.scan = now, now
	w.due = c.nextUnreportedLocked()
}

// stopWatchLocked turns the watch off if nothing needs it any more.
func (c *Container) stopWatchLocked() {
	w := &c.mu.watch
	if c.mu.feed.history == nil && !w.notify {
		*w = expiryWatch{}
		c.updateSharedLocked()
	}
}

// findExpiriesLocked reports every expiry up to now not reported yet: it
// appends each to the change feed and, for subscribers, to found. An item
// expired by a settings change (a retroactive expiry) is reported as
// expiring at the change, not before: it was live until then. With force
// it looks even if nothing is due, as it must around a settings change.
// It returns how many it found.
func (c *Container) findExpiriesLocked(now int64, force bool) int {
	n, _ := c.findSomeExpiriesLocked(now, force, math.MaxInt)
	return n
}

// foundUpToLocked returns the instant up to which a look at now (by
// findExpiriesLocked) finds expiries: now, or, if earlier, the instant of a
// settings change waiting for the log (expiryWatch.hold) or of a hold
// (HoldExpiries). The caller holds c.mu.
func (c *Container) foundUpToLocked(now int64) int64 {
	if h := c.mu.watch.hold; h != 0 {
		now = min(now, h)
	}
	return c.heldNow(now)
}

// findSomeExpiriesLocked is findExpiriesLocked for at most limit expiries,
// the earliest; done reports that it found every one up to now. The
// notifier finds a large backlog this way, a chunk at a time, delivering
// each before it looks for the next.
func (c *Container) findSomeExpiriesLocked(now int64, force bool, limit int) (n int, done bool) {
	w := &c.mu.watch
	if !w.on {
		return 0, true
	}
	now = c.foundUpToLocked(now)
	if !force && now < w.due {
		return 0, true
	}
	c.settlePendingLocked() // the feed takes expiries after the changes logged before them
	c.addNumberedLocked()
	w.scan = max(w.scan, now)
	ci, co := cutoffs(&c.rule, now)
	// Each tree's expired entries beyond its front, up to limit, in order
	// of expiry (an inheriting item's instant moves with the default it
	// expired under); then the earliest limit of both, merged. A tree whose
	// list was cut short may hold earlier expiries than the other's rest,
	// so the merge stops when such a list runs out.
	collect := func(own bool, front, cutoff expiryEntry, buf []expiredEntry) ([]expiredEntry, bool) {
		if !lessEntry(front, cutoff) {
			return buf, false
		}
		buf, cut := c.entriesBetween(own, front, cutoff, limit, buf)
		if !own {
			inheritedExpiries(&c.rule, buf)
		}
		return buf, cut
	}
	inherit, cutI := collect(false, w.inherit, ci, w.scratch[:0])
	own, cutO := collect(true, w.own, co, w.scratchOwn[:0])
	runs, cut := [2][]expiredEntry{inherit, own}, [2]bool{cutI, cutO}
	merged, left := mergeExpired(w.scratchMerged[:0], runs[:], cut[:], limit)
	done = !left
	var lastI, lastO record
	for i, e := range merged {
		if e.rec.ttl() > 0 {
			lastO = e.rec
		} else {
			lastI = e.rec
		}
		c.reportExpiryLocked(e.rec, max(e.at, w.at), loggedAt(w.at, now, done && i == len(merged)-1), false) // a retroactive expiry happened now
	}
	n = len(merged)
	if done {
		if lessEntry(w.inherit, ci) {
			w.inherit = ci
		}
		if lessEntry(w.own, co) {
			w.own = co
		}
		w.at = max(w.at, now)
	} else {
		if lastI != "" {
			w.inherit, _, _ = entryFor(lastI)
		}
		if lastO != "" {
			w.own, _, _ = entryFor(lastO)
		}
	}
	clear(inherit)
	clear(own)
	clear(merged)
	w.scratch, w.scratchOwn, w.scratchMerged = inherit[:0], own[:0], merged[:0]
	w.due = c.nextUnreportedLocked()
	return n, done
}

// loggedAt is the instant an expiry's frame says its look had found every
// expiry up to (format.go's 'R'), for a look from the watch's instant at to
// now: now for the last expiry of a look that got there, at for any other,
// as the watch, interrupted there, would still stand at at with its fronts
// at that expiry's entry. Recovery moves the fronts past each frame's entry
// and, for a frame of a later instant than it had, to that instant's
// cutoffs (replayer.foundUpTo), so that a log cut short after any frame of
// a look, or a chunk that stopped short (findSomeExpiriesLocked's limit),
// resumes the watch where it stood, never past an expiry it had not found.
// (A lethe before this logged every frame of a look at now: its logs are
// read as they were, found up to now.)
func loggedAt(at, now int64, last bool) int64 {
	if last {
		return now
	}
	return at
}

// reportExpiryLocked reports that rec expired at at, found by a look that
// had found every expiry up to now (loggedAt): to the
// change feed (and the log, which replays it, unless logged says that it
// holds the expiry already: logPassedLocked) and, for subscribers, to
// found. The caller holds c.mu.
func (c *Container) reportExpiryLocked(rec record, at, now int64, logged bool) {
	w := &c.mu.watch
	var lsn uint64
	if f := c.mu.feed.history; f != nil {
		lsn = f.add(changeExpire, at, rec, rec, c.hashOf(rec))
		if l := c.store.wal; l != nil && !logged {
			// A log that has failed keeps the expiry, and writes it
			// first when it heals (wal.heal); one that failed for good
			// writes nothing more, and the next Open finds the expiry
			// again. The feed in memory has it either way.
			_, _ = l.addExpire(c.id, now, at, rec)
		}
	}
	if w.notify {
		w.found = append(w.found, expiryNote{rec: rec, at: at, lsn: lsn})
	}
}

// passedLocked reports whether the watch's front has passed rec's place in
// the expiry index: an expiry there has been reported if rec was in the
// index when the watch looked, and never will be otherwise. The caller
// holds c.mu.
func (c *Container) passedLocked(rec record) bool {
	w := &c.mu.watch
	e, own, ok := entryFor(rec)
	front := w.inherit
	if own {
		front = w.own
	}
	return w.on && ok && !lessEntry(front, e)
}

// reportPassedLocked reports the expiry of rec, which the watch's front
// passed while rec was out of the expiry index, so that the watch never
// saw it: a version indexed only after the watch had looked past its
// expiry (a write decided before a feed reader's catch-up and numbered
// after it, indexItemsLocked). It is reported now, where the feed stands,
// stamped no earlier than the watch's instant (as a retroactive expiry
// is), so that the feed's expiries stay in order of their instants; logged
// says that the log holds it already (logPassedLocked). The caller holds
// c.mu.
func (c *Container) reportPassedLocked(rec record, logged bool) {
	w := &c.mu.watch
	c.reportExpiryLocked(rec, c.passedAt(rec), w.at, logged)
	if w.notify {
		c.wakeNotifier(1) // does not block: safe under c.mu
	}
}

// passedAt is the instant reportPassedLocked stamps rec's expiry with.
// The caller holds c.mu.
func (c *Container) passedAt(rec record) int64 {
	return max(c.rule.expiresAt(rec.ttl(), rec.written()), c.mu.watch.at)
}

// logPassedLocked logs, right after a durable store has logged the changes
// of the pending change p, the expiry of each version they write whose
// place the expiry watch has already looked past (a write decided before a
// feed reader's catch-up past its expiry), and marks it so: applied,
// indexItemsLocked reports it to the feed right after its write, as the
// log holds it, rather than logging it then, after the changes logged
// meanwhile. The watch cannot move while p waits (it settles the pending
// changes before it looks), so the stamp and the report agree. An expiry
// the log refuses (it has failed since the changes: addExpireAfter) is
// not marked, and is logged when it is reported, as any other. The caller
// holds c.mu.
func (c *Container) logPassedLocked(p *pendingChange) {
	if !c.mu.watch.on {
		return
	}
	scan := c.mu.watch.scan
	for i := range p.ms {
		if m := &p.ms[i]; m.rec != "" && m.now < scan && c.passedLocked(m.rec) {
			m.passedLogged = c.store.wal.addExpireAfter(p.ticket, c.id, c.mu.watch.at, c.passedAt(m.rec), m.rec)
		}
	}
}

// compareExpired orders expired entries by expiry, then write sequence.
func compareExpired(a, b expiredEntry) int {
	if a.at != b.at {
		if a.at < b.at {
			return -1
		}
		return 1
	}
	if a.rec.seqBefore(b.rec) {
		return -1
	}
	return 1
}

// reportThroughLocked finds expiries, in order, until rec, which has
// expired by now, is reported (it may be already: it expired before the
// watch began, or was found). It returns how many it found.
func (c *Container) reportThroughLocked(rec record, now int64) (found int) {
	if _, _, ok := entryFor(rec); !ok {
		return 0
	}
	for !c.passedLocked(rec) {
		n, done := c.findSomeExpiriesLocked(now, true, deliverChunk)
		found += n
		if done {
			break
		}
	}
	return found
}

// nextUnreportedLocked returns the earliest expiry of an entry beyond the
// fronts: when findExpiriesLocked next has something to find. Its callers
// have the numbered changes in the index: findSomeExpiriesLocked made
// them; a settings change and startWatchLocked hold every shard lock
// (which no writer lets go of with its change numbered and not made),
// and recovery is alone with the container.
func (c *Container) nextUnreportedLocked() int64 {
	w := &c.mu.watch
	due := int64(never)
	if e, ok := c.firstAfter(false, w.inherit); ok {
		due = min(due, c.rule.inheritExpiry(e.at))
	}
	if e, ok := c.firstAfter(true, w.own); ok {
		due = min(due, c.rule.ownExpiry(e.at))
	}
	return max(due, w.at) // never before what has been looked at (expiredForGood)
}

// addNumberedLocked makes in the expiry index the changes that writers
// have numbered in the change feed and not made there yet (numberLocked),
// each under its shard's expiryMu, so that what the watch (or Stats) reads
// next agrees with the feed: every version it has written in, every
// version it has replaced or removed out. The caller holds c.mu.
func (c *Container) addNumberedLocked() {
	w := &c.mu.watch
	for p := w.numbered; p != 0; p &= p - 1 {
		sh := &c.shards[bits.TrailingZeros32(p)]
		sh.expiryMu.Lock()
		sh.expiry.addNumbered()
		sh.expiryMu.Unlock()
	}
	w.numbered = 0
}

// watchAddedLocked tells the watch that versions were written whose
// earliest expiry is at: it may be the earliest not yet found.
func (c *Container) watchAddedLocked(at int64) {
	w := &c.mu.watch
	if at < w.due {
		w.due = max(at, w.at)
	}
}
