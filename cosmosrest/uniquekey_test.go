package cosmosrest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// A container's uniqueKeyPolicy is taken on create and returned as sent;
// a duplicate in a partition is a 409 in every kind of write, a replace
// keeps the policy and refuses another.
func TestUniqueKeyPolicy(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	policy := map[string]any{"uniqueKeys": []any{map[string]any{"paths": []string{"/email"}}, map[string]any{"paths": []string{"/first", "/last"}}}}
	r := must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "u", "partitionKey": map[string]any{"paths": []string{"/pk"}},
		"uniqueKeyPolicy": policy}), 201)
	want, _ := json.Marshal(policy)
	for _, got := range []response{r, must(t, c.do("GET", "/dbs/db/colls/u", nil), 200)} {
		if b, _ := json.Marshal(got.json(t)["uniqueKeyPolicy"]); string(b) != string(want) {
			t.Errorf("uniqueKeyPolicy %s, want %s", b, want)
		}
	}
	plain := must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "plain"}), 201)
	if b, _ := json.Marshal(plain.json(t)["uniqueKeyPolicy"]); string(b) != `{"uniqueKeys":[]}` {
		t.Errorf("the default uniqueKeyPolicy is %s", b)
	}

	coll := "/dbs/db/colls/u"
	ada := []string{"x-ms-documentdb-partitionkey", `["ada"]`}
	must(t, c.do("POST", coll+"/docs", `{"id":"1","pk":"ada","email":"a@x","first":"A","last":"L"}`, ada...), 201)
	dup := must(t, c.do("POST", coll+"/docs", `{"id":"2","pk":"ada","email":"a@x"}`, ada...), 409)
	if !strings.Contains(string(dup.body), "Unique index constraint violation.") {
		t.Errorf("409 body: %s", dup.body)
	}
	must(t, c.do("POST", coll+"/docs", `{"id":"2","pk":"ada","email":"b@x","first":"A","last":"M"}`, ada...), 201)
	must(t, c.do("POST", coll+"/docs", `{"id":"2","pk":"bob","email":"a@x"}`, "x-ms-documentdb-partitionkey", `["bob"]`), 201)
	must(t, c.do("PUT", coll+"/docs/2", `{"id":"2","pk":"ada","email":"b@x","first":"A","last":"L"}`, ada...), 409)
	must(t, c.do("POST", coll+"/docs", `{"id":"2","pk":"ada","email":"a@x"}`, append(ada, "x-ms-documentdb-is-upsert", "True")...), 409)
	must(t, c.do("PATCH", coll+"/docs/2", map[string]any{"operations": []any{map[string]any{"op": "set", "path": "/email", "value": "a@x"}}}, ada...), 409)

	// A transactional batch fails whole; bulk fails the one operation.
	batch := `[{"operationType":"Create","resourceBody":{"id":"3","pk":"ada","email":"c@x"}},
		{"operationType":"Create","resourceBody":{"id":"4","pk":"ada","email":"c@x"}}]`
	r = c.do("POST", coll+"/docs", batch, append(ada, "x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True")...)
	if got := statuses(batchResults(t, r)); got != "424 409" {
		t.Errorf("batch statuses %s: %s", got, r.body)
	}
	must(t, c.do("GET", coll+"/docs/3", nil, ada...), 404)
	bulk := `[{"operationType":"Create","partitionKey":"[\"ada\"]","resourceBody":{"id":"3","pk":"ada","email":"c@x"}},
		{"operationType":"Create","partitionKey":"[\"ada\"]","resourceBody":{"id":"4","pk":"ada","email":"c@x"}}]`
	r = must(t, c.do("POST", coll+"/docs", bulk, bulkHeaders()...), 207)
	if got := statuses(batchResults(t, r)); got != "201 409" {
		t.Errorf("bulk statuses %s: %s", got, r.body)
	}

	// Replace: without the policy it is kept; another is refused.
	cur := must(t, c.do("GET", coll, nil), 200).json(t)
	delete(cur, "uniqueKeyPolicy")
	r = must(t, c.do("PUT", coll, cur), 200)
	if b, _ := json.Marshal(r.json(t)["uniqueKeyPolicy"]); string(b) != string(want) {
		t.Errorf("after a replace without it, uniqueKeyPolicy %s", b)
	}
	cur["uniqueKeyPolicy"] = map[string]any{"uniqueKeys": []any{map[string]any{"paths": []string{"/phone"}}}}
	must(t, c.do("PUT", coll, cur), 400)
	must(t, c.do("POST", coll+"/docs", `{"id":"5","pk":"ada","email":"a@x"}`, ada...), 409)
}

// A stored procedure's writes break a unique key policy as others do: the
// procedure fails with the policy's 409 (not retried as a concurrent
// write) and leaves nothing.
func TestUniqueKeySproc(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "u", "partitionKey": map[string]any{"paths": []string{"/pk"}},
		"uniqueKeyPolicy": map[string]any{"uniqueKeys": []any{map[string]any{"paths": []string{"/email"}}}}}), 201)
	must(t, c.do("POST", "/dbs/db/colls/u/sprocs", map[string]any{"id": "two", "body": `function two() {
		var c = getContext().getCollection();
		c.createDocument(c.getSelfLink(), {id: "1", pk: "a", email: "e"});
		c.createDocument(c.getSelfLink(), {id: "2", pk: "a", email: "e"});
	}`}), 201)
	a := []string{"x-ms-documentdb-partitionkey", `["a"]`}
	r := c.do("POST", "/dbs/db/colls/u/sprocs/two", []any{}, a...)
	if r.status != 409 || !strings.Contains(string(r.body), "Unique index constraint violation.") {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	must(t, c.do("GET", "/dbs/db/colls/u/docs/1", nil, a...), 404)
}
