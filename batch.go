package lethe

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/lethedb/lethe/internal/query"
)

// Transactional batches, as Cosmos DB's: up to MaxBatchOperations point
// operations on the items of one logical partition, applied in order, all
// or none.
//
// Execution follows the one mutation path (mutation.go). Every operation is
// prepared (parsed and validated) without locks; then, holding the
// container's batch lock for writing and the write locks of every shard the
// batch touches (in ascending order, as lockAll takes them), the operations
// are decided in order against the items as the batch has left them so far;
// if all succeed, the net change of each item is applied at once with
// applyBatch, which a durable store logs as one record.

// MaxBatchOperations is the most operations a transactional batch may hold,
// as in Cosmos DB.
const MaxBatchOperations = 100

type batchKind uint8

const (
	batchCreate batchKind = iota
	batchRead
	batchReplace
	batchUpsert
	batchDelete
	batchPatch
)

var batchOpNames = [...]string{"CreateItem", "ReadItem", "ReplaceItem", "UpsertItem", "DeleteItem", "PatchItem"}

// batchOp is one operation of a batch, as added.
type batchOp struct {
	kind    batchKind
	id      string // read, replace, delete, patch
	item    []byte // create, replace, upsert
	patch   *PatchOperations
	ifMatch string
}

// TransactionalBatch is a list of operations on the items of one logical
// partition, to execute with Container.ExecuteTransactionalBatch: all of
// them or none. Make one with Container.NewTransactionalBatch. The batch
// keeps the item slices it is given, without copying them, until it is
// executed: do not change them before.
type TransactionalBatch struct {
	pk  PartitionKey
	ops []batchOp
}

// TransactionalBatchItemOptions are the options of one operation of a
// transactional batch. A nil *TransactionalBatchItemOptions means none.
type TransactionalBatchItemOptions struct {
	// IfMatchEtag, when set, makes a replace, delete, patch, or an upsert
	// that replaces, fail with status 412 unless the item's _etag (as the
	// batch has left it so far) is this, as ItemOptions.IfMatchEtag.
	IfMatchEtag string
}

// TransactionalBatchOptions are the options of a transactional batch. A nil
// *TransactionalBatchOptions means none.
type TransactionalBatchOptions struct {
	// EnableContentResponseOnWrite puts each written item in its
	// operation's ResourceBody. Without it (the default, as in azcosmos)
	// only reads have a body.
	EnableContentResponseOnWrite bool
}

// TransactionalBatchResponse is the result of a transactional batch.
type TransactionalBatchResponse struct {
	// OperationResults are the results of the operations, in their order.
	OperationResults []TransactionalBatchResult
	// Success reports whether the batch was committed. When false, nothing
	// was applied: the operation that failed has its own status code (and
	// Err), and every other one status 424 (failed dependency).
	Success bool
	// RequestCharge is the request units the batch cost: the sum of its
	// operations' charges, or the failure charge of a batch that failed.
	RequestCharge float64
}

// TransactionalBatchResult is the result of one operation of a
// transactional batch.
type TransactionalBatchResult struct {
	// StatusCode is the operation's: 201 for a create (or an upsert that
	// creates), 200 for a read, replace, patch (or an upsert that
	// replaces), 204 for a delete; in a batch that failed, the failing
	// operation's error status and 424 for every other one.
	StatusCode int
	// RequestCharge is the operation's share of the batch's charge.
	RequestCharge float64
	// ResourceBody is the item read, or written when
	// TransactionalBatchOptions.EnableContentResponseOnWrite is set; the
	// caller's own copy.
	ResourceBody []byte
	// ETag is the item's _etag after the operation (empty for a delete).
	ETag string
	// Err is the failing operation's *Error, nil for every other
	// operation.
	Err error
}

// NewTransactionalBatch returns an empty transactional batch on the logical
// partition pk.
func (c *Container) NewTransactionalBatch(pk PartitionKey) TransactionalBatch {
	return TransactionalBatch{pk: pk}
}

func (b *TransactionalBatch) add(kind batchKind, id string, item []byte, patch *PatchOperations, o *TransactionalBatchItemOptions) {
	op := batchOp{kind: kind, id: id, item: item, patch: patch}
	if o != nil {
		op.ifMatch = o.IfMatchEtag
	}
	b.ops = append(b.ops, op)
}

// CreateItem adds the creation of item, as Container.CreateItem: it fails
// with 409 if the partition has a live item of its id.
func (b *TransactionalBatch) CreateItem(item []byte, o *TransactionalBatchItemOptions) {
	b.add(batchCreate, "", item, nil, o)
}

// ReadItem adds a read of the item id, as Container.ReadItem: it sees the
// writes of the batch's earlier operations.
func (b *TransactionalBatch) ReadItem(id string, o *TransactionalBatchItemOptions) {
	b.add(batchRead, id, nil, nil, o)
}

// ReplaceItem adds the replacement of the live item id with item, as
// Container.ReplaceItem.
func (b *TransactionalBatch) ReplaceItem(id string, item []byte, o *TransactionalBatchItemOptions) {
	b.add(batchReplace, id, item, nil, o)
}

// UpsertItem adds the upsert of item, as Container.UpsertItem.
func (b *TransactionalBatch) UpsertItem(item []byte, o *TransactionalBatchItemOptions) {
	b.add(batchUpsert, "", item, nil, o)
}

// DeleteItem adds the deletion of the live item id, as
// Container.DeleteItem.
func (b *TransactionalBatch) DeleteItem(id string, o *TransactionalBatchItemOptions) {
	b.add(batchDelete, id, nil, nil, o)
}

// PatchItem adds the patch ops of the live item id, as Container.PatchItem;
// a condition that does not hold fails the batch with 412.
func (b *TransactionalBatch) PatchItem(id string, ops PatchOperations, o *TransactionalBatchItemOptions) {
	b.add(batchPatch, id, nil, &ops, o)
}

// preparedOp is a batch operation prepared without locks.
type preparedOp struct {
	err  *Error // invalid: the operation fails when its turn comes
	id   string
	item int // the index of its item in the batch's items
	p    parsedItem
	// A patch's operations and condition.
	patch []patchOp
	cond  *query.Query
}

// batchItem is an item a batch touches: where it is, how it was, and how
// the batch has left it so far.
type batchItem struct {
	id        string
	sh        *shard
	shard     int
	h         uint32
	orig, cur record
	gone      record // the version the batch's last delete of it removed
}

// ExecuteTransactionalBatch executes the operations of b, in order, on the
// items of b's partition key value, all or none. Later operations see the
// effects of earlier ones; expired items count as missing, as they do
// outside a batch. Concurrent readers never see part of a batch: a point
// read sees each item as it was before the batch or after it, and a query
// sees all of the batch or none of it.
//
// When an operation fails (a conflict, a missing item, a precondition, an
// invalid document or patch), nothing is applied, and, as azcosmos does,
// the error is nil and the response says so: Success is false, the failing
// operation has its own status code and Err, and every other operation has
// status 424. The error is non-nil when the batch as a whole is refused,
// and then nothing is applied either: an invalid partition key, no
// operations or more than MaxBatchOperations (ErrBadRequest), more than
// MaxItemSize bytes of items and patch values (ErrRequestTooLarge), a
// response that would hold more than 4 MB of items, Cosmos DB's limit on a
// response, such as 100 reads of a 2 MB item (ErrRequestTooLarge), a
// charge the container's throughput cannot cover (ErrTooManyRequests: the
// charge of a batch is the sum of its operations', drawn at once), a failed
// write-ahead log (ErrUnavailable), a deleted container (ErrNotFound), a
// closed store or a done context.
//
// On a durable store the batch is one log record: after a crash it is
// recovered whole or, if it was never acknowledged, not at all.
func (c *Container) ExecuteTransactionalBatch(ctx context.Context, b TransactionalBatch, o *TransactionalBatchOptions) (TransactionalBatchResponse, error) {
	const op = "ExecuteTransactionalBatch"
	if err := c.check(ctx, op, ""); err != nil {
		return TransactionalBatchResponse{}, err
	}
	refuse := func(e *Error) (TransactionalBatchResponse, error) {
		resp, err := c.fail(op, "", e)
		return TransactionalBatchResponse{RequestCharge: resp.RequestCharge}, err
	}
	if err := c.pkPaths.check(b.pk, false); err != nil {
		return refuse(err)
	}
	switch n := len(b.ops); {
	case n == 0:
		return refuse(badRequest("the transactional batch has no operations"))
	case n > MaxBatchOperations:
		return refuse(badRequest("the transactional batch has %d operations, over the limit of %d", n, MaxBatchOperations))
	}
	if size := batchSize(b.ops); size > MaxItemSize {
		return refuse(&Error{StatusCode: statusRequestEntityTooLarge,
			Message: fmt.Sprintf("the transactional batch holds %d bytes of items and patch values, over the limit of %d", size, MaxItemSize)})
	}
	sc := batchScratches.Get().(*batchScratch)
	defer sc.release()
	c.prepareBatch(b, sc)
	return c.commitBatch(ctx, b, sc, o)
}

// maxBatchResponse is the most bytes of items a transactional batch's
// response may hold, Cosmos DB's limit on a response (4 MB): a batch whose
// reads, patches or writes with content would return more fails whole,
// with 413, before anything is applied.
const maxBatchResponse = 4 << 20

// batchResponseSize is the bytes of items the response of a batch whose
// operations produced recs would hold.
func batchResponseSize(ops []batchOp, recs []record, withBody bool) int {
	size := 0
	for i, rec := range recs {
		if rec != "" && (withBody || ops[i].kind == batchRead) {
			size += rec.jsonLen()
		}
	}
	return size
}

// batchSize is the size of a batch's request, as Cosmos DB limits it: its
// items and patch values.
func batchSize(ops []batchOp) int {
	size := 0
	for i := range ops {
		size += len(ops[i].item) + len(ops[i].id)
		if p := ops[i].patch; p != nil {
			for k := range min(p.n, len(p.ops)) {
				size += len(p.ops[k].value) + len(p.ops[k].path) + len(p.ops[k].from)
			}
		}
	}
	return size
}

// batchScratch is the working memory of one batch's execution, reused
// from batch to batch: a batch of 100 creates prepares some 50 KB.
type batchScratch struct {
	prep   []preparedOp
	items  []batchItem
	index  map[string]int // item id → index in items
	recs   []record       // the record each operation read or wrote
	ms     []mutation
	shards []int
}

var batchScratches = sync.Pool{New: func() any { return &batchScratch{index: map[string]int{}} }}

// release clears what the scratch refers to (the caller's documents,
// records) and puts it back in the pool.
func (sc *batchScratch) release() {
	clear(sc.prep)
	clear(sc.items)
	clear(sc.index)
	clear(sc.recs)
	clear(sc.ms)
	sc.prep, sc.items, sc.recs, sc.ms, sc.shards = sc.prep[:0], sc.items[:0], sc.recs[:0], sc.ms[:0], sc.shards[:0]
	batchScratches.Put(sc)
}

// prepareBatch prepares the operations of b without locks into sc.prep:
// documents parsed and checked against the partition key, ids validated,
// patches prepared. It lists in sc.items the items the operations up to
// the first invalid one touch.
func (c *Container) prepareBatch(b TransactionalBatch, sc *batchScratch) {
	sc.prep = slices.Grow(sc.prep, len(b.ops))[:len(b.ops)]
	for i := range b.ops {
		op, po := &b.ops[i], &sc.prep[i]
		po.err = c.prepareBatchOp(op, po, b.pk)
		if po.err != nil {
			break // the batch fails here: later operations never run
		}
		k, ok := sc.index[po.id]
		if !ok {
			k = len(sc.items)
			sc.index[po.id] = k
			shard, h := c.shardIndex(b.pk.enc, po.id)
			sc.items = append(sc.items, batchItem{id: po.id, sh: &c.shards[shard], shard: shard, h: h})
		}
		po.item = k
	}
}

// prepareBatchOp prepares one operation into po.
func (c *Container) prepareBatchOp(op *batchOp, po *preparedOp, pk PartitionKey) *Error {
	switch op.kind {
	case batchRead, batchDelete:
		po.id = op.id
		return validateItemID(op.id)
	case batchPatch:
		po.id = op.id
		if err := validateItemID(op.id); err != nil {
			return err
		}
		var err *Error
		po.patch, po.cond, err = c.preparePatch(op.patch)
		return err
	}
	p, err := parseItem(op.item)
	if err != nil {
		return err
	}
	if op.kind == batchReplace && p.id != op.id {
		if err := validateItemID(op.id); err != nil {
			return err
		}
		return badRequest("the item's id %q is not the id %q being replaced", clip(p.id), clip(op.id))
	}
	po.id, po.p = p.id, p
	if len(c.pkPaths.segs) > 0 {
		same, err := c.pkPaths.matches(op.item, &po.p, pk.enc)
		if err != nil {
			return err
		}
		if !same {
			return badRequest(msgPKMismatch)
		}
	}
	return nil
}

// lockBatch takes the batch lock and the write locks of the items' shards,
// in ascending order, and lists those shards in sc.shards.
func (c *Container) lockBatch(sc *batchScratch) []int {
	var used [shardCount]bool
	for i := range sc.items {
		used[sc.items[i].shard] = true
	}
	c.batchMu.Lock()
	if c.uniqueMu != nil {
		c.uniqueMu.Lock()
	}
	sc.shards = c.lockShards(&used, sc.shards)
	return sc.shards
}

// lockShards takes the write locks of the shards used marks, in ascending
// order (the order every holder of several takes them in), and appends
// their indexes to shards.
func (c *Container) lockShards(used *[shardCount]bool, shards []int) []int {
	for i, u := range used {
		if u {
			c.shards[i].mu.Lock()
			shards = append(shards, i)
		}
	}
	return shards
}

// unlockShards releases the shard locks lockShards took.
func (c *Container) unlockShards(shards []int) {
	for _, i := range shards {
		c.shards[i].mu.Unlock()
	}
}

func (c *Container) unlockBatch(shards []int) {
	c.unlockShards(shards)
	if c.uniqueMu != nil {
		c.uniqueMu.Unlock()
	}
	c.batchMu.Unlock()
}

// commitBatch decides a prepared batch under its locks and applies it if
// every operation succeeds (a durable store's applyBatch returns once the
// log holds the batch durably).
func (c *Container) commitBatch(ctx context.Context, b TransactionalBatch, sc *batchScratch, o *TransactionalBatchOptions) (TransactionalBatchResponse, error) {
	const op = "ExecuteTransactionalBatch"
	n := len(b.ops)
	pk := b.pk.enc
	prep, items := sc.prep, sc.items
	if len(items) > 0 {
		shards := c.lockBatch(sc)
		defer c.unlockBatch(shards)
		if c.deleted.Load() { // deleted while the batch waited for the locks
			return TransactionalBatchResponse{}, withContext(&Error{StatusCode: statusNotFound, Message: msgNotFound}, op, c.id, "")
		}
		for i := range items {
			it := &items[i]
			it.orig = it.sh.items.get(pk, it.id, it.h)
			it.cur = it.orig
		}
	}
	now := c.store.clock.now()
	var pb *patchBuf
	defer func() {
		if pb != nil {
			pb.release()
		}
	}()

	results := make([]TransactionalBatchResult, n)
	sc.recs = slices.Grow(sc.recs, n)[:n]
	recs := sc.recs
	var (
		total  int64
		maxSeq uint64
		failed = -1
		cause  *Error
	)
	for i := range b.ops {
		bop, po := &b.ops[i], &prep[i]
		if po.err != nil {
			failed, cause = i, po.err
			break
		}
		it := &items[po.item]
		live := it.cur != "" && c.rule.live(it.cur, now)
		switch {
		case bop.kind == batchCreate && live:
			cause = &Error{StatusCode: statusConflict, Message: msgItemExists}
		case bop.kind != batchCreate && bop.kind != batchUpsert && !live:
			cause = &Error{StatusCode: statusNotFound, Message: msgNotFound}
		case live && bop.kind != batchCreate && bop.kind != batchRead && bop.ifMatch != "" && !etagMatches(bop.ifMatch, it.cur.etag()):
			cause = &Error{StatusCode: statusPreconditionFailed, Message: msgPrecondition}
		}
		if cause != nil {
			failed = i
			break
		}
		var (
			rec    record
			cost   int64
			status = statusOK
		)
		switch bop.kind {
		case batchRead:
			rec, cost = it.cur, charge(opRead, it.cur.chargeSize())
		case batchDelete:
			cost, status = charge(opDelete, it.cur.chargeSize()), statusNoContent
		case batchPatch:
			if pb == nil {
				pb = patchBuffers.Get().(*patchBuf)
			}
			r, err := c.patchDoc(ctx, po.patch, po.cond, it.cur, pk, now, pb)
			if err != nil {
				e, ok := err.(*Error)
				if !ok {
					return TransactionalBatchResponse{}, err // the context's
				}
				cause = e
				break
			}
			maxSeq = c.store.nextVersionSeq(c.newGen(it.sh, it.cur, true, "", ""))
			rec, cost = r.record(pk, now, maxSeq, it.cur.pos()), charge(opReplace, r.chargeSize)
		default: // create, replace, upsert
			kind := opReplace
			if !live {
				kind, status = opCreate, statusCreated
			}
			old := it.cur
			if old == "" {
				old = it.gone // deleted by the batch: created again after it
			}
			maxSeq = c.store.nextVersionSeq(c.newGen(it.sh, old, live, pk, it.id))
			rec, cost = buildRecord(bop.item, &po.p, pk, now, maxSeq, c.position(it.cur, live)), charge(kind, po.p.size-po.p.ttlSize)
		}
		if cause == nil && c.uniqueMu != nil && rec != "" && bop.kind != batchRead && c.batchUniqueConflict(sc, po.item, pk, rec, now) {
			cause = &Error{StatusCode: statusConflict, Message: msgUniqueViolation}
		}
		if cause != nil {
			failed = i
			break
		}
		recs[i] = rec
		total += cost
		results[i] = TransactionalBatchResult{StatusCode: status, RequestCharge: ru(cost)}
		if rec != "" {
			results[i].ETag = rec.etag()
		}
		if bop.kind == batchDelete {
			it.gone = it.cur
		}
		if bop.kind != batchRead {
			it.cur = rec
		}
	}

	if failed >= 0 {
		charge, err := c.chargeFailed(op, "")
		if err != nil {
			return TransactionalBatchResponse{}, err
		}
		for i := range results {
			results[i] = TransactionalBatchResult{StatusCode: statusFailedDependency}
		}
		name := fmt.Sprintf("%s operation %d (%s)", op, failed, batchOpNames[b.ops[failed].kind])
		results[failed] = TransactionalBatchResult{
			StatusCode:    cause.StatusCode,
			RequestCharge: charge,
			Err:           withContext(cause, name, c.id, prep[failed].id),
		}
		return TransactionalBatchResponse{OperationResults: results, RequestCharge: charge}, nil
	}

	withBody := o != nil && o.EnableContentResponseOnWrite
	if size := batchResponseSize(b.ops, recs, withBody); size > maxBatchResponse {
		charge, err := c.chargeFailed(op, "")
		if err != nil {
			return TransactionalBatchResponse{}, err
		}
		return TransactionalBatchResponse{RequestCharge: charge}, withContext(&Error{StatusCode: statusRequestEntityTooLarge,
			Message: fmt.Sprintf("the transactional batch's response would hold %d bytes of items, over the limit of %d: nothing was applied", size, maxBatchResponse)}, op, c.id, "")
	}
	if err := c.drawAt(op, "", total, now); err != nil {
		return TransactionalBatchResponse{}, err
	}
	ms := slices.Grow(sc.ms, len(items))
	for i := range items {
		it := &items[i]
		if it.cur == it.orig {
			continue
		}
		m := mutation{cause: causeCreate, now: now, sh: it.sh, h: it.h, old: it.orig, rec: it.cur}
		live := it.orig != "" && c.rule.live(it.orig, now)
		switch {
		case it.cur == "" && live:
			m.cause = causeDelete
		case it.cur == "":
			// Made and deleted by the batch over an expired version:
			// the net change removes what had expired.
			m.cause = causePurge
		case live:
			m.cause = causeReplace
		}
		ms = append(ms, m)
	}
	sc.ms = ms
	c.batches.Add(1) // under batchMu: item-order pages end before what this batch changes
	next, err := c.applyBatch(ms, maxSeq)
	if err != nil {
		return TransactionalBatchResponse{}, storageError(err, op, c.id, "")
	}
	c.store.reaper.notify(next)

	for i := range results {
		if rec := recs[i]; rec != "" && (withBody || b.ops[i].kind == batchRead) {
			results[i].ResourceBody = rec.jsonBytes()
		}
	}
	return TransactionalBatchResponse{OperationResults: results, Success: true, RequestCharge: ru(total)}, nil
}
