package lethe

import (
	"cmp"
	"context"
	"encoding/binary"
	"sort"
	"time"

	"github.com/google/btree"

	"github.com/lethedb/lethe/internal/query"
)

// ---- the position index ----

// positionIndex holds a container's items in the order of their
// positions, expired or not, so that a query without ORDER BY resumed from
// a continuation token starts where it stopped instead of listing every
// item again. It is made the first time such a query resumes (as other
// indexes are made, while writes go on: indexbuild.go), and kept by
// applyItems after: one entry, about 19 bytes, per item (BenchmarkIndexMemory).
type positionIndex struct{ t *btree.BTreeG[record] }

func lessPosition(a, b record) bool { return a.pos() < b.pos() }

// itemChanged makes px follow one item change; a nil px ignores it.
func (px *positionIndex) itemChanged(old, rec record) {
	if px == nil {
		return
	}
	if old != "" {
		px.t.Delete(old)
	}
	if rec != "" {
		px.t.ReplaceOrInsert(rec)
	}
}

// positionPivot is a record that sorts with position pos in a
// positionIndex (it is never stored).
func positionPivot(pos uint64) record {
	b := make([]byte, recordHeader)
	binary.BigEndian.PutUint64(b[20:], pos)
	return record(b)
}

// positionIndex returns the container's position index, making it if need be
// (nil if a policy change cancelled the build). The caller holds no
// container lock.
func (c *Container) positionIndex() *positionIndex {
	return buildOnce(c, "o:", indexRecipe[*positionIndex]{
		made: func() *positionIndex { return c.mu.indexes.position },
		may:  func() bool { return true },
		make: func(b *indexBuild, n int) *positionIndex {
			px := &positionIndex{t: btree.NewG(btreeDegree, lessPosition)}
			fill(c, b, n, px.t, func(r record) record { return r }, func(a, b record) int { return cmp.Compare(a.pos(), b.pos()) }, px.itemChanged)
			return px
		},
		keep: func(px *positionIndex) bool {
			c.mu.indexes.position = px
			return true
		},
	})
}

// maxWalkSkip bounds the entries one step of a walk of the position index
// passes over without taking them (expired, or of another partition).
const maxWalkSkip = 4096

// walkPositions returns up to n records of items live at now in the
// partitions whose key begins with pk, in position order from position
// from on, looking at no more than n+maxWalkSkip entries; next is the
// position to go on from, end whether the walk reached the last entry. It
// holds the batch lock for reading, so it sees all of a transactional
// batch or none of it, and returns the count of batches (c.batches) its
// view follows.
func (c *Container) walkPositions(px *positionIndex, from uint64, n int, pk PartitionKey, now int64) (recs []posRec, next uint64, end bool, batches uint64) {
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	batches = c.batches.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.indexes.position != px {
		return nil, from, true, batches // dropped with its container
	}
	rule := c.rule
	end = true
	seen := 0
	px.t.AscendGreaterOrEqual(positionPivot(from), func(r record) bool {
		if len(recs) == n || seen == n+maxWalkSkip {
			end, next = false, r.pos()
			return false
		}
		seen++
		if rule.live(r, now) && pk.holds(r.pk()) {
			recs = append(recs, posRec{r.pos(), r})
		}
		return true
	})
	return recs, next, end, batches
}

// ---- pages of queries in item order ----

// itemPages is the state of a pager over a query whose results come item
// by item in position order (query.InItemOrder): each page evaluates the
// items from where the last stopped, a growing number at a time, until it
// has its results or its budget is spent.
type itemPages struct {
	q      *query.Query
	params map[string]any
	env    *query.Env
	offset int // the query's OFFSET
	full   int // the most results TOP or LIMIT leaves (-1: no bound)
	// The items: a snapshot of the records to evaluate, sorted by
	// position (the pager's first page lists them), or, when nil, the
	// container's position index, walked from the resume point.
	snap     []posRec
	snapshot bool       // the items are snap
	guard    indexGuard // for a snap from an index: whether an item of it has been replaced or removed since
	// whole says that each item of snap is one result, the item as
	// stored: the index that found them decided the WHERE clause, and
	// the query returns whole items (SELECT *). Pages copy them out
	// (wholeItems) rather than evaluate the query.
	whole bool
	first bool // the next page is the pager's first: snap is live as it is
	st    itemCursor
}

// itemCursor is where a pager over items stands: what a continuation
// token holds.
type itemCursor struct {
	from     uint64    // the position of the next item to evaluate (inclusive)
	after    query.Key // the key of the last result returned, or of the end of the last item passed
	consumed int       // results counted against TOP and LIMIT
	skipped  int       // results OFFSET dropped
	done     bool
}

// nextItems returns up to n records from st.from on, and where to go on.
// batches is the count of transactional batches the records' view follows
// (walkPositions); a snapshot's view is fixed, and its count is 0. On the
// pager's first page, recs is a part of the snapshot, not to be changed.
func (p *QueryItemsPager) nextItems(ip *itemPages, from uint64, n int, now int64) (recs []posRec, next uint64, end bool, batches uint64, err error) {
	c := p.c
	if !ip.snapshot {
		if px := c.positionIndex(); px != nil {
			recs, next, end, batches = c.walkPositions(px, from, n, p.pk, now)
			return recs, next, end, batches, nil
		}
		// Another query is making the index, or a policy change cancelled
		// its making: this pager lists the items instead.
		if err := p.snapshotItems(context.Background(), ip, now); err != nil {
			return nil, from, false, 0, err
		}
	}
	i := sort.Search(len(ip.snap), func(i int) bool { return ip.snap[i].pos >= from })
	j := i
	if ip.first {
		// Live at this page's instant: the snapshot's (a page that failed
		// cleared first: its retry comes later).
		j = min(i+n, len(ip.snap))
		recs = ip.snap[i:j:j]
	} else {
		// Where no item has been replaced or removed since the snapshot,
		// each is its item's current version, live if its header says
		// so; else each is looked up again.
		rule, unchanged := c.unchanged(ip.guard)
		for ; j < len(ip.snap) && len(recs) < n; j++ {
			if r := ip.snap[j].rec; unchanged && rule.live(r, now) || !unchanged && c.itemLive(r, now) {
				recs = append(recs, ip.snap[j])
			}
		}
	}
	if j == len(ip.snap) {
		return recs, 0, true, 0, nil
	}
	return recs, ip.snap[j].pos, false, 0, nil
}

// itemPage evaluates the next page of an item-order query: at most size
// results, and, with maxBytes, none past maxBytes bytes but the first. It
// returns the page, the cursor after it (the pager's is left as it was,
// for the caller to commit), how many items it examined, and its figures.
func (p *QueryItemsPager) itemPage(ctx context.Context, size, maxBytes int) (page [][]byte, st itemCursor, examined int, m queryMetrics, err error) {
	c, ip := p.c, p.ip
	st = ip.st
	now := c.store.clock.now()
	pctx := c.newPageCtx(ctx, now)
	rowsLeft := c.store.opts.QueryBudget.Rows
	nowT := time.Unix(0, now).UTC()
	chunk, pageBytes := 1, 0
	if ip.whole {
		chunk = min(size+1+max(0, ip.offset-st.skipped), 4096)
	}
	evaluated, results := 0, 0 // items and results (OFFSET's included) of this page's chunks so far
	first, pageBatches := true, uint64(0)
	progressed := false // a chunk of items was evaluated whole
	for !st.done {
		if ip.full >= 0 && st.consumed >= ip.full {
			st.done = true
			break
		}
		w := startWatch()
		recs, next, end, batches, err := p.nextItems(ip, st.from, chunk, now)
		w = w.addTo(&m.load)
		if err != nil {
			return nil, st, examined, m, err
		}
		if first {
			first, pageBatches = false, batches
		} else if batches != pageBatches {
			// A transactional batch committed since this page's first
			// step: the page ends before it, so that it never shows part
			// of a batch; the next page starts at this chunk.
			break
		}
		if len(recs) > 0 && ip.whole {
			var full bool
			page, st, pageBytes, full = p.wholeItems(recs, page, st, pageBytes, size, maxBytes, &examined, &m)
			w.addTo(&m.exec)
			if full {
				return page, st, examined, m, nil
			}
			if st.done {
				break
			}
			progressed = true
			st.after = query.ItemEnd(recs[len(recs)-1].rec.posKey())
		} else if len(recs) > 0 {
			docs := make([]query.Doc, len(recs))
			for i, r := range recs {
				docs[i] = r.rec.queryDoc()
			}
			// The evaluation may stop inside an item once it has the rest
			// of the page and one more result (which says the page is
			// full): a page that ends inside an item's JOIN rows resumes
			// at its last result, and costs what it returns.
			left := max(0, ip.offset-st.skipped)
			from := &query.Resume{After: st.after, Consumed: st.consumed, Offset: left, Need: left + size - len(page) + 1}
			res, err := query.ExecFrom(pctx, ip.q, ip.params, docs, nowT, from, c.pageEnv(ip.env, rowsLeft, pageBytes))
			w.addTo(&m.exec)
			if err != nil {
				if !outOfBudget(err) {
					return nil, st, examined, m, queryError(err)
				}
				if examined == 0 {
					return nil, st, examined, m, budgetError(err)
				}
				break // the page ends with what it has; the next starts at this chunk
			}
			examined += res.Examined
			evaluated, results = evaluated+len(docs), results+len(res.Items)+res.Skipped
			m.retrieve, m.retBytes, m.matched = m.retrieve+res.Examined, m.retBytes+res.ExaminedBytes, m.matched+res.Matched
			rowsLeft -= res.Rows
			st.skipped += res.Skipped
			for i, item := range res.Items {
				if len(page) == size || maxBytes > 0 && len(page) > 0 && pageBytes+len(item)+p.opts.PageItemOverhead > maxBytes {
					// Full: the next page starts at this result's item,
					// after the last result returned.
					st.from = recs[res.Sources[i]].pos
					return page, st, examined, m, nil
				}
				page = append(page, item)
				pageBytes += len(item) + p.opts.PageItemOverhead
				st.consumed++
				st.after = res.Key(i)
			}
			if res.Partial {
				if res.Stopped == nil {
					// Need was reached, and the page is not full: TOP
					// or LIMIT kept fewer results, the last of the query.
					st.done = true
					break
				}
				if !outOfBudget(res.Stopped) {
					return nil, st, examined, m, queryError(res.Stopped)
				}
				// The budget ran out inside an item: the page ends after
				// the last row evaluated, and the next starts there.
				if next := res.Next; next.Item() != "" {
					st.after = next
					st.from = binary.BigEndian.Uint64([]byte(next.Item())) // the item's position (queryDoc)
				} else if len(page) == 0 && !progressed {
					return nil, st, examined, m, budgetError(res.Stopped)
				}
				return page, st, examined, m, nil
			}
			progressed = true
			st.after = query.ItemEnd(docs[len(docs)-1].ID)
		}
		st.from = next
		if end {
			st.done = true
			break
		}
		if rowsLeft <= 0 || pctx.Err() != nil || pageBytes >= c.store.opts.QueryBudget.Memory {
			break // the budget is spent: the page ends with what it has
		}
		// As many items as the rest of the page (and of OFFSET) needs at
		// the rate results came so far (at most four times as many as the
		// last time), or, before any came, one an item and four times the
		// last.
		need := size - len(page) + 1 + max(0, ip.offset-st.skipped)
		if results > 0 {
			chunk = min((need*evaluated+results-1)/results, 4*chunk)
		} else {
			chunk = max(need, 4*chunk)
		}
		chunk = min(max(chunk, 1), 4096)
		if ip.whole {
			chunk = min(need, 4096) // every item is a result
		}
	}
	return page, st, examined, m, nil
}

// wholeItemsChunk is the size of the chunks of bytes that the results of
// wholeItems share.
const wholeItemsChunk = 64 << 10

// wholeItems adds to a page of a query whose results are its items as
// stored (itemPages.whole) the items of recs, in order, after the last
// result returned (st.after), applying what is left of OFFSET, TOP and
// LIMIT: each item's JSON is copied once, with its system properties,
// into chunks the results share (each result capped, so that they stay
// independent). It counts each item it looks at in examined and m, as an
// evaluation would, and returns the page and its cursor; full says the
// page is full (size results, or maxBytes), the next page starting at the
// item that did not fit.
func (p *QueryItemsPager) wholeItems(recs []posRec, page [][]byte, st itemCursor, pageBytes, size, maxBytes int, examined *int, m *queryMetrics) ([][]byte, itemCursor, int, bool) {
	ip, overhead := p.ip, p.opts.PageItemOverhead
	after := st.after.Item()
	if page == nil {
		page = make([][]byte, 0, min(size, len(recs)))
	}
	var buf []byte
	for i, pr := range recs {
		r := pr.rec
		key := r.posKey()
		if after != "" && key <= after {
			continue // its result was returned before
		}
		*examined++
		m.retrieve, m.retBytes, m.matched = m.retrieve+1, m.retBytes+r.bodyLen(), m.matched+1
		if st.skipped < ip.offset {
			st.skipped++
			continue
		}
		if ip.full >= 0 && st.consumed >= ip.full {
			st.done = true
			break
		}
		n := r.jsonLen()
		if len(page) == size || maxBytes > 0 && len(page) > 0 && pageBytes+n+overhead > maxBytes {
			st.from = pr.pos
			return page, st, pageBytes, true
		}
		if cap(buf)-len(buf) < n {
			// A chunk for as many more results as this one, as far as
			// the page, TOP and LIMIT may take them.
			more := min(len(recs)-i, size-len(page))
			if ip.full >= 0 {
				more = min(more, ip.full-st.consumed)
			}
			buf = make([]byte, 0, max(n, min(n*more, wholeItemsChunk)))
		}
		start := len(buf)
		buf = r.appendJSON(buf)
		page = append(page, buf[start:len(buf):len(buf)])
		pageBytes += n + overhead
		st.consumed++
		st.after = query.ItemKey(key)
	}
	return page, st, pageBytes, false
}

// startItemPages sets p up to page through r's query in item order from
// the cursor st (the start, or a continuation token's), over the
// candidates an index finds for its filter, or the snapshot of the
// container's items (first pages), or its position index (resumed pages),
// as the clock reads now. The caller holds no container lock.
func (p *QueryItemsPager) startItemPages(ctx context.Context, r *queryRun, need, full int, st itemCursor) error {
	c := p.c
	ip := &itemPages{q: r.q, params: r.params, env: r.env, offset: need - full, full: full, st: st}
	r.now = c.store.clock.now()
	w := startWatch()
	if c.store.useIndexes() {
		if _, recs, ok := r.textDocs(); ok {
			ip.snap, ip.snapshot, ip.first = byPos(recs), true, true
		} else if _, recs, ok := r.spatialDocs(); ok {
			ip.snap, ip.snapshot, ip.first = byPos(recs), true, true
		} else if recs, g, eval, ok := r.rangeRecs(); ok {
			ip.snap, ip.snapshot, ip.first, ip.guard = recs, true, true, g
			ip.q, ip.whole = eval, !eval.HasWhere() && r.q.ReturnsItems()
		}
		w = w.addTo(&r.plan.lookup)
	}
	if !ip.snapshot && st.after.Item() == "" {
		if err := p.snapshotItems(ctx, ip, r.now); err != nil {
			return err
		}
		w.addTo(&r.plan.load)
	}
	p.ip = ip
	return nil
}

// snapshotItems lists the items live at now in ip, sorted by position.
func (p *QueryItemsPager) snapshotItems(ctx context.Context, ip *itemPages, now int64) error {
	_, recs, err := p.c.liveDocs(ctx, p.pk, now)
	if err != nil {
		return err
	}
	ip.snap, ip.snapshot, ip.first = byPos(recs), true, true
	return nil
}

// nextItemPage is NextPage for a query in item order: it evaluates the
// page, charges it, and only then moves the pager on (a 429 leaves it
// where it was). A page that fails leaves a snapshot of the items listed
// at its instant (ip.first) as a later page's: its retry, at a later
// instant, checks each item again (nextItems), so that it never returns
// one that expired or was deleted meanwhile.
func (p *QueryItemsPager) nextItemPage(ctx context.Context, start time.Time, first bool, size int) (QueryItemsResponse, error) {
	const op = "QueryItems"
	c := p.c
	page, st, examined, m, err := p.itemPage(ctx, size, p.opts.MaxPageBytes)
	if err != nil {
		p.ip.first = false
		return p.fail(op, err)
	}
	w := startWatch()
	cost := queryCharge(examined, len(page))
	if err := c.draw(op, "", cost); err != nil {
		p.ip.first = false
		return QueryItemsResponse{}, err
	}
	p.ip.st, p.ip.first = st, false
	resp := QueryItemsResponse{Items: page, RequestCharge: ru(cost)}
	if first {
		m.compile, m.bind, m.lookup = p.met.compile, p.met.bind, m.lookup+p.plan.lookup
		m.load += p.plan.load
		if p.opts.PopulateIndexMetrics && !p.metrics {
			resp.IndexMetrics, p.metrics = p.plan.metrics(), true
		}
	}
	if st.done {
		p.more, p.ip = false, nil
	} else {
		resp.ContinuationToken = encodeToken(continuation{
			Container: c.id,
			Created:   c.created,
			Hash:      p.hash,
			Consumed:  st.consumed,
			Skipped:   st.skipped,
			Key:       st.after,
		})
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
