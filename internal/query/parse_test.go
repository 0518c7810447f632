package query

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func lexAll(src string) []token {
	l := lexer{src: src}
	var out []token
	for {
		t := l.next()
		out = append(out, t)
		if t.typ == tEOF || t.typ == tError {
			return out
		}
	}
}

func TestLexer(t *testing.T) {
	type tk struct {
		typ tokType
		val string
	}
	cases := []struct {
		src  string
		want []tk
	}{
		{"SELECT * FROM c", []tk{{tSelect, "SELECT"}, {tStar, "*"}, {tFrom, "FROM"}, {tIdent, "c"}, {tEOF, ""}}},
		{"select Value tOp", []tk{{tSelect, "select"}, {tValue, "Value"}, {tTop, "tOp"}, {tEOF, ""}}},
		{"c.a_b1 @p1 _x", []tk{{tIdent, "c"}, {tDot, "."}, {tIdent, "a_b1"}, {tParam, "@p1"}, {tIdent, "_x"}, {tEOF, ""}}},
		{"1 2.5 1e3 1.5E-2 .5 0x1f", []tk{{tNumber, "1"}, {tNumber, "2.5"}, {tNumber, "1e3"}, {tNumber, "1.5E-2"}, {tNumber, ".5"}, {tNumber, "0x1f"}, {tEOF, ""}}},
		{`'a\'b' "c\"d" "\u00e9\n" 'x"y'`, []tk{{tString, "a'b"}, {tString, `c"d`}, {tString, "é\n"}, {tString, `x"y`}, {tEOF, ""}}},
		{"= != <> < <= > >= << >> >>> || | & ^ ~ ?? ? : + - * / %", []tk{
			{tEq, "="}, {tNe, "!="}, {tNe, "<>"}, {tLt, "<"}, {tLe, "<="}, {tGt, ">"}, {tGe, ">="}, {tShl, "<<"}, {tShr, ">>"}, {tUShr, ">>>"},
			{tConcat, "||"}, {tPipe, "|"}, {tAmp, "&"}, {tCaret, "^"}, {tTilde, "~"}, {tCoalesce, "??"}, {tQuestion, "?"}, {tColon, ":"},
			{tPlus, "+"}, {tMinus, "-"}, {tStar, "*"}, {tSlash, "/"}, {tPercent, "%"}, {tEOF, ""}}},
		{"( ) [ ] { } , .", []tk{{tLParen, "("}, {tRParen, ")"}, {tLBrack, "["}, {tRBrack, "]"}, {tLBrace, "{"}, {tRBrace, "}"}, {tComma, ","}, {tDot, "."}, {tEOF, ""}}},
		{"a -- comment\n b", []tk{{tIdent, "a"}, {tIdent, "b"}, {tEOF, ""}}},
		{"true FALSE Null undefined", []tk{{tTrue, "true"}, {tFalse, "FALSE"}, {tNull, "Null"}, {tUndefined, "undefined"}, {tEOF, ""}}},
		{"日本 x", []tk{{tIdent, "日本"}, {tIdent, "x"}, {tEOF, ""}}},
		{"'abc", []tk{{tError, "unterminated string literal"}}},
		{"1e+", []tk{{tError, `malformed number "1e+"`}}},
		{"12abc", []tk{{tError, `malformed number "12a"`}}},
		{"#", []tk{{tError, "unexpected character '#'"}}},
		{"@", []tk{{tError, "expected parameter name after '@'"}}},
		{`"\x"`, []tk{{tError, `invalid escape sequence "\\x" in string literal`}}},
	}
	for _, c := range cases {
		toks := lexAll(c.src)
		var got []tk
		for _, t := range toks {
			v := t.val
			if t.typ == tEOF {
				v = ""
			}
			got = append(got, tk{t.typ, v})
		}
		assert.Equal(t, c.want, got, c.src)
	}
}

func TestParseString(t *testing.T) {
	cases := []struct{ in, want string }{
		{`SELECT * FROM c`, `SELECT * FROM c AS c`},
		{`SELECT * FROM root r WHERE r.a = 1`, `SELECT * FROM root AS r WHERE (r["a"] = 1)`},
		{`SELECT DISTINCT TOP 5 VALUE c.a FROM c`, `SELECT DISTINCT TOP 5 VALUE c["a"] FROM c AS c`},
		{`SELECT 1 + 2 * 3 - 4`, `SELECT ((1 + (2 * 3)) - 4)`},
		{`SELECT a.b FROM c a WHERE NOT a.x AND a.y OR a.z`, `SELECT a["b"] FROM c AS a WHERE (((NOT a["x"]) AND a["y"]) OR a["z"])`},
		{`SELECT * FROM c WHERE NOT c.a = 1 AND NOT c.b IN (1) OR NOT IS_DEFINED(c.d)`,
			`SELECT * FROM c AS c WHERE (((NOT (c["a"] = 1)) AND (NOT (c["b"] IN (1)))) OR (NOT IS_DEFINED(c["d"])))`},
		{`SELECT VALUE NOT -c.a < 2 FROM c`, `SELECT VALUE (NOT ((- c["a"]) < 2)) FROM c AS c`},
		{`SELECT VALUE 1 | 2 ^ 3 & 4 << 1 + 1`, `SELECT VALUE (1 | (2 ^ (3 & (4 << (1 + 1)))))`},
		{`SELECT VALUE "a" || "b" = "ab"`, `SELECT VALUE (("a" || "b") = "ab")`},
		{`SELECT VALUE 1 < 2 ? 3 ?? 4 : 5`, `SELECT VALUE ((1 < 2) ? (3 ?? 4) : 5)`},
		{`SELECT VALUE -c.x FROM c`, `SELECT VALUE (- c["x"]) FROM c AS c`},
		{`SELECT VALUE -1`, `SELECT VALUE (-1)`},
		{`SELECT c.x BETWEEN 1 AND 2 AND c.y NOT IN (1, 2) FROM c`, `SELECT ((c["x"] BETWEEN 1 AND 2) AND (c["y"] NOT IN (1, 2))) FROM c AS c`},
		{`SELECT * FROM c WHERE c.s LIKE "a%" ESCAPE "!"`, `SELECT * FROM c AS c WHERE (c["s"] LIKE "a%" ESCAPE "!")`},
		{`SELECT c.a x, c.b AS y FROM c JOIN t IN c.tags ORDER BY c.a, c.b DESC OFFSET 1 LIMIT @n`,
			`SELECT c["a"] AS x, c["b"] AS y FROM c AS c JOIN t IN c["tags"] ORDER BY c["a"], c["b"] DESC OFFSET 1 LIMIT @n`},
		{`SELECT VALUE ch FROM ch IN c.children`, `SELECT VALUE ch FROM ch IN c["children"]`},
		{`SELECT f.id FROM Families f JOIN f.children`, `SELECT f["id"] FROM Families AS f JOIN f["children"] AS children`},
		{`SELECT k FROM f JOIN f.children[0] k JOIN f["a b"] AS ab JOIN f["xy"]`,
			`SELECT k FROM f AS f JOIN f["children"][0] AS k JOIN f["a b"] AS ab JOIN f["xy"] AS xy`},
		{`SELECT * FROM Families.children[0]`, `SELECT * FROM Families["children"][0] AS Families`},
		{`SELECT VALUE {"a": [1, "x", null, true, undefined]}`, `SELECT VALUE {"a": [1, "x", null, true, undefined]}`},
		{`SELECT VALUE c["a b"][@i] FROM c`, `SELECT VALUE c["a b"][@i] FROM c AS c`},
		{`SELECT VALUE c.value FROM c`, `SELECT VALUE c["value"] FROM c AS c`},
		{`SELECT VALUE [NaN, Infinity, -Infinity, c.NaN, {Infinity: 1}] FROM c`, `SELECT VALUE [NaN, Infinity, (-Infinity), c["NaN"], {"Infinity": 1}] FROM c AS c`},
		// GROUP BY
		{`SELECT c.a, LOWER(c.b) AS b, COUNT(1) AS n FROM c WHERE c.x > 1 GROUP BY c.a, LOWER(c.b) OFFSET 1 LIMIT 2`,
			`SELECT c["a"], LOWER(c["b"]) AS b, COUNT(1) AS n FROM c AS c WHERE (c["x"] > 1) GROUP BY c["a"], LOWER(c["b"]) OFFSET 1 LIMIT 2`},
		{`select top 3 value upper(lower(c.b)) from c group by lower(c.b)`, `SELECT TOP 3 VALUE upper(lower(c["b"])) FROM c AS c GROUP BY lower(c["b"])`},
		// subqueries
		{`SELECT (SELECT VALUE 1) AS a, EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = @x) AS e, ARRAY(SELECT DISTINCT TOP 2 t.n FROM t IN c.tags ORDER BY t.n DESC) AS arr FROM c`,
			`SELECT (SELECT VALUE 1) AS a, EXISTS(SELECT VALUE t FROM t IN c["tags"] WHERE (t = @x)) AS e, ARRAY(SELECT DISTINCT TOP 2 t["n"] FROM t IN c["tags"] ORDER BY t["n"] DESC) AS arr FROM c AS c`},
		{`SELECT c.id, n FROM c JOIN (SELECT VALUE COUNT(1) FROM t IN c.tags) n JOIN (SELECT VALUE t FROM t IN c.tags WHERE t > 1) JOIN r IN (SELECT VALUE [1, 2])`,
			`SELECT c["id"], n FROM c AS c JOIN (SELECT VALUE COUNT(1) FROM t IN c["tags"]) AS n JOIN (SELECT VALUE t FROM t IN c["tags"] WHERE (t > 1)) JOIN r IN (SELECT VALUE [1, 2])`},
		{`SELECT VALUE (SELECT x.a FROM c.o x WHERE x.a > 0).a FROM c`, `SELECT VALUE (SELECT x["a"] FROM c["o"] AS x WHERE (x["a"] > 0))["a"] FROM c AS c`},
		{`SELECT VALUE (SELECT VALUE c FROM c) FROM c`, `SELECT VALUE (SELECT VALUE c FROM c AS c) FROM c AS c`},
		{`SELECT VALUE (SELECT VALUE (SELECT VALUE y FROM y IN x) FROM x IN c.a) FROM c`,
			`SELECT VALUE (SELECT VALUE (SELECT VALUE y FROM y IN x) FROM x IN c["a"]) FROM c AS c`},
	}
	for _, c := range cases {
		q, err := Parse(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, q.String(), c.in)
		q2, err := Parse(q.String())
		require.NoError(t, err, q.String())
		assert.Equal(t, q.String(), q2.String())
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"SELECT * FROM c WHER c.x = 1", `1:17: expected WHERE, found "WHER"`},
		{"SELECT * FORM c", `1:10: expected FROM, found "FORM"`},
		{"SELECT c.x FORM c", `1:12: expected FROM, found "FORM"`},
		{"SELECT * FROM c ODER BY c.x", `1:17: expected ORDER BY, found "ODER"`},
		{"SELEC * FROM c", `1:1: expected SELECT, found "SELEC"`},
		{"SELECT (1 + 2 FROM c", `1:15: expected ")", found "FROM"`},
		{"SELECT (1 + 2", `1:8: unbalanced parentheses: "(" is never closed`},
		{"SELECT 1 + 2) FROM c", `1:13: unbalanced parentheses: unexpected ")"`},
		{"SELECT * FROM c WHERE (c.x = 1", `1:23: unbalanced parentheses: "(" is never closed`},
		{"SELECT * FROM c WHERE ABS(c.x", `1:26: unbalanced parentheses: "(" is never closed`},
		{"SELECT * FROM c WHERE c.x = 'abc", `1:29: unterminated string literal`},
		{"SELECT * FROM c\nWHERE c.x = \"abc", `2:13: unterminated string literal`},
		{"SELECT FOO(1) FROM c", `1:8: unknown function 'FOO'`},
		{"SELECT ABS(1, 2) FROM c", `1:8: function 'ABS' takes 1 argument, found 2`},
		{"SELECT CONTAINS('a') FROM c", `1:8: function 'CONTAINS' takes 2 or 3 arguments, found 1`},
		{"SELECT SUBSTRING('a') FROM c", `1:8: function 'SUBSTRING' takes 3 arguments, found 1`},
		{"SELECT CONCAT('a') FROM c", `1:8: function 'CONCAT' takes at least 2 arguments, found 1`},
		{"SELECT PI(1)", `1:8: function 'PI' takes 0 arguments, found 1`},
		{"SELECT * FROM c GROUP BY c.x", `1:8: 'SELECT *' is not valid with GROUP BY; select the GROUP BY expressions and aggregates`},
		{"SELECT c.x, COUNT(1) FROM c", `1:8: an aggregate cannot be combined with a non-aggregate expression without GROUP BY`},
		{"SELECT COUNT(1), c.x FROM c", `1:18: an aggregate cannot be combined with a non-aggregate expression without GROUP BY`},
		{"SELECT VALUE c.x + COUNT(1) FROM c", `1:14: an aggregate cannot be combined with a non-aggregate expression without GROUP BY`},
		// GROUP BY
		{"SELECT c.y FROM c GROUP BY c.x", `1:8: c.y is neither a GROUP BY expression nor inside an aggregate: with GROUP BY, the select list may hold only GROUP BY expressions, aggregates and constants`},
		{"SELECT c.x, c.name FROM c GROUP BY c.x", `1:13: c.name is neither a GROUP BY expression nor inside an aggregate: with GROUP BY, the select list may hold only GROUP BY expressions, aggregates and constants`},
		{"SELECT VALUE c.name FROM c GROUP BY LOWER(c.name)", `1:14: c.name is neither a GROUP BY expression nor inside an aggregate: with GROUP BY, the select list may hold only GROUP BY expressions, aggregates and constants`},
		{"SELECT c.a FROM c GROUP BY c.a.b", `1:8: c.a is neither a GROUP BY expression nor inside an aggregate: with GROUP BY, the select list may hold only GROUP BY expressions, aggregates and constants`},
		{"SELECT c FROM c GROUP BY c.a", `1:8: c is neither a GROUP BY expression nor inside an aggregate: with GROUP BY, the select list may hold only GROUP BY expressions, aggregates and constants`},
		{"SELECT c[\"a b\"] FROM c GROUP BY c.x", `1:8: c["a b"] is neither a GROUP BY expression nor inside an aggregate: with GROUP BY, the select list may hold only GROUP BY expressions, aggregates and constants`},
		{"SELECT COUNT(1) FROM c GROUP BY COUNT(1)", `1:33: aggregate function 'COUNT' is not allowed in GROUP BY`},
		{"SELECT COUNT(1) FROM c GROUP BY 1", `1:33: a GROUP BY expression must refer to a property of the input (it has no alias in it)`},
		{"SELECT COUNT(1) FROM c GROUP BY @p", `1:33: a GROUP BY expression must refer to a property of the input (it has no alias in it)`},
		{"SELECT COUNT(1) FROM c GROUP BY (SELECT VALUE c.x)", `1:33: subqueries are not allowed in GROUP BY`},
		{"SELECT c.x FROM c GROUP BY c.x ORDER BY c.x", `1:41: ORDER BY cannot be used with GROUP BY`},
		{"SELECT c.x AS y FROM c GROUP BY y", `1:33: identifier 'y' could not be resolved`},
		{"SELECT c.x FROM c GROUP BY c.x AS y", `1:32: expected ORDER BY, OFFSET or end of query, found "AS"`},
		{"SELECT c.x FROM c GROUP c.x", `1:25: expected BY, found "c"`},
		{"SELECT c.x FROM c GROUP BY", `1:27: expected an expression, found end of query`},
		{"SELECT c.x, ARRAY(SELECT VALUE 1) AS a FROM c GROUP BY c.x", `1:13: a subquery in the select list cannot be used with GROUP BY (only inside an aggregate's argument)`},
		{"SELECT c.x FROM c OFFSET 1 LIMIT 1 GROUP BY c.x", `1:36: expected end of query, found "GROUP"`},
		{"SELECT c.x FROM c GROUP BY c.x WHERE c.x = 1", `1:32: expected ORDER BY, OFFSET or end of query, found "WHERE"`},
		{"SELECT VALUE MAX(COUNT(1)) FROM c", `1:18: aggregate function 'COUNT' cannot be nested in another aggregate`},
		{"SELECT * FROM c WHERE COUNT(1) > 1", `1:23: aggregate function 'COUNT' is not allowed in WHERE`},
		{"SELECT COUNT(1) FROM c ORDER BY RANK FullTextScore(c.x, 'a')", `1:38: ORDER BY RANK cannot be used with aggregates`},
		{"SELECT d.x FROM c", `1:8: identifier 'd' could not be resolved`},
		{"SELECT VALUE x", `1:14: identifier 'x' could not be resolved (the query has no FROM clause)`},
		{"SELECT x.id FROM c IN x.children", `1:8: identifier 'x' could not be resolved`},
		{"SELECT t FROM c JOIN t IN t.x", `1:27: identifier 't' could not be resolved`},
		{"SELECT TOP -1 * FROM c", `1:12: TOP must be a non-negative integer or a parameter, found "-"`},
		{"SELECT TOP 1.5 * FROM c", `1:12: TOP must be a non-negative integer, found 1.5`},
		{"SELECT * FROM c OFFSET 1", `1:25: expected LIMIT, found end of query`},
		{"SELECT * FROM c LIMIT 1", `1:17: LIMIT requires OFFSET (OFFSET n LIMIT m)`},
		// subqueries
		{"SELECT * FROM c WHERE c.x IN (SELECT 1)", `1:31: IN (SELECT ...) is not supported; use EXISTS(SELECT VALUE x FROM x IN ... WHERE x = ...)`},
		{"SELECT EXISTS 1", `1:15: expected "(" after EXISTS, found "1"`},
		{"SELECT ARRAY(1)", `1:14: expected SELECT (a subquery: ARRAY(SELECT ...)), found "1"`},
		{"SELECT (SELECT VALUE 1", `1:23: unbalanced parentheses: the subquery's "(" is never closed`},
		{"SELECT (SELECT VALUE d.x FROM x IN c.a) FROM c", `1:22: identifier 'd' could not be resolved (a subquery sees its own aliases and those of the queries around it)`},
		{"SELECT (SELECT VALUE x FROM x IN d.a) FROM c", `1:34: identifier 'd' could not be resolved (a subquery sees its own aliases and those of the queries around it)`},
		{"SELECT x FROM c JOIN (SELECT VALUE y FROM y IN c.a) x WHERE y > 1", `1:61: identifier 'y' could not be resolved`},
		{"SELECT (SELECT VALUE 1 FROM x IN c.a GROUP BY x) FROM c", `1:38: GROUP BY is not supported in a subquery`},
		{"SELECT * FROM (SELECT VALUE 1)", `1:15: a subquery in FROM is not supported; use JOIN (SELECT ...) or FROM x IN <array>`},
		{"SELECT c.x, COUNT(1) FROM c JOIN (1)", `1:35: expected SELECT (a subquery after JOIN), found "1"`},
		{"SELECT COUNT(1), (SELECT VALUE 1) FROM c", `1:18: an aggregate cannot be combined with a subquery in the select list (only inside an aggregate's argument)`},
		{"SELECT (SELECT VALUE 1 FROM x IN c.a WHERE COUNT(1) > 0) FROM c", `1:44: aggregate function 'COUNT' is not allowed in WHERE`},
		{"SELECT (SELECT * FROM x IN c.a JOIN y IN x) FROM c", `1:16: 'SELECT *' is only valid with a single input set; project the aliases instead`},
		{"SELECT (SELECT VALUE 1 x) FROM c", `1:24: expected FROM, WHERE, GROUP BY, ORDER BY, OFFSET or ")", found "x"`},
		{"SELECT (SELECT VALUE 1 FROM x IN c.a LIMIT 1) FROM c", `1:38: LIMIT requires OFFSET (OFFSET n LIMIT m)`},
		{"SELECT x FROM c JOIN (SELECT VALUE 1) x JOIN (SELECT VALUE 2) x", `1:46: alias 'x' is already defined`},
		{"SELECT", `1:7: expected an expression, found end of query`},
		{"", `1:1: expected SELECT, found end of query`},
		{"SELECT * FROM", `1:14: expected a name after FROM, found end of query`},
		{"SELECT * FROM NaN", `1:15: expected a name after FROM, found "NaN"`},
		{"SELECT 1 AS Infinity", `1:13: expected alias after AS, found "Infinity"`},
		{"SELECT * FROM c JOIN t c.tags", `1:24: expected IN, found "c"`},
		{"SELECT * FROM c JOIN t IN c.tags", `1:8: 'SELECT *' is only valid with a single input set; project the aliases instead`},
		{"SELECT * FROM c JOIN c.tags", `1:8: 'SELECT *' is only valid with a single input set; project the aliases instead`},
		{"SELECT 1 FROM c JOIN t c[\"tags\"]", `1:24: expected IN, found "c"`},
		{"SELECT 1 FROM c JOIN c.tags AS t.x", `1:33: expected JOIN, WHERE, GROUP BY, ORDER BY, OFFSET or end of query, found "."`},
		{"SELECT 1 FROM c JOIN c", `1:22: alias 'c' is already defined`},
		{"SELECT 1 FROM c JOIN c[\"a b\"]", `1:22: alias 'c' is already defined`},
		{"SELECT 1 FROM c JOIN c.a JOIN c.b.a", `1:31: alias 'a' is already defined`},
		{"SELECT 1 FROM c JOIN d.tags", `1:22: identifier 'd' could not be resolved`},
		{"SELECT 1 FROM Families f JOIN Families.children", `1:31: identifier 'Families' could not be resolved`},
		{"SELECT 1 FROM c JOIN c.tags AS", `1:31: expected alias after AS, found end of query`},
		{"SELECT *", `1:8: 'SELECT *' is only valid with a FROM clause`},
		{"SELECT 1 ! 2", `1:10: unexpected character '!'`},
		{"SELECT 1e FROM c", `1:8: malformed number "1e"`},
		{`SELECT 'a\q' FROM c`, `1:10: invalid escape sequence "\\q" in string literal`},
		{"SELECT c.x AS FROM c", `1:15: expected alias after AS, found "FROM"`},
		{"SELECT c.a, c.b.a FROM c", `1:13: duplicate property name 'a' in the select list`},
		{"SELECT * FROM c WHERE c.x NOT 1", `1:31: expected IN, LIKE or BETWEEN, found "1"`},
		{"SELECT UDF.f(1) FROM c", `1:8: the prefix of a user-defined function is udf, in lower case, not UDF`},
		{"SELECT VALUE * FROM c", `1:14: expected an expression, found "*"`},
		{"SELECT *, c.id FROM c", `1:9: expected FROM, WHERE, GROUP BY, ORDER BY, OFFSET or end of query, found ","`},
		{"SELECT * FROM c ORDER c.x", `1:23: expected BY, found "c"`},
		{"SELECT COUNT(*) FROM c", `1:14: COUNT(*) is not supported; use COUNT(1)`},
		{`SELECT {"a": 1, "a": 2}`, `1:17: duplicate property name "a" in object literal`},
		{"SELECT [1, 2", `1:13: expected "]", found end of query`},
		{"SELECT 1 ? 2", `1:13: expected ":", found end of query`},
		{"SELECT * FROM c WHERE c.x BETWEEN 1 OR 2", `1:37: expected AND, found "OR"`},
		{"SELECT * FROM c t u", `1:17: expected JOIN, WHERE, GROUP BY, ORDER BY, OFFSET or end of query, found "t"`},
		{"SELECT * FROM c JOIN c IN c.x", `1:27: alias 'c' is already defined`},
		{"SELECT 99999e999", `1:8: number 99999e999 is out of range`},
		{"SELECT 1\n  + \n\t#", `3:2: unexpected character '#'`},
		{"SELECT 'é' + é#", `1:15: unexpected character '#'`},
		{"SELECT \x00", `1:8: unexpected character U+00`},
		{"SELECT \xff", `1:8: invalid UTF-8 in query`},
		{"SELECT " + strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200), `1:136: expression nested too deeply (more than 128 levels)`},
		{"SELECT " + strings.Repeat("- ", 200) + "1", `1:262: expression nested too deeply (more than 128 levels)`},
		{"SELECT " + strings.Repeat("[", 200), `1:136: expression nested too deeply (more than 128 levels)`},
		{"SELECT '" + strings.Repeat("x", MaxQueryLen) + "'", `The SQL query text exceeded the maximum limit of 524288 characters.`},
		{"SELECT 1 FROM c JOIN a IN c.a JOIN b IN c.b JOIN d IN c.d JOIN e IN c.e JOIN f IN c.f JOIN g IN c.g", `The SQL query exceeded the maximum number of joins. The allowed limit is 5.`},
		{"SELECT 1 FROM c JOIN a IN c.a JOIN b IN c.b JOIN d IN c.d WHERE EXISTS(SELECT 1 FROM x IN c.x JOIN y IN x.y JOIN z IN x.z JOIN w IN x.w)", `The SQL query exceeded the maximum number of joins. The allowed limit is 5.`},
	}
	for _, c := range cases {
		q, err := Parse(c.in)
		assert.Nil(t, q)
		var qe *Error
		if assert.ErrorAs(t, err, &qe, c.in) {
			assert.Equal(t, c.want, err.Error(), c.in)
		}
	}
}

func TestErrorString(t *testing.T) {
	assert.Equal(t, "x", (&Error{Msg: "x"}).Error())
	assert.Equal(t, "2:3: x", (&Error{Line: 2, Col: 3, Msg: "x"}).Error())
}

func TestDeepButLegal(t *testing.T) {
	// Long flat chains are fine: only nesting is limited.
	src := "SELECT VALUE 1" + strings.Repeat(" + 1", 20000)
	got, err := run(t, src, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "[20001]", got)
	src = "SELECT VALUE " + strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100)
	_, err = Parse(src)
	require.NoError(t, err)
}
