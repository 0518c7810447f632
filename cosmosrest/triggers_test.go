package cosmosrest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

func TestTriggers(t *testing.T) {
	c, _, _ := sprocServer(t, cosmosrest.Config{})
	trigger := func(id, typ, op, body string) {
		t.Helper()
		must(t, c.do("POST", "/dbs/db/colls/c/triggers", map[string]any{"id": id, "body": body, "triggerType": typ, "triggerOperation": op}), 201)
	}
	trigger("stamp", "Pre", "All", `function stamp() {
		var r = getContext().getRequest(), d = r.getBody();
		if (!d.name) throw new Error("a name is required");
		d.stamped = r.getOperationType(); r.setBody(d);
	}`)
	trigger("onlyDelete", "Pre", "Delete", `function onlyDelete() {}`)
	trigger("audit", "Post", "All", `function audit() {
		var c = __, d = getContext().getResponse().getBody();
		c.upsertDocument(c.getSelfLink(), {id: "audit-" + d.id, pk: d.pk, of: d.id, etag: d._etag}, function (err) { if (err) throw err; });
	}`)
	trigger("fail", "Post", "Create", `function fail() { throw new Error("post failed"); }`)
	pkA := []string{"x-ms-documentdb-partitionkey", `["a"]`}
	with := func(hdr ...string) []string { return append(append([]string{}, pkA...), hdr...) }
	get := func(id string, status int) response {
		t.Helper()
		return must(t, c.do("GET", "/dbs/db/colls/c/docs/"+id, nil, pkA...), status)
	}

	// A pre-trigger changes the body; a post-trigger writes in the same
	// transaction.
	r := must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"1","pk":"a","name":"ada"}`,
		with("x-ms-documentdb-pre-trigger-include", "stamp", "x-ms-documentdb-post-trigger-include", "audit")...), 201)
	if m := r.json(t); m["stamped"] != "Create" || m["_etag"] == nil || m["_self"] == nil || r.header.Get("etag") == "" {
		t.Errorf("created: %s", r.body)
	}
	if a := get("audit-1", 200).json(t); a["of"] != "1" {
		t.Errorf("audit: %v", a)
	}
	r = must(t, c.do("PUT", "/dbs/db/colls/c/docs/1", `{"id":"1","pk":"a","name":"ada"}`, with("x-ms-documentdb-pre-trigger-include", "stamp", "If-Match", r.header.Get("etag"))...), 200)
	if r.json(t)["stamped"] != "Replace" {
		t.Errorf("replaced: %s", r.body)
	}
	r = must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"1","pk":"a","name":"ada"}`, with("x-ms-documentdb-pre-trigger-include", "stamp", "x-ms-documentdb-is-upsert", "true")...), 200)
	if r.json(t)["stamped"] != "Upsert" {
		t.Errorf("upserted: %s", r.body)
	}

	// A pre-trigger rejects; a post-trigger's failure undoes the write.
	r = must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"2","pk":"a"}`, with("x-ms-documentdb-pre-trigger-include", "stamp")...), 400)
	if !strings.Contains(string(r.body), "a name is required") {
		t.Errorf("rejected: %s", r.body)
	}
	get("2", 404)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"3","pk":"a","name":"x"}`, with("x-ms-documentdb-post-trigger-include", "audit,fail")...), 400)
	get("3", 404)
	get("audit-3", 404)

	// Missing triggers, wrong types, wrong operations; nothing written.
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"4","pk":"a","name":"x"}`, with("x-ms-documentdb-pre-trigger-include", "none")...), 404)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"4","pk":"a","name":"x"}`, with("x-ms-documentdb-pre-trigger-include", "audit")...), 400)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"4","pk":"a","name":"x"}`, with("x-ms-documentdb-pre-trigger-include", "onlyDelete")...), 400)
	must(t, c.do("PUT", "/dbs/db/colls/c/docs/1", `{"id":"1","pk":"a","name":"x"}`, with("x-ms-documentdb-post-trigger-include", "fail")...), 400)
	get("4", 404)

	// A delete runs its triggers; conditions still apply.
	must(t, c.do("DELETE", "/dbs/db/colls/c/docs/1", nil, with("x-ms-documentdb-pre-trigger-include", "onlyDelete", "If-Match", `"stale"`)...), 412)
	must(t, c.do("DELETE", "/dbs/db/colls/c/docs/1", nil, with("x-ms-documentdb-pre-trigger-include", "onlyDelete")...), 204)
	get("1", 404)
	must(t, c.do("DELETE", "/dbs/db/colls/c/docs/1", nil, with("x-ms-documentdb-pre-trigger-include", "onlyDelete")...), 404)
}

func TestUDFsInQueries(t *testing.T) {
	c, _, _ := sprocServer(t, cosmosrest.Config{ScriptTimeout: 200 * time.Millisecond})
	for i := range 5 {
		must(t, c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`{"id":"%d","pk":"a","price":%d}`, i, i*10), "x-ms-documentdb-partitionkey", `["a"]`), 201)
	}
	udf := func(id, body string) {
		must(t, c.do("POST", "/dbs/db/colls/c/udfs", map[string]any{"id": id, "body": body}), 201)
	}
	udf("tax", `function tax(x) { return x * 0.1; }`)
	udf("tag", `function tag(d) { return {id: d.id, big: d.price > 20}; }`)
	udf("none", `function none() {}`)
	udf("leak", `function leak() { globalThis.n = (globalThis.n || 0) + 1; Object.prototype.p = 1; return globalThis.n; }`)
	udf("spin", `function spin() { while (true) {} }`)
	udf("ctx", `function ctx() { return typeof getContext; }`)
	query := func(q string, status int) []json.RawMessage {
		t.Helper()
		r := must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"query": q}, "Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True", "x-ms-documentdb-partitionkey", `["a"]`), status)
		if status != 200 {
			return nil
		}
		return documents(t, r, "Documents")
	}
	join := func(docs []json.RawMessage) string {
		var s []string
		for _, d := range docs {
			s = append(s, string(d))
		}
		return strings.Join(s, ",")
	}
	if got := join(query("SELECT VALUE udf.tax(c.price) FROM c WHERE udf.tax(c.price) >= 2", 200)); got != "2,3,4" {
		t.Errorf("tax: %s", got)
	}
	if got := join(query("SELECT VALUE udf.tag(c) FROM c WHERE c.id = '3'", 200)); got != `{"big":true,"id":"3"}` {
		t.Errorf("tag: %s", got)
	}
	if got := join(query("SELECT udf.none() AS n FROM c WHERE c.id = '1'", 200)); got != `{}` {
		t.Errorf("undefined: %s", got)
	}
	if got := join(query("SELECT VALUE udf.leak() FROM c", 200)); got != "1,1,1,1,1" {
		t.Errorf("calls shared state: %s", got)
	}
	if got := join(query("SELECT VALUE udf.ctx() FROM c WHERE c.id = '1'", 200)); got != `"undefined"` {
		t.Errorf("a UDF got a context: %s", got)
	}
	query("SELECT VALUE udf.missing(c) FROM c", 400)
	query("SELECT VALUE udf.spin() FROM c", 400)
}
