package cosmosrest_test

import (
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestPartitionKeyObjectIsUndefined: a document with an object or an array
// at its container's partition key path has the undefined key, as the
// service extracts it: created, read, queried, batched and deleted by
// x-ms-documentdb-partitionkey [{}], and refused (400, the mismatch) under
// any other key. The header itself takes {} alone of the objects.
func TestPartitionKeyObjectIsUndefined(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c",
		"partitionKey": map[string]any{"paths": []string{"/address"}, "kind": "Hash"}}), 201)
	const coll = "/dbs/db/colls/c"
	hdr := func(pk string) []string { return []string{"x-ms-documentdb-partitionkey", pk} }
	for _, tc := range []struct {
		id, address string
		other       string // a key the document is not under
	}{
		{"object", `{"street":"1 Microsoft Way","state":"WA"}`, `["WA"]`},
		{"empty", `{}`, `[null]`},
		{"array", `["WA"]`, `["WA"]`},
		{"nested", `[{"state":"WA"}]`, `[null]`},
	} {
		doc := `{"id":"` + tc.id + `","address":` + tc.address + `}`
		r := must(t, c.do("POST", coll+"/docs", doc, hdr(tc.other)...), 400)
		if !strings.Contains(string(r.body), "PartitionKey extracted from document doesn't match") {
			t.Errorf("%s under %s: %s", tc.id, tc.other, r.body)
		}
		must(t, c.do("POST", coll+"/docs", doc, hdr(`[{}]`)...), 201)
		r = must(t, c.do("GET", coll+"/docs/"+tc.id, nil, hdr(`[ { } ]`)...), 200)
		if got := r.json(t)["id"]; got != tc.id {
			t.Errorf("read %s: %s", tc.id, r.body)
		}
		must(t, c.do("GET", coll+"/docs/"+tc.id, nil, hdr(tc.other)...), 404)
		r = must(t, c.query(coll, "SELECT VALUE c.id FROM c WHERE c.id = @id",
			[]map[string]any{{"name": "@id", "value": tc.id}}, hdr(`[{}]`)...), 200)
		if got := documents(t, r, "Documents"); len(got) != 1 || string(got[0]) != `"`+tc.id+`"` {
			t.Errorf("query %s under [{}]: %s", tc.id, r.body)
		}
		r = must(t, c.do("POST", coll+"/docs", `[{"operationType":"Replace","id":"`+tc.id+`","resourceBody":`+doc+`}]`,
			batchHeaders(`[{}]`)...), 200)
		if got := statuses(batchResults(t, r)); got != "200" {
			t.Errorf("batch replace of %s under [{}]: %s", tc.id, r.body)
		}
		must(t, c.do("DELETE", coll+"/docs/"+tc.id, nil, hdr(`[{}]`)...), 204)
		must(t, c.do("GET", coll+"/docs/"+tc.id, nil, hdr(`[{}]`)...), 404)
	}
	// An object other than {}, or an array, is no partition key value.
	for _, pk := range []string{`[{"state":"WA"}]`, `[["WA"]]`, `[[]]`} {
		must(t, c.do("GET", coll+"/docs/object", nil, hdr(pk)...), 400)
	}
}
