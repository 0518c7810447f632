package lethe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lethedb/lethe/internal/query"
)

// QueryBudget bounds one page of a query: the time it may take, the rows
// its FROM and JOIN clauses may produce and the memory it may hold. A page
// that reaches a bound ends early with the results it has and a
// continuation token, as Cosmos DB's pages do (a page may then be short,
// or empty, and still have a token; a query in item order may end a page
// inside an item's JOIN rows); a query that cannot make progress within
// one page's budget (one row alone passes it, or, for a query that cannot
// resume from a position, the whole evaluation does) fails with
// ErrRequestTimeout (408), as the service fails a query that passes its
// time limit. Zero fields take the defaults.
type QueryBudget struct {
	// Time is the longest one page may evaluate, by the store's Clock;
	// 0 means DefaultQueryPageTime, the service's limit.
	Time time.Duration
	// Rows is the most rows the FROM and JOIN clauses (and subqueries) of
	// one page may produce, before WHERE; 0 means DefaultQueryPageRows.
	Rows int
	// Memory is the most bytes one page's evaluation may hold (its rows,
	// computed values, groups and results); 0 means
	// DefaultQueryPageMemory.
	Memory int
}

// Defaults of QueryBudget.
const (
	// DefaultQueryPageTime is the service's limit on one page of a query.
	DefaultQueryPageTime = 5 * time.Second
	// DefaultQueryPageRows is lethe's bound on the rows of one page: a few
	// seconds of evaluation.
	DefaultQueryPageRows = 1 << 22
	// DefaultQueryPageMemory is lethe's bound on the memory of one page.
	DefaultQueryPageMemory = 64 << 20
)

// withDefaults fills in the zero fields of b, or says which is negative.
func (b *QueryBudget) withDefaults() error {
	switch {
	case b.Time < 0:
		return &OptionError{"QueryBudget.Time", b.Time, "negative; use 0 for the default"}
	case b.Rows < 0:
		return &OptionError{"QueryBudget.Rows", b.Rows, "negative; use 0 for the default"}
	case b.Memory < 0:
		return &OptionError{"QueryBudget.Memory", b.Memory, "negative; use 0 for the default"}
	}
	if b.Time == 0 {
		b.Time = DefaultQueryPageTime
	}
	if b.Rows == 0 {
		b.Rows = DefaultQueryPageRows
	}
	if b.Memory == 0 {
		b.Memory = DefaultQueryPageMemory
	}
	return nil
}

// errPageTime is the cause a page's context gives once its time is spent.
var errPageTime = errors.New("the query page's time budget is spent")

// pageCtx is the context of one page's evaluation: its parent's, and done
// (for Err, which is all the query engine looks at) once the store's clock
// passes the page's deadline.
type pageCtx struct {
	context.Context
	clock    *storeClock
	deadline int64
}

func (c *pageCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.clock.now() >= c.deadline {
		return errPageTime
	}
	return nil
}

// newPageCtx starts a page's budget at now.
func (c *Container) newPageCtx(ctx context.Context, now int64) *pageCtx {
	if ctx == nil {
		ctx = context.Background()
	}
	return &pageCtx{ctx, &c.store.clock, now + int64(c.store.opts.QueryBudget.Time)}
}

// pageEnv returns env with the store's budget of one page, of which used
// bytes are already held.
func (c *Container) pageEnv(env *query.Env, rows, used int) *query.Env {
	var e query.Env
	if env != nil {
		e = *env
	}
	b := c.store.opts.QueryBudget
	e.Budget = query.Budget{Rows: max(rows, 1), Bytes: max(b.Memory-used, 1)}
	return &e
}

// outOfBudget reports whether err says a page ran out of its budget
// (rather than that the query is wrong or its caller gave up).
func outOfBudget(err error) bool {
	var be *query.BudgetError
	return errors.As(err, &be) || errors.Is(err, errPageTime)
}

// budgetError is the 408 of a query that could not make progress within
// one page's budget.
func budgetError(err error) *Error {
	what := "its time budget for one page"
	var be *query.BudgetError
	if errors.As(err, &be) {
		what = be.Error()
	}
	return &Error{StatusCode: statusRequestTimeout, Err: err, Message: fmt.Sprintf(
		"The query could not make progress within the limits of one page: %s. Narrow it with a filter or a partition key.", what)}
}
