package cosmosrest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
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

// addBatchOp adds operation i (from 0) of a batch body to b.
func addBatchOp(b *lethe.TransactionalBatch, i int, raw json.RawMessage, pk lethe.PartitionKey, partitioned bool) error {
	opErr := func(format string, args ...any) error {
		return fmt.Errorf("batch operation %d: %s", i, fmt.Sprintf(format, args...))
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return opErr("the operation is not a JSON object")
	}
	var o batchOpJSON
	if err := json.Unmarshal(raw, &o); err != nil {
		return opErr("the operation is not valid: %v", err)
	}
	if o.OperationType == nil {
		return opErr("the operation has no operationType: one of %s", strings.Join(batchOpTypes, ", "))
	}
	typ := ""
	for _, t := range batchOpTypes {
		if strings.EqualFold(*o.OperationType, t) {
			typ = t
		}
	}
	if typ == "" {
		return opErr("the operationType %q is not one of %s", clip(*o.OperationType), strings.Join(batchOpTypes, ", "))
	}
	if o.IfNoneMatch != nil && *o.IfNoneMatch != "" {
		return opErr("ifNoneMatch is not supported in batch operations by the lethe REST front")
	}
	if len(o.PartitionKey) > 0 && !bytes.Equal(o.PartitionKey, []byte("null")) {
		opk, err := opPartitionKey(o.PartitionKey, partitioned)
		if err != nil {
			return opErr("%v", err)
		}
		if opk != pk {
			return opErr("the operation's partition key %s is not the batch's %s: a transactional batch is on one partition key value", opk.String(), pk.String())
		}
	}
	var opts *lethe.TransactionalBatchItemOptions
	if o.IfMatch != nil && *o.IfMatch != "" && *o.IfMatch != "*" {
		opts = &lethe.TransactionalBatchItemOptions{IfMatchEtag: *o.IfMatch}
	}
	needID := typ != "Create" && typ != "Upsert"
	if needID && o.ID == nil {
		return opErr("the %s operation has no id", typ)
	}
	body := bytes.TrimSpace(o.ResourceBody)
	switch typ {
	case "Create", "Upsert", "Replace":
		if len(body) == 0 || body[0] != '{' {
			return opErr("the %s operation's resourceBody is not a JSON object: it is the document", typ)
		}
		doc, err := inputDocument(body)
		if err != nil {
			return opErr("%v", err)
		}
		switch typ {
		case "Create":
			b.CreateItem(doc, opts)
		case "Upsert":
			b.UpsertItem(doc, opts)
		default:
			b.ReplaceItem(*o.ID, doc, opts)
		}
	case "Read":
		b.ReadItem(*o.ID, opts)
	case "Delete":
		b.DeleteItem(*o.ID, opts)
	case "Patch":
		if len(body) == 0 {
			return opErr("the Patch operation has no resourceBody: {\"operations\":[...]}")
		}
		ops, err := parsePatch(body)
		if err != nil {
			return opErr("%v", err)
		}
		b.PatchItem(*o.ID, ops, opts)
	}
	return nil
}

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
	hdr := q.r.Header
	if !headerTrue(hdr.Get("x-ms-cosmos-batch-atomic")) {
		q.unsupported("bulk requests (x-ms-cosmos-is-batch-request without x-ms-cosmos-batch-atomic: True) are not supported by the lethe REST front yet: send transactional batches, or the operations one by one")
		return
	}
	if headerTrue(hdr.Get("x-ms-cosmos-batch-continue-on-error")) {
		q.unsupported("x-ms-cosmos-batch-continue-on-error applies to bulk requests: a transactional batch is all or nothing")
		return
	}
	db, c, p, pk, ok := q.pointTarget(true)
	if !ok {
		return
	}
	b := c.NewTransactionalBatch(pk)
	if err := parseBatch(q.body, &b, pk, len(p.PartitionKeyDefinition.Paths) > 0); err != nil {
		writeError(q.w, http.StatusBadRequest, err.Error(), 0, 0)
		return
	}
	opts := &lethe.TransactionalBatchOptions{EnableContentResponseOnWrite: !q.itemOptions().NoContentResponseOnWrite}
	resp, err := c.ExecuteTransactionalBatch(q.ctx(), b, opts)
	if err != nil {
		q.fail(err, resp.RequestCharge, 0)
		return
	}
	var out bytes.Buffer
	out.WriteByte('[')
	for i, r := range resp.OperationResults {
		if i > 0 {
			out.WriteByte(',')
		}
		out.WriteString(`{"statusCode":`)
		out.WriteString(strconv.Itoa(r.StatusCode))
		out.WriteString(`,"subStatusCode":0,"requestCharge":`)
		out.WriteString(formatCharge(r.RequestCharge))
		if r.ETag != "" {
			out.WriteString(`,"eTag":`)
			e, _ := json.Marshal(quoteETag(r.ETag))
			out.Write(e)
		}
		if r.ResourceBody != nil {
			out.WriteString(`,"resourceBody":`)
			out.Write(db.withSelf(c.ID(), p.PartitionKeyDefinition.Paths, r.ResourceBody))
		}
		if r.Err != nil {
			msg, _ := json.Marshal(r.Err.Error())
			out.WriteString(`,"message":`)
			out.Write(msg)
		}
		out.WriteByte('}')
	}
	out.WriteByte(']')
	h := q.w.Header()
	h.Set("x-ms-session-token", q.h.sessionToken(resp.Success))
	h.Set("x-ms-alt-content-path", "dbs/"+db.id+"/colls/"+c.ID())
	h.Set("x-ms-content-path", selfRID(containerRID(db.id, c.ID())))
	status := http.StatusOK
	if !resp.Success {
		status = http.StatusMultiStatus
	}
	q.reply(status, out.Bytes(), resp.RequestCharge)
}
