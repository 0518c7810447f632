package lethe

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/lethedb/lethe/internal/resid"
)

// Limits on items and ids, those of Cosmos DB.
const (
	// MaxItemSize is the largest item accepted, in bytes of JSON (2 MB, as Cosmos DB).
	MaxItemSize = 2 << 20
	// MaxDepth is the deepest nesting of objects and arrays an item may have.
	MaxDepth = 128
	// MaxIDLength is the longest item id, in bytes of UTF-8.
	MaxIDLength = 1023
	// MaxContainerIDLength is the longest container id, in characters.
	MaxContainerIDLength = 255
)

// validateItemID checks an item id: not empty, at most MaxIDLength bytes
// of UTF-8. Any character may be in it, as Cosmos DB stores any: the
// documentation's advice against / \ ? # is about REST paths, in which
// the Cosmos DB gateways misread such ids; the REST front reproduces that
// per gateway (cosmosrest), and lethe's own calls take ids as they are.
func validateItemID(id string) *Error {
	switch {
	case id == "":
		return badRequest("the item id is empty")
	case len(id) > MaxIDLength:
		return badRequest("the item id is %d bytes, over the limit of %d", len(id), MaxIDLength)
	case !utf8.ValidString(id):
		return badRequest("the item id is not valid UTF-8")
	}
	return nil
}

// validateContainerID checks a container id by the rule of every resource
// id but items' (internal/resid): 1 to MaxContainerIDLength characters of
// UTF-8, none of / \ ? #, no control character, no trailing space.
func validateContainerID(id string) *Error {
	if err := resid.Check("container", id); err != nil {
		return badRequest("%s", err.Error())
	}
	return nil
}

// ItemOptions are the options of one item operation. A nil *ItemOptions
// means none.
type ItemOptions struct {
	// IfMatchEtag, when set, makes a replace, delete, or an upsert that
	// replaces fail with ErrPreconditionFailed unless the item's _etag is
	// this, bare or in double quotes as an HTTP entity tag (azcore.ETag
	// values carry the quotes). It is ignored by reads and by creates (including an upsert that
	// creates).
	IfMatchEtag string
	// NoContentResponseOnWrite leaves the item out of the response of a
	// create, replace or upsert (Value is nil; ETag is set), saving the copy:
	// for bulk loads. It is azcosmos's EnableContentResponseOnWrite = false.
	NoContentResponseOnWrite bool
}

// ItemResponse is the result of an item operation. On failure the request
// charge and status code are set as well.
type ItemResponse struct {
	Value         []byte  // the item, with _ts and _etag as its last members (nil for a delete); the caller's own copy
	ETag          string  // the item's _etag
	RequestCharge float64 // request units this operation cost
	StatusCode    int     // 200 read/replace/upsert-replaced, 201 create/upsert-created, 204 delete
}

// writeKind is what a write does when the item exists, or not.
type writeKind uint8

const (
	writeCreate writeKind = iota
	writeReplace
	writeUpsert
	writeDelete
)

var writeOps = [...]string{"CreateItem", "ReplaceItem", "UpsertItem", "DeleteItem"}

// Every item call names its partition key value pk first, as azcosmos's
// do; on a container that is not partitioned it is NewPartitionKey(). A key
// that does not fit the container's definition is ErrBadRequest. A write
// whose document holds another partition key value than pk fails with
// ErrBadRequest and Cosmos DB's message, "PartitionKey extracted from
// document doesn't match the one specified in the header", and changes
// nothing: no write moves an item to another partition.

// CreateItem stores a new item in the logical partition pk: a JSON object
// with a string "id". It fails with ErrConflict if the partition has a live
// item of that id; an expired one is replaced.
func (c *Container) CreateItem(ctx context.Context, pk PartitionKey, item []byte, o *ItemOptions) (ItemResponse, error) {
	return c.write(ctx, writeCreate, pk, "", item, o)
}

// ReplaceItem replaces the live item (pk, id) with item, whose "id" must be
// id and whose partition key value must be pk. It fails with ErrNotFound if
// there is no live item (pk, id).
func (c *Container) ReplaceItem(ctx context.Context, pk PartitionKey, id string, item []byte, o *ItemOptions) (ItemResponse, error) {
	return c.write(ctx, writeReplace, pk, id, item, o)
}

// UpsertItem replaces the live item of item's id in partition pk (status
// 200), or creates it (status 201) when there is none or it has expired.
func (c *Container) UpsertItem(ctx context.Context, pk PartitionKey, item []byte, o *ItemOptions) (ItemResponse, error) {
	return c.write(ctx, writeUpsert, pk, "", item, o)
}

// DeleteItem deletes the live item (pk, id) (status 204). It fails with
// ErrNotFound if there is none.
func (c *Container) DeleteItem(ctx context.Context, pk PartitionKey, id string, o *ItemOptions) (ItemResponse, error) {
	return c.write(ctx, writeDelete, pk, id, nil, o)
}

// ReadItem returns the live item (pk, id). It fails with ErrNotFound if the
// item does not exist or has expired. A read does no JSON work, and reads
// the clock only if the item can expire.
func (c *Container) ReadItem(ctx context.Context, pk PartitionKey, id string, o *ItemOptions) (ItemResponse, error) {
	return c.read(ctx, "ReadItem", nil, pk, id)
}

// ReadItemAppend is ReadItem that appends the item to dst and returns the
// extended slice as the response's Value. A caller that reuses its buffer
// (dst[:0]) reads without allocating, and the copy lands in memory the CPU
// has in cache rather than in a fresh allocation: see BenchmarkReadItem.
func (c *Container) ReadItemAppend(ctx context.Context, dst []byte, pk PartitionKey, id string, o *ItemOptions) (ItemResponse, error) {
	return c.read(ctx, "ReadItemAppend", dst, pk, id)
}

// ItemExpiry returns when the live item (pk, id) expires by the store's
// clock, and false if it never does (TTL off, or -1). It fails as ReadItem
// does for an item that does not exist or has expired, and costs no
// request units: it is for tests and tools that check an item's time left.
func (c *Container) ItemExpiry(ctx context.Context, pk PartitionKey, id string) (time.Time, bool, error) {
	if err := c.check(ctx, "ItemExpiry", id); err != nil {
		return time.Time{}, false, err
	}
	sh, h := c.shardFor(pk.enc, id)
	sh.mu.RLock()
	rec := sh.items.get(pk.enc, id, h)
	exp := int64(never)
	if rec != "" {
		if c.rule.liveNow(rec, &c.store.clock) {
			exp = c.rule.expiresAt(rec.ttl(), rec.written())
		} else {
			rec = ""
		}
	}
	sh.mu.RUnlock()
	if rec == "" {
		_, err := c.fail("ItemExpiry", id, &Error{StatusCode: statusNotFound, Message: msgNotFound})
		return time.Time{}, false, err
	}
	if exp == never {
		return time.Time{}, false, nil
	}
	return time.Unix(0, exp), true, nil
}

// read is the single read path: a live item's JSON is appended to dst.
func (c *Container) read(ctx context.Context, op string, dst []byte, pk PartitionKey, id string) (ItemResponse, error) {
	if err := c.check(ctx, op, id); err != nil {
		return ItemResponse{}, err
	}
	sh, h := c.shardFor(pk.enc, id)
	sh.mu.RLock()
	rec := sh.items.get(pk.enc, id, h)
	if rec != "" {
		if !c.rule.liveNow(rec, &c.store.clock) {
			rec = ""
		}
	}
	sh.mu.RUnlock()
	if rec == "" {
		// Only a miss needs the key and id checked: every stored one is valid.
		if err := c.pkPaths.check(pk, false); err != nil {
			return c.fail(op, id, err)
		}
		if err := validateItemID(id); err != nil {
			return c.fail(op, id, err)
		}
		return c.fail(op, id, &Error{StatusCode: statusNotFound, Message: msgNotFound})
	}
	cost := charge(opRead, rec.chargeSize())
	if err := c.draw(op, id, cost); err != nil {
		return ItemResponse{StatusCode: statusTooManyRequests}, err
	}
	return ItemResponse{
		Value:         rec.appendJSON(dst),
		ETag:          rec.etag(),
		RequestCharge: ru(cost),
		StatusCode:    statusOK,
	}, nil
}

// write is the single write path: every change to an item goes through it.
// It parses the document outside any lock, then, under the item's shard
// lock, decides the outcome from the live state, draws the charge, builds the
// new record and updates the shard and the expiry index together.
func (c *Container) write(ctx context.Context, kind writeKind, pk PartitionKey, id string, doc []byte, o *ItemOptions) (ItemResponse, error) {
	op := writeOps[kind]
	if err := c.check(ctx, op, id); err != nil {
		return ItemResponse{}, err
	}
	if err := c.pkPaths.check(pk, false); err != nil {
		return c.fail(op, id, err)
	}
	var p parsedItem
	if kind == writeDelete {
		if err := validateItemID(id); err != nil {
			return c.fail(op, id, err)
		}
	} else {
		var err *Error
		if p, err = parseItem(doc); err != nil {
			return c.fail(op, id, err)
		}
		if kind == writeReplace && p.id != id {
			if err := validateItemID(id); err != nil {
				return c.fail(op, id, err)
			}
			return c.fail(op, id, badRequest("the item's id %q is not the id %q being replaced", clip(p.id), clip(id)))
		}
		id = p.id
		if len(c.pkPaths.segs) > 0 {
			same, err := c.pkPaths.matches(doc, &p, pk.enc)
			if err != nil {
				return c.fail(op, id, err)
			}
			if !same {
				return c.fail(op, id, badRequest(msgPKMismatch))
			}
		}
	}
	return c.commit(op, kind, pk, id, doc, &p, o)
}

// commit decides and applies a prepared write under the item's shard lock
// (a durable store's apply returns once the log holds it durably). In a
// container with a unique key policy, the write claims its new version's
// unique values when it checks them (claimUnique) and holds c.uniqueMu
// only for reading, so that durable writers to other shards share the
// log's syncs.
func (c *Container) commit(op string, kind writeKind, pk PartitionKey, id string, doc []byte, p *parsedItem, o *ItemOptions) (ItemResponse, error) {
	ifMatch := ""
	if o != nil {
		ifMatch = o.IfMatchEtag
	}
	fail := func(e *Error) (ItemResponse, error) { return c.fail(op, id, e) }

	if mu := c.uniqueMu; mu != nil {
		mu.RLock()
		defer mu.RUnlock()
	}
	sh, h := c.shardFor(pk.enc, id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if c.deleted.Load() { // deleted while this write waited for the lock
		return fail(&Error{StatusCode: statusNotFound, Message: msgNotFound})
	}
	now := c.store.clock.now()
	old, slot := sh.items.lookup(pk.enc, id, h)
	live := old != "" && c.rule.live(old, now)

	var (
		status int
		cost   int64
	)
	switch {
	case kind == writeCreate && live:
		return fail(&Error{StatusCode: statusConflict, Message: msgItemExists})
	case (kind == writeReplace || kind == writeDelete) && !live:
		return fail(&Error{StatusCode: statusNotFound, Message: msgNotFound})
	case live && kind != writeCreate && ifMatch != "" && !etagMatches(ifMatch, old.etag()):
		return fail(&Error{StatusCode: statusPreconditionFailed, Message: msgPrecondition})
	case kind == writeDelete:
		status, cost = statusNoContent, charge(opDelete, old.chargeSize())
	case live: // replace, or upsert of a live item
		status, cost = statusOK, charge(opReplace, p.size-p.ttlSize)
	default: // create, or upsert of a missing or expired item
		status, cost = statusCreated, charge(opCreate, p.size-p.ttlSize)
	}
	claimed := c.uniqueMu != nil && kind != writeDelete
	if claimed && c.claimUnique(pk.enc, id, doc, p.ttl, now) {
		return fail(&Error{StatusCode: statusConflict, Message: msgUniqueViolation})
	}
	if err := c.drawAt(op, id, cost, now); err != nil {
		if claimed {
			c.releaseUnique(pk.enc, id, doc)
		}
		return ItemResponse{StatusCode: statusTooManyRequests}, err
	}

	m := mutation{cause: causeReplace, now: now, sh: sh, h: h, old: old, slot: slot + 1}
	switch {
	case kind == writeDelete:
		m.cause = causeDelete
	case !live:
		m.cause = causeCreate
	}
	if kind != writeDelete {
		m.rec = buildRecord(doc, p, pk.enc, now, c.store.nextVersionSeq(c.newGen(sh, old, live, pk.enc, id)), c.position(old, live))
	}
	next, err := c.apply(&m)
	if err != nil {
		if claimed {
			c.releaseUnique(pk.enc, id, doc)
		}
		return ItemResponse{StatusCode: statusServiceUnavailable}, storageError(err, op, c.id, id)
	}
	rec := m.rec
	resp := ItemResponse{RequestCharge: ru(cost), StatusCode: status}
	c.store.reaper.notify(next)
	if rec != "" {
		resp.ETag = rec.etag()
		if o == nil || !o.NoContentResponseOnWrite {
			resp.Value = rec.jsonBytes()
		}
	}
	return resp, nil
}

// fail returns a failed operation's response and error, charging the fixed
// failure charge.
func (c *Container) fail(op, id string, e *Error) (ItemResponse, error) {
	charge, err := c.chargeFailed(op, id)
	if err != nil {
		return ItemResponse{StatusCode: statusTooManyRequests}, err
	}
	return ItemResponse{RequestCharge: charge, StatusCode: e.StatusCode}, withContext(e, op, c.id, id)
}

// commitReplica makes a replica change (ApplyReplicaChange,
// ApplyReplicaChangeResolved) under the item's shard lock, as commit makes
// a client's write, decided at the change's instant by decideReplica: the
// new record has the change's instant and ETag, and no request units are
// drawn. Without a conflict rule, unique keys are not checked: the origin
// checked them, and a replica that applies changes again after a crash
// passes through states that break them until it catches up; its unique
// index follows every change, for its own writes after a failover. Under
// a rule, a write whose version shares a unique key's values with another
// live item is a conflict (replication_unique.go): found here, it is made
// by commitReplicaColliding.
func (c *Container) commitReplica(op string, r *replicaWrite, rule *conflictRule) (ConflictOutcome, error) {
	mu := c.uniqueMu
	if mu == nil {
		out, _, err := c.commitReplicaShard(op, r, rule, false)
		return out, err
	}
	// As a single write's: the unique index changes with the item (in
	// c.mu's hold), and a batch, which holds it for writing, sees no
	// change between its check and its write. A write under a rule claims
	// its values as a single write does; so replicas share the log's
	// fsyncs as single writes do.
	mu.RLock()
	out, collides, err := c.commitReplicaShard(op, r, rule, rule != nil && !r.del)
	mu.RUnlock()
	if collides {
		return c.commitReplicaColliding(op, r, rule)
	}
	return out, err
}

// commitReplicaShard is commitReplica under the item's shard lock. With
// unique, it claims the values of the change's version, live, as a single
// write does (claimUnique), and where another item holds or claims them it
// makes nothing and reports true.
func (c *Container) commitReplicaShard(op string, r *replicaWrite, rule *conflictRule, unique bool) (ConflictOutcome, bool, error) {
	sh, h := c.shardFor(r.pk.enc, r.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if c.deleted.Load() {
		return ConflictOutcome{}, false, withContext(&Error{StatusCode: statusNotFound, Message: msgNotFound}, op, c.id, r.id)
	}
	out, d := c.decideReplicaLocked(r, rule, sh, h)
	if !out.Applied {
		return out, false, nil
	}
	// The claim counts from the change's instant, as its version's expiry
	// does; items expired since then but not yet now are taken for
	// collisions, which commitReplicaColliding checks again by now.
	claimed := unique && c.rule.live(r.rec, c.store.clock.now())
	if claimed && c.claimUnique(r.pk.enc, r.id, r.doc, r.p.ttl, r.written) {
		return ConflictOutcome{}, true, nil
	}
	m := c.replicaMutation(r, d)
	if !r.del {
		c.store.raiseSeq(r.seq)
	}
	next, err := c.apply(&m)
	if err != nil {
		if claimed {
			c.releaseUnique(r.pk.enc, r.id, r.doc)
		}
		return ConflictOutcome{}, false, storageError(err, op, c.id, r.id)
	}
	c.store.reaper.notify(next)
	return out, false, nil
}

// replicaDecision is where a replica change's item stood when it was
// decided, under its shard lock: its shard and hash, its version old ("":
// none), its id-table slot, and whether old was live.
type replicaDecision struct {
	sh   *shard
	h    uint32
	old  record
	slot int
	live bool
}

// decideReplicaLocked looks the replica change's item up, builds its new
// version (r.rec) and decides the change (decideReplica). The caller holds
// the item's shard lock.
func (c *Container) decideReplicaLocked(r *replicaWrite, rule *conflictRule, sh *shard, h uint32) (ConflictOutcome, replicaDecision) {
	old, slot := sh.items.lookup(r.pk.enc, r.id, h)
	d := replicaDecision{sh: sh, h: h, old: old, slot: slot, live: old != "" && c.rule.live(old, r.written)}
	if !r.del {
		// A replace keeps its item's position; a create takes a new one
		// once it is made (replicaMutation).
		pos := uint64(0)
		if d.live {
			pos = old.pos()
		}
		r.rec = buildRecord(r.doc, &r.p, r.pk.enc, r.written, r.seq, pos)
	}
	return c.decideReplica(r, sh, old, h, rule), d
}

// replicaMutation returns the change a decided replica change makes to its
// item; a create takes its position here.
func (c *Container) replicaMutation(r *replicaWrite, d replicaDecision) mutation {
	if !r.del && !d.live {
		r.rec = r.rec.withPos(c.position(d.old, d.live))
	}
	m := mutation{cause: causeReplace, now: r.written, sh: d.sh, h: d.h, old: d.old, slot: d.slot + 1, rec: r.rec}
	switch {
	case r.del:
		m.cause = causeDelete
	case !d.live:
		m.cause = causeCreate
	}
	return m
}
