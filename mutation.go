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
	if w := c.store.wal; w != nil {
		if m.ticket, err = c.log(w, m); err != nil {
			return never, err
		}
	}
	switch m.cause {
	case causeSettings:
		c.expiry.mu.Lock()
		if m.props.DefaultTimeToLive != c.rule.def {
			c.rule = c.rule.changed(m.props.DefaultTimeToLive, m.now)
		}
		c.props = m.props
		c.settingsSeq = m.seq
		c.throughput.Store(m.props.Throughput)
		c.budget.setRate(m.props.Throughput, m.now)
		next = c.expiry.next(&c.rule)
		c.expiry.mu.Unlock()
		return next, nil
	case causeDrop:
		c.deleted.Store(true)
		c.expiry.mu.Lock()
		c.expiry.expiryIndex = newExpiryIndex()
		c.expiry.mu.Unlock()
		for i := range c.shards {
			c.shards[i].items = idTable{}
		}
		return never, nil
	}

	return c.applyItems(unsafe.Slice(m, 1)), nil
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
	if w := c.store.wal; w != nil {
		if ticket, err = w.addBatch(c.id, seq, ms); err != nil {
			return never, 0, err
		}
	}
	return c.applyItems(ms), ticket, nil
}

// applyItems makes decided item changes: each record replaces its old
// version in its shard's id table (or the old one goes), and the expiry
// index follows, under one hold of its lock so that Stats sees all of the
// changes or none. It returns the earliest expiry they bring about.
func (c *Container) applyItems(ms []mutation) (next int64) {
	for i := range ms {
		m := &ms[i]
		if m.rec != "" {
			m.sh.items.put(m.h, m.rec)
		} else {
			m.sh.items.remove(m.old.pk(), m.old.id(), m.h)
		}
	}
	next = never
	purged := int64(0)
	c.expiry.mu.Lock()
	for i := range ms {
		m := &ms[i]
		if m.old != "" {
			c.expiry.remove(m.old)
		}
		if m.rec != "" {
			c.expiry.add(m.rec)
			next = min(next, c.rule.expiresAt(m.rec.ttl(), m.rec.written()))
		}
		if m.cause == causePurge {
			purged++
		}
	}
	c.expiry.mu.Unlock()
	if purged > 0 {
		c.purged.Add(purged)
	}
	return next
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
