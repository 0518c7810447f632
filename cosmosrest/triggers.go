package cosmosrest

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest/internal/script"
)

// Triggers run on a write of a document (create, upsert, replace, delete)
// only when the request names them: x-ms-documentdb-pre-trigger-include
// and x-ms-documentdb-post-trigger-include, each a comma-separated list
// of trigger ids. Such a write runs as a stored procedure would: in a
// transaction of the request's partition (sprocexec.go). The pre-triggers
// run first, in order, and may read and change the request's body
// (getContext().getRequest()) or reject the write by throwing; then the
// write itself; then the post-triggers, which see the written document
// (getContext().getResponse().getBody()); then everything is committed as
// one batch. A trigger that throws, or runs out of its budget, leaves
// nothing written. A trigger that is missing is 404; one of the wrong
// type (a Post named as a pre-trigger) or for another operation is 400.

// triggerHeaders are the headers that name a write's triggers.
const (
	preTriggerHeader  = "x-ms-documentdb-pre-trigger-include"
	postTriggerHeader = "x-ms-documentdb-post-trigger-include"
)

// triggerNames returns the ids a trigger header lists.
func triggerNames(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// hasTriggers reports whether the request names triggers.
func (q *request) hasTriggers() bool {
	return q.r.Header.Get(preTriggerHeader) != "" || q.r.Header.Get(postTriggerHeader) != ""
}

// triggerOp is the operation a write is, for triggers.
var triggerOp = map[script.WriteKind]string{
	script.WriteCreate:  "Create",
	script.WriteUpsert:  "Upsert",
	script.WriteReplace: "Replace",
	script.WriteDelete:  "Delete",
}

// runsOn reports whether a trigger for operation op runs on a write of
// kind k: All runs on every write, Update on a replace.
func runsOn(op string, k script.WriteKind) bool {
	return op == "All" || op == triggerOp[k] || op == "Update" && k == script.WriteReplace
}

// namedTrigger is a trigger a request names, compiled.
type namedTrigger struct {
	res  *scriptRes
	prog *script.Program
}

// namedTriggers finds and compiles the triggers of header h, which must be
// of type typ and run on a write of kind k; it answers the request itself
// when one is missing (404) or does not fit (400).
func (q *request) namedTriggers(db *database, h, typ string, k script.WriteKind) ([]namedTrigger, bool) {
	var out []namedTrigger
	for _, id := range triggerNames(q.r.Header.Get(h)) {
		s := db.lookupScript(target{coll: q.t.coll, id: id}, kindTrigger)
		if s == nil {
			q.answerError(http.StatusNotFound, withDetail(msgResourceNotFound, fmt.Sprintf("the container has no trigger %q", clip(id))))
			return nil, false
		}
		if s.Type != typ {
			q.answerError(http.StatusBadRequest, fmt.Sprintf("The trigger %q is a %s-trigger: it cannot be named in %s.", clip(id), strings.ToLower(s.Type), h))
			return nil, false
		}
		if !runsOn(s.Operation, k) {
			q.answerError(http.StatusBadRequest, fmt.Sprintf("The trigger %q runs on %s operations: it cannot be invoked on a %s.", clip(id), s.Operation, triggerOp[k]))
			return nil, false
		}
		prog, err := q.h.program(db, s)
		if err != nil {
			q.answerError(http.StatusBadRequest, err.Error())
			return nil, false
		}
		out = append(out, namedTrigger{s, prog})
	}
	return out, true
}

// triggeredWrite answers a write of kind k of the document id (its body
// doc, nil for a delete) that names triggers.
func (q *request) triggeredWrite(db *database, c *lethe.Container, p lethe.ContainerProperties, pk lethe.PartitionKey, k script.WriteKind, id string, doc []byte) {
	pre, ok := q.namedTriggers(db, preTriggerHeader, "Pre", k)
	if !ok {
		return
	}
	post, ok := q.namedTriggers(db, postTriggerHeader, "Post", k)
	if !ok {
		return
	}
	if !q.acquireScriptSlot() {
		return
	}
	defer q.releaseScriptSlot()
	st := &partitionStore{db: db, c: c, paths: p.PartitionKeyDefinition.Paths, pk: pk, now: q.h.now}
	ifMatch := q.itemOptions().IfMatchEtag
	var charge float64
	for attempt := 1; ; attempt++ {
		tx := q.newTx(st)
		req := &script.Message{Body: doc, OperationType: triggerOp[k]}
		for _, tr := range pre {
			res, err := script.Run(q.ctx(), tr.prog, &script.Env{Kind: script.PreTrigger, Tx: tx, Request: req, Limits: q.h.scriptLimits()})
			charge += c.ChargeScriptTime(res.Duration)
			if err != nil {
				q.scriptFailed(err, charge+tx.Charge())
				return
			}
		}
		writeID := id
		if k == script.WriteCreate || k == script.WriteUpsert {
			if writeID, ok = stringMember(req.Body, "id"); !ok {
				apiError{status: http.StatusBadRequest, msg: msgIDMissing, charge: charge + tx.Charge()}.write(q.w)
				return
			}
		}
		written, err := tx.Write(k, writeID, req.Body, ifMatch)
		if err != nil {
			var oe *script.OpError
			if errors.As(err, &oe) {
				apiError{status: oe.Status, msg: oe.Message, charge: charge + tx.Charge()}.write(q.w)
			} else {
				q.fail(err, charge+tx.Charge(), 0)
			}
			return
		}
		resp := &script.Message{Body: written, OperationType: triggerOp[k]}
		for _, tr := range post {
			res, err := script.Run(q.ctx(), tr.prog, &script.Env{Kind: script.PostTrigger, Tx: tx, Request: req, Response: resp, Limits: q.h.scriptLimits()})
			charge += c.ChargeScriptTime(res.Duration)
			if err != nil {
				q.scriptFailed(err, charge+tx.Charge())
				return
			}
		}
		charge += tx.Charge()
		ops := tx.Ops()
		result, commitCharge, conflict, err := q.commitFor(c, pk, ops, writeID)
		charge += commitCharge
		if conflict && attempt < maxSprocAttempts {
			continue
		}
		if conflict {
			apiError{status: statusRetryWith, msg: fmt.Sprintf("the write and its triggers met concurrent writes of the same items %d times in a row; retry it", maxSprocAttempts), charge: charge}.write(q.w)
			return
		}
		if err != nil {
			q.fail(err, charge, 0)
			return
		}
		status := http.StatusOK
		switch {
		case k == script.WriteDelete:
			status = http.StatusNoContent
		case result.StatusCode == http.StatusCreated:
			status = http.StatusCreated
		}
		if k == script.WriteDelete || q.itemOptions().NoContentResponseOnWrite {
			result.ResourceBody = nil
		}
		q.replyItem(db, c, p, lethe.ItemResponse{Value: result.ResourceBody, ETag: result.ETag, RequestCharge: charge, StatusCode: status}, true)
		return
	}
}
