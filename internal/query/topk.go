package query

// Bounded ordering: a query whose rows are sorted before they are
// returned (by ORDER BY, or without it by item and position, as sortRows
// does) and of which only the first n results are needed (TOP, LIMIT, or a
// page: Resume.Keep) holds no more than 2n rows, not every row that passes
// WHERE. Rows are gathered in a buffer; once it holds 2n, it is sorted and
// cut to its first n, whose last is from then on the row a new row must
// come before to be held at all. So an evaluation holds O(n) rows, costs
// O(log n) comparisons (amortized) a row held and one a row turned away,
// and its results are exactly those of a sort of every row: the order is
// total (compareRows), so the first n rows of all are the first n of any
// set that holds them.

// pruneRows lets evaluations bound the rows they hold (tests turn it off
// to compare with a sort of every row).
var pruneRows = true

// Prunes reports whether an evaluation of q holds only the rows its first
// n results need, when n is bounded (TOP, LIMIT, Resume.Keep): q's results
// are its rows, one by one, sorted (no DISTINCT, aggregate, GROUP BY or
// ORDER BY RANK; a FROM).
func (q *Query) Prunes() bool {
	return q.from != nil && !q.distinct && !q.aggregated && !q.grouped && !q.rank
}

// startPruning sets ev up to hold at most the rows the results need: the
// first offset+n, where n is the least of top, limit and keep (each
// negative or, for keep, 0 when there is none), all after after (nil: from
// the start). It does nothing for queries whose rows are not ordered one
// by one (DISTINCT, aggregates, GROUP BY, RANK, no FROM), for those that
// may stop inside an item (ev.need), or when no n bounds the results.
func (ev *evaluator) startPruning(offset, top, limit, keep int, after *Key) {
	if !pruneRows || !ev.q.Prunes() || ev.need > 0 {
		return
	}
	n := -1
	for _, m := range []int{top, limit} {
		if m >= 0 && (n < 0 || m < n) {
			n = m
		}
	}
	if keep > 0 && (n < 0 || keep < n) {
		n = keep
	}
	if n < 0 {
		return
	}
	ev.topN = min(offset+n, MaxRows) // MaxRows: no evaluation holds more anyway
	ev.after = after
}

// offer adds the row of the current bindings, r, to rows, the rows held,
// if the results may need it (see startPruning): its ORDER BY values are
// evaluated first, and its result only if it is held, so a row turned away
// costs its ORDER BY values alone. A row held keeps its computed result
// encoded in a buffer of its own, and counts exactly rowBytes and that
// encoding against the budget; a row turned away, now or later, counts
// nothing, and its buffers serve the next rows.
func (ev *evaluator) offer(rows []row, r row) []row {
	if n := len(ev.q.orderBy); n > 0 {
		r.keys = ev.orderValues(ev.orderKeys(n))
	}
	if ev.after != nil && ev.q.compareKeys(Key{order: r.keys, item: ev.docs[r.doc].ID, seq: r.seq}, *ev.after) <= 0 {
		ev.recycle(r) // at or before the result resumed after
		return rows
	}
	n := ev.topN
	if n == 0 || ev.cut && ev.compareRows(ev.docs, r, rows[n-1]) >= 0 {
		ev.recycle(r) // n rows held come before it
		return rows
	}
	v, ok := ev.result(&r)
	if !ok {
		ev.recycle(r)
		return rows
	}
	h0 := ev.held
	ev.admit(len(rows), r, v)
	if r.raw == nil {
		b := ev.spareRaw
		if len(b) > 0 {
			ev.spareRaw = b[:len(b)-1]
			r.raw = appendJSON(b[len(b)-1][:0], v)
		} else {
			r.raw = appendJSON(nil, v)
		}
		r.enc = true
		ev.held = h0 // r counts its encoding, not checkResult's estimate
		ev.hold(rowHeld(r))
	}
	if len(rows) == 2*n {
		ev.sortRows(rows, ev.docs)
		for _, d := range rows[n:] {
			ev.held -= rowHeld(d)
			ev.recycle(d)
		}
		clear(rows[n:])
		rows, ev.cut = rows[:n], true
	}
	return append(rows, r)
}

// rowHeld is what a row held by a bounded evaluation counts against its
// budget.
func rowHeld(r row) int {
	if r.enc {
		return rowBytes + len(r.raw)
	}
	return rowBytes
}

// recycle keeps the buffers of a row turned away for the next rows.
func (ev *evaluator) recycle(r row) {
	if r.enc {
		ev.spareRaw = append(ev.spareRaw, r.raw)
	}
	if r.keys != nil {
		ev.spareKeys = append(ev.spareKeys, r.keys)
	}
}

// orderKeys returns a slice for a row's n ORDER BY values: one a row
// turned away had, or a new one.
func (ev *evaluator) orderKeys(n int) []value {
	if k := ev.spareKeys; len(k) > 0 {
		ev.spareKeys = k[:len(k)-1]
		return k[len(k)-1][:n]
	}
	return make([]value, n)
}

// lessBy returns n less m, at least 0, or n when it is negative (no
// bound).
func lessBy(n, m int) int {
	if n < 0 {
		return n
	}
	return max(0, n-m)
}
