package cosmosrest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/lethedb/lethe"
)

// Bulk: POST on a container's documents with x-ms-cosmos-is-batch-request:
// True and no x-ms-cosmos-batch-atomic (or False), as @azure/cosmos's
// executeBulkOperations and the .NET SDK's AllowBulkExecution send it. The
// body is the array of operations of a transactional batch (at most 100),
// each with its own partitionKey; the SDKs group them by partition key
// range, and lethe has one.
//
// Unlike a transactional batch, each operation runs on its own, through
// the same item calls (and so the same write path and the same charges) as
// a single create, upsert, read, replace, delete or patch: one operation's
// failure neither stops nor undoes the others. A 429 is that operation's
// result, with its retryAfterMilliseconds, so that the SDK retries it
// alone. With x-ms-cosmos-batch-continue-on-error: False, the operations
// after the first failure are not run and answer 424 (failed dependency).
//
// The response is the array of results in the operations' order, each
// {"statusCode","subStatusCode","requestCharge","eTag","resourceBody",
// "message","retryAfterMilliseconds"}; its status is 200 when every
// operation succeeded and 207 (multi-status) otherwise; its charge is the
// sum of the operations'.
//
// The response stays within Cosmos DB's 4 MB, as the service's does: the
// operations whose results would take it past (all those after the first
// that would) are not run and answer 413 with substatus 3402, which the
// SDKs retry in a request of their own. The size of a create's, upsert's
// or replace's result is known from its document; a read or a patch runs
// only while the response has room for an item of lethe.MaxItemSize.

// bulk answers a bulk (non-atomic batch) request.
func (q *request) bulk() {
	db, c, p, ok := q.documentContainer()
	if !ok || !q.checkTriggers() {
		return
	}
	partitioned := len(p.PartitionKeyDefinition.Paths) > 0
	ops, err := parseBulk(q.body, partitioned)
	if err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return
	}
	continueOnError := true
	if v := q.r.Header.Get("x-ms-cosmos-batch-continue-on-error"); v != "" {
		continueOnError = headerTrue(v)
	}
	noContent := q.itemOptions().NoContentResponseOnWrite

	var out bytes.Buffer
	out.WriteByte('[')
	var total float64
	allOK, stopped, full := true, false, false
	for i, op := range ops {
		if i > 0 {
			out.WriteByte(',')
		}
		if stopped {
			writeOpResult(&out, opResult{status: http.StatusFailedDependency, msg: "not run: an earlier operation of the bulk request failed, and x-ms-cosmos-batch-continue-on-error is False"})
			continue
		}
		if full = full || (i > 0 && out.Len()+bulkResultBound(op, noContent) > maxResponseBytes); full {
			allOK = false
			writeOpResult(&out, opResult{status: http.StatusRequestEntityTooLarge, sub: subBatchResponseSizeExceeded,
				msg: fmt.Sprintf("not run: its result would take the response past the limit of %d bytes; send it again", maxResponseBytes)})
			continue
		}
		r := q.runBulkOp(db, c, p.PartitionKeyDefinition.Paths, op, noContent)
		total += r.charge
		if r.status >= 400 {
			allOK = false
			stopped = !continueOnError
		}
		writeOpResult(&out, r)
	}
	out.WriteByte(']')
	h := q.w.Header()
	// The SDKs send a bulk request's operations grouped by range, naming
	// it; one that names none is answered for the whole container.
	l := q.layout(db, c, p)
	id := rangeIDOf(q.r)
	if _, ok := l.byID(id); !ok {
		id = ""
	}
	q.rangeHeaders(l, id, true)
	setHeader(h, "x-ms-alt-content-path", "dbs/"+db.id+"/colls/"+c.ID())
	setHeader(h, "x-ms-content-path", ridString(containerRID(db.id, c.ID())))
	status := http.StatusOK
	if !allOK {
		status = http.StatusMultiStatus
	}
	q.reply(status, out.Bytes(), total)
}

// subBatchResponseSizeExceeded is Cosmos DB's substatus of a 413 for an
// operation of a bulk request, or a transactional batch, whose result would
// take the response past 4 MB.
const subBatchResponseSizeExceeded = 3402

// bulkResultEnvelope bounds what a result adds to a bulk response besides
// its document: status, charge, etag, the system properties.
const bulkResultEnvelope = 1 << 10

// bulkResultBound bounds the bytes op's result adds to a bulk response.
func bulkResultBound(op batchOp, noContent bool) int {
	switch op.typ {
	case "Create", "Upsert", "Replace":
		if noContent {
			return bulkResultEnvelope
		}
		return len(op.doc) + bulkResultEnvelope
	case "Read", "Patch":
		return lethe.MaxItemSize + bulkResultEnvelope
	}
	return bulkResultEnvelope
}

// parseBulk reads a bulk body: a JSON array of at most
// lethe.MaxBatchOperations operations. The error is a 400's message.
func parseBulk(body []byte, partitioned bool) ([]batchOp, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '[' {
		return nil, fmt.Errorf("the bulk request's body is not a JSON array of operations")
	}
	var list []json.RawMessage
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("the bulk request's body is not valid JSON: %v", err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("the bulk request has no operations")
	}
	if len(list) > lethe.MaxBatchOperations {
		return nil, fmt.Errorf("the bulk request has %d operations, over the limit of %d", len(list), lethe.MaxBatchOperations)
	}
	ops := make([]batchOp, len(list))
	for i, raw := range list {
		op, err := parseBatchOp(i, raw, partitioned)
		if err != nil {
			return nil, err
		}
		ops[i] = op
	}
	return ops, nil
}

// runBulkOp runs one operation of a bulk request on its own, in container
// c whose partition key paths are paths.
func (q *request) runBulkOp(db *database, c *lethe.Container, paths []string, op batchOp, noContent bool) opResult {
	pk := op.pk
	if !op.hasPK {
		if len(paths) > 0 {
			return opResult{status: http.StatusBadRequest, msg: withDetail(msgPKMissing, "the operation has no partitionKey: each operation of a bulk request names its own")}
		}
		pk = lethe.NewPartitionKey()
	}
	opts := &lethe.ItemOptions{IfMatchEtag: op.ifMatch, NoContentResponseOnWrite: noContent}
	var resp lethe.ItemResponse
	var err error
	ctx := q.ctx()
	switch op.typ {
	case "Create":
		resp, err = c.CreateItem(ctx, pk, op.doc, opts)
	case "Upsert":
		resp, err = c.UpsertItem(ctx, pk, op.doc, opts)
	case "Read":
		resp, err = c.ReadItem(ctx, pk, op.id, nil)
	case "Replace":
		resp, err = c.ReplaceItem(ctx, pk, op.id, op.doc, opts)
	case "Delete":
		resp, err = c.DeleteItem(ctx, pk, op.id, opts)
		resp.Value = nil
	case "Patch":
		resp, err = c.PatchItem(ctx, pk, op.id, op.patch, opts)
	}
	if err != nil {
		e := q.errorStatus(err, 0)
		return opResult{status: e.status, sub: e.sub, charge: resp.RequestCharge, msg: e.msg, retryAfterMS: e.retryAfterMS}
	}
	r := opResult{status: resp.StatusCode, charge: resp.RequestCharge, etag: resp.ETag}
	if resp.Value != nil {
		r.body = db.withSelf(c.ID(), paths, resp.Value)
	}
	return r
}

// opResult is the result of one operation of a batch or bulk request.
type opResult struct {
	status, sub  int
	charge       float64
	etag         string // bare; written quoted
	body         []byte // the document, with its system properties
	msg          string // a failure's message
	retryAfterMS int64  // a 429's wait
}

// writeOpResult writes one result of a batch or bulk response.
func writeOpResult(out *bytes.Buffer, r opResult) {
	out.WriteString(`{"statusCode":`)
	out.WriteString(strconv.Itoa(r.status))
	out.WriteString(`,"subStatusCode":`)
	out.WriteString(strconv.Itoa(r.sub))
	out.WriteString(`,"requestCharge":`)
	out.WriteString(formatCharge(r.charge))
	if r.etag != "" {
		e, _ := json.Marshal(quoteETag(r.etag))
		out.WriteString(`,"eTag":`)
		out.Write(e)
	}
	if r.body != nil {
		out.WriteString(`,"resourceBody":`)
		out.Write(r.body)
	}
	if r.msg != "" {
		m, _ := json.Marshal(r.msg)
		out.WriteString(`,"message":`)
		out.Write(m)
	}
	if r.retryAfterMS > 0 {
		out.WriteString(`,"retryAfterMilliseconds":`)
		out.WriteString(strconv.FormatInt(r.retryAfterMS, 10))
	}
	out.WriteByte('}')
}
