package cosmosrest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

const echoSproc = `function echo(x) { getContext().getResponse().setBody(x); }`

// TestScriptResources covers stored procedures, triggers and UDFs as REST
// resources: create, read, list, query, replace, delete, their checks, and
// their durability with the container.
func TestScriptResources(t *testing.T) {
	dir := t.TempDir()
	h, c := testServer(t, cosmosrest.Config{Dir: dir})
	createDBColl(t, c)

	sp := must(t, c.do("POST", "/dbs/db/colls/c/sprocs", map[string]any{"id": "echo", "body": echoSproc}), 201)
	m := sp.json(t)
	if m["id"] != "echo" || m["body"] != echoSproc || m["_rid"] == "" || !strings.HasPrefix(m["_self"].(string), "dbs/") ||
		!strings.Contains(m["_self"].(string), "/sprocs/") || m["_etag"] == nil || m["_ts"] == nil || sp.header.Get("etag") != m["_etag"] {
		t.Errorf("sproc: %v (etag %q)", m, sp.header.Get("etag"))
	}
	must(t, c.do("POST", "/dbs/db/colls/c/sprocs", map[string]any{"id": "echo", "body": echoSproc}), 409)
	must(t, c.do("POST", "/dbs/db/colls/c/sprocs", map[string]any{"id": "echo", "body": echoSproc}, "x-ms-documentdb-is-upsert", "true"), 200)
	tr := must(t, c.do("POST", "/dbs/db/colls/c/triggers", map[string]any{"id": "stamp", "body": `function stamp() {}`, "triggerType": "pre", "triggerOperation": "create"}), 201).json(t)
	if tr["triggerType"] != "pre" || tr["triggerOperation"] != "create" { // as sent
		t.Errorf("trigger: %v", tr)
	}
	must(t, c.do("POST", "/dbs/db/colls/c/udfs", map[string]any{"id": "tax", "body": `function tax(x) { return x * 0.1; }`}), 201)
	if u := must(t, c.do("GET", "/dbs/db/colls/c", nil), 200).header.Get("x-ms-resource-usage"); !strings.HasPrefix(u, "functions=1;storedProcedures=1;triggers=1;") {
		t.Errorf("x-ms-resource-usage %q", u)
	}

	// Refused: each changes nothing.
	for _, tc := range []struct {
		path string
		body any
	}{
		{"/dbs/db/colls/c/udfs", map[string]any{"id": "bad", "body": "function ( {"}}, // a sproc's is refused when it runs
		{"/dbs/db/colls/c/sprocs", map[string]any{"id": "bad"}},
		{"/dbs/db/colls/c/sprocs", map[string]any{"id": "a/b", "body": echoSproc}},
		{"/dbs/db/colls/c/sprocs", `not json`},
		{"/dbs/db/colls/c/triggers", map[string]any{"id": "bad", "body": echoSproc, "triggerType": "During", "triggerOperation": "All"}},
		{"/dbs/db/colls/c/triggers", map[string]any{"id": "bad", "body": echoSproc, "triggerType": "Pre", "triggerOperation": "Read"}},
		{"/dbs/db/colls/c/triggers", map[string]any{"id": "bad", "body": echoSproc}},
	} {
		if r := c.do("POST", tc.path, tc.body); r.status != 400 {
			t.Errorf("POST %s %v: %d %s, want 400", tc.path, tc.body, r.status, r.body)
		}
	}
	must(t, c.do("POST", "/dbs/db/colls/none/sprocs", map[string]any{"id": "x", "body": echoSproc}), 404)
	must(t, c.do("GET", "/dbs/db/colls/c/sprocs/none", nil), 404)
	must(t, c.do("GET", "/dbs/db/colls/c/sprocs/stamp", nil), 404) // a trigger's id, not a sproc's

	if r := must(t, c.do("GET", "/dbs/db/colls/c/sprocs", nil), 200); len(documents(t, r, "StoredProcedures")) != 1 {
		t.Errorf("sprocs: %s", r.body)
	}
	if r := must(t, c.do("GET", "/dbs/db/colls/c/triggers", nil), 200); len(documents(t, r, "Triggers")) != 1 {
		t.Errorf("triggers: %s", r.body)
	}
	q := must(t, c.do("POST", "/dbs/db/colls/c/udfs", map[string]any{"query": "SELECT * FROM root r WHERE r.id = @id", "parameters": []map[string]any{{"name": "@id", "value": "tax"}}},
		"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"), 200)
	if docs := documents(t, q, "UserDefinedFunctions"); len(docs) != 1 {
		t.Errorf("udf query: %s", q.body)
	}

	// Replace: If-Match, a rename, a new ETag.
	old := must(t, c.do("GET", "/dbs/db/colls/c/sprocs/echo", nil), 200).json(t)["_etag"].(string)
	must(t, c.do("PUT", "/dbs/db/colls/c/sprocs/echo", map[string]any{"id": "echo", "body": echoSproc}, "If-Match", `"stale"`), 412)
	r := must(t, c.do("PUT", "/dbs/db/colls/c/sprocs/echo", map[string]any{"id": "echo2", "body": echoSproc}, "If-Match", old), 200).json(t)
	if r["_etag"] == old || r["id"] != "echo2" {
		t.Errorf("replaced: %v", r)
	}
	must(t, c.do("GET", "/dbs/db/colls/c/sprocs/echo", nil), 404)
	must(t, c.do("DELETE", "/dbs/db/colls/c/udfs/tax", nil), 204)
	must(t, c.do("DELETE", "/dbs/db/colls/c/udfs/tax", nil), 404)

	// They survive a restart.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	_, c = testServer(t, cosmosrest.Config{Dir: dir})
	must(t, c.do("GET", "/dbs/db/colls/c/sprocs/echo2", nil), 200)
	must(t, c.do("GET", "/dbs/db/colls/c/triggers/stamp", nil), 200)
	must(t, c.do("GET", "/dbs/db/colls/c/udfs/tax", nil), 404)

	// A deleted container's scripts go with it.
	must(t, c.do("DELETE", "/dbs/db/colls/c", nil), 204)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	must(t, c.do("GET", "/dbs/db/colls/c/sprocs/echo2", nil), 404)
	if r := must(t, c.do("GET", "/dbs/db/colls/c/triggers", nil), 200); len(documents(t, r, "Triggers")) != 0 {
		t.Errorf("triggers of a deleted container: %s", r.body)
	}
}

func TestScriptQuota(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c"}), 201)
	for i := range 25 {
		must(t, c.do("POST", "/dbs/db/colls/c/udfs", map[string]any{"id": "f" + string(rune('a'+i)), "body": `function f() {}`}), 201)
	}
	must(t, c.do("POST", "/dbs/db/colls/c/udfs", map[string]any{"id": "one-too-many", "body": `function f() {}`}), 403)
}

// TestDeletedContainersScriptsDoNotComeBack: a crash after a container's
// delete and before its scripts' removal is saved leaves them in the
// database's scripts file; a container created again under the same id
// after the restart must not have them.
func TestDeletedContainersScriptsDoNotComeBack(t *testing.T) {
	dir := t.TempDir()
	h, c := testServer(t, cosmosrest.Config{Dir: dir})
	createDB(t, c, "db")
	coll := map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}
	must(t, c.do("POST", "/dbs/db/colls", coll), 201)
	must(t, c.do("POST", "/dbs/db/colls/c/sprocs", map[string]any{"id": "old", "body": echoSproc}), 201)
	file := filepath.Join(dir, dbDir("db"), "scripts.json")
	saved, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.do("DELETE", "/dbs/db/colls/c", nil), 204)
	// The crash: the scripts file as it was before the delete.
	if err := os.WriteFile(file, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	c = restartFront(t, h, c, dir)
	must(t, c.do("POST", "/dbs/db/colls", coll), 201)
	must(t, c.do("GET", "/dbs/db/colls/c/sprocs/old", nil), 404)
}
