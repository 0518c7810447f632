package cosmosrest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestSystemPropertiesEverywhere checks that every document the front
// returns carries _rid, _self and _attachments, the same as a point read's,
// in containers with a hierarchical key, a key at a nested path, a missing
// key value, and no key at all: create, upsert, replace, patch and read
// responses, SELECT * and SELECT VALUE c results, the read feed, both change
// feeds and batch results; and that projections do not.
func TestSystemPropertiesEverywhere(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	for _, tc := range []struct {
		coll  string
		pkDef map[string]any
		doc   string // id "1"
		pk    string // its x-ms-documentdb-partitionkey, "" for none
	}{
		{"hier", map[string]any{"paths": []string{"/id", "/type"}, "kind": "MultiHash", "version": 2}, `{"id":"1","type":"alpha"}`, `["1","alpha"]`},
		{"nested", map[string]any{"paths": []string{"/a/b"}}, `{"id":"1","a":{"b":2.50}}`, `[2.5]`},
		{"missing", map[string]any{"paths": []string{"/pk"}}, `{"id":"1"}`, `[{}]`},
		{"flat", nil, `{"id":"1"}`, ""},
	} {
		t.Run(tc.coll, func(t *testing.T) {
			def := map[string]any{"id": tc.coll}
			if tc.pkDef != nil {
				def["partitionKey"] = tc.pkDef
			}
			must(t, c.do("POST", "/dbs/db/colls", def), http.StatusCreated)
			coll := "/dbs/db/colls/" + tc.coll
			var pk []string
			if tc.pk != "" {
				pk = []string{"x-ms-documentdb-partitionkey", tc.pk}
			}
			with := func(h ...string) []string { return append(h, pk...) }

			want := must(t, c.do("POST", coll+"/docs", tc.doc, pk...), http.StatusCreated).json(t)
			check := func(what string, got map[string]any) {
				t.Helper()
				for _, k := range []string{"_rid", "_self", "_attachments"} {
					if got[k] == nil || got[k] != want[k] {
						t.Errorf("%s: %s is %v, want %v (the create's)", what, k, got[k], want[k])
					}
				}
			}
			check("read", must(t, c.do("GET", coll+"/docs/1", nil, pk...), http.StatusOK).json(t))
			check("upsert", must(t, c.do("POST", coll+"/docs", tc.doc, with("x-ms-documentdb-is-upsert", "True")...), http.StatusOK).json(t))
			check("replace", must(t, c.do("PUT", coll+"/docs/1", tc.doc, pk...), http.StatusOK).json(t))
			check("patch", must(t, c.do("PATCH", coll+"/docs/1", `{"operations":[{"op":"set","path":"/n","value":1}]}`, pk...), http.StatusOK).json(t))

			one := func(what string, r response, name string) map[string]any {
				t.Helper()
				docs := documents(t, r, name)
				if len(docs) != 1 {
					t.Fatalf("%s: %d documents: %s", what, len(docs), r.body)
				}
				var m map[string]any
				if err := json.Unmarshal(docs[0], &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
			for _, q := range []string{"SELECT * FROM c", "SELECT VALUE r FROM root r WHERE r.id = '1'"} {
				check(q, one(q, must(t, c.query(coll, q, nil, pk...), http.StatusOK), "Documents"))
			}
			if p := one("projection", must(t, c.query(coll, "SELECT c.id, c._ts FROM c", nil, pk...), http.StatusOK), "Documents"); p["_rid"] != nil || len(p) != 2 {
				t.Errorf("a projection: %v", p)
			}
			check("read feed", one("read feed", must(t, c.do("GET", coll+"/docs", nil), http.StatusOK), "Documents"))
			check("change feed", one("change feed", must(t, c.do("GET", coll+"/docs", nil, "A-IM", "Incremental Feed"), http.StatusOK), "Documents"))

			must(t, c.do("DELETE", coll+"/docs/1", nil, pk...), http.StatusNoContent)
			var changes []map[string]map[string]any
			for _, d := range documents(t, must(t, c.do("GET", coll+"/docs", nil, "A-IM", "Full-Fidelity Feed", "x-ms-cosmos-changefeed-wire-format-version", "2021-09-15", "If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT"), http.StatusOK), "Documents") {
				var m map[string]map[string]any
				if err := json.Unmarshal(d, &m); err != nil {
					t.Fatal(err)
				}
				changes = append(changes, m)
			}
			if len(changes) < 2 {
				t.Fatalf("all versions: %v", changes)
			}
			check("all versions, current", changes[0]["current"])
			last := changes[len(changes)-1]
			check("all versions, previous of the delete", last["previous"])
			if len(last["current"]) != 0 {
				t.Errorf("the delete's current: %v", last["current"])
			}

			if tc.pk == "" {
				return
			}
			batch := `[{"operationType":"Create","resourceBody":` + tc.doc + `},{"operationType":"Read","id":"1"}]`
			var results []struct {
				ResourceBody map[string]any `json:"resourceBody"`
			}
			body := must(t, c.do("POST", coll+"/docs", batch, with("x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True")...), http.StatusOK).body
			if err := json.Unmarshal(body, &results); err != nil || len(results) != 2 {
				t.Fatalf("batch: %s", body)
			}
			check("batch create", results[0].ResourceBody)
			check("batch read", results[1].ResourceBody)
		})
	}

	// The same id in another partition is another document, with another _rid.
	beta := must(t, c.do("POST", "/dbs/db/colls/hier/docs", `{"id":"1","type":"beta"}`, "x-ms-documentdb-partitionkey", `["1","beta"]`), http.StatusCreated).json(t)
	alpha := must(t, c.do("GET", "/dbs/db/colls/hier/docs/1", nil, "x-ms-documentdb-partitionkey", `["1","alpha"]`), http.StatusOK).json(t) // the batch's
	if alpha["_rid"] == beta["_rid"] || alpha["_self"] == beta["_self"] {
		t.Errorf("the same _rid in two partitions: %v, %v", alpha, beta)
	}
}

// TestNullTTLRefused checks that a document written with "ttl": null is
// refused with Cosmos DB's 400 and message on every write that carries a
// document (lethe's library takes it as inheriting), and changes nothing.
func TestNullTTLRefused(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "defaultTtl": 60}), http.StatusCreated)
	const coll = "/dbs/db/colls/c"
	must(t, c.do("POST", coll+"/docs", `{"id":"1","ttl":5}`), http.StatusCreated)
	const msg = "The input ttl 'null' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."
	batch := []string{"x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True", "x-ms-documentdb-partitionkey", "[]"}
	for _, w := range []struct {
		method, path, body string
		hdr                []string
	}{
		{"POST", coll + "/docs", `{"id":"2","ttl":null}`, nil},
		{"POST", coll + "/docs", `{"id":"1", "ttl" : null}`, []string{"x-ms-documentdb-is-upsert", "True"}},
		{"PUT", coll + "/docs/1", `{"id":"1","ttl":null}`, nil},
		{"PATCH", coll + "/docs/1", `{"operations":[{"op":"set","path":"/ttl","value":null}]}`, nil},
		{"POST", coll + "/docs", `[{"operationType":"Replace","id":"1","resourceBody":{"id":"1","ttl":null}}]`, batch},
	} {
		r := c.do(w.method, w.path, w.body, w.hdr...)
		var e struct{ Code, Message string }
		_ = json.Unmarshal(r.body, &e)
		if r.status != http.StatusBadRequest || !strings.Contains(e.Message, msg) {
			t.Errorf("%s %s %s: %d %s, want 400 %q", w.method, w.path, w.body, r.status, r.body, msg)
		}
	}
	got := must(t, c.do("GET", coll+"/docs/1", nil), http.StatusOK).json(t)
	if got["ttl"] != 5.0 {
		t.Errorf("the document changed: %v", got)
	}
	must(t, c.do("GET", coll+"/docs/2", nil), http.StatusNotFound)
	// A ttl of null inside another member is no ttl.
	must(t, c.do("POST", coll+"/docs", `{"id":"3","a":{"ttl":null}}`), http.StatusCreated)
}
