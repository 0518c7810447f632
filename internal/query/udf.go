package query

import (
	"fmt"
	"math"
	"slices"
)

// ---- user-defined functions ----

// A user-defined function is called as udf.<name>(args...), with the
// prefix udf in lower case and the name case-sensitive, anywhere an
// expression may stand. Parsing does not need the function: the query
// names it, and each evaluation looks it up in Env.UDFs (CheckUDFs), and
// fails before evaluating anything when one is missing.
//
// As Cosmos DB documents it, a call with an argument that is undefined
// (a missing property) is skipped: the function is not called, and the
// call is undefined. Otherwise the function gets its arguments as
// encoding/json decodes JSON into an any (nil, bool, float64, string,
// []any, map[string]any), and its result is read back the same way; the
// Undefined value stands for JavaScript's undefined (see Func).

// Func is a user-defined function. Its arguments are JSON values as
// encoding/json decodes them into an any: nil, bool, float64, string,
// []any and map[string]any, never undefined. It returns a value of the
// same kinds (or anything else encoding/json can marshal), or Undefined
// for an undefined result (one that the call leaves out of a projection,
// as a missing property is); inside a returned []any, Undefined is null,
// and a map[string]any's property whose value is Undefined is left out,
// as JavaScript's JSON.stringify has them. A result JSON cannot represent
// (NaN, an infinity, a channel, ...) fails the query with a *UDFError, as
// does an error the function returns or a panic it raises. A Func may be
// called from several goroutines at once (one per query being evaluated).
type Func func(args []any) (any, error)

// UndefinedValue is the type of Undefined.
type UndefinedValue struct{}

// Undefined is what a Func returns for JavaScript's undefined.
var Undefined UndefinedValue

// udfRef is one user-defined function a query calls: its name and the
// position of its first call.
type udfRef struct {
	name string
	pos  int
}

// UDFError is the error of an evaluation stopped by a user-defined
// function: its error, a panic, or a result JSON cannot represent.
type UDFError struct {
	Name string // the function's name, without the udf. prefix
	Err  error  // what went wrong
}

// Error returns "udf.Name: Err".
func (e *UDFError) Error() string { return "udf." + e.Name + ": " + e.Err.Error() }

// Unwrap returns the function's error.
func (e *UDFError) Unwrap() error { return e.Err }

// CallsUDFs reports whether q (or one of its subqueries) calls a
// user-defined function.
func (q *Query) CallsUDFs() bool { return len(q.udfs) > 0 }

// CheckUDFs returns a *Error naming the first user-defined function q
// calls that funcs lacks, or nil.
func (q *Query) CheckUDFs(funcs map[string]Func) error {
	for _, u := range q.udfs {
		if funcs[u.name] == nil {
			e := errAt(q.text, u.pos, "'udf.%s' is not a recognized user-defined function name.", u.name)
			e.Code = codeUnknownFunc
			return e
		}
	}
	return nil
}

// parseUDF parses udf.name(args...), kw being the udf keyword.
func (p *parser) parseUDF(kw token) expr {
	if kw.val != "udf" {
		p.fail(kw.pos, "the prefix of a user-defined function is udf, in lower case, not %s", kw.val)
	}
	p.expect(tDot, "\".\" after udf")
	n := p.next()
	if n.typ != tIdent && n.typ != tNonFinite && !n.typ.isKeyword() {
		p.unexpected(n, "the name of a user-defined function after \"udf.\"")
	}
	p.expect(tLParen, "\"(\" after udf."+n.val)
	c := &call{pos: kw.pos, name: "udf." + n.val, fn: p.udfDef(n.val, kw.pos), agg: -1}
	c.args = p.parseArgs(n.pos+len(n.val), func() {})
	return c
}

// udfDef returns the function of the calls of the user-defined function
// name in the query being parsed, one for all of them (so that GROUP BY
// matches them), and notes the name in the top-level query.
func (p *parser) udfDef(name string, pos int) *funcDef {
	if fn := p.udfDefs[name]; fn != nil {
		return fn
	}
	if p.udfDefs == nil {
		p.udfDefs = map[string]*funcDef{}
	}
	i := len(p.root.udfs)
	p.root.udfs = append(p.root.udfs, udfRef{name, pos})
	fn := &funcDef{name: "udf." + name, maxArgs: -1, fn: func(ev *evaluator, args []value) value { return ev.callUDF(i, args) }}
	p.udfDefs[name] = fn
	return fn
}

// bindUDFs looks up the user-defined functions the query calls in the
// evaluation's Env.
func (ev *evaluator) bindUDFs() error {
	if len(ev.q.udfs) == 0 {
		return nil
	}
	if err := ev.q.CheckUDFs(ev.env.UDFs); err != nil {
		return err
	}
	ev.udfs = make([]Func, len(ev.q.udfs))
	for i, u := range ev.q.udfs {
		ev.udfs[i] = ev.env.UDFs[u.name]
	}
	return nil
}

// udfSteps is what one call of a user-defined function counts as in
// evaluation steps (see tick): the context is looked at after every
// checkEvery/udfSteps calls, so a slow function overruns a page's time
// by at most that many calls.
const udfSteps = checkEvery / 16

// callUDF calls the user-defined function number i of the query.
func (ev *evaluator) callUDF(i int, args []value) value {
	for _, a := range args {
		if a.k == kUndef {
			return undef // the call is skipped
		}
	}
	in := make([]any, len(args))
	for j, a := range args {
		in[j] = toGo(a)
	}
	out, err := callSafely(ev.udfs[i], in)
	ev.tick(udfSteps)
	name := ev.q.udfs[i].name
	if err != nil {
		panic(abort{&UDFError{Name: name, Err: err}})
	}
	v, err := fromUDF(out, 0)
	if err != nil {
		panic(abort{&UDFError{Name: name, Err: err}})
	}
	n, ok := sizeAtMost(v, MaxValueSize)
	if !ok {
		ev.fail("udf.%s returned a value over the limit of %d bytes", name, MaxValueSize)
	}
	ev.tick(n >> 10)
	return v
}

// callSafely calls f, turning a panic into an error.
func callSafely(f Func, args []any) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("the function panicked: %v", r)
		}
	}()
	return f(args)
}

// toGo converts a value (never undefined) to what a Func gets.
func toGo(v value) any {
	switch v.k {
	case kBool:
		return v.b
	case kNum:
		return v.n
	case kStr:
		return v.s
	case kArr:
		out := make([]any, 0, len(v.a))
		for _, e := range v.a {
			if e.k != kUndef {
				out = append(out, toGo(e))
			}
		}
		return out
	case kObj:
		out := make(map[string]any, len(v.o))
		for _, f := range v.o {
			if f.v.k != kUndef {
				out[f.k] = toGo(f.v)
			}
		}
		return out
	}
	return nil
}

// fromUDF converts what a Func returned to a value.
func fromUDF(x any, depth int) (value, error) {
	if depth > maxJSONDepth {
		return undef, fmt.Errorf("the function returned a value nested more than %d levels deep", maxJSONDepth)
	}
	switch t := x.(type) {
	case UndefinedValue:
		return undef, nil
	case []any:
		out := make([]value, len(t))
		for i, e := range t {
			if e == Undefined {
				out[i] = nullVal
				continue
			}
			v, err := fromUDF(e, depth+1)
			if err != nil {
				return undef, err
			}
			out[i] = v
		}
		return value{k: kArr, a: out}, nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k, e := range t {
			if e != Undefined {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		fs := make([]field, len(keys))
		for i, k := range keys {
			v, err := fromUDF(t[k], depth+1)
			if err != nil {
				return undef, err
			}
			fs[i] = field{k, v}
		}
		return value{k: kObj, o: fs}, nil
	default:
		if f, ok := x.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return undef, fmt.Errorf("the function returned %v, which JSON cannot represent", f)
		}
		v, ok := fromGo(x, depth)
		if !ok {
			break
		}
		if !finite(v) {
			return undef, fmt.Errorf("the function returned a number that JSON cannot represent (NaN or Infinity)")
		}
		return v, nil
	}
	return undef, fmt.Errorf("the function returned a value of type %T that JSON cannot represent", x)
}
