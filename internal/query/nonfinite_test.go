package query

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNonFiniteDocumented pins the examples of the Cosmos DB reference
// that use the literals NaN and Infinity or make such numbers (TOSTRING,
// IS_FINITE_NUMBER, STRINGTONUMBER), with the outputs the reference gives.
func TestNonFiniteDocumented(t *testing.T) {
	runCases(t, nil, []evalCase{
		{q: `SELECT VALUE {
		       integerToString: ToString(125),
		       floatToString: ToString(0.1234),
		       booleanToString: ToString(false),
		       arrayToString: ToString([ 1, 2, 3 ]),
		       objectToString: ToString({ "department": "Bicycles" }),
		       stringToString: ToString("Hello World"),
		       undefinedToString: ToString(undefined),
		       notANumberToString: ToString(NaN),
		       infinityToString: ToString(Infinity)
		     }`,
			want: `[{"integerToString":"125","floatToString":"0.1234","booleanToString":"false","arrayToString":"[1,2,3]",
			        "objectToString":"{\"department\":\"Bicycles\"}","stringToString":"Hello World",
			        "notANumberToString":"NaN","infinityToString":"Infinity"}]`},
		{q: `SELECT VALUE {
		       finiteValue: IS_FINITE_NUMBER(1234.567),
		       infiniteValue: IS_FINITE_NUMBER(8.9 / 0.0),
		       nanValue: IS_FINITE_NUMBER(SQRT(-1.0))
		     }`,
			want: `[{"finiteValue":true,"infiniteValue":false,"nanValue":false}]`},
		{q: `SELECT VALUE {
		       parseIntegerString: StringToNumber("100"),
		       parseDecimalString: StringToNumber("3.14"),
		       parseWithWhitespace: StringToNumber("   60   "),
		       parseScientific: StringToNumber("-1.79769e+308"),
		       parseInvalid: StringToNumber("Hello"),
		       parseUndefined: StringToNumber(undefined),
		       parseNull: StringToNumber(null),
		       parseNaN: StringToNumber(NaN),
		       parseInfinity: StringToNumber(Infinity)
		     }`,
			want: `[{"parseIntegerString":100,"parseDecimalString":3.14,"parseWithWhitespace":60,"parseScientific":-1.79769e+308}]`},
	})
}

// TestNonFinite pins what NaN and the infinities are while a query is
// evaluated: numbers, with IEEE arithmetic and comparisons (NaN equals
// nothing, itself included), written as JavaScript writes them by
// ToString.
func TestNonFinite(t *testing.T) {
	docs := []Doc{{ID: "a", JSON: []byte(`{"id":"a","n":2}`)}, {ID: "b", JSON: []byte(`{"id":"b","n":1}`)}}
	runCases(t, docs, []evalCase{
		{q: `SELECT VALUE [IS_NUMBER(NaN), IS_NUMBER(Infinity), IS_FINITE_NUMBER(Infinity), IS_FINITE_NUMBER(-Infinity), IS_FINITE_NUMBER(1e308), IS_INTEGER(Infinity), IS_PRIMITIVE(NaN)]`,
			want: `[[true,true,false,false,true,false,true]]`},
		{q: `SELECT VALUE [ToString(-Infinity), ToString(1 / 0), ToString(-1 / 0), ToString(0 / 0), ToString(Infinity - Infinity), ToString(Infinity * -2), ToString(1e308 * 10), ToString(SQRT(-1)), ToString(NaN + 1), ToString(NaN ?? 1), ToString([NaN, -Infinity])]`,
			want: `[["-Infinity","Infinity","-Infinity","NaN","NaN","-Infinity","Infinity","NaN","NaN","NaN","[NaN,-Infinity]"]]`},
		{q: `SELECT VALUE [1 / Infinity, -5 % Infinity, ~NaN, Infinity | 0, IIF(NaN = NaN, 1, 2), ROUND(1 / Infinity)]`,
			want: `[[0,-5,-1,0,2,0]]`},
		{q: `SELECT VALUE [NaN = NaN, NaN != NaN, NaN < 1, NaN >= 1, 1 > NaN, Infinity = Infinity, Infinity > 1e308, -Infinity < -1e308, 1 / 0 = Infinity, NaN IN (NaN, 1), Infinity IN (1, Infinity), 2 BETWEEN -Infinity AND Infinity]`,
			want: `[[false,true,false,false,false,true,true,true,true,false,true,true]]`},
		// functions that take a count or a position read NaN as 0 and an
		// infinity as past every bound
		{q: `SELECT VALUE [SUBSTRING("abc", NaN, 2), LEFT("abc", Infinity), RIGHT("abc", NaN), REPLICATE("a", NaN), ARRAY_SLICE([1, 2, 3], Infinity), ARRAY_SLICE([1, 2, 3], NaN, 1), INDEX_OF("abc", "c", NaN), CHOOSE(NaN, 1), CHOOSE(Infinity, 1), [1, 2][NaN], [1, 2][Infinity]]`,
			want: `[["ab","abc","","",[],[1],2]]`},
		{q: `SELECT VALUE [TicksToDateTime(NaN), TimestampToDateTime(Infinity), TimestampToDateTime(NaN), DateTimeAdd("day", Infinity, "2020-01-01T00:00:00.0000000Z"), IntAdd(NaN, 1), DateTimeFromParts(NaN, 1, 1)]`,
			want: `[[]]`},
		// filters and ORDER BY over them are fine while the results hold none
		{q: `SELECT VALUE c.n FROM c WHERE c.n / 0 = Infinity AND c.n > -Infinity AND NOT (c.n = NaN) ORDER BY c.n`, want: `[1,2]`},
		{q: `SELECT VALUE c.id FROM c WHERE IS_FINITE_NUMBER(c.n / (c.n - 1))`, want: `["a"]`},
		{q: `SELECT VALUE COUNT(1) FROM c WHERE c.n * Infinity > 1`, want: `[2]`},
		// the names are JavaScript's, case-sensitive; they may name properties
		{q: `SELECT VALUE [{NaN: 1}.NaN, {"Infinity": 2}.Infinity]`, want: `[[1,2]]`},
		{q: `SELECT VALUE nan.n FROM nan`, want: `[2,1]`},
	})
}

// TestNonFiniteResults pins that a result, an ORDER BY value or a GROUP BY
// value holding NaN or an infinity fails the query with a typed error
// (JSON cannot write them, and Cosmos DB answers such a query with 400),
// where before lethe made them undefined.
func TestNonFiniteResults(t *testing.T) {
	docs := []Doc{{ID: "a", JSON: []byte(`{"id":"a","n":2,"big":1e308}`)}, {ID: "b", JSON: []byte(`{"id":"b","n":1,"big":1e308}`)}}
	result := "a result of the query holds a number that JSON cannot represent (NaN or Infinity)"
	cases := []struct{ q, want string }{
		{`SELECT VALUE NaN`, result},
		{`SELECT VALUE -Infinity`, result},
		{`SELECT 1 / 0 AS inf, 1 AS one`, result},
		{`SELECT VALUE [1, [SQRT(-1)]]`, result},
		{`SELECT VALUE {"a": {"b": c.n / 0}} FROM c`, result},
		{`SELECT c.id, LOG(c.n - 1) AS l FROM c`, result},
		{`SELECT VALUE SUM(c.big) FROM c`, result},
		{`SELECT VALUE (SELECT VALUE 0 / 0) FROM c`, result},
		{`SELECT VALUE c.id FROM c ORDER BY c.n / 0`, "an ORDER BY value of the query holds a number that JSON cannot represent (NaN or Infinity)"},
		{`SELECT COUNT(1) AS n FROM c GROUP BY c.n / 0`, "a GROUP BY value of the query holds a number that JSON cannot represent (NaN or Infinity)"},
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			_, err := run(t, c.q, nil, docs)
			var qe *Error
			require.ErrorAs(t, err, &qe)
			assert.Equal(t, c.want, err.Error())
		})
	}
}

// TestNonFiniteIndexRanges pins that a comparison with NaN or an infinity
// is not answered by an index (the query scans and evaluates it).
func TestNonFiniteIndexRanges(t *testing.T) {
	for text, n := range map[string]int{
		`SELECT * FROM c WHERE c.n = NaN`:                  0,
		`SELECT * FROM c WHERE c.n < Infinity`:             0,
		`SELECT * FROM c WHERE c.n IN (1, NaN)`:            0,
		`SELECT * FROM c WHERE c.n BETWEEN 1 AND Infinity`: 0,
		`SELECT * FROM c WHERE c.n < 1`:                    1,
	} {
		q, err := Parse(text)
		require.NoError(t, err)
		assert.Len(t, q.IndexRanges(nil), n, text)
	}
}
