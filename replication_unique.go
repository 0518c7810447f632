package lethe

import "slices"

// Unique-key conflicts between write regions. Two regions that each
// create (or replace) an item, of different ids, with the same values at
// one of the container's unique keys in one partition each accept their
// own: the check of the unique index saw nothing in either. Under a
// ConflictRule (ApplyReplicaChangeResolved), a replica change whose
// version would share those values with another live item of the replica
// is a conflict, an insert conflict as Cosmos DB calls it, decided by the
// order the rule gives versions (generation, then the rule's path, then
// instant and ETag), so that every replica keeps the same winner whatever
// the order changes arrive in:
//
//   - the change's version is after every item it collides with: those
//     are removed (deleted, in the replica's feed) and the change made;
//   - else the change loses: the replica makes it and removes it again,
//     so its feed holds the loser's delete, which reaches the replicas
//     that made it (they may have held it before its winner) and removes
//     it there. A replica that never shows the loser's removal could keep
//     it where another replaced the winner by a version that no longer
//     collides.
//
// Both are one step of the write path (applyBatch: one record of a
// durable store's log), taken with the container's batchMu and uniqueMu
// held for writing and the shard locks of every item it changes, so that
// a crash, a query or a unique key check never sees half of it. The
// collision is found in the usual step (commitReplicaShard, which holds
// uniqueMu for reading and claims the version's values as a single write
// does, so that no write checked meanwhile takes them), and made in this
// one only then: a container without a unique key policy never checks,
// and one with it pays one look at its unique index per write.
//
// Without a rule (ApplyReplicaChange) nothing is checked: the replica
// keeps both items, and its unique index holds both under the values (an
// entry holds every version that has them): no write of those values to
// another item passes its check while both live, and each item's own
// changes and removal keep the index as they do any.

// uniqueCollisions returns the items of the replica, live at now, other
// than the change's, that share the values of one of the container's
// unique keys with the change's version r.rec (none if that is not live at
// now: an expired version holds no unique value). The caller holds
// c.uniqueMu for writing (so no write has claimed values), not c.mu.
func (c *Container) uniqueCollisions(r *replicaWrite, now int64) (held []record) {
	if !c.rule.live(r.rec, now) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.mu.indexes.unique
	if u == nil {
		return nil // the container was deleted
	}
	for k := range u.keys {
		u.buf = u.entry(u.buf[:0], k, r.pk.enc, r.doc)
		for _, rec := range u.held[string(u.buf)] {
			if rec.id() != r.id && c.rule.live(rec, now) && !slices.Contains(held, rec) {
				held = append(held, rec)
			}
		}
	}
	return held
}

// commitReplicaColliding makes a replica write whose version collides on a
// unique key (see the note above): it decides the change again, holding
// c.batchMu and c.uniqueMu for writing, so no write of the container runs
// meanwhile but the reaper's purges, and the shard locks of the change's
// item and of the items it collides with, and makes the change with the
// removals of the losers in one step.
func (c *Container) commitReplicaColliding(op string, r *replicaWrite, rule *conflictRule) (ConflictOutcome, error) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	c.uniqueMu.Lock()
	defer c.uniqueMu.Unlock()
	now := c.store.clock.now()
	// The collisions by r's document, whose version (r.rec) commitReplicaShard
	// built when it found one. Purges may take some away meanwhile (checked
	// under the locks), and nothing else changes them.
	held := c.uniqueCollisions(r, now)
	no, h := c.shardIndex(r.pk.enc, r.id)
	var used [shardCount]bool
	used[no] = true
	for _, rec := range held {
		i, _ := c.shardIndex(rec.pk(), rec.id())
		used[i] = true
	}
	shards := c.lockShards(&used, nil)
	defer c.unlockShards(shards)
	if c.deleted.Load() {
		return ConflictOutcome{}, withContext(&Error{StatusCode: statusNotFound, Message: msgNotFound}, op, c.id, r.id)
	}
	out, d := c.decideReplicaLocked(r, rule, &c.shards[no], h)
	if !out.Applied {
		return out, nil
	}
	ms := []mutation{c.replicaMutation(r, d)}
	removedAt := max(now, r.written)
	wins := true
	for _, rec := range held {
		sh, h := c.shardFor(rec.pk(), rec.id())
		if sh.items.get(rec.pk(), rec.id(), h) != rec || !c.rule.live(rec, now) {
			continue // purged, or expired, since it was found
		}
		out.Colliding = append(out.Colliding, rec.jsonBytes())
		wins = wins && replicaAfter(rule, r.rec, rec)
		ms = append(ms, mutation{cause: causeDelete, now: removedAt, sh: sh, h: h, old: rec})
	}
	switch {
	case out.Colliding == nil: // nothing left to collide with
		ms = ms[:1]
	case wins:
		out.Conflict = true
	default:
		out.Conflict, out.Applied, out.Loser = true, false, r.rec.jsonBytes()
		ms = append(ms[:1], mutation{cause: causeDelete, now: removedAt, sh: d.sh, h: d.h, old: r.rec})
	}
	c.store.raiseSeq(r.seq)
	c.batches.Add(1) // under batchMu: item-order pages end before what this step changes
	next, err := c.applyBatch(ms, r.seq)
	if err != nil {
		return ConflictOutcome{}, storageError(err, op, c.id, r.id)
	}
	c.store.reaper.notify(next)
	return out, nil
}

// replicaAfter reports whether version a orders after version b (of
// another item) in the order rule gives versions: by generation, then by
// the rule's key.
func replicaAfter(rule *conflictRule, a, b record) bool {
	if ga, gb := seqGen(a.seq()), seqGen(b.seq()); ga != gb {
		return ga > gb
	}
	return rule.key(a).after(rule.key(b))
}
