package cosmosrest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/lethedb/lethe"
)

// Transactional batches: POST on a container's documents with
// x-ms-cosmos-is-batch-request: True and x-ms-cosmos-batch-atomic: True,
// translated onto lethe.Container.ExecuteTransactionalBatch.
//
// The body is a JSON array of operations, each
// {"operationType":"Create"|"Upsert"|"Read"|"Replace"|"Delete"|"Patch",
// "id", "resourceBody", "ifMatch", "partitionKey"}: resourceBody is the
// document of a create, upsert or replace, and the patch body
// ({"operations":[...],"condition":…}) of a patch. The response is a JSON
// array of results, {"statusCode","subStatusCode","requestCharge","eTag",
// "resourceBody"}, with status 200 when the batch was committed and 207
// (multi-status) when an operation failed and nothing was applied: then
// the failing operation has its own status and every other one 424.
// azcosmos reads Success as "the status is not 207".

// batchOpJSON is one operation of a batch as the SDKs send it.
type batchOpJSON struct {
	OperationType *string         `json:"operationType"`
	ID            *string         `json:"id"`
	ResourceBody  json.RawMessage `json:"resourceBody"`
	IfMatch       *string         `json:"ifMatch"`
	IfNoneMatch   *string         `json:"ifNoneMatch"`
	PartitionKey  json.RawMessage `json:"partitionKey"`
}

// batchOpTypes are the operation types of a batch, by their wire names.
var batchOpTypes = []string{"Create", "Upsert", "Read", "Replace", "Delete", "Patch"}

// parseBatch translates a batch body into b. partitioned tells whether the
// container has partition key paths; pk is the batch's partition key value
// (from the header), which an operation's own partitionKey must equal. The
// error is a 400's message; nothing has been executed.
func parseBatch(body []byte, b *lethe.TransactionalBatch, pk lethe.PartitionKey, partitioned bool) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '[' {
		return fmt.Errorf("the batch body is not a JSON array of operations")
	}
	var list []json.RawMessage
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("the batch body is not valid JSON: %v", err)
	}
	if len(list) > lethe.MaxBatchOperations {
		return fmt.Errorf("the batch has %d operations, over the limit of %d", len(list), lethe.MaxBatchOperations)
	}
	for i, raw := range list {
		if err := addBatchOp(b, i, raw, pk, partitioned); err != nil {
			return err
		}
	}
	return nil
}

// batchOp is one operation of a batch or bulk request, checked.
type batchOp struct {
	typ     string // one of batchOpTypes
	id      string // for every type but Create and Upsert
	doc     []byte // Create, Upsert, Replace: the document, without the front's properties
	patch   lethe.PatchOperations
	ifMatch string // "" or "*": unconditional
	pk      lethe.PartitionKey
	hasPK   bool // the operation named its partition key
}

// parseBatchOp reads operation i (from 0) of a batch or bulk body.
// partitioned tells whether the container has partition key paths.
func parseBatchOp(i int, raw json.RawMessage, partitioned bool) (batchOp, error) {
	opErr := func(format string, args ...any) error {
		return fmt.Errorf("batch operation %d: %s", i, fmt.Sprintf(format, args...))
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return batchOp{}, opErr("the operation is not a JSON object")
	}
	var o batchOpJSON
	if err := json.Unmarshal(raw, &o); err != nil {
		return batchOp{}, opErr("the operation is not valid: %v", err)
	}
	if o.OperationType == nil {
		return batchOp{}, opErr("the operation has no operationType: one of %s", strings.Join(batchOpTypes, ", "))
	}
	var op batchOp
	for _, t := range batchOpTypes {
		if strings.EqualFold(*o.OperationType, t) {
			op.typ = t
		}
	}
	if op.typ == "" {
		return batchOp{}, opErr("the operationType %q is not one of %s", clip(*o.OperationType), strings.Join(batchOpTypes, ", "))
	}
	if o.IfNoneMatch != nil && *o.IfNoneMatch != "" {
		return batchOp{}, opErr("ifNoneMatch is not supported in batch operations by the lethe REST front")
	}
	if len(o.PartitionKey) > 0 && !bytes.Equal(o.PartitionKey, []byte("null")) {
		pk, err := opPartitionKey(o.PartitionKey, partitioned)
		if err != nil {
			return batchOp{}, opErr("%v", err)
		}
		op.pk, op.hasPK = pk, true
	}
	if o.IfMatch != nil && *o.IfMatch != "*" {
		op.ifMatch = *o.IfMatch
	}
	if o.ID != nil {
		op.id = *o.ID
	} else if op.typ != "Create" && op.typ != "Upsert" {
		return batchOp{}, opErr("the %s operation has no id", op.typ)
	}
	body := bytes.TrimSpace(o.ResourceBody)
	switch op.typ {
	case "Create", "Upsert", "Replace":
		if len(body) == 0 || body[0] != '{' {
			return batchOp{}, opErr("the %s operation's resourceBody is not a JSON object: it is the document", op.typ)
		}
		doc, err := inputDocument(body)
		if err != nil {
			return batchOp{}, opErr("%v", err)
		}
		op.doc = doc
	case "Patch":
		if len(body) == 0 {
			return batchOp{}, opErr("the Patch operation has no resourceBody: {\"operations\":[...]}")
		}
		ops, err := parsePatch(body)
		if err != nil {
			return batchOp{}, opErr("%v", err)
		}
		op.patch = ops
	}
	return op, nil
}

// addBatchOp adds operation i (from 0) of a transactional batch body to
// b, whose partition key value is pk.
func addBatchOp(b *lethe.TransactionalBatch, i int, raw json.RawMessage, pk lethe.PartitionKey, partitioned bool) error {
	op, err := parseBatchOp(i, raw, partitioned)
	if err != nil {
		return err
	}
	if op.hasPK && op.pk != pk {
		return messageError(withDetail(msgBatchPKMismatch, fmt.Sprintf("batch operation %d: the operation's partition key %s, the batch's %s", i, op.pk.String(), pk.String())))
	}
	var opts *lethe.TransactionalBatchItemOptions
	if op.ifMatch != "" {
		opts = &lethe.TransactionalBatchItemOptions{IfMatchEtag: op.ifMatch}
	}
	switch op.typ {
	case "Create":
		b.CreateItem(op.doc, opts)
	case "Upsert":
		b.UpsertItem(op.doc, opts)
	case "Replace":
		b.ReplaceItem(op.id, op.doc, opts)
	case "Read":
		b.ReadItem(op.id, opts)
	case "Delete":
		b.DeleteItem(op.id, opts)
	case "Patch":
		b.PatchItem(op.id, op.patch, opts)
	}
	return nil
}

// msgBatchPKMismatch is the service's message for a transactional batch
// operation whose partition key is not the batch's.
const msgBatchPKMismatch = "One or more operations within the batch request have a different partition key value than the request."

// opPartitionKey reads an operation's partitionKey: the JSON text of the
// header's array, in a string (as the JavaScript SDK writes it), or the
// array or a single value itself.
func opPartitionKey(raw json.RawMessage, partitioned bool) (lethe.PartitionKey, error) {
	text := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return lethe.PartitionKey{}, fmt.Errorf("the partitionKey is not valid: %v", err)
		}
	} else if raw[0] != '[' {
		text = "[" + text + "]"
	}
	pk, err := parsePKHeader(text)
	if err != nil {
		return pk, fmt.Errorf("the partitionKey is not valid: %v", err)
	}
	if !partitioned && (pk == lethe.NonePartitionKey || pk == lethe.NewPartitionKey()) {
		return lethe.NewPartitionKey(), nil
	}
	return pk, nil
}

// batch answers a batch request: POST on a container's documents with
// x-ms-cosmos-is-batch-request.
func (q *request) batch() {
	if headerTrue(q.r.Header.Get("x-ms-cosmos-batch-continue-on-error")) {
		q.unsupported("x-ms-cosmos-batch-continue-on-error applies to bulk requests: a transactional batch is all or nothing")
		return
	}
	db, c, p, pk, ok := q.pointTarget(true)
	if !ok {
		return
	}
	b := c.NewTransactionalBatch(pk)
	if err := parseBatch(q.body, &b, pk, len(p.PartitionKeyDefinition.Paths) > 0); err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return
	}
	opts := &lethe.TransactionalBatchOptions{EnableContentResponseOnWrite: !q.itemOptions().NoContentResponseOnWrite}
	resp, err := c.ExecuteTransactionalBatch(q.ctx(), b, opts)
	if err != nil {
		if e := q.errorStatus(err, 0); e.status == http.StatusRequestEntityTooLarge && strings.Contains(e.msg, "batch's response") {
			// as the service answers a batch whose response would pass 4 MB
			apiError{status: e.status, msg: e.msg, sub: subBatchResponseSizeExceeded, charge: resp.RequestCharge}.write(q.w)
			return
		}
		q.fail(err, resp.RequestCharge, 0)
		return
	}
	var out bytes.Buffer
	out.WriteByte('[')
	for i, r := range resp.OperationResults {
		if i > 0 {
			out.WriteByte(',')
		}
		res := opResult{status: r.StatusCode, charge: r.RequestCharge, etag: r.ETag}
		if r.ResourceBody != nil {
			res.body = db.withSelf(c.ID(), p.PartitionKeyDefinition.Paths, r.ResourceBody)
		}
		if r.Err != nil {
			e := q.errorStatus(r.Err, 0)
			res.msg, res.sub = e.msg, e.sub
		}
		writeOpResult(&out, res)
	}
	out.WriteByte(']')
	h := q.w.Header()
	l := q.layout(db, c, p)
	q.rangeHeaders(l, q.itemRange(l), resp.Success)
	setHeader(h, "x-ms-alt-content-path", "dbs/"+db.id+"/colls/"+c.ID())
	setHeader(h, "x-ms-content-path", ridString(containerRID(db.id, c.ID())))
	status := http.StatusOK
	if !resp.Success {
		status = http.StatusMultiStatus
	}
	q.reply(status, out.Bytes(), resp.RequestCharge)
}
