package query

import (
	"context"
	"strings"
	"testing"
)

// employees are the reference items of the GROUP BY documentation.
var employees = func() []Doc {
	var docs []Doc
	for i, s := range []string{
		`{"name":"Jordan Mitchell","capabilities":{"softwareDevelopment":"python","mediaTrained":true},"team":"Cloud software engineering"}`,
		`{"name":"Mikaela Lee","capabilities":{"softwareDevelopment":"javascript","mediaTrained":false},"team":"Cloud software engineering"}`,
		`{"name":"Graham Barnes","capabilities":{"softwareDevelopment":"c-sharp","mediaTrained":true},"team":"Cloud software engineering"}`,
		`{"name":"Hayden Cook","capabilities":{"softwareDevelopment":"javascript","mediaTrained":true},"team":"Cloud software engineering"}`,
		`{"name":"Morgan Connors","capabilities":{"mediaTrained":true},"team":"Cloud software engineering"}`,
		`{"name":"Devon Torres","capabilities":{"softwareDevelopment":"python","mediaTrained":false},"team":"Cloud software engineering"}`,
		`{"name":"Sam Centrell","capabilities":{"softwareDevelopment":"javascript","mediaTrained":true},"team":"Cloud software engineering"}`,
	} {
		docs = append(docs, Doc{ID: string(rune('a' + i)), JSON: []byte(s)})
	}
	return docs
}()

// TestGroupBy: the documentation's examples (results compared as sets:
// Cosmos DB does not order groups), and the rules of the select list.
func TestGroupBy(t *testing.T) {
	for _, tc := range []struct{ q, want string }{
		// Grouping by a property: items without it are a group of their own.
		{`SELECT e.capabilities.softwareDevelopment AS developmentLang FROM employees e WHERE e.team = "Cloud software engineering" GROUP BY e.capabilities.softwareDevelopment`,
			`{} {"developmentLang":"c-sharp"} {"developmentLang":"javascript"} {"developmentLang":"python"}`},
		{`SELECT e.capabilities.softwareDevelopment AS developmentLang, COUNT(1) AS developers FROM employees e GROUP BY e.capabilities.softwareDevelopment`,
			`{"developers":1} {"developmentLang":"c-sharp","developers":1} {"developmentLang":"javascript","developers":3} {"developmentLang":"python","developers":2}`},
		// Several expressions.
		{`SELECT COUNT(1) AS n, e.capabilities.mediaTrained AS trained, e.capabilities.softwareDevelopment AS lang FROM employees e GROUP BY e.capabilities.softwareDevelopment, e.capabilities.mediaTrained`,
			`{"n":1,"trained":true} {"n":1,"trained":true,"lang":"c-sharp"} {"n":1,"trained":false,"lang":"javascript"} {"n":2,"trained":true,"lang":"javascript"} {"n":1,"trained":false,"lang":"python"} {"n":1,"trained":true,"lang":"python"}`},
		// An expression, and functions of the GROUP BY expressions.
		{`SELECT VALUE {"lang": UPPER(LEFT(e.capabilities.softwareDevelopment, 1)), "n": COUNT(1)} FROM e GROUP BY LEFT(e.capabilities.softwareDevelopment, 1)`,
			`{"n":1} {"lang":"C","n":1} {"lang":"J","n":3} {"lang":"P","n":2}`},
		{`SELECT VALUE COUNT(1) FROM e GROUP BY e.capabilities.mediaTrained`, `2 5`},
		{`SELECT e.capabilities.mediaTrained AS t, MIN(e.name) AS first, MAX(e.name) AS last, SUM(1) AS s, AVG(LENGTH(e.name)) AS l FROM e GROUP BY e.capabilities.mediaTrained`,
			`{"t":false,"first":"Devon Torres","last":"Mikaela Lee","s":2,"l":11.5} {"t":true,"first":"Graham Barnes","last":"Sam Centrell","s":5,"l":13}`},
		// WHERE before grouping, TOP and OFFSET LIMIT after.
		{`SELECT VALUE e.capabilities.softwareDevelopment FROM e WHERE e.capabilities.mediaTrained GROUP BY e.capabilities.softwareDevelopment`, `"c-sharp" "javascript" "python"`},
		{`SELECT DISTINCT VALUE COUNT(1) FROM e GROUP BY e.capabilities.softwareDevelopment`, `1 2 3`},
		{`SELECT VALUE e.team FROM e GROUP BY e.team`, `"Cloud software engineering"`},
		{`SELECT VALUE e.team FROM e WHERE false GROUP BY e.team`, ``},
	} {
		got, err := run(t, tc.q, nil, employees)
		if err != nil {
			t.Errorf("%s: %v", tc.q, err)
			continue
		}
		if g, w := sortedItems(got), sortedItems("["+strings.ReplaceAll(tc.want, "} {", "},{")+"]"); g != w {
			t.Errorf("%s:\n got %s\nwant %s", tc.q, g, w)
		}
	}
	for _, tc := range []struct{ q, want string }{
		{`SELECT TOP 2 VALUE COUNT(1) FROM e GROUP BY e.name`, `2 results`},
		{`SELECT VALUE COUNT(1) FROM e GROUP BY e.name OFFSET 5 LIMIT 10`, `2 results`},
	} {
		got, err := run(t, tc.q, nil, employees)
		if err != nil || strings.Count(got, ",")+1 != 2 {
			t.Errorf("%s: %s %v, want %s", tc.q, got, err, tc.want)
		}
	}
}

func TestGroupByErrors(t *testing.T) {
	for _, tc := range []struct{ q, want string }{
		{`SELECT e.name FROM e GROUP BY e.team`, "neither in GROUP BY nor in an aggregate"},
		{`SELECT e.team, e.name, COUNT(1) FROM e GROUP BY e.team`, "e[\"name\"]"},
		{`SELECT * FROM e GROUP BY e.team`, "SELECT *"},
		{`SELECT VALUE e.team FROM e GROUP BY e.team ORDER BY e.team`, "ORDER BY cannot be used with GROUP BY"},
		{`SELECT VALUE COUNT(1) FROM e GROUP BY COUNT(1)`, "not allowed in GROUP BY"},
		{`SELECT VALUE 1 FROM e GROUP BY 1`, "must refer to a property"},
		{`SELECT VALUE 1 GROUP BY 1`, "FROM"},
		{`SELECT VALUE x FROM e GROUP BY x.a`, "could not be resolved"},
		{`SELECT VALUE e.a FROM e GROUP`, "BY"},
	} {
		_, err := run(t, tc.q, nil, employees)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.q, err, tc.want)
		}
	}
}

// TestGroupByResume: results of a GROUP BY query resume after a key, as
// continuation tokens need: page by page, every group once.
func TestGroupByResume(t *testing.T) {
	q, err := Parse(`SELECT e.capabilities.softwareDevelopment AS l, COUNT(1) AS n FROM e GROUP BY e.capabilities.softwareDevelopment`)
	if err != nil {
		t.Fatal(err)
	}
	all, err := Exec(context.Background(), q, nil, employees, testNow)
	if err != nil || len(all.Items) != 4 {
		t.Fatalf("%v %v", all.Items, err)
	}
	var from *Resume
	var seen []string
	for range 10 {
		res, err := ExecFrom(context.Background(), q, nil, employees, testNow, from)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Items) == 0 {
			break
		}
		seen = append(seen, string(res.Items[0]))
		from = &Resume{After: res.Key(0)}
	}
	var want []string
	for _, it := range all.Items {
		want = append(want, string(it))
	}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("page by page %v, want %v", seen, want)
	}
}

// sortedItems sorts the items of a JSON array result, for comparing sets.
func sortedItems(arr string) string {
	items := splitTop(strings.TrimSuffix(strings.TrimPrefix(arr, "["), "]"))
	for i := 1; i < len(items); i++ {
		for j := i; j > 0 && items[j] < items[j-1]; j-- {
			items[j], items[j-1] = items[j-1], items[j]
		}
	}
	return strings.Join(items, " ")
}

// splitTop splits JSON text at its top-level commas.
func splitTop(s string) []string {
	var out []string
	depth, start, inStr, esc := 0, 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
