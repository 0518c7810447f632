package lethe

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
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
	// Removed is, for a delete or an expiry, the version removed, as Item
	// is a write's (nil for a write): what a conflicts feed records of a
	// delete that lost.
	Removed []byte
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
	if err := c.check(context.Background(), op, ""); err != nil {
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
		return nil, after, c.noFeedError(op)
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
	page := make([]change, 0, min(uint64(max), f.next-1-after)) // room for what there is, not for the page asked
	last := after
	f.scan(after, func(e *feedEntry) bool {
		if len(page) == max {
			return false
		}
		ch := change{e: *e}
		switch {
		case e.kind == changeDelete || e.kind == changeExpire:
			ch.replaces = e.rec.etag()
		case e.replaced != 0:
			ch.replaces = etagOf(e.replaced)
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
			r.Removed = e.rec.jsonBytes()
		case changeExpire:
			r.Kind = ReplicaExpiry
			r.Removed = e.rec.jsonBytes()
		default:
			r.Kind = ReplicaWrite
			r.Item = e.rec.jsonBytes()
		}
	}
	return out, last, nil
}

// LastReplicaLSN returns the LSN of the container's latest change (0 if
// there is none yet): where a replica that holds every change stands, and
// ReplicaChanges after it returns nothing new. It needs the container's
// change feed, reads no change, and charges nothing.
func (c *Container) LastReplicaLSN() (uint64, error) {
	const op = "LastReplicaLSN"
	if err := c.check(context.Background(), op, ""); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.mu.feed.history
	if f == nil {
		return 0, c.noFeedError(op)
	}
	return f.next - 1, nil
}

// ApplyReplicaChange applies a change made in another replica of the
// container through the one write path (log, feed, indexes, TTL and the
// unique index as any write; unique keys are the origin's to check, and
// are not: two items that share a unique key's values, made in two
// regions, are both kept, and no other item may take those values while
// either lives; ApplyReplicaChangeResolved decides such a pair as a
// conflict): a write is stored with the change's Written instant as its
// _ts and expiry origin and with its ETag, and the replica's own feed
// numbers it at that instant; a delete removes the item; an expiry is
// skipped. The store's write sequence moves past the ETag, so that its
// own later writes get higher ones. A change the replica already holds, or
// holds a later version than (a higher ETag), is a no-op, and so are a
// delete of a missing item and a write of an item the replica's change
// feed shows deleted or expired at that version or a later one: changes
// applied again after a crash leave the replica as it was. An item
// already expired on arrival is stored (and expires in the replica's feed
// as any) but never visible. It charges no request
// units and is never throttled. Bad input (no id, bad JSON, a partition
// key that does not match, a malformed ETag) is a typed *Error and changes
// nothing.
func (c *Container) ApplyReplicaChange(ctx context.Context, ch ReplicaChange) error {
	_, err := c.applyReplica(ctx, "ApplyReplicaChange", &ch, nil)
	return err
}

// applyReplica checks and makes a replica change, resolving conflicts by
// rule (nil: ApplyReplicaChange's rules).
func (c *Container) applyReplica(ctx context.Context, op string, ch *ReplicaChange, rule *conflictRule) (ConflictOutcome, error) {
	if err := c.check(ctx, op, ch.ID); err != nil {
		return ConflictOutcome{}, err
	}
	var r replicaWrite
	skip, e := c.prepareReplica(ch, &r)
	if e != nil {
		return ConflictOutcome{}, withContext(e, op, c.id, ch.ID)
	}
	if skip {
		return ConflictOutcome{}, nil // an expiry
	}
	return c.commitReplica(op, &r, rule)
}

// replicaWrite is a replica change checked and parsed, ready to commit.
type replicaWrite struct {
	del     bool
	pk      PartitionKey
	id      string
	doc     []byte // a write's document
	p       parsedItem
	written int64
	seq     uint64
	// replaces is the ETag the change replaced at its origin.
	replaces string
	rec      record // a write's new version, built under the item's lock
}

// prepareReplica checks a replica change and parses its document into r,
// outside any lock. It reports true for an expiry, which replicas skip.
func (c *Container) prepareReplica(ch *ReplicaChange, r *replicaWrite) (skip bool, _ *Error) {
	switch ch.Kind {
	case ReplicaWrite, ReplicaDelete:
	case ReplicaExpiry:
		return true, nil
	default:
		return false, badRequest("the replica change's kind %d is none of ReplicaWrite, ReplicaDelete, ReplicaExpiry", ch.Kind)
	}
	if err := c.pkPaths.check(ch.PartitionKey, false); err != nil {
		return false, err
	}
	if err := validateItemID(ch.ID); err != nil {
		return false, err
	}
	seq, ok := parseETag(ch.ETag)
	if !ok {
		return false, badRequest("the replica change's ETag %q is not 16 lower-case hexadecimal digits", clip(ch.ETag))
	}
	if ch.Replaces != "" {
		if _, ok := parseETag(ch.Replaces); !ok {
			return false, badRequest("the replica change's Replaces %q is not 16 lower-case hexadecimal digits", clip(ch.Replaces))
		}
	}
	if ch.Written.IsZero() {
		return false, badRequest("the replica change has no Written instant")
	}
	*r = replicaWrite{del: ch.Kind == ReplicaDelete, pk: ch.PartitionKey, id: ch.ID, written: unixNanos(ch.Written), seq: seq, replaces: ch.Replaces}
	if r.del {
		if ch.Removed != nil {
			if _, err := parseItem(ch.Removed); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	p, err := parseItem(ch.Item)
	if err != nil {
		return false, err
	}
	if p.id != ch.ID {
		return false, badRequest("the replica change's item has the id %q, not the change's %q", clip(p.id), clip(ch.ID))
	}
	if len(c.pkPaths.segs) > 0 {
		same, err := c.pkPaths.matches(ch.Item, &p, ch.PartitionKey.enc)
		if err != nil {
			return false, err
		}
		if !same {
			return false, badRequest(msgPKMismatch)
		}
	}
	r.doc, r.p = ch.Item, p
	return false, nil
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

// etagOf returns the ETag of the write sequence number seq.
func etagOf(seq uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return hex.EncodeToString(b[:])
}

// nextSeq hands out the next write sequence number of something that is
// no version of an item (generation 0).
func (s *Store) nextSeq() uint64 { return s.nextVersionSeq(0) }

// nextVersionSeq hands out the next write sequence number, for a version
// of generation gen: the next one, or with Options.WriteRegions, the next
// of this store's, in all but its last genBits bits, which hold gen. So
// sequence numbers grow as they are handed out, whatever their
// generations, and no two stores give the same one.
func (s *Store) nextVersionSeq(gen uint64) uint64 {
	n := uint64(s.opts.WriteRegions)
	if n <= 1 {
		return s.seq.Add(1)
	}
	for {
		cur := s.seq.Load()
		next := cur>>genBits + 1
		next += (uint64(s.opts.WriteRegion) + n - next%n) % n
		if seq := next<<genBits | gen; s.seq.CompareAndSwap(cur, seq) {
			return seq
		}
	}
}

// A version's generation, in a store of several write regions, is the
// number of removals in its history: the deletes of versions it descends
// from, and the expiries it was created again after. A replace keeps its
// version's generation; a create after a delete or an expiry of the item
// takes the one after the removed version's. It is kept in the last genBits
// bits of the version's write sequence number (its ETag), so that every
// replica reads it from the version itself; ConflictRule orders by it.
const (
	genBits = 16
	genMax  = 1<<genBits - 1
)

// seqGen returns the generation of the version of write sequence number
// seq.
func seqGen(seq uint64) uint64 { return seq & genMax }

// newGen returns the generation of a new version of the item (pk, id) of
// shard sh whose stored version is old ("" if none; live says whether it
// is live): old's if it is live, the one after it if it has expired, else
// the one its tombstone holds (after the version removed last), 0 if the
// item has none. A store that is the only writer has no generations. The
// caller holds sh's lock.
func (c *Container) newGen(sh *shard, old record, live bool, pk, id string) uint64 {
	switch {
	case !c.multiWrite():
		return 0
	case live:
		return seqGen(old.seq())
	case old != "":
		return nextGen(old)
	}
	return sh.tomb(pk, id)
}

// nextGen returns the generation after the version rec's: that of a
// version created again after rec was removed.
func nextGen(rec record) uint64 { return min(seqGen(rec.seq())+1, genMax) }

// raiseSeq moves the store's write sequence to at least seq, so that its
// next write gets a higher one.
func (s *Store) raiseSeq(seq uint64) {
	for cur := s.seq.Load(); cur < seq && !s.seq.CompareAndSwap(cur, seq); cur = s.seq.Load() {
	}
}

// decideReplica decides what a replica change does to the item's version
// old ("" if none), of shard sh and slot hash h, and reports it; rule nil
// decides as ApplyReplicaChange does. The caller holds sh's lock.
func (c *Container) decideReplica(r *replicaWrite, sh *shard, old record, h uint32, rule *conflictRule) ConflictOutcome {
	if rule == nil {
		live := old != "" && c.rule.live(old, r.written)
		switch {
		case r.del:
			return ConflictOutcome{Applied: live && old.seq() <= r.seq}
		case old != "":
			return ConflictOutcome{Applied: old.seq() < r.seq}
		}
		// A delete or an expiry the feed keeps tells a version
		// applied again after it.
		last, ok := c.lastChange(h, r.pk.enc+r.id)
		return ConflictOutcome{Applied: !ok || last.rec.seq() < r.seq}
	}
	return c.resolve(r, sh, old, h, rule)
}

// lastChange returns the latest change of the item of slot hash h and key
// (its encoded partition key value and id) that the change feed keeps.
func (c *Container) lastChange(h uint32, key string) (feedEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var last feedEntry
	found := false
	if f := c.mu.feed.history; f != nil {
		f.itemChanges(h, key, func(e *feedEntry) bool {
			last, found = *e, true
			return false
		})
	}
	return last, found
}

// ConflictRule is how ApplyReplicaChangeResolved decides a conflict
// between concurrent changes of an item in two replicas: Cosmos DB's Last
// Writer Wins. A delete wins over every write concurrent with it (one made
// without it, in a replica that did not have it yet); a write made after a
// delete (the item created again where the delete had been made or
// applied) wins over the delete and over every write concurrent with the
// delete; of two concurrent writes otherwise, the version with the higher
// number at Path wins. Of two concurrent deletes, the item stays deleted.
// Every replica picks the same winner, so replicas that exchange their
// changes in any order converge.
//
// The order is by generation first: a version's is the number of deletes
// (and expiries created again after) in its history, which its ETag holds
// (Options.WriteRegions): a replace keeps its version's, a create after a
// delete or an expiry takes the next. A delete's is the one after its
// version's, so it is after every version of its version's generation;
// a version of a delete's generation (created again after it, or after a
// concurrent delete) is after it. Versions of one generation are then
// ordered by Path. A replica creates an item again after its delete at
// the delete's generation however long ago the delete was: it keeps a
// tombstone of every item removed (Options.WriteRegions), which its change
// feed may have forgotten.
type ConflictRule struct {
	// Path is the conflict resolution path: a property of the items that
	// holds a number ("/sortableTimestamp"). "" or "/_ts" means the
	// versions' instants, at full precision. A version without a number
	// there loses to one with; ties go to the later instant, then to the
	// higher ETag. Replicas converge on the latest version when the
	// numbers at Path grow along each item's history, as a timestamp's do.
	Path string
}

// ConflictOutcome is what ApplyReplicaChangeResolved did with a change.
type ConflictOutcome struct {
	// Conflict says the change was concurrent with the replica's version
	// of the item: it did not follow from it (ReplicaChange.Replaces names
	// another version), nor was it already applied.
	Conflict bool
	// Applied says the change was made: it followed the replica's version,
	// or won the conflict.
	Applied bool
	// Loser is the version that lost a conflict, as a read returns it
	// (with _ts and _etag): the replica's, replaced or deleted, or the
	// change's, left out (a write that lost to a delete too); for a
	// conflicts feed. Nil without a conflict, when the loser is a delete,
	// or when Expired.
	Loser []byte
	// Expired says a side of the conflict, the change's version or the
	// replica's, had expired by the store's clock when it was decided: an
	// expired version is never seen again, so there is nothing to merge or
	// record, and Last Writer Wins' choice stands.
	Expired bool
	// Colliding holds, as a read returns them, the replica's live items
	// (other ids, of the change's partition) whose values at one of the
	// container's unique keys the change's version shared: an insert
	// conflict, decided by the rule's order as the versions of one item
	// are. If the change's version is after every one of them, they are
	// removed and the change made (Applied); else the change lost
	// (Applied is false, Loser its version): the replica made it and
	// removed it in the same step, so that its feed removes it where
	// other replicas made it. Nil when the change collided with nothing
	// (always without a rule: see ApplyReplicaChange).
	Colliding [][]byte
}

// conflictRule is a checked ConflictRule: the property names of its path,
// none for the instant.
type conflictRule struct {
	path []string
}

// ApplyReplicaChangeResolved is ApplyReplicaChange for an account that
// writes in several regions: a change concurrent with the replica's
// version of the item (its Replaces names another) is a conflict, decided
// by r, and the outcome tells which version lost; so is a write whose
// version shares the values of a unique key with another live item of the
// replica (ConflictOutcome.Colliding: the loser is removed, in one step
// with the change). The replica's change
// feed keeps the item's history (ChangeFeedPolicy): a delete there is a
// tombstone a later-arriving write concurrent with it loses to, and a
// change the replica held before is a no-op, so regions may receive their
// own changes back and changes may be applied again. The stores' ETags
// must be apart, and carry the versions' generations (Options.WriteRegions).
// Each replica must receive each other's changes in the order its
// ReplicaChanges gives them: a delete of a version of a later generation
// than the replica's is a no-op, the replica is behind it, and the
// delete's own replica sends that version first. Bad input, and a bad rule, is a typed *Error
// and changes nothing.
func (c *Container) ApplyReplicaChangeResolved(ctx context.Context, ch ReplicaChange, r ConflictRule) (ConflictOutcome, error) {
	const op = "ApplyReplicaChangeResolved"
	rule, err := parseConflictRule(r)
	if err != nil {
		return ConflictOutcome{}, withContext(err, op, c.id, ch.ID)
	}
	return c.applyReplica(ctx, op, &ch, rule)
}

// parseConflictRule checks a conflict rule.
func parseConflictRule(r ConflictRule) (*conflictRule, *Error) {
	if r.Path == "" || r.Path == "/_ts" {
		return &conflictRule{}, nil
	}
	names := strings.Split(strings.TrimPrefix(r.Path, "/"), "/")
	if !strings.HasPrefix(r.Path, "/") || slices.Contains(names, "") || systemProperties[names[0]] {
		return nil, badRequest("the conflict resolution path %q is not a path of properties from the item's root (\"/name\") other than its system properties, or \"/_ts\"", clip(r.Path))
	}
	return &conflictRule{path: names}, nil
}

// resolve decides a replica change under a conflict rule: see
// ApplyReplicaChangeResolved and ConflictRule. The item's state in the
// replica is its version old, or, when there is none, the latest change of
// it the feed keeps: a delete (a tombstone of the version it removed) or an
// expiry of a version, or, when the feed keeps none, the item's tombstone
// in sh. The change is made when it is after the state, or replaces the
// replica's version; so each replica ends at the latest of the changes it
// received, whatever the order they arrive in. The caller holds sh's lock.
func (c *Container) resolve(r *replicaWrite, sh *shard, old record, h uint32, rule *conflictRule) ConflictOutcome {
	etag := etagOf(r.seq)
	state, deleted := old, false
	seen := !r.del && old != "" && old.etag() == etag // the replica has held the change before
	removedGen := false                               // the replica removed a version of a delete's generation
	c.mu.Lock()
	if f := c.mu.feed.history; f != nil && !seen {
		first := true
		f.itemChanges(h, r.pk.enc+r.id, func(e *feedEntry) bool {
			if first && old == "" {
				state, deleted = e.rec, e.kind == changeDelete
			}
			first = false
			if r.del {
				// A replica records a delete as the removal of the version
				// it held (of the same generation) at the delete's
				// instant, or, if that version had expired, as its expiry.
				removal := e.kind == changeDelete || e.kind == changeExpire
				sameGen := removal && seqGen(e.rec.seq()) == seqGen(r.seq)
				seen = removal && e.rec.etag() == etag || sameGen && e.kind == changeDelete && e.at == r.written
				removedGen = removedGen || sameGen
			} else {
				seen = e.rec.etag() == etag
			}
			return !seen
		})
	}
	c.mu.Unlock()
	switch {
	case seen:
		return ConflictOutcome{} // applied again, or a replica's own
	case r.del:
		return c.resolveDelete(r, old, etag, removedGen)
	case state == "":
		return c.resolveTomb(r, sh.tomb(r.pk.enc, r.id))
	}
	gen, at := seqGen(r.seq), seqGen(state.seq())
	var follows, wins bool
	if deleted {
		// Its tombstone is of the generation after the version removed.
		follows = gen > at
		wins = follows
	} else {
		follows = state.etag() == r.replaces || r.replaces == "" && !c.rule.live(state, r.written)
		wins = state.etag() == r.replaces || gen > at || gen == at && rule.key(r.rec).after(rule.key(state))
	}
	out := ConflictOutcome{Applied: wins, Conflict: !follows}
	if out.Conflict {
		out.Expired = c.sideExpired(r, state, deleted)
		switch {
		case out.Expired:
		case !wins:
			out.Loser = r.rec.jsonBytes()
		case old != "":
			out.Loser = old.jsonBytes()
		}
	}
	return out
}

// resolveTomb decides a replica write of an item the replica holds no
// version of, nor any change of in its feed, given the generation its
// tombstone holds (0: none; see tombstone.go): a write of an earlier
// generation was made without the removal, and loses to it.
func (c *Container) resolveTomb(r *replicaWrite, tomb uint64) ConflictOutcome {
	if seqGen(r.seq) >= tomb {
		return ConflictOutcome{Applied: true}
	}
	out := ConflictOutcome{Conflict: true, Expired: c.sideExpired(r, "", true)}
	if !out.Expired {
		out.Loser = r.rec.jsonBytes()
	}
	return out
}

// resolveDelete decides a replica's delete under a conflict rule, given
// the item's version old in the replica (if any): the delete is of the
// generation after its version's, etag's, so it removes a version of that
// generation and loses to a later one; one that would lose after the
// replica removed a version of its version's generation (removed: it may
// have been applied then, as an expiry) is a no-op. A delete whose version
// is of a later generation than old's waits: old is older than the
// version, which the feed the delete came from holds before it and brings
// first (a delete relayed by another replica may come sooner). The caller
// holds the item's shard lock.
func (c *Container) resolveDelete(r *replicaWrite, old record, etag string, removed bool) ConflictOutcome {
	if old == "" {
		return ConflictOutcome{} // nothing to delete
	}
	gen, at := seqGen(r.seq), seqGen(old.seq())
	switch {
	case old.etag() == etag:
		return ConflictOutcome{Applied: true}
	case at < gen, at > gen && removed:
		return ConflictOutcome{}
	}
	out := ConflictOutcome{Applied: at == gen, Conflict: true, Expired: !c.rule.live(old, c.store.clock.now())}
	if out.Applied && !out.Expired {
		out.Loser = old.jsonBytes()
	}
	return out
}

// sideExpired reports whether either side of a conflict, the change's
// version or the replica's, has expired by the store's clock: an expired
// version is no version (nothing of it may be seen again), so there is
// nothing to merge or keep, and Last Writer Wins' choice stands.
func (c *Container) sideExpired(r *replicaWrite, state record, deleted bool) bool {
	now := c.store.clock.now()
	return !r.del && !c.rule.live(r.rec, now) || state != "" && !deleted && !c.rule.live(state, now)
}

// lwwKey orders the versions of one generation of an item for Last
// Writer Wins: by the number at the rule's path (a version without one
// first), then by instant, then by write sequence number (unique to a
// version). A version's successor written in any replica is after it (its
// instant is not earlier, its sequence number higher: ApplyReplicaChange
// raises the store's past it); so with the instant as the rule, and with a
// path whose numbers grow along an item's history, the order puts every
// version after the ones it followed from.
type lwwKey struct {
	hasNum bool
	num    float64
	at     int64
	seq    uint64
}

// key returns the lwwKey of version rec.
func (r *conflictRule) key(rec record) lwwKey {
	k := lwwKey{at: rec.written(), seq: rec.seq()}
	if r.path != nil {
		k.num, k.hasNum = numberAt(rec.body(), r.path)
	}
	return k
}

// after reports whether k orders after o.
func (k lwwKey) after(o lwwKey) bool {
	switch {
	case k.hasNum != o.hasNum:
		return k.hasNum
	case k.num != o.num:
		return k.num > o.num
	case k.at != o.at:
		return k.at > o.at
	}
	return k.seq > o.seq
}

// numberAt returns the number at path in the JSON document doc, and false
// if there is none.
func numberAt(doc string, path []string) (float64, bool) {
	var v any
	if json.Unmarshal([]byte(doc), &v) != nil {
		return 0, false
	}
	for _, name := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		v = m[name]
	}
	n, ok := v.(float64)
	return n, ok
}
