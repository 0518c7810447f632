package cosmosrest

import (
	"strings"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest/internal/script"
)

// User-defined functions in queries: a query over a container's documents
// that calls udf.<id>(args) gets the container's UDFs as
// lethe.QueryOptions.UserFunctions. Each call runs the UDF's compiled
// program (compiled once per version) as a script.Function: under a
// script's budgets (time, stack, memory), with no collection, in a
// runtime that no earlier call could change (a fresh one, or for a body
// of function declarations only, a frozen one that calls share; see
// script.Function); the query's page budget bounds them all.

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
	ctx := q.ctx()
	for _, s := range udfs {
		f, err := q.h.function(db, s)
		if err != nil {
			continue // it compiled when it was created: a body that does not is not callable
		}
		fns[s.ID] = func(args []any) (any, error) {
			v, err := f.Call(ctx, args)
			if v == script.Undefined {
				return lethe.Undefined, err
			}
			return v, err
		}
	}
	return fns
}

// function returns the UDF s ready for calls, made once per version: its
// warm runtimes serve every query that calls it.
func (h *Handler) function(db *database, s *scriptRes) (*script.Function, error) {
	key := db.id + "\x00" + s.Coll + "\x00" + s.ID + "\x00" + s.Nonce
	h.functionsMu.Lock()
	f := h.functions[key]
	h.functionsMu.Unlock()
	if f != nil {
		return f, nil
	}
	prog, err := h.program(db, s)
	if err != nil {
		return nil, err
	}
	f = script.NewFunction(prog, h.scriptLimits())
	h.functionsMu.Lock()
	if len(h.functions) >= maxCachedPrograms {
		clear(h.functions)
	}
	h.functions[key] = f
	h.functionsMu.Unlock()
	return f, nil
}
