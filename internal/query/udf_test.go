package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testUDFs are the user-defined functions of the tests. calls counts the
// calls of each.
func testUDFs(calls *sync.Map) map[string]Func {
	count := func(name string, f Func) Func {
		return func(args []any) (any, error) {
			n, _ := calls.LoadOrStore(name, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			return f(args)
		}
	}
	num := func(a any) float64 { f, _ := a.(float64); return f }
	return map[string]Func{
		"double": count("double", func(a []any) (any, error) { return 2 * num(a[0]), nil }),
		"DOUBLE": count("DOUBLE", func(a []any) (any, error) { return 3 * num(a[0]), nil }),
		"isEven": count("isEven", func(a []any) (any, error) { return int(num(a[0]))%2 == 0, nil }),
		"parity": count("parity", func(a []any) (any, error) { return []string{"even", "odd"}[int(num(a[0]))%2], nil }),
		"neg":    count("neg", func(a []any) (any, error) { return -num(a[0]), nil }),
		"one":    count("one", func(a []any) (any, error) { return 1, nil }),
		"args": count("args", func(a []any) (any, error) {
			b, err := json.Marshal(a)
			return string(b), err
		}),
		"id":    count("id", func(a []any) (any, error) { return a[0], nil }),
		"undef": count("undef", func(a []any) (any, error) { return Undefined, nil }),
		"shapes": count("shapes", func(a []any) (any, error) {
			return map[string]any{"u": Undefined, "a": []any{1, Undefined, int8(2)}, "s": struct{ X int }{3}, "m": map[string]any{"in": Undefined}}, nil
		}),
		"fail":  count("fail", func(a []any) (any, error) { return nil, errBoom }),
		"panic": count("panic", func(a []any) (any, error) { panic("kaboom") }),
		"nan":   count("nan", func(a []any) (any, error) { return math.NaN(), nil }),
		"inf":   count("inf", func(a []any) (any, error) { return []any{math.Inf(1)}, nil }),
		"chan":  count("chan", func(a []any) (any, error) { return make(chan int), nil }),
		"huge":  count("huge", func(a []any) (any, error) { return strings.Repeat("x", MaxValueSize+1), nil }),
		"deep": count("deep", func(a []any) (any, error) {
			var v any = 1
			for range maxJSONDepth + 2 {
				v = []any{v}
			}
			return v, nil
		}),
		"select": count("select", func(a []any) (any, error) { return "kw", nil }),
	}
}

var errBoom = errors.New("boom")

// runUDF runs text on docs with testUDFs, and returns the results as one
// JSON array and the calls of each function.
func runUDF(t testing.TB, text string, docs []Doc) (string, map[string]int64, error) {
	t.Helper()
	var calls sync.Map
	q, err := Parse(text)
	if err != nil {
		return "", nil, err
	}
	r, err := ExecFrom(context.Background(), q, nil, docs, testNow, nil, &Env{UDFs: testUDFs(&calls)})
	n := map[string]int64{}
	calls.Range(func(k, v any) bool { n[k.(string)] = v.(*atomic.Int64).Load(); return true })
	if err != nil {
		return "", n, err
	}
	parts := make([]string, len(r.Items))
	for i, it := range r.Items {
		require.True(t, json.Valid(it), "%s: %q", text, it)
		parts[i] = string(it)
	}
	return "[" + strings.Join(parts, ",") + "]", n, nil
}

// TestUDFEval: user-defined functions evaluate anywhere an expression
// stands, per row; a call with an undefined argument is skipped, and an
// undefined result is left out.
func TestUDFEval(t *testing.T) {
	cases := []struct {
		q     string
		want  string
		calls map[string]int64 // nil: not checked
	}{
		{`SELECT VALUE udf.double(c.n) FROM c`, `[0,2,4,6,8,10,12,14,16,18]`, map[string]int64{"double": 10}},
		{`SELECT VALUE udf.DOUBLE(c.n) FROM c WHERE c.n < 3`, `[0,3,6]`, map[string]int64{"DOUBLE": 3}},
		{`SELECT VALUE c.n FROM c WHERE udf.isEven(c.n)`, `[0,2,4,6,8]`, nil},
		{`SELECT VALUE c.n FROM c WHERE c.n > 6 AND NOT udf.isEven(c.n)`, `[7,9]`, nil},
		// An undefined argument skips the call; an undefined result is
		// left out of the projection.
		{`SELECT c.id, udf.id(c.s) AS s FROM c WHERE c.n < 3`, `[{"id":"d0"},{"id":"d1"},{"id":"d2","s":"hello"}]`, map[string]int64{"id": 1}},
		{`SELECT VALUE udf.args(c.n, c.nope) FROM c`, `[]`, map[string]int64{}},
		{`SELECT VALUE udf.undef(c.n) FROM c`, `[]`, map[string]int64{"undef": 10}},
		{`SELECT VALUE IS_DEFINED(udf.undef(c.n)) FROM c WHERE c.n = 1`, `[false]`, nil},
		// Arguments as encoding/json decodes them.
		{`SELECT VALUE udf.args(c.o, c.tags, null, true, "s", 1.5) FROM c WHERE c.n = 5`, `["[{\"a\":1,\"b\":[1,2]},[\"x\",\"y\"],null,true,\"s\",1.5]"]`, nil},
		{`SELECT VALUE udf.args({"a": c.nope, "b": 1}, [c.nope, 2]) FROM c WHERE c.n = 5`, `["[{\"b\":1},[2]]"]`, nil},
		{`SELECT VALUE udf.args(c) FROM c WHERE c.n = 6`, `["[{\"id\":\"d6\",\"n\":6}]"]`, nil},
		// Results: Undefined in an array is null, in an object left out;
		// other Go values through encoding/json.
		{`SELECT VALUE udf.shapes() FROM c WHERE c.n = 0`, `[{"a":[1,null,2],"m":{},"s":{"X":3}}]`, nil},
		// Zero arguments, nested calls, with built-in functions.
		{`SELECT VALUE udf.one()`, `[1]`, nil},
		{`SELECT VALUE udf.double(udf.double(ABS(udf.neg(c.n)))) + 1 FROM c WHERE c.n IN (1, 2)`, `[5,9]`, nil},
		{`SELECT VALUE UPPER(udf.parity(c.n)) FROM c WHERE c.n < 2`, `["EVEN","ODD"]`, nil},
		{`SELECT VALUE udf.id(c.o).b[1] FROM c WHERE c.n = 1`, `[2]`, nil},
		{`SELECT VALUE udf.select(1)`, `["kw"]`, nil},
		// ORDER BY, GROUP BY, aggregates.
		{`SELECT VALUE c.n FROM c WHERE c.n < 4 ORDER BY udf.neg(c.n)`, `[3,2,1,0]`, nil},
		{`SELECT udf.parity(c.n) AS p, COUNT(1) AS k FROM c GROUP BY udf.parity(c.n)`, `[{"p":"even","k":5},{"p":"odd","k":5}]`, nil},
		{`SELECT VALUE SUM(udf.double(c.n)) FROM c`, `[90]`, nil},
		// Subqueries and JOINs.
		{`SELECT VALUE ARRAY(SELECT VALUE udf.double(x) FROM x IN c.o.b) FROM c WHERE c.n = 1`, `[[2,4]]`, nil},
		{`SELECT VALUE c.n FROM c WHERE EXISTS(SELECT VALUE x FROM x IN c.o.b WHERE udf.isEven(x))`, `[1,5]`, nil},
		{`SELECT VALUE [c.n, t] FROM c JOIN t IN c.tags WHERE udf.id(t) = "y"`, `[[4,"y"],[5,"y"]]`, nil},
		{`SELECT VALUE [c.n, d] FROM c JOIN d IN (SELECT VALUE [udf.double(c.n)]) WHERE c.n < 2`, `[[0,0],[1,2]]`, nil},
		{`SELECT VALUE (SELECT VALUE udf.double(c.n)) FROM c WHERE c.n = 4`, `[8]`, nil},
	}
	for _, c := range cases {
		got, calls, err := runUDF(t, c.q, mixed)
		if !assert.NoError(t, err, c.q) {
			continue
		}
		assert.Equal(t, c.want, got, c.q)
		if c.calls != nil {
			assert.Equal(t, c.calls, calls, c.q)
		}
	}
}

// TestUDFParse: udf.name(args) parses anywhere an expression stands, and
// String writes it back; the prefix is lower case, the name anything an
// identifier or keyword spells.
func TestUDFParse(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT udf.f(1) FROM c`, `SELECT udf.f(1) FROM c AS c`},
		{`SELECT VALUE udf.Tax(c.p, udf.g()) FROM c WHERE udf.h(c.x).y > 2 ORDER BY udf.k(c.z) DESC`, `SELECT VALUE udf.Tax(c["p"], udf.g()) FROM c AS c WHERE (udf.h(c["x"])["y"] > 2) ORDER BY udf.k(c["z"]) DESC`},
		{`SELECT udf.select (c.n ) AS s, udf.NaN(1) FROM c GROUP BY udf.select(c.n)`, `SELECT udf.select(c["n"]) AS s, udf.NaN(1) FROM c AS c GROUP BY udf.select(c["n"])`},
	} {
		q, err := Parse(c.in)
		if !assert.NoError(t, err, c.in) {
			continue
		}
		assert.Equal(t, c.want, q.String(), c.in)
		_, err = Parse(q.String())
		assert.NoError(t, err, c.in)
	}
	for _, c := range []struct{ in, want string }{
		{`SELECT UDF.f(1) FROM c`, `1:8: the prefix of a user-defined function is udf, in lower case, not UDF`},
		{`SELECT udf FROM c`, `1:12: expected "." after udf, found "FROM"`},
		{`SELECT udf.1(2)`, `1:11: expected "." after udf, found ".1"`},
		{`SELECT udf.+(2)`, `1:12: expected the name of a user-defined function after "udf.", found "+"`},
		{`SELECT udf.f FROM c`, `1:14: expected "(" after udf.f, found "FROM"`},
		{`SELECT udf.f(1`, `1:13: unbalanced parentheses: "(" is never closed`},
		{`SELECT udf.f(1 2)`, `1:16: expected "," or ")", found "2"`},
		{`SELECT udf.f(c.x) FROM c GROUP BY udf.f(c.n)`, `1:14: c.x is neither a GROUP BY expression nor inside an aggregate: with GROUP BY, the select list may hold only GROUP BY expressions, aggregates and constants`},
		{`SELECT c.n FROM c GROUP BY udf.f()`, `1:28: a GROUP BY expression must refer to a property of the input (it has no alias in it)`},
		{`SELECT * FROM c ORDER BY RANK udf.f(c.s)`, ``},
	} {
		_, err := Parse(c.in)
		var qe *Error
		if assert.ErrorAs(t, err, &qe, c.in) && c.want != "" {
			assert.Equal(t, c.want, err.Error(), c.in)
		}
	}
}

// TestUDFErrors: a query naming a function it is not given fails before
// calling any; a function's error, panic or result JSON cannot represent
// fails the query with a *UDFError naming it.
func TestUDFErrors(t *testing.T) {
	_, calls, err := runUDF(t, `SELECT udf.double(c.n), udf.missing(c.n) FROM c`, mixed)
	var qe *Error
	require.ErrorAs(t, err, &qe)
	assert.Equal(t, `1:25: 'udf.missing' is not a recognized user-defined function name.`, err.Error())
	assert.Empty(t, calls, "nothing is evaluated")
	_, _, err = runUDF(t, `SELECT VALUE udf.Double(1)`, nil)
	assert.ErrorAs(t, err, &qe, "names are case-sensitive")
	_, _, err = runUDF(t, `SELECT VALUE udf.nope(1) FROM c`, nil)
	assert.ErrorAs(t, err, &qe, "even with no documents")

	for _, c := range []struct {
		name, want string
		is         error
	}{
		{"fail", "udf.fail: boom", errBoom},
		{"panic", "udf.panic: the function panicked: kaboom", nil},
		{"nan", "udf.nan: the function returned NaN, which JSON cannot represent", nil},
		{"inf", "udf.inf: the function returned +Inf, which JSON cannot represent", nil},
		{"chan", "udf.chan: the function returned a value of type chan int that JSON cannot represent", nil},
		{"deep", "udf.deep: the function returned a value nested more than 512 levels deep", nil},
	} {
		text := fmt.Sprintf(`SELECT VALUE udf.%s(c.n) FROM c WHERE c.n > 2`, c.name)
		_, calls, err := runUDF(t, text, mixed)
		var ue *UDFError
		if assert.ErrorAs(t, err, &ue, text) {
			assert.Equal(t, c.name, ue.Name)
			assert.Equal(t, c.want, err.Error())
		}
		if c.is != nil {
			assert.ErrorIs(t, err, c.is)
		}
		assert.Equal(t, int64(1), calls[c.name], "the first error stops the query")
	}
	_, _, err = runUDF(t, `SELECT VALUE udf.huge(1)`, nil)
	require.ErrorAs(t, err, &qe)
	assert.Contains(t, err.Error(), "udf.huge returned a value over the limit")
}

// TestUDFStopsAtContext: a query that calls a function for every row
// looks at its context every checkEvery/udfSteps calls at most.
func TestUDFStopsAtContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	funcs := map[string]Func{"f": func(a []any) (any, error) {
		if calls++; calls == 10 {
			cancel()
		}
		return a[0], nil
	}}
	q, err := Parse(`SELECT VALUE udf.f(c.age) FROM c`)
	require.NoError(t, err)
	docs := benchDocs(10_000)
	_, err = ExecFrom(ctx, q, nil, docs, testNow, nil, &Env{UDFs: funcs})
	require.ErrorIs(t, err, context.Canceled)
	assert.LessOrEqual(t, calls, 10+checkEvery/udfSteps+1)
}

// TestUDFConcurrent: one parsed query runs in several goroutines at once,
// each with its functions (go test -race).
func TestUDFConcurrent(t *testing.T) {
	q, err := Parse(`SELECT VALUE udf.f(c.n) FROM c WHERE udf.g(c.n)`)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			funcs := map[string]Func{
				"f": func(a []any) (any, error) { return a[0].(float64) * float64(i), nil },
				"g": func(a []any) (any, error) { return a[0].(float64) < 3, nil },
			}
			r, err := ExecFrom(context.Background(), q, nil, mixed, testNow, nil, &Env{UDFs: funcs})
			assert.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("[%d %d %d]", 0, i, 2*i), fmt.Sprint(itemTexts(r.Items)))
		})
	}
	wg.Wait()
}

func itemTexts(items [][]byte) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

// BenchmarkUDF compares, over 100,000 documents, queries that call small
// Go functions with the same expressions written with built-in
// functions: the overhead of a user-defined function's call (converting
// its arguments and result, and the call itself), the budget left for a
// JavaScript engine.
//
//	go test -run '^$' -bench BenchmarkUDF -count 6 ./internal/query | benchstat -col /expr -
func BenchmarkUDF(b *testing.B) {
	funcs := map[string]Func{
		"tax":    func(a []any) (any, error) { return a[0].(float64) * 0.05, nil },
		"isEven": func(a []any) (any, error) { return int(a[0].(float64))%2 == 0, nil },
		"lower":  func(a []any) (any, error) { return strings.ToLower(a[0].(string)), nil },
	}
	docs := benchDocs(100_000)
	for _, c := range []struct{ name, builtin, udf string }{
		{"project", `SELECT VALUE c.score * 0.05 FROM c`, `SELECT VALUE udf.tax(c.score) FROM c`},
		{"filter", `SELECT VALUE COUNT(1) FROM c WHERE c.age % 2 = 0`, `SELECT VALUE COUNT(1) FROM c WHERE udf.isEven(c.age)`},
		{"string", `SELECT VALUE LOWER(c.name) FROM c`, `SELECT VALUE udf.lower(c.name) FROM c`},
	} {
		for _, e := range []struct{ name, text string }{{"builtin", c.builtin}, {"udf", c.udf}} {
			b.Run(fmt.Sprintf("query=%s/expr=%s", c.name, e.name), func(b *testing.B) {
				q, err := Parse(e.text)
				require.NoError(b, err)
				env := &Env{UDFs: funcs}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ExecFrom(context.Background(), q, nil, docs, testNow, nil, env); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(docs)), "ns/doc")
			})
		}
	}
}

// TestUDFMatchesBuiltins is a randomized test: a query that calls Go
// functions written to behave as built-in expressions returns exactly
// what the query with the built-in expressions returns, wherever the
// calls stand, on documents whose properties may be missing or of any
// type.
func TestUDFMatchesBuiltins(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	num := func(a []any) (float64, bool) { f, ok := a[0].(float64); return f, ok }
	funcs := map[string]Func{
		"double": func(a []any) (any, error) {
			if f, ok := num(a); ok {
				return 2 * f, nil
			}
			return Undefined, nil
		},
		"lower": func(a []any) (any, error) {
			if s, ok := a[0].(string); ok {
				return strings.ToLower(s), nil
			}
			return Undefined, nil
		},
		"isNum": func(a []any) (any, error) { _, ok := num(a); return ok, nil },
		"pair":  func(a []any) (any, error) { return []any{a[0], a[1]}, nil },
	}
	// Each pair: the call, and the same with built-in functions.
	exprs := [][2]string{
		{"udf.double(c.a)", "(c.a * 2)"},
		{"udf.lower(c.s)", "LOWER(c.s)"},
		{"udf.isNum(c.a)", "IIF(IS_DEFINED(c.a), IS_NUMBER(c.a), undefined)"},
		{"udf.pair(c.a, c.s)", "IIF(IS_DEFINED(c.a) AND IS_DEFINED(c.s), [c.a, c.s], undefined)"},
		{"udf.double(udf.double(c.b))", "(c.b * 4)"},
		{"udf.lower(udf.lower(c.s))", "LOWER(c.s)"},
	}
	templates := []string{
		"SELECT VALUE %s FROM c",
		"SELECT c.id, %s AS v FROM c",
		"SELECT VALUE c.id FROM c WHERE %s > 2 OR %s = \"ab\"",
		"SELECT VALUE c.id FROM c ORDER BY %s, c.id",
		"SELECT %s AS k, COUNT(1) AS n FROM c GROUP BY %s",
		"SELECT VALUE ARRAY(SELECT VALUE %s FROM x IN [1, 2]) FROM c",
		"SELECT VALUE [c.id, t] FROM c JOIN t IN (SELECT VALUE %s) WHERE IS_DEFINED(t)",
		"SELECT VALUE MAX(%s) FROM c",
	}
	values := []string{`1`, `2.5`, `-3`, `"AB"`, `"ab"`, `"x"`, `null`, `true`, `[1]`, `{"a":1}`}
	for round := range 200 {
		docs := make([]Doc, 1+rng.IntN(8))
		for i := range docs {
			var fs []string
			for _, k := range []string{"a", "b", "s"} {
				if rng.IntN(4) > 0 {
					fs = append(fs, fmt.Sprintf("%q:%s", k, values[rng.IntN(len(values))]))
				}
			}
			js := fmt.Sprintf(`{"id":"d%d"%s}`, i, strings.Repeat(",", min(1, len(fs)))+strings.Join(fs, ","))
			docs[i] = Doc{ID: fmt.Sprintf("d%d", i), JSON: []byte(js)}
		}
		e := exprs[rng.IntN(len(exprs))]
		tmpl := templates[rng.IntN(len(templates))]
		n := strings.Count(tmpl, "%s")
		withUDF := fmt.Sprintf(tmpl, slices.Repeat([]any{e[0]}, n)...)
		builtin := fmt.Sprintf(tmpl, slices.Repeat([]any{e[1]}, n)...)
		results := func(text string) string {
			q, err := Parse(text)
			require.NoError(t, err, text)
			r, err := ExecFrom(context.Background(), q, nil, docs, testNow, nil, &Env{UDFs: funcs})
			require.NoError(t, err, text)
			return fmt.Sprint(itemTexts(r.Items))
		}
		require.Equal(t, results(builtin), results(withUDF), "round %d, seed %d: %s\ndocs %v", round, seed, withUDF, docs)
	}
}
