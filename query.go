package lethe

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash/fnv"
	"iter"
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
	// ContinuationToken resumes a query after the page that returned it. It
	// is valid only for the same query text and parameters.
	ContinuationToken string
}

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
}

// DefaultPageSize is the page size of a query without PageSizeHint.
const DefaultPageSize = 100

// QueryItemsPager pages through the results of a query. Use it from one
// goroutine at a time.
type QueryItemsPager struct {
	c     *Container
	text  string
	opts  QueryOptions
	more  bool
	ran   bool     // the query has been evaluated
	items [][]byte // all results, once evaluated
	srcs  []record // the item each result was made from ("" if none), to drop results that expire between pages
	exam  int      // items the evaluation examined, charged with the first page
	next  int      // index in items of the next page's first result
	hash  uint64   // identifies the query and its parameters in tokens
}

// NewQueryItemsPager returns a pager over the results of query, in the
// Cosmos DB for NoSQL query language. Errors (a bad query, a bad
// continuation token) come from NextPage. Expired items never appear in any
// result, count or aggregate.
//
// The query is evaluated once, on the first page, over the items live at one
// instant: each of the container's shards is read under its lock in turn,
// so every item is seen exactly once, either as it was before a concurrent
// write or as it is after it, and an item that expires during the query is
// seen by none of it. Later pages come from that evaluation, less the
// results made from items that have expired since. Results without ORDER BY
// are ordered by item id.
func (c *Container) NewQueryItemsPager(query string, o *QueryOptions) *QueryItemsPager {
	p := &QueryItemsPager{c: c, text: query, more: true}
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
	end := min(len(p.items), p.next+size)
	page := p.items[p.next:end]
	if !first {
		page = p.dropExpired(page, p.srcs[p.next:end])
	}
	examined := 0
	if first {
		examined = p.exam
	}
	cost := queryCharge(examined, len(page))
	if err := c.draw(op, "", cost); err != nil {
		if first {
			// A retry evaluates the query again, at its own instant.
			p.ran, p.items, p.srcs, p.next = false, nil, nil, 0
		}
		return QueryItemsResponse{}, err
	}
	p.next = end
	resp := QueryItemsResponse{Items: page, RequestCharge: ru(cost)}
	if end < len(p.items) {
		resp.ContinuationToken = encodeToken(continuation{Hash: p.hash, Offset: end})
	} else {
		p.more = false
		p.items, p.srcs = nil, nil
	}
	return resp, nil
}

// dropExpired leaves out of a later page the results made from items that
// have expired since the query was evaluated.
func (p *QueryItemsPager) dropExpired(page [][]byte, srcs []record) [][]byte {
	c := p.c
	c.expiry.mu.Lock()
	rule := c.rule
	c.expiry.mu.Unlock()
	now := c.store.clock.now()
	kept := page[:0:0]
	for i, item := range page {
		if srcs[i] == "" || rule.live(srcs[i], now) {
			kept = append(kept, item)
		}
	}
	return kept
}

// run parses and evaluates the query.
func (p *QueryItemsPager) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	q, err := query.Parse(p.text)
	if err != nil {
		return queryError(err)
	}
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
	if p.hash, err = queryHash(p.text, p.opts.QueryParameters); err != nil {
		return badRequest("a query parameter cannot be encoded as JSON: %v", err)
	}
	if tok := p.opts.ContinuationToken; tok != "" {
		ct, ok := decodeToken(tok)
		if !ok {
			return badRequest("the continuation token is malformed")
		}
		if ct.Hash != p.hash {
			return badRequest("the continuation token belongs to another query or other parameters")
		}
		p.next = ct.Offset
	}

	now := p.c.store.clock.now()
	docs, recs, err := p.c.liveDocs(ctx, now)
	if err != nil {
		return err
	}
	res, err := query.Exec(ctx, q, params, docs, time.Unix(0, now).UTC())
	if err != nil {
		return queryError(err)
	}
	p.ran, p.items, p.exam = true, res.Items, res.Examined
	p.srcs = make([]record, len(res.Items))
	for i, src := range res.Sources {
		if src >= 0 {
			p.srcs[i] = recs[src]
		}
	}
	if p.next > len(p.items) {
		p.next = len(p.items)
	}
	return nil
}

// liveDocs lists the container's items live at now, and their records,
// reading each shard under its read lock in turn. The documents are views of
// immutable records.
func (c *Container) liveDocs(ctx context.Context, now int64) ([]query.Doc, []record, error) {
	c.expiry.mu.Lock()
	docs := make([]query.Doc, 0, c.expiry.items)
	recs := make([]record, 0, c.expiry.items)
	c.expiry.mu.Unlock()
	for i := range c.shards {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		sh := &c.shards[i]
		sh.mu.RLock()
		rule := c.rule
		sh.items.all(func(rec record) bool {
			if rule.live(rec, now) {
				js := rec.json()
				docs = append(docs, query.Doc{ID: rec.id(), JSON: unsafe.Slice(unsafe.StringData(js), len(js))})
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
func (c *Container) QueryItems(ctx context.Context, query string, o *QueryOptions) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		p := c.NewQueryItemsPager(query, o)
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
	return err // the context's error
}

// continuation is what a continuation token holds.
type continuation struct {
	Hash   uint64 `json:"h"`
	Offset int    `json:"o"`
}

func encodeToken(ct continuation) string {
	b, _ := json.Marshal(ct)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string) (continuation, bool) {
	var ct continuation
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &ct) != nil || ct.Offset < 0 {
		return continuation{}, false
	}
	return ct, true
}

// queryHash identifies a query text with its parameters.
func queryHash(text string, params []QueryParameter) (uint64, error) {
	h := fnv.New64a()
	h.Write([]byte(text))
	for _, p := range params {
		v, err := json.Marshal(p.Value)
		if err != nil {
			return 0, err
		}
		h.Write([]byte{0})
		h.Write([]byte(p.Name))
		h.Write([]byte{0})
		h.Write(v)
	}
	return h.Sum64(), nil
}
