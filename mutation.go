package lethe

import "unsafe"

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
// (Container.purgeOne), Container.Replace and Store.DeleteContainer; a
// transactional batch decides all its operations under the locks of every
// shard it touches and applies their net item changes together with
// applyBatch, the all-or-none variant of apply. Both make item changes
// through applyItems, the one place that updates the shards' id tables and
// the expiry index. What must see every change (the write-ahead log, a
// change feed, secondary indexes) hooks into apply and applyBatch, and gets
// the cause with each change. A durable store's log is the first: apply
// appends the change to it before making it (applyBatch appends a batch's
// changes as one record), and the caller waits for the returned ticket
// after letting go of its locks.

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

	// A settings change: the new properties, and the write sequence number
	// that orders it.
	props ContainerProperties
	seq   uint64

	// Set by apply: the log ticket to wait for before acknowledging the
	// change (0 in memory).
	ticket uint64
}

// apply makes a decided change. The caller holds the locks it needs: for an
// item change, the write lock of the item's shard; for a settings change or
// a drop, every shard lock. It returns the earliest expiry the change brings
// about (never if none), for the caller to tell the reaper once it has let
// go of its locks. If the change cannot be logged it returns the log's
// error and changes nothing.
func (c *Container) apply(m *mutation) (next int64, err error) {
	switch m.cause {
	case causeSettings, causeDrop:
		if w := c.store.wal; w != nil {
			if m.ticket, err = c.log(w, m); err != nil {
				return never, err
			}
		}
		if m.cause == causeDrop {
			c.drop()
			return never, nil
		}
		return c.applySettings(m), nil
	}
	next, m.ticket, err = c.applyItems(unsafe.Slice(m, 1), false, 0)
	return next, err
}

// applySettings makes a settings change. The expiries due under the old
// rule are found first, then those the new rule brings about at once (a
// shorter default TTL expires items retroactively), which happen now.
func (c *Container) applySettings(m *mutation) (next int64) {
	c.expiry.mu.Lock()
	found := c.findExpiriesLocked(m.now, true)
	if m.props.DefaultTimeToLive != c.rule.def {
		c.rule = c.rule.changed(m.props.DefaultTimeToLive, m.now)
	}
	found += c.findExpiriesLocked(m.now, true)
	c.setFeedPolicyLocked(m.props.ChangeFeedPolicy, m.now)
	c.dropIndexesLocked(m.props.IndexingPolicy)
	c.props = m.props
	c.settingsSeq = m.seq
	replaceBudget(&c.own, m.props.Throughput, m.props.AutoscaleMaxThroughput, m.now)
	c.expiry.watch.due = c.nextUnreportedLocked()
	c.publishDueLocked()
	next = c.expiry.next(&c.rule)
	c.expiry.mu.Unlock()
	c.wakeNotifier(found)
	return next
}

// drop empties a deleted container.
func (c *Container) drop() {
	c.deleted.Store(true)
	c.expiry.mu.Lock()
	c.expiry.expiryIndex = newExpiryIndex()
	c.expiry.feed = nil
	c.expiry.indexes, c.expiry.composites, c.expiry.wanted, c.expiry.building = nil, nil, nil, nil
	c.expiry.positions = nil
	c.expiry.watch = expiryWatch{}
	c.publishDueLocked()
	c.expiry.mu.Unlock()
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
// returns what apply returns, and the log ticket (0 in memory).
func (c *Container) applyBatch(ms []mutation, seq uint64) (next int64, ticket uint64, err error) {
	if len(ms) == 0 {
		return never, 0, nil
	}
	return c.applyItems(ms, true, seq)
}

// applyItems makes decided item changes (one, or a batch's: batchSeq is
// then its highest write sequence number): each record replaces its
// old version in its shard's id table (or the old one goes), and the expiry
// index follows, under one hold of its lock so that Stats sees all of the
// changes or none. When a change replaces or removes an expired version
// that the expiry watch has not reported yet, the expiries up to it are
// found first, so that the change feed and the expiry subscribers see an
// item expire before it is written again or purged. A durable store logs the
// changes before making them; a container with a change feed logs them
// under the expiry lock, so that the log holds its changes in the feed's
// order. It returns the earliest expiry the changes bring about and the
// log ticket.
func (c *Container) applyItems(ms []mutation, batch bool, batchSeq uint64) (next int64, ticket uint64, err error) {
	w := c.store.wal
	feed := c.expiry.feed // set only under every shard lock: the caller holds one
	if feed == nil {
		// Without a feed, the id tables change before the expiry lock is
		// taken: the shard locks the caller holds guard them, and the
		// container-wide lock is held for the index alone.
		if w != nil {
			if ticket, err = c.logItems(w, ms, batch, batchSeq); err != nil {
				return never, 0, err
			}
		}
		c.putItems(ms)
	}
	now := ms[0].now
	c.expiry.mu.Lock()
	found := 0
	if now >= c.watchDue.Load() {
		for i := range ms {
			if old := ms[i].old; old != "" && !c.rule.live(old, now) {
				found += c.reportThroughLocked(old, now)
			}
		}
	}
	if feed != nil {
		if w != nil {
			if ticket, err = c.logItems(w, ms, batch, batchSeq); err != nil {
				c.publishDueLocked()
				c.expiry.mu.Unlock()
				c.wakeNotifier(found)
				return never, 0, err
			}
		}
		c.putItems(ms)
	}
	next = never
	purged := int64(0)
	watching := c.expiry.watch.on
	for i := range ms {
		m := &ms[i]
		if m.old != "" {
			c.expiry.remove(m.old, m.cause == causePurge)
		}
		if m.rec != "" {
			c.expiry.add(m.rec)
			next = min(next, c.rule.expiresAt(m.rec.ttl(), m.rec.written()))
			if watching {
				c.watchAddedLocked(m.rec)
			}
		}
		c.expiry.indexes.update(m.old, m.rec)
		c.expiry.composites.update(m.old, m.rec)
		c.expiry.positions.change(m.old, m.rec)
		if c.expiry.building != nil {
			c.logForBuildsLocked(m.old, m.rec)
		}
		if m.cause == causePurge {
			purged++
		} else if feed != nil {
			feed.add(m.cause.changeKind(), m.now, m.changed())
		}
	}
	if watching {
		c.publishDueLocked()
	}
	c.expiry.mu.Unlock()
	if purged > 0 {
		c.purged.Add(purged)
	}
	c.wakeNotifier(found)
	return next, ticket, nil
}

// putItems makes the changes in the shards' id tables.
func (c *Container) putItems(ms []mutation) {
	for i := range ms {
		m := &ms[i]
		if m.rec != "" {
			m.sh.items.put(m.h, m.rec)
		} else {
			m.sh.items.remove(m.old.pk(), m.old.id(), m.h)
		}
	}
}

// logItems appends item changes to the write-ahead log: a batch's as one
// record, other changes (the reaper purges several at once) one by one.
func (c *Container) logItems(w *wal, ms []mutation, batch bool, batchSeq uint64) (ticket uint64, err error) {
	if batch {
		return w.addBatch(c.id, batchSeq, ms, c.expiry.feed != nil)
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
		return w.addContainer(frameSettings, m.seq, m.now, propsJSON(m.props))
	case causeDrop:
		return w.addContainer(frameDrop, c.created, m.now, []byte(c.id))
	}
	if c.expiry.feed != nil && m.cause != causePurge {
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
