package cosmosrest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// doRID sends a request to a path by resource ids, signed as the legacy
// SDKs sign it (azure-cosmos 3.x's auth.py, .NET's DocumentClient): over
// the resource type and the last resource id of the path, lowercased (the
// resource's for an item, its owner's for a feed).
func (c *client) doRID(method, path string, body any, hdr ...string) response {
	c.t.Helper()
	typ, link := ridResource(path)
	return c.doAs(method, path, typ, link, body, hdr...)
}

// ridResource is the resource type and link a request by resource ids is
// signed over.
func ridResource(path string) (string, string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	n := len(segs)
	if n%2 == 0 {
		return segs[n-2], strings.ToLower(segs[n-1])
	}
	return segs[n-1], strings.ToLower(segs[n-2])
}

// ridFixture is a database "db" with a partitioned container "c" holding
// two documents of id "d1" (partition keys "p1" and "p2"), a user "u" with
// a permission "p" on the container, and one script of each kind.
func ridFixture(t *testing.T, c *client) {
	t.Helper()
	createDBColl(t, c)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "other", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	for _, pk := range []string{"p1", "p2"} {
		must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "d1", "pk": pk}, "x-ms-documentdb-partitionkey", fmt.Sprintf(`[%q]`, pk)), 201)
	}
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "u"}), 201)
	must(t, c.do("POST", "/dbs/db/users/u/permissions", map[string]any{"id": "p", "permissionMode": "All", "resource": "dbs/db/colls/c"}), 201)
	must(t, c.do("POST", "/dbs/db/colls/c/sprocs", map[string]any{"id": "s", "body": "function () { getContext().getResponse().setBody(1) }"}), 201)
	must(t, c.do("POST", "/dbs/db/colls/c/triggers", map[string]any{"id": "tr", "body": "function () {}", "triggerType": "Pre", "triggerOperation": "All"}), 201)
	must(t, c.do("POST", "/dbs/db/colls/c/udfs", map[string]any{"id": "f", "body": "function (x) { return x }"}), 201)
}

// selfOf reads the resource at path by name and returns its _self and
// _rid.
func selfOf(t *testing.T, c *client, path string, hdr ...string) (self, rid string) {
	t.Helper()
	m := must(t, c.do("GET", path, nil, hdr...), 200).json(t)
	self, _ = m["_self"].(string)
	rid, _ = m["_rid"].(string)
	if self == "" || rid == "" {
		t.Fatalf("%s has no _self or _rid: %v", path, m)
	}
	return self, rid
}

var p1 = []string{"x-ms-documentdb-partitionkey", `["p1"]`}

// TestResourceIDPaths reads every kind of resource by the path of its
// resource ids (its _self), signed as the legacy SDKs sign it, and gets
// the resource it reads by name; its _rid is the last segment of its
// _self, in the same alphabet.
func TestResourceIDPaths(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	ridFixture(t, c)
	for _, tc := range []struct {
		kind, path string
		hdr        []string
	}{
		{"database", "/dbs/db", nil},
		{"container", "/dbs/db/colls/c", nil},
		{"document", "/dbs/db/colls/c/docs/d1", p1},
		{"user", "/dbs/db/users/u", nil},
		{"permission", "/dbs/db/users/u/permissions/p", nil},
		{"stored procedure", "/dbs/db/colls/c/sprocs/s", nil},
		{"trigger", "/dbs/db/colls/c/triggers/tr", nil},
		{"user-defined function", "/dbs/db/colls/c/udfs/f", nil},
		{"partition key range", "/dbs/db/colls/c/pkranges/0", nil},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			self, rid := selfOf(t, c, tc.path, tc.hdr...)
			segs := strings.Split(strings.Trim(self, "/"), "/")
			if segs[len(segs)-1] != rid || strings.Contains(rid, "/") {
				t.Errorf("_rid %q is not the last segment of _self %q", rid, self)
			}
			for _, path := range []string{"/" + self, "//" + self, "/" + strings.TrimSuffix(self, "/")} {
				got := must(t, c.doRID("GET", path, nil, tc.hdr...), 200).json(t)
				if got["_rid"] != rid || got["_self"] != self {
					t.Errorf("GET %s: _rid %v, _self %v; want %s, %s", path, got["_rid"], got["_self"], rid, self)
				}
			}
			// Signed over the id as it is (not lowercased), the request
			// is not the one the SDKs sign; signed over its path, it is
			// one by name, of a database of that name, which there is
			// not.
			typ, _ := ridResource(self)
			if rid != strings.ToLower(rid) {
				if r := c.doAs("GET", "/"+self, typ, rid, nil, tc.hdr...); r.status != 401 {
					t.Errorf("GET %s signed over %q: %d, want 401", self, rid, r.status)
				}
			}
			if r := c.doAs("GET", "/"+self, typ, strings.Trim(self, "/"), nil, tc.hdr...); r.status != 404 {
				t.Errorf("GET %s signed over its path: %d, want 404", self, r.status)
			}
		})
	}
}

// TestResourceIDPathsWrite changes resources through paths by resource ids,
// as the legacy Python SDK's suite does: a container created in
// //dbs/{rid}/colls/, documents created, queried, replaced and deleted by
// their _self, a procedure run, the partition key ranges read.
func TestResourceIDPathsWrite(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	ridFixture(t, c)
	dbSelf, _ := selfOf(t, c, "/dbs/db")
	collSelf, _ := selfOf(t, c, "/dbs/db/colls/c")
	must(t, c.doRID("POST", "//"+dbSelf+"colls/", map[string]any{"id": "new"}), 201)
	must(t, c.do("GET", "/dbs/db/colls/new", nil), 200)
	if docs := documents(t, must(t, c.doRID("GET", "/"+dbSelf+"colls", nil), 200), "DocumentCollections"); len(docs) != 3 {
		t.Errorf("the containers' feed by resource id holds %d, want 3", len(docs))
	}

	created := must(t, c.doRID("POST", "/"+collSelf+"docs", map[string]any{"id": "d2", "pk": "p1", "n": 1}, p1...), 201).json(t)
	self := created["_self"].(string)
	must(t, c.doRID("PUT", "/"+self, map[string]any{"id": "d2", "pk": "p1", "n": 2}, p1...), 200)
	if got := must(t, c.do("GET", "/dbs/db/colls/c/docs/d2", nil, p1...), 200).json(t); got["n"] != 2.0 || got["_self"] != self {
		t.Errorf("after a replace by resource id: %v", got)
	}
	q := map[string]any{"query": "SELECT VALUE c.n FROM c WHERE c.id = 'd2'"}
	r := must(t, c.doRID("POST", "/"+collSelf+"docs", q, append([]string{"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"}, p1...)...), 200)
	if got, _ := json.Marshal(documents(t, r, "Documents")); string(got) != "[2]" {
		t.Errorf("a query by resource id: %s", got)
	}
	sproc, _ := selfOf(t, c, "/dbs/db/colls/c/sprocs/s")
	if r := must(t, c.doRID("POST", "/"+sproc, []any{}, p1...), 200); string(r.body) != "1" {
		t.Errorf("the procedure run by resource id answered %s", r.body)
	}
	if docs := documents(t, must(t, c.doRID("GET", "/"+collSelf+"pkranges", nil), 200), "PartitionKeyRanges"); len(docs) != 1 {
		t.Errorf("the ranges by resource id: %d, want 1", len(docs))
	}
	must(t, c.doRID("DELETE", "/"+self, nil, p1...), 204)
	must(t, c.do("GET", "/dbs/db/colls/c/docs/d2", nil, p1...), 404)
	// Deleted, the document's resource id identifies nothing.
	must(t, c.doRID("GET", "/"+self, nil, p1...), 404)
}

// TestResourceIDNotFound: a resource id that identifies nothing is 404, the
// resource's own, or its owner's (substatus 1003) when it is an owner's; a
// document's resource id read with another partition key is another
// document's.
func TestResourceIDNotFound(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	ridFixture(t, c)
	dbSelf, _ := selfOf(t, c, "/dbs/db")
	collSelf, collRID := selfOf(t, c, "/dbs/db/colls/c")
	docSelf, _ := selfOf(t, c, "/dbs/db/colls/c/docs/d1", p1...)
	otherSelf, _ := selfOf(t, c, "/dbs/db/colls/other")
	docRID := strings.TrimPrefix(strings.TrimSuffix(docSelf, "/"), collSelf+"docs/")
	const noDB = "AAAAAA==" // a database resource id no database has
	for _, tc := range []struct {
		name, path string
		hdr        []string
		sub        string
	}{
		{"database", "/dbs/" + noDB, nil, "0"},
		{"containers of no database", "/dbs/" + noDB + "/colls", nil, "1003"},
		{"container of no database", "/dbs/" + noDB + "/colls/" + collRID, nil, "1003"},
		{"container", "/" + dbSelf + "colls/AAAAAAAAAIA=", nil, "0"},
		{"documents of no container", "/" + dbSelf + "colls/AAAAAAAAAIA=/docs", nil, "1003"},
		{"document", "/" + collSelf + "docs/" + collRID[:10] + "AAAAAAAAAA==", p1, "0"},
		{"document of another container", "/" + otherSelf + "docs/" + docRID, p1, "0"},
		{"document in another partition", "/" + docSelf, []string{"x-ms-documentdb-partitionkey", `["p3"]`}, "0"},
		{"not a resource id", "/" + collSelf + "docs/d1", p1, "0"},
		{"user", "/" + dbSelf + "users/AAAAAAAAAAA=", nil, "0"},
		{"permission", "/" + dbSelf + "users/" + strings.Split(strings.Trim(mustSelf(t, c, "/dbs/db/users/u"), "/"), "/")[3] + "/permissions/AAAAAAAAAAAAAAAAAAAAAA==", nil, "0"},
		{"stored procedure", "/" + collSelf + "sprocs/AAAAAAAAAAAAAAAAAAAAAA==", nil, "0"},
		{"conflict", "/" + collSelf + "conflicts/AAAAAAAAAAAAAAAAAAAAAA==", nil, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.doRID("GET", tc.path, nil, tc.hdr...)
			if r.status != 404 || r.header.Get("x-ms-substatus") != tc.sub {
				t.Errorf("GET %s: %d, substatus %q; want 404, %s: %s", tc.path, r.status, r.header.Get("x-ms-substatus"), tc.sub, r.body)
			}
		})
	}
	// The same document by the resource id of its own partition.
	must(t, c.doRID("GET", "/"+docSelf, nil, p1...), 200)
}

func mustSelf(t *testing.T, c *client, path string) string {
	t.Helper()
	self, _ := selfOf(t, c, path)
	return self
}

// TestResourceIDDatabaseNamedLikeOne: a database whose name is a database
// resource id keeps its paths by name, and a request signed over such a
// path by name is one by name before the database exists.
func TestResourceIDDatabaseNamedLikeOne(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	// Before it exists, as a create-if-not-exists reads it first.
	must(t, c.do("GET", "/dbs/AAAAAA==", nil), 404)
	createDB(t, c, "AAAAAA==")
	must(t, c.do("GET", "/dbs/AAAAAA==", nil), 200)
	must(t, c.do("POST", "/dbs/AAAAAA==/colls", map[string]any{"id": "c"}), 201)
}

// TestResourceTokensByResourceID: a permission made on a container's or a
// document's _self scopes its token as one made on its path by name, and a
// token reaches its resources by either path, and nothing else by either.
func TestResourceTokensByResourceID(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	ridFixture(t, c)
	collSelf, _ := selfOf(t, c, "/dbs/db/colls/c")
	docSelf, _ := selfOf(t, c, "/dbs/db/colls/c/docs/d1", p1...)
	otherSelf, _ := selfOf(t, c, "/dbs/db/colls/other")
	d2Self, _ := selfOf(t, c, "/dbs/db/colls/c/docs/d1", "x-ms-documentdb-partitionkey", `["p2"]`)
	token := func(user, res string, pk any) string {
		must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": user}), 201)
		body := map[string]any{"id": "p", "permissionMode": "Read", "resource": res}
		if pk != nil {
			body["resourcePartitionKey"] = pk
		}
		p := must(t, c.do("POST", "/dbs/db/users/"+user+"/permissions", body), 201).json(t)
		if p["resource"] != strings.Trim(res, "/") {
			t.Errorf("the permission's resource is %v, not %q as given", p["resource"], res)
		}
		return url.QueryEscape(p["_token"].(string))
	}
	byName := url.QueryEscape(must(t, c.do("GET", "/dbs/db/users/u/permissions/p", nil), 200).json(t)["_token"].(string))
	byRID := token("v", collSelf, nil)
	doc := token("w", docSelf, []any{"p1"})
	p2 := []string{"x-ms-documentdb-partitionkey", `["p2"]`}
	must(t, c.do("POST", "/dbs/db/colls/other/docs", map[string]any{"id": "o1", "pk": "p1"}, p1...), 201)
	otherDocSelf, otherDocRID := selfOf(t, c, "/dbs/db/colls/other/docs/o1", p1...)
	missingDoc := otherDocRID[:len(otherDocRID)-4] + "AAA=" // the other container's, naming no document
	for _, tc := range []struct {
		name, token, path string
		hdr               []string
		status            int
	}{
		{"by name, read by name", byName, "/dbs/db/colls/c/docs/d1", p1, 200},
		{"by name, read by resource id", byName, "/" + docSelf, p1, 200},
		{"by resource id, read by name", byRID, "/dbs/db/colls/c/docs/d1", p1, 200},
		{"by resource id, read by resource id", byRID, "/" + docSelf, p1, 200},
		{"by resource id, the documents by resource id", byRID, "/" + collSelf + "docs", nil, 200},
		{"by resource id, another container by resource id", byRID, "/" + otherSelf, nil, 403},
		{"by resource id, another container by name", byRID, "/dbs/db/colls/other", nil, 403},
		{"by name, another container by resource id", byName, "/" + otherSelf + "docs", nil, 403},
		{"a document's, read by resource id", doc, "/" + docSelf, p1, 200},
		{"a document's, read by name", doc, "/dbs/db/colls/c/docs/d1", p1, 200},
		{"a document's, its id in another partition", doc, "/" + d2Self, p2, 403},
		{"by resource id, a write under Read", byRID, "/" + docSelf, p1, 403},
		// Outside the token's container, a document that exists and one
		// that does not are refused alike: the token tells nothing of them.
		{"by resource id, another container's document", byRID, "/" + otherDocSelf, p1, 403},
		{"by resource id, another container's missing document", byRID, "/" + otherSelf + "docs/" + missingDoc + "/", p1, 403},
		{"by resource id, a missing container's document", byRID, "/" + otherSelf[:len(otherSelf)-5] + "AAA=/docs/" + missingDoc + "/", p1, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := "GET"
			if strings.Contains(tc.name, "a write") {
				method = "DELETE"
			}
			r := c.doRID(method, tc.path, nil, append([]string{"Authorization", tc.token}, tc.hdr...)...)
			if r.status != tc.status {
				t.Errorf("%s %s: %d, want %d: %s", method, tc.path, r.status, tc.status, r.body)
			}
		})
	}
	// A permission on a path by resource ids that identifies nothing of
	// the database is made, as the service makes it (the legacy Python
	// SDK's suite makes one on "a random one"), and its token reaches
	// nothing.
	for i, res := range []string{"dbs/AAAAAA==/colls/AAAAAAAAAIA=", "/" + otherSelf[:len(otherSelf)-5] + "AAA=/docs/AAAAAAAAAAAAAAAAAAAAAA=="} {
		nothing := token(fmt.Sprint("x", i), res, nil)
		for _, path := range []string{"/dbs/db/colls/c/docs", "/" + collSelf + "docs", "/dbs/db/colls/other/docs"} {
			if r := c.doRID("GET", path, nil, "Authorization", nothing); r.status != 403 {
				t.Errorf("a token on %s read %s: %d, want 403", res, path, r.status)
			}
		}
	}
}

// TestResourceIDsAfterRestart: a durable front's resource ids are the same
// after a restart, and its paths by resource id reach the same resources.
func TestResourceIDsAfterRestart(t *testing.T) {
	dir := t.TempDir()
	h, err := cosmosrest.New(cosmosrest.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, c := serve(t, h)
	ridFixture(t, c)
	paths := map[string][]string{
		"/dbs/db": nil, "/dbs/db/colls/c": nil, "/dbs/db/colls/c/docs/d1": p1, "/dbs/db/users/u": nil,
		"/dbs/db/users/u/permissions/p": nil, "/dbs/db/colls/c/sprocs/s": nil,
	}
	selfs := map[string]string{}
	for p, hdr := range paths {
		selfs[p], _ = selfOf(t, c, p, hdr...)
		must(t, c.doRID("GET", "/"+selfs[p], nil, hdr...), 200) // the document index is made
	}
	c = restartFront(t, h, c, dir)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "d3", "pk": "p1"}, p1...), 201)
	for p, hdr := range paths {
		if self, _ := selfOf(t, c, p, hdr...); self != selfs[p] {
			t.Errorf("%s: _self %q after the restart, %q before", p, self, selfs[p])
		}
		if got := must(t, c.doRID("GET", "/"+selfs[p], nil, hdr...), 200).json(t); got["_self"] != selfs[p] {
			t.Errorf("GET %s after the restart: %v", selfs[p], got)
		}
	}
}

// TestDocumentResourceIDsOfNewDocuments: a document created after its
// container's documents were first read by resource id is found by its
// own. The front notes every document it returns, so one whose _self a
// client was given is found without another scan; one it never returned
// (created with Prefer: return=minimal) through the change feed, or by a
// new scan when the container keeps no feed or the feed has forgotten
// changes.
func TestDocumentResourceIDsOfNewDocuments(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   cosmosrest.Config
		scans int // after the read of a document the front never returned
	}{
		{"change feed", cosmosrest.Config{}, 1},
		{"no change feed", cosmosrest.Config{NoChangeFeed: true}, 2},
		{"trimmed change feed", cosmosrest.Config{ChangeFeed: &lethe.ChangeFeedPolicy{MaxChanges: 2}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, c := testServer(t, tc.cfg)
			createDBColl(t, c)
			create := func(id string, hdr ...string) response {
				return must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": id, "pk": "p1"}, append(hdr, p1...)...), 201)
			}
			// unseen's _self, before the container has an index.
			unseen := create("unseen").json(t)["_self"].(string)
			must(t, c.do("DELETE", "/dbs/db/colls/c/docs/unseen", nil, p1...), 204)

			first := create("a").json(t)["_self"].(string)
			must(t, c.doRID("GET", "/"+first, nil, p1...), 200)
			var later []string
			for i := range 5 {
				later = append(later, create(fmt.Sprint("b", i)).json(t)["_self"].(string))
			}
			for _, self := range later {
				must(t, c.doRID("GET", "/"+self, nil, p1...), 200)
			}
			if n := cosmosrest.DocRIDScans(h, "db", "c"); n != 1 {
				t.Errorf("%d scans after reads of documents the front returned, want 1", n)
			}
			create("unseen", "Prefer", "return=minimal")
			must(t, c.doRID("GET", "/"+unseen, nil, p1...), 200)
			if n := cosmosrest.DocRIDScans(h, "db", "c"); n != tc.scans {
				t.Errorf("%d scans after a read of a document the front never returned, want %d", n, tc.scans)
			}
			must(t, c.doRID("GET", "/"+first, nil, p1...), 200)
		})
	}
}

// TestIDWithQuestionMark: the JavaScript SDK writes ids into paths with
// encodeURI, which leaves '?' as it is, so an id holding one reaches the
// server as a path and a query; both gateways read the two together, as
// the emulator does.
func TestIDWithQuestionMark(t *testing.T) {
	h, routing := testServer(t, cosmosrest.Config{})
	compute := computeClient(t, h, cosmosrest.EmulatorKey)
	createDBColl(t, routing)
	for _, id := range []string{"a?b", "a?", "?x=1&y=2", "a?b?c"} {
		for _, gw := range []*client{routing, compute} {
			must(t, gw.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": id, "pk": "p1"}, p1...), 201)
			path, link := "/dbs/db/colls/c/docs/"+id, "dbs/db/colls/c/docs/"+id
			if got := must(t, gw.doAs("GET", path, "docs", link, nil, p1...), 200).json(t); got["id"] != id {
				t.Errorf("GET %s read %v", path, got["id"])
			}
			must(t, gw.doAs("DELETE", path, "docs", link, nil, p1...), 204)
		}
	}
	// A client that escapes it (%3F) is read as before.
	must(t, routing.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "a?b", "pk": "p1"}, p1...), 201)
	must(t, routing.doAs("GET", "/dbs/db/colls/c/docs/a%3Fb", "docs", "dbs/db/colls/c/docs/a?b", nil, p1...), 200)
	if r := direct(t, h, "GET", "/dbs/db/colls/c/docs?x"); r.status != 404 {
		t.Errorf("GET …/docs?x: %d, want 404 (no resource of that path)", r.status)
	}
}

// TestResourceIDAlphabet: a _rid is written as its _self writes it, with
// '-' for base64's '/', as Cosmos DB writes both.
func TestResourceIDAlphabet(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	dashes := 0
	for i := range 40 {
		m := must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": fmt.Sprint(i), "pk": "p1"}, p1...), 201).json(t)
		rid, self := m["_rid"].(string), m["_self"].(string)
		if strings.Contains(rid, "/") || !strings.HasSuffix(self, "/docs/"+rid+"/") {
			t.Errorf("_rid %q, _self %q", rid, self)
		}
		dashes += strings.Count(rid, "-")
	}
	if dashes == 0 {
		t.Fatal("no _rid held a '-': the test did not look at one")
	}
}

// TestDocumentResourceIDsUnpartitioned: in a container without partition
// key paths, a document's resource id is read with no partition key
// header, or with the empty one.
func TestDocumentResourceIDsUnpartitioned(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "plain"}), 201)
	self := must(t, c.do("POST", "/dbs/db/colls/plain/docs", map[string]any{"id": "d"}), 201).json(t)["_self"].(string)
	for _, hdr := range [][]string{nil, {"x-ms-documentdb-partitionkey", "[]"}, {"x-ms-documentdb-partitionkey", "[{}]"}} {
		if got := must(t, c.doRID("GET", "/"+self, nil, hdr...), 200).json(t); got["id"] != "d" {
			t.Errorf("with %v: %v", hdr, got)
		}
	}
	must(t, c.doRID("GET", "/"+self, nil, "x-ms-documentdb-partitionkey", `["d"]`), 404)
}

// TestDocumentResourceIDsOfRecreatedContainer: a container deleted drops
// its index of documents by resource id, and one made again under its id
// (the same resource ids) has its own.
func TestDocumentResourceIDsOfRecreatedContainer(t *testing.T) {
	h, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	create := func(id string) string {
		return must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": id, "pk": "p1"}, p1...), 201).json(t)["_self"].(string)
	}
	old := create("old")
	must(t, c.doRID("GET", "/"+old, nil, p1...), 200)
	if n := cosmosrest.DocRIDIndexes(h, "db"); n != 1 {
		t.Fatalf("%d indexes after a read by resource id, want 1", n)
	}
	must(t, c.do("DELETE", "/dbs/db/colls/c", nil), 204)
	if n := cosmosrest.DocRIDIndexes(h, "db"); n != 0 {
		t.Errorf("%d indexes after the container's delete, want 0", n)
	}
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	must(t, c.doRID("GET", "/"+old, nil, p1...), 404)
	must(t, c.doRID("GET", "/"+create("new"), nil, p1...), 200)
}

// TestDocumentResourceIDsThrottled: the index of a container is made with
// the container's throughput; when that is spent, a read by resource id
// gets the service's 429, and succeeds once the throughput is back.
func TestDocumentResourceIDsThrottled(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	_, c := testServer(t, cosmosrest.Config{Clock: clock})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}, "x-ms-offer-throughput", "400"), 201)
	self := must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "a", "pk": "p1"}, p1...), 201).json(t)["_self"].(string)
	for i := 0; ; i++ {
		r := c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": fmt.Sprint(i), "pk": "p1"}, p1...)
		if r.status == 429 {
			break
		}
		if i == 1000 {
			t.Fatal("the throughput was never spent")
		}
	}
	r := c.doRID("GET", "/"+self, nil, p1...)
	if r.status != 429 || r.header.Get("x-ms-retry-after-ms") == "" {
		t.Fatalf("a read by resource id with the throughput spent: %d %s, want 429 with x-ms-retry-after-ms", r.status, r.body)
	}
	clock.Advance(10 * time.Second)
	must(t, c.doRID("GET", "/"+self, nil, p1...), 200)
}

// BenchmarkDocumentByRID measures a read of a document by resource id in a
// container of 100,000: the first (the container's index is made), the
// next ones, and one just after the document's create (the index reads the
// change feed), each beside the same by name.
func BenchmarkDocumentByRID(b *testing.B) {
	h, err := cosmosrest.New(cosmosrest.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	serve := func(method, path, typ, link, body string, want int) []byte {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		date := time.Now().UTC().Format(http.TimeFormat)
		auth, err := cosmosrest.SignRequest(cosmosrest.EmulatorKey, method, typ, link, date)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("x-ms-date", date)
		req.Header.Set("Authorization", auth)
		req.Header.Set("x-ms-documentdb-partitionkey", `["a"]`)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			b.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
		return w.Body.Bytes()
	}
	create := func(id string) string {
		body := serve("POST", "/dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", `{"id":"`+id+`","pk":"a","n":1}`, 201)
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			b.Fatal(err)
		}
		return m["_self"].(string)
	}
	byRID := func(self string) {
		typ, link := ridResource(self)
		serve("GET", "/"+self, typ, link, "", 200)
	}
	serve("POST", "/dbs", "dbs", "", `{"id":"db"}`, 201)
	serve("POST", "/dbs/db/colls", "colls", "dbs/db", `{"id":"c","partitionKey":{"paths":["/pk"]}}`, 201)
	const n = 100_000
	var self string
	for i := range n {
		self = create(strconv.Itoa(i))
	}
	b.Run("first", func(b *testing.B) {
		for range b.N {
			cosmosrest.ForgetDocRIDs(h, "db", "c")
			byRID(self)
		}
	})
	b.Run("next", func(b *testing.B) {
		for range b.N {
			byRID(self)
		}
	})
	b.Run("next by name", func(b *testing.B) {
		for range b.N {
			serve("GET", "/dbs/db/colls/c/docs/0", "docs", "dbs/db/colls/c/docs/0", "", 200)
		}
	})
	m := n
	b.Run("after its create", func(b *testing.B) {
		for range b.N {
			byRID(create(strconv.Itoa(m)))
			m++
		}
	})
	b.Run("after its create by name", func(b *testing.B) {
		for range b.N {
			id := strconv.Itoa(m)
			create(id)
			serve("GET", "/dbs/db/colls/c/docs/"+id, "docs", "dbs/db/colls/c/docs/"+id, "", 200)
			m++
		}
	})
}
