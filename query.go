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

	"github.com/lethedb/lethe/internal/geo"
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
	// the query fails with ErrBadRequest). The package documentation's
	// section "Query pages and continuation tokens" says what resuming
	// guarantees.
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
	// FeedRange, when set, narrows the query to the items whose effective
	// partition key lies in it (feedrange.go), within the partitions the
	// partition key names. A continuation token resumes over any feed
	// range, as Cosmos DB's resume over the ranges a split makes.
	FeedRange *FeedRange
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
	ip       *itemPages   // a query in item order, evaluated page by page (itemorder.go); nil otherwise
}

// NewQueryItemsPager returns a pager over the results of query, in the
// Cosmos DB for NoSQL query language, over the items of the logical
// partition pk: NewPartitionKey() queries every partition, and on a
// hierarchical key the first one or two components query every partition
// they begin. Errors (a bad query, a bad continuation token) come from
// NextPage. Expired items never appear in any result, count or aggregate.
//
// Results come in the order of their keys: the ORDER BY values, then the
// position of the item they were made from (items are in the order they
// were created), then their position among that item's rows. Each page
// runs under the store's QueryBudget: it may end early, even empty, with
// a continuation token, and a query that cannot make progress within one
// page fails with ErrRequestTimeout. A pager evaluates most queries once,
// on its first page, over the items live at that instant, and serves its
// later pages from that evaluation, less the results whose item has been
// deleted or has expired since; a query in item order, or one an index
// streams in ORDER BY's order, is evaluated page by page instead, each
// page resuming after the last as a continuation token does. A token
// (QueryOptions.ContinuationToken) resumes after the key of the last
// result of its page: it skips no result of an item that stayed live and
// unchanged, and repeats none; another container, query text, parameters
// or partition key refuse it (ErrBadRequest).
//
// An evaluation stops with its context's error soon after ctx is done,
// and fails with ErrBadRequest when it would pass MaxQueryValueSize,
// MaxQueryJoinRows, MaxQueryRows or MaxQueryBuiltBytes, or when one LIKE
// would need more than about 67 million character comparisons.
//
// The package documentation's section "Query pages and continuation
// tokens" says in full what each page evaluates, at which instant, what
// a pager and a token guarantee when items are written meanwhile, and
// what a page costs.
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
			return p.fail(op, err)
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

// fail returns the response and error of a page whose query failed with
// err: an *Error is charged a failed request's charge; another error (the
// context's) is returned as it is, and charged nothing.
func (p *QueryItemsPager) fail(op string, err error) (QueryItemsResponse, error) {
	var e *Error
	if !errors.As(err, &e) {
		return QueryItemsResponse{}, err
	}
	charge, err := p.c.chargeFailed(op, "")
	if err != nil {
		return QueryItemsResponse{}, err
	}
	return QueryItemsResponse{RequestCharge: charge}, withContext(e, op, p.c.id, "")
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
	scope, serr := p.c.scope(p.opts.FeedRange)
	if serr != nil {
		return serr
	}
	p.pk.scope = scope
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
	size := int(p.opts.PageSizeHint)
	if size <= 0 {
		size = DefaultPageSize
	}
	if p.whole {
		size = 0 // evaluated whole, pages served from the evaluation
	}
	env := p.c.queryEnv(ctx, now)
	env.UDFs = funcs
	r := &queryRun{c: p.c, q: q, params: params, pk: p.pk, now: now, from: from, page: size, env: env}
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
		err := p.startItemPages(ctx, r, need, full, st)
		p.plan = r.plan
		if err != nil {
			return err
		}
		p.ran = true
		return nil
	}
	ctx = p.c.newPageCtx(ctx, now)
	r.env = p.c.pageEnv(env, p.c.store.opts.QueryBudget.Rows, 0)
	ev, err := r.evaluate(ctx)
	p.plan = r.plan
	if err != nil {
		return err
	}
	res := ev.res
	var eval time.Duration
	w.addTo(&eval)
	p.met.lookup, p.met.load = p.plan.lookup, p.plan.load
	p.met.exec = max(0, eval-p.plan.lookup-p.plan.load)
	p.met.retrieve, p.met.retBytes, p.met.matched = res.Examined, res.ExaminedBytes, res.Matched
	p.ran, p.res, p.items, p.exam, p.next, p.streamed = true, res, res.Items, res.Examined, 0, ev.more
	p.whole = p.whole || ev.whole
	if from != nil {
		p.consumed = from.Consumed
	}
	p.srcs = make([]record, len(res.Items))
	for i, src := range res.Sources {
		if src >= 0 {
			p.srcs[i] = ev.recs[src]
		}
	}
	return nil
}

// queryRun is one evaluation of a query, what each step of its plan
// needs: the query, its parameters, the partitions it reads (those whose
// key begins with pk), its instant, where it resumes, the results a page
// needs, its environment, and the record of the indexes it used.
type queryRun struct {
	c      *Container
	q      *query.Query
	params map[string]any
	pk     PartitionKey
	now    int64
	from   *query.Resume // resume after this result; nil: from the start
	page   int           // the results of a page (0: every result, evaluated whole)
	env    *query.Env
	// plan records the indexes used, for the pager (a value, not the
	// pager's: a pointer in a queryRun escapes, and the pager with it).
	plan indexPlan
}

// evaluation is what a plan made of a query.
type evaluation struct {
	res  query.Result
	recs []record // the records res.Sources index
	// more says that res is one page (streamed) and more results follow;
	// whole, that the pages after this one are better evaluated whole,
	// once, than page by page.
	more, whole bool
}

// A queryPlan is one way to evaluate a query that is not in item order
// (those are paged by itemorder.go).
type queryPlan uint8

// The plans, in the order evaluate tries them.
const (
	planCount   queryPlan = iota // a count an index answers alone, reading no item (indexCount)
	planVector                   // TOP k by VectorDistance, on the items a vector index finds nearest (vector)
	planText                     // TOP k by FullTextScore, on the items a full-text index scores best (text)
	planOrdered                  // ORDER BY paths an index walks in order, as far as the page needs (ordered)
	planWhole                    // the candidates an index finds for the filter, or every item, evaluated whole (whole)
)

// evaluate evaluates r by the first plan that can: of those r's shape
// allows (mayUse), in the order of their constants, each but planWhole
// may find that it cannot after all (no index made or allowed yet, one a
// policy change dropped, too few candidates), and the next is tried.
// planVector, planText and planOrdered evaluate holding the batch lock
// for reading, so a query that calls user code never uses them: it is
// evaluated, with no lock held, on the candidates an index finds for its
// filter (planWhole).
func (r *queryRun) evaluate(ctx context.Context) (evaluation, error) {
	for plan := planCount; plan < planWhole; plan++ {
		if !r.mayUse(plan) {
			continue
		}
		var ev evaluation
		var ok bool
		var err error
		switch plan {
		case planCount:
			w := startWatch()
			var n int
			n, ok = r.indexCount()
			w.addTo(&r.plan.lookup)
			if ok {
				ev.res = query.CountResult(r.q, n)
			}
		case planVector:
			ev, ok, err = r.vector(ctx)
		case planText:
			ev, ok, err = r.text(ctx)
		case planOrdered:
			ev, ok, err = r.ordered(ctx)
		}
		if ok || err != nil {
			return ev, evalError(err)
		}
	}
	return r.whole(ctx)
}

// evalError is the error of an evaluation that failed (nil if it did
// not): a 408 when it ran out of its page's budget, a 400 when the query
// is wrong, else the context's error.
func evalError(err error) error {
	if err == nil {
		return nil
	}
	if outOfBudget(err) {
		return budgetError(err)
	}
	return queryError(err)
}

// mayUse reports whether r's shape lets plan evaluate it: every plan but
// planWhole needs the indexes (Store.useIndexes); planCount, a count that starts
// from the first result; planVector and planText, a query that starts
// from the first result and calls no user-defined function; planOrdered,
// one that calls none.
func (r *queryRun) mayUse(plan queryPlan) bool {
	if plan != planWhole && !r.c.store.useIndexes() {
		return false
	}
	switch plan {
	case planCount:
		return r.from == nil && r.q.CountsRows() && !r.q.Joins()
	case planVector, planText:
		return r.from == nil && !r.q.CallsUDFs()
	case planOrdered:
		return !r.q.CallsUDFs()
	}
	return true
}

// whole evaluates r on the candidates an index finds for its filter, or
// on every item (docs); an error listing them is returned as it is.
// Resumed, with a page to fill, a query whose evaluation prunes
// (query.Query.Prunes) keeps the page and one more result, to tell
// whether more follow: the pager's next page evaluates the rest whole,
// once.
func (r *queryRun) whole(ctx context.Context) (evaluation, error) {
	docs, recs, eval, err := r.docs(ctx)
	if err != nil {
		return evaluation{}, err
	}
	from := r.from
	keep := from != nil && r.page > 0 && eval.Prunes()
	if keep {
		from.Keep = r.page + 1
	}
	ev := evaluation{recs: recs}
	ev.res, err = query.ExecFrom(ctx, eval, r.params, docs, time.Unix(0, r.now).UTC(), from, r.env)
	if err != nil {
		return evaluation{}, evalError(err)
	}
	if keep && len(ev.res.Items) > r.page {
		ev.more, ev.whole = true, true
		ev.res.Truncate(r.page)
	}
	return ev, nil
}

// queryEnv is what the container's queries at now know of it beyond their
// items: the languages of its full-text policy, the distance functions and
// element types of its vector embedding policy, the model of its
// geospatialConfig, and FullTextScore's statistics, those of all its items
// live at now, in every partition (from the path's full-text index when it
// has one).
func (c *Container) queryEnv(ctx context.Context, now int64) *query.Env {
	c.mu.Lock()
	fp, vp := c.props.FullTextPolicy, c.props.VectorEmbeddingPolicy // replaced whole, never changed in place
	model := c.props.geoModel()
	c.mu.Unlock()
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
	env.Geometry = model == geo.Geometry
	return env
}

// docs lists the items r's query is evaluated on: the candidates an index
// finds for one of the conditions of its WHERE clause, when there is one
// the container's policy lets it index, else every item (liveDocs); in
// both cases only those live at r.now in r's partitions. eval is the query
// to evaluate on them, so that results are a scan's: r.q, less the
// conditions the index decided (query.Residual).
func (r *queryRun) docs(ctx context.Context) (docs []query.Doc, recs []record, eval *query.Query, err error) {
	w := startWatch()
	if r.c.store.useIndexes() {
		docs, recs, eval, ok := r.indexedDocs()
		w = w.addTo(&r.plan.lookup)
		if ok {
			return docs, recs, eval, ctx.Err()
		}
	}
	defer w.addTo(&r.plan.load)
	docs, recs, err = r.c.liveDocs(ctx, r.pk, r.now)
	return docs, recs, r.q, err
}

// indexedDocs is docs through an index, if r's query has a condition one
// can answer: a full-text filter (textDocs), a spatial one (spatialDocs),
// or a range (rangeRecs). It
// holds the batch lock for reading, as liveDocs does.
func (r *queryRun) indexedDocs() ([]query.Doc, []record, *query.Query, bool) {
	if docs, recs, ok := r.textDocs(); ok {
		return docs, recs, r.q, true
	}
	if docs, recs, ok := r.spatialDocs(); ok {
		return docs, recs, r.q, true
	}
	live, _, eval, ok := r.rangeRecs()
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

// rangeRecs lists, through the index of one of the conditions of r's
// WHERE clause that an index can answer (query.IndexRanges), the most
// selective first, the items that satisfy it and are live at r.now in
// r's partitions, in position order; ok is false when no such condition
// has an index (yet). eval is r.q less the conditions the index decided
// (query.Residual): evaluated on the items listed, it gives r.q's
// results; without a WHERE clause left, every item listed passes. g tells
// later whether an item listed has been replaced or removed since. It
// holds the batch lock for reading, as liveDocs does.
func (r *queryRun) rangeRecs() (recs []posRec, g indexGuard, eval *query.Query, ok bool) {
	ranges := r.q.IndexRanges(r.params)
	if len(ranges) == 0 {
		return nil, g, nil, false
	}
	slices.SortStableFunc(ranges, func(a, b query.IndexRange) int { return rangeRank(a) - rangeRank(b) })
	c := r.c
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	for _, rg := range ranges {
		recs, g, found, indexed := c.liveCandidates(rg, r.pk, r.now)
		if !found {
			if !indexed {
				r.plan.potential = append(r.plan.potential, indexSpec(rg.Path))
			}
			continue
		}
		r.plan.used = indexSpec(rg.Path)
		return recs, g, r.q.Residual(r.params, rg), true
	}
	return nil, g, nil, false
}

// ordered evaluates a query ordered by paths an index can walk in order
// (query.OrderedByPaths): one path's index, or a composite index of
// several. It evaluates the query on the items the walk meets first,
// walking four times further each time the results might depend on items
// not met yet, and stops when the walk has reached the end or when the
// last result it needs comes strictly before the last value the walk took
// (so every item not met comes after every result). The results it needs
// are TOP's or LIMIT's, or, when there are more than a page (r.page > 0),
// a page's: then it returns that page alone, and ev.more reports whether
// results follow it (ev.whole, that the walk went so far past the page
// that the pages after it are better evaluated whole). A query resuming
// after a result (r.from) starts its walk at that result's values. ok is
// false, with no error, when the query is not of that kind (the next plan
// evaluates it).
func (r *queryRun) ordered(ctx context.Context) (ev evaluation, ok bool, err error) {
	paths, descs, need, full, ok := r.q.OrderedByPaths(r.params)
	if !ok {
		return ev, false, nil
	}
	offset, target, paged := pageTarget(need, full, r.from, r.page)
	if target < 0 {
		return ev, false, nil
	}
	var start []query.IndexKey
	if r.from != nil {
		start = r.from.OrderKeys()
	}
	c := r.c
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	var walk func(want int) (recs []record, last []query.IndexKey, exhausted bool, rule expiryRule, current bool)
	w := startWatch()
	if len(paths) > 1 {
		walk, ok = r.compositeWalk(paths, descs, start)
	} else {
		walk, ok = r.pathWalk(paths[0], descs[0], start)
	}
	w.addTo(&r.plan.lookup)
	if !ok {
		return ev, false, nil
	}
	if h := c.store.testHooks(); h != nil && h.beforeOrderedWalk != nil {
		h.beforeOrderedWalk()
	}
	for want := max(2*(offset+target), 8); ; want *= 4 {
		w := startWatch()
		all, last, exhausted, rule, current := walk(want)
		w.addTo(&r.plan.lookup)
		if !current {
			// A policy change dropped the index: the query scans.
			r.plan.used, r.plan.usedComposite = "", nil
			return ev, false, nil
		}
		ev.res, ev.recs, err = r.execOn(ctx, all, rule, r.from, r.env)
		if err != nil {
			return evaluation{}, true, err
		}
		n := len(ev.res.Items)
		if exhausted || target == 0 || n >= target && ev.res.OrderKeysBefore(target-1, last, descs) {
			if paged {
				ev.more = n > r.page
				ev.res.Truncate(r.page)
			}
			// A walk far past its page (many items share a value): the
			// pages after this one are evaluated whole, once, rather than
			// walking the same items again for each.
			ev.whole = ev.more && len(all) > 8*(r.page+1)
			return ev, true, nil
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

// pathWalk returns the walk of the index of path for ordered, making the
// index if need be; ok is false when the query cannot use it. A filter an
// index answers: on another path, its candidates are sorted instead (a
// walk in order would meet the items the filter drops); on this path,
// ascending, it bounds the walk, which starts at its first value (the
// filter drops undefined values anyway). The caller holds c.batchMu for
// reading.
func (r *queryRun) pathWalk(path []string, desc bool, start []query.IndexKey) (walk func(int) ([]record, []query.IndexKey, bool, expiryRule, bool), ok bool) {
	var bound *query.IndexRange
	for _, rg := range r.q.IndexRanges(r.params) {
		if !slices.Equal(rg.Path, path) || desc || rg.Points != nil {
			// Another path, or equality: the index's candidates, sorted.
			return nil, false
		}
		bound = &rg
	}
	c := r.c
	idx, _ := c.indexFor(path, true)
	if idx == nil {
		r.plan.potential = append(r.plan.potential, indexSpec(path))
		return nil, false
	}
	r.plan.used = indexSpec(path)
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
// ORDER BY of several paths for ordered, when the policy has one and the
// query has no filter an index answers (whose candidates are sorted
// instead). The caller holds c.batchMu for reading.
func (r *queryRun) compositeWalk(paths [][]string, descs []bool, start []query.IndexKey) (walk func(int) ([]record, []query.IndexKey, bool, expiryRule, bool), ok bool) {
	if len(r.q.IndexRanges(r.params)) > 0 {
		return nil, false
	}
	c := r.c
	ix, reverse, potential := c.compositeFor(paths, descs)
	if ix == nil {
		if potential != nil {
			r.plan.potentialComposite = append(r.plan.potentialComposite, potential.specs())
		}
		return nil, false
	}
	r.plan.usedComposite = ix.spec.specs()
	return func(want int) ([]record, []query.IndexKey, bool, expiryRule, bool) {
		return c.orderedComposite(ix, reverse, want, start)
	}, true
}

// execOn evaluates r's query in env, resuming after from (nil: from the
// start), on those of recs that are live at r.now (by rule) in r's
// partitions, and returns them beside the result.
func (r *queryRun) execOn(ctx context.Context, recs []record, rule expiryRule, from *query.Resume, env *query.Env) (query.Result, []record, error) {
	docs, live := liveOf(recs, rule, r.now, r.pk)
	res, err := query.ExecFrom(ctx, r.q, r.params, docs, time.Unix(0, r.now).UTC(), from, env)
	return res, live, err
}

// liveOf keeps those of recs that are live at now (by rule) in the
// partitions whose key begins with pk, as query documents and as records
// (reusing recs' array).
func liveOf(recs []record, rule expiryRule, now int64, pk PartitionKey) ([]query.Doc, []record) {
	docs := make([]query.Doc, 0, len(recs))
	live := recs[:0]
	for _, rec := range recs {
		if rule.live(rec, now) && pk.holds(rec.pk()) {
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
			if rule.live(rec, now) && pk.holds(rec.pk()) {
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
