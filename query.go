package lethe

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/lethedb/lethe/internal/query"
)

// QueryOptions are the options of a query. A nil *QueryOptions means none.
type QueryOptions struct {
	// QueryParameters bind the query's @names to values: nil, bool, string,
	// any number kind, []any, map[string]any, json.RawMessage, or anything
	// encoding/json can marshal.
	QueryParameters []QueryParameter
	// PageSizeHint is the most items a page holds; 0 (or less) means
	// DefaultPageSize.
	PageSizeHint int32
	// PopulateIndexMetrics asks for the first page's IndexMetrics, as
	// azcosmos's option of the same name does.
	PopulateIndexMetrics bool
	// RequireCompositeIndexes refuses, with ErrBadRequest and Cosmos DB's
	// message, a query ordered by several paths that no composite index of
	// the container's IndexingPolicy serves (the same paths, in the same
	// directions or all reversed), as Cosmos DB does. Without it, lethe
	// runs such a query by sorting every item (the REST front sets it
	// unless told otherwise).
	RequireCompositeIndexes bool
	// ContinuationToken resumes a query after the page that returned it. It
	// is valid only for the same container, query text and parameters (else
	// the query fails with ErrBadRequest). See NewQueryItemsPager for what
	// resuming guarantees.
	ContinuationToken string
	// MaxPageBytes, when positive, ends a page before the result that
	// would take its results past this many bytes of JSON (a first result
	// larger than that alone is still returned), whatever PageSizeHint
	// says; the REST front sets the service's 4 MB.
	MaxPageBytes int
	// PageItemOverhead is added to each result's size where MaxPageBytes
	// counts it: what the caller will add to each (the REST front's system
	// properties).
	PageItemOverhead int
	// UserFunctions are the user-defined functions the query may call,
	// as udf.<name>(args...), by name (case-sensitive). A query that
	// calls one missing here fails with ErrBadRequest before evaluating
	// anything. See UserFunction.
	UserFunctions map[string]UserFunction
}

// UserFunction is a user-defined function that a query calls as
// udf.<name>(args...), anywhere an expression may stand: in the select
// list, WHERE, ORDER BY, GROUP BY, JOIN sources, subqueries and
// aggregates' arguments. It is called for each row that evaluates the
// call, with no lock of the store held.
//
// Its arguments are JSON values as encoding/json decodes them into an
// any: nil, bool, float64, string, []any and map[string]any. It is never
// given undefined: as in Cosmos DB, a call with an argument that is
// undefined (a missing property) is skipped, and the call is undefined.
// It returns a value of the same kinds (or anything else encoding/json
// can marshal), or Undefined for an undefined result, which a projection
// leaves out as it does a missing property; inside a returned []any,
// Undefined is null, and a property of a map[string]any whose value is
// Undefined is left out, as JavaScript's JSON.stringify has them.
//
// An error it returns, a panic it raises, or a result JSON cannot
// represent (NaN, an infinity, a func, ...) fails the query with
// ErrBadRequest; the *Error wraps a *UserFunctionError naming the
// function, which wraps the function's error. Its calls count against the
// page's QueryBudget: the page's time is looked at after every 16 calls
// at most, so a slow function ends a page early (or fails the query with
// ErrRequestTimeout when no progress is possible), but one call that
// does not return is not interrupted. It may be called from several
// goroutines at once.
type UserFunction func(args []any) (any, error)

// Undefined is what a UserFunction returns for an undefined result
// (JavaScript's undefined).
var Undefined = query.Undefined

// UserFunctionError is the cause (Error.Err) of a query that failed
// because a user-defined function it calls returned an error, panicked,
// or returned a value JSON cannot represent.
type UserFunctionError struct {
	Name string // the function's name, as the query calls it after udf.
	Err  error  // the function's error, or what was wrong
}

// Error returns "udf.Name: Err".
func (e *UserFunctionError) Error() string { return "udf." + e.Name + ": " + e.Err.Error() }

// Unwrap returns the function's error.
func (e *UserFunctionError) Unwrap() error { return e.Err }

// udfs converts the user-defined functions of a query's options.
func udfs(fs map[string]UserFunction) map[string]query.Func {
	if len(fs) == 0 {
		return nil
	}
	out := make(map[string]query.Func, len(fs))
	for name, f := range fs {
		if f != nil {
			out[name] = query.Func(f)
		}
	}
	return out
}

// Limits on one evaluation of a query. A query that would pass one fails
// with ErrBadRequest naming it; a query also stops, with its context's
// error, soon after its context is done, even inside one item's rows.
const (
	// MaxQueryValueSize is the largest string or array, in bytes of JSON,
	// that a query may build (with ||, CONCAT, REPLACE, TOSTRING,
	// ARRAY_CONCAT and the like), and the largest result, ORDER BY value or
	// DISTINCT value it may compute: twice MaxItemSize, so that any
	// projection of one item fits. Items returned as stored (SELECT *,
	// SELECT VALUE c) are not counted.
	MaxQueryValueSize = query.MaxValueSize
	// MaxQueryJoinRows is the most rows the FROM and JOIN clauses may
	// produce from one item (their cross product, before WHERE), those of
	// the subqueries evaluated for the item included.
	MaxQueryJoinRows = query.MaxJoinRowsPerItem
	// MaxQueryRows is the most rows a query may hold in all: rows that
	// passed WHERE, over every item, before DISTINCT, OFFSET and LIMIT.
	MaxQueryRows = query.MaxRows
	// MaxQueryBuiltBytes is the most bytes of computed results (not stored
	// items returned as stored) one evaluation may produce.
	MaxQueryBuiltBytes = query.MaxBuiltBytes
)

// QueryParameter is one named value of a parameterized query.
type QueryParameter struct {
	Name  string // "@name"
	Value any
}

// QueryItemsResponse is one page of query results.
type QueryItemsResponse struct {
	Items             [][]byte // the page's results, each a JSON value the caller owns
	RequestCharge     float64  // request units this page cost
	ContinuationToken string   // resumes after this page; empty on the last page
	// IndexMetrics, on the first page of a query with PopulateIndexMetrics,
	// says which index the query used and which paths it filters on that
	// the container's IndexingPolicy does not let it index, in the JSON of
	// Cosmos DB's x-ms-cosmos-index-utilization (which the REST front sends
	// in base64): an object with UtilizedSingleIndexes and
	// PotentialSingleIndexes, each a list of {"IndexSpec": "/path/?",
	// "FilterPreciseSet": true, "IndexPreciseSet": true,
	// "IndexImpactScore": "High"}, and UtilizedCompositeIndexes and
	// PotentialCompositeIndexes, each a list of {"IndexSpecs": ["/a ASC",
	// "/b DESC"], "IndexPreciseSet": true, "IndexImpactScore": "High"}.
	// lethe's indexes answer a condition exactly, so every entry is
	// precise.
	IndexMetrics string
	// QueryMetrics are the measured figures of this page, as Cosmos DB's
	// x-ms-documentdb-query-metrics writes them: name=value pairs joined
	// by ";", times in milliseconds with two decimals. The page that
	// evaluates the query (the first; each page of a streamed query)
	// counts the items the evaluation retrieved (retrievedDocumentCount,
	// retrievedDocumentSize: their stored JSON's bytes,
	// system properties aside), the time to parse it
	// (queryCompileTimeInMs) and bind its parameters and continuation
	// (queryLogicalPlanBuildTimeInMs), to find its candidates through an
	// index (indexLookupTimeInMs), to list every item when no index
	// serves (documentLoadTimeInMs), and to evaluate it
	// (VMExecutionTimeInMs, built-in functions included); a later page
	// served from that evaluation retrieves none, and its
	// documentLoadTimeInMs is the time to look its items up again. Every
	// page has its results (outputDocumentCount, outputDocumentSize), the
	// time to make the page and its token (writeOutputTimeInMs), and its
	// whole time (totalExecutionTimeInMs); indexUtilizationRatio is the
	// share of the retrieved items that had a result (1.00 when an index
	// found exactly the items the filter keeps). lethe has no separate
	// physical plan or optimization phase, and does not time user-defined
	// functions apart from VMExecutionTimeInMs: those times are 0.
	QueryMetrics string
}

// DefaultPageSize is the page size of a query without PageSizeHint.
const DefaultPageSize = 100

// QueryItemsPager pages through the results of a query. Use it from one
// goroutine at a time.
type QueryItemsPager struct {
	c        *Container
	text     string
	pk       PartitionKey // the partition (or prefix of a hierarchical key) queried; empty: every one
	opts     QueryOptions
	more     bool
	ran      bool         // the query has been evaluated
	res      query.Result // the evaluation, once run: its results and their keys
	items    [][]byte     // all results, once evaluated (a page's, streamed)
	streamed bool         // items are one page, and more follow: the next page evaluates again after its last
	whole    bool         // a streamed walk went far past its page: evaluate the rest whole
	metrics  bool         // IndexMetrics was returned (with the first page)
	srcs     []record     // the record each result was made from ("" if none), to drop results whose item is gone
	exam     int          // items the evaluation examined, charged with the first page
	next     int          // index in items of the next page's first result
	consumed int          // results before items[0] that counted against TOP and LIMIT (from the token)
	hash     uint64       // identifies the query, its parameters and partition key in tokens
	plan     indexPlan    // the index the evaluation used, if any
	met      queryMetrics // the figures of the evaluation, reported with the page that made it
	ip       *itemPages   // a query in item order, evaluated page by page (query_budget.go); nil otherwise
}

// NewQueryItemsPager returns a pager over the results of query, in the
// Cosmos DB for NoSQL query language, over the items of the logical
// partition pk: NewPartitionKey() queries every partition, and on a
// hierarchical key the first one or two components query every partition
// they begin. Errors (a bad query, a bad
// continuation token) come from NextPage. Expired items never appear in any
// result, count or aggregate.
//
// # Queries and paging
//
// Results come in the order of their keys: the ORDER BY values, then the
// position of the item the result was made from, then the result's
// position among the rows of that item (JOINs). An item's position is
// given when it is created (by CreateItem, or UpsertItem of a missing or
// expired item, alone or in a batch), after every other item's of its
// container, and kept by every later write of it, as Cosmos DB's "_rid" is:
// so results without ORDER BY come in the order the items were created,
// across partitions, and results with equal ORDER BY values in that order
// too. An item deleted, or expired, and created again is a new item, at
// the end. DISTINCT results are ordered by
// their ORDER BY values, then by their value itself; GROUP BY results by
// their group's values (each group is one result, and keeps its place
// whatever other groups come and go between pages); an aggregate without
// GROUP BY, or a query without FROM, has at most one result.
//
// Each page runs under the store's QueryBudget (time, rows, memory): a
// page that spends it ends early, possibly empty, with a continuation; a
// query that cannot make progress within it fails with ErrRequestTimeout.
// A query in item order (no ORDER BY, DISTINCT, aggregate or GROUP BY)
// lists the items live at its first page's instant (their records, not
// their results), and each page evaluates as many of them as it needs,
// from where the last ended, each item with the content the list holds,
// if it is still live at the instant of the page; resumed from a continuation token, it walks
// the container's items in position order from the token's, so page n
// costs what one page costs. Other queries are evaluated whole within one
// page's budget.
//
// A pager of another query evaluates it once, on its first page, over the
// items live at one instant: each of the container's shards is read under its lock in
// turn, so every item is seen exactly once, either as it was before a
// concurrent write or as it is after it, and an item that expires during
// the query is seen by none of it. Later pages of the same pager come from
// that evaluation, as it was, less the results whose item, looked up again
// at the instant of the page, has been deleted or has expired since; a
// result whose item was written again since is kept, with the content of
// the evaluation. So one pager never returns a result twice, and never one
// whose item is not live at the instant of the page; it does not return
// items created after its first page.
//
// A query ordered by paths an index walks in order (one path, or the paths
// of a composite index) that has more results than a page is streamed
// instead: each page is evaluated on its own, at its own instant, by a
// walk of the index that starts at the ORDER BY values of the last result
// returned, exactly as a pager given the previous page's continuation token
// would (below), so a streamed pager has a continuation token's guarantees
// rather than those above (it may return items created after its first
// page, and the result of an item rewritten with a later ORDER BY value
// again). A page costs what its walk examines, not the whole container;
// when a walk has to go far past its page (many items share a value), the
// pager evaluates the rest whole, once. A query without ORDER BY whose
// filter an index answers, with TOP or LIMIT, is evaluated on as few of the
// index's candidates, taken in item order, as its results need. Whether a
// query streams depends on the indexes the container has made so far.
//
// A continuation token holds the key of the last result of its page (its
// ORDER BY values and its item's position) and how many results have been
// counted against TOP and LIMIT. A pager given
// one evaluates the query again, at its own instant, and returns only the
// results whose keys come after that key, without applying OFFSET again and
// with TOP and LIMIT reduced by the results already counted. So resuming
// skips no result of an item that stayed live and unchanged, and repeats
// none, whatever was written, deleted or expired in between; a result
// whose item was written since may move: it is returned again if its new
// ORDER BY values place it after the token, and not at all if they place
// it before. DISTINCT results are keyed by their values: a value is
// returned again on resumption only if its ORDER BY values changed. A token
// is refused (ErrBadRequest) by another container (one deleted and created
// again under the same id included), another query text, other parameters
// or another partition key, and when malformed or written by a version of
// lethe before positions. It holds the ORDER BY values in clear, so it
// grows with them.
//
// A sorted evaluation (ORDER BY that no index walks) holds only the rows
// its results need: with TOP or LIMIT, the first of them (and OFFSET's);
// resumed from a token without DISTINCT, GROUP BY or aggregate, a page's
// and one more, its first page then being evaluated as a streamed one is,
// and the pager's later pages whole, once, from that page's key. Its
// memory grows with those results, not with the items, and it evaluates
// the select list of a row (user-defined functions included) only if the
// row may be one of them: a row that passes WHERE but is turned away by
// its ORDER BY values fails no limit of its results.
//
// Limits: an evaluation stops with its context's error soon after ctx is
// done, even within one item, and fails with ErrBadRequest when it would
// pass MaxQueryValueSize, MaxQueryJoinRows, MaxQueryRows or
// MaxQueryBuiltBytes, or when one LIKE would need more than about 67
// million character comparisons (LIKE is linear in the string for patterns
// whose parts between % are literal text).
func (c *Container) NewQueryItemsPager(query string, pk PartitionKey, o *QueryOptions) *QueryItemsPager {
	p := &QueryItemsPager{c: c, text: query, pk: pk, more: true}
	if o != nil {
		p.opts = *o
	}
	return p
}

// More reports whether NextPage has a page to return.
func (p *QueryItemsPager) More() bool { return p.more }

// NextPage returns the next page of results. A query that would overdraw
// the container's throughput fails with ErrTooManyRequests and may be
// retried: the pager stays where it was.
func (p *QueryItemsPager) NextPage(ctx context.Context) (QueryItemsResponse, error) {
	const op = "QueryItems"
	start := time.Now()
	c := p.c
	if c == nil {
		return QueryItemsResponse{}, notOpened()
	}
	if err := c.check(ctx, op, ""); err != nil {
		return QueryItemsResponse{}, err
	}
	if !p.more {
		return QueryItemsResponse{}, withContext(badRequest("the query has no more pages"), op, c.id, "")
	}
	first := !p.ran
	if first {
		if err := p.run(ctx); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				return QueryItemsResponse{}, err
			}
			if err := c.draw(op, "", chargeFailure); err != nil {
				return QueryItemsResponse{}, err
			}
			return QueryItemsResponse{RequestCharge: ru(chargeFailure)}, withContext(e, op, c.id, "")
		}
	}
	size := int(p.opts.PageSizeHint)
	if size <= 0 {
		size = DefaultPageSize
	}
	if p.ip != nil {
		return p.nextItemPage(ctx, start, first, size)
	}
	end := min(len(p.items), p.next+size)
	if limit := p.opts.MaxPageBytes; limit > 0 {
		bytes := 0
		for i := p.next; i < end; i++ {
			if bytes += len(p.items[i]) + p.opts.PageItemOverhead; bytes > limit && i > p.next {
				end = i
				break
			}
		}
	}
	page := p.items[p.next:end]
	var m queryMetrics
	if first {
		m = p.met
	} else {
		w := startWatch()
		page = p.keepLive(page, p.srcs[p.next:end])
		w.addTo(&m.load)
	}
	w := startWatch()
	examined := 0
	if first {
		examined = p.exam
	}
	cost := queryCharge(examined, len(page))
	if err := c.draw(op, "", cost); err != nil {
		if first {
			// A retry evaluates the query again, at its own instant.
			p.ran, p.res, p.items, p.srcs, p.next = false, query.Result{}, nil, nil, 0
		}
		return QueryItemsResponse{}, err
	}
	p.next = end
	resp := QueryItemsResponse{Items: page, RequestCharge: ru(cost)}
	if first && p.opts.PopulateIndexMetrics && !p.metrics {
		resp.IndexMetrics, p.metrics = p.plan.metrics(), true
	}
	if end < len(p.items) || p.streamed {
		resp.ContinuationToken = encodeToken(continuation{
			Container: c.id,
			Created:   c.created,
			Hash:      p.hash,
			Consumed:  p.consumed + end,
			Key:       p.res.Key(end - 1),
		})
		if end == len(p.items) {
			// A streamed page: the next evaluates the query again, from
			// where this one ends.
			p.opts.ContinuationToken = resp.ContinuationToken
			p.ran, p.res, p.items, p.srcs, p.next = false, query.Result{}, nil, nil, 0
		}
	} else {
		p.more = false
		p.res, p.items, p.srcs = query.Result{}, nil, nil
	}
	w.addTo(&m.write)
	m.output = len(page)
	for _, it := range page {
		m.outBytes += len(it)
	}
	m.total = time.Since(start)
	resp.QueryMetrics = m.String()
	return resp, nil
}

// keepLive leaves out of a later page the results whose item has been
// deleted or has expired since the query was evaluated, looking each up as
// it is now. Results made from no single item stay.
func (p *QueryItemsPager) keepLive(page [][]byte, srcs []record) [][]byte {
	c := p.c
	now := c.store.clock.now()
	kept := page[:0:0]
	for i, item := range page {
		if srcs[i] == "" || c.itemLive(srcs[i], now) {
			kept = append(kept, item)
		}
	}
	return kept
}

// queryDoc presents a record to the query engine: its stored body, a view
// of the immutable record, and its "_ts" and "_etag" apart. The document's
// identity, which orders results without ORDER BY (and ties of ORDER BY
// values) and which continuation tokens hold, is the item's position
// (record.go): every version of an item has it, and results come in the
// order the items were created, as Cosmos DB returns them in the order of
// their "_rid".
func (rec record) queryDoc() query.Doc {
	body := rec.body()
	return query.Doc{ID: rec.posKey(), JSON: unsafe.Slice(unsafe.StringData(body), len(body)), Sys: true, TS: rec.ts(), ETag: rec.etag()}
}

// itemLive reports whether the item rec is a version of (any version of
// it: the same id, partition key value and position) is live at now. An
// item deleted and created again is another item.
func (c *Container) itemLive(rec record, now int64) bool {
	pk, id := rec.pk(), rec.id()
	sh, h := c.shardFor(pk, id)
	sh.mu.RLock()
	cur := sh.items.get(pk, id, h)
	live := cur != "" && cur.pos() == rec.pos() && c.rule.live(cur, now)
	sh.mu.RUnlock()
	return live
}

// run parses and evaluates the query.
func (p *QueryItemsPager) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := p.c.pkPaths.check(p.pk, true); err != nil {
		return err
	}
	p.met = queryMetrics{}
	w := startWatch()
	q, err := query.Parse(p.text)
	if err != nil {
		return queryError(err)
	}
	funcs := udfs(p.opts.UserFunctions)
	if err := q.CheckUDFs(funcs); err != nil {
		return queryError(err)
	}
	w = w.addTo(&p.met.compile)
	params := make(map[string]any, len(p.opts.QueryParameters))
	for _, qp := range p.opts.QueryParameters {
		if !strings.HasPrefix(qp.Name, "@") || len(qp.Name) < 2 {
			return badRequest("the query parameter name %q must start with '@'", qp.Name)
		}
		if _, dup := params[qp.Name]; dup {
			return badRequest("the query parameter %q is given twice", qp.Name)
		}
		params[qp.Name] = qp.Value
	}
	if p.hash, err = queryHash(p.text, p.pk, p.opts.QueryParameters); err != nil {
		return err
	}
	var from *query.Resume
	if tok := p.opts.ContinuationToken; tok != "" {
		ct, err := decodeToken(tok)
		if err != nil {
			return err
		}
		if ct.Container != p.c.id {
			return badRequest("the continuation token belongs to another container (%q)", ct.Container)
		}
		if ct.Created != p.c.created {
			return badRequest("the continuation token belongs to a container %q that has been deleted", ct.Container)
		}
		if ct.Hash != p.hash {
			return badRequest("the continuation token belongs to another query or other parameters")
		}
		if !q.Fits(ct.Key) {
			return badRequest("the continuation token does not fit the query")
		}
		from = &query.Resume{After: ct.Key, Consumed: ct.Consumed, Offset: ct.Skipped}
	}
	if p.opts.RequireCompositeIndexes {
		if err := p.c.checkOrderByIndex(q); err != nil {
			return err
		}
	}
	w = w.addTo(&p.met.bind)

	now := p.c.store.clock.now()
	p.plan = indexPlan{}
	size := int(p.opts.PageSizeHint)
	if size <= 0 {
		size = DefaultPageSize
	}
	if p.whole {
		size = 0 // evaluated whole, pages served from the evaluation
	}
	env := p.c.queryEnv(ctx, now)
	env.UDFs = funcs
	if need, full, inOrder := q.InItemOrder(params); inOrder {
		st := itemCursor{}
		if from != nil {
			st = itemCursor{after: from.After, consumed: from.Consumed, skipped: from.Offset}
			if item := from.After.Item(); item != "" {
				if len(item) != 8 {
					return badRequest("the continuation token is malformed")
				}
				st.from = binary.BigEndian.Uint64([]byte(item))
				if from.After.PastItem() {
					st.from++
				}
			}
		}
		if err := p.startItemPages(ctx, q, params, need, full, st, env); err != nil {
			return err
		}
		p.ran = true
		return nil
	}
	pctx := p.c.newPageCtx(ctx, now)
	ctx = pctx
	env = p.c.pageEnv(env, p.c.store.opts.QueryBudget.Rows, 0)
	// runVector, runText and runOrdered evaluate holding the batch lock
	// for reading: a query that calls user code is evaluated as others
	// are, on the candidates an index finds for its filter, with no lock
	// held.
	var res query.Result
	var recs []record
	var ok, more bool
	var walked int
	if p.c.store.useIndexes() && from == nil {
		// A count an index answers alone.
		lw := startWatch()
		n, counted := p.c.indexCount(q, params, p.pk, now, &p.plan)
		lw.addTo(&p.plan.lookup)
		if counted {
			res, ok = query.CountResult(q, n), true
		}
	}
	if !ok && !q.CallsUDFs() {
		res, recs, ok, err = p.c.runVector(ctx, q, params, p.pk, now, from, size, env)
		if !ok && err == nil {
			res, recs, ok, err = p.c.runText(ctx, q, params, p.pk, now, from, size, env)
		}
	}
	if !ok && err == nil && !q.CallsUDFs() {
		res, recs, ok, more, walked, err = p.c.runOrdered(ctx, q, params, p.pk, now, from, &p.plan, size, env)
	}
	if more && walked > 8*(size+1) {
		// The walk had to go far past its page (many items share a
		// value): the pages after this one are evaluated whole, once,
		// rather than walking the same items again for each.
		p.whole = true
	}
	if !ok && err == nil {
		var docs []query.Doc
		var eval *query.Query
		docs, recs, eval, err = p.c.queryDocs(ctx, q, params, p.pk, now, &p.plan)
		if err != nil {
			return err
		}
		// (Queries in item order were paged above: startItemPages.)
		keep := from != nil && size > 0 && eval.Prunes()
		if keep {
			// Resumed: the page and one more result, to tell whether
			// more follow, are all it holds; the pager's next page
			// evaluates the rest whole, once (p.whole).
			from.Keep = size + 1
		}
		res, err = query.ExecFrom(ctx, eval, params, docs, time.Unix(0, now).UTC(), from, env)
		if keep && len(res.Items) > size {
			more, p.whole = true, true
			res.Truncate(size)
		}
	}
	if err != nil {
		if outOfBudget(err) {
			return budgetError(err)
		}
		return queryError(err)
	}
	var eval time.Duration
	w.addTo(&eval)
	p.met.lookup, p.met.load = p.plan.lookup, p.plan.load
	p.met.exec = max(0, eval-p.plan.lookup-p.plan.load)
	p.met.retrieve, p.met.retBytes, p.met.matched = res.Examined, res.ExaminedBytes, res.Matched
	p.ran, p.res, p.items, p.exam, p.next, p.streamed = true, res, res.Items, res.Examined, 0, more
	if from != nil {
		p.consumed = from.Consumed
	}
	p.srcs = make([]record, len(res.Items))
	for i, src := range res.Sources {
		if src >= 0 {
			p.srcs[i] = recs[src]
		}
	}
	return nil
}

// queryEnv is what the container's queries at now know of it beyond their
// items: the languages of its full-text policy, the distance functions and
// element types of its vector embedding policy, and FullTextScore's
// statistics, those of all its items live at now, in every partition (from
// the path's full-text index when it has one).
func (c *Container) queryEnv(ctx context.Context, now int64) *query.Env {
	c.expiry.mu.Lock()
	fp, vp := c.props.FullTextPolicy, c.props.VectorEmbeddingPolicy // replaced whole, never changed in place
	c.expiry.mu.Unlock()
	env := &query.Env{TextStats: func(path []string, lang string, terms []string) query.TextStats {
		if st, ok := c.indexedTextStats(path, lang, terms, now); ok {
			return st
		}
		docs, _, err := c.liveDocsUnbatched(ctx, PartitionKey{}, now)
		if err != nil {
			return query.TextStats{}
		}
		return query.CorpusStats(docs, path, lang, terms)
	}}
	if fp != nil {
		env.TextLanguage = fp.language
	}
	if vp != nil {
		env.Vector = vp.embedding
	}
	return env
}

// queryDocs lists the items q is evaluated on: the candidates an index
// finds for one of the conditions of its WHERE clause, when there is one
// the container's policy lets it index, else every item (liveDocs); in
// both cases only those live at now in the partitions whose key begins with
// pk. eval is the query to evaluate on them, so that results are a scan's:
// q, less the conditions the index decided (query.Residual).
func (c *Container) queryDocs(ctx context.Context, q *query.Query, params map[string]any, pk PartitionKey, now int64, plan *indexPlan) (docs []query.Doc, recs []record, eval *query.Query, err error) {
	w := startWatch()
	if c.store.useIndexes() {
		docs, recs, eval, ok := c.indexedDocs(q, params, pk, now, plan)
		w = w.addTo(&plan.lookup)
		if ok {
			return docs, recs, eval, ctx.Err()
		}
	}
	defer w.addTo(&plan.load)
	docs, recs, err = c.liveDocs(ctx, pk, now)
	return docs, recs, q, err
}

// indexedDocs is queryDocs through an index, if q has a condition one can
// answer: a full-text filter (textDocs), or a range (rangeRecs). It holds
// the batch lock for reading, as liveDocs does.
func (c *Container) indexedDocs(q *query.Query, params map[string]any, pk PartitionKey, now int64, plan *indexPlan) ([]query.Doc, []record, *query.Query, bool) {
	if docs, recs, ok := c.textDocs(q, params, pk, now, plan); ok {
		return docs, recs, q, true
	}
	live, _, eval, ok := c.rangeRecs(q, params, pk, now, plan)
	if !ok {
		return nil, nil, nil, false
	}
	docs := make([]query.Doc, len(live))
	recs := make([]record, len(live))
	for i, p := range live {
		docs[i], recs[i] = p.rec.queryDoc(), p.rec
	}
	return docs, recs, eval, true
}

// rangeRecs lists, through the index of one of the conditions of q's
// WHERE clause that an index can answer (query.IndexRanges), the most
// selective first, the items that satisfy it and are live at now in the
// partitions whose key begins with pk, in position order; ok is false when
// no such condition has an index (yet). eval is q less the conditions the
// index decided (query.Residual): evaluated on the items listed, it gives
// q's results; without a WHERE clause left, every item listed passes. g
// tells later whether an item listed has been replaced or removed since.
// It holds the batch lock for reading, as liveDocs does.
func (c *Container) rangeRecs(q *query.Query, params map[string]any, pk PartitionKey, now int64, plan *indexPlan) (recs []posRec, g indexGuard, eval *query.Query, ok bool) {
	ranges := q.IndexRanges(params)
	if len(ranges) == 0 {
		return nil, g, nil, false
	}
	slices.SortStableFunc(ranges, func(a, b query.IndexRange) int { return rangeRank(a) - rangeRank(b) })
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	for _, r := range ranges {
		recs, g, found, indexed := c.liveCandidates(r, pk, now)
		if !found {
			if !indexed {
				plan.potential = append(plan.potential, indexSpec(r.Path))
			}
			continue
		}
		plan.used = indexSpec(r.Path)
		return recs, g, q.Residual(params, r), true
	}
	return nil, g, nil, false
}

// runOrdered evaluates a query ordered by paths an index can walk in order
// (query.OrderedByPaths): one path's index, or a composite index of
// several. It evaluates the query on the items the walk meets first,
// walking four times further each time the results might depend on items
// not met yet, and stops when the walk has reached the end or when the
// last result it needs comes strictly before the last value the walk took
// (so every item not met comes after every result). The results it needs
// are TOP's or LIMIT's, or, when there are more than a page (page > 0),
// a page's: then it returns that page alone, and more reports whether
// results follow it. A query resuming after a result (from) starts its
// walk at that result's values. ok is false, with no error, when the query
// is not of that kind (it is evaluated as usual).
func (c *Container) runOrdered(ctx context.Context, q *query.Query, params map[string]any, pk PartitionKey, now int64, from *query.Resume, plan *indexPlan, page int, env *query.Env) (res query.Result, recs []record, ok, more bool, walked int, err error) {
	if !c.store.useIndexes() {
		return res, nil, false, false, 0, nil
	}
	paths, descs, need, full, ok := q.OrderedByPaths(params)
	if !ok {
		return res, nil, false, false, 0, nil
	}
	offset, target, paged := pageTarget(need, full, from, page)
	if target < 0 {
		return res, nil, false, false, 0, nil
	}
	var start []query.IndexKey
	if from != nil {
		start = from.OrderKeys()
	}
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	var walk func(want int) (recs []record, last []query.IndexKey, exhausted bool, rule expiryRule, current bool)
	w := startWatch()
	if len(paths) > 1 {
		walk, ok = c.compositeWalk(q, params, paths, descs, start, plan)
	} else {
		walk, ok = c.pathWalk(q, params, paths[0], descs[0], start, plan)
	}
	w.addTo(&plan.lookup)
	if !ok {
		return res, nil, false, false, 0, nil
	}
	if h := c.store.testHooks(); h != nil && h.beforeOrderedWalk != nil {
		h.beforeOrderedWalk()
	}
	for want := max(2*(offset+target), 8); ; want *= 4 {
		w := startWatch()
		all, last, exhausted, rule, current := walk(want)
		w.addTo(&plan.lookup)
		if !current {
			// A policy change dropped the index: the query scans.
			plan.used, plan.usedComposite = "", nil
			return res, nil, false, false, 0, nil
		}
		res, recs, err = execOn(ctx, q, params, pk, now, all, rule, from, env)
		if err != nil {
			return res, nil, true, false, len(all), err
		}
		n := len(res.Items)
		if exhausted || target == 0 || n >= target && res.OrderKeysBefore(target-1, last, descs) {
			if paged {
				more = n > page
				res.Truncate(page)
			}
			return res, recs, true, more, len(all), nil
		}
	}
}

// pageTarget returns, for a query whose results are decided by need
// leading rows and number full (-1 and -1: every row is a result), resuming
// after from (nil: from the start), the OFFSET still to apply and how many
// results an evaluation needs: TOP's or LIMIT's (less those counted before
// from), or, when there are more than a page (page > 0), a page's and one
// more to tell whether more follow (paged). target is -1 when every result
// is needed.
func pageTarget(need, full int, from *query.Resume, page int) (offset, target int, paged bool) {
	offset = need - full // OFFSET, applied by the first evaluation alone
	if from != nil {
		offset = 0
		if full >= 0 {
			full = max(0, full-from.Consumed)
		}
	}
	if page > 0 && (full < 0 || page < full) {
		return offset, page + 1, true
	}
	return offset, full, false
}

// pathWalk returns the walk of the index of path for runOrdered, making
// the index if need be; ok is false when the query cannot use it. A filter
// an index answers: on another path, its candidates are sorted instead (a
// walk in order would meet the items the filter drops); on this path,
// ascending, it bounds the walk, which starts at its first value (the
// filter drops undefined values anyway). The caller holds c.batchMu for
// reading.
func (c *Container) pathWalk(q *query.Query, params map[string]any, path []string, desc bool, start []query.IndexKey, plan *indexPlan) (walk func(int) ([]record, []query.IndexKey, bool, expiryRule, bool), ok bool) {
	var bound *query.IndexRange
	for _, r := range q.IndexRanges(params) {
		if !slices.Equal(r.Path, path) || desc || r.Points != nil {
			// Another path, or equality: the index's candidates, sorted.
			return nil, false
		}
		bound = &r
	}
	idx, _ := c.indexFor(path, true)
	if idx == nil {
		plan.potential = append(plan.potential, indexSpec(path))
		return nil, false
	}
	plan.used = indexSpec(path)
	var from *query.IndexKey
	if start != nil {
		from = &start[0]
	}
	return func(want int) ([]record, []query.IndexKey, bool, expiryRule, bool) {
		recs, last, exhausted, rule, current := c.ordered(idx, desc, want, bound, from)
		return recs, []query.IndexKey{last}, exhausted, rule, current
	}, true
}

// compositeWalk returns the walk of the composite index that serves an
// ORDER BY of several paths for runOrdered, when the policy has one and
// the query has no filter an index answers (whose candidates are sorted
// instead). The caller holds c.batchMu for reading.
func (c *Container) compositeWalk(q *query.Query, params map[string]any, paths [][]string, descs []bool, start []query.IndexKey, plan *indexPlan) (walk func(int) ([]record, []query.IndexKey, bool, expiryRule, bool), ok bool) {
	if len(q.IndexRanges(params)) > 0 {
		return nil, false
	}
	ix, reverse, potential := c.compositeFor(paths, descs)
	if ix == nil {
		if potential != nil {
			plan.potentialComposite = append(plan.potentialComposite, potential.specs())
		}
		return nil, false
	}
	plan.usedComposite = ix.spec.specs()
	return func(want int) ([]record, []query.IndexKey, bool, expiryRule, bool) {
		return c.orderedComposite(ix, reverse, want, start)
	}, true
}

// execOn evaluates q, resuming after from (nil: from the start), on those
// of recs that are live at now (by rule) in the partitions whose key
// begins with pk, and returns them beside the result.
func execOn(ctx context.Context, q *query.Query, params map[string]any, pk PartitionKey, now int64, recs []record, rule expiryRule, from *query.Resume, env *query.Env) (query.Result, []record, error) {
	docs, live := liveOf(recs, rule, now, pk)
	res, err := query.ExecFrom(ctx, q, params, docs, time.Unix(0, now).UTC(), from, env)
	return res, live, err
}

// liveOf keeps those of recs that are live at now (by rule) in the
// partitions whose key begins with pk, as query documents and as records
// (reusing recs' array).
func liveOf(recs []record, rule expiryRule, now int64, pk PartitionKey) ([]query.Doc, []record) {
	docs := make([]query.Doc, 0, len(recs))
	live := recs[:0]
	for _, rec := range recs {
		if rule.live(rec, now) && strings.HasPrefix(rec.pk(), pk.enc) {
			docs = append(docs, rec.queryDoc())
			live = append(live, rec)
		}
	}
	return docs, live
}

// indexPlan records how a query found its items, for IndexMetrics, and
// how long that took, for QueryMetrics.
type indexPlan struct {
	lookup             time.Duration // finding candidates through an index, or walking one
	load               time.Duration // listing every live item
	used               string        // the index spec of the index used ("": none)
	potential          []string      // paths filtered on that the policy does not index
	usedComposite      []string      // the composite index used, as specs (nil: none)
	potentialComposite [][]string    // composite indexes that would serve the ORDER BY
}

// indexSpec writes a path as an IndexingPolicy path of its value.
func indexSpec(path []string) string {
	var sb strings.Builder
	for _, n := range path {
		sb.WriteByte('/')
		if isPlainName(n) {
			sb.WriteString(n)
		} else {
			sb.WriteString(strconv.Quote(n))
		}
	}
	sb.WriteString("/?")
	return sb.String()
}

func isPlainName(s string) bool {
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// metrics writes the plan as IndexMetrics, in the JSON Cosmos DB sends
// (base64) as x-ms-cosmos-index-utilization. lethe's indexes answer a
// filter exactly, so every entry is precise; the impact of an index the
// query would use is High (it would be walked instead of every item).
func (p *indexPlan) metrics() string {
	type single struct {
		IndexSpec        string
		FilterPreciseSet bool
		IndexPreciseSet  bool
		IndexImpactScore string
	}
	type composite struct {
		IndexSpecs       []string
		IndexPreciseSet  bool
		IndexImpactScore string
	}
	m := struct {
		UtilizedSingleIndexes     []single
		PotentialSingleIndexes    []single
		UtilizedCompositeIndexes  []composite
		PotentialCompositeIndexes []composite
	}{[]single{}, []single{}, []composite{}, []composite{}}
	if p.used != "" {
		m.UtilizedSingleIndexes = append(m.UtilizedSingleIndexes, single{p.used, true, true, "High"})
	}
	for _, s := range p.potential {
		m.PotentialSingleIndexes = append(m.PotentialSingleIndexes, single{s, true, true, "High"})
	}
	if p.usedComposite != nil {
		m.UtilizedCompositeIndexes = append(m.UtilizedCompositeIndexes, composite{p.usedComposite, true, "High"})
	}
	for _, s := range p.potentialComposite {
		m.PotentialCompositeIndexes = append(m.PotentialCompositeIndexes, composite{s, true, "High"})
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// rangeRank orders the conditions an index could answer by how few
// candidates they are likely to find.
func rangeRank(r query.IndexRange) int {
	switch r.Kind() {
	case "equality":
		return 0
	case "in":
		return 1
	case "prefix":
		return 2
	}
	if r.Bounded() {
		return 3
	}
	return 4
}

// liveDocs lists the container's items live at now in the partitions whose
// key begins with pk, and their records, reading each shard under its read
// lock in turn, and holding the container's batch lock for reading
// throughout, so that it sees all of a transactional batch or none of it.
// The documents are views of immutable records.
func (c *Container) liveDocs(ctx context.Context, pk PartitionKey, now int64) ([]query.Doc, []record, error) {
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	return c.liveDocsUnbatched(ctx, pk, now)
}

// liveDocsUnbatched is liveDocs without the batch lock: it may see part of
// a transactional batch. FullTextScore's statistics, computed while the
// evaluation that asks for them may already hold the batch lock for
// reading, are read with it: taking that lock again there would deadlock
// behind a batch waiting for it.
func (c *Container) liveDocsUnbatched(ctx context.Context, pk PartitionKey, now int64) ([]query.Doc, []record, error) {
	n := c.itemCount()
	docs := make([]query.Doc, 0, n)
	recs := make([]record, 0, n)
	for i := range c.shards {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		sh := &c.shards[i]
		sh.mu.RLock()
		rule := c.rule
		sh.items.all(func(rec record) bool {
			if rule.live(rec, now) && strings.HasPrefix(rec.pk(), pk.enc) {
				docs = append(docs, rec.queryDoc())
				recs = append(recs, rec)
			}
			return true
		})
		sh.mu.RUnlock()
	}
	return docs, recs, nil
}

// QueryItems runs a query and yields its results one by one, fetching pages
// as needed. On failure it yields the error and stops.
func (c *Container) QueryItems(ctx context.Context, query string, pk PartitionKey, o *QueryOptions) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		p := c.NewQueryItemsPager(query, pk, o)
		for p.More() {
			page, err := p.NextPage(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, item := range page.Items {
				if !yield(item, nil) {
					return
				}
			}
		}
	}
}

// queryError turns an error of the query package into a 400.
func queryError(err error) error {
	var qe *query.Error
	if errors.As(err, &qe) {
		return &Error{StatusCode: statusBadRequest, Message: qe.Error(), Err: err}
	}
	var ue *query.UDFError
	if errors.As(err, &ue) {
		return &Error{StatusCode: statusBadRequest, Err: &UserFunctionError{Name: ue.Name, Err: ue.Err},
			Message: fmt.Sprintf("Encountered exception while executing function udf.%s. Exception = %v", ue.Name, ue.Err)}
	}
	return err // the context's error
}

// continuation is what a continuation token holds. Its encoding, in
// unpadded base64url, is a version byte (tokenVersion), then the container
// id (its length as a uvarint, then its bytes), its creation (a uvarint),
// the query hash (8 bytes, little-endian), Consumed and Skipped (uvarints),
// then the key (query.Key's AppendBinary) to the end. Version 1 had no
// creation, and keys that named items by partition key value and id rather
// than by position; version 2 no Skipped: both are refused.
type continuation struct {
	Container string    // the id of the container the query ran in
	Created   uint64    // the write sequence number of its creation: a container made again under the id is another
	Hash      uint64    // queryHash of the query text, partition key and parameters
	Consumed  int       // results counted against TOP and LIMIT so far
	Skipped   int       // results OFFSET dropped so far (item-order queries, whose first pages may end before OFFSET is done)
	Key       query.Key // the key of the last result returned
}

// tokenVersion is the version of the token format encodeToken writes.
const tokenVersion = 3

func encodeToken(ct continuation) string {
	b := []byte{tokenVersion}
	b = binary.AppendUvarint(b, uint64(len(ct.Container)))
	b = append(b, ct.Container...)
	b = binary.AppendUvarint(b, ct.Created)
	b = binary.LittleEndian.AppendUint64(b, ct.Hash)
	b = binary.AppendUvarint(b, uint64(ct.Consumed))
	b = binary.AppendUvarint(b, uint64(ct.Skipped))
	b = ct.Key.AppendBinary(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeToken reads a token that encodeToken wrote; anything else is a 400.
func decodeToken(s string) (continuation, error) {
	malformed := func() (continuation, error) {
		return continuation{}, badRequest("the continuation token is malformed")
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return malformed()
	}
	if b[0] != tokenVersion {
		return continuation{}, badRequest("the continuation token has version %d; this version of lethe reads version %d", b[0], tokenVersion)
	}
	b = b[1:]
	var ct continuation
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return malformed()
	}
	ct.Container = string(b[w : w+int(n)])
	b = b[w+int(n):]
	if ct.Created, w = binary.Uvarint(b); w <= 0 {
		return malformed()
	}
	b = b[w:]
	if len(b) < 8 {
		return malformed()
	}
	ct.Hash = binary.LittleEndian.Uint64(b)
	b = b[8:]
	n, w = binary.Uvarint(b)
	if w <= 0 || n > 1<<31-1 {
		return malformed()
	}
	ct.Consumed = int(n)
	b = b[w:]
	n, w = binary.Uvarint(b)
	if w <= 0 || n > 1<<31-1 {
		return malformed()
	}
	ct.Skipped = int(n)
	var ok bool
	if ct.Key, ok = query.ParseKey(b[w:]); !ok {
		return malformed()
	}
	return ct, nil
}

// queryHash identifies a query text with its partition key and parameters,
// whatever the order the parameters are given in (the REST front gives them
// in the order of a map). A parameter that cannot be encoded as JSON is a
// 400 naming it.
func queryHash(text string, pk PartitionKey, params []QueryParameter) (uint64, error) {
	h := fnv.New64a()
	h.Write([]byte(text))
	h.Write([]byte{0})
	h.Write([]byte(pk.enc))
	params = slices.SortedFunc(slices.Values(params), func(a, b QueryParameter) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range params {
		v, err := json.Marshal(p.Value)
		if err != nil {
			return 0, badRequest("the query parameter %s cannot be encoded as JSON: %v", p.Name, err)
		}
		h.Write([]byte{0})
		h.Write([]byte(p.Name))
		h.Write([]byte{0})
		h.Write(v)
	}
	return h.Sum64(), nil
}
