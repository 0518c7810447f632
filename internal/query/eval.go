package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lethedb/lethe/internal/jsontext"
)

// Doc is one live item presented to Exec.
type Doc struct {
	ID   string // the item's identity key, unique among the docs: results without ORDER BY are ordered by it, byte-wise
	JSON []byte // the stored document, a JSON object; read-only: Exec never modifies it nor returns a slice aliasing it

	// Sys says that the document's system properties are kept apart from
	// JSON, which lacks them: "_ts" is TS and "_etag" is ETag. Exec sees
	// them as the document's last members.
	Sys  bool
	TS   int64
	ETag string
}

// The system properties a Doc may keep apart.
const (
	sysTS   = "_ts"
	sysETag = "_etag"
)

// sysMember returns the value of a document's system property name, if
// it keeps its system properties apart and name is one of them.
func (d *Doc) sysMember(name string) (value, bool) {
	if d == nil || !d.Sys {
		return undef, false
	}
	switch name {
	case sysTS:
		return numVal(float64(d.TS)), true
	case sysETag:
		return strVal(d.ETag), true
	}
	return undef, false
}

// withSys adds a document's system properties to its decoded value.
func (d *Doc) withSys(v value) value {
	if d == nil || !d.Sys || v.k != kObj {
		return v
	}
	fs := make([]field, 0, len(v.o)+2)
	fs = append(fs, v.o...)
	fs = append(fs, field{sysTS, numVal(float64(d.TS))}, field{sysETag, strVal(d.ETag)})
	return value{k: kObj, o: fs}
}

// appendJSON appends a document's JSON, system properties included: raw
// is its stored JSON.
func (d *Doc) appendJSON(dst, raw []byte) []byte {
	if d == nil || !d.Sys {
		return append(dst, raw...)
	}
	dst = append(dst, raw[:len(raw)-1]...)
	if len(raw) > 2 {
		dst = append(dst, ',')
	}
	dst = append(dst, `"_ts":`...)
	dst = strconv.AppendInt(dst, d.TS, 10)
	dst = append(dst, `,"_etag":`...)
	dst = strconv.AppendQuote(dst, d.ETag)
	return append(dst, '}')
}

// Result is the outcome of Exec.
type Result struct {
	Items [][]byte // the results in their final order, each an independent JSON encoding
	// Sources[i] is the index in docs of the document Items[i] was made
	// from, or -1 when it comes from no single document (aggregates,
	// DISTINCT, a query without FROM).
	Sources  []int32
	Examined int // how many docs were examined
	// ExaminedBytes is the size of the examined docs' JSON, in bytes.
	ExaminedBytes int
	// Matched is how many of the examined docs gave at least one row that
	// passed WHERE (every examined doc, without WHERE).
	Matched int
	// Skipped is how many results OFFSET dropped.
	Skipped int
	// Rows is how many rows the FROM and JOIN clauses produced (those of
	// subqueries included), before WHERE: what Budget.Rows counts.
	Rows int
	// Partial says that an evaluation that could stop inside an item
	// (Resume.Need) did, once it had Need results or at the end of its
	// budget (Stopped): the results are the first of the items examined,
	// and the query resumes after Next.
	Partial bool
	// Stopped is what ended a Partial evaluation before it had Need
	// results: a *BudgetError, or its context's error (its time); nil
	// when it had them.
	Stopped error
	// Next, when Partial, is the key of the last row the evaluation
	// finished (a result or a row WHERE dropped): where to resume. It is
	// the zero Key when it finished none.
	Next Key

	// What Key needs: the rows of Items, the docs, the canonical encodings
	// of DISTINCT results.
	q      *Query
	rows   []row
	docs   []Doc
	canon  []string
	groups []string // GROUP BY: the canonical encoding of each group's values, by row.doc
}

// recoverPanics turns an unexpected panic in Exec into an error (a safety
// net; tests turn it off so that the fuzzers see the panic).
var recoverPanics = true

// binding is the value of one FROM/JOIN alias for the current row. A lazy
// binding holds undecoded document bytes; property paths are resolved
// against them directly.
type binding struct {
	raw  []byte
	v    value
	lazy bool
	doc  *Doc // the document raw is, when it is a whole one (FROM's root)
}

// evaluator holds the state of one Exec.
type evaluator struct {
	ctx       context.Context
	steps     int // evaluation steps so far (see tick)
	nextCheck int // steps at which tick looks at ctx next
	itemRows  int // rows the current item has produced
	rowsSeen  int // rows the FROM and JOINs have produced in all (Result.Rows)
	held      int // bytes held, as Budget.Bytes counts them
	built     int // bytes of computed results so far
	q         *Query
	params    []value
	now       time.Time
	slots     []binding
	aggVals   []value
	aggs      []aggState
	vals      []value // row values, indexed by row.vi

	groupIdx  map[string]int // GROUP BY: index in groups by canonical encoding of the values
	groups    []group
	groupVals []value // the values of the group being projected
	keyBuf    []byte

	matched     int // docs with a row that passed WHERE (Result.Matched)
	lastMatched int // 1 + the index of the last doc counted in matched

	// Rows in item order (see ExecFrom): the rows of the current item
	// before position skipTo are passed over, not evaluated; once need
	// rows are held (need > 0), full stops the evaluation. rows is the
	// rows so far, last the key of the last row finished.
	skipTo int
	need   int
	full   bool
	rows   []row
	last   Key
	// Bounded ordering (topk.go): when topN >= 0, only the first topN
	// rows after after (nil: all) are held; cut says rows[topN-1] is the
	// row a new one must come before. spareRaw and spareKeys are buffers
	// of rows turned away.
	topN      int
	after     *Key
	cut       bool
	spareRaw  [][]byte
	spareKeys [][]value
	// The sources of the JOINs, kept while the bindings they are made
	// from stay (see joinSources).
	srcs []joinSrc
	// encode says that a computed result is encoded as it is made,
	// into out (a chunk of bytes results share), and not kept as a
	// value; fields is the object of one such result, reused.
	encode bool
	out    []byte
	fields []field

	env        Env                  // what the evaluation knows of the container
	textCall   *call                // the full-text call being evaluated (fulltext.go)
	textLangs  map[*call]string     // the language of each full-text call's text
	textTerms  map[string][]string  // the terms of search strings, by language and string
	vecCalls   map[*call]*vecCall   // the settings of each VectorDistance call (vector.go)
	vecBuf     [2][]float32         // the vectors VectorDistance compares, reused
	textScores map[*call]*textScore // the settings of each FullTextScore call (rank.go)
	docs       []Doc                // the documents evaluated
	udfs       []Func               // the user-defined functions of q.udfs (udf.go)

	// The spatial call being evaluated, and the constant arguments of
	// spatial calls, read once (spatial.go).
	spatialCall *call
	shapes      map[expr]checkedShape
}

// group is one group of a GROUP BY query.
type group struct {
	canon string  // the canonical encoding of vals
	vals  []value // the values of the GROUP BY expressions
	aggs  []aggState
}

// row is one result row before ordering.
type row struct {
	doc  int32
	seq  int32
	vi   int32  // index of the value in evaluator.vals (when raw is nil)
	enc  bool   // raw is the encoding of a computed result (see evaluator.encode)
	raw  []byte // the value's exact JSON (verbatim document, or enc), or nil
	sys  *Doc   // the document raw is, whose system properties it lacks, or nil
	keys []value
}

// Exec evaluates q over docs. params maps "@name" to a Go value as a user
// supplied it (nil, bool, string, any integer or float kind, []any,
// map[string]any, json.RawMessage; anything else through encoding/json).
// now is the query's single clock reading (GetCurrentTimestamp etc.).
//
// Results come back in their final order, the order of their keys (see
// Key): by the ORDER BY keys if any, then by Doc.ID (byte-wise) and the
// row's position among the rows one document produces; DISTINCT results by
// the ORDER BY keys, then by their value. Bad queries or parameters, and
// queries that pass a limit (see MaxValueSize), give a *Error; cancellation
// of ctx gives ctx.Err(), within a document as well as between them.
func Exec(ctx context.Context, q *Query, params map[string]any, docs []Doc, now time.Time) (Result, error) {
	return ExecFrom(ctx, q, params, docs, now, nil, nil)
}

// Resume continues a query after a result of an earlier evaluation of it.
type Resume struct {
	After Key // results are those whose keys sort strictly after this
	// Consumed is how many results past OFFSET were returned before: they
	// count against TOP and LIMIT.
	Consumed int
	// Offset is how much of OFFSET is left to apply to the results after
	// After (0: OFFSET was applied before).
	Offset int
	// Keep, when positive, is how many results (after OFFSET) the caller
	// needs at most: a sorted evaluation holds no more rows than those
	// (topk.go), and returns no more than Keep results.
	Keep int
	// Need, when positive, lets the evaluation of a query in item order
	// (InItemOrder) over docs sorted by ID stop inside an item: once it
	// has Need results after After (before OFFSET, TOP and LIMIT), and at
	// the end of its Budget or its context, where it returns the results
	// it has rather than fail (Result.Stopped says why). Result.Partial
	// then says the last item examined may have more.
	Need int
}

// ExecFrom is Exec that, when from is not nil, returns only the results
// after from.After, as if they followed the results already returned, and
// that knows of the container what env says (nil: nothing). In a query in
// item order, the rows of from.After's item up to its own are passed over
// without being evaluated (they count against MaxJoinRowsPerItem, not
// Budget.Rows), so a page that resumes inside an item's JOIN rows costs
// what it returns, not the whole item.
func ExecFrom(ctx context.Context, q *Query, params map[string]any, docs []Doc, now time.Time, from *Resume, env *Env) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			if a, ok := r.(abort); ok {
				res, err = Result{}, a.err
				return
			}
			if !recoverPanics {
				panic(r)
			}
			res, err = Result{}, &Error{Msg: fmt.Sprintf("internal error evaluating query: %v", r)}
		}
	}()
	if q == nil {
		return Result{}, &Error{Msg: "nil query"}
	}
	ctx = ctxOf(ctx)
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if from != nil && (len(from.After.order) != q.keyLen() || from.Consumed < 0 || from.Offset < 0) {
		return Result{}, &Error{Msg: "the continuation token does not fit the query"}
	}
	ev := &evaluator{ctx: ctx, nextCheck: checkEvery, q: q, now: now, docs: docs}
	if env != nil {
		ev.env = *env
	}
	if err := ev.bindUDFs(); err != nil {
		return Result{}, err
	}
	ev.params = make([]value, len(q.params))
	for i, name := range q.params {
		x, ok := params[name]
		if !ok {
			return Result{}, errAt(q.text, q.paramPos[i], "missing parameter %s", name)
		}
		v, ok := fromGo(x, 0)
		if !ok {
			return Result{}, errAt(q.text, q.paramPos[i], "parameter %s has a value that cannot be represented as JSON", name)
		}
		ev.params[i] = v
	}
	top, offset, limit := -1, 0, -1
	if q.top != nil {
		if top, err = ev.count(q.top, "TOP"); err != nil {
			return Result{}, err
		}
	}
	if q.offset != nil {
		if offset, err = ev.count(q.offset, "OFFSET"); err != nil {
			return Result{}, err
		}
		if limit, err = ev.count(q.limit, "LIMIT"); err != nil {
			return Result{}, err
		}
	}
	ev.aggs = make([]aggState, len(q.aggs))
	ev.aggVals = make([]value, len(q.aggs))

	if q.grouped {
		ev.groupIdx = map[string]int{}
	}
	var rows []row
	ev.slots = make([]binding, max(q.nslots, 1))
	ev.srcs = joinSources(q)
	ev.encode = !q.distinct
	ev.topN = -1
	inOrder := from != nil && q.from != nil && q.from.path == nil && len(q.orderBy) == 0 && !q.distinct && !q.aggregated && !q.grouped
	if inOrder && from.Need > 0 && slices.IsSortedFunc(docs, func(a, b Doc) int { return strings.Compare(a.ID, b.ID) }) {
		ev.need = from.Need
	}
	keep, after := 0, (*Key)(nil)
	if from != nil {
		// What is left of OFFSET, TOP and LIMIT after the results
		// returned before.
		offset, top, limit = min(offset, from.Offset), lessBy(top, from.Consumed), lessBy(limit, from.Consumed)
		keep, after = from.Keep, &from.After
	}
	ev.startPruning(offset, top, limit, keep, after)
	if q.from == nil {
		rows = ev.emit(rows, 0, 0)
	} else {
		rows = ev.scan(docs, from, inOrder, &res)
		res.Matched, res.Partial, res.Next = ev.matched, ev.full, ev.last
	}
	res.Rows = ev.rowsSeen
	if err := ctx.Err(); err != nil && res.Stopped == nil {
		return Result{}, err
	}

	switch {
	case q.aggregated:
		for i := range ev.aggs {
			ev.aggVals[i] = ev.aggs[i].result(q.aggs[i].fn.name)
		}
		rows = rows[:0]
		v := ev.project(q)
		ev.checkResult(v)
		if v.k != kUndef {
			ev.vals = append(ev.vals[:0], v)
			rows = append(rows, row{vi: 0})
		}
	case q.grouped:
		rows, res.groups = ev.groupRows()
	default:
		if q.rank {
			ev.fuseRanks(rows)
		}
		ev.sortRows(rows, docs)
	}
	if q.distinct {
		rows, res.canon = ev.distinct(rows)
	}
	res.q, res.docs = q, docs
	if from != nil {
		res.rows = rows
		i := sort.Search(len(rows), func(i int) bool { return q.compareKeys(res.Key(i), from.After) > 0 })
		rows = rows[i:]
		if res.canon != nil {
			res.canon = res.canon[i:]
		}
	}
	if offset > 0 {
		k := min(offset, len(rows))
		res.Skipped = k
		rows = rows[k:]
		if res.canon != nil {
			res.canon = res.canon[k:]
		}
	}
	if limit >= 0 && limit < len(rows) {
		rows = rows[:limit]
	}
	if top >= 0 && top < len(rows) {
		rows = rows[:top]
	}
	if keep > 0 && keep < len(rows) {
		rows = rows[:keep]
	}
	// All items share one buffer, each capped so that they stay
	// independent: one allocation instead of one per row.
	size := 0
	for _, r := range rows {
		if r.enc {
			continue // held since it was made
		}
		size += len(r.raw)
		if r.sys != nil {
			size += len(`,"_ts":,"_etag":""`) + 20 + len(r.sys.ETag)
		}
	}
	ev.hold(size)
	buf := make([]byte, 0, size+64*(len(rows)-countRaw(rows)))
	res.Items = make([][]byte, len(rows))
	res.Sources = make([]int32, len(rows))
	single := q.from != nil && !q.aggregated && !q.grouped && !q.distinct
	for i, r := range rows {
		if i&255 == 0 {
			ev.tick(1)
		}
		res.Sources[i] = -1
		if single {
			res.Sources[i] = r.doc
		}
		if r.enc {
			res.Items[i] = r.raw[:len(r.raw):len(r.raw)]
			continue
		}
		start := len(buf)
		if r.raw != nil {
			buf = r.sys.appendJSON(buf, r.raw)
		} else {
			buf = appendJSON(buf, ev.rowVal(r))
		}
		res.Items[i] = buf[start:len(buf):len(buf)]
	}
	res.rows = rows
	if res.canon != nil {
		res.canon = res.canon[:len(rows)]
	}
	return res, nil
}

// scan evaluates the rows of docs, and counts the docs it examines in
// res. In item order, the rows of from.After's item up to it are passed
// over. An evaluation that may stop inside an item (ev.need > 0) stops at
// the end of its budget or its context with the rows it has finished, and
// says why in res.Stopped.
func (ev *evaluator) scan(docs []Doc, from *Resume, inOrder bool, res *Result) (rows []row) {
	if ev.need > 0 {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			a, ok := r.(abort)
			var qe *Error
			if !ok || errors.As(a.err, &qe) {
				panic(r) // the query is wrong: it fails
			}
			rows, res.Stopped, ev.full = ev.rows, a.err, true
			// What is left to do is bounded by the rows held: the
			// budget and the context are done with.
			ev.ctx, ev.env.Budget = nil, Budget{}
		}()
	}
	for di := range docs {
		if ev.full {
			break
		}
		ev.skipTo = 0
		if inOrder {
			switch c := strings.Compare(docs[di].ID, from.After.item); {
			case c < 0 && ev.need > 0:
				continue // every row of it comes before After
			case c == 0:
				ev.skipTo = int(from.After.seq) + 1
			}
		}
		ev.tick(1)
		ev.itemRows = 0
		ev.slots[0] = binding{raw: docs[di].JSON, lazy: true, doc: &docs[di]}
		res.Examined++
		res.ExaminedBytes += len(docs[di].JSON)
		seen := ev.rowsSeen
		rows = ev.expand(rows, di)
		if ev.skipTo > 0 && ev.rowsSeen == seen {
			// Every row of it came before After: it was passed over,
			// not examined.
			res.Examined--
			res.ExaminedBytes -= len(docs[di].JSON)
		}
	}
	return rows
}

// distinct keeps the first of each set of rows with deeply equal values
// (rows are in their final order) and orders the survivors by their ORDER
// BY keys, then their canonical encodings, which it returns beside them.
func (ev *evaluator) distinct(rows []row) ([]row, []string) {
	type drow struct {
		r     row
		canon string
	}
	seen := map[string]struct{}{}
	var out []drow
	var buf []byte
	for i, r := range rows {
		if i&255 == 0 {
			ev.tick(1)
		}
		v := ev.rowVal(r)
		if r.raw != nil {
			v = r.sys.withSys(decodeRaw(r.raw))
		}
		buf = canonical(buf[:0], v)
		if _, dup := seen[string(buf)]; dup {
			continue
		}
		c := string(buf)
		seen[c] = struct{}{}
		out = append(out, drow{r, c})
	}
	q := ev.q
	slices.SortFunc(out, func(a, b drow) int {
		if c := q.compareOrder(a.r.keys, b.r.keys); c != 0 {
			return c
		}
		return strings.Compare(a.canon, b.canon)
	})
	rows = rows[:len(out)]
	canon := make([]string, len(out))
	for i, d := range out {
		rows[i], canon[i] = d.r, d.canon
	}
	return rows, canon
}

// checkResult fails the query when a computed result (or ORDER BY key) is
// larger than MaxValueSize, or the computed results so far larger than
// MaxBuiltBytes.
func (ev *evaluator) checkResult(v value) {
	ev.checkFinite(v, "a result")
	n, ok := sizeAtMost(v, MaxValueSize)
	if !ok {
		ev.fail("a result of the query would be over the limit of %d bytes", MaxValueSize)
	}
	ev.built += n
	ev.hold(n)
	if ev.built > MaxBuiltBytes {
		ev.fail("the results of the query would be over the limit of %d bytes", MaxBuiltBytes)
	}
}

// checkFinite fails the query when v, which is what (a result, an ORDER
// BY or a GROUP BY value), holds NaN or an infinite number: JSON cannot
// write them, and Cosmos DB refuses such a response too.
func (ev *evaluator) checkFinite(v value, what string) {
	if !finite(v) {
		ev.fail("%s of the query holds a number that JSON cannot represent (NaN or Infinity)", what)
	}
}

// count evaluates a TOP/OFFSET/LIMIT operand.
func (ev *evaluator) count(e expr, what string) (int, error) {
	v := ev.eval(e)
	if v.k != kNum || v.n < 0 || v.n != math.Trunc(v.n) || v.n > math.MaxInt32 {
		return 0, errAt(ev.q.text, e.position(), "%s must be a non-negative integer, found %s", what, describeValue(v))
	}
	return int(v.n), nil
}

func describeValue(v value) string {
	if v.k == kUndef {
		return "undefined"
	}
	s := string(appendJSON(nil, v))
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}

// expand produces the rows of document di: the FROM source, then the JOINs.
func (ev *evaluator) expand(rows []row, di int) []row {
	q := ev.q
	seq := 0
	if q.from.path == nil {
		ev.bound(0)
		return ev.join(rows, di, &seq, 0, 1)
	}
	src := ev.eval(q.from.path)
	if !q.from.in {
		if src.k == kUndef {
			return rows
		}
		ev.slots[1] = binding{v: src}
		ev.bound(0)
		return ev.join(rows, di, &seq, 0, 2)
	}
	if src.k != kArr {
		return rows
	}
	for _, e := range src.a {
		if ev.full {
			break
		}
		ev.slots[1] = binding{v: e}
		ev.bound(0)
		rows = ev.join(rows, di, &seq, 0, 2)
	}
	return rows
}

// join binds JOIN number j (slot) and recurses; after the last it emits.
// Rows before ev.skipTo are counted (against MaxJoinRowsPerItem) and
// passed over: whole elements at a time when the rows under an element do
// not depend on it.
func (ev *evaluator) join(rows []row, di int, seq *int, j, slot int) []row {
	if j == len(ev.q.joins) {
		if *seq < ev.skipTo {
			ev.skipRows(1)
		} else {
			rows = ev.emit(rows, di, *seq)
			if ev.need > 0 {
				ev.rows, ev.last = rows, Key{item: ev.docs[di].ID, seq: int32(*seq)}
			}
		}
		*seq++
		return rows
	}
	src := ev.source(j)
	per := -1
	if *seq < ev.skipTo {
		per = ev.rowsUnder(j)
	}
	for _, e := range src {
		if ev.full {
			break
		}
		ev.tick(1)
		if per >= 0 && *seq+per <= ev.skipTo {
			ev.skipRows(per)
			*seq += per
			continue
		}
		ev.slots[slot] = binding{v: e}
		ev.bound(j + 1)
		rows = ev.join(rows, di, seq, j+1, slot+1)
	}
	return rows
}

// skipRows counts n rows passed over (see join).
func (ev *evaluator) skipRows(n int) {
	ev.itemRows += n
	if ev.itemRows > MaxJoinRowsPerItem {
		ev.failJoinRows()
	}
}

// rowsUnder returns how many rows each element of JOIN j's source gives
// (the product of the sizes of the sources after it), or -1 when that may
// depend on the element.
func (ev *evaluator) rowsUnder(j int) int {
	n := 1
	for k := j + 1; k < len(ev.q.joins); k++ {
		if ev.srcs == nil || ev.srcs[k].level < 0 || ev.srcs[k].level > j {
			return -1
		}
		n = min(n*len(ev.source(k)), min(1<<31, math.MaxInt))
	}
	return n
}

// joinSrc is the source of a JOIN of the query (not of a subquery) whose
// expression is a path from one binding: it is evaluated once while that
// binding stays, not again for each row of the JOINs between.
type joinSrc struct {
	level int     // the source depends on the bindings of JOINs before this one (0: the FROM's alone); -1: evaluated every time
	ok    bool    // vals is the source for the current bindings
	vals  []value // the source
}

// joinSources returns the sources of q's JOINs, or nil when none can be
// kept: a JOIN's source that is a path (members and indexes by literals or
// parameters) from the FROM alias, or from the alias of an earlier JOIN
// but the one just before, stays while that alias is bound to the same
// value.
func joinSources(q *Query) []joinSrc {
	if !keepJoinSources || q.from == nil || len(q.joins) < 2 {
		return nil
	}
	srcs := make([]joinSrc, len(q.joins))
	kept := false
	for j := range q.joins {
		srcs[j].level = -1
		if q.joins[j].sub != nil {
			continue
		}
		slot, ok := pathRoot(q.joins[j].x)
		if !ok {
			continue
		}
		level := 0 // the FROM's bindings
		if slot > q.fromSlot() {
			level = slot - q.fromSlot() // after JOIN level-1
		}
		if level < j {
			srcs[j].level, kept = level, true
		}
	}
	if !kept {
		return nil
	}
	return srcs
}

// keepJoinSources turns joinSources on (tests compare with it off).
var keepJoinSources = true

// pathRoot returns the slot a path expression starts at, when it is one:
// an alias, then members and indexes by literals or parameters.
func pathRoot(e expr) (int, bool) {
	for {
		switch x := e.(type) {
		case *ident:
			return x.slot, true
		case *member:
			e = x.x
		case *index:
			switch x.idx.(type) {
			case *literal, *paramRef:
			default:
				return 0, false
			}
			e = x.x
		default:
			return 0, false
		}
	}
}

// bound says that the bindings of level changed (0: the FROM's; j: JOIN
// j-1's): the kept sources that depend on them are made again when next
// needed.
func (ev *evaluator) bound(level int) {
	for i := range ev.srcs {
		if ev.srcs[i].level == level {
			ev.srcs[i].ok = false
		}
	}
}

// source returns the source of the query's JOIN j for the current
// bindings, kept or made.
func (ev *evaluator) source(j int) []value {
	if ev.srcs == nil || ev.srcs[j].level < 0 {
		return ev.joinSource(&ev.q.joins[j])
	}
	s := &ev.srcs[j]
	if !s.ok {
		s.vals, s.ok = ev.joinSource(&ev.q.joins[j]), true
	}
	return s.vals
}

// emit filters the current bindings and adds their projection.
func (ev *evaluator) emit(rows []row, di, seq int) []row {
	q := ev.q
	ev.tick(1)
	ev.countItemRow()
	if q.where != nil && !ev.eval(q.where).isTrue() {
		return rows
	}
	if ev.lastMatched != di+1 {
		ev.lastMatched = di + 1
		ev.matched++
	}
	if q.aggregated {
		for i, c := range q.aggs {
			ev.aggs[i].add(c.fn.name, ev.eval(c.args[0]))
		}
		return rows
	}
	if q.grouped {
		ev.addToGroup()
		return rows
	}
	r := row{doc: int32(di), seq: int32(seq)}
	if ev.topN >= 0 {
		return ev.offer(rows, r)
	}
	v, ok := ev.result(&r)
	if !ok {
		return rows
	}
	ev.admit(len(rows), r, v)
	if r.raw == nil {
		if ev.encode {
			r.raw, r.enc = ev.keep(v), true
		} else {
			r.vi = int32(len(ev.vals))
			ev.vals = append(ev.vals, v)
		}
	}
	if q.rank {
		r.keys = ev.rankKeys()
	} else if len(q.orderBy) > 0 {
		r.keys = ev.orderValues(make([]value, len(q.orderBy)))
	}
	if len(rows) == cap(rows) {
		// Twice as many each time (append grows a large slice by a
		// quarter, allocating and copying five times what it holds).
		rows = slices.Grow(rows, max(len(rows), 16))
	}
	rows = append(rows, r)
	if ev.need > 0 && len(rows) >= ev.need {
		ev.full = true
	}
	return rows
}

// admit counts r, a row about to be held beside n others, against the
// limits and the budget: MaxRows, then rowBytes and, when r.raw is nil,
// its computed result v (checkResult). emit and offer (topk.go) hold rows
// only through it.
func (ev *evaluator) admit(n int, r row, v value) {
	if n >= MaxRows {
		ev.fail("the query would hold more than %d rows, the limit", MaxRows)
	}
	ev.hold(rowBytes)
	if r.raw == nil {
		ev.checkResult(v)
	}
}

// result evaluates the result of the current bindings into r: its JSON
// as stored (r.raw, r.sys) or, returned, its computed value; ok is false
// when the bindings have no result (an undefined VALUE, a malformed
// stored document).
func (ev *evaluator) result(r *row) (v value, ok bool) {
	q := ev.q
	switch {
	case q.star:
		b := &ev.slots[q.lastSlot()]
		if b.lazy {
			if !wellFormed(b.raw) {
				return v, false
			}
			r.raw, r.sys = b.raw, b.doc
		} else {
			v = b.v
		}
	case q.valueSel:
		if id, ok := q.items[0].x.(*ident); ok && ev.slots[id.slot].lazy {
			r.raw, r.sys = ev.slots[id.slot].raw, ev.slots[id.slot].doc
			if !wellFormed(r.raw) {
				return v, false
			}
		} else {
			v = ev.eval(q.items[0].x)
			if v.k == kUndef {
				return v, false
			}
		}
	case ev.encode:
		v = ev.projectTo(q, ev.fields[:0])
		ev.fields = v.o[:0]
	default:
		v = ev.project(q)
	}
	return v, true
}

// orderValues evaluates the ORDER BY values of the current bindings into
// keys, and returns it.
func (ev *evaluator) orderValues(keys []value) []value {
	for i, o := range ev.q.orderBy {
		keys[i] = ev.eval(o.x)
		if o.similar {
			keys[i] = ev.similarKey(o.x.(*call), keys[i])
		}
		ev.checkFinite(keys[i], "an ORDER BY value")
		if _, ok := sizeAtMost(keys[i], MaxValueSize); !ok {
			ev.fail("an ORDER BY value would be over the limit of %d bytes", MaxValueSize)
		}
	}
	return keys
}

// outChunk is the largest chunk of bytes encoded results share (the
// first are smaller, each twice the last).
const outChunk = 64 << 10

// keep encodes v, a computed result, into ev.out and returns its
// encoding, an independent slice.
func (ev *evaluator) keep(v value) []byte {
	if cap(ev.out)-len(ev.out) < 256 {
		ev.out = make([]byte, 0, min(outChunk, max(1<<10, 2*cap(ev.out))))
	}
	start, c := len(ev.out), cap(ev.out)
	ev.out = appendJSON(ev.out, v)
	if cap(ev.out) != c && start > 0 {
		// It outgrew the chunk: it starts one of its own, and the
		// results before keep theirs.
		ev.out = append(make([]byte, 0, max(outChunk, len(ev.out)-start)), ev.out[start:]...)
		start = 0
	}
	return ev.out[start:len(ev.out):len(ev.out)]
}

// project evaluates the select list of q into an object (or the VALUE).
func (ev *evaluator) project(q *Query) value {
	if q.valueSel {
		return ev.eval(q.items[0].x)
	}
	return ev.projectTo(q, make([]field, 0, len(q.items)))
}

// projectTo is project, the object's fields appended to fs.
func (ev *evaluator) projectTo(q *Query, fs []field) value {
	if q.valueSel {
		return ev.eval(q.items[0].x)
	}
	for _, it := range q.items {
		v := ev.eval(it.x)
		if v.k != kUndef {
			fs = append(fs, field{it.name, v})
		}
	}
	return value{k: kObj, o: fs}
}

// sortRows puts rows of docs in the order of their results: by their
// ORDER BY values, then their documents' IDs, then their positions among
// their document's rows.
func (ev *evaluator) sortRows(rows []row, docs []Doc) {
	slices.SortFunc(rows, func(a, b row) int { return ev.compareRows(docs, a, b) })
}

// compareRows compares two rows of docs in the order of sortRows: a total
// order.
func (ev *evaluator) compareRows(docs []Doc, a, b row) int {
	if c := ev.q.compareOrder(a.keys, b.keys); c != 0 {
		return c
	}
	if a.doc != b.doc {
		if c := strings.Compare(docs[a.doc].ID, docs[b.doc].ID); c != 0 {
			return c
		}
		return cmpInt(int(a.doc), int(b.doc))
	}
	return cmpInt(int(a.seq), int(b.seq))
}

// ---- aggregates ----

type aggState struct {
	n       int
	sum     float64
	bad     bool // SUM/AVG saw a non-number; MIN/MAX saw an array/object
	best    value
	hasBest bool
}

func (a *aggState) add(fn string, v value) {
	if v.k == kUndef {
		return
	}
	switch fn {
	case "COUNT":
		a.n++
	case "COUNTIF":
		if v.k == kBool && v.b {
			a.n++
		}
	case "SUM", "AVG":
		if v.k != kNum {
			a.bad = true
			return
		}
		a.n++
		a.sum += v.n
	case "MIN", "MAX":
		if v.k == kArr || v.k == kObj {
			a.bad = true
			return
		}
		if !a.hasBest {
			a.best, a.hasBest = v, true
			return
		}
		c := compareTotal(v, a.best)
		if (fn == "MIN" && c < 0) || (fn == "MAX" && c > 0) {
			a.best = v
		}
	}
}

func (a *aggState) result(fn string) value {
	switch fn {
	case "COUNT", "COUNTIF":
		return numVal(float64(a.n))
	case "SUM":
		if a.bad {
			return undef
		}
		return numVal(a.sum)
	case "AVG":
		if a.bad || a.n == 0 {
			return undef
		}
		return numVal(a.sum / float64(a.n))
	}
	if a.bad || !a.hasBest {
		return undef
	}
	return a.best
}

// ---- expressions ----

// ref resolves a path expression. When the path is rooted in a lazy
// binding it stays on raw bytes (isRaw) as far as possible.
func (ev *evaluator) ref(e expr) (raw []byte, v value, isRaw bool) {
	switch x := e.(type) {
	case *ident:
		b := &ev.slots[x.slot]
		if b.lazy {
			return b.raw, undef, true
		}
		return nil, b.v, false
	case *member:
		if sv, ok := ev.sysRef(x.x, x.name); ok {
			return nil, sv, false
		}
		raw, v, isRaw := ev.ref(x.x)
		if isRaw {
			ev.tick(len(raw) >> 12) // the scan may cross the whole document
			sub, ok := lookupKey(raw, x.name)
			if !ok {
				return nil, undef, false
			}
			return sub, undef, true
		}
		return nil, v.get(x.name), false
	case *index:
		raw, v, isRaw := ev.ref(x.x)
		i := ev.eval(x.idx)
		switch i.k {
		case kStr:
			if sv, ok := ev.sysRef(x.x, i.s); ok {
				return nil, sv, false
			}
			if isRaw {
				sub, ok := lookupKey(raw, i.s)
				if !ok {
					return nil, undef, false
				}
				return sub, undef, true
			}
			return nil, v.get(i.s), false
		case kNum:
			if i.n < 0 || i.n != math.Trunc(i.n) || i.n > math.MaxInt32 {
				return nil, undef, false
			}
			n := int(i.n)
			if isRaw {
				sub, ok := arrayElem(raw, n)
				if !ok {
					return nil, undef, false
				}
				return sub, undef, true
			}
			if v.k == kArr && n < len(v.a) {
				return nil, v.a[n], false
			}
		}
		return nil, undef, false
	}
	return nil, ev.eval(e), false
}

// sysRef resolves the member name of x when x is a lazy binding of a whole
// document that keeps its system properties apart, and name is one of them.
func (ev *evaluator) sysRef(x expr, name string) (value, bool) {
	id, ok := x.(*ident)
	if !ok || len(name) == 0 || name[0] != '_' {
		return undef, false
	}
	if b := &ev.slots[id.slot]; b.lazy {
		return b.doc.sysMember(name)
	}
	return undef, false
}

func (ev *evaluator) eval(e expr) value {
	switch x := e.(type) {
	case *literal:
		return x.val
	case *paramRef:
		return ev.params[x.idx]
	case *ident:
		b := &ev.slots[x.slot]
		if b.lazy {
			b.v = b.doc.withSys(decodeRaw(b.raw))
			b.lazy = false
		}
		return b.v
	case *member, *index:
		raw, v, isRaw := ev.ref(e)
		if isRaw {
			ev.tick(len(raw) >> 8)
			return decodeRaw(raw)
		}
		return v
	case *unary:
		return evalUnary(x.op, ev.eval(x.x))
	case *binary:
		if l, ok := x.l.(*binary); ok {
			return ev.evalChain(x, l)
		}
		return ev.evalBinaryWith(x, ev.eval(x.l))
	case *between:
		v := ev.eval(x.x)
		lo := compareOp(tGe, v, ev.eval(x.lo))
		hi := compareOp(tLe, v, ev.eval(x.hi))
		var r value
		switch {
		case lo.k == kBool && !lo.b, hi.k == kBool && !hi.b:
			r = falseV
		case lo.isTrue() && hi.isTrue():
			r = trueVal
		default:
			return undef
		}
		if x.not {
			r.b = !r.b
		}
		return r
	case *inList:
		v := ev.eval(x.x)
		if v.k == kUndef {
			return undef
		}
		found := false
		for _, y := range x.list {
			if deepEqual(v, ev.eval(y)) {
				found = true
				break
			}
		}
		return boolVal(found != x.not)
	case *like:
		v, p := ev.eval(x.x), ev.eval(x.pattern)
		if v.k != kStr || p.k != kStr {
			return undef
		}
		esc := rune(-1)
		if x.escape != nil {
			e := ev.eval(x.escape)
			if e.k != kStr || utf8.RuneCountInString(e.s) != 1 {
				return undef
			}
			esc, _ = utf8.DecodeRuneInString(e.s)
		}
		return boolVal(ev.likeMatch(v.s, p.s, esc) != x.not)
	case *ternary:
		if ev.eval(x.c).isTrue() {
			return ev.eval(x.a)
		}
		return ev.eval(x.b)
	case *groupRef:
		return ev.groupVals[x.idx]
	case *subquery:
		return ev.evalSubquery(x)
	case *call:
		if x.agg >= 0 {
			return ev.aggVals[x.agg]
		}
		if x.fn.vector {
			return ev.vectorDistance(x)
		}
		var buf [4]value
		args := buf[:0]
		size := 0
		for _, a := range x.args {
			v := ev.eval(a)
			if x.fn.joins {
				// Stop before evaluating all the arguments of a result
				// that is too large already.
				size = ev.addSize(x.fn.name, size, v)
			}
			args = append(args, v)
		}
		if x.fn.text {
			ev.textCall = x
		}
		if x.fn.spatial {
			ev.spatialCall = x
		}
		return x.fn.fn(ev, args)
	case *objectLit:
		fs := make([]field, 0, len(x.keys))
		size := 0
		for i, k := range x.keys {
			if v := ev.eval(x.vals[i]); v.k != kUndef {
				if len(x.keys) > 1 {
					size = ev.addSize("an object", size, v)
				}
				fs = append(fs, field{k, v})
			}
		}
		return value{k: kObj, o: fs}
	case *arrayLit:
		as := make([]value, 0, len(x.elems))
		size := 0
		for _, y := range x.elems {
			if v := ev.eval(y); v.k != kUndef {
				if len(x.elems) > 1 {
					size = ev.addSize("an array", size, v)
				}
				as = append(as, v)
			}
		}
		return value{k: kArr, a: as}
	}
	return undef
}

func evalUnary(op tokType, v value) value {
	switch op {
	case tNot:
		if v.k != kBool {
			return undef
		}
		return boolVal(!v.b)
	case tMinus:
		if v.k != kNum {
			return undef
		}
		return numVal(-v.n)
	case tPlus:
		if v.k != kNum {
			return undef
		}
		return v
	case tTilde:
		if v.k != kNum {
			return undef
		}
		return numVal(float64(^toInt32(v.n)))
	}
	return undef
}

// toInt32 is JavaScript's ToInt32.
func toInt32(f float64) int32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	f = math.Trunc(f)
	f = math.Mod(f, 1<<32)
	if f < 0 {
		f += 1 << 32
	}
	return int32(uint32(f))
}

// evalChain evaluates x, whose left operand l is a binary expression too,
// without a level of recursion for each link of the chain: a query such as
// c.a + c.a + ... (a left-deep tree as deep as the query is long) would
// otherwise grow the goroutine's stack by a frame of eval per term, some
// hundreds of megabytes for a query of the largest length allowed. The
// spine's nodes are taken from the root down to the first operand that is
// not a binary expression, which is evaluated first; then each node, from
// the innermost out, applies its operator to the value so far and its own
// right operand, as the recursion would, in the same order.
func (ev *evaluator) evalChain(x, l *binary) value {
	var buf [16]*binary
	spine := append(buf[:0], x, l)
	e := l.l
	for {
		b, ok := e.(*binary)
		if !ok {
			break
		}
		spine = append(spine, b)
		e = b.l
	}
	v := ev.eval(e)
	for i := len(spine) - 1; i >= 0; i-- {
		v = ev.evalBinaryWith(spine[i], v)
	}
	return v
}

// evalBinaryWith evaluates the binary expression x whose left operand has
// the value l (evaluated by the caller), evaluating its right operand only
// when the operator needs it (AND, OR and ?? stop early).
func (ev *evaluator) evalBinaryWith(x *binary, l value) value {
	switch x.op {
	case tAnd:
		if l.k == kBool && !l.b {
			return falseV
		}
		r := ev.eval(x.r)
		if r.k == kBool && !r.b {
			return falseV
		}
		if l.isTrue() && r.isTrue() {
			return trueVal
		}
		return undef
	case tOr:
		if l.isTrue() {
			return trueVal
		}
		r := ev.eval(x.r)
		if r.isTrue() {
			return trueVal
		}
		if l.k == kBool && r.k == kBool {
			return falseV
		}
		return undef
	case tCoalesce:
		if l.k != kUndef {
			return l
		}
		return ev.eval(x.r)
	case tConcat:
		r := ev.eval(x.r)
		if l.k != kStr || r.k != kStr {
			return undef
		}
		ev.checkSize("||", len(l.s)+len(r.s))
		return strVal(l.s + r.s)
	}
	return evalBinary(x.op, l, ev.eval(x.r))
}

func evalBinary(op tokType, l, r value) value {
	switch op {
	case tEq, tNe, tLt, tLe, tGt, tGe:
		return compareOp(op, l, r)
	}
	if l.k != kNum || r.k != kNum {
		return undef
	}
	a, b := l.n, r.n
	switch op {
	case tPlus:
		return numVal(a + b)
	case tMinus:
		return numVal(a - b)
	case tStar:
		return numVal(a * b)
	case tSlash:
		return numVal(a / b)
	case tPercent:
		return numVal(math.Mod(a, b))
	case tAmp:
		return numVal(float64(toInt32(a) & toInt32(b)))
	case tPipe:
		return numVal(float64(toInt32(a) | toInt32(b)))
	case tCaret:
		return numVal(float64(toInt32(a) ^ toInt32(b)))
	case tShl:
		return numVal(float64(toInt32(a) << (uint32(toInt32(b)) & 31)))
	case tShr:
		return numVal(float64(toInt32(a) >> (uint32(toInt32(b)) & 31)))
	case tUShr:
		return numVal(float64(uint32(toInt32(a)) >> (uint32(toInt32(b)) & 31)))
	}
	return undef
}

// compareOp applies a comparison operator with Cosmos semantics: operands
// of different types (or undefined) give undefined; arrays and objects
// support only = and != (deep equality).
func compareOp(op tokType, l, r value) value {
	if l.k != r.k || l.k == kUndef {
		return undef
	}
	if l.k == kArr || l.k == kObj {
		switch op {
		case tEq:
			return boolVal(deepEqual(l, r))
		case tNe:
			return boolVal(!deepEqual(l, r))
		}
		return undef
	}
	var c int
	switch l.k {
	case kNum:
		if math.IsNaN(l.n) || math.IsNaN(r.n) {
			return boolVal(op == tNe) // NaN equals nothing, itself included
		}
		c = compareTotal(l, r)
	case kStr:
		if op == tEq {
			return boolVal(l.s == r.s)
		}
		c = strings.Compare(l.s, r.s)
	default:
		c = compareTotal(l, r)
	}
	switch op {
	case tEq:
		return boolVal(c == 0)
	case tNe:
		return boolVal(c != 0)
	case tLt:
		return boolVal(c < 0)
	case tLe:
		return boolVal(c <= 0)
	case tGt:
		return boolVal(c > 0)
	case tGe:
		return boolVal(c >= 0)
	}
	return undef
}

// wellFormed is a cheap check that a stored document is one JSON object
// (balanced brackets and strings); documents failing it are skipped rather
// than returned verbatim.
func wellFormed(b []byte) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	end, ok := jsontext.SkipValue(b, i)
	return ok && skipWS(b, end) == len(b)
}

func countRaw(rows []row) int {
	n := 0
	for _, r := range rows {
		if r.raw != nil {
			n++
		}
	}
	return n
}

func (ev *evaluator) rowVal(r row) value {
	if r.raw != nil {
		return undef
	}
	return ev.vals[r.vi]
}
