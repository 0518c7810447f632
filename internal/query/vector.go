package query

import (
	"strconv"
	"strings"

	"github.com/lethedb/lethe/internal/jsontext"
	"github.com/lethedb/lethe/internal/vector"
)

// VectorDistance(a, b [, bruteForce [, options]]) compares two vectors
// (arrays of numbers) with a distance function: the options'
// distanceFunction, else that of the vector embedding policy of the path
// of a (or of b), else cosine; their elements are of the options'
// dataType, else the policy's, else float32. It is the cosine similarity,
// the dot product or the euclidean distance of the two (internal/vector),
// summed in float64 and rounded to float32 (0.9, not 0.8999999761581421),
// computed exactly on every item it is evaluated for. Which items those
// are is the caller's: a diskANN vector index answers a TOP k by its
// distance with the items its graph finds (approximate), unless
// bruteForce is true (vectorindex.go in the root package, VectorTopK
// here). It is undefined when they are not vectors of
// the same length whose elements fit the type (an int8 vector holds
// integers from -128 to 127), or for cosine when one is all zeros.
//
// ORDER BY VectorDistance(...) orders the most similar first, whatever
// the direction written: the highest cosine similarities and dot
// products, the smallest euclidean distances; items for which it is
// undefined come last.

func init() {
	def("VectorDistance", 2, 4, nil)
	funcs["VECTORDISTANCE"].vector = true
}

// vecCall is what one VectorDistance call of a query compares with, worked
// out at its first evaluation.
type vecCall struct {
	lastDoc *Doc  // the item the call was last evaluated for (memo calls)
	last    value // its value for it
	metric  vector.Metric
	typ     vector.Type
	consts  [2][]float32 // the vector of each argument that is a constant, converted once
	bad     [2]bool      // the constant argument is not a vector of the type
}

// vectorOptions are the options VectorDistance takes, with the integer
// range of the numeric ones (filterPriority is a number from 0 to 1).
var vectorOptions = map[string][2]float64{
	"distanceFunction":              {},
	"dataType":                      {},
	"searchListSizeMultiplier":      {1, 100},
	"quantizedVectorListMultiplier": {1, 100},
	"filterPriority":                {0, 1},
}

// vecSettings returns the settings of the VectorDistance call x, working
// them out at its first evaluation.
func (ev *evaluator) vecSettings(x *call) *vecCall {
	if vc := ev.vecCalls[x]; vc != nil {
		return vc
	}
	vc := &vecCall{}
	var dist, typ string
	if ev.env.Vector != nil {
		for _, a := range x.args[:2] {
			if path, ok := itemPath(a); ok {
				if dist, typ = ev.env.Vector(path); dist != "" {
					break
				}
			}
		}
	}
	if len(x.args) > 2 {
		if v := ev.eval(x.args[2]); v.k != kBool {
			ev.fail("the third argument of VectorDistance (brute force) must be a boolean, found %s", describeValue(v))
		}
	}
	if len(x.args) > 3 {
		o := ev.eval(x.args[3])
		if o.k != kObj {
			ev.fail("the fourth argument of VectorDistance (its options) must be an object, found %s", describeValue(o))
		}
		for _, f := range o.o {
			name, r, ok := "", [2]float64{}, false
			for n, nr := range vectorOptions {
				if strings.EqualFold(n, f.k) {
					name, r, ok = n, nr, true
				}
			}
			switch {
			case !ok:
				ev.fail("VectorDistance has no option %q: its options are distanceFunction, dataType, searchListSizeMultiplier, quantizedVectorListMultiplier and filterPriority", f.k)
			case name == "distanceFunction":
				if _, ok := vector.ParseMetric(f.v.s); f.v.k != kStr || !ok {
					ev.fail("the distanceFunction option of VectorDistance is %s: use cosine, dotproduct or euclidean", describeValue(f.v))
				}
				dist = f.v.s
			case name == "dataType":
				if _, ok := vector.ParseType(f.v.s); f.v.k != kStr || !ok {
					ev.fail("the dataType option of VectorDistance is %s: use float32, float16, int8 or uint8", describeValue(f.v))
				}
				typ = f.v.s
			default:
				integer := name != "filterPriority"
				if f.v.k != kNum || f.v.n < r[0] || f.v.n > r[1] || (integer && f.v.n != float64(int(f.v.n))) {
					kind := "a number"
					if integer {
						kind = "an integer"
					}
					ev.fail("the %s option of VectorDistance must be %s from %g to %g, found %s", name, kind, r[0], r[1], describeValue(f.v))
				}
			}
		}
	}
	vc.metric, _ = vector.ParseMetric(dist)
	vc.typ, _ = vector.ParseType(typ)
	for i, a := range x.args[:2] {
		if isConst(a) {
			vc.consts[i], vc.bad[i] = ev.vecOf(ev.eval(a), vc.typ, nil)
			vc.bad[i] = !vc.bad[i]
		}
	}
	if ev.vecCalls == nil {
		ev.vecCalls = map[*call]*vecCall{}
	}
	ev.vecCalls[x] = vc
	return vc
}

// isConst reports whether e is the same for every row: it refers to no
// alias and holds no subquery.
func isConst(e expr) bool {
	c := true
	walk(e, func(e expr) bool {
		switch e.(type) {
		case *ident, *subquery:
			c = false
		}
		return c
	})
	return c
}

// vectorDistance evaluates the VectorDistance call x: once per item for
// the calls that share a memo (SELECT VectorDistance(c.v, @q) ... ORDER BY
// VectorDistance(c.v, @q) compares each item's vector once).
func (ev *evaluator) vectorDistance(x *call) value {
	if x.memo == nil {
		return ev.vectorDistanceOf(x)
	}
	vc := ev.vecSettings(x.memo)
	doc := ev.slots[0].doc
	if doc == nil || vc.lastDoc != doc {
		vc.last, vc.lastDoc = ev.vectorDistanceOf(x.memo), doc
	}
	return vc.last
}

// shareVectorCalls gives the VectorDistance calls of q's select list and
// ORDER BY that read nothing but the item (the FROM alias without a path)
// the first of them that is the same as each for a memo.
func (q *Query) shareVectorCalls() {
	if q.from == nil || q.from.path != nil {
		return
	}
	var seen []*call
	visit := func(e expr) {
		walk(e, func(e expr) bool {
			x, ok := e.(*call)
			if !ok || !x.fn.vector {
				return true
			}
			itemOnly := true
			for _, a := range x.args {
				walk(a, func(e expr) bool {
					switch y := e.(type) {
					case *ident:
						itemOnly = itemOnly && y.slot == 0
					case *subquery:
						itemOnly = false
					}
					return itemOnly
				})
			}
			if !itemOnly {
				return true
			}
			x.memo = x
			for _, y := range seen {
				if sameExpr(x, y) {
					x.memo = y
					break
				}
			}
			if x.memo == x {
				seen = append(seen, x)
			}
			return true
		})
	}
	for _, it := range q.items {
		visit(it.x)
	}
	for _, o := range q.orderBy {
		visit(o.x)
	}
}

// vectorDistanceOf computes the VectorDistance call x.
func (ev *evaluator) vectorDistanceOf(x *call) value {
	vc := ev.vecSettings(x)
	var vs [2][]float32
	for i, a := range x.args[:2] {
		if vc.consts[i] != nil || vc.bad[i] {
			if vc.bad[i] {
				return undef
			}
			vs[i] = vc.consts[i]
			continue
		}
		var ok bool
		raw, v, isRaw := ev.ref(a)
		if isRaw {
			ev.tick(len(raw) >> 8)
			ev.vecBuf[i], ok = parseVector(raw, vc.typ, ev.vecBuf[i][:0])
		} else {
			ev.vecBuf[i], ok = ev.vecOf(v, vc.typ, ev.vecBuf[i][:0])
		}
		if !ok {
			return undef
		}
		vs[i] = ev.vecBuf[i]
	}
	s, ok := vc.metric.Score(vs[0], vs[1])
	if !ok {
		return undef
	}
	return numVal(vector.Round32(s))
}

// vecOf appends to dst the elements of v, an array of numbers that fit t;
// ok is false when v is not one.
func (ev *evaluator) vecOf(v value, t vector.Type, dst []float32) ([]float32, bool) {
	if v.k != kArr || len(v.a) == 0 {
		return dst, false
	}
	ev.tick(len(v.a) >> 4)
	for _, e := range v.a {
		if e.k != kNum {
			return dst, false
		}
		f, ok := t.Element(e.n)
		if !ok {
			return dst, false
		}
		dst = append(dst, f)
	}
	return dst, true
}

// parseVector appends to dst the elements of raw, the JSON of an array of
// numbers that fit t, read without decoding the array into values; ok is
// false when raw is not one.
func parseVector(raw []byte, t vector.Type, dst []float32) ([]float32, bool) {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return dst, false
	}
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return dst, false
	}
	for {
		n, end, ok := readNumber(raw, i)
		if !ok {
			return dst, false
		}
		f, ok := t.Element(n)
		if !ok {
			return dst, false
		}
		dst = append(dst, f)
		i = skipWS(raw, end)
		if i >= len(raw) {
			return dst, false
		}
		if raw[i] == ']' {
			return dst, true
		}
		if raw[i] != ',' {
			return dst, false
		}
		i = skipWS(raw, i+1)
	}
}

// similarKey is the ORDER BY key of a VectorDistance value v of the call x:
// ascending keys put the most similar first and an undefined value last.
func (ev *evaluator) similarKey(x *call, v value) value {
	switch {
	case v.k != kNum:
		return strVal("")
	case ev.vecSettings(x).metric.HigherIsCloser():
		return numVal(-v.n)
	}
	return v
}

// checkSearchCall checks a call to a search function, found in where (a
// clause's name, "" for the select list): FullTextScore and RRF only in
// ORDER BY RANK, and the arguments of VectorDistance that the service
// requires to be constants, its brute force flag and options.
func checkSearchCall(text string, x *call, where string) *Error {
	if x.fn.rank && where != "ORDER BY RANK" {
		return errAt(text, x.pos, "The %s function is only allowed in the ORDER BY RANK clause.", x.fn.name)
	}
	if x.fn.vector {
		for _, a := range x.args[min(2, len(x.args)):] {
			if !isConst(a) {
				return errAt(text, a.position(), "the third and fourth arguments of VectorDistance (brute force, options) must be constants: a boolean and an object")
			}
		}
	}
	return nil
}

// pow10 are the powers of ten that float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// readNumber reads the JSON number at raw[i:], returning it and where it
// ends; ok is false when there is none. The common numbers of vectors, of
// at most 15 significant digits and a small exponent, are computed
// exactly from their digits (one correctly rounded multiplication or
// division, as in Clinger's fast path); the others go to strconv.
func readNumber(raw []byte, i int) (n float64, end int, ok bool) {
	start := i
	neg := i < len(raw) && raw[i] == '-'
	if neg {
		i++
	}
	var mant uint64
	digits, exp := 0, 0
	intStart := i
	for ; i < len(raw) && '0' <= raw[i] && raw[i] <= '9'; i++ {
		if mant != 0 || raw[i] != '0' {
			digits++
		}
		mant = mant*10 + uint64(raw[i]-'0')
	}
	if i == intStart || (raw[intStart] == '0' && i-intStart > 1) {
		return 0, 0, false
	}
	if i < len(raw) && raw[i] == '.' {
		i++
		fracStart := i
		for ; i < len(raw) && '0' <= raw[i] && raw[i] <= '9'; i++ {
			if mant != 0 || raw[i] != '0' {
				digits++
			}
			mant = mant*10 + uint64(raw[i]-'0')
			exp--
		}
		if i == fracStart {
			return 0, 0, false
		}
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		eneg := i < len(raw) && raw[i] == '-'
		if i < len(raw) && (raw[i] == '-' || raw[i] == '+') {
			i++
		}
		e, eStart := 0, i
		for ; i < len(raw) && '0' <= raw[i] && raw[i] <= '9'; i++ {
			if e < 100000 {
				e = e*10 + int(raw[i]-'0')
			}
		}
		if i == eStart {
			return 0, 0, false
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if digits > 15 || exp < -22 || exp > 22 {
		end, fault := jsontext.ScanNumber(raw, start)
		if fault != jsontext.OK {
			return 0, 0, false
		}
		n, _ := strconv.ParseFloat(bstr(raw[start:end]), 64) // ScanNumber checked it: a range error is an underflow to zero
		return n, end, true
	}
	n = float64(mant)
	if exp < 0 {
		n /= pow10[-exp]
	} else {
		n *= pow10[exp]
	}
	if neg {
		n = -n
	}
	return n, i, true
}

// VectorSearch is a search by VectorDistance that VectorTopK finds in a
// query: the nearest Need items to Vec by the vectors at Path.
type VectorSearch struct {
	Path []string  // the items' path (property names)
	Vec  []float64 // the constant compared with them
	Need int       // how many leading rows decide the results
	// BruteForce is VectorDistance's third argument: true asks for an
	// exact search, whatever the index.
	BruteForce bool
	// SearchListSizeMultiplier is the option of that name (1 to 100), 0
	// when not given: how many candidates, per result asked for, an
	// approximate index looks at.
	SearchListSizeMultiplier int
	// DistanceFunction and DataType are the options of those names, ""
	// when not given.
	DistanceFunction, DataType string
}

// VectorTopK reports whether q's results are decided by its first need
// rows in the order of one VectorDistance between a path of the item and a
// constant: SELECT TOP (or OFFSET LIMIT) ... FROM c ORDER BY
// VectorDistance(c.path, @q [, bruteForce [, options]]) with no WHERE,
// JOIN, DISTINCT, aggregate or GROUP BY, bruteForce and options constant.
// It returns the search; ok is false when the constant is not an array of
// numbers, when bruteForce or the options are not of their types (the
// evaluation reports those), or when q is not of that kind. A vector index
// answers such a query by evaluating it on the items nearest the constant
// alone.
func (q *Query) VectorTopK(params map[string]any) (vs VectorSearch, ok bool) {
	if q.from == nil || q.from.path != nil || len(q.joins) > 0 || q.where != nil || q.rank ||
		len(q.orderBy) != 1 || q.distinct || q.aggregated || q.grouped {
		return vs, false
	}
	x, isCall := q.orderBy[0].x.(*call)
	if !isCall || !x.fn.vector {
		return vs, false
	}
	vals, err := bindParams(q, params)
	if err != nil {
		return vs, false
	}
	need, full, ok := q.resultBoundOf(vals)
	if !ok || full < 0 {
		return vs, false
	}
	vs.Need = need
	if len(x.args) > 2 {
		v, ok := constant(x.args[2], vals)
		if !ok || v.k != kBool {
			return vs, false
		}
		vs.BruteForce = v.b
	}
	if len(x.args) > 3 {
		o, ok := constant(x.args[3], vals)
		if !ok || o.k != kObj {
			return vs, false
		}
		for _, f := range o.o {
			switch {
			case strings.EqualFold(f.k, "distanceFunction") && f.v.k == kStr:
				vs.DistanceFunction = f.v.s
			case strings.EqualFold(f.k, "dataType") && f.v.k == kStr:
				vs.DataType = f.v.s
			case strings.EqualFold(f.k, "searchListSizeMultiplier") && f.v.k == kNum && f.v.n >= 1 && f.v.n <= 100 && f.v.n == float64(int(f.v.n)):
				vs.SearchListSizeMultiplier = int(f.v.n)
			case strings.EqualFold(f.k, "quantizedVectorListMultiplier"), strings.EqualFold(f.k, "filterPriority"):
			default:
				return vs, false // not an option, or not of its type: the evaluation says which
			}
		}
	}
	var c value
	vs.Path, ok = rootPath(x.args[0])
	if ok {
		c, ok = constant(x.args[1], vals)
	} else if vs.Path, ok = rootPath(x.args[1]); ok {
		c, ok = constant(x.args[0], vals)
	}
	if !ok || c.k != kArr || len(c.a) == 0 {
		return vs, false
	}
	vs.Vec = make([]float64, len(c.a))
	for i, e := range c.a {
		if e.k != kNum {
			return vs, false
		}
		vs.Vec[i] = e.n
	}
	return vs, true
}

// VectorAt appends to dst the elements of the vector at path in doc (an
// item's JSON), read as VectorDistance reads it: an array of numbers that
// fit t; ok is false when there is none.
func VectorAt(doc []byte, path []string, t vector.Type, dst []float32) ([]float32, bool) {
	raw := doc
	for _, name := range path {
		sub, ok := lookupKey(raw, name)
		if !ok {
			return dst, false
		}
		raw = sub
	}
	return parseVector(raw, t, dst)
}
