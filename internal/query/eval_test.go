package query

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type evalCase struct {
	q      string
	want   string // JSON array of the results, compared after removing whitespace
	params map[string]any
}

func runCases(t *testing.T, docs []Doc, cases []evalCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			got, err := run(t, c.q, c.params, docs)
			require.NoError(t, err)
			assert.Equal(t, compact(t, c.want), compact(t, got))
		})
	}
}

// TestJoinPath pins JOIN <path> [[AS] alias], the form without IN: the
// path's value joins the row as a one-element set (an array is not
// iterated), and a row whose path is undefined joins nothing. The first
// two cases are the examples of the Cosmos DB documentation on joins
// ("JOIN f.NonExistent" is empty; "JOIN f.children" gives one row per
// family), with the conventional JOIN c IN f.children beside them.
func TestJoinPath(t *testing.T) {
	runCases(t, families, []evalCase{
		{q: `SELECT f.id FROM Families f JOIN f.NonExistent`, want: `[]`},
		{q: `SELECT f.id FROM Families f JOIN f.children`, want: `[{"id":"AndersenFamily"},{"id":"WakefieldFamily"}]`},
		{q: `SELECT f.id FROM Families f JOIN c IN f.children`,
			want: `[{"id":"AndersenFamily"},{"id":"WakefieldFamily"},{"id":"WakefieldFamily"}]`},
		// the alias is inferred from the last property name, or written
		{q: `SELECT VALUE ARRAY_LENGTH(children) FROM Families f JOIN f.children`, want: `[1,2]`},
		{q: `SELECT VALUE ARRAY_LENGTH(kids) FROM Families f JOIN f.children AS kids`, want: `[1,2]`},
		{q: `SELECT VALUE kids[0].grade FROM Families f JOIN f.children kids`, want: `[5,1]`},
		{q: `SELECT VALUE state FROM f JOIN f["address"].state`, want: `["WA","NY"]`},
		{q: `SELECT VALUE first.grade FROM f JOIN f.children[0] AS first`, want: `[5,1]`},
		// it joins like any other source: before, after and under IN joins
		{q: `SELECT VALUE [a.state, c.grade] FROM f JOIN a IN f.address JOIN c IN f.children`, want: `[]`},
		{q: `SELECT VALUE [a.state, c.grade] FROM f JOIN f.address a JOIN c IN f.children`, want: `[["WA",5],["NY",1],["NY",8]]`},
		{q: `SELECT VALUE [c.grade, ARRAY_LENGTH(p)] FROM f JOIN c IN f.children JOIN c.pets p`, want: `[[5,1],[1,2]]`},
		{q: `SELECT VALUE COUNT(1) FROM f JOIN f.children JOIN f.parents`, want: `[2]`},
		{q: `SELECT f.id FROM f JOIN f.children c WHERE ARRAY_LENGTH(c) > 1`, want: `[{"id":"WakefieldFamily"}]`},
		// in a subquery
		{q: `SELECT VALUE (SELECT VALUE COUNT(1) FROM x IN f.children JOIN x.pets) FROM f`, want: `[1,1]`},
	})
}

func TestFamiliesDocumented(t *testing.T) {
	runCases(t, families, []evalCase{
		{q: `SELECT * FROM Families f WHERE f.id = "AndersenFamily"`, want: "[" + andersen + "]"},
		{q: `SELECT {"Name":f.id, "City":f.address.city} AS Family
		     FROM Families f
		     WHERE f.address.city = f.address.state`,
			want: `[{"Family":{"Name":"WakefieldFamily","City":"NY"}}]`},
		{q: `SELECT c.givenName FROM c IN Families.children WHERE c.grade = 8`, want: `[{"givenName":"Lisa"}]`},
		{q: `SELECT f.id AS familyName, c.givenName AS childGivenName, c.firstName AS childFirstName, p.givenName AS petName
		     FROM Families f JOIN c IN f.children JOIN p IN c.pets`,
			want: `[{"familyName":"AndersenFamily","childFirstName":"Henriette Thaulow","petName":"Fluffy"},
			        {"familyName":"WakefieldFamily","childGivenName":"Jesse","petName":"Goofy"},
			        {"familyName":"WakefieldFamily","childGivenName":"Jesse","petName":"Shadow"}]`},
		{q: `SELECT f.id FROM Families f JOIN c IN f.children`,
			want: `[{"id":"AndersenFamily"},{"id":"WakefieldFamily"},{"id":"WakefieldFamily"}]`},
		{q: `SELECT f.address FROM Families f WHERE f.id = "AndersenFamily"`,
			want: `[{"address":{"state":"WA","county":"King","city":"Seattle"}}]`},
		{q: `SELECT * FROM Families.children`,
			want: `[[{"firstName":"Henriette Thaulow","gender":"female","grade":5,"pets":[{"givenName":"Fluffy"}]}],
			        [{"familyName":"Merriam","givenName":"Jesse","gender":"female","grade":1,"pets":[{"givenName":"Goofy"},{"givenName":"Shadow"}]},
			         {"familyName":"Miller","givenName":"Lisa","gender":"female","grade":8}]]`},
		{q: `SELECT * FROM Families.address.state`, want: `["WA","NY"]`},
		{q: `SELECT VALUE f.address.state FROM f`, want: `["WA","NY"]`},
		{q: `SELECT f.id, f.address.city FROM Families f ORDER BY f.address.city ASC`,
			want: `[{"id":"WakefieldFamily","city":"NY"},{"id":"AndersenFamily","city":"Seattle"}]`},
		{q: `SELECT f.id, f.creationDate FROM Families f ORDER BY f.creationDate DESC`,
			want: `[{"id":"AndersenFamily","creationDate":1431620472},{"id":"WakefieldFamily","creationDate":1431620462}]`},
		{q: `SELECT VALUE c.givenName ?? c.firstName FROM f JOIN c IN f.children`, want: `["Henriette Thaulow","Jesse","Lisa"]`},
		{q: `SELECT VALUE COUNT(1) FROM f JOIN c IN f.children`, want: `[3]`},
		{q: `SELECT VALUE ARRAY_LENGTH(f.children) FROM f`, want: `[1,2]`},
		{q: `SELECT f.id FROM f WHERE ARRAY_CONTAINS(f.parents, {"givenName": "Ben"}, true)`, want: `[{"id":"WakefieldFamily"}]`},
		{q: `SELECT f.id FROM f WHERE ARRAY_CONTAINS(f.parents, {"givenName": "Ben"})`, want: `[]`},
		{q: `SELECT VALUE f.id FROM f WHERE f.isRegistered`, want: `["AndersenFamily"]`},
		{q: `SELECT VALUE f.lastName FROM f`, want: `["Andersen"]`},
		{q: `SELECT f.lastName FROM f`, want: `[{"lastName":"Andersen"},{}]`},
		{q: `SELECT f["address"]["county"] AS c, f.children[0].grade AS g, f.children[1].grade ?? "none" AS g2 FROM f`,
			want: `[{"c":"King","g":5,"g2":"none"},{"c":"Manhattan","g":1,"g2":8}]`},
	})
}

func TestOperators(t *testing.T) {
	runCases(t, nil, []evalCase{
		// arithmetic
		{q: `SELECT VALUE [1 + 2, 7 - 10, 2 * 3.5, 7 / 2, 7 % 3, -7 % 3, -(3), +4, 2 + 3 * 4, (2 + 3) * 4]`, want: `[[3,-3,7,3.5,1,-1,-3,4,14,20]]`},
		{q: `SELECT VALUE [1 + "a", "a" + "b", null + 1, true * 2, -"x"]`, want: `[[]]`},
		{q: `SELECT VALUE [0.1 + 0.2, 1e21, 1e-7, 123456789012, 1.5e300 * 10, 0.000001, -0]`, want: `[[0.30000000000000004,1e+21,1e-7,123456789012,1.5e+301,0.000001,0]]`},
		// bitwise (JavaScript 32-bit semantics), documented example
		{q: `SELECT (100 >> 2) AS rightShift, (100 << 2) AS leftShift, (100 >>> 0) AS zeroFillRightShift,
		            (100 & 1000) AS logicalAnd, (100 | 1000) AS logicalOr, (100 ^ 1000) AS logicalExclusiveOr`,
			want: `[{"rightShift":25,"leftShift":400,"zeroFillRightShift":100,"logicalAnd":96,"logicalOr":1004,"logicalExclusiveOr":908}]`},
		{q: `SELECT VALUE [~5, -1 >>> 0, -16 >> 2, 1 << 33, 4294967297 | 0, 1.9 | 0]`, want: `[[-6,4294967295,-4,2,1,1]]`},
		// string concatenation
		{q: `SELECT VALUE ["a" || "b" || "c", "a" || 1]`, want: `[["abc"]]`},
		// comparisons
		{q: `SELECT VALUE [1 = 1, 1 != 2, 1 <> 1, 1 < 2, 2 <= 2, 3 > 2, 2 >= 3, "a" < "b", "B" < "a", false < true, null = null, null < null, null <= null]`,
			want: `[[true,true,false,true,true,true,false,true,true,true,true,false,true]]`},
		{q: `SELECT VALUE [1 = "1", 1 < "a", null = false, undefined = undefined, 1 = undefined, [1,2] = [1,2], [1] = [2], {"a":1,"b":2} = {"b":2,"a":1}, [1] < [2], {"a":1} != {"a":2}]`,
			want: `[[true,false,true,true]]`},
		// three-valued logic
		{q: `SELECT VALUE [true AND true, true AND false, false AND undefined, undefined AND false, true AND undefined, 1 AND true,
		                   true OR undefined, undefined OR true, false OR false, false OR undefined, "x" OR false,
		                   NOT true, NOT false, NOT undefined, NOT 1]`,
			want: `[[true,false,false,false,true,true,false,false,true]]`},
		// IN, BETWEEN, LIKE
		{q: `SELECT VALUE [2 IN (1, 2, 3), 4 IN (1, 2), 4 NOT IN (1, 2), "a" IN ("a"), 1 IN ("1"), [1] IN ([1]), undefined IN (1), null IN (null)]`,
			want: `[[true,false,true,true,false,true,true]]`},
		{q: `SELECT VALUE [2 BETWEEN 1 AND 3, 5 BETWEEN 1 AND 3, 5 NOT BETWEEN 1 AND 3, "b" BETWEEN "a" AND "c", 1 BETWEEN "a" AND 3, 3 BETWEEN 1 AND 2 + 1]`,
			want: `[[true,false,true,true,true]]`},
		{q: `SELECT VALUE ["abc" LIKE "a%", "abc" LIKE "%c", "abc" LIKE "%b%", "abc" LIKE "a_c", "abc" LIKE "a_", "abc" NOT LIKE "x%",
		                  "abc" LIKE "[a-c]bc", "abc" LIKE "[^a]bc", "a%c" LIKE "a!%c" ESCAPE "!", "abc" LIKE "a!%c" ESCAPE "!",
		                  "ABC" LIKE "abc", "" LIKE "%", 1 LIKE "1", "a_c" LIKE "a\\_c" ESCAPE "\\", "日本語" LIKE "日_語"]`,
			want: `[[true,true,true,true,false,true,true,false,true,false,false,true,true,true]]`},
		// ternary and coalesce
		{q: `SELECT VALUE [1 < 2 ? "yes" : "no", 1 > 2 ? "yes" : "no", undefined ? 1 : 2, undefined ?? 3, null ?? 3, 0 ?? 3, true ? false ? 1 : 2 : 3]`,
			want: `[["yes","no",2,3,null,0,2]]`},
		// precedence
		{q: `SELECT VALUE [1 + 2 = 3, 1 = 1 AND 2 = 2 OR false, true OR false AND false, NOT false AND false, 1 | 2 = 3, "a" || "b" = "ab", 1 < 2 = true]`,
			want: `[[true,true,true,false,true,true,true]]`},
		// literals
		{q: `SELECT VALUE [null, true, false, 'single', "dq", "esc\"\n\u00e9\ud83d\ude00", 'it\'s', 0x1F, 1.5e2, undefined]`,
			want: `[[null,true,false,"single","dq","esc\"\né😀","it's",31,150]]`},
		{q: `SELECT VALUE {"a": 1, "b": undefined, "c": {"d": [1, {"e": null}]}}`, want: `[{"a":1,"c":{"d":[1,{"e":null}]}}]`},
		{q: `SELECT VALUE {"a": 1}.a`, want: `[1]`},
		{q: `SELECT VALUE [10, 20, 30][1]`, want: `[20]`},
	})
}

func TestBuiltins(t *testing.T) {
	runCases(t, nil, []evalCase{
		{q: `SELECT VALUE [IS_DEFINED(1), IS_DEFINED(undefined), IS_NULL(null), IS_NULL(undefined), IS_NUMBER(1), IS_NUMBER("1"),
		                   IS_STRING("s"), IS_BOOL(false), IS_ARRAY([]), IS_OBJECT({}), IS_OBJECT([]), IS_PRIMITIVE(null), IS_PRIMITIVE([]), IS_PRIMITIVE(undefined)]`,
			want: `[[true,false,true,false,true,false,true,true,true,true,false,true,false,false]]`},
		{q: `SELECT VALUE [CONCAT("a", "b", "c"), CONCAT("a", 1), CONTAINS("abc", "b"), CONTAINS("abc", "B"), CONTAINS("abc", "B", true),
		                   STARTSWITH("abc", "ab"), STARTSWITH("abc", "AB", true), ENDSWITH("abc", "bc"), ENDSWITH("abc", "B"), LOWER("AbC"), UPPER("aBc")]`,
			want: `[["abc",true,false,true,true,true,true,false,"abc","ABC"]]`},
		{q: `SELECT VALUE [LENGTH("abc"), LENGTH("日本"), LENGTH("😀"), LENGTH(1), SUBSTRING("abcdef", 1, 3), SUBSTRING("abc", 5, 1), SUBSTRING("abc", -1, 2), SUBSTRING("a😀b", 1, 2)]`,
			want: `[[3,2,2,"bcd","","ab","😀"]]`},
		{q: `SELECT VALUE [INDEX_OF("abcabc", "c"), INDEX_OF("abc", "x"), INDEX_OF("abcabc", "c", 3), INDEX_OF("😀abc", "b"), REPLACE("a-b-c", "-", "+"),
		                   TRIM("  x  "), LTRIM("  x  "), RTRIM("  x  "), TRIM("xxaxx", "x"), LEFT("abc", 2), RIGHT("abc", 2), LEFT("abc", 9)]`,
			want: `[[2,-1,5,3,"a+b+c","x","x  ","  x","a","ab","bc","abc"]]`},
		{q: `SELECT VALUE [TOSTRING(1.5), TOSTRING("s"), TOSTRING([1,"a"]), TOSTRING({"a":null}), TOSTRING(true), TOSTRING(null), TOSTRING(undefined)]`,
			want: `[["1.5","s","[1,\"a\"]","{\"a\":null}","true","null"]]`},
		{q: `SELECT VALUE [STRINGEQUALS("a", "a"), STRINGEQUALS("a", "A"), STRINGEQUALS("a", "A", true), REVERSE("abc"), REPLICATE("ab", 3), REPLICATE("a", -1), REPLICATE("a", 20000)]`,
			want: `[[true,false,true,"cba","ababab"]]`},
		{q: `SELECT VALUE [ABS(-4), CEILING(1.2), FLOOR(-1.2), ROUND(2.5), ROUND(-2.5), ROUND(2.4), POWER(2, 10), SQRT(16), TRUNC(-1.7), SIGN(-3), SIGN(0), EXP(0), LOG(1), LOG(8, 2), LOG10(1000), ABS("x")]`,
			want: `[[4,2,-2,3,-3,2,1024,4,-1,-1,0,1,0,3,3]]`},
		{q: `SELECT VALUE PI()`, want: `[3.141592653589793]`},
		{q: `SELECT VALUE [ARRAY_CONTAINS([1, 2], 2), ARRAY_CONTAINS([1, 2], "2"), ARRAY_CONTAINS([{"a":1,"b":2}], {"a":1}), ARRAY_CONTAINS([{"a":1,"b":2}], {"a":1}, true),
		                   ARRAY_LENGTH([1,2,3]), ARRAY_LENGTH("x"), ARRAY_SLICE([1,2,3,4], 1), ARRAY_SLICE([1,2,3,4], 1, 2), ARRAY_SLICE([1,2,3,4], -2, 1),
		                   ARRAY_CONCAT([1], [2, 3], []), ARRAY_CONCAT([1], 2)]`,
			want: `[[true,false,false,true,3,[2,3,4],[2,3],[3],[1,2,3]]]`},
		{q: `SELECT GetCurrentTimestamp() AS ts, GetCurrentDateTime() AS dt, GetCurrentTicks() AS ticks`,
			want: `[{"ts":1795298200123,"dt":"2026-11-21T21:56:40.1234567Z","ticks":17952982001234568}]`}, // float64 precision,
		{q: `SELECT VALUE abs(-1) + Abs(-1) + ABS(-1)`, want: `[3]`},
	})
}

func TestQueryClauses(t *testing.T) {
	runCases(t, mixed, []evalCase{
		// default order: by id
		{q: `SELECT VALUE c.id FROM c`, want: `["d0","d1","d2","d3","d4","d5","d6","d7","d8","d9"]`},
		// ORDER BY across types: undefined < null < false < true < numbers < strings < arrays < objects
		{q: `SELECT VALUE c.id FROM c ORDER BY c.v`, want: `["d6","d3","d0","d2","d9","d1","d4","d5","d7","d8"]`},
		{q: `SELECT VALUE c.id FROM c ORDER BY c.v DESC`, want: `["d8","d7","d5","d4","d1","d9","d2","d0","d3","d6"]`},
		{q: `SELECT c.id FROM c ORDER BY IS_DEFINED(c.tags) DESC, c.n DESC OFFSET 1 LIMIT 3`, want: `[{"id":"d4"},{"id":"d3"},{"id":"d1"}]`},
		{q: `SELECT TOP 2 VALUE c.n FROM c ORDER BY c.n DESC`, want: `[9,8]`},
		{q: `SELECT TOP @k VALUE c.n FROM c`, params: map[string]any{"@k": 3}, want: `[0,1,2]`},
		{q: `SELECT VALUE c.n FROM c OFFSET @o LIMIT @l`, params: map[string]any{"@o": int64(8), "@l": uint8(5)}, want: `[8,9]`},
		{q: `SELECT VALUE c.n FROM c OFFSET 20 LIMIT 5`, want: `[]`},
		{q: `SELECT TOP 0 * FROM c`, want: `[]`},
		{q: `SELECT TOP 1 c.n FROM c OFFSET 2 LIMIT 5`, want: `[{"n":2}]`},
		// WHERE keeps rows whose condition is exactly true
		{q: `SELECT VALUE c.id FROM c WHERE c.v`, want: `["d2"]`},
		{q: `SELECT VALUE c.id FROM c WHERE c.v = null`, want: `["d3"]`},
		{q: `SELECT VALUE c.id FROM c WHERE NOT IS_DEFINED(c.v)`, want: `["d6"]`},
		{q: `SELECT VALUE c.id FROM c WHERE c.v > 0`, want: `["d1","d9"]`},
		{q: `SELECT VALUE c.id FROM c WHERE c.v != 1`, want: `["d9"]`},
		{q: `SELECT VALUE c.id FROM c WHERE c.o = {"a": 1, "b": [1, 2]}`, want: `["d1","d5"]`},
		{q: `SELECT VALUE c.id FROM c WHERE c.s = @s`, params: map[string]any{"@s": "hello"}, want: `["d2"]`},
		{q: `SELECT VALUE c.id FROM c WHERE c.n IN (@a, @b)`, params: map[string]any{"@a": 3.0, "@b": float32(7)}, want: `["d3","d7"]`},
		{q: `SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(@list, c.n)`, params: map[string]any{"@list": []any{1, 2}}, want: `["d1","d2"]`},
		{q: `SELECT VALUE c.id FROM c WHERE c.n = @m.x`, params: map[string]any{"@m": map[string]any{"x": 4}}, want: `["d4"]`},
		{q: `SELECT VALUE c.id FROM c WHERE c.n = @r[1]`, params: map[string]any{"@r": json.RawMessage(`[0, 5]`)}, want: `["d5"]`},
		{q: `SELECT VALUE c.id FROM c WHERE c.o = @st`, params: map[string]any{"@st": struct {
			A int `json:"a"`
			B []int
		}{1, []int{1, 2}}}, want: `[]`},
		{q: `SELECT VALUE c.tags[@i] FROM c`, params: map[string]any{"@i": 1}, want: `["y"]`},
		{q: `SELECT VALUE c.id FROM c WHERE c["n"] BETWEEN 2 AND 4`, want: `["d2","d3","d4"]`},
		// projections
		{q: `SELECT c.id, c.missing, c.n * 10, c.n > 5 AS big FROM c WHERE c.n < 2`, want: `[{"id":"d0","$1":0,"big":false},{"id":"d1","$1":10,"big":false}]`},
		{q: `SELECT c.missing FROM c WHERE c.n = 1`, want: `[{}]`},
		{q: `SELECT VALUE c.missing FROM c`, want: `[]`},
		{q: `SELECT c.tags[0] FROM c WHERE c.n = 5`, want: `[{"$1":"x"}]`},
		{q: `SELECT c.n AS a, [c.n, c.missing] AS b, {"x": c.n} AS d FROM c WHERE c.n = 2`, want: `[{"a":2,"b":[2],"d":{"x":2}}]`},
		{q: `SELECT VALUE c FROM c WHERE c.n = 3`, want: `[{"id":"d3","v":null,"n":3,"tags":[]}]`},
		{q: `SELECT c FROM c WHERE c.n = 3`, want: `[{"c":{"id":"d3","v":null,"n":3,"tags":[]}}]`},
		// DISTINCT
		{q: `SELECT DISTINCT VALUE t FROM c JOIN t IN c.tags`, want: `["x","y"]`},
		{q: `SELECT DISTINCT VALUE c.o FROM c`, want: `[{"b":[1,2],"a":1}]`},
		// DISTINCT without ORDER BY: in the order of the canonical encodings of the values.
		{q: `SELECT DISTINCT c.o FROM c`, want: `[{"o":{"b":[1,2],"a":1}},{}]`},
		{q: `SELECT DISTINCT VALUE IS_DEFINED(c.tags) FROM c ORDER BY IS_DEFINED(c.tags)`, want: `[false,true]`},
		// JOIN and FROM x IN
		{q: `SELECT c.id, t FROM c JOIN t IN c.tags`, want: `[{"id":"d1","t":"x"},{"id":"d4","t":"y"},{"id":"d5","t":"x"},{"id":"d5","t":"y"}]`},
		{q: `SELECT VALUE [a, b] FROM c JOIN a IN c.tags JOIN b IN c.tags WHERE c.n = 5`, want: `[["x","x"],["x","y"],["y","x"],["y","y"]]`},
		{q: `SELECT VALUE t FROM t IN c.tags`, want: `["x","y","x","y"]`},
		{q: `SELECT * FROM t IN c.tags ORDER BY t DESC`, want: `["y","y","x","x"]`},
		{q: `SELECT VALUE t FROM c JOIN t IN c.tags ORDER BY t DESC`, want: `["y","y","x","x"]`},
		{q: `SELECT VALUE x FROM c JOIN x IN c.v`, want: `[1]`},
		{q: `SELECT * FROM c.o`, want: `[{"b":[1,2],"a":1},{"a":1,"b":[1,2]}]`},
		// keywords are case-insensitive
		{q: `select value c.id from c where c.n = 1 order by c.id desc`, want: `["d1"]`},
	})
}

func TestAggregates(t *testing.T) {
	runCases(t, mixed, []evalCase{
		{q: `SELECT VALUE COUNT(1) FROM c`, want: `[10]`},
		{q: `SELECT COUNT(1) AS n, MAX(c.n) AS oldest, MIN(c.n) AS youngest, SUM(c.n) AS total, AVG(c.n) AS mean FROM c`,
			want: `[{"n":10,"oldest":9,"youngest":0,"total":45,"mean":4.5}]`},
		{q: `SELECT COUNT(c.v), COUNT(c.tags) FROM c`, want: `[{"$1":9,"$2":4}]`},
		{q: `SELECT VALUE COUNT(1) FROM c WHERE c.n > 100`, want: `[0]`},
		{q: `SELECT VALUE SUM(c.n) FROM c WHERE c.n > 100`, want: `[0]`},
		{q: `SELECT VALUE AVG(c.n) FROM c WHERE c.n > 100`, want: `[]`},
		{q: `SELECT VALUE MAX(c.n) FROM c WHERE c.n > 100`, want: `[]`},
		{q: `SELECT MAX(c.n) AS m FROM c WHERE c.n > 100`, want: `[{}]`},
		{q: `SELECT VALUE SUM(c.v) FROM c`, want: `[]`},
		{q: `SELECT VALUE SUM(c.v) FROM c WHERE IS_NUMBER(c.v)`, want: `[1.5]`},
		{q: `SELECT VALUE AVG(c.missing) FROM c`, want: `[]`},
		{q: `SELECT VALUE MAX(c.v) FROM c WHERE IS_PRIMITIVE(c.v)`, want: `["b"]`},
		{q: `SELECT VALUE MIN(c.v) FROM c WHERE IS_PRIMITIVE(c.v)`, want: `[null]`},
		{q: `SELECT VALUE MIN(c.v) FROM c WHERE IS_BOOL(c.v) OR IS_NUMBER(c.v)`, want: `[false]`},
		{q: `SELECT VALUE MAX(c.v) FROM c`, want: `[]`},
		{q: `SELECT VALUE COUNT(1) + 1 FROM c`, want: `[11]`},
		{q: `SELECT VALUE COUNT(t) FROM c JOIN t IN c.tags`, want: `[4]`},
		{q: `SELECT COUNT(1)`, want: `[{"$1":1}]`},
		{q: `SELECT VALUE MAX(c.n) FROM c OFFSET 1 LIMIT 1`, want: `[]`},
	})
}

func TestNoFrom(t *testing.T) {
	q, err := Parse(`SELECT ABS(-4) AS a`)
	require.NoError(t, err)
	r, err := Exec(context.Background(), q, nil, mixed, testNow)
	require.NoError(t, err)
	assert.Equal(t, 0, r.Examined)
	require.Len(t, r.Items, 1)
	assert.JSONEq(t, `{"a":4}`, string(r.Items[0]))

	got, err := run(t, `SELECT VALUE 1 WHERE false`, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, `[]`, got)
}

func TestExecErrors(t *testing.T) {
	cases := []struct {
		q, want string
		params  map[string]any
	}{
		{q: `SELECT * FROM c WHERE c.x = @missing`, want: `1:29: missing parameter @missing`},
		{q: `SELECT TOP @n * FROM c`, params: map[string]any{"@n": -1}, want: `1:12: TOP must be a non-negative integer, found -1`},
		{q: `SELECT TOP @n * FROM c`, params: map[string]any{"@n": "3"}, want: `1:12: TOP must be a non-negative integer, found "3"`},
		{q: `SELECT * FROM c OFFSET @o LIMIT 1`, params: map[string]any{"@o": 1.5}, want: `1:24: OFFSET must be a non-negative integer, found 1.5`},
		{q: `SELECT * FROM c OFFSET 0 LIMIT @l`, params: map[string]any{"@l": nil}, want: `1:32: LIMIT must be a non-negative integer, found null`},
		{q: `SELECT * FROM c WHERE c.x = @f`, params: map[string]any{"@f": func() {}}, want: `1:29: parameter @f has a value that cannot be represented as JSON`},
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			_, err := run(t, c.q, c.params, mixed)
			var qe *Error
			require.ErrorAs(t, err, &qe)
			assert.Equal(t, c.want, err.Error())
		})
	}
}

func TestExecCancel(t *testing.T) {
	q, err := Parse(`SELECT * FROM c`)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Exec(ctx, q, nil, mixed, testNow)
	assert.True(t, errors.Is(err, context.Canceled))

	ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	docs := benchDocs(20000)
	for ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	_, err = Exec(ctx, q, nil, docs, testNow)
	assert.True(t, errors.Is(err, context.DeadlineExceeded))
}

func TestResultsIndependent(t *testing.T) {
	docs := []Doc{{ID: "a", JSON: []byte(`{"id":"a","x":{"y":1}}`)}}
	orig := string(docs[0].JSON)
	for _, text := range []string{`SELECT * FROM c`, `SELECT VALUE c FROM c`, `SELECT VALUE c.x FROM c`, `SELECT c.x FROM c`} {
		q, err := Parse(text)
		require.NoError(t, err)
		r, err := Exec(context.Background(), q, nil, docs, testNow)
		require.NoError(t, err)
		require.Len(t, r.Items, 1)
		for i := range r.Items[0] {
			r.Items[0][i] = 'X'
		}
		assert.Equal(t, orig, string(docs[0].JSON), text)
	}
}

func TestSelectStarVerbatim(t *testing.T) {
	raw := `{ "id" : "a", "n": 1.50, "big": 12345678901234567890 }`
	got, err := run(t, `SELECT * FROM c`, nil, []Doc{{ID: "a", JSON: []byte(raw)}})
	require.NoError(t, err)
	assert.Equal(t, "["+raw+"]", got)
	got, err = run(t, `SELECT VALUE c FROM c`, nil, []Doc{{ID: "a", JSON: []byte(raw)}})
	require.NoError(t, err)
	assert.Equal(t, "["+raw+"]", got)
}

func TestBadDocuments(t *testing.T) {
	docs := []Doc{
		{ID: "a", JSON: []byte(`{"id":"a","x":`)},
		{ID: "b", JSON: []byte(`not json`)},
		{ID: "c", JSON: nil},
		{ID: "d", JSON: []byte(`{"id":"d","x":1}`)},
	}
	for _, text := range []string{`SELECT c.x FROM c`, `SELECT VALUE c.x FROM c WHERE c.x = 1`, `SELECT VALUE c FROM c`, `SELECT t FROM c JOIN t IN c.x`} {
		_, err := run(t, text, nil, docs)
		require.NoError(t, err, text)
	}
	got, err := run(t, `SELECT VALUE c.x FROM c`, nil, docs)
	require.NoError(t, err)
	assert.Equal(t, `[1]`, got)
}

func TestConcurrentExec(t *testing.T) {
	q, err := Parse(`SELECT c.id, t FROM c JOIN t IN c.tags WHERE c.n > @min ORDER BY c.n DESC`)
	require.NoError(t, err)
	done := make(chan string, 8)
	for range 8 {
		go func() {
			r, err := Exec(context.Background(), q, map[string]any{"@min": 0}, mixed, testNow)
			if err != nil {
				done <- err.Error()
				return
			}
			s := ""
			for _, it := range r.Items {
				s += string(it)
			}
			done <- s
		}()
	}
	first := <-done
	assert.Equal(t, `{"id":"d5","t":"x"}{"id":"d5","t":"y"}{"id":"d4","t":"y"}{"id":"d1","t":"x"}`, first)
	for range 7 {
		assert.Equal(t, first, <-done)
	}
}

// TestSources: each result names the document it was made from, or -1.
func TestSources(t *testing.T) {
	docs := []Doc{
		{ID: "b", JSON: []byte(`{"id":"b","tags":["x","y"]}`)},
		{ID: "a", JSON: []byte(`{"id":"a","tags":["z"]}`)},
	}
	for _, tc := range []struct {
		q    string
		want []int32
	}{
		{"SELECT VALUE t FROM c JOIN t IN c.tags", []int32{1, 0, 0}},
		{"SELECT * FROM c ORDER BY c.id DESC", []int32{0, 1}},
		{"SELECT VALUE COUNT(1) FROM c", []int32{-1}},
		{"SELECT DISTINCT VALUE c.id FROM c", []int32{-1, -1}},
		{"SELECT VALUE 1", []int32{-1}},
	} {
		q, err := Parse(tc.q)
		require.NoError(t, err)
		res, err := Exec(context.Background(), q, nil, docs, time.Now())
		require.NoError(t, err)
		assert.Equal(t, tc.want, res.Sources, tc.q)
	}
}
