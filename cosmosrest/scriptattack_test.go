package cosmosrest_test

import (
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// Tests written as an attacker with the right to create and run stored
// procedures would write them.

func TestSprocCannotEscape(t *testing.T) {
	_, create, exec := sprocServer(t, cosmosrest.Config{})
	create("probe", `function probe() {
		function attempt(f) { try { var v = f(); return v === undefined ? "undefined" : typeof v; } catch (e) { return "threw"; } }
		getContext().getResponse().setBody([
			attempt(function () { return this.constructor.constructor("return process")(); }),
			attempt(function () { return getContext.constructor("return require")(); }),
			attempt(function () { return require("fs"); }),
			attempt(function () { return eval("process"); }),
			attempt(function () { return setTimeout; }),
			attempt(function () { return (0, eval)("this").process; }),
			attempt(function () { return Function("return globalThis")().process; }),
		]);
	}`)
	r := must(t, exec("probe", "a", nil), 200)
	for _, got := range strings.Split(strings.Trim(string(r.body), "[]"), ",") {
		if got != `"undefined"` && got != `"threw"` {
			t.Errorf("an escape attempt got something: %s", r.body)
			break
		}
	}
}

func TestSprocPollutionDoesNotCarryOver(t *testing.T) {
	_, create, exec := sprocServer(t, cosmosrest.Config{})
	create("pollute", `function pollute() {
		Object.prototype.isAdmin = true;
		Array.prototype.map = function () { return ["pwned"]; };
		String.prototype.toString = function () { return "pwned"; };
		globalThis.getContext = function () { throw new Error("pwned"); };
	}`)
	create("check", `function check() {
		getContext().getResponse().setBody([({}).isAdmin === undefined, [1].map(function (x) { return x + 1; })[0], typeof globalThis.pwned]);
	}`)
	must(t, exec("pollute", "a", nil), 200)
	if r := must(t, exec("check", "a", nil), 200); string(r.body) != `[true,2,"undefined"]` {
		t.Errorf("the next execution saw the pollution: %s", r.body)
	}
}

func TestSprocCannotReachAnotherPartition(t *testing.T) {
	c, create, exec := sprocServer(t, cosmosrest.Config{})
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"secret","pk":"b","v":"s3cr3t"}`, "x-ms-documentdb-partitionkey", `["b"]`), 201)
	create("snoop", `function snoop() {
		var c = __, got = {};
		c.queryDocuments(c.getSelfLink(), "SELECT * FROM c WHERE c.pk = 'b'", function (err, docs) {
			got.query = err ? err.number : docs.length;
			c.readDocument(c.getAltLink() + "/docs/secret", function (err) {
				got.read = err ? err.number : 200;
				c.readDocuments("dbs/db/colls/c", {pageSize: -1}, function (err, docs) {
					got.feed = err ? err.number : docs.length;
					c.upsertDocument(c.getSelfLink(), {id: "secret", pk: "b", v: "overwritten"}, function (err) {
						got.write = err ? err.number : 200;
						c.readDocument("dbs/db/colls/other/docs/secret", function (err) {
							got.otherColl = err ? err.number : 200;
							getContext().getResponse().setBody(got);
						});
					});
				});
			});
		});
	}`)
	r := must(t, exec("snoop", "a", nil), 200)
	if string(r.body) != `{"query":0,"read":404,"feed":0,"write":400,"otherColl":400}` {
		t.Errorf("the procedure reached partition b: %s", r.body)
	}
	if b := must(t, c.do("GET", "/dbs/db/colls/c/docs/secret", nil, "x-ms-documentdb-partitionkey", `["b"]`), 200).json(t); b["v"] != "s3cr3t" {
		t.Errorf("secret: %v", b)
	}
}

// TestServerStaysResponsive runs runaway procedures (a loop, an allocation
// loop) while another client reads: its reads stay quick, and the
// runaways are stopped within their budget.
func TestServerStaysResponsive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about two seconds")
	}
	c, create, exec := sprocServer(t, cosmosrest.Config{ScriptTimeout: time.Second})
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"x","pk":"a"}`, "x-ms-documentdb-partitionkey", `["a"]`), 201)
	create("loop", `function loop() { while (true) {} }`)
	reads := func(n int) []time.Duration {
		var ds []time.Duration
		for range n {
			start := time.Now()
			must(t, c.do("GET", "/dbs/db/colls/c/docs/x", nil, "x-ms-documentdb-partitionkey", `["a"]`), 200)
			ds = append(ds, time.Since(start))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds
	}
	idle := reads(50)
	done := make(chan time.Duration, 2)
	for range 2 {
		go func() {
			start := time.Now()
			r := exec("loop", "a", nil)
			if r.status != 408 {
				t.Errorf("runaway: %d %s", r.status, r.body)
			}
			done <- time.Since(start)
		}()
	}
	time.Sleep(50 * time.Millisecond)
	busy := reads(50)
	for range 2 {
		// One runs at a time on two cores: the second waits for the first.
		if d := <-done; d > 4*time.Second {
			t.Errorf("a runaway ran %v, past twice its 1 s budget and grace", d)
		}
	}
	p99 := func(ds []time.Duration) time.Duration { return ds[len(ds)*99/100] }
	t.Logf("point read p99: idle %v, with two runaway procedures %v", p99(idle), p99(busy))
	if p99(busy) > 500*time.Millisecond {
		t.Errorf("point reads slowed to p99 %v while runaways ran (idle %v)", p99(busy), p99(idle))
	}
}

// TestPartitionTokenCannotChangeScripts: a permission on one partition key
// does not change the container's scripts, which run in every partition
// (a trigger or procedure others run in theirs, a UDF over every
// partition's items); it still reads them and runs procedures in its
// partition.
func TestPartitionTokenCannotChangeScripts(t *testing.T) {
	c, create, exec := sprocServer(t, cosmosrest.Config{})
	create("noop", `function noop() { getContext().getResponse().setBody(1); }`)
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "mallory"}), 201)
	perm := map[string]any{"id": "p", "permissionMode": "All", "resource": "dbs/db/colls/c", "resourcePartitionKey": []any{"a"}}
	tok := must(t, c.do("POST", "/dbs/db/users/mallory/permissions", perm), 201).json(t)["_token"].(string)
	as := []string{"Authorization", url.QueryEscape(tok)}
	evil := `function noop() { var c = __; c.queryDocuments(c.getSelfLink(), "SELECT * FROM c", function (e, docs) { docs.forEach(function (d) { c.deleteDocument(d._self); }); }); }`
	for _, r := range []struct{ method, path string }{
		{"POST", "/dbs/db/colls/c/sprocs"},
		{"PUT", "/dbs/db/colls/c/sprocs/noop"},
		{"DELETE", "/dbs/db/colls/c/sprocs/noop"},
		{"POST", "/dbs/db/colls/c/triggers"},
		{"POST", "/dbs/db/colls/c/udfs"},
	} {
		body := map[string]any{"id": "noop", "body": evil, "triggerType": "Pre", "triggerOperation": "All"}
		if got := c.do(r.method, r.path, body, as...); got.status != 403 {
			t.Errorf("%s %s under a token of one partition key: %d %s", r.method, r.path, got.status, got.body)
		}
	}
	must(t, c.do("GET", "/dbs/db/colls/c/sprocs/noop", nil, as...), 200)
	must(t, exec("noop", "a", nil, as...), 200)
	if r := must(t, c.do("GET", "/dbs/db/colls/c/sprocs/noop", nil), 200).json(t); r["body"] == evil {
		t.Error("the token of one partition key replaced the procedure")
	}
}
