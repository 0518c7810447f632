package query

import (
	"slices"
	"strings"
)

// ---- subqueries ----

// A subquery is evaluated anew each time its expression is, with the
// bindings of the queries around it as they are at that moment
// (correlated). Its bindings live in slots of their own in the shared
// array (see Query.base). The rows its FROM and JOINs produce count
// against MaxJoinRowsPerItem together with those of the item being
// evaluated, and the values it holds at once against MaxValueSize.

// subRun is one evaluation of a subquery.
type subRun struct {
	q    *Query
	stop int // stop after this many rows (-1: never)
	vals []value
	keys [][]value // ORDER BY values, beside vals
	size int       // the size of vals so far
	done bool
}

// evalSubquery evaluates a subquery expression: EXISTS gives whether the
// subquery has a result, ARRAY the array of its results, and a scalar
// subquery its only result (undefined when it has none; more than one is
// an error).
func (ev *evaluator) evalSubquery(x *subquery) value {
	switch x.kind {
	case tExists:
		return boolVal(len(ev.execSub(x.q, 1)) > 0)
	case tArray:
		vals := ev.execSub(x.q, -1)
		if vals == nil {
			vals = []value{}
		}
		return value{k: kArr, a: vals}
	}
	vals := ev.execSub(x.q, 2)
	switch len(vals) {
	case 0:
		return undef
	case 1:
		return vals[0]
	}
	panic(abort{errAt(ev.q.text, x.pos, "a scalar subquery returned more than one value; use ARRAY(SELECT ...) for a list of values")})
}

// joinSource is what JOIN j iterates: the elements of its array (JOIN x
// IN ...), the value of its path (none when undefined), or the results of
// its subquery.
func (ev *evaluator) joinSource(j *joinClause) []value {
	if j.sub != nil {
		return ev.execSub(j.sub, -1)
	}
	src := ev.eval(j.x)
	if !j.in {
		if src.k == kUndef {
			return nil
		}
		return []value{src}
	}
	if src.k != kArr {
		return nil
	}
	return src.a
}

// execSub evaluates the subquery q and returns its results in order. When
// need >= 0 only the first need results are wanted, and the evaluation
// may stop once it has them.
func (ev *evaluator) execSub(q *Query, need int) []value {
	ev.tick(1)
	top, offset, limit := -1, 0, -1
	if q.top != nil {
		top = ev.mustCount(q.top, "TOP")
	}
	if q.offset != nil {
		offset = ev.mustCount(q.offset, "OFFSET")
		limit = ev.mustCount(q.limit, "LIMIT")
	}
	s := &subRun{q: q, stop: -1}
	if need >= 0 && len(q.orderBy) == 0 && !q.distinct && !q.aggregated {
		s.stop = offset + need
	}
	savedAggs, savedVals := ev.aggs, ev.aggVals
	if q.aggregated {
		ev.aggs = make([]aggState, len(q.aggs))
		ev.aggVals = make([]value, len(q.aggs))
	}
	switch {
	case q.from == nil:
		ev.subEmit(s)
	case q.from.in:
		src := ev.eval(q.from.path)
		if src.k != kArr {
			break
		}
		slot := q.fromSlot()
		for _, e := range src.a {
			if s.done {
				break
			}
			ev.slots[slot] = binding{v: e}
			ev.subJoin(s, 0)
		}
	default:
		src := ev.eval(q.from.path)
		if src.k == kUndef {
			break
		}
		ev.slots[q.fromSlot()] = binding{v: src}
		ev.subJoin(s, 0)
	}
	out := s.vals
	if q.aggregated {
		for i := range ev.aggs {
			ev.aggVals[i] = ev.aggs[i].result(q.aggs[i].fn.name)
		}
		out = nil
		if v := ev.project(q); v.k != kUndef {
			ev.addSize("a subquery's result", 0, v)
			out = []value{v}
		}
		ev.aggs, ev.aggVals = savedAggs, savedVals
	}
	if len(q.orderBy) > 0 && len(out) > 1 {
		idx := make([]int, len(out))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return q.compareOrder(s.keys[a], s.keys[b]) })
		sorted := make([]value, len(out))
		for i, j := range idx {
			sorted[i] = out[j]
		}
		out = sorted
		ev.tick(len(out) >> 4)
	}
	if q.distinct {
		seen := map[string]struct{}{}
		var buf []byte
		kept := out[:0]
		for i, v := range out {
			if i&255 == 0 {
				ev.tick(1)
			}
			buf = canonical(buf[:0], v)
			if _, dup := seen[string(buf)]; dup {
				continue
			}
			seen[string(buf)] = struct{}{}
			kept = append(kept, v)
		}
		out = kept
	}
	out = out[min(offset, len(out)):]
	if limit >= 0 && limit < len(out) {
		out = out[:limit]
	}
	if top >= 0 && top < len(out) {
		out = out[:top]
	}
	return out
}

// mustCount evaluates a TOP, OFFSET or LIMIT operand of a subquery.
func (ev *evaluator) mustCount(e expr, what string) int {
	n, err := ev.count(e, what)
	if err != nil {
		panic(abort{err})
	}
	return n
}

// subJoin binds JOIN number j of the subquery and recurses; after the
// last it emits.
func (ev *evaluator) subJoin(s *subRun, j int) {
	q := s.q
	if j == len(q.joins) {
		ev.subEmit(s)
		return
	}
	slot := q.joinSlot(j)
	for _, e := range ev.joinSource(&q.joins[j]) {
		if s.done {
			return
		}
		ev.tick(1)
		ev.slots[slot] = binding{v: e}
		ev.subJoin(s, j+1)
	}
}

// subEmit filters the subquery's current bindings and adds their
// projection (or feeds its aggregates).
func (ev *evaluator) subEmit(s *subRun) {
	q := s.q
	ev.tick(1)
	ev.countItemRow()
	if q.where != nil && !ev.eval(q.where).isTrue() {
		return
	}
	if q.aggregated {
		for i, c := range q.aggs {
			v := ev.eval(c.args[0])
			ev.aggs[i].add(c.fn.name, v)
		}
		return
	}
	var v value
	switch {
	case q.star:
		b := &ev.slots[q.lastSlot()]
		if b.lazy {
			b.v, b.lazy = decodeRaw(b.raw), false
		}
		v = b.v
	case q.valueSel:
		v = ev.eval(q.items[0].x)
	default:
		v = ev.project(q)
	}
	if v.k == kUndef {
		return
	}
	s.size = ev.addSize("the results of a subquery", s.size, v)
	var keys []value
	if len(q.orderBy) > 0 {
		keys = make([]value, len(q.orderBy))
		for i, o := range q.orderBy {
			keys[i] = ev.eval(o.x)
			s.size = ev.addSize("the ORDER BY values of a subquery", s.size, keys[i])
		}
	}
	s.vals = append(s.vals, v)
	s.keys = append(s.keys, keys)
	if s.stop >= 0 && len(s.vals) >= s.stop {
		s.done = true
	}
}

// ---- GROUP BY ----

// addToGroup adds the current row to its group: the group of the values
// of the GROUP BY expressions (undefined being a value like the others),
// created when it is the first row of it.
func (ev *evaluator) addToGroup() {
	q := ev.q
	var vbuf [4]value
	vals := vbuf[:0]
	buf := ev.keyBuf[:0]
	for _, g := range q.groupBy {
		v := ev.eval(g)
		vals = append(vals, v)
		buf = canonical(buf, v)
		buf = append(buf, ',')
	}
	ev.keyBuf = buf
	gi, ok := ev.groupIdx[string(buf)]
	if !ok {
		if len(ev.groups) >= MaxRows {
			ev.fail("the query would hold more than %d groups, the limit", MaxRows)
		}
		for _, v := range vals {
			ev.checkFinite(v, "a GROUP BY value")
			ev.checkResult(v)
		}
		ev.built += len(buf)
		ev.hold(len(buf) + rowBytes)
		if ev.built > MaxBuiltBytes {
			ev.fail("the groups of the query would be over the limit of %d bytes", MaxBuiltBytes)
		}
		gi = len(ev.groups)
		canon := string(buf)
		ev.groupIdx[canon] = gi
		ev.groups = append(ev.groups, group{canon: canon, vals: slices.Clone(vals), aggs: make([]aggState, len(q.aggs))})
	}
	for i, c := range q.aggs {
		v := ev.eval(c.args[0])
		ev.groups[gi].aggs[i].add(c.fn.name, v)
	}
}

// groupRows orders the groups by their values (then by their canonical
// encodings, which tell apart values that compare equal) and projects
// each. It returns the rows, whose doc is the index of their group, and
// the canonical encodings of the groups, the last part of their keys.
func (ev *evaluator) groupRows() ([]row, []string) {
	q := ev.q
	gs := ev.groups
	slices.SortFunc(gs, func(a, b group) int {
		if c := q.compareOrder(a.vals, b.vals); c != 0 {
			return c
		}
		return strings.Compare(a.canon, b.canon)
	})
	rows := make([]row, 0, len(gs))
	canons := make([]string, len(gs))
	ev.vals = ev.vals[:0]
	for gi := range gs {
		if gi&255 == 0 {
			ev.tick(1)
		}
		g := &gs[gi]
		canons[gi] = g.canon
		for i, c := range q.aggs {
			ev.aggVals[i] = g.aggs[i].result(c.fn.name)
		}
		ev.groupVals = g.vals
		v := ev.project(q)
		if v.k == kUndef {
			continue
		}
		ev.checkResult(v)
		rows = append(rows, row{doc: int32(gi), vi: int32(len(ev.vals)), keys: g.vals})
		ev.vals = append(ev.vals, v)
	}
	return rows, canons
}
