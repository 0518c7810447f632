package cosmosrest_test

import (
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

func TestConflictsFeed(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/t"}}}), 201)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"1","t":"a"}`, "x-ms-documentdb-partitionkey", `["a"]`), 201)

	r := must(t, c.do("GET", "/dbs/db/colls/c/conflicts", nil), 200)
	m := r.json(t)
	if docs := documents(t, r, "Conflicts"); len(docs) != 0 || m["_count"] != 0.0 || m["_rid"] == "" || r.header.Get("x-ms-item-count") != "0" {
		t.Errorf("conflicts feed: %s", r.body)
	}
	q := must(t, c.do("POST", "/dbs/db/colls/c/conflicts", map[string]any{"query": "SELECT * FROM c WHERE c.id = @id",
		"parameters": []any{map[string]any{"name": "@id", "value": "1"}}},
		"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"), 200)
	if docs := documents(t, q, "Conflicts"); len(docs) != 0 {
		t.Errorf("conflicts query: %s", q.body)
	}
	// A query is checked like any other.
	must(t, c.do("POST", "/dbs/db/colls/c/conflicts", map[string]any{"query": "SELEC nothing"},
		"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"), 400)
	// No conflict exists, to read or to delete.
	for _, m := range []string{"GET", "DELETE"} {
		if r := must(t, c.do(m, "/dbs/db/colls/c/conflicts/x", nil, "x-ms-documentdb-partitionkey", `["a"]`), 404); r.header.Get("x-ms-substatus") != "0" {
			t.Errorf("%s conflict: substatus %s", m, r.header.Get("x-ms-substatus"))
		}
	}
	// A delete names the conflict's partition key, as the service's must.
	if r := c.do("DELETE", "/dbs/db/colls/c/conflicts/x", nil); r.status != 400 || !strings.Contains(string(r.body), "PartitionKey value must be supplied") {
		t.Errorf("delete without a partition key: %d %s", r.status, r.body)
	}
	// The container must exist.
	for _, p := range []string{"/dbs/db/colls/none/conflicts", "/dbs/none/colls/c/conflicts", "/dbs/db/colls/none/conflicts/x"} {
		if r := must(t, c.do("GET", p, nil), 404); r.header.Get("x-ms-substatus") != "1003" {
			t.Errorf("GET %s: substatus %s, want 1003", p, r.header.Get("x-ms-substatus"))
		}
	}
	// Conflicts are not created or replaced by clients.
	must(t, c.do("POST", "/dbs/db/colls/c/conflicts", `{"id":"x"}`), 405)
	must(t, c.do("PUT", "/dbs/db/colls/c/conflicts/x", `{"id":"x"}`), 405)
}
