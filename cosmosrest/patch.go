package cosmosrest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/lethedb/lethe"
)

// Partial document update (PATCH on a document), translated onto
// lethe.Container.PatchItem.
//
// The body is {"operations":[...],"condition":"FROM c WHERE ..."} (the
// condition optional), or a bare array of operations (the JavaScript
// SDK's PatchRequestBody may be either). An operation is
// {"op":"add"|"set"|"replace","path":…,"value":…}, {"op":"remove","path":…},
// {"op":"incr","path":…,"value":number} or {"op":"move","from":…,"path":…}.

// patchOpJSON is one patch operation as the SDKs send it.
type patchOpJSON struct {
	Op    *string         `json:"op"`
	Path  *string         `json:"path"`
	From  *string         `json:"from"`
	Value json.RawMessage `json:"value"`
}

// patchBodyJSON is a patch request's body in its object form.
type patchBodyJSON struct {
	Operations json.RawMessage `json:"operations"`
	Condition  *string         `json:"condition"`
}

// parsePatch translates a patch body into lethe.PatchOperations. The error
// is a 400's message. The operations themselves (their count, paths and
// values) are checked by lethe when the patch is applied.
func parsePatch(body []byte) (lethe.PatchOperations, error) {
	var p lethe.PatchOperations
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return p, fmt.Errorf("the patch has no body: send {\"operations\":[{\"op\":\"set\",\"path\":\"/a\",\"value\":1}]}")
	}
	ops := body
	if body[0] == '{' {
		var b patchBodyJSON
		if err := json.Unmarshal(body, &b); err != nil {
			return p, fmt.Errorf("the patch body is not valid JSON: %v", err)
		}
		if b.Condition != nil {
			p.SetCondition(*b.Condition)
		}
		ops = bytes.TrimSpace(b.Operations)
		if len(ops) == 0 || bytes.Equal(ops, []byte("null")) {
			return p, fmt.Errorf("the patch body has no \"operations\" array")
		}
	}
	if ops[0] != '[' {
		return p, fmt.Errorf("the patch's operations are not an array: the body is {\"operations\":[...],\"condition\":\"FROM c WHERE ...\"}")
	}
	var list []json.RawMessage
	if err := json.Unmarshal(ops, &list); err != nil {
		return p, fmt.Errorf("the patch body is not valid JSON: %v", err)
	}
	if len(list) > lethe.MaxPatchOperations {
		return p, fmt.Errorf("the patch has %d operations, over the limit of %d", len(list), lethe.MaxPatchOperations)
	}
	for k, raw := range list {
		if err := appendPatchOp(&p, k, raw); err != nil {
			return p, err
		}
	}
	return p, nil
}

// appendPatchOp appends operation k (from 0) of a patch body to p.
func appendPatchOp(p *lethe.PatchOperations, k int, raw json.RawMessage) error {
	opErr := func(format string, args ...any) error {
		// Numbered from 1, in the words Cosmos DB and lethe use.
		return messageError("For Operation(" + strconv.Itoa(k+1) + "): " + fmt.Sprintf(format, args...))
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return opErr("the operation is not an object: {\"op\":\"set\",\"path\":\"/a\",\"value\":1}")
	}
	var o patchOpJSON
	if err := json.Unmarshal(raw, &o); err != nil {
		return opErr("the operation is not valid: %v", err)
	}
	if o.Op == nil {
		return opErr("the operation has no \"op\": add, set, replace, remove, incr or move")
	}
	if o.Path == nil {
		return opErr("the %s operation has no \"path\"", clip(*o.Op))
	}
	path := *o.Path
	hasValue := len(o.Value) > 0
	switch *o.Op {
	case "add", "set", "replace":
		if !hasValue {
			return opErr("the %s operation has no \"value\" (send \"value\":null to store null)", *o.Op)
		}
		if path == "/ttl" && string(bytes.TrimSpace(o.Value)) == "null" {
			return errNullTTL // the document it makes would be refused
		}
		switch *o.Op {
		case "add":
			p.AppendAdd(path, o.Value)
		case "set":
			p.AppendSet(path, o.Value)
		default:
			p.AppendReplace(path, o.Value)
		}
	case "remove":
		p.AppendRemove(path)
	case "incr":
		if !hasValue {
			return opErr("the incr operation has no \"value\": the number to add")
		}
		isInt, n, f, ok := parseNumber(o.Value)
		switch {
		case !ok:
			return opErr("the incr operation's value %s is not a number", clip(string(o.Value)))
		case isInt:
			p.AppendIncrement(path, n)
		default:
			p.AppendIncrementFloat(path, f)
		}
	case "move":
		if o.From == nil {
			return opErr("the move operation has no \"from\": the path of the value to move")
		}
		p.AppendMove(*o.From, path)
	default:
		return opErr("the operation type %q is not one of add, set, replace, remove, incr and move", clip(*o.Op))
	}
	return nil
}

// messageError is an error whose text is a response's message as it is.
type messageError string

func (e messageError) Error() string { return string(e) }

// parseNumber reads a JSON number: an integer that fits an int64, or else
// a finite double.
func parseNumber(v json.RawMessage) (isInt bool, n int64, f float64, ok bool) {
	s := string(bytes.TrimSpace(v))
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) || !json.Valid([]byte(s)) {
		return false, 0, 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return true, n, 0, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil { // out of range: ±Inf
		return false, 0, 0, false
	}
	return false, 0, f, true
}

// patchDocument answers PATCH on a document.
func (q *request) patchDocument() {
	db, c, p, pk, ok := q.pointTarget(true)
	if !ok {
		return
	}
	ops, err := parsePatch(q.body)
	if err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return
	}
	resp, err := c.PatchItem(q.ctx(), pk, q.t.id, ops, q.itemOptions())
	if err != nil {
		q.fail(err, resp.RequestCharge, 0)
		return
	}
	q.replyItem(db, c, p, resp, true)
}
