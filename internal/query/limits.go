package query

import (
	"context"
	"fmt"
)

// Limits on the work and memory of one Exec. A query that would pass one
// fails with a *Error saying which; the deadline and cancellation of Exec's
// context are honoured within a document as well as between documents.
const (
	// MaxValueSize is the largest string or array, in bytes of its JSON
	// encoding (for arrays, an estimate from below), that a query may build
	// with an operator or function (||, CONCAT, REPLACE, TOSTRING,
	// ARRAY_CONCAT, ...), and the largest result it may compute (results that
	// are stored items returned verbatim are not counted). It is twice the
	// largest item (2 MiB), so that any projection of one item fits.
	MaxValueSize = 4 << 20
	// MaxJoinRowsPerItem is the most rows the FROM source and JOINs of one
	// item may produce (the cross product, before WHERE), counting the rows
	// of the subqueries evaluated for it.
	MaxJoinRowsPerItem = 100_000
	// MaxRows is the most rows one query may hold before ordering: rows that
	// passed WHERE, over all items.
	MaxRows = 1 << 24
	// MaxBuiltBytes is the most bytes of computed results (results that are
	// not stored items returned verbatim) one query may produce in all.
	MaxBuiltBytes = 256 << 20

	// checkEvery is how many evaluation steps pass between two looks at
	// the context. A step is a row, a JOIN binding, or about a kilobyte of
	// string work.
	checkEvery = 4096
)

// abort carries an error out of a deep evaluation to Exec, which recovers
// it. The evaluator's value functions have no error result; a query that
// passes a limit or whose context ends stops through this panic.
type abort struct{ err error }

// fail stops the evaluation with a *Error.
func (ev *evaluator) fail(format string, args ...any) {
	panic(abort{&Error{Msg: fmt.Sprintf(format, args...)}})
}

// tick counts n evaluation steps and looks at the context every
// checkEvery of them.
func (ev *evaluator) tick(n int) {
	ev.steps += n
	if ev.steps < ev.nextCheck {
		return
	}
	ev.nextCheck = ev.steps + checkEvery
	if ev.ctx == nil {
		return
	}
	if err := ev.ctx.Err(); err != nil {
		panic(abort{err})
	}
}

// countItemRow counts one row of the FROM and JOINs of the current item
// (or of a subquery evaluated for it) and fails the query when there are
// more than MaxJoinRowsPerItem, or more in all than its Budget's Rows.
func (ev *evaluator) countItemRow() {
	ev.itemRows++
	ev.rowsSeen++
	if ev.itemRows > MaxJoinRowsPerItem {
		ev.failJoinRows()
	}
	if b := ev.env.Budget.Rows; b > 0 && ev.rowsSeen > b {
		panic(abort{&BudgetError{Limit: "rows", Value: b}})
	}
}

// failJoinRows fails the query whose item passed MaxJoinRowsPerItem.
func (ev *evaluator) failJoinRows() {
	ev.fail("the FROM and JOIN clauses (those of subqueries included) produce more than %d rows from one item, the limit", MaxJoinRowsPerItem)
}

// Budget bounds one evaluation below the limits above: the work and
// memory a caller allows one page of a query. A query that passes it
// stops with a *BudgetError, which says the evaluation ran out of budget
// rather than that the query is wrong. Zero fields are no bound.
type Budget struct {
	// Rows is the most rows the FROM and JOIN clauses (those of subqueries
	// included) may produce in all, before WHERE.
	Rows int
	// Bytes is the most memory the evaluation may hold: its rows (about
	// rowBytes each), its computed results and groups, and the results
	// it returns, in bytes.
	Bytes int
}

// rowBytes is what Budget.Bytes counts for one row held before ordering
// (the row and its ORDER BY values), besides its computed value.
const rowBytes = 96

// BudgetError is the error of an evaluation that passed its Budget.
type BudgetError struct {
	Limit string // "rows" or "memory"
	Value int    // the bound it passed
}

func (e *BudgetError) Error() string {
	if e.Limit == "rows" {
		return fmt.Sprintf("the query examined more than %d rows, its budget for one page", e.Value)
	}
	return fmt.Sprintf("the query would hold more than %d bytes, its memory budget for one page", e.Value)
}

// hold counts n bytes more held by the evaluation against its Budget.
func (ev *evaluator) hold(n int) {
	ev.held += n
	if b := ev.env.Budget.Bytes; b > 0 && ev.held > b {
		panic(abort{&BudgetError{Limit: "memory", Value: b}})
	}
}

// checkSize fails the query when a value it is about to build, of n bytes,
// would be larger than MaxValueSize.
func (ev *evaluator) checkSize(what string, n int) {
	if n > MaxValueSize {
		ev.fail("%s would build a value of %d bytes, over the limit of %d bytes", what, n, MaxValueSize)
	}
	ev.tick(n >> 10)
}

// addSize adds the size of v to size, the size so far of a value being
// built of parts, and fails the query when the sum passes MaxValueSize.
func (ev *evaluator) addSize(what string, size int, v value) int {
	n, ok := sizeAtMost(v, MaxValueSize-size)
	if !ok {
		ev.fail("%s would build a value of over %d bytes, the limit", what, MaxValueSize)
	}
	return size + n
}

// sizeAtMost estimates the size of v's JSON encoding from below, stopping
// as soon as it passes limit: it returns the estimate and whether it is at
// most limit.
func sizeAtMost(v value, limit int) (int, bool) {
	n := 0
	var walk func(v value) bool
	walk = func(v value) bool {
		switch {
		case v.raw != nil:
			n += len(v.raw)
		case v.k == kStr:
			n += len(v.s) + 2
		case v.k == kArr:
			n += 1 + len(v.a)
			for _, e := range v.a {
				if !walk(e) {
					return false
				}
			}
		case v.k == kObj:
			n += 1 + len(v.o)
			for _, f := range v.o {
				n += len(f.k) + 3
				if !walk(f.v) {
					return false
				}
			}
		default:
			n++
		}
		return n <= limit
	}
	ok := walk(v)
	return n, ok
}

// ctxOf returns ctx, or context.Background for nil.
func ctxOf(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
