package query

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// What a secondary index needs from the query language: the scalar value
// at a path of a document, ordered as the language orders values, and the
// conditions of a WHERE clause that an index of one path can answer.

// IndexKey is a scalar JSON value (null, a boolean, a number or a string)
// in the language's order: null < false < true < numbers < strings.
type IndexKey struct {
	k kind
	b bool
	u uint64 // a number's bits; a string's first 8 bytes, big-endian (compared first)
	s string
}

// makeKey makes the key of a scalar value (or of a type alone).
func makeKey(v value) IndexKey {
	k := IndexKey{k: v.k, b: v.b, s: v.s}
	switch v.k {
	case kNum:
		k.u = math.Float64bits(v.n)
	case kStr:
		for i := range 8 {
			k.u <<= 8
			if i < len(v.s) {
				k.u |= uint64(v.s[i])
			}
		}
	}
	return k
}

func (a IndexKey) num() float64 { return math.Float64frombits(a.u) }

// Compare orders two keys: negative, zero or positive. (Keys of arrays and
// objects, which hold their type alone, are equal to each other.)
func (a IndexKey) Compare(b IndexKey) int {
	switch {
	case a.k != b.k:
		return cmp.Compare(a.k, b.k)
	case a.k == kBool && a.b != b.b:
		return cmp.Compare(boolRank(a.b), boolRank(b.b))
	case a.k == kNum:
		return cmp.Compare(a.num(), b.num())
	case a.k == kStr && a.u != b.u:
		// The first 8 bytes, kept in the key, decide most comparisons
		// without reading the strings.
		return cmp.Compare(a.u, b.u)
	case a.k == kStr:
		return strings.Compare(a.s, b.s)
	}
	return 0
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (a IndexKey) value() value {
	v := value{k: a.k, b: a.b, s: a.s}
	if a.k == kNum {
		v.n = a.num()
	}
	return v
}

// Size is about how many bytes the key holds beyond its fixed part.
func (a IndexKey) Size() int { return len(a.s) }

// PathKey returns the index key of the value at path in doc, whatever it
// is: undefined when the path is missing, and for an array or an object a
// key of its type alone, so that an index of the path holds every item in
// ORDER BY's order of types (a query re-sorts the items of one type).
func PathKey(doc []byte, path []string) IndexKey {
	raw := doc
	for _, name := range path {
		sub, ok := lookupKey(raw, name)
		if !ok {
			return IndexKey{}
		}
		raw = sub
	}
	i := skipWS(raw, 0)
	switch {
	case i >= len(raw):
		return IndexKey{}
	case raw[i] == '{':
		return IndexKey{k: kObj}
	case raw[i] == '[':
		return IndexKey{k: kArr}
	}
	v := decodeRaw(raw)
	return makeKey(v)
}

// SysKey returns the index key of the system property name ("_ts" or
// "_etag") of d, as queries see it; ok is false for another name.
func SysKey(d *Doc, name string) (k IndexKey, ok bool) {
	v, ok := d.sysMember(name)
	if !ok {
		return IndexKey{}, false
	}
	return makeKey(v), true
}

// TypeOnly reports whether k holds the type of its value alone (an array or
// an object), so that it is equal to the key of every value of that type.
func (a IndexKey) TypeOnly() bool { return a.k == kArr || a.k == kObj }

// Scalar reports whether k is a scalar value (not undefined, an array or
// an object).
func (a IndexKey) Scalar() bool { return a.k >= kNull && a.k <= kStr }

// OrderedByPaths reports whether q's results could come from a walk of an
// index of its ORDER BY paths in order: an ORDER BY of paths of the FROM
// alias (each with its direction, desc), no DISTINCT, aggregate or GROUP
// BY. With TOP or LIMIT, the results are the first of that order: need is
// how many leading rows decide them (OFFSET plus what TOP and LIMIT keep),
// full how many results there are when the items give that many rows.
// Without either, need and full are -1: every row is a result.
func (q *Query) OrderedByPaths(params map[string]any) (paths [][]string, desc []bool, need, full int, ok bool) {
	if q.from == nil || q.from.path != nil || len(q.orderBy) == 0 || q.distinct || q.aggregated || q.grouped {
		return nil, nil, 0, 0, false
	}
	for _, o := range q.orderBy {
		path, ok := rootPath(o.x)
		if !ok {
			return nil, nil, 0, 0, false
		}
		paths, desc = append(paths, path), append(desc, o.desc)
	}
	need, full, ok = q.resultBound(params)
	if !ok {
		return nil, nil, 0, 0, false
	}
	return paths, desc, need, full, true
}

// InItemOrder reports whether q's results are made item by item in the
// order of the items' keys (Doc.ID), each item's results together: a FROM,
// no ORDER BY, DISTINCT, aggregate or GROUP BY. need and full are as for
// OrderedByPaths.
func (q *Query) InItemOrder(params map[string]any) (need, full int, ok bool) {
	if q.from == nil || q.from.path != nil || len(q.orderBy) > 0 || q.distinct || q.aggregated || q.grouped {
		return 0, 0, false
	}
	return q.resultBound(params)
}

// resultBound returns how many leading rows decide q's results (OFFSET
// plus what TOP and LIMIT keep) and how many results there are when the
// items give that many rows; -1 and -1 without TOP or LIMIT. ok is false
// when TOP, OFFSET or LIMIT is not a constant count.
func (q *Query) resultBound(params map[string]any) (need, full int, ok bool) {
	vals, err := bindParams(q, params)
	if err != nil {
		return 0, 0, false
	}
	return q.resultBoundOf(vals)
}

// resultBoundOf is resultBound with the parameters bound (bindParams).
func (q *Query) resultBoundOf(vals []value) (need, full int, ok bool) {
	count := func(e expr) (int, bool) {
		v, ok := constant(e, vals)
		if !ok || v.k != kNum || v.n < 0 || v.n != math.Trunc(v.n) || v.n > MaxRows {
			return 0, false
		}
		return int(v.n), true
	}
	top, offset, limit := -1, 0, -1
	if q.top != nil {
		if top, ok = count(q.top); !ok {
			return 0, 0, false
		}
	}
	if q.limit != nil {
		o, ok1 := count(q.offset)
		l, ok2 := count(q.limit)
		if !ok1 || !ok2 {
			return 0, 0, false
		}
		offset, limit = o, l
	}
	switch {
	case top < 0 && limit < 0:
		return -1, -1, true
	case top < 0:
		full = limit
	case limit < 0:
		full = top
	default:
		full = min(top, limit)
	}
	return offset + full, full, true
}

// OrderKeys returns the index keys of the ORDER BY values of the result r
// resumes after (a key of its type alone for an array or an object).
func (r *Resume) OrderKeys() []IndexKey {
	ks := make([]IndexKey, len(r.After.order))
	for i, v := range r.After.order {
		switch v.k {
		case kArr, kObj:
			ks[i] = IndexKey{k: v.k}
		default:
			ks[i] = makeKey(v)
		}
	}
	return ks
}

// Truncate keeps the first n results of res.
func (res *Result) Truncate(n int) {
	if n >= len(res.Items) {
		return
	}
	res.Items, res.Sources, res.rows = res.Items[:n], res.Sources[:n], res.rows[:n]
	if res.canon != nil {
		res.canon = res.canon[:n]
	}
}

// OrderKeysBefore reports whether the ORDER BY values of res.Items[i] are
// known to come strictly before ks (the index keys of one item at the
// ORDER BY paths), each in its direction (desc). A key of an array or an
// object, which holds its type alone, decides only against another type:
// where it would have to be compared with a value of its own type, the
// answer is false.
func (res *Result) OrderKeysBefore(i int, ks []IndexKey, desc []bool) bool {
	r := res.rows[i]
	if len(r.keys) != len(ks) || len(ks) != len(desc) {
		return false
	}
	for j, k := range ks {
		if r.keys[j].k == k.k && (k.k == kArr || k.k == kObj) {
			return false // equal types, values unknown
		}
		c := compareTotal(r.keys[j], k.value())
		if c == 0 {
			continue
		}
		if desc[j] {
			return c > 0
		}
		return c < 0
	}
	return false
}

// PathValue returns the scalar value at path (property names from the
// document's root) in doc, a JSON object, and whether there is one: a
// missing property, an array or an object has no key.
func PathValue(doc []byte, path []string) (IndexKey, bool) {
	raw := doc
	for _, name := range path {
		sub, ok := lookupKey(raw, name)
		if !ok {
			return IndexKey{}, false
		}
		raw = sub
	}
	i := skipWS(raw, 0)
	if i < len(raw) && (raw[i] == '{' || raw[i] == '[') {
		return IndexKey{}, false
	}
	v := decodeRaw(raw)
	switch v.k {
	case kNull, kBool, kNum, kStr:
		return makeKey(v), true
	}
	return IndexKey{}, false
}

// An IndexRange is a condition of a query's WHERE clause on the value at
// one path of the items, which every result satisfies: the items whose
// value is one of Points, or lies between Lo and Hi, or is a string that
// begins with Prefix. An index of the path finds the candidates; the query
// is then evaluated on them alone.
type IndexRange struct {
	Path   []string
	Points []IndexKey // equality and IN: the values; nil otherwise
	// A range: Lo and Hi bound it when HasLo and HasHi (a missing bound is
	// the end of Lo's or Hi's type, the only type the range matches).
	Lo, Hi         IndexKey
	HasLo, HasHi   bool
	LoIncl, HiIncl bool
	Prefix         *string // STARTSWITH: the strings that begin with it
}

// Kind reports what kind of condition r is: "equality", "in", "range" or
// "prefix".
func (r IndexRange) Kind() string {
	switch {
	case r.Prefix != nil:
		return "prefix"
	case len(r.Points) == 1:
		return "equality"
	case r.Points != nil:
		return "in"
	}
	return "range"
}

// Contains reports whether k satisfies the range (for the bounds of a
// range walk).
func (r IndexRange) Contains(k IndexKey) bool {
	switch {
	case r.Prefix != nil:
		return k.k == kStr && strings.HasPrefix(k.s, *r.Prefix)
	case r.Points != nil:
		for _, p := range r.Points {
			if p.Compare(k) == 0 {
				return true
			}
		}
		return false
	}
	if k.k != r.rangeType() {
		return false
	}
	if r.HasLo {
		if c := k.Compare(r.Lo); c < 0 || c == 0 && !r.LoIncl {
			return false
		}
	}
	if r.HasHi {
		if c := k.Compare(r.Hi); c > 0 || c == 0 && !r.HiIncl {
			return false
		}
	}
	return true
}

// Start returns the smallest key the range may hold: where a walk of an
// index over it begins.
func (r IndexRange) Start() IndexKey {
	switch {
	case r.Prefix != nil:
		return makeKey(strVal(*r.Prefix))
	case r.Points != nil:
		lo := r.Points[0]
		for _, p := range r.Points[1:] {
			if p.Compare(lo) < 0 {
				lo = p
			}
		}
		return lo
	case r.HasLo:
		return r.Lo
	}
	return typeStart(r.Hi.k)
}

// Past reports whether a walk in ascending order that has reached k has
// passed every key of the range.
func (r IndexRange) Past(k IndexKey) bool {
	switch {
	case r.Prefix != nil:
		return k.k != kStr || k.s > *r.Prefix && !strings.HasPrefix(k.s, *r.Prefix)
	case r.Points != nil:
		for _, p := range r.Points {
			if p.Compare(k) >= 0 {
				return false
			}
		}
		return true
	case r.HasHi:
		c := k.Compare(r.Hi)
		return c > 0 || c == 0 && !r.HiIncl
	}
	return k.k != r.Lo.k
}

// typeStart is the smallest key of type t.
func typeStart(t kind) IndexKey {
	switch t {
	case kNum:
		return makeKey(value{k: kNum, n: math.Inf(-1)})
	case kBool:
		return IndexKey{k: kBool}
	}
	return IndexKey{k: t}
}

// IndexRanges returns the conditions of q's WHERE clause that an index can
// answer, with params bound: conjuncts (joined by AND at the top) that
// compare a path of the FROM alias's items with a constant (=, <, <=, >,
// >=, BETWEEN, IN) or test it with STARTSWITH (case-sensitive). A query
// whose FROM iterates a path (FROM x IN c.arr), or that fails to bind its
// parameters, has none.
func (q *Query) IndexRanges(params map[string]any) []IndexRange {
	vals, ok := q.itemsWhere(params)
	if !ok {
		return nil
	}
	var out []IndexRange
	conjuncts(q.where, func(e expr) {
		if r, ok := indexRange(e, vals); ok {
			out = append(out, r)
		}
	})
	return mergeRanges(out)
}

// itemsWhere returns q's parameters bound, when q has a WHERE clause on
// the items themselves (a FROM without a path) and its parameters bind:
// what an index can answer conditions of.
func (q *Query) itemsWhere(params map[string]any) ([]value, bool) {
	if q.from == nil || q.from.path != nil || q.where == nil {
		return nil, false
	}
	vals, err := bindParams(q, params)
	return vals, err == nil
}

// conjuncts calls fn with each conjunct of e: the operands of its ANDs at
// the top.
func conjuncts(e expr, fn func(expr)) {
	if b, ok := e.(*binary); ok && b.op == tAnd {
		conjuncts(b.l, fn)
		conjuncts(b.r, fn)
		return
	}
	fn(e)
}

// mergeRanges intersects the ranges on one path and one type (c.n > 1 AND
// c.n < 5 is one range), so that an index walks only what both allow.
func mergeRanges(rs []IndexRange) []IndexRange {
	var out []IndexRange
next:
	for _, r := range rs {
		if r.Points != nil || r.Prefix != nil {
			out = append(out, r)
			continue
		}
		for i := range out {
			o := &out[i]
			if o.Points != nil || o.Prefix != nil || !slices.Equal(o.Path, r.Path) || o.rangeType() != r.rangeType() {
				continue
			}
			if r.HasLo && (!o.HasLo || r.Lo.Compare(o.Lo) > 0 || r.Lo.Compare(o.Lo) == 0 && !r.LoIncl) {
				o.Lo, o.HasLo, o.LoIncl = r.Lo, true, r.LoIncl
			}
			if r.HasHi && (!o.HasHi || r.Hi.Compare(o.Hi) < 0 || r.Hi.Compare(o.Hi) == 0 && !r.HiIncl) {
				o.Hi, o.HasHi, o.HiIncl = r.Hi, true, r.HiIncl
			}
			continue next
		}
		out = append(out, r)
	}
	return out
}

// rangeType is the type of the values a range matches.
func (r IndexRange) rangeType() kind {
	if r.HasLo {
		return r.Lo.k
	}
	return r.Hi.k
}

// Bounded reports whether a range has both bounds.
func (r IndexRange) Bounded() bool { return r.HasLo && r.HasHi }

// bindParams converts the parameters of q as Exec does.
func bindParams(q *Query, params map[string]any) ([]value, error) {
	out := make([]value, len(q.params))
	for i, name := range q.params {
		x, ok := params[name]
		if !ok {
			return nil, errAt(q.text, q.paramPos[i], "missing parameter %s", name)
		}
		v, ok := fromGo(x, 0)
		if !ok {
			return nil, errAt(q.text, q.paramPos[i], "parameter %s cannot be represented as JSON", name)
		}
		out[i] = v
	}
	return out, nil
}

// constant returns the value of a literal or bound parameter.
func constant(e expr, params []value) (value, bool) {
	switch x := e.(type) {
	case *literal:
		return x.val, true
	case *paramRef:
		if x.idx < len(params) {
			return params[x.idx], true
		}
	}
	return undef, false
}

// rootPath returns the property names of a path on the FROM alias (slot 0).
func rootPath(e expr) ([]string, bool) {
	var names []string
	for {
		switch x := e.(type) {
		case *member:
			names = append(names, x.name)
			e = x.x
		case *ident:
			if x.slot != 0 || len(names) == 0 {
				return nil, false
			}
			for i, j := 0, len(names)-1; i < j; i, j = i+1, j-1 {
				names[i], names[j] = names[j], names[i]
			}
			return names, true
		default:
			return nil, false
		}
	}
}

func scalarKey(v value) (IndexKey, bool) {
	switch v.k {
	case kNull, kBool, kStr:
		return makeKey(v), true
	case kNum:
		if !finite(v) {
			return IndexKey{}, false // NaN matches nothing, and no index holds either
		}
		return makeKey(v), true
	}
	return IndexKey{}, false
}

// indexRange reads one conjunct as a condition an index can answer.
func indexRange(e expr, params []value) (IndexRange, bool) {
	switch x := e.(type) {
	case *binary:
		l, r, op := x.l, x.r, x.op
		path, ok := rootPath(l)
		if !ok {
			path, ok = rootPath(r)
			l, r = r, l
			switch op { // c OP path is path OP' c
			case tLt:
				op = tGt
			case tLe:
				op = tGe
			case tGt:
				op = tLt
			case tGe:
				op = tLe
			}
		}
		if !ok {
			return IndexRange{}, false
		}
		v, ok := constant(r, params)
		if !ok {
			return IndexRange{}, false
		}
		k, ok := scalarKey(v)
		if !ok {
			return IndexRange{}, false
		}
		rg := IndexRange{Path: path}
		switch op {
		case tEq:
			rg.Points = []IndexKey{k}
		case tLt, tLe:
			rg.Hi, rg.HasHi, rg.HiIncl = k, true, op == tLe
		case tGt, tGe:
			rg.Lo, rg.HasLo, rg.LoIncl = k, true, op == tGe
		default:
			return IndexRange{}, false
		}
		return rg, true
	case *between:
		path, ok := rootPath(x.x)
		if !ok || x.not {
			return IndexRange{}, false
		}
		lo, ok1 := constant(x.lo, params)
		hi, ok2 := constant(x.hi, params)
		kl, ok3 := scalarKey(lo)
		kh, ok4 := scalarKey(hi)
		if !ok1 || !ok2 || !ok3 || !ok4 || kl.k != kh.k {
			return IndexRange{}, false
		}
		return IndexRange{Path: path, Lo: kl, Hi: kh, HasLo: true, HasHi: true, LoIncl: true, HiIncl: true}, true
	case *inList:
		path, ok := rootPath(x.x)
		if !ok || x.not || len(x.list) == 0 {
			return IndexRange{}, false
		}
		rg := IndexRange{Path: path}
		for _, y := range x.list {
			v, ok := constant(y, params)
			if !ok {
				return IndexRange{}, false
			}
			if k, ok := scalarKey(v); ok {
				rg.Points = append(rg.Points, k)
			} else if v.k != kUndef {
				return IndexRange{}, false // an array or object: equal to no scalar, but to itself
			}
		}
		if rg.Points == nil {
			rg.Points = []IndexKey{} // matches nothing
		}
		return rg, true
	case *call:
		if x.fn == nil || x.fn.name != "STARTSWITH" || len(x.args) < 2 {
			return IndexRange{}, false
		}
		path, ok := rootPath(x.args[0])
		if !ok {
			return IndexRange{}, false
		}
		v, ok := constant(x.args[1], params)
		if !ok || v.k != kStr {
			return IndexRange{}, false
		}
		if len(x.args) == 3 {
			ci, ok := constant(x.args[2], params)
			if !ok || ci.k != kBool || ci.b {
				return IndexRange{}, false // case-insensitive: not a range of the index
			}
		}
		p := v.s
		return IndexRange{Path: path, Prefix: &p}, true
	}
	return IndexRange{}, false
}

// OrderByPaths returns the paths of q's ORDER BY items and their
// directions, when every item is a path of the FROM alias's items (what a
// composite index can serve); ok is false otherwise, and without ORDER BY.
func (q *Query) OrderByPaths() (paths [][]string, desc []bool, ok bool) {
	if q.from == nil || q.from.path != nil || len(q.orderBy) == 0 {
		return nil, nil, false
	}
	for _, o := range q.orderBy {
		path, ok := rootPath(o.x)
		if !ok {
			return nil, nil, false
		}
		paths, desc = append(paths, path), append(desc, o.desc)
	}
	return paths, desc, true
}

// Features are the clauses of a query whose results, over several
// partitions, a gateway cannot merge by concatenating each partition's:
// what Cosmos DB's query plan asks a client to do itself.
type Features struct {
	OrderBy     bool // ORDER BY
	Top         bool // TOP
	OffsetLimit bool // OFFSET ... LIMIT
	Distinct    bool // SELECT DISTINCT
	Aggregate   bool // an aggregate in the select list (with or without GROUP BY)
	GroupBy     bool // GROUP BY
	SelectValue bool // SELECT VALUE
}

// Any reports whether the query has any of the features that need a
// client's work across partitions.
func (f Features) Any() bool {
	return f.OrderBy || f.Top || f.OffsetLimit || f.Distinct || f.Aggregate || f.GroupBy
}

// Features reports the top-level clauses of q that a cross-partition
// query plan names.
func (q *Query) Features() Features {
	return Features{
		OrderBy:     len(q.orderBy) > 0,
		Top:         q.top != nil,
		OffsetLimit: q.limit != nil,
		Distinct:    q.distinct,
		Aggregate:   len(q.aggs) > 0,
		GroupBy:     q.grouped,
		SelectValue: q.valueSel,
	}
}

// Pinned reports whether q's WHERE clause holds, joined by AND at the top,
// an equality of each of paths with one constant (params bound): whether
// its items all have one value at each path, as a query that names one
// logical partition by its partition key paths does.
func (q *Query) Pinned(params map[string]any, paths [][]string) bool {
	ranges := q.IndexRanges(params)
	for _, p := range paths {
		found := false
		for _, r := range ranges {
			if len(r.Points) == 1 && slices.Equal(r.Path, p) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return len(paths) > 0
}

// HasWhere reports whether q has a WHERE clause (a Residual may have
// none left: every item an index found for it passes).
func (q *Query) HasWhere() bool { return q.where != nil }

// CountsRows reports whether q's one result is a function of how many
// rows pass its WHERE clause alone: an aggregate without GROUP BY whose
// select list holds nothing but COUNT of a constant (SELECT VALUE
// COUNT(1), SELECT COUNT(1) AS n), without DISTINCT, TOP, OFFSET or
// LIMIT. CountResult makes that result from the count.
func (q *Query) CountsRows() bool {
	if q.from == nil || !q.aggregated || q.grouped || q.distinct || q.top != nil || q.limit != nil || len(q.orderBy) > 0 || len(q.items) == 0 {
		return false
	}
	for _, it := range q.items {
		c, ok := it.x.(*call)
		if !ok || c.agg < 0 || c.fn.name != "COUNT" || len(c.args) != 1 {
			return false
		}
		if l, ok := c.args[0].(*literal); !ok || l.val.k == kUndef {
			return false
		}
	}
	return true
}

// CountResult returns the result of q, a query CountsRows accepts, over
// items of which n rows pass its WHERE clause: what Exec returns when it
// evaluates those items, but for Examined, ExaminedBytes and Matched,
// which say n, 0 and n (the items were counted, not read).
func CountResult(q *Query, n int) Result {
	ev := &evaluator{q: q, nextCheck: checkEvery, aggVals: make([]value, len(q.aggs))}
	for i := range ev.aggVals {
		ev.aggVals[i] = numVal(float64(n))
	}
	ev.vals = []value{ev.project(q)}
	return Result{
		Items:    [][]byte{appendJSON(nil, ev.vals[0])},
		Sources:  []int32{-1},
		Examined: n,
		Matched:  n,
		q:        q,
		rows:     []row{{vi: 0}},
	}
}

// ItemKey returns the key of the one result of the item whose identity
// key is id, in a query without ORDER BY whose results are whole items
// (ReturnsItems) and whose items give one row each.
func ItemKey(id string) Key { return Key{item: id} }

// Residual returns q with the conjuncts of its WHERE clause (joined by AND
// at the top) that r decides left out: the conditions IndexRanges reads on
// r's path that every value r contains satisfies. Evaluated on the items
// an index finds for r, and on those alone, it gives q's results without
// evaluating again what the index decided. It is q itself when r decides
// no conjunct (or the parameters do not bind).
func (q *Query) Residual(params map[string]any, r IndexRange) *Query {
	vals, ok := q.itemsWhere(params)
	if !ok {
		return q
	}
	var kept []expr
	dropped := false
	conjuncts(q.where, func(e expr) {
		if c, ok := indexRange(e, vals); ok && slices.Equal(c.Path, r.Path) && c.holdsAll(r) {
			dropped = true
			return
		}
		kept = append(kept, e)
	})
	if !dropped {
		return q
	}
	out := *q
	out.where = nil
	for _, e := range kept {
		if out.where == nil {
			out.where = e
		} else {
			out.where = &binary{op: tAnd, l: out.where, r: e}
		}
	}
	return &out
}

// holdsAll reports whether every value r contains satisfies c (both on
// one path).
func (c IndexRange) holdsAll(r IndexRange) bool {
	switch {
	case r.Points != nil:
		for _, p := range r.Points {
			if !c.Contains(p) {
				return false
			}
		}
		return true
	case r.Prefix != nil:
		return c.Prefix != nil && strings.HasPrefix(*r.Prefix, *c.Prefix)
	case c.Points != nil || c.Prefix != nil || c.rangeType() != r.rangeType():
		return false
	}
	if c.HasLo {
		if !r.HasLo {
			return false
		}
		if k := r.Lo.Compare(c.Lo); k < 0 || k == 0 && r.LoIncl && !c.LoIncl {
			return false
		}
	}
	if c.HasHi {
		if !r.HasHi {
			return false
		}
		if k := r.Hi.Compare(c.Hi); k > 0 || k == 0 && r.HiIncl && !c.HiIncl {
			return false
		}
	}
	return true
}

// Joins reports whether q has a JOIN (an item may give several rows, or
// none).
func (q *Query) Joins() bool { return len(q.joins) > 0 }
