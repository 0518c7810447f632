package cosmosrest_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// engineErrors reads the query engine's list of errors out of the message
// of a 400, as the SDKs' and tools' parsers do (the .NET SDK's regular
// expression `Message: ({[^\r\n]*})[\r\n]`), and returns the line after it.
func engineErrors(t *testing.T, msg, prefix string) (list []map[string]any, rest string) {
	t.Helper()
	m := regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `Message: ({[^\r\n]*})\r\n(.*)$`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("message %q is not %q, the engine's list of errors and a line after it", msg, prefix+"Message: {...}\\r\\n...")
	}
	var v struct {
		Errors []map[string]any `json:"errors"`
	}
	if err := json.Unmarshal([]byte(m[1]), &v); err != nil || len(v.Errors) != 1 {
		t.Fatalf("the list of errors %s: %v, %d errors", m[1], err, len(v.Errors))
	}
	return v.Errors, m[2]
}

// TestQuerySyntaxErrorsInTheServiceShape checks that a bad query's 400
// carries, in its message, the list of errors Cosmos DB's query engine
// gives, as its gateway writes it: "Message: " and
// {"errors":[{"severity":"Error","location":{"start":S,"end":E},"code":"SC…","message":"…"}]},
// then the response's ActivityId and lethe's explanation with its line and
// column. The codes and messages quoted from the service: SC1001 "Syntax
// error, incorrect syntax near 'X'." (the span of X), SC1002 "Syntax error,
// unexpected end-of-file." (the span empty at the end of the text), SC1012
// "Syntax error, invalid string literal token '\"'." (the quote), SC2001
// "Identifier 'x' could not be resolved.", SC2005 "'X' is not a recognized
// built-in function name.", SC2050 "The CONTAINS function requires 2
// argument(s)."; the others keep lethe's text under a code of their kind.
func TestQuerySyntaxErrorsInTheServiceShape(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	must(t, c.do("POST", "/dbs", map[string]any{"id": "db"}), http.StatusCreated)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), http.StatusCreated)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "1", "pk": "a", "n": 1}, "x-ms-documentdb-partitionkey", `["a"]`), http.StatusCreated)
	const coll = "/dbs/db/colls/c"
	pk := []string{"x-ms-documentdb-partitionkey", `["a"]`}
	for _, tc := range []struct {
		name, query string
		params      []map[string]any
		code        string
		start, end  int
		message     string
		lethe       string // lethe's explanation after the ActivityId; "" for none
	}{
		{"missing expression", "SELECT * FROM c WHERE", nil, "SC1002", 21, 21,
			"Syntax error, unexpected end-of-file.", "1:22: expected an expression, found end of query"},
		{"missing expression, then spaces", "SELECT * FROM c WHERE c.n = ", nil, "SC1002", 28, 28,
			"Syntax error, unexpected end-of-file.", "1:29: expected an expression, found end of query"},
		{"misspelled keyword", "SELECT * FORM c", nil, "SC1001", 9, 13,
			"Syntax error, incorrect syntax near 'FORM'.", `1:10: expected FROM, found "FORM"`},
		{"misspelled first keyword", "selectttt * from c", nil, "SC1001", 0, 9,
			"Syntax error, incorrect syntax near 'selectttt'.", `1:1: expected SELECT, found "selectttt"`},
		{"trailing garbage", "SELECT * FROM c WHERE c.n = 1 garbage", nil, "SC1001", 30, 37,
			"Syntax error, incorrect syntax near 'garbage'.", `1:31: expected GROUP BY, ORDER BY, OFFSET or end of query, found "garbage"`},
		{"a block comment", "/* x */ SELECT * FROM c", nil, "SC1001", 0, 1,
			"Syntax error, incorrect syntax near '/'.", `1:1: expected SELECT, found "/"`},
		{"a parameter for the container", "SELECT * FROM @modules", nil, "SC1001", 14, 22,
			"Syntax error, incorrect syntax near '@modules'.", `1:15: expected a name after FROM, found "@modules"`},
		{"missing FROM alias", "SELECT * FROM WHERE c.n = 1", nil, "SC1001", 14, 19,
			"Syntax error, incorrect syntax near 'WHERE'.", `1:15: expected a name after FROM, found "WHERE"`},
		{"bad token", "SELECT * FROM c WHERE c.n ! 1", nil, "SC1001", 26, 27,
			"Syntax error, incorrect syntax near '!'.", "1:27: unexpected character '!'"},
		{"malformed number", "SELECT * FROM c WHERE c.n = 1e", nil, "SC1001", 28, 30,
			"Syntax error, incorrect syntax near '1e'.", `1:29: malformed number "1e"`},
		{"unclosed string", `SELECT * FROM c WHERE c.id = "x`, nil, "SC1012", 29, 30,
			`Syntax error, invalid string literal token '"'.`, "1:30: unterminated string literal"},
		{"unclosed single-quoted string", `SELECT * FROM c WHERE c.id = 'x`, nil, "SC1012", 29, 30,
			`Syntax error, invalid string literal token '''.`, "1:30: unterminated string literal"},
		{"unclosed parenthesis", "SELECT * FROM c WHERE (c.n = 1", nil, "SC1002", 30, 30,
			"Syntax error, unexpected end-of-file.", `1:23: unbalanced parentheses: "(" is never closed`},
		{"unknown function", "SELECT VALUE NOPE(c.n) FROM c", nil, "SC2005", 13, 17,
			"'NOPE' is not a recognized built-in function name.", "1:14: unknown function 'NOPE'"},
		{"argument count", "SELECT VALUE ABS(c.n, 1) FROM c", nil, "SC2050", 13, 16,
			"The ABS function requires 1 argument(s).", "1:14: function 'ABS' takes 1 argument, found 2"},
		{"argument count of a function of several", "SELECT * FROM c WHERE ENDSWITH(c.id)", nil, "SC2050", 22, 30,
			"function 'ENDSWITH' takes 2 or 3 arguments, found 1", "1:23: function 'ENDSWITH' takes 2 or 3 arguments, found 1"},
		{"unresolved identifier", "SELECT x.id FROM c", nil, "SC2001", 7, 8,
			"Identifier 'x' could not be resolved.", "1:8: identifier 'x' could not be resolved"},
		{"two select items with one name", "SELECT c.n, c.n FROM c", nil, "SC2022", 12, 13,
			"duplicate property name 'n' in the select list", "1:13: duplicate property name 'n' in the select list"},
		{"aggregate in WHERE", "SELECT * FROM c WHERE COUNT(1) > 1", nil, "SC2000", 22, 27,
			"aggregate function 'COUNT' is not allowed in WHERE", "1:23: aggregate function 'COUNT' is not allowed in WHERE"},
		{"missing parameter", "SELECT * FROM c WHERE c.n = @nope", nil, "SC2000", 28, 33,
			"missing parameter @nope", "1:29: missing parameter @nope"},
		{"second line", "SELECT *\nFROM c\nWHERE c.n = (1", nil, "SC1002", 30, 30,
			"Syntax error, unexpected end-of-file.", `3:13: unbalanced parentheses: "(" is never closed`},
		// 33 bytes, 29 characters, 30 UTF-16 code units
		{"offsets in UTF-16", "SELECT '😀é' AS s FROM c WHERE", nil, "SC1002", 30, 30,
			"Syntax error, unexpected end-of-file.", "1:30: expected an expression, found end of query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := must(t, c.query(coll, tc.query, tc.params, pk...), http.StatusBadRequest)
			body := r.json(t)
			if body["code"] != "BadRequest" || r.header.Get("x-ms-substatus") != "0" {
				t.Errorf("code %v, substatus %q; want BadRequest, 0", body["code"], r.header.Get("x-ms-substatus"))
			}
			msg, _ := body["message"].(string)
			list, rest := engineErrors(t, msg, "")
			e := list[0]
			if e["severity"] != "Error" || e["code"] != tc.code || e["message"] != tc.message {
				t.Errorf("error %v, want code %s, message %q", e, tc.code, tc.message)
			}
			loc, _ := e["location"].(map[string]any)
			if loc["start"] != float64(tc.start) || loc["end"] != float64(tc.end) {
				t.Errorf("location %v, want %d to %d", loc, tc.start, tc.end)
			}
			want := "ActivityId: " + r.header.Get("x-ms-activity-id")
			if tc.lethe != "" {
				want += ", lethe: " + tc.lethe
			}
			if rest != want {
				t.Errorf("after the list: %q, want %q", rest, want)
			}
		})
	}
}

// TestQueryPlanSyntaxError checks the 400 of a query plan request for a
// bad query, the way an SDK with a query pipeline meets a syntax error:
// the gateway's "Gateway Failed to Retrieve Query Plan: " before the
// engine's message.
func TestQueryPlanSyntaxError(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	must(t, c.do("POST", "/dbs", map[string]any{"id": "db"}), http.StatusCreated)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), http.StatusCreated)
	r := must(t, c.query("/dbs/db/colls/c", "SELECT ROW_NUMBER() OVER(ORDER BY c.n) AS rn FROM c", nil,
		"x-ms-cosmos-is-query-plan-request", "True", "x-ms-cosmos-supported-query-features", "Aggregate, OrderBy"), http.StatusBadRequest)
	msg, _ := r.json(t)["message"].(string)
	list, _ := engineErrors(t, msg, "Gateway Failed to Retrieve Query Plan: ")
	if list[0]["code"] != "SC2005" {
		t.Errorf("plan of an unknown function: %v", list[0])
	}
	r = must(t, c.query("/dbs/db/colls/c", "SELECT * FROM c WHERE", nil, "x-ms-cosmos-is-query-plan-request", "True"), http.StatusBadRequest)
	msg, _ = r.json(t)["message"].(string)
	if list, _ := engineErrors(t, msg, "Gateway Failed to Retrieve Query Plan: "); list[0]["code"] != "SC1002" {
		t.Errorf("plan of a query cut short: %v", list[0])
	}
}

// TestMetaQuerySyntaxError checks that a query over the databases answers
// a bad query in the service's shape too.
func TestMetaQuerySyntaxError(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	r := must(t, c.do("POST", "/dbs", map[string]any{"query": "SELECT * FROM root r WHERE", "parameters": []any{}},
		"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"), http.StatusBadRequest)
	msg, _ := r.json(t)["message"].(string)
	if list, _ := engineErrors(t, msg, ""); list[0]["code"] != "SC1002" {
		t.Errorf("a query over the databases cut short: %v", list[0])
	}
	r = must(t, c.do("POST", "/dbs", map[string]any{"query": "SELECT * FROM root r WHERE r.id = @id", "parameters": []any{}},
		"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"), http.StatusBadRequest)
	msg, _ = r.json(t)["message"].(string)
	if list, _ := engineErrors(t, msg, ""); list[0]["message"] != "missing parameter @id" {
		t.Errorf("a query over the databases without its parameter: %v", list[0])
	}
}
