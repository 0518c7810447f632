package query

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	`SELECT * FROM c WHERE c.status = @s`,
	`SELECT VALUE COUNT(1) FROM c`,
	`SELECT DISTINCT TOP 3 c.a, c["b"] AS bee FROM root c JOIN t IN c.tags WHERE t LIKE "a%" ORDER BY c.n DESC OFFSET 1 LIMIT 2`,
	`SELECT VALUE [1 + 2, "a" || "b", 1 < 2 ? @p : null ?? 3, ~4 >>> 1, NOT true AND false OR undefined]`,
	`SELECT c.x BETWEEN 1 AND 5, c.y NOT IN (1, "a", [1]), {"o": c.z[0]} FROM c IN f.children`,
	`SELECT SUM(c.n), AVG(c.n), MIN(c.s), MAX(c.s) FROM c WHERE IS_DEFINED(c.n)`,
	`SELECT VALUE CONCAT(LOWER(c.s), UPPER("x"), SUBSTRING(c.s, 1, 2), TOSTRING(c.n)) FROM c`,
	`SELECT VALUE ARRAY_SLICE(ARRAY_CONCAT(c.tags, [1]), -1) FROM c WHERE ARRAY_CONTAINS(c.tags, {"a": 1}, true)`,
	`SELECT GetCurrentDateTime(), ROUND(POWER(2, 0.5) * 100) FROM c ORDER BY c.x`,
	`SELECT c.status, LOWER(c.s) AS s, COUNT(1) AS n, SUM(c.n), MIN(c.x.y), MAX(c.tags) FROM c WHERE c.n > 0 GROUP BY c.status, LOWER(c.s) OFFSET 0 LIMIT 5`,
	`SELECT DISTINCT TOP 2 VALUE {"k": IS_DEFINED(c.x.y[2].z), "n": AVG(c.n)} FROM c JOIN t IN c.tags GROUP BY IS_DEFINED(c.x.y[2].z), t`,
	`SELECT c.id, (SELECT VALUE COUNT(1) FROM t IN c.tags WHERE t = @s) AS n, ARRAY(SELECT DISTINCT VALUE y FROM y IN c.x.y ORDER BY y DESC OFFSET 1 LIMIT 1) AS ys FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags)`,
	`SELECT VALUE [t, m] FROM c JOIN (SELECT VALUE t FROM t IN c.tags WHERE IS_STRING(t)) t JOIN m IN (SELECT VALUE [1, c.n]) JOIN (SELECT MAX(y) AS m FROM y IN c.x.y) mm`,
	`SELECT TOP 1 (SELECT c.s WHERE CONTAINS(c.s, "l")).s, EXISTS(SELECT undefined), (SELECT VALUE (SELECT VALUE x FROM x IN [c.n, 2]) FROM y IN [1]) FROM c`,
	`SELECT f.id, ARRAY_LENGTH(children), k[0] FROM Families f JOIN f.children JOIN f["tags"] AS k JOIN t IN k WHERE IS_DEFINED(t)`,
	`SELECT VALUE [ToString(NaN), ToString(-Infinity), IS_FINITE_NUMBER(c.n / 0), NaN = NaN, SUBSTRING(c.s, NaN, Infinity), c.n * Infinity > 1] FROM c ORDER BY c.n`,
	`SELECT TOP 2 c.id, VectorDistance(c.x.y, [1, 2, 0]) AS d FROM c ORDER BY VectorDistance(c.x.y, [1, 2, 0])`,
	`SELECT VALUE VectorDistance(c.tags, @p, true, {"distanceFunction": "euclidean", "dataType": "int8", "searchListSizeMultiplier": 10}) FROM c`,
	`SELECT TOP 3 VALUE c.id FROM c WHERE FullTextContainsAny(c.s, "hello", "world") ORDER BY RANK FullTextScore(c.s, "hello", @s)`,
	`SELECT VALUE c FROM c ORDER BY RANK RRF(FullTextScore(c.s, "hello"), VectorDistance(c.x.y, [1, 2]), [2, 1]) OFFSET 1 LIMIT 1`,
	`SELECT udf.id(c.n) AS n, udf.id(udf.id(c.x), c.tags, {"a": c.s}) FROM c WHERE udf.id(c.n) > 0 AND IS_DEFINED(udf.undef()) ORDER BY udf.id(c.s)`,
	`SELECT udf.id(c.status) AS s, COUNT(udf.fail(c.nope)) FROM c JOIN t IN c.tags WHERE EXISTS(SELECT VALUE udf.id(t)) GROUP BY udf.id(c.status)`,
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		q, err := Parse(text)
		if err != nil {
			var qe *Error
			if !errors.As(err, &qe) {
				t.Fatalf("Parse(%q) returned a %T, not *Error", text, err)
			}
			// An error at a position is the service's too, with a span
			// inside the text.
			if qe.Line > 0 && (qe.Code == "" || qe.ServiceMessage() == "" || qe.Start < 0 || qe.Start > qe.End || qe.End > utf16Len(text)) {
				t.Fatalf("Parse(%q): %v has code %q, message %q, span %d to %d", text, err, qe.Code, qe.ServiceMessage(), qe.Start, qe.End)
			}
			return
		}
		s := q.String()
		q2, err := Parse(s)
		if err != nil {
			// The canonical form adds parentheses, which can exceed the
			// nesting or length limit; anything else is a bug.
			if strings.Contains(err.Error(), "nested too deeply") || strings.Contains(err.Error(), "exceeded the maximum") {
				return
			}
			t.Fatalf("re-parse of %q (from %q) failed: %v", s, text, err)
		}
		if s2 := q2.String(); s2 != s {
			t.Fatalf("String not stable:\n%q\n%q\n(from %q)", s, s2, text)
		}
	})
}

var fuzzDocs = []Doc{
	{ID: "a", JSON: []byte(`{"id":"a","n":1,"s":"hello","tags":["a","b",{"a":1}],"x":{"y":[1,2,{"z":null}]}}`)},
	{ID: "b", JSON: []byte(`{"id":"b","n":-2.5e3,"s":"日本😀","tags":[],"x":null,"status":"x"}`)},
	{ID: "c", JSON: []byte(`{"id":"c","n":"3","s":null,"tags":"t","x":{"y":true},"status":"y"}`)},
}

// fuzzUDFs are the user-defined functions FuzzExec's queries may call.
var fuzzUDFs = map[string]Func{
	"id":    func(a []any) (any, error) { return a, nil },
	"undef": func(a []any) (any, error) { return Undefined, nil },
	"fail":  func(a []any) (any, error) { return nil, errors.New("fail") },
	"panic": func(a []any) (any, error) { panic(a) },
	"nan":   func(a []any) (any, error) { return []any{math.NaN()}, nil },
}

func FuzzExec(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, `{"id":"z","n":5,"tags":[1,2]}`)
	}
	for _, s := range []string{
		`SELECT VALUE IIF(IS_INTEGER(c.n), CHOOSE(c.n, "a", "b"), StringToNumber(c.s))`,
		`SELECT VALUE DateTimeBin(DateTimeAdd("dd", c.n, "2020-01-01"), "hh", 3) FROM c`,
		`SELECT VALUE [RegexMatch(c.id, "^z", "i"), StringSplit(c.id, ""), SetUnion(c.tags, [2, 3])] FROM c`,
		`SELECT VALUE IntBitLeftShift(c.n, 2) + DateTimeDiff("ms", TicksToDateTime(c.n), "2021-06-28T17:24:29Z") FROM c`,
		`SELECT VALUE [FullTextContains(c.s, "hellos"), FullTextContainsAll(c["s"], @s, "x y"), FullTextContainsAny(c.x.y, c.s, 1)] FROM c WHERE NOT FullTextContains(c.id, "the")`,
		`SELECT c.id FROM c JOIN t IN c.tags WHERE FullTextContainsAny(t, "a", "b's") OR FullTextContains(CONCAT(c.s, t), @s)`,
		`SELECT VALUE [udf.id(c), udf.nan(c.n), udf.panic(c.s)] FROM c WHERE udf.id(c.n)[0] > 1`,
	} {
		f.Add(s, `{"id":"z","n":5,"s":"1e3","tags":[1,2]}`)
	}
	params := map[string]any{"@s": "x", "@p": 1, "@a": []any{1, "a", nil}, "@o": map[string]any{"k": true}}
	f.Fuzz(func(t *testing.T, text string, extra string) {
		q, err := Parse(text)
		if err != nil {
			return
		}
		docs := fuzzDocs
		if json.Valid([]byte(extra)) && strings.HasPrefix(strings.TrimSpace(extra), "{") && len(extra) < 4096 {
			docs = append(docs[:len(docs):len(docs)], Doc{ID: "e", JSON: []byte(extra)})
		}
		r, err := ExecFrom(context.Background(), q, params, docs, testNow, nil, &Env{UDFs: fuzzUDFs})
		if err != nil {
			var qe *Error
			var ue *UDFError
			if !errors.As(err, &qe) && !errors.As(err, &ue) {
				t.Fatalf("Exec(%q) returned a %T: %v", text, err, err)
			}
			return
		}
		for _, it := range r.Items {
			if !json.Valid(it) {
				t.Fatalf("Exec(%q) produced invalid JSON %q", text, it)
			}
		}
	})
}
