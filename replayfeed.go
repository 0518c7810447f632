package lethe

import (
	"errors"
	"math"
	"slices"
)

// The change feed's side of recovery: the changes of containers with a
// change feed, how far their expiry watches had got, and the expiries
// that the log lacks.

// applyFeed replays a change of a container with a change feed (after its
// kind byte): the item change, and the feed's entry.
func (r *replayer) applyFeed(kind byte, d *decoder) error {
	cid := d.str()
	var (
		what changeKind
		why  cause
		now  int64
		at   int64
	)
	switch kind {
	case framePutFeed:
		what = changeKind(d.byte())
	case frameRemoveFeed:
		why, now = cause(d.byte()), d.varint()
		what = changeDelete
	case frameExpire:
		now, at = d.varint(), d.varint()
		what = changeExpire
	}
	rec, ok := r.record(d.b)
	if d.bad || !ok || (kind == framePutFeed && what != changeCreate && what != changeReplace) {
		return errors.New("the change of a container with a change feed is malformed")
	}
	c := r.s.containers[string(cid)]
	if c == nil {
		return nil
	}
	var old record // the version a write replaces, for the feed's entry
	switch kind {
	case framePutFeed:
		r.maxSeq = max(r.maxSeq, rec.seq())
		old = r.put(c, rec)
		if at = rec.written(); at < r.foundMax {
			r.owePassed(c, rec)
		}
	case frameRemoveFeed:
		r.remove(c, rec.pk(), rec.id())
		if why == causePurge {
			return nil
		}
		at = now
	case frameExpire:
		r.foundUpTo(c, now)
		r.foundThrough(c, rec)
		if len(r.owed) > 0 {
			r.paid(c, rec)
		}
	}
	if f := c.mu.feed.history; f != nil {
		f.add(what, at, rec, old, c.hashOf(rec))
	}
	return nil
}

// owePassed notes the expiry of rec, a version just replayed to c, if the
// version lies behind the fronts up to which c's expiries had been found
// (foundUpTo, foundThrough): the store's expiry watch had looked past its
// place before it was written, and reported its expiry right after its write
// (reportPassedLocked), stamped no earlier than the watch's instant, which
// the log then holds next (logPassedLocked), or held and wrote first when
// it healed (wal.heal). Only a log that failed for good, or a store that
// stopped, before it was durable lacks it, and ends there: finish reports
// it then (reportOwed), where the feed had it, for the watch, resumed at
// that instant, never finds it.
//
// Its callers call it only for a version written before foundMax: one
// written after expires after it too, and owes nothing.
func (r *replayer) owePassed(c *Container, rec record) {
	found, ok := r.found[c]
	if !ok || c.mu.feed.history == nil {
		return
	}
	e, own, ok := entryFor(rec)
	if !ok {
		return
	}
	front := found.inherit
	if own {
		front = found.own
	}
	if lessEntry(front, e) {
		return
	}
	if r.owed == nil {
		r.owed = make(map[*Container][]expiryNote)
	}
	at := max(c.rule.expiresAt(rec.ttl(), rec.written()), found.at)
	r.owed[c] = append(r.owed[c], expiryNote{rec: rec, at: at})
}

// paid notes that the log holds the expiry of rec, a version of c.
func (r *replayer) paid(c *Container, rec record) {
	r.owed[c] = slices.DeleteFunc(r.owed[c], func(e expiryNote) bool { return e.rec.seq() == rec.seq() })
}

// reportOwed reports to c's change feed the expiries that the log lacks
// (owePassed), of the versions still c's at the end of the log, for
// logRecovered to log. The caller holds c.mu.
func (r *replayer) reportOwed(c *Container) {
	for _, e := range r.owed[c] {
		i, h := c.shardIndex(e.rec.pk(), e.rec.id())
		if c.shards[i].items.get(e.rec.pk(), e.rec.id(), h) != e.rec {
			continue // changed since: the log holds the expiry before the change (wal.heal), or an older lethe's log never will
		}
		e.lsn = c.mu.feed.history.add(changeExpire, e.at, e.rec, "", h)
		if r.recovered == nil {
			r.recovered = make(map[*Container][]expiryNote)
		}
		r.recovered[c] = append(r.recovered[c], e)
	}
}

// watchFound is how far a container's expiry watch had got, as the log
// tells: every expiry up to at had been found, and every entry of the
// expiry index at or before a front (expiryWatch's) reported.
type watchFound struct {
	at           int64
	inherit, own expiryEntry
}

// foundUpTo records that c's expiries up to now had been found, under c's
// rule as it stands, if now is later than the instant recorded: the fronts
// move to now's cutoffs. A frame of the same instant moves nothing
// (loggedAt: the frames of a look but its last carry the watch's instant).
func (r *replayer) foundUpTo(c *Container, now int64) {
	if r.found == nil {
		r.found = make(map[*Container]watchFound)
	}
	f, ok := r.found[c]
	if ok && now <= f.at {
		return
	}
	ci, co := cutoffs(&c.rule, now)
	if !ok {
		f.inherit, f.own = ci, co
	}
	f.at, f.inherit, f.own = now, maxEntry(f.inherit, ci), maxEntry(f.own, co)
	r.found[c] = f
	r.foundMax = max(r.foundMax, now)
}

// foundThrough records that c's expiry watch had reported the expiry of
// rec: its front in rec's tree stood at rec's entry at least. The caller
// has called foundUpTo for c.
func (r *replayer) foundThrough(c *Container, rec record) {
	e, own, ok := entryFor(rec)
	if !ok {
		return
	}
	f := r.found[c]
	if own {
		f.own = maxEntry(f.own, e)
	} else {
		f.inherit = maxEntry(f.inherit, e)
	}
	r.found[c] = f
	// A version written after e's instant has its entry after e (an
	// entry's instant is its last write, or later).
	if e.at < math.MaxInt64 {
		r.foundMax = max(r.foundMax, e.at+1)
	}
}

// maxEntry returns the later of two entries (lessEntry).
func maxEntry(a, b expiryEntry) expiryEntry {
	if lessEntry(a, b) {
		return b
	}
	return a
}

// findExpiries resumes the expiry watch of a container with a change feed
// where it stood when the store stopped, and finds the expiries since, up
// to the instant of recovery, before the items that expired are dropped:
// no expiry is lost to a restart, and none is found twice. es are the
// entries of all its items, sorted; set gathered them.
func (r *replayer) findExpiries(c *Container, es *shardEntries, set *liveSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.reportOwed(c)
	c.addSortedEntries(es, set.bytes)
	w := &c.mu.watch
	if f, ok := r.found[c]; ok {
		w.at, w.inherit, w.own = f.at, f.inherit, f.own
	} else {
		w.at = 0
		w.inherit, w.own = cutoffs(&c.rule, 0)
	}
	w.notify = true // collect what is found in w.found
	if c.findExpiriesLocked(r.now, true) > 0 {
		if r.recovered == nil {
			r.recovered = make(map[*Container][]expiryNote)
		}
		r.recovered[c] = append(r.recovered[c], w.found...)
	}
	w.notify, w.found = false, nil
}
