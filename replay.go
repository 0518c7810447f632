package lethe

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The replay of each kind of frame: snapshots' container states and
// items, the log's container changes, item writes, removals and batches.

// loadState makes a container from a snapshot's 'K' frame.
func (r *replayer) loadState(p []byte) error {
	d := decoder{b: p}
	created, settingsSeq := d.uvarint(), d.uvarint()
	text := d.str()
	rule := expiryRule{def: TTL(d.varint()), finalInherit: d.varint(), finalOwn: d.varint()}
	for n := d.uvarint(); n > 0 && !d.bad; n-- {
		rule.past = append(rule.past, pastDefault{cut: d.varint(), def: TTL(d.varint())})
	}
	var positions uint64
	if r.version >= 3 {
		positions = d.uvarint()
	}
	if d.bad || len(d.b) != 0 {
		return errors.New("the container state is malformed")
	}
	c, err := r.container(created, text)
	if err != nil {
		return err
	}
	if rule.def != c.props.DefaultTimeToLive {
		return errors.New("the container state's rule does not match its properties")
	}
	c.rule, c.settingsSeq = rule, settingsSeq
	c.positions.Store(positions)
	r.maxSeq = max(r.maxSeq, created, settingsSeq)
	return nil
}

// loadFeed restores a container's change feed from a snapshot's 'F'
// frame.
func (r *replayer) loadFeed(p []byte) error {
	d := decoder{b: p}
	cid := d.str()
	created, first, next, found := d.uvarint(), d.uvarint(), d.uvarint(), d.varint()
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) || first > next || next-first != n {
		return errors.New("the change feed state is malformed")
	}
	c := r.s.containers[string(cid)]
	if c == nil || c.created != created {
		return errors.New("the change feed state belongs to no container of the snapshot")
	}
	entries := make([]feedEntry, 0, n)
	for lsn := first; lsn < next; lsn++ {
		prev, at, kind := d.uvarint(), d.varint(), changeKind(d.byte())
		var replaced uint64
		if r.version >= 5 {
			replaced = d.uvarint()
		}
		rec, ok := r.record(d.str())
		if d.bad || kind < changeCreate || kind > changeExpire || !ok || prev >= lsn || (replaced != 0 && kind != changeReplace) {
			return errors.New("a change of the change feed state is malformed")
		}
		entries = append(entries, feedEntry{lsn: lsn, prev: prev, at: at, kind: kind, rec: rec, replaced: replaced})
	}
	if len(d.b) != 0 {
		return errors.New("the change feed state is malformed")
	}
	r.foundUpTo(c, found)
	c.mu.feed.nextLSN = next
	if c.mu.feed.history == nil {
		return nil
	}
	f := newChangeFeed(c.mu.feed.history.policy, first)
	if r.version < 5 { // older snapshots rebuild it where the previous change is kept
		for i := range entries {
			if e := &entries[i]; e.kind == changeReplace && e.prev >= first {
				e.replaced = entries[e.prev-first].rec.seq()
			}
		}
	}
	for _, e := range entries {
		f.relink(c.hashOf(e.rec), e.rec, "", e.lsn) // the snapshot's prev stays
		f.push(e)
	}
	f.next = next
	f.trim()
	c.mu.feed.history = f
	return nil
}

// container makes a container from its logged properties, replacing one of
// the same id.
func (r *replayer) container(created uint64, text []byte) (*Container, error) {
	var props ContainerProperties
	if err := json.Unmarshal(text, &props); err != nil {
		return nil, fmt.Errorf("the container properties are not readable: %v", err)
	}
	props, pp, perr := normalizeProps(props)
	if perr != nil {
		return nil, fmt.Errorf("the container properties are invalid: %s", perr.Message)
	}
	c := newContainer(r.s, props, pp, r.now)
	c.created, c.settingsSeq = created, created
	r.s.containers[props.ID] = c
	r.changes++
	r.reserve(c)
	return c, nil
}

// reserve sizes c's tables for the items it is expected to hold: a
// snapshot's count of them (countPuts) while one loads, or else its
// manifest's, at most as many as the files can hold (onDisk), so that they
// do not grow again and again as they fill.
func (r *replayer) reserve(c *Container) {
	n, ok := r.counts[c.id]
	if !ok {
		n = int(min(int64(r.m.ExpectedItems(c.id, c.created)), r.onDisk/minRecordBytes))
	}
	if n <= 0 {
		return
	}
	// A shard's share is binomial: room for four standard deviations
	// above the mean keeps all but a few from growing.
	mean := float64(n) / shardCount
	per := int(mean + 4*math.Sqrt(mean) + 1)
	for i := range c.shards {
		c.shards[i].items.reserve(per)
	}
	set := r.set(c)
	for i := range set.shards {
		set.shards[i] = newEntryBuilder(per)
	}
}

// apply replays one logged change.
func (r *replayer) apply(f *frame) error {
	s := r.s
	p := f.payload
	d := decoder{b: p[1:]}
	switch p[0] {
	case frameContainer, frameSettings, frameDrop:
		seq, now, text := d.uvarint(), d.varint(), d.str()
		if d.bad || len(d.b) != 0 {
			return errors.New("the container change is malformed")
		}
		r.maxSeq = max(r.maxSeq, seq)
		switch p[0] {
		case frameContainer:
			var probe struct{ ID string }
			if err := json.Unmarshal(text, &probe); err != nil {
				return fmt.Errorf("the container properties are not readable: %v", err)
			}
			if c := s.containers[probe.ID]; c != nil && c.created == seq {
				return nil // the snapshot holds this container
			}
			c, err := r.container(seq, text)
			if err == nil {
				r.foundUpTo(c, now)
			}
			return err
		case frameDrop:
			if c := s.containers[string(text)]; c != nil && c.created == seq {
				delete(s.containers, c.id)
				r.changes++
			}
			return nil
		}
		var props ContainerProperties
		if err := json.Unmarshal(text, &props); err != nil {
			return fmt.Errorf("the container properties are not readable: %v", err)
		}
		c := s.containers[props.ID]
		if c == nil || seq <= c.settingsSeq {
			return nil
		}
		props, _, perr := normalizeProps(props)
		if perr != nil {
			return fmt.Errorf("the container properties are invalid: %s", perr.Message)
		}
		// The expiries due under the old rule were found, and logged,
		// before the change (findBeforeSettings): up to now under that
		// rule. Those the new rule brought about at once follow it, each
		// found through its entry only (loggedAt): a log cut short among
		// them leaves the rest for finish to find. A feed the change
		// turns on starts now, under the new rule.
		had := c.mu.feed.history != nil
		if had {
			r.foundUpTo(c, now)
		}
		if props.DefaultTimeToLive != c.rule.def {
			c.rule = c.rule.changed(props.DefaultTimeToLive, now)
		}
		c.setFeedPolicyLocked(props.ChangeFeedPolicy, now)
		if !had {
			r.foundUpTo(c, now)
		}
		c.props, c.settingsSeq = props, seq
		replaceBudget(&c.own, props.Throughput, props.AutoscaleMaxThroughput, r.now)
		return nil
	case framePut:
		return r.applyPut(f)
	case frameRemove:
		cid := d.str()
		_ = d.byte() // the cause
		pk := d.str()
		if d.bad {
			return errors.New("the item removal is malformed")
		}
		c := s.containers[string(cid)]
		if c == nil {
			return nil
		}
		r.remove(c, string(pk), string(d.b))
		return nil
	case frameBatch:
		return r.applyBatch(&d)
	case framePutFeed, frameRemoveFeed, frameExpire:
		return r.applyFeed(p[0], &d)
	}
	return fmt.Errorf("unknown frame kind %q", p[0])
}

// applyPut replays an item write, decoded by frames.
func (r *replayer) applyPut(f *frame) error {
	if f.rec == "" {
		return errors.New("the item write is malformed")
	}
	c := f.c // as prefetch found it, if no container was made or dropped since
	if c == nil || r.changes != r.prefetched {
		if c = r.s.containers[string(f.cid)]; c == nil {
			return nil
		}
	}
	if tag := f.rec.etag(); tag > r.maxTag {
		r.maxTag = tag
	}
	if c == f.c {
		r.putIn(c, f.si, f.h, f.rec)
	} else {
		r.put(c, f.rec)
	}
	return nil
}

// sawSeqs folds the highest ETag of the item writes replayed into maxSeq.
func (r *replayer) sawSeqs() {
	if r.maxTag != "" {
		seq, _ := strconv.ParseUint(r.maxTag, 16, 64) // checked as it was read (wellFormed)
		r.maxSeq = max(r.maxSeq, seq)
	}
}

// applyBatch replays a transactional batch's frame (after its kind byte):
// every change is read and checked before any is made, so a batch is
// replayed whole or not at all.
func (r *replayer) applyBatch(d *decoder) error {
	cid := d.str()
	seq, n := d.uvarint(), d.uvarint()
	if d.bad || n > uint64(len(d.b)) {
		return errors.New("the transactional batch is malformed")
	}
	type change struct {
		rec     record // the item written, or "" for a removal of (pk, id)
		pk, id  string
		removed bool
		kind    changeKind // for a change feed: what the change was (0: none)
		at      int64      // and when
	}
	changes := make([]change, 0, n)
	for range n {
		switch d.byte() {
		case framePut:
			rec, ok := r.record(d.str())
			if d.bad || !ok {
				return errors.New("an item write in the transactional batch is malformed")
			}
			r.maxSeq = max(r.maxSeq, rec.seq())
			changes = append(changes, change{rec: rec})
		case frameRemove:
			_ = d.byte() // the cause
			pk, id := d.str(), d.str()
			if d.bad {
				return errors.New("an item removal in the transactional batch is malformed")
			}
			changes = append(changes, change{pk: string(pk), id: string(id), removed: true})
		case framePutFeed:
			kind := changeKind(d.byte())
			rec, ok := r.record(d.str())
			if d.bad || !ok || (kind != changeCreate && kind != changeReplace) {
				return errors.New("an item write in the transactional batch is malformed")
			}
			r.maxSeq = max(r.maxSeq, rec.seq())
			changes = append(changes, change{rec: rec, kind: kind, at: rec.written()})
		case frameRemoveFeed:
			why, now := cause(d.byte()), d.varint()
			old, ok := r.record(d.str())
			if d.bad || !ok {
				return errors.New("an item removal in the transactional batch is malformed")
			}
			ch := change{rec: old, pk: old.pk(), id: old.id(), removed: true, at: now}
			if why != causePurge {
				ch.kind = changeDelete
			}
			changes = append(changes, ch)
		default:
			return errors.New("the transactional batch holds a change of an unknown kind")
		}
	}
	if d.bad || len(d.b) != 0 {
		return errors.New("the transactional batch is malformed")
	}
	r.maxSeq = max(r.maxSeq, seq)
	c := r.s.containers[string(cid)]
	if c == nil {
		return nil
	}
	for _, ch := range changes {
		var old record // the version a write replaces, for the feed's entry
		if ch.removed {
			r.remove(c, ch.pk, ch.id)
		} else {
			old = r.put(c, ch.rec)
		}
		if f := c.mu.feed.history; f != nil && ch.kind != 0 {
			f.add(ch.kind, ch.at, ch.rec, old, c.hashOf(ch.rec))
		}
		if !ch.removed && ch.kind != 0 && ch.at < r.foundMax {
			r.owePassed(c, ch.rec)
		}
	}
	return nil
}

// put replays an item write: rec replaces the item's version in c, and
// c's positions go on after its. It returns the version replaced ("":
// none), which the change feed's entry names.
func (r *replayer) put(c *Container, rec record) (old record) {
	i, h := c.shardIndex(rec.pk(), rec.id())
	return r.putIn(c, i, h, rec)
}

// putIn is put in c's shard of index i, with the hash bits h of rec's
// item.
func (r *replayer) putIn(c *Container, i int, h uint32, rec record) (old record) {
	set := r.set(c)
	if old = c.shards[i].items.exchange(h, rec); old != "" {
		set.gone(old, i)
	}
	c.shards[i].unbury(rec)
	set.shards[i].add(rec)
	if p := rec.pos(); p > c.positions.Load() {
		c.positions.Store(p)
	} else if p == 0 {
		r.unplaced = true
	}
	return old
}

// remove replays an item's removal from c.
func (r *replayer) remove(c *Container, pk, id string) {
	i, h := c.shardIndex(pk, id)
	if old := c.shards[i].items.take(pk, id, h); old != "" {
		r.set(c).gone(old, i)
		if c.multiWrite() {
			c.shards[i].bury(old)
		}
	}
}
