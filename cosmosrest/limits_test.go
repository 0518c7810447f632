package cosmosrest_test

import (
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestQueryTextLimits: a query over the account's advertised length or
// JOINs gets 400 with the service's message.
func TestQueryTextLimits(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/id"}}}), 201)
	long := "SELECT * FROM c WHERE c.id = '" + strings.Repeat("x", 512<<10) + "'"
	joins := "SELECT 1 FROM c JOIN a IN c.a JOIN b IN c.a JOIN d IN c.a JOIN e IN c.a JOIN f IN c.a JOIN g IN c.a"
	for _, tc := range []struct {
		q, msg string
	}{
		{long, "The SQL query text exceeded the maximum limit of 524288 characters."},
		{joins, "The SQL query exceeded the maximum number of joins. The allowed limit is 5."},
	} {
		r := must(t, c.query("/dbs/db/colls/c", tc.q, nil, "x-ms-documentdb-query-enablecrosspartition", "True"), 400)
		if !strings.Contains(string(r.body), tc.msg) {
			t.Errorf("body %.200s, want %q", r.body, tc.msg)
		}
	}
	longest := long[:512<<10-1] + "'" // at the limit
	r := must(t, c.query("/dbs/db/colls/c", longest, nil, "x-ms-documentdb-query-enablecrosspartition", "True"), 200)
	if len(documents(t, r, "Documents")) != 0 {
		t.Errorf("documents of a query that matches none: %s", r.body)
	}
}
