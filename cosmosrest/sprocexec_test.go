package cosmosrest_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// sprocServer serves a database "db" with a container "c" partitioned on
// /pk, and returns a function that creates a stored procedure and one
// that runs it in a partition.
func sprocServer(t *testing.T, cfg cosmosrest.Config) (*client, func(id, body string), func(id, pk string, args any, hdr ...string) response) {
	_, c := testServer(t, cfg)
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}, "defaultTtl": -1}), 201)
	create := func(id, body string) {
		t.Helper()
		must(t, c.do("POST", "/dbs/db/colls/c/sprocs", map[string]any{"id": id, "body": body}), 201)
	}
	exec := func(id, pk string, args any, hdr ...string) response {
		t.Helper()
		return c.do("POST", "/dbs/db/colls/c/sprocs/"+id, args, append([]string{"x-ms-documentdb-partitionkey", fmt.Sprintf(`[%q]`, pk)}, hdr...)...)
	}
	return c, create, exec
}

const bulkCreate = `function bulkCreate(pk, n) {
	var c = getContext().getCollection(), done = 0;
	for (var i = 0; i < n; i++) {
		if (!c.createDocument(c.getSelfLink(), {id: "item" + i, pk: pk, i: i}, function (err) { if (err) throw err; done++; })) break;
	}
	getContext().getResponse().setBody({accepted: i});
}`

func TestSprocCommitsItsWritesTogether(t *testing.T) {
	c, create, exec := sprocServer(t, cosmosrest.Config{})
	create("bulk", bulkCreate)
	r := must(t, exec("bulk", "a", []any{"a", 150}), 200)
	if string(r.body) != `{"accepted":100}` {
		t.Errorf("body %s: want the batch limit's 100 accepted", r.body)
	}
	if ch := r.header.Get("x-ms-request-charge"); ch == "" || ch == "0" {
		t.Errorf("charge %q", ch)
	}
	for _, id := range []string{"item0", "item99"} {
		must(t, c.do("GET", "/dbs/db/colls/c/docs/"+id, nil, "x-ms-documentdb-partitionkey", `["a"]`), 200)
	}
	must(t, c.do("GET", "/dbs/db/colls/c/docs/item100", nil, "x-ms-documentdb-partitionkey", `["a"]`), 404)

	// A procedure that throws after writing leaves nothing.
	create("throws", `function throws() {
		var c = __;
		c.createDocument(c.getSelfLink(), {id: "x1", pk: "a"});
		c.createDocument(c.getSelfLink(), {id: "x2", pk: "a"}, function () { throw new Error("boom"); });
	}`)
	r = must(t, exec("throws", "a", []any{}), 400)
	if m := r.json(t)["message"].(string); !strings.Contains(m, "Error: boom") || !strings.Contains(m, "Encountered exception") {
		t.Errorf("message %q", m)
	}
	must(t, c.do("GET", "/dbs/db/colls/c/docs/x1", nil, "x-ms-documentdb-partitionkey", `["a"]`), 404)

	// An operation's error thrown on: 400, its status as substatus.
	create("conflict", `function conflict() { __.createDocument(__.getSelfLink(), {id: "item0", pk: "a"}, function (err) { if (err) throw err; }); }`)
	r = must(t, exec("conflict", "a", nil), 400)
	if r.header.Get("x-ms-substatus") != "409" {
		t.Errorf("substatus %q, want 409", r.header.Get("x-ms-substatus"))
	}

	// No body set: "".
	create("noop", `function noop() {}`)
	if r := must(t, exec("noop", "a", nil), 200); string(r.body) != `""` {
		t.Errorf("body %s", r.body)
	}
	must(t, exec("none", "a", nil), 404)
	must(t, exec("noop", "a", `{"not":"an array"}`), 400)
	must(t, c.do("POST", "/dbs/db/colls/c/sprocs/noop", []any{}), 400) // no partition key
}

func TestSprocReadsItsWritesAndNoExpiredItem(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	c, create, exec := sprocServer(t, cosmosrest.Config{Clock: clock})
	pkA := []string{"x-ms-documentdb-partitionkey", `["a"]`}
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"old","pk":"a","ttl":10}`, pkA...), 201)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"live","pk":"a"}`, pkA...), 201)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"other","pk":"b"}`, "x-ms-documentdb-partitionkey", `["b"]`), 201)
	clock.Advance(11 * time.Second)
	create("view", `function view() {
		var c = __, seen = {};
		c.createDocument(c.getSelfLink(), {id: "new", pk: "a"}, function (err) {
			if (err) throw err;
			c.readDocument(c.getAltLink() + "/docs/old", function (err) {
				seen.old = err ? err.number : 200;
				c.queryDocuments(c.getSelfLink(), "SELECT VALUE r.id FROM r", function (err, ids) {
					if (err) throw err;
					seen.ids = ids;
					c.readDocuments(c.getSelfLink(), {pageSize: 1}, function (err, docs, opts) {
						seen.page = docs.length; seen.more = !!opts.continuation;
						getContext().getResponse().setBody(seen);
					});
				});
			});
		});
	}`)
	r := must(t, exec("view", "a", nil), 200)
	var got struct {
		Old  int
		IDs  []string
		Page int
		More bool
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Old != 404 || strings.Join(got.IDs, ",") != "live,new" || got.Page != 1 || !got.More {
		t.Errorf("the procedure saw %s: want old expired (404), its own new item, nothing of partition b", r.body)
	}
}

func TestSprocBudgets(t *testing.T) {
	c, create, exec := sprocServer(t, cosmosrest.Config{ScriptTimeout: 100 * time.Millisecond})
	create("loop", `function loop() { __.createDocument(__.getSelfLink(), {id: "w", pk: "a"}); while (true) {} }`)
	create("recurse", `function recurse() { function r() { return r() + 1; } r(); }`)
	create("polite", `function polite() {
		var n = 0;
		while (__.readDocuments(__.getSelfLink(), function () {})) n++;
		getContext().getResponse().setBody(n > 0);
	}`)
	start := time.Now()
	r := must(t, exec("loop", "a", nil), 408)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("an infinite loop ran %v", d)
	}
	must(t, c.do("GET", "/dbs/db/colls/c/docs/w", nil, "x-ms-documentdb-partitionkey", `["a"]`), 404)
	_ = r
	if r := must(t, exec("recurse", "a", nil), 400); !strings.Contains(string(r.body), "call stack") {
		t.Errorf("recursion: %s", r.body)
	}
	if r := must(t, exec("polite", "a", nil), 200); string(r.body) != "true" {
		t.Errorf("polite: %s", r.body)
	}
}

func TestSprocAllocationBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates some 50 MB")
	}
	c, create, exec := sprocServer(t, cosmosrest.Config{ScriptTimeout: 20 * time.Second, ScriptMaxHeapGrowth: 16 << 20})
	create("bomb", `function bomb() { __.createDocument(__.getSelfLink(), {id: "w", pk: "a"}); var a = []; while (true) a.push(new Array(1e6)); }`)
	if r := must(t, exec("bomb", "a", nil), 400); !strings.Contains(string(r.body), "memory") {
		t.Errorf("bomb: %s", r.body)
	}
	must(t, c.do("GET", "/dbs/db/colls/c/docs/w", nil, "x-ms-documentdb-partitionkey", `["a"]`), 404)
}

func TestSprocLogging(t *testing.T) {
	_, create, exec := sprocServer(t, cosmosrest.Config{})
	create("logs", `function logs(x) { console.log("got", x); console.log("done & dusted"); }`)
	r := must(t, exec("logs", "a", []any{42}, "x-ms-documentdb-script-enable-logging", "true"), 200)
	got, err := url.QueryUnescape(r.header.Get("x-ms-documentdb-script-log-results"))
	if err != nil || got != "got 42\r\ndone & dusted" { // entries apart, none after the last
		t.Errorf("log %q (%q), %v", got, r.header.Get("x-ms-documentdb-script-log-results"), err)
	}
	if r := must(t, exec("logs", "a", []any{42}), 200); r.header.Get("x-ms-documentdb-script-log-results") != "" {
		t.Error("a log without x-ms-documentdb-script-enable-logging")
	}
}

// TestSprocSerializable runs increments of one counter concurrently: each
// that succeeds counts once, as if they ran one after another.
func TestSprocSerializable(t *testing.T) {
	c, create, exec := sprocServer(t, cosmosrest.Config{})
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"n","pk":"a","n":0}`, "x-ms-documentdb-partitionkey", `["a"]`), 201)
	create("inc", `function inc() {
		var c = __;
		c.readDocument(c.getAltLink() + "/docs/n", function (err, d) {
			if (err) throw err;
			d.n++;
			c.replaceDocument(d._self, d, function (err) { if (err) throw err; });
		});
	}`)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				r := exec("inc", "a", nil)
				mu.Lock()
				switch r.status {
				case 200:
					ok++
				case 449:
				default:
					t.Errorf("status %d: %s", r.status, r.body)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var d struct{ N int }
	_ = json.Unmarshal(must(t, c.do("GET", "/dbs/db/colls/c/docs/n", nil, "x-ms-documentdb-partitionkey", `["a"]`), 200).body, &d)
	if d.N != ok {
		t.Errorf("n = %d after %d successful increments", d.N, ok)
	}
}

// TestSprocResourceTokens: a Read token runs a procedure that reads, not
// one that writes; a token on one partition key runs procedures only in
// it; an All token runs both.
func TestSprocResourceTokens(t *testing.T) {
	c, create, exec := sprocServer(t, cosmosrest.Config{})
	create("bulk", bulkCreate)
	create("noop", `function noop() { getContext().getResponse().setBody(1); }`)
	token := func(user, mode string, pk any) []string {
		must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": user}), 201)
		body := map[string]any{"id": "p", "permissionMode": mode, "resource": "dbs/db/colls/c"}
		if pk != nil {
			body["resourcePartitionKey"] = pk
		}
		tok := must(t, c.do("POST", "/dbs/db/users/"+user+"/permissions", body), 201).json(t)["_token"].(string)
		return []string{"Authorization", url.QueryEscape(tok)}
	}
	read, all, onePK := token("r", "Read", nil), token("a", "All", nil), token("o", "All", []any{"a"})
	must(t, exec("noop", "a", nil, read...), 200)
	must(t, exec("bulk", "a", []any{"a", 3}, read...), 403)
	must(t, c.do("GET", "/dbs/db/colls/c/docs/item0", nil, "x-ms-documentdb-partitionkey", `["a"]`), 404)
	must(t, c.do("GET", "/dbs/db/colls/c/sprocs/bulk", nil, read...), 200)
	must(t, c.do("DELETE", "/dbs/db/colls/c/sprocs/bulk", nil, read...), 403)
	must(t, c.do("POST", "/dbs/db/colls/c/sprocs", map[string]any{"id": "x", "body": "function x() {}"}, read...), 403)
	must(t, exec("bulk", "a", []any{"a", 3}, all...), 200)
	must(t, exec("bulk", "a", []any{"a", 3}, onePK...), 400) // conflicts: it ran, in a
	must(t, exec("noop", "b", nil, onePK...), 403)
}
