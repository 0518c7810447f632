package cosmosrest_test

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

func TestUsersAndPermissions(t *testing.T) {
	dir := t.TempDir()
	h, c := testServer(t, cosmosrest.Config{Dir: dir})
	createDB(t, c, "db")
	createDB(t, c, "other")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)

	// Users: create, read, list, query, upsert, replace (rename), 409, 404.
	u := must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "ada"}), 201).json(t)
	if u["id"] != "ada" || u["_rid"] == "" || !strings.HasPrefix(u["_self"].(string), "dbs/") || u["_permissions"] != "permissions/" || u["_etag"] == nil {
		t.Errorf("user: %v", u)
	}
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "ada"}), 409)
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "ada"}, "x-ms-documentdb-is-upsert", "True"), 200)
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "bob"}), 201)
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "a/b"}), 400)
	must(t, c.do("POST", "/dbs/db/users", `{"name":"x"}`), 400)
	must(t, c.do("POST", "/dbs/none/users", map[string]any{"id": "x"}), 404)
	if r := must(t, c.do("GET", "/dbs/db/users", nil), 200); len(documents(t, r, "Users")) != 2 {
		t.Errorf("users: %s", r.body)
	}
	q := must(t, c.do("POST", "/dbs/db/users", map[string]any{"query": "SELECT * FROM r WHERE r.id = 'bob'"}, "Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"), 200)
	if docs := documents(t, q, "Users"); len(docs) != 1 {
		t.Errorf("user query: %s", q.body)
	}
	must(t, c.do("GET", "/dbs/db/users/ada", nil), 200)
	must(t, c.do("GET", "/dbs/db/users/none", nil), 404)
	must(t, c.do("GET", "/dbs/other/users/ada", nil), 404)

	// Permissions: the body is checked, and a refusal changes nothing.
	perm := func(id, mode, res string, pk any) map[string]any {
		m := map[string]any{"id": id, "permissionMode": mode, "resource": res}
		if pk != nil {
			m["resourcePartitionKey"] = pk
		}
		return m
	}
	for _, tc := range []struct {
		name string
		body any
		hdr  []string
	}{
		{"bad mode", perm("p", "Write", "dbs/db/colls/c", nil), nil},
		{"another database", perm("p", "All", "dbs/other/colls/c", nil), nil},
		{"a database", perm("p", "All", "dbs/db", nil), nil},
		{"not a path", perm("p", "All", "colls/c", nil), nil},
		{"a document without its partition key", perm("p", "All", "dbs/db/colls/c/docs/1", nil), nil},
		{"bad pk", perm("p", "All", "dbs/db/colls/c", "x"), nil},
		{"no resource", map[string]any{"id": "p", "permissionMode": "All"}, nil},
		{"expiry too short", perm("p", "All", "dbs/db/colls/c", nil), []string{"x-ms-documentdb-expiry-seconds", "9"}},
		{"expiry too long", perm("p", "All", "dbs/db/colls/c", nil), []string{"x-ms-documentdb-expiry-seconds", "18001"}},
		{"expiry not a number", perm("p", "All", "dbs/db/colls/c", nil), []string{"x-ms-documentdb-expiry-seconds", "1h"}},
	} {
		if r := c.do("POST", "/dbs/db/users/ada/permissions", tc.body, tc.hdr...); r.status != 400 {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
	}
	if r := must(t, c.do("GET", "/dbs/db/users/ada/permissions", nil), 200); len(documents(t, r, "Permissions")) != 0 {
		t.Fatalf("refused permissions were kept: %s", r.body)
	}
	p := must(t, c.do("POST", "/dbs/db/users/ada/permissions", perm("all-c", "All", "dbs/db/colls/c", nil), "x-ms-documentdb-expiry-seconds", "18000"), 201).json(t)
	tok, _ := p["_token"].(string)
	if p["permissionMode"] != "All" || p["resource"] != "dbs/db/colls/c" || !strings.HasPrefix(tok, "type=resource&ver=1.0&sig=") || p["_rid"] == "" {
		t.Fatalf("permission: %v", p)
	}
	// One permission per resource for a user; ids unique.
	must(t, c.do("POST", "/dbs/db/users/ada/permissions", perm("again", "Read", "dbs/db/colls/c", nil)), 409)
	must(t, c.do("POST", "/dbs/db/users/ada/permissions", perm("all-c", "Read", "dbs/db/colls/c/docs/1", []any{"x"})), 409)
	must(t, c.do("POST", "/dbs/db/users/ada/permissions", perm("doc", "Read", "dbs/db/colls/c/docs/1", []any{"x"})), 201)
	must(t, c.do("POST", "/dbs/db/users/none/permissions", perm("x", "Read", "dbs/db/colls/c", nil)), 404)
	// Every read hands out a new token.
	r1 := must(t, c.do("GET", "/dbs/db/users/ada/permissions/all-c", nil), 200).json(t)
	time.Sleep(1100 * time.Millisecond) // the token's expiry is in whole seconds
	r2 := must(t, c.do("GET", "/dbs/db/users/ada/permissions/all-c", nil), 200).json(t)
	if r1["_token"] == r2["_token"] {
		t.Error("two reads of a permission a second apart handed out the same token")
	}
	q = must(t, c.do("POST", "/dbs/db/users/ada/permissions", map[string]any{"query": "SELECT * FROM p WHERE p.permissionMode = 'Read'"}, "Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"), 200)
	if docs := documents(t, q, "Permissions"); len(docs) != 1 || !strings.Contains(string(docs[0]), `"_token"`) {
		t.Errorf("permission query: %s", q.body)
	}

	// The users and permissions, and the tokens handed out, survive a
	// restart of a durable handler.
	h.Close()
	_, c = testServer(t, cosmosrest.Config{Dir: dir})
	must(t, c.do("GET", "/dbs/db/users/ada/permissions/doc", nil), 200)
	must(t, c.do("GET", "/dbs/db/colls/c", nil, "Authorization", url.QueryEscape(tok)), 200)

	// A replace voids the tokens handed out before; so does a delete.
	must(t, c.do("PUT", "/dbs/db/users/ada/permissions/all-c", perm("all-c", "Read", "dbs/db/colls/c", nil)), 200)
	must(t, c.do("GET", "/dbs/db/colls/c", nil, "Authorization", url.QueryEscape(tok)), 401)
	tok = must(t, c.do("GET", "/dbs/db/users/ada/permissions/all-c", nil), 200).json(t)["_token"].(string)
	must(t, c.do("GET", "/dbs/db/colls/c", nil, "Authorization", url.QueryEscape(tok)), 200)
	// Renaming the user voids them too; deleting the user deletes its
	// permissions.
	must(t, c.do("PUT", "/dbs/db/users/ada", map[string]any{"id": "bob"}), 409)
	must(t, c.do("PUT", "/dbs/db/users/ada", map[string]any{"id": "ada2"}), 200)
	must(t, c.do("GET", "/dbs/db/colls/c", nil, "Authorization", url.QueryEscape(tok)), 401)
	must(t, c.do("GET", "/dbs/db/users/ada2/permissions/doc", nil), 200)
	must(t, c.do("DELETE", "/dbs/db/users/ada2/permissions/doc", nil), 204)
	must(t, c.do("DELETE", "/dbs/db/users/ada2/permissions/doc", nil), 404)
	must(t, c.do("DELETE", "/dbs/db/users/ada2", nil), 204)
	must(t, c.do("GET", "/dbs/db/users/ada2/permissions", nil), 404)
	must(t, c.do("GET", "/dbs/db/users/ada2", nil), 404)
}

// TestResourceTokens tries, as an attacker holding a token, every way out
// of its permission's scope.
func TestResourceTokens(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	createDB(t, c, "db2")
	for _, p := range []string{"/dbs/db/colls", "/dbs/db2/colls"} {
		must(t, c.do("POST", p, map[string]any{"id": "a", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	}
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "b", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	for _, pk := range []string{"p1", "p2"} {
		must(t, c.do("POST", "/dbs/db/colls/a/docs", fmt.Sprintf(`{"id":"d1","pk":%q}`, pk), "x-ms-documentdb-partitionkey", fmt.Sprintf(`[%q]`, pk)), 201)
	}
	must(t, c.do("POST", "/dbs/db/colls/b/docs", `{"id":"d1","pk":"p1"}`, "x-ms-documentdb-partitionkey", `["p1"]`), 201)
	token := func(user, id, mode, res string, pk any, hdr ...string) string {
		must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": user}), 201)
		body := map[string]any{"id": id, "permissionMode": mode, "resource": res}
		if pk != nil {
			body["resourcePartitionKey"] = pk
		}
		return must(t, c.do("POST", "/dbs/db/users/"+user+"/permissions", body, hdr...), 201).json(t)["_token"].(string)
	}
	all := token("alice", "p", "All", "dbs/db/colls/a", nil)
	read := token("bob", "p", "Read", "dbs/db/colls/a", nil)
	onePK := token("carol", "p", "All", "dbs/db/colls/a", []any{"p1"})
	oneDoc := token("dave", "p", "Read", "dbs/db/colls/a/docs/d1", []any{"p1"})

	p1 := []string{"x-ms-documentdb-partitionkey", `["p1"]`}
	p2 := []string{"x-ms-documentdb-partitionkey", `["p2"]`}
	query := []string{"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"}
	cross := append(append([]string{}, query...), "x-ms-documentdb-query-enablecrosspartition", "True")
	batch := []string{"x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True"}
	bulk := []string{"x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "False"}
	feed := []string{"A-IM", "Incremental Feed"}
	cat := func(hs ...[]string) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h...)
		}
		return out
	}
	q := map[string]any{"query": "SELECT * FROM c"}
	bulkOn := func(pks ...string) string {
		var ops []string
		for i, pk := range pks {
			ops = append(ops, fmt.Sprintf(`{"operationType":"Upsert","partitionKey":"[\"%s\"]","resourceBody":{"id":"x%d","pk":%q}}`, pk, i, pk))
		}
		return "[" + strings.Join(ops, ",") + "]"
	}
	if claimsOf(all) == "" || signatureOf(all) == "" || swapClaims(all, onePK) == all || swapClaims(all, onePK) == onePK {
		t.Fatalf("the token helpers do not take %q apart", all)
	}
	cases := []struct {
		name   string
		token  string
		method string
		path   string
		body   any
		hdr    []string
		status int
	}{
		// What each token is for.
		{"all: account", all, "GET", "/", nil, nil, 200},
		{"all: container", all, "GET", "/dbs/db/colls/a", nil, nil, 200},
		{"all: ranges", all, "GET", "/dbs/db/colls/a/pkranges", nil, nil, 200},
		{"all: read", all, "GET", "/dbs/db/colls/a/docs/d1", nil, p1, 200},
		{"all: create", all, "POST", "/dbs/db/colls/a/docs", `{"id":"n1","pk":"p1"}`, p1, 201},
		{"all: cross-partition query", all, "POST", "/dbs/db/colls/a/docs", q, cross, 200},
		{"all: read feed", all, "GET", "/dbs/db/colls/a/docs", nil, nil, 200},
		{"all: change feed", all, "GET", "/dbs/db/colls/a/docs", nil, feed, 200},
		{"all: batch", all, "POST", "/dbs/db/colls/a/docs", `[{"operationType":"Read","id":"d1"}]`, cat(batch, p1), 200},
		{"all: bulk", all, "POST", "/dbs/db/colls/a/docs", bulkOn("p1", "p2"), bulk, 200},
		{"all: delete", all, "DELETE", "/dbs/db/colls/a/docs/n1", nil, p1, 204},
		{"read: read", read, "GET", "/dbs/db/colls/a/docs/d1", nil, p1, 200},
		{"read: query", read, "POST", "/dbs/db/colls/a/docs", q, cross, 200},
		{"one pk: read", onePK, "GET", "/dbs/db/colls/a/docs/d1", nil, p1, 200},
		{"one pk: query", onePK, "POST", "/dbs/db/colls/a/docs", q, cat(query, p1), 200},
		{"one pk: change feed", onePK, "GET", "/dbs/db/colls/a/docs", nil, cat(feed, p1), 200},
		{"one pk: bulk", onePK, "POST", "/dbs/db/colls/a/docs", bulkOn("p1", "p1"), bulk, 200},
		{"one pk: write", onePK, "PUT", "/dbs/db/colls/a/docs/d1", `{"id":"d1","pk":"p1","v":1}`, p1, 200},
		{"one doc: read", oneDoc, "GET", "/dbs/db/colls/a/docs/d1", nil, p1, 200},

		// Another container, database or resource.
		{"all: other container", all, "GET", "/dbs/db/colls/b/docs/d1", nil, p1, 403},
		{"all: same name, other database", all, "GET", "/dbs/db2/colls/a/docs/d1", nil, p1, 403},
		{"all: query other container", all, "POST", "/dbs/db/colls/b/docs", q, cross, 403},
		{"all: databases", all, "GET", "/dbs", nil, nil, 403},
		{"all: database", all, "GET", "/dbs/db", nil, nil, 403},
		{"all: containers", all, "GET", "/dbs/db/colls", nil, nil, 403},
		{"all: create container", all, "POST", "/dbs/db/colls", map[string]any{"id": "z"}, nil, 403},
		// All on the whole container may replace and delete it
		// (TestTokenChangesItsContainer); on one partition key, not.
		{"one pk: delete container", onePK, "DELETE", "/dbs/db/colls/a", nil, nil, 403},
		{"one pk: replace container", onePK, "PUT", "/dbs/db/colls/a", map[string]any{"id": "a"}, nil, 403},
		{"all: offers", all, "GET", "/offers", nil, nil, 403},
		{"all: users", all, "GET", "/dbs/db/users", nil, nil, 403},
		{"all: own permission", all, "GET", "/dbs/db/users/alice/permissions/p", nil, nil, 403},
		{"all: make a user", all, "POST", "/dbs/db/users", map[string]any{"id": "mallory"}, nil, 403},
		{"all: delete database", all, "DELETE", "/dbs/db", nil, nil, 403},
		{"all: write the account", all, "POST", "/", `{}`, nil, 403},

		// Writes under Read.
		{"read: create", read, "POST", "/dbs/db/colls/a/docs", `{"id":"n2","pk":"p1"}`, p1, 403},
		{"read: upsert", read, "POST", "/dbs/db/colls/a/docs", `{"id":"n2","pk":"p1"}`, cat(p1, []string{"x-ms-documentdb-is-upsert", "True"}), 403},
		{"read: replace", read, "PUT", "/dbs/db/colls/a/docs/d1", `{"id":"d1","pk":"p1"}`, p1, 403},
		{"read: delete", read, "DELETE", "/dbs/db/colls/a/docs/d1", nil, p1, 403},
		{"read: patch", read, "PATCH", "/dbs/db/colls/a/docs/d1", `{"operations":[{"op":"set","path":"/v","value":1}]}`, p1, 403},
		{"read: batch of reads", read, "POST", "/dbs/db/colls/a/docs", `[{"operationType":"Read","id":"d1"}]`, cat(batch, p1), 403},
		{"read: bulk", read, "POST", "/dbs/db/colls/a/docs", bulkOn("p1"), bulk, 403},
		{"one doc: write it", oneDoc, "PUT", "/dbs/db/colls/a/docs/d1", `{"id":"d1","pk":"p1"}`, p1, 403},

		// Another partition key.
		{"one pk: read p2", onePK, "GET", "/dbs/db/colls/a/docs/d1", nil, p2, 403},
		{"one pk: no header", onePK, "GET", "/dbs/db/colls/a/docs/d1", nil, nil, 403},
		{"one pk: cross-partition query", onePK, "POST", "/dbs/db/colls/a/docs", q, cross, 403},
		{"one pk: query p2", onePK, "POST", "/dbs/db/colls/a/docs", q, cat(query, p2), 403},
		{"one pk: read feed", onePK, "GET", "/dbs/db/colls/a/docs", nil, nil, 403},
		{"one pk: change feed of all", onePK, "GET", "/dbs/db/colls/a/docs", nil, feed, 403},
		{"one pk: change feed of p2", onePK, "GET", "/dbs/db/colls/a/docs", nil, cat(feed, p2), 403},
		{"one pk: batch on p2", onePK, "POST", "/dbs/db/colls/a/docs", `[{"operationType":"Read","id":"d1"}]`, cat(batch, p2), 403},
		{"one pk: bulk reaching p2", onePK, "POST", "/dbs/db/colls/a/docs", bulkOn("p1", "p2"), bulk, 403},
		{"one pk: bulk op without pk", onePK, "POST", "/dbs/db/colls/a/docs", `[{"operationType":"Read","id":"d1"}]`, bulk, 403},
		{"one pk: create in p2", onePK, "POST", "/dbs/db/colls/a/docs", `{"id":"n3","pk":"p2"}`, p2, 403},

		// Another document.
		{"one doc: other doc", oneDoc, "GET", "/dbs/db/colls/a/docs/d2", nil, p1, 403},
		{"one doc: same id, other partition", oneDoc, "GET", "/dbs/db/colls/a/docs/d1", nil, p2, 403},
		{"one doc: feed", oneDoc, "GET", "/dbs/db/colls/a/docs", nil, nil, 403},
		{"one doc: query", oneDoc, "POST", "/dbs/db/colls/a/docs", q, cross, 403},

		// Altered and made-up tokens.
		{"no signature", tokenPrefix + claimsOf(all), "GET", "/dbs/db/colls/a", nil, nil, 401},
		{"one bit flipped", flipLast(all), "GET", "/dbs/db/colls/a", nil, nil, 401},
		{"claims swapped", swapClaims(all, onePK), "GET", "/dbs/db/colls/a", nil, nil, 401},
		{"forged claims", forge(all, `{"d":"db","u":"alice","p":"p","n":"x","e":9999999999}`), "GET", "/dbs/db/colls/a", nil, nil, 401},
		{"garbage", "type=resource&ver=1.0&sig=nonsense", "GET", "/dbs/db/colls/a", nil, nil, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr := append([]string{"Authorization", url.QueryEscape(tc.token)}, tc.hdr...)
			r := c.do(tc.method, tc.path, tc.body, hdr...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if r.status == 403 && !strings.Contains(string(r.body), "Insufficient permissions provided in the authorization header") {
				t.Errorf("403 without the service's message: %s", r.body)
			}
		})
	}
	// Nothing refused was written.
	must(t, c.do("GET", "/dbs/db/colls/a/docs/n2", nil, p1...), 404)
	must(t, c.do("GET", "/dbs/db/colls/a/docs/n3", nil, p2...), 404)
	must(t, c.do("GET", "/dbs/db/colls/a/docs/x0", nil, p1...), 200) // the one allowed bulk
	must(t, c.do("GET", "/dbs/db/users/mallory", nil), 404)

	// A token stops working when its permission or its user goes, even if
	// they come back under the same ids.
	must(t, c.do("DELETE", "/dbs/db/users/bob/permissions/p", nil), 204)
	must(t, c.do("POST", "/dbs/db/users/bob/permissions", map[string]any{"id": "p", "permissionMode": "Read", "resource": "dbs/db/colls/a"}), 201)
	must(t, c.do("GET", "/dbs/db/colls/a/docs/d1", nil, append([]string{"Authorization", url.QueryEscape(read)}, p1...)...), 401)
	must(t, c.do("DELETE", "/dbs/db/users/alice", nil), 204)
	must(t, c.do("GET", "/dbs/db/colls/a/docs/d1", nil, append([]string{"Authorization", url.QueryEscape(all)}, p1...)...), 401)
	// A token handed out by another account (another master key) is not
	// this one's.
	_, other := testServer(t, cosmosrest.Config{Key: "dGhpcyBpcyBub3QgdGhlIGtleQ=="})
	createDB(t, other, "db")
	must(t, other.do("POST", "/dbs/db/colls", map[string]any{"id": "a", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	must(t, other.do("GET", "/dbs/db/colls/a", nil, "Authorization", url.QueryEscape(onePK)), 401)
}

// TestResourceTokenExpiry: a token is refused once its validity period is
// over (10 seconds here, the shortest).
func TestResourceTokenExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 11 s")
	}
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "a"}), 201)
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "u"}), 201)
	tok := must(t, c.do("POST", "/dbs/db/users/u/permissions", map[string]any{"id": "p", "permissionMode": "Read", "resource": "dbs/db/colls/a"},
		"x-ms-documentdb-expiry-seconds", "10"), 201).json(t)["_token"].(string)
	must(t, c.do("GET", "/dbs/db/colls/a", nil, "Authorization", url.QueryEscape(tok)), 200)
	time.Sleep(11 * time.Second)
	r := must(t, c.do("GET", "/dbs/db/colls/a", nil, "Authorization", url.QueryEscape(tok)), 401)
	if !strings.Contains(string(r.body), "expired") {
		t.Errorf("expired token: %s", r.body)
	}
}

// flipLast changes the last character of a token's signature.
func flipLast(tok string) string {
	b := []byte(tok)
	if b[len(b)-1] == 'A' {
		b[len(b)-1] = 'B'
	} else {
		b[len(b)-1] = 'A'
	}
	return string(b)
}

// tokenPrefix starts every resource token.
const tokenPrefix = "type=resource&ver=1.0&sig="

// claimsOf and signatureOf are the two parts of a resource token.
func claimsOf(tok string) string {
	c, _, _ := strings.Cut(strings.TrimPrefix(tok, tokenPrefix), ".")
	return c
}

func signatureOf(tok string) string {
	_, s, _ := strings.Cut(strings.TrimPrefix(tok, tokenPrefix), ".")
	return s
}

// swapClaims puts the claims of one token with the signature of another.
func swapClaims(a, b string) string {
	return tokenPrefix + claimsOf(a) + "." + signatureOf(b)
}

// forge puts made-up claims with a token's signature.
func forge(tok, claims string) string {
	return tokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(claims)) + "." + signatureOf(tok)
}

// TestPermissionOfDeletedContainer: the service ties a permission to its
// container's _rid, so once the container is deleted no token of the
// permission (old or newly read) reaches a container created again under
// the same id, across a restart too, until the permission is replaced.
func TestPermissionOfDeletedContainer(t *testing.T) {
	dir := t.TempDir()
	h, c := testServer(t, cosmosrest.Config{Dir: dir})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "a"}), 201)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "b"}), 201)
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "u"}), 201)
	perm := map[string]any{"id": "p", "permissionMode": "All", "resource": "dbs/db/colls/a"}
	old := must(t, c.do("POST", "/dbs/db/users/u/permissions", perm), 201).json(t)["_token"].(string)
	onB := must(t, c.do("POST", "/dbs/db/users/u/permissions", map[string]any{"id": "q", "permissionMode": "All", "resource": "dbs/db/colls/b"}), 201).json(t)["_token"].(string)
	auth := func(tok string) []string { return []string{"Authorization", url.QueryEscape(tok)} }
	must(t, c.do("GET", "/dbs/db/colls/a", nil, auth(old)...), 200)

	must(t, c.do("DELETE", "/dbs/db/colls/a", nil), 204)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "a"}), 201)
	must(t, c.do("POST", "/dbs/db/colls/a/docs", `{"id":"secret"}`), 201)
	fresh := must(t, c.do("GET", "/dbs/db/users/u/permissions/p", nil), 200).json(t)["_token"].(string)
	for name, tok := range map[string]string{"old token": old, "token read after the delete": fresh} {
		for _, path := range []string{"/dbs/db/colls/a", "/dbs/db/colls/a/docs/secret"} {
			if r := c.do("GET", path, nil, auth(tok)...); r.status != 403 {
				t.Errorf("%s, GET %s on the container created again: %d, want 403", name, path, r.status)
			}
		}
	}
	must(t, c.do("GET", "/dbs/db/colls/b", nil, auth(onB)...), 200) // the other container's permission is untouched

	h.Close()
	_, c = testServer(t, cosmosrest.Config{Dir: dir})
	fresh = must(t, c.do("GET", "/dbs/db/users/u/permissions/p", nil), 200).json(t)["_token"].(string)
	must(t, c.do("GET", "/dbs/db/colls/a/docs/secret", nil, auth(fresh)...), 403)

	replaced := must(t, c.do("PUT", "/dbs/db/users/u/permissions/p", perm), 200).json(t)["_token"].(string)
	must(t, c.do("GET", "/dbs/db/colls/a/docs/secret", nil, auth(replaced)...), 200)
}

// TestRefusedChangeKeepsUsers upserts a permission over one that exists,
// on a resource another permission of the user holds: the upsert drops
// the old permission before it finds the clash, and the refusal (409)
// puts it back.
func TestRefusedChangeKeepsUsers(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "d", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "ada"}), 201)
	must(t, c.do("POST", "/dbs/db/users/ada/permissions", map[string]any{"id": "p", "permissionMode": "Read", "resource": "dbs/db/colls/c"}), 201)
	must(t, c.do("POST", "/dbs/db/users/ada/permissions", map[string]any{"id": "q", "permissionMode": "Read", "resource": "dbs/db/colls/d"}), 201)
	must(t, c.do("POST", "/dbs/db/users/ada/permissions", map[string]any{"id": "p", "permissionMode": "All", "resource": "dbs/db/colls/d"}, "x-ms-documentdb-is-upsert", "True"), 409)
	if got := must(t, c.do("GET", "/dbs/db/users/ada/permissions/p", nil), 200).json(t); got["resource"] != "dbs/db/colls/c" || got["permissionMode"] != "Read" {
		t.Errorf("the refused upsert changed the permission: %v", got)
	}
}
