package lethe

import (
	"slices"
	"unsafe"
)

// Every change to a container goes through one path, in three steps:
//
//  1. prepare, without any lock: parse and validate the input (parseItem,
//     normalizeProps);
//  2. decide, under the locks the change needs: read the current state,
//     check it against the request (exists, live, If-Match, budget) and
//     build the new state (a record, a rule);
//  3. apply, under the same locks: Container.apply, the one function that
//     changes a container's items, expiry index, rule or existence.
//
// Callers: item writes (Container.write: create, replace, upsert, delete),
// patches (Container.commitPatch), the reaper and Purge
// (Container.purgeShard), Container.Replace and Store.DeleteContainer; a
// transactional batch decides all its operations under the locks of every
// shard it touches and applies their net item changes together with
// applyBatch, the all-or-none variant of apply. Both make item changes
// through applyItems, the one place that updates the shards' id tables and
// the expiry index. What must see every change (the write-ahead log, a
// change feed, secondary indexes) hooks into apply and applyBatch, and gets
// the cause with each change. A durable store's log is the first: apply
// appends the change to it (applyBatch appends a batch's changes as one
// record) and makes the change only once the log holds it durably, still
// under the caller's locks, so that a reader never sees a change that the
// log failed to keep or that a crash can take back.

// cause says why a container changes.
type cause uint8

const (
	causeCreate   cause = iota // CreateItem, or UpsertItem of a missing or expired item
	causeReplace               // ReplaceItem, or UpsertItem of a live item
	causeDelete                // DeleteItem
	causePurge                 // the reaper or Purge removes an expired item
	causeSettings              // Container.Replace: default TTL, indexing, throughput
	causeDrop                  // Store.DeleteContainer
)

// mutation is one decided change, ready to apply.
type mutation struct {
	cause cause
	now   int64 // the instant it was decided at

	// An item change (create, replace, delete, purge): the item's shard and
	// hash, and its record before and after ("": none).
	sh       *shard
	h        uint32
	old, rec record
	// slot is 1 + the id-table slot of the item (or the empty slot where
	// it goes) when a single write looked it up under the shard lock it
	// still holds (idTable.lookup), so that rec takes it without a second
	// probe; 0: not known.
	slot int
	// numbered says that the change is its shard's numbered change: in
	// the change feed, and in the expiry index only once addNumbered has
	// made it there (numberLocked).
	numbered bool
	// passedLogged says that the log holds rec's expiry right after the
	// change, the expiry watch having looked past it (logPassedLocked).
	passedLogged bool

	// A settings change: the new properties, and the write sequence number
	// that orders it. (A pointer: a mutation's size is copied and cleared
	// by every item write.)
	props *ContainerProperties
	seq   uint64
}

// apply makes a decided change. The caller holds the locks it needs: for an
// item change, the write lock of the item's shard; for a settings change or
// a drop, every shard lock. It returns the earliest expiry the change brings
// about (never if none), for the caller to tell the reaper once it has let
// go of its locks. A durable store logs the change and waits until the log
// holds it durably (durable, below) before making it, under the same locks:
// no reader sees a change that a crash can take back, and a change that
// cannot be logged returns the log's error and changes nothing.
func (c *Container) apply(m *mutation) (next int64, err error) {
	switch m.cause {
	case causeSettings, causeDrop:
		found := 0
		if m.cause == causeSettings {
			found = c.findBeforeSettings(m.now)
		}
		if w := c.store.wal; w != nil {
			ticket, err := c.log(w, m)
			if err == nil {
				err = w.wait(ticket)
			}
			if err != nil {
				c.mu.Lock()
				c.mu.watch.hold = 0
				c.mu.Unlock()
				c.wakeNotifier(found)
				return never, err
			}
		}
		if m.cause == causeDrop {
			c.drop()
			return never, nil
		}
		return c.applySettings(m, found), nil
	}
	return c.applyItems(unsafe.Slice(m, 1), false, 0)
}

// findBeforeSettings finds the expiries due at now under the container's
// rule, before a settings change at now is logged: a durable store logs
// them before the change, and recovery, which replays them under the rule
// they were found under, then takes the change's instant as found up to
// (replayer.apply's 'S'), and the expiries the new rule brings about
// after it. Until the change is made (or refused), no look goes past now
// (expiryWatch.hold): a feed reader's look while the change waits for the
// log would log a later expiry ahead of the ones the change brings about,
// as found up to its own instant, and a restart after it would skip them.
// It returns how many it found, for the notifier.
func (c *Container) findBeforeSettings(now int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	found := c.findExpiriesLocked(now, true)
	if c.mu.watch.on {
		c.mu.watch.hold = now
	}
	return found
}

// applySettings makes a settings change, the expiries due under the old
// rule found (found of them: findBeforeSettings): it finds those the new
// rule brings about at once (a shorter default TTL expires items
// retroactively), which happen now.
func (c *Container) applySettings(m *mutation, found int) (next int64) {
	c.mu.Lock()
	c.mu.watch.hold = 0
	if m.props.DefaultTimeToLive != c.rule.def {
		c.rule = c.rule.changed(m.props.DefaultTimeToLive, m.now)
	}
	found += c.findExpiriesLocked(m.now, true)
	c.setFeedPolicyLocked(m.props.ChangeFeedPolicy, m.now)
	c.dropIndexesLocked(m.props.IndexingPolicy)
	c.dropVectorsLocked(m.props)
	c.dropTextsLocked(m.props)
	c.dropSpatialsLocked(m.props)
	c.props = *m.props
	c.startVectorBuildsLocked()
	c.updateSharedLocked()
	c.settingsSeq = m.seq
	replaceBudget(&c.own, m.props.Throughput, m.props.AutoscaleMaxThroughput, m.now)
	c.mu.watch.due = c.nextUnreportedLocked()
	c.publishDueLocked()
	next = c.nextExpiry(&c.rule)
	c.mu.Unlock()
	c.wakeNotifier(found)
	return next
}

// drop empties a deleted container.
func (c *Container) drop() {
	c.deleted.Store(true)
	c.mu.Lock()
	c.resetExpiryIndex()
	c.mu.feed.history = nil
	c.stopVectorsLocked()
	c.mu.indexes = indexSet{}
	c.mu.watch = expiryWatch{}
	c.updateSharedLocked()
	c.publishDueLocked()
	c.mu.Unlock()
	for i := range c.shards {
		c.shards[i].items = idTable{}
	}
}

// applyBatch makes the decided item changes of a transactional batch, all
// or none: a durable store logs them as one record (seq is the highest
// write sequence number the batch used, so that recovery never hands out
// an ETag the batch returned), then they are applied together. The caller
// holds c.batchMu for writing and the write locks of every shard the
// changes touch, so no reader sees some of them without the others. It
// returns what apply returns.
func (c *Container) applyBatch(ms []mutation, seq uint64) (next int64, err error) {
	if len(ms) == 0 {
		return never, nil
	}
	return c.applyItems(ms, true, seq)
}

// applyItems makes decided item changes (one, or a batch's: batchSeq is
// then its highest write sequence number): each record replaces its
// old version in its shard's id table (or the old one goes), and the
// shard's expiry index follows. A plain container's single change takes no
// container-wide lock: its shard's index alone changes, under the shard's
// expiryMu. A batch's changes, and every change to a container with shared
// structures (a change feed, an expiry watch, indexes), are indexed under
// one hold of c.mu, so that Stats sees all of a batch or none of it,
// and what reads the expiry index with the container's other indexes sees
// them agree; but a single change to an in-memory container with a change
// feed and no other index changes its expiry index after the lock
// (numberLocked). When a change replaces or removes an expired version
// that the expiry watch has not reported yet, the expiries up to it are
// found first, so that the change feed and the expiry subscribers see an
// item expire before it is written again or purged. It returns the
// earliest expiry the changes bring about.
//
// A durable store logs the changes and makes them only once the log holds
// them durably: synced under SyncAlways, written to the operating system
// under the other policies (wal.durable). The caller's shard locks are
// held meanwhile, so no other write decides on the item's old state and no
// reader of its shard sees the new one early; writers to other shards
// share the wait (group commit). A container with a change feed logs its
// changes under c.mu, so that the log holds them in the feed's
// order, but does not hold that lock while it waits: the change joins the
// container's queue of pending changes (mu.feed.pending), which whoever
// next holds the lock applies, in log order, as far as the log is
// durable. A change the log fails to keep is never made.
func (c *Container) applyItems(ms []mutation, batch bool, batchSeq uint64) (next int64, err error) {
	w := c.store.wal
	// Purges remove what readers no longer see (expired items): they are
	// made once logged, without waiting.
	wait := w != nil && !purgesOnly(ms)
	feed := c.mu.feed.history // set only under every shard lock: the caller holds one
	var hooks *testHooks
	if feed != nil {
		if hooks = c.store.testHooks(); hooks != nil && hooks.beforeFeedChange != nil {
			hooks.beforeFeedChange()
		}
		feed.latest.touch(ms[0].h) // before the lock, not under it
	}
	if feed == nil {
		// Without a feed, the id tables change under the shard locks the
		// caller holds; the expiry index too (indexShards), unless the
		// container's indexes, expiry watch or a batch need the
		// container-wide lock (indexShared).
		if w != nil {
			ticket, err := c.logItems(w, ms, batch, batchSeq)
			if err == nil && wait {
				err = w.wait(ticket)
			}
			if err != nil {
				return never, err
			}
		}
		c.putItems(ms)
		if !batch && !c.shared.Load() {
			return c.indexShards(ms), nil
		}
		return c.indexShared(ms), nil
	}
	if w == nil && !batch {
		// In memory, a change to a container with a feed takes c.mu
		// only to number it and show it to the watch: the id tables, which
		// the caller's shard locks hide until the feed has the change, are
		// changed before; the expiry index after, in one hold of its
		// shard's lock, as numberLocked says, or, where it cannot, under
		// c.mu (indexItemsLocked).
		c.putItems(ms)
		if hooks != nil && hooks.afterFeedPut != nil {
			hooks.afterFeedPut()
		}
		c.mu.Lock()
		found := c.reportReplacedLocked(ms)
		numbered := c.numberLocked(ms)
		if !numbered {
			next = c.indexItemsLocked(ms)
		}
		c.mu.Unlock()
		c.wakeNotifier(found)
		if numbered {
			if hooks != nil && hooks.afterFeedNumber != nil {
				hooks.afterFeedNumber()
			}
			next = c.indexShards(ms)
		}
		return next, nil
	}
	c.mu.Lock()
	found := c.reportReplacedLocked(ms)
	if !wait {
		if w != nil {
			if _, err := c.logItems(w, ms, batch, batchSeq); err != nil {
				c.publishDueLocked()
				c.mu.Unlock()
				c.wakeNotifier(found)
				return never, err
			}
		}
		c.putItems(ms)
		next = c.indexItemsLocked(ms)
		c.mu.Unlock()
		c.wakeNotifier(found)
		return next, nil
	}
	ticket, err := c.logItems(w, ms, batch, batchSeq)
	if err != nil {
		c.publishDueLocked()
		c.mu.Unlock()
		c.wakeNotifier(found)
		return never, err
	}
	if hooks != nil && hooks.afterLogItems != nil {
		hooks.afterLogItems()
	}
	p := c.newPendingChangeLocked(ticket, ms)
	c.logPassedLocked(p)
	c.mu.feed.pending = append(c.mu.feed.pending, p)
	c.mu.Unlock()
	werr := w.wait(ticket)
	c.mu.Lock()
	c.applyPendingLocked()
	made, next := p.made, p.next
	if p.done {
		c.freePendingChangeLocked(p)
	}
	c.mu.Unlock()
	c.wakeNotifier(found)
	if !made {
		if werr == nil {
			werr = w.failure() // the log failed after the wait: it cannot have
		}
		return never, werr
	}
	return next, nil
}

// recauseReportedLocked makes each change whose old version the expiry
// watch has looked past since the change was decided (under its shard's
// lock, at an instant before the expiry, from another goroutine that held
// c.mu meanwhile) the change the item's state now calls for: a
// replace of it a create, a delete of it a purge (no change in the feed),
// so that the feed never shows an item changed after its expiry as if it
// were still there. The old version stays in the expiry index until the
// change is made (or numbered: the watch makes a numbered change in the
// index before it looks), so the watch's front having passed it means it
// was reported. The watch can have reported a version live at the
// change's instant only in a look through a later instant (watch.scan),
// which the usual change, with no look since its decision, need not read
// its old version to rule out. The caller holds c.mu.
func (c *Container) recauseReportedLocked(ms []mutation) {
	if !c.mu.watch.on {
		return
	}
	scan := c.mu.watch.scan
	for i := range ms {
		m := &ms[i]
		if m.old == "" || m.now >= scan || (m.cause != causeReplace && m.cause != causeDelete) || !c.passedLocked(m.old) {
			continue
		}
		if m.cause == causeReplace {
			m.cause = causeCreate
		} else {
			m.cause = causePurge
		}
	}
}

// numberLocked numbers in-memory item changes to a container with a
// change feed, all in one shard (a single write, or the reaper's purges),
// and leaves their shard's expiry index to the caller, who changes it
// (indexShards) once it has let go of c.mu, so that the B-tree's work
// runs outside it, in one hold of the shard's expiryMu. It reports false,
// having done nothing, where that cannot be: the container keeps other
// indexes, which must agree with the expiry index under c.mu, or more
// than one change writes a version or removes one the watch may still read.
//
// An old version behind the watch's front, or in neither tree, is one the
// watch never reads again: it leaves the index whenever the caller gets to
// it (the reaper's purges, whose expiries the watch reported). The others
// must be out of the watch's sight exactly when the feed has their
// change: an old version not after (the watch would find it expire after
// its replace or delete), a new version not before (its expiry would come
// before its write), nor after the watch has looked past its place (its
// expiry would never be found). So the change that has one becomes its
// shard's numbered change here, after its entry, and whoever makes it in
// the index does so under the shard's expiryMu: the writer (indexShards), or
// the watch, which makes every numbered change (addNumberedLocked) before
// it reads the index, holding c.mu. Every read of the watch thus sees
// every change numbered before it and none numbered after, whatever the
// clock does meanwhile. A version whose place the watch had passed before
// it was numbered (its write was decided before a feed reader's catch-up)
// is reported here, as indexItemsLocked does. The caller holds c.mu
// and the changes' shard lock.
func (c *Container) numberLocked(ms []mutation) bool {
	x := &c.mu
	if c.hasIndexesLocked() {
		return false
	}
	var numbered *mutation
	for i := range ms {
		m := &ms[i]
		if m.rec != "" || (m.old != "" && !c.behindWatchLocked(m.old)) {
			if numbered != nil {
				return false // one numbered change a shard
			}
			numbered = m
		}
	}
	for i := range ms {
		if m := &ms[i]; m.cause != causePurge {
			x.feed.history.add(m.cause.changeKind(), m.now, m.changed(), m.old, m.h)
		}
	}
	if m := numbered; m != nil {
		if x.watch.on {
			if m.rec != "" {
				if m.now < x.watch.scan && c.passedLocked(m.rec) {
					c.reportPassedLocked(m.rec, false) // as in indexItemsLocked
				}
				c.watchAddedLocked(c.rule.expiresAt(m.rec.ttl(), m.rec.written()))
			}
			x.watch.numbered |= 1 << m.sh.no
		}
		m.sh.expiry.numbered, m.numbered = numberedChange{old: m.old, rec: m.rec}, true
	}
	if x.watch.on {
		c.publishDueLocked()
	}
	return true
}

// behindWatchLocked reports whether the expiry watch never reads rec's
// entry again: it is at or behind the watch's front, or in neither tree of
// the expiry index (ttl -1). The caller holds c.mu.
func (c *Container) behindWatchLocked(rec record) bool {
	_, _, ok := entryFor(rec)
	return !ok || c.passedLocked(rec)
}

// indexShared makes item changes, already made in the id tables, in the
// indexes under one hold of c.mu, having first found the expiries the
// changes replace (reportReplacedLocked), and returns the earliest expiry
// they bring about.
func (c *Container) indexShared(ms []mutation) (next int64) {
	c.mu.Lock()
	found := c.reportReplacedLocked(ms)
	next = c.indexItemsLocked(ms)
	c.mu.Unlock()
	c.wakeNotifier(found)
	return next
}

// purgesOnly reports whether every change in ms is a purge.
func purgesOnly(ms []mutation) bool {
	for i := range ms {
		if ms[i].cause != causePurge {
			return false
		}
	}
	return true
}

// pendingChange is a change to a container with a change feed that is
// logged and waits for the log to keep it (applyItems).
type pendingChange struct {
	ms     []mutation
	one    [1]mutation // ms's storage for a single change
	ticket uint64
	made   bool  // applied, by whoever held c.mu
	done   bool  // out of the queue (made, or never to be): its writer may free it
	next   int64 // the earliest expiry it brought about
}

// newPendingChangeLocked returns a pending change of ms, logged with
// ticket, recycled from those whose writers saw them leave the queue
// (mu.feed.spare), so that a write to a durable container with a change feed
// allocates none: a copy, as the queue must not keep ms, which is the
// caller's (often on its stack); one change is copied into the
// pendingChange itself. The caller holds c.mu.
func (c *Container) newPendingChangeLocked(ticket uint64, ms []mutation) *pendingChange {
	var p *pendingChange
	if n := len(c.mu.feed.spare); n > 0 {
		p = c.mu.feed.spare[n-1]
		c.mu.feed.spare[n-1] = nil
		c.mu.feed.spare = c.mu.feed.spare[:n-1]
	} else {
		p = new(pendingChange)
	}
	p.ticket = ticket
	if len(ms) == 1 {
		p.one[0] = ms[0]
		p.ms = p.one[:]
	} else {
		p.ms = slices.Clone(ms)
	}
	return p
}

// freePendingChangeLocked recycles p, which has left the queue: nothing
// else refers to it. The spares are as many as the writers that waited at
// once. The caller holds c.mu.
func (c *Container) freePendingChangeLocked(p *pendingChange) {
	*p = pendingChange{}
	c.mu.feed.spare = append(c.mu.feed.spare, p)
}

// applyPendingLocked makes the container's pending changes that the log
// holds durably, oldest first, and drops those it never will (the log has
// failed). The changes' writers hold their shards' locks until they see
// theirs made, so this may change their id tables for them. The caller
// holds c.mu.
func (c *Container) applyPendingLocked() {
	q := c.mu.feed.pending
	if len(q) == 0 {
		return
	}
	durable, lost, failed := c.store.wal.durable()
	i := 0
	for ; i < len(q) && q[i].ticket <= durable; i++ {
		q[i].done = true
		if lostIn(lost, q[i].ticket) != nil {
			continue // refused by a failure the log has healed since: never made
		}
		c.putItems(q[i].ms)
		q[i].next = c.indexItemsLocked(q[i].ms)
		q[i].made = true
	}
	if failed != nil {
		for _, p := range q[i:] {
			p.done = true
		}
		i = len(q) // the rest are never made
	}
	n := copy(q, q[i:])
	clear(q[n:])
	c.mu.feed.pending = q[:n]
}

// settlePendingLocked waits, holding c.mu, until the log holds the
// container's pending changes durably (or has failed), and applies them:
// whatever appends to the change feed outside applyItems (the expiries
// found) does so first, so that the feed's order stays the log's.
func (c *Container) settlePendingLocked() {
	q := c.mu.feed.pending
	if len(q) == 0 {
		return
	}
	_ = c.store.wal.wait(q[len(q)-1].ticket) // a failure drops them
	c.applyPendingLocked()
}

// reportReplacedLocked finds the expiries up to each expired version that
// the changes replace or remove, if the expiry watch has not reported it
// yet, and then recauses the changes whose old version the watch has
// looked past since they were decided (recauseReportedLocked). It returns
// how many expiries it found. The caller holds c.mu.
func (c *Container) reportReplacedLocked(ms []mutation) (found int) {
	if now := ms[0].now; now >= c.watchDue.Load() {
		for i := range ms {
			if old := ms[i].old; old != "" && !c.rule.live(old, now) {
				found += c.reportThroughLocked(old, now)
			}
		}
	}
	c.recauseReportedLocked(ms)
	return found
}

// indexItemsLocked makes item changes, already made in the id tables, in
// the expiry index, the secondary indexes, the index builds and the change
// feed. It returns the earliest expiry they bring about. The caller holds
// c.mu.
func (c *Container) indexItemsLocked(ms []mutation) (next int64) {
	next = c.indexShards(ms)
	x := &c.mu
	if c.hasIndexesLocked() {
		for i := range ms {
			m := &ms[i]
			for _, ix := range x.indexes.kinds() {
				ix.itemChanged(m.old, m.rec)
			}
			c.logForBuildsLocked(m.old, m.rec)
		}
	}
	if feed := x.feed.history; feed != nil {
		for i := range ms {
			if m := &ms[i]; m.cause != causePurge {
				feed.add(m.cause.changeKind(), m.now, m.changed(), m.old, m.h)
			}
		}
	}
	if x.watch.on {
		// A version written at an instant the watch has since looked past
		// its expiry (the write was decided before a feed reader's
		// catch-up and is made after it) lands behind the front, where
		// the watch never looks again: its expiry is reported now, after
		// its write. Its expiry is after its write, so only a write
		// decided before the watch's latest look (watch.scan) can.
		scan := x.watch.scan
		for i := range ms {
			if m := &ms[i]; m.passedLogged || (m.rec != "" && m.now < scan && c.passedLocked(m.rec)) {
				c.reportPassedLocked(m.rec, m.passedLogged)
			}
		}
		c.watchAddedLocked(next)
		c.publishDueLocked()
	}
	return next
}

// indexShards makes item changes, already made in the id tables, in their
// shards' expiry indexes, each under its shard's expiryMu, and counts the
// purges. It returns the earliest expiry they bring about. The caller
// holds the changes' shard locks.
func (c *Container) indexShards(ms []mutation) (next int64) {
	next = never
	purged := int64(0)
	var held *shard // whose expiryMu is held
	for i := range ms {
		m := &ms[i]
		if m.sh != held {
			if held != nil {
				held.expiryMu.Unlock()
			}
			held = m.sh
			held.expiryMu.Lock()
		}
		if m.numbered {
			held.expiry.addNumbered() // unless the watch has
		} else {
			if m.old != "" {
				held.expiry.remove(m.old, m.cause == causePurge)
			}
			if m.rec != "" {
				held.expiry.add(m.rec)
			}
		}
		if m.rec != "" {
			next = min(next, c.rule.expiresAt(m.rec.ttl(), m.rec.written()))
		}
		if m.cause == causePurge {
			purged++
		}
	}
	if held != nil {
		held.expiryMu.Unlock()
	}
	if purged > 0 {
		c.purged.Add(purged)
	}
	return next
}

// updateSharedLocked sets shared from what the container has. The caller
// holds c.mu; where shared may rise, it also holds every shard lock, or
// is about to scan every shard under its lock (see the locking note).
func (c *Container) updateSharedLocked() {
	c.shared.Store(c.mu.feed.history != nil || c.mu.watch.on || c.hasIndexesLocked())
}

// hasIndexesLocked reports whether a write must keep indexes beside the
// expiry index: secondary, composite, vector, full-text, spatial or position
// indexes, or one being built. The caller holds c.mu.
func (c *Container) hasIndexesLocked() bool { return c.mu.indexes.any() }

// putItems makes the changes in the shards' id tables, and in a store of
// several write regions in their tombstones. A purge's old version, which
// the reaper found by its identity (idTable.holds) under the shard lock
// the caller still holds, is removed by it, without reading it.
func (c *Container) putItems(ms []mutation) {
	multi := c.multiWrite()
	for i := range ms {
		m := &ms[i]
		switch {
		case m.rec != "":
			m.sh.items.putAt(m.slot-1, m.h, m.rec)
			m.sh.unbury(m.rec)
		case m.cause == causePurge:
			if m.sh.items.removeRecord(m.h, m.old) && multi {
				m.sh.bury(m.old)
			}
		default:
			m.sh.items.remove(m.old.pk(), m.old.id(), m.h)
			if multi {
				m.sh.bury(m.old)
			}
		}
	}
}

// logItems appends item changes to the write-ahead log: a batch's as one
// record, other changes (the reaper purges several at once) one by one.
func (c *Container) logItems(w *wal, ms []mutation, batch bool, batchSeq uint64) (ticket uint64, err error) {
	if batch {
		return w.addBatch(c.id, batchSeq, ms, c.mu.feed.history != nil)
	}
	for i := range ms {
		if ticket, err = c.log(w, &ms[i]); err != nil {
			return 0, err
		}
	}
	return ticket, nil
}

// changeKind is the change feed's name for a change with this cause.
func (k cause) changeKind() changeKind {
	switch k {
	case causeCreate:
		return changeCreate
	case causeReplace:
		return changeReplace
	}
	return changeDelete
}

// changed returns the version a change feed entry holds: the one written,
// or for a removal the one removed.
func (m *mutation) changed() record {
	if m.rec != "" {
		return m.rec
	}
	return m.old
}

// log appends a decided change to the write-ahead log w (wal.go) and
// returns its ticket.
func (c *Container) log(w *wal, m *mutation) (uint64, error) {
	switch m.cause {
	case causeSettings:
		return w.addContainer(frameSettings, m.seq, m.now, propsJSON(*m.props))
	case causeDrop:
		return w.addContainer(frameDrop, c.created, m.now, []byte(c.id))
	}
	if c.mu.feed.history != nil && m.cause != causePurge {
		return w.addFeedChange(c.id, m)
	}
	if m.rec != "" {
		return w.addPut(c.id, m.rec)
	}
	return w.addRemove(c.id, m.cause, m.old.pk(), m.old.id())
}

// lockAll takes every shard lock of the container, in order.
func (c *Container) lockAll() {
	for i := range c.shards {
		c.shards[i].mu.Lock()
	}
}

// unlockAll lets go of every shard lock.
func (c *Container) unlockAll() {
	for i := range c.shards {
		c.shards[i].mu.Unlock()
	}
}
