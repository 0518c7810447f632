package cosmosrest

import (
	"strings"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/script"
)

// User-defined functions in queries: a query over a container's documents
// that calls udf.<id>(args) gets the container's UDFs as
// lethe.QueryOptions.UserFunctions. Each call runs the UDF's compiled
// program (compiled once per version) in a fresh runtime of its own,
// under a script's budgets (time, stack, memory), with no collection, so
// that calls share nothing; the query's page budget bounds them all.

// userFunctions returns the UDFs of the request's container as a query's
// user functions, or nil when the query text calls none.
func (q *request) userFunctions(db *database, text string) map[string]lethe.UserFunction {
	if !strings.Contains(strings.ToLower(text), "udf.") {
		return nil
	}
	db.mu.Lock()
	var udfs []*scriptRes
	for k, s := range db.scripts {
		if k.coll == q.t.coll && k.kind == kindUDF {
			udfs = append(udfs, s)
		}
	}
	db.mu.Unlock()
	fns := make(map[string]lethe.UserFunction, len(udfs))
	ctx, limits := q.ctx(), q.h.scriptLimits()
	for _, s := range udfs {
		prog, err := q.h.program(db, s)
		if err != nil {
			continue // it compiled when it was created: a body that does not is not callable
		}
		fns[s.ID] = func(args []any) (any, error) {
			v, err := script.Call(ctx, prog, args, limits)
			if v == script.Undefined {
				return lethe.Undefined, err
			}
			return v, err
		}
	}
	return fns
}
