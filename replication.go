package lethe

import (
	"context"
	"strconv"
	"time"
)

// Replication: a container's replica in another store (another region of
// an account) reads the container's changes with ReplicaChanges and makes
// each with ApplyReplicaChange, which stores the version exactly as the
// origin wrote it: the same instant (so the same "_ts" and the same
// expiry, whatever the lag) and the same ETag.

// ReplicaChangeKind says what a replica change did.
type ReplicaChangeKind uint8

const (
	// ReplicaWrite is a create, replace, upsert or patch: Item is the new
	// version.
	ReplicaWrite ReplicaChangeKind = iota + 1
	// ReplicaDelete is a delete by a client (or a script): Item is nil.
	ReplicaDelete
	// ReplicaExpiry is the item's expiry: replicas decide expiry
	// themselves and skip it.
	ReplicaExpiry
)

// ReplicaChange is one change to a container's items as another replica
// applies it.
type ReplicaChange struct {
	LSN          uint64 // its number in the origin container's change feed
	Kind         ReplicaChangeKind
	PartitionKey PartitionKey
	ID           string
	// Item is a write's document as stored (system properties "_ts" and
	// "_etag" may be present; ApplyReplicaChange ignores them).
	Item []byte
	// Written is the change's instant by the origin store's clock, at full
	// precision: a write's _ts and the instant its expiry counts from.
	Written time.Time
	// ETag is the version's ETag: a write's new one, a delete's removed one.
	ETag string
	// Replaces is the ETag of the version this change replaced at its
	// origin; "" when there was none (a create): it lets a replica detect
	// concurrent writes.
	Replaces string
}

// ReplicaChanges returns, in order, up to max changes of the container
// (DefaultPageSize if max is 0 or less) made after the change numbered
// after (0: from the oldest the feed keeps), and the LSN of the last change
// it looked at. A position the feed has forgotten fails with an *Error
// wrapping ErrChangeFeedTrimmed (the replica must then be copied afresh).
// It needs the container's change feed (ChangeFeedPolicy; cosmosrest gives
// every container one), and charges nothing.
func (c *Container) ReplicaChanges(after uint64, max int) ([]ReplicaChange, uint64, error) {
	const op = "ReplicaChanges"
	if err := c.check(nil, op, ""); err != nil {
		return nil, after, err
	}
	if max <= 0 {
		max = DefaultPageSize
	}
	max = min(max, feedScanStep)
	c.mu.Lock()
	f := c.mu.feed.history
	if f == nil {
		c.mu.Unlock()
		return nil, after, withContext(badRequest("the container keeps no change feed: give it a ChangeFeedPolicy"), op, c.id, "")
	}
	if after >= f.next {
		next := f.next
		c.mu.Unlock()
		return nil, after, withContext(badRequest("the replica's position %d is ahead of the change feed (the next change is %d)", after, next), op, c.id, "")
	}
	if after != 0 && after+1 < f.first {
		first := f.first
		c.mu.Unlock()
		return nil, after, withContext(&Error{StatusCode: statusBadRequest, Err: ErrChangeFeedTrimmed,
			Message: "the change feed no longer holds the changes after lsn " + strconv.FormatUint(after, 10) +
				" (the oldest it holds is " + strconv.FormatUint(first, 10) + "); copy the replica afresh"}, op, c.id, "")
	}
	type change struct {
		e        feedEntry
		replaces string
	}
	page := make([]change, 0, min(max, f.retained()))
	last := after
	f.scan(after, func(e *feedEntry) bool {
		if len(page) == max {
			return false
		}
		ch := change{e: *e}
		switch {
		case e.kind == changeDelete || e.kind == changeExpire:
			ch.replaces = e.rec.etag()
		case e.kind == changeReplace && e.prev >= f.first && e.prev != 0:
			ch.replaces = f.entry(e.prev).rec.etag()
		}
		page = append(page, ch)
		last = e.lsn
		return true
	})
	c.mu.Unlock()

	out := make([]ReplicaChange, len(page))
	for i := range page {
		e := &page[i].e
		r := &out[i]
		r.LSN = e.lsn
		r.PartitionKey = PartitionKey{enc: e.rec.pk(), n: uint8(len(c.pkPaths.segs))}
		r.ID = e.rec.id()
		r.Written = time.Unix(0, e.at)
		r.ETag = e.rec.etag()
		r.Replaces = page[i].replaces
		switch e.kind {
		case changeDelete:
			r.Kind = ReplicaDelete
		case changeExpire:
			r.Kind = ReplicaExpiry
		default:
			r.Kind = ReplicaWrite
			r.Item = e.rec.jsonBytes()
		}
	}
	return out, last, nil
}

// ApplyReplicaChange applies a change made in another replica of the
// container through the one write path (log, feed, indexes, TTL, unique
// keys as any write): a write is stored with the change's Written instant
// as its _ts and expiry origin and with its ETag; a delete removes the
// item; an expiry is skipped. The store's write sequence moves past the
// ETag, so that its own later writes get higher ones. A change the replica
// already holds, or holds a later version than (a higher ETag), is a no-op,
// so changes may be applied again after a crash; so is a delete of a
// missing item. An item already expired on arrival is stored (and expires
// in the replica's feed as any) but never visible. It charges no request
// units and is never throttled. Bad input (no id, bad JSON, a partition
// key that does not match, a malformed ETag) is a typed *Error and changes
// nothing.
func (c *Container) ApplyReplicaChange(ctx context.Context, ch ReplicaChange) error {
	const op = "ApplyReplicaChange"
	if err := c.check(ctx, op, ch.ID); err != nil {
		return err
	}
	r, e := c.prepareReplica(&ch)
	if e != nil {
		return withContext(e, op, c.id, ch.ID)
	}
	if r == nil {
		return nil // an expiry
	}
	return c.commitReplica(op, r)
}

// replicaWrite is a replica change checked and parsed, ready to commit.
type replicaWrite struct {
	del     bool
	pk      PartitionKey
	id      string
	doc     []byte
	p       parsedItem
	written int64
	seq     uint64
}

// prepareReplica checks a replica change and parses its document, outside
// any lock. It returns nil for an expiry, which replicas skip.
func (c *Container) prepareReplica(ch *ReplicaChange) (*replicaWrite, *Error) {
	switch ch.Kind {
	case ReplicaWrite, ReplicaDelete:
	case ReplicaExpiry:
		return nil, nil
	default:
		return nil, badRequest("the replica change's kind %d is none of ReplicaWrite, ReplicaDelete, ReplicaExpiry", ch.Kind)
	}
	if err := c.pkPaths.check(ch.PartitionKey, false); err != nil {
		return nil, err
	}
	if err := validateItemID(ch.ID); err != nil {
		return nil, err
	}
	seq, ok := parseETag(ch.ETag)
	if !ok {
		return nil, badRequest("the replica change's ETag %q is not 16 lower-case hexadecimal digits", clip(ch.ETag))
	}
	if ch.Replaces != "" {
		if _, ok := parseETag(ch.Replaces); !ok {
			return nil, badRequest("the replica change's Replaces %q is not 16 lower-case hexadecimal digits", clip(ch.Replaces))
		}
	}
	if ch.Written.IsZero() {
		return nil, badRequest("the replica change has no Written instant")
	}
	r := &replicaWrite{del: ch.Kind == ReplicaDelete, pk: ch.PartitionKey, id: ch.ID, written: unixNanos(ch.Written), seq: seq}
	if r.del {
		return r, nil
	}
	p, err := parseItem(ch.Item)
	if err != nil {
		return nil, err
	}
	if p.id != ch.ID {
		return nil, badRequest("the replica change's item has the id %q, not the change's %q", clip(p.id), clip(ch.ID))
	}
	if len(c.pkPaths.segs) > 0 {
		same, err := c.pkPaths.matches(ch.Item, &p, ch.PartitionKey.enc)
		if err != nil {
			return nil, err
		}
		if !same {
			return nil, badRequest(msgPKMismatch)
		}
	}
	r.doc, r.p = ch.Item, p
	return r, nil
}

// parseETag reads an ETag as the store writes them, 16 lower-case
// hexadecimal digits of a write sequence number (not 0).
func parseETag(s string) (uint64, bool) {
	if len(s) != etagLen {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			n = n<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return n, n != 0
}

// raiseSeq moves the store's write sequence to at least seq, so that its
// next write gets a higher one.
func (s *Store) raiseSeq(seq uint64) {
	for cur := s.seq.Load(); cur < seq && !s.seq.CompareAndSwap(cur, seq); cur = s.seq.Load() {
	}
}
