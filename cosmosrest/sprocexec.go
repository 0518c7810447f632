package cosmosrest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest/internal/script"
	"github.com/lethedb/lethe/internal/query"
)

// Stored procedure execution: POST on a stored procedure, with the JSON
// array of its parameters and the partition key it runs in
// (x-ms-documentdb-partitionkey). internal/script runs the procedure; its
// collection is the partition (partitionStore), and its writes, kept in
// the execution's overlay, are committed together when it ends as one
// transactional batch (the one write path: TTL, _ts, the log, the change
// feed and the indexes see them as a batch), or dropped when it throws or
// runs out of a budget. The batch's limits are the transaction's: a
// procedure writes at most lethe.MaxBatchOperations items and
// lethe.MaxItemSize bytes of them; past them its writes are not accepted
// (they return false, as past its time), and it may return what it did so
// that the client calls it again for the rest.
//
// Each write's first read of its item takes the item's ETag, and the batch
// writes IfMatch it: a concurrent write of the same item in between makes
// the batch fail, and the procedure is run again from the start (at most
// maxSprocAttempts times, then 449 Retry With), so that an execution is
// serializable as the service's are.

// maxCachedPrograms bounds the compiled scripts the handler keeps.
const maxCachedPrograms = 1000

// maxSprocAttempts is how many times a procedure whose commit met a
// concurrent write is run.
const maxSprocAttempts = 3

// statusRetryWith is the service's status of a write to retry.
const statusRetryWith = 449

// partitionStore is the script.Store of one partition of a container.
type partitionStore struct {
	db    *database
	c     *lethe.Container
	paths []string
	pk    lethe.PartitionKey
	now   func() time.Time
}

// scriptOpError returns a failed lethe call as the script's operation
// error, or err itself when the failure is not the operation's (the
// store's, a throttle, a cancellation): that ends the execution.
func scriptOpError(err error) error {
	var le *lethe.Error
	if errors.As(err, &le) && le.StatusCode < 500 && le.StatusCode != http.StatusTooManyRequests {
		return &script.OpError{Status: le.StatusCode, Message: serviceError(le, 0, "").msg}
	}
	return err
}

func (s *partitionStore) Read(ctx context.Context, id string) ([]byte, string, float64, error) {
	resp, err := s.c.ReadItem(ctx, s.pk, id, nil)
	if err != nil {
		return nil, "", resp.RequestCharge, scriptOpError(err)
	}
	return s.Decorate(resp.Value), resp.ETag, resp.RequestCharge, nil
}

func (s *partitionStore) Query(ctx context.Context, text string, params map[string]any) ([][]byte, float64, error) {
	opts := &lethe.QueryOptions{PageSizeHint: 1000}
	for name, v := range params {
		opts.QueryParameters = append(opts.QueryParameters, lethe.QueryParameter{Name: name, Value: v})
	}
	decorate := false
	if pq, err := query.Parse(text); err == nil {
		decorate = pq.ReturnsItems()
	}
	var out [][]byte
	var charge float64
	pager := s.c.NewQueryItemsPager(text, s.pk, opts)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		charge += page.RequestCharge
		if err != nil {
			return nil, charge, scriptOpError(err)
		}
		for _, it := range page.Items {
			if decorate {
				it = s.Decorate(it)
			}
			out = append(out, it)
		}
	}
	return out, charge, nil
}

func (s *partitionStore) Check(doc []byte) error {
	if len(s.paths) > 0 && docPartitionKey(doc, s.paths) != s.pk {
		return &script.OpError{Status: http.StatusBadRequest, Message: msgPKMismatch}
	}
	return nil
}

func (s *partitionStore) Decorate(doc []byte) []byte {
	return s.db.withSelf(s.c.ID(), s.paths, doc)
}

func (s *partitionStore) Links() (string, string) {
	return "dbs/" + s.db.id + "/colls/" + s.c.ID(), "dbs/" + ridString(s.db.rid) + "/colls/" + ridString(containerRID(s.db.id, s.c.ID())) + "/"
}

func (s *partitionStore) Now() time.Time { return s.now() }

// acquireScriptSlot waits for one of the handler's script slots: at most
// half the processors (one at least) run scripts at once, so that scripts
// that spin until they are stopped leave the other requests processors to
// run on. A request that waits longer than twice a script's time limit
// (what one running script may take, with its grace) gets 429 and false;
// the caller releases a slot it got.
func (q *request) acquireScriptSlot() bool {
	timeout := q.h.cfg.ScriptTimeout
	if timeout <= 0 {
		timeout = defaultScriptTimeout
	}
	t := time.NewTimer(2 * timeout)
	defer t.Stop()
	select {
	case q.h.scriptSlots <- struct{}{}:
		return true
	case <-q.ctx().Done():
		q.fail(q.ctx().Err(), 0, 0)
	case <-t.C:
		setHeader(q.w.Header(), "x-ms-retry-after-ms", "100")
		apiError{status: http.StatusTooManyRequests, msg: "Request rate is large: every script slot of the server was busy for twice a script's time limit", sub: subRUBudgetExceed}.write(q.w)
	}
	return false
}

func (q *request) releaseScriptSlot() { <-q.h.scriptSlots }

// defaultScriptTimeout is Config.ScriptTimeout's default, the service's.
const defaultScriptTimeout = 5 * time.Second

// scriptLimits are the budgets of one execution.
func (h *Handler) scriptLimits() script.Limits {
	return script.Limits{Timeout: h.cfg.ScriptTimeout, MaxHeapGrowth: h.cfg.ScriptMaxHeapGrowth}
}

// program returns the compiled program of script s, compiled once per
// version.
func (h *Handler) program(db *database, s *scriptRes) (*script.Program, error) {
	key := db.id + "\x00" + s.Coll + "\x00" + string(s.Kind) + "\x00" + s.ID + "\x00" + s.Nonce
	return h.programs.Get(key, s.Body)
}

// newTx returns a transaction of the partition st.
func (q *request) newTx(st *partitionStore) *script.Tx {
	return script.NewTx(q.ctx(), st, script.TxOptions{ReadOnly: q.readOnly, MaxOps: lethe.MaxBatchOperations, MaxBytes: lethe.MaxItemSize})
}

// executeSproc answers POST on a stored procedure: runs it.
func (q *request) executeSproc() {
	db, c, p, pk, ok := q.pointTarget(false)
	if !ok {
		return
	}
	s := db.lookupScript(q.t, kindSproc)
	if s == nil {
		q.answerError(http.StatusNotFound, msgResourceNotFound)
		return
	}
	prog, err := q.h.program(db, s)
	if err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return
	}
	args := q.body
	if len(args) > 0 {
		var arr []json.RawMessage
		if json.Unmarshal(args, &arr) != nil {
			q.answerError(http.StatusBadRequest, withDetail(msgPayloadInvalid, "the parameters of a stored procedure are a JSON array"))
			return
		}
	}
	logging := headerTrue(q.r.Header.Get("x-ms-documentdb-script-enable-logging"))
	if !q.acquireScriptSlot() {
		return
	}
	defer q.releaseScriptSlot()
	st := &partitionStore{db: db, c: c, paths: p.PartitionKeyDefinition.Paths, pk: pk, now: q.h.now}
	var charge float64
	for attempt := 1; ; attempt++ {
		tx := q.newTx(st)
		resp := &script.Message{}
		res, err := script.Run(q.ctx(), prog, &script.Env{Kind: script.Procedure, Tx: tx, Args: args, Response: resp, Logging: logging, Limits: q.h.scriptLimits()})
		charge += tx.Charge() + c.ChargeScriptTime(res.Duration)
		if logging && res.Log != "" {
			// URL-encoded as encodeURIComponent does, spaces as %20, so
			// that decodeURIComponent reads it back.
			setHeader(q.w.Header(), "x-ms-documentdb-script-log-results", strings.ReplaceAll(url.QueryEscape(res.Log), "+", "%20"))
		}
		if err != nil {
			q.scriptFailed(err, charge)
			return
		}
		ops := tx.Ops()
		committed, conflict, err := q.commit(c, pk, ops, false)
		charge += committed.RequestCharge
		if conflict && attempt < maxSprocAttempts {
			continue
		}
		if conflict {
			apiError{status: statusRetryWith, msg: fmt.Sprintf("the stored procedure's writes met concurrent writes of the same items %d times in a row; retry it", maxSprocAttempts), charge: charge}.write(q.w)
			return
		}
		if err != nil {
			q.fail(err, charge, 0)
			return
		}
		body := resp.Body
		if body == nil {
			body = []byte(`""`) // as the service answers a procedure that set no body
		}
		hdr := q.w.Header()
		l := q.layout(db, c, p)
		q.rangeHeaders(l, q.itemRange(l), len(ops) > 0)
		setHeader(hdr, "x-ms-alt-content-path", "dbs/"+db.id+"/colls/"+c.ID())
		setHeader(hdr, "x-ms-content-path", ridString(containerRID(db.id, c.ID())))
		q.reply(http.StatusOK, body, charge)
		return
	}
}

// commit writes a transaction's ops as one transactional batch. conflict
// reports that the batch failed on a concurrent write of one of its items
// (an ETag that changed, an item created or deleted meanwhile), which a
// new run may not meet.
func (q *request) commit(c *lethe.Container, pk lethe.PartitionKey, ops []script.Op, withBody bool) (resp lethe.TransactionalBatchResponse, conflict bool, err error) {
	return commitOps(q.ctx(), c, pk, ops, withBody)
}

// commitOps is commit under the context ctx (conflicts.go's merge runs
// outside a request).
func commitOps(ctx context.Context, c *lethe.Container, pk lethe.PartitionKey, ops []script.Op, withBody bool) (resp lethe.TransactionalBatchResponse, conflict bool, err error) {
	if len(ops) == 0 {
		return resp, false, nil
	}
	b := c.NewTransactionalBatch(pk)
	for _, op := range ops {
		o := &lethe.TransactionalBatchItemOptions{IfMatchEtag: op.IfMatch}
		switch op.Kind {
		case script.OpCreate:
			b.CreateItem(op.Doc, nil)
		case script.OpReplace:
			b.ReplaceItem(op.ID, op.Doc, o)
		case script.OpDelete:
			b.DeleteItem(op.ID, o)
		}
	}
	resp, err = c.ExecuteTransactionalBatch(ctx, b, &lethe.TransactionalBatchOptions{EnableContentResponseOnWrite: withBody})
	if err != nil || resp.Success {
		return resp, false, err
	}
	for _, r := range resp.OperationResults {
		var le *lethe.Error
		if errors.As(r.Err, &le) && le.Message == msgUniqueViolation {
			return resp, false, r.Err // the policy's, which a new run meets again
		}
		switch r.StatusCode {
		case http.StatusConflict, http.StatusPreconditionFailed, http.StatusNotFound:
			return resp, true, nil
		}
		if r.Err != nil {
			return resp, false, r.Err
		}
	}
	return resp, false, errors.New("the batch failed without a failed operation")
}

// commitFor is commit for a write that ran triggers: it returns the
// result of the write of item id (zero when the triggers undid it).
func (q *request) commitFor(c *lethe.Container, pk lethe.PartitionKey, ops []script.Op, id string) (lethe.TransactionalBatchResult, float64, bool, error) {
	resp, conflict, err := q.commit(c, pk, ops, true)
	if err != nil || conflict {
		return lethe.TransactionalBatchResult{}, resp.RequestCharge, conflict, err
	}
	for i, op := range ops {
		if op.ID == id && i < len(resp.OperationResults) {
			return resp.OperationResults[i], resp.RequestCharge, false, nil
		}
	}
	return lethe.TransactionalBatchResult{}, resp.RequestCharge, false, nil
}

// scriptFailed answers a script that failed: as the service does, a
// thrown error is 400 (its substatus the thrown Error's number, if any),
// a script past its time 408; the message carries the script's error.
func (q *request) scriptFailed(err error, charge float64) {
	var se *script.Error
	if !errors.As(err, &se) {
		q.fail(err, charge, 0)
		return
	}
	msg := func(detail string) string {
		b, _ := json.Marshal(map[string][]string{"Errors": {"Encountered exception while executing function. Exception = " + detail}})
		return "Message: " + string(b)
	}
	switch se.Reason {
	case script.Failed:
		q.fail(se.Err, charge, 0)
	case script.Cancelled:
		q.fail(context.Canceled, charge, 0)
	case script.Forbidden:
		apiError{status: http.StatusForbidden, msg: msgInsufficientPermissions + " (the resource token's permission is Read: the stored procedure may not write)", charge: charge}.write(q.w)
	case script.Timeout:
		apiError{status: http.StatusRequestTimeout, msg: msg(se.Message), charge: charge}.write(q.w)
	default:
		apiError{status: http.StatusBadRequest, msg: msg(se.Message), sub: se.Number, charge: charge}.write(q.w)
	}
}
