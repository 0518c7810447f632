package query

import (
	"errors"
	"testing"
)

// TestServiceErrors holds the error of each kind of bad query as Cosmos
// DB's query engine reports it: its code, its message and its span in
// UTF-16 code units, beside lethe's own text (Error), which stays as it
// was.
func TestServiceErrors(t *testing.T) {
	for _, tc := range []struct {
		query      string
		code, msg  string
		start, end int
		lethe      string
	}{
		{"SELECT * FROM c WHERE", "SC1002", "Syntax error, unexpected end-of-file.", 21, 21, "1:22: expected an expression, found end of query"},
		{"SELECT * FORM c", "SC1001", "Syntax error, incorrect syntax near 'FORM'.", 9, 13, `1:10: expected FROM, found "FORM"`},
		{"SELECT * FROM c WHERE c.s = 'it''s'", "SC1001", "Syntax error, incorrect syntax near ''s''.", 32, 35, `1:33: expected GROUP BY, ORDER BY, OFFSET or end of query, found string "s"`},
		{"SELECT * FROM c WHERE c.n > 1.5.2", "SC1001", "Syntax error, incorrect syntax near '.2'.", 31, 33, `1:32: expected GROUP BY, ORDER BY, OFFSET or end of query, found ".2"`},
		{`SELECT * FROM c WHERE c.s = "a\qb"`, "SC1012", `Syntax error, invalid string literal token '\'.`, 30, 31, `1:31: invalid escape sequence "\\q" in string literal`},
		{"SELECT * FROM c WHERE c.s = 'é", "SC1012", "Syntax error, invalid string literal token '''.", 28, 29, "1:29: unterminated string literal"},
		{"SELECT * FROM c WHERE ARRAY_LENGTH(c.a", "SC1002", "Syntax error, unexpected end-of-file.", 38, 38, `1:35: unbalanced parentheses: "(" is never closed`},
		{"SELECT VALUE nope(1)", "SC2005", "'nope' is not a recognized built-in function name.", 13, 17, "1:14: unknown function 'nope'"},
		{"SELECT VALUE c.n FROM c ORDER BY RANK RRF(RRF(FullTextScore(c.s, 'a')))", "SC2005", "'RRF' is not a recognized built-in function name.", 42, 45, "1:43: 'RRF' is not a recognized built-in function name."},
		{"SELECT VALUE LOWER() FROM c", "SC2050", "The LOWER function requires 1 argument(s).", 13, 18, "1:14: function 'LOWER' takes 1 argument, found 0"},
		{"SELECT VALUE 😀x FROM c", "SC1001", "Syntax error, incorrect syntax near '😀'.", 13, 15, "1:14: unexpected character '😀'"},
		{`SELECT * FROM c WHERE c.s = "a\éb"`, "SC1012", `Syntax error, invalid string literal token '\'.`, 30, 31, `1:31: invalid escape sequence "\\é" in string literal`}, // a multi-byte character after a backslash: whole
		{"SELECT VALUE 0婢 FROM c", "SC1001", "Syntax error, incorrect syntax near '0婢'.", 13, 15, `1:14: malformed number "0婢"`},                                             // a multi-byte letter after a number: whole characters (FuzzParse)
		{"SELECT VALUE d FROM c", "SC2001", "Identifier 'd' could not be resolved.", 13, 14, "1:14: identifier 'd' could not be resolved"},
		{"SELECT VALUE d", "SC2001", "Identifier 'd' could not be resolved.", 13, 14, "1:14: identifier 'd' could not be resolved (the query has no FROM clause)"},
		{"SELECT c.n AS x, c.m AS x FROM c", "SC2022", "duplicate property name 'x' in the select list", 17, 18, "1:18: duplicate property name 'x' in the select list"},
		{"SELECT * FROM c GROUP BY COUNT(1)", "SC2000", "aggregate function 'COUNT' is not allowed in GROUP BY", 25, 30, "1:26: aggregate function 'COUNT' is not allowed in GROUP BY"},
	} {
		_, err := Parse(tc.query)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: %v, want a *Error", tc.query, err)
			continue
		}
		if e.Code != tc.code || e.ServiceMessage() != tc.msg || e.Start != tc.start || e.End != tc.end || e.Error() != tc.lethe {
			t.Errorf("%s:\n got %s %q %d-%d %q\nwant %s %q %d-%d %q", tc.query, e.Code, e.ServiceMessage(), e.Start, e.End, e.Error(),
				tc.code, tc.msg, tc.start, tc.end, tc.lethe)
		}
	}
}

// TestServiceErrorsOfExecution: the errors found when the query runs (a
// parameter without a value, a user-defined function the container lacks)
// have their code and span too; those of no position have none.
func TestServiceErrorsOfExecution(t *testing.T) {
	q, err := Parse("SELECT * FROM c WHERE c.n = @n")
	if err != nil {
		t.Fatal(err)
	}
	var e *Error
	if _, err := Exec(t.Context(), q, nil, nil, testNow); !errors.As(err, &e) || e.Code != "SC2000" || e.Start != 28 || e.End != 30 || e.Line != 1 {
		t.Errorf("missing parameter: %v, %+v", err, e)
	}
	q, err = Parse("SELECT VALUE udf.f(1)")
	if err != nil {
		t.Fatal(err)
	}
	if err := q.CheckUDFs(nil); !errors.As(err, &e) || e.Code != "SC2005" || e.ServiceMessage() != "'udf.f' is not a recognized user-defined function name." {
		t.Errorf("a missing user-defined function: %v", err)
	}
	if _, err := Parse(string(make([]byte, MaxQueryLen+1))); !errors.As(err, &e) || e.Code != "" || e.Line != 0 {
		t.Errorf("a query too long: %v, code %q", err, e.Code)
	}
}
