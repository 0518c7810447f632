package cosmosrest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

func TestAuthFailures(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	otherKey := "dGhpcyBpcyBub3QgdGhlIGtleQ=="
	now := time.Now().UTC()
	sign := func(key, method, typ, link string, date time.Time) string {
		a, err := cosmosrest.SignRequest(key, method, typ, link, date.Format(http.TimeFormat))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cases := []struct {
		name   string
		auth   string
		date   time.Time
		status int
	}{
		{"missing", "", now, 401},
		{"wrong key", sign(otherKey, "POST", "dbs", "", now), now, 401},
		{"wrong verb", sign(cosmosrest.EmulatorKey, "GET", "dbs", "", now), now, 401},
		{"wrong type", sign(cosmosrest.EmulatorKey, "POST", "colls", "", now), now, 401},
		{"wrong link", sign(cosmosrest.EmulatorKey, "POST", "dbs", "dbs/x", now), now, 401},
		{"garbage", "type=master&ver=1.0&sig=!!!", now, 401},
		{"resource token", "type=resource&ver=1.0&sig=abc", now, 401},
		{"not encoded garbage", "%zz", now, 401},
		{"20 minutes old", sign(cosmosrest.EmulatorKey, "POST", "dbs", "", now.Add(-20*time.Minute)), now.Add(-20 * time.Minute), 403},
		{"20 minutes ahead", sign(cosmosrest.EmulatorKey, "POST", "dbs", "", now.Add(20*time.Minute)), now.Add(20 * time.Minute), 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", c.srv.URL+"/dbs", strings.NewReader(`{"id":"db"}`))
			req.Header.Set("x-ms-date", tc.date.Format(http.TimeFormat))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			r := c.send(req)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			m := r.json(t)
			want := map[int]string{401: "Unauthorized", 403: "Forbidden"}[tc.status]
			if m["code"] != want || m["message"] == "" {
				t.Errorf("body %s", r.body)
			}
		})
	}
	// Nothing was created.
	r := must(t, c.do("GET", "/dbs", nil), 200)
	if n := r.json(t)["_count"]; n != 0.0 {
		t.Fatalf("databases after refused requests: %v", n)
	}
	// The Date header stands in for x-ms-date; within the skew it is fine.
	req, _ := http.NewRequest("GET", c.srv.URL+"/dbs", nil)
	d := now.Add(-10 * time.Minute).Format(http.TimeFormat)
	req.Header.Set("Date", d)
	req.Header.Set("Authorization", sign(cosmosrest.EmulatorKey, "GET", "dbs", "", now.Add(-10*time.Minute)))
	must(t, c.send(req), 200)

	// A custom key: the emulator's key no longer works.
	_, c2 := testServer(t, cosmosrest.Config{Key: otherKey})
	must(t, c2.do("GET", "/dbs", nil), 200)
	c2.key = cosmosrest.EmulatorKey
	must(t, c2.do("GET", "/dbs", nil), 401)
	if _, err := cosmosrest.New(cosmosrest.Config{Key: "not base64!"}); err == nil {
		t.Fatal("New took a key that is not base64")
	}
}

func TestAccount(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	m := must(t, c.do("GET", "/", nil), 200).json(t)
	for _, k := range []string{"writableLocations", "readableLocations"} {
		locs := m[k].([]any)
		if len(locs) != 1 || locs[0].(map[string]any)["databaseAccountEndpoint"] != c.srv.URL+"/" {
			t.Errorf("%s = %v, want the server's own address %s/", k, locs, c.srv.URL)
		}
	}
	if m["userConsistencyPolicy"].(map[string]any)["defaultConsistencyLevel"] != "Strong" {
		t.Errorf("consistency %v", m["userConsistencyPolicy"])
	}
	// @azure/cosmos ignores the locations of an account named "localhost"
	// (the emulator's name) and then reads the account again before every
	// operation.
	if m["id"] == "localhost" {
		t.Errorf("the account is named %q: the JavaScript SDK would ignore its locations", m["id"])
	}
	var qe map[string]any
	if err := json.Unmarshal([]byte(m["queryEngineConfiguration"].(string)), &qe); err != nil {
		t.Errorf("queryEngineConfiguration: %v", err)
	}
	// The SDKs that plan queries themselves (.NET's service interop) read
	// these switches: each must say what the front accepts.
	for k, want := range map[string]any{
		"sqlAllowAggregateFunctions": true, // COUNT, SUM, ...
		"sqlAllowGroupByClause":      true,
		"sqlAllowSubQuery":           true, // EXISTS, ARRAY, JOIN (SELECT ...)
		"sqlAllowScalarSubQuery":     true, // (SELECT ...)
		"sqlAllowLike":               true,
		"sqlAllowTop":                true,
		"sqlAllowNonFiniteNumbers":   false,              // as every account of the service says
		"maxJoinsPerSqlQuery":        float64(5),         // the emulator's
		"maxSqlQueryInputLength":     float64(512 << 10), // the service's documented 512 KB
	} {
		if qe[k] != want {
			t.Errorf("queryEngineConfiguration %s = %v, want %v", k, qe[k], want)
		}
	}
	must(t, c.do("POST", "/", "{}"), 405)

	// A request to "localhost" learns the loopback address it came to,
	// as the emulator advertises https://127.0.0.1:8081/; any other host
	// is echoed.
	port := c.srv.URL[strings.LastIndex(c.srv.URL, ":")+1:]
	for host, want := range map[string]string{
		"localhost:" + port:  "https://127.0.0.1:" + port + "/",
		"LocalHost:" + port:  "https://127.0.0.1:" + port + "/",
		"127.0.0.1:" + port:  "https://127.0.0.1:" + port + "/",
		"db.example:" + port: "https://db.example:" + port + "/",
	} {
		req, _ := http.NewRequest("GET", c.srv.URL+"/", nil)
		req.Host = host
		req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
		a, _ := cosmosrest.SignRequest(cosmosrest.EmulatorKey, "GET", "", "", req.Header.Get("x-ms-date"))
		req.Header.Set("Authorization", a)
		m := must(t, c.send(req), 200).json(t)
		if got := m["writableLocations"].([]any)[0].(map[string]any)["databaseAccountEndpoint"]; got != want {
			t.Errorf("Host %s: endpoint %v, want %s", host, got, want)
		}
	}
}

func TestDatabases(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	r := must(t, c.do("POST", "/dbs", map[string]any{"id": "shop"}), 201)
	m := r.json(t)
	if m["id"] != "shop" || m["_rid"] == "" || !strings.HasPrefix(m["_self"].(string), "dbs/") || m["_ts"] == nil || m["_colls"] != "colls/" {
		t.Errorf("created database: %s", r.body)
	}
	must(t, c.do("POST", "/dbs", map[string]any{"id": "shop"}), 409)
	must(t, c.do("POST", "/dbs", map[string]any{"id": "a/b"}), 400)
	must(t, c.do("POST", "/dbs", "not json"), 400)
	must(t, c.do("POST", "/dbs", map[string]any{"id": "other db"}), 201)

	got := must(t, c.do("GET", "/dbs/shop", nil), 200).json(t)
	if got["_rid"] != m["_rid"] || got["_etag"] != m["_etag"] {
		t.Errorf("read %v, created %v", got, m)
	}
	must(t, c.do("GET", "/dbs/"+"other%20db", nil), 200)
	must(t, c.do("GET", "/dbs/none", nil), 404)

	list := must(t, c.do("GET", "/dbs", nil), 200)
	if docs := documents(t, list, "Databases"); len(docs) != 2 || list.header.Get("x-ms-item-count") != "2" {
		t.Errorf("list: %s", list.body)
	}
	q := must(t, c.do("POST", "/dbs", map[string]any{"query": "SELECT * FROM root r WHERE r.id = @id",
		"parameters": []any{map[string]any{"name": "@id", "value": "shop"}}},
		"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"), 200)
	if docs := documents(t, q, "Databases"); len(docs) != 1 || !strings.Contains(string(docs[0]), `"shop"`) {
		t.Errorf("query: %s", q.body)
	}
	must(t, c.do("POST", "/dbs", map[string]any{"query": "SELECT * FROM"}, "Content-Type", "application/query+json"), 400)

	must(t, c.do("DELETE", "/dbs/shop", nil), 204)
	must(t, c.do("GET", "/dbs/shop", nil), 404)
	must(t, c.do("DELETE", "/dbs/shop", nil), 404)
	must(t, c.do("PUT", "/dbs/other%20db", map[string]any{"id": "x"}), 405)
}

func createDB(t *testing.T, c *client, db string) {
	t.Helper()
	must(t, c.do("POST", "/dbs", map[string]any{"id": db}), 201)
}

// createDBColl creates the database db and its container c, partitioned
// on /pk.
func createDBColl(t *testing.T, c *client) {
	t.Helper()
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
}

func TestContainers(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/none/colls", map[string]any{"id": "c"}), 404)
	r := must(t, c.do("POST", "/dbs/db/colls", map[string]any{
		"id":           "sessions",
		"defaultTtl":   60,
		"partitionKey": map[string]any{"paths": []string{"/user"}, "kind": "Hash", "version": 2},
	}, "x-ms-offer-throughput", "1000"), 201)
	m := r.json(t)
	if m["defaultTtl"] != 60.0 || m["_docs"] != "docs/" || m["_rid"] == nil || m["_etag"] == nil || m["_ts"] == nil {
		t.Errorf("created: %s", r.body)
	}
	pk := m["partitionKey"].(map[string]any)
	if pk["kind"] != "Hash" || pk["version"] != 2.0 || pk["paths"].([]any)[0] != "/user" {
		t.Errorf("partitionKey %v", pk)
	}
	if ip := m["indexingPolicy"].(map[string]any); ip["indexingMode"] != "consistent" {
		t.Errorf("indexingPolicy %v", ip)
	}
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "sessions"}), 409)
	for _, bad := range []any{
		map[string]any{"id": "x", "defaultTtl": 0},
		map[string]any{"id": "x", "defaultTtl": -2},
		map[string]any{"id": "x", "defaultTtl": 1.5},
		map[string]any{"id": "x", "defaultTtl": "10"},
		map[string]any{"id": "x", "partitionKey": map[string]any{"paths": []string{"nope"}}},
		map[string]any{"id": "x", "indexingPolicy": map[string]any{"indexingMode": "none"}, "defaultTtl": 10},
		map[string]any{"id": "x", "uniqueKeyPolicy": map[string]any{"uniqueKeys": []any{map[string]any{"paths": []string{"a"}}}}},
		map[string]any{"defaultTtl": 10},
	} {
		if r := c.do("POST", "/dbs/db/colls", bad); r.status != 400 {
			t.Errorf("%v: status %d, want 400: %s", bad, r.status, r.body)
		}
	}
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "x"}, "x-ms-offer-throughput", "-5"), 400)

	read := must(t, c.do("GET", "/dbs/db/colls/sessions", nil), 200)
	if read.header.Get("etag") != m["_etag"] {
		t.Errorf("etag header %q, _etag %q", read.header.Get("etag"), m["_etag"])
	}
	if !strings.Contains(read.header.Get("x-ms-resource-usage"), "documentsCount=0") {
		t.Errorf("usage %q", read.header.Get("x-ms-resource-usage"))
	}

	// Replace: a new default TTL, then none (TTL off), partition key unchanged.
	m["defaultTtl"] = -1
	r = must(t, c.do("PUT", "/dbs/db/colls/sessions", m, "If-Match", m["_etag"].(string)), 200)
	m2 := r.json(t)
	if m2["defaultTtl"] != -1.0 || m2["_etag"] == m["_etag"] {
		t.Errorf("replaced: %s", r.body)
	}
	must(t, c.do("PUT", "/dbs/db/colls/sessions", m, "If-Match", m["_etag"].(string)), 412)
	delete(m2, "defaultTtl")
	r = must(t, c.do("PUT", "/dbs/db/colls/sessions", m2), 200)
	if _, ok := r.json(t)["defaultTtl"]; ok {
		t.Errorf("defaultTtl absent should turn TTL off: %s", r.body)
	}
	m2["partitionKey"] = map[string]any{"paths": []string{"/other"}}
	must(t, c.do("PUT", "/dbs/db/colls/sessions", m2), 400)
	m2["partitionKey"] = pk
	m2["id"] = "renamed"
	must(t, c.do("PUT", "/dbs/db/colls/sessions", m2), 400)
	must(t, c.do("PUT", "/dbs/db/colls/none", map[string]any{"id": "none"}), 404)

	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "plain"}), 201)
	list := must(t, c.do("GET", "/dbs/db/colls", nil), 200)
	if docs := documents(t, list, "DocumentCollections"); len(docs) != 2 {
		t.Errorf("list: %s", list.body)
	}
	q := must(t, c.do("POST", "/dbs/db/colls", map[string]any{"query": "SELECT VALUE c.id FROM c ORDER BY c.id DESC"},
		"Content-Type", "application/query+json"), 200)
	if docs := documents(t, q, "DocumentCollections"); len(docs) != 2 || string(docs[0]) != `"sessions"` {
		t.Errorf("query: %s", q.body)
	}
	must(t, c.do("DELETE", "/dbs/db/colls/plain", nil), 204)
	must(t, c.do("GET", "/dbs/db/colls/plain", nil), 404)
	must(t, c.do("DELETE", "/dbs/db/colls/plain", nil), 404)
	r = must(t, c.do("GET", "/dbs/db/colls/plain/docs/x", nil, "x-ms-documentdb-partitionkey", `["a"]`), 404)
	if r.header.Get("x-ms-substatus") != "1003" {
		t.Errorf("document of a missing container: substatus %q, want 1003", r.header.Get("x-ms-substatus"))
	}
}

func TestDocuments(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	const coll = "/dbs/db/colls/c"
	ada := []string{"x-ms-documentdb-partitionkey", `["ada"]`}

	r := must(t, c.do("POST", coll+"/docs", `{"id":"1","pk":"ada","n":1,"_rid":"client","_self":"client","_attachments":"client"}`, ada...), 201)
	doc := r.json(t)
	for _, k := range []string{"_rid", "_self", "_etag", "_ts", "_attachments"} {
		if doc[k] == nil {
			t.Errorf("created document has no %s: %s", k, r.body)
		}
	}
	if doc["_rid"] == "client" || doc["_attachments"] != "attachments/" || !strings.HasSuffix(doc["_self"].(string), "/") {
		t.Errorf("system properties: %s", r.body)
	}
	if strings.Count(string(r.body), `"_rid"`) != 1 {
		t.Errorf("duplicate _rid: %s", r.body)
	}
	etag := r.header.Get("etag")
	if etag != doc["_etag"] {
		t.Errorf("etag header %q, _etag %v", etag, doc["_etag"])
	}
	if tok := r.header.Get("x-ms-session-token"); !strings.HasPrefix(tok, "0:-1#") {
		t.Errorf("session token %q", tok)
	}
	if ch, err := strconv.ParseFloat(r.header.Get("x-ms-request-charge"), 64); err != nil || ch <= 0 {
		t.Errorf("request charge %q", r.header.Get("x-ms-request-charge"))
	}
	must(t, c.do("POST", coll+"/docs", `{"id":"1","pk":"ada"}`, ada...), 409)
	must(t, c.do("POST", coll+"/docs", `{"id":"1","pk":"bob"}`, ada...), 400)
	must(t, c.do("POST", coll+"/docs", `{"id":"2","pk":"ada"}`), 400) // no partition key header
	must(t, c.do("POST", coll+"/docs", `{"id":"2","pk":"ada"}`, "x-ms-documentdb-partitionkey", `ada`), 400)
	must(t, c.do("POST", coll+"/docs", `{"id":"2","pk":"ada"`, ada...), 400)

	got := must(t, c.do("GET", coll+"/docs/1", nil, ada...), 200).json(t)
	if got["_rid"] != doc["_rid"] || got["_self"] != doc["_self"] || got["n"] != 1.0 {
		t.Errorf("read %v, created %v", got, doc)
	}
	must(t, c.do("GET", coll+"/docs/1", nil, "x-ms-documentdb-partitionkey", `["bob"]`), 404)
	must(t, c.do("GET", coll+"/docs/1", nil, "If-None-Match", etag, ada[0], ada[1]), 304)

	// Replace, with If-Match; the client's copy of the system properties round-trips.
	got["n"] = 2
	body, _ := json.Marshal(got)
	must(t, c.do("PUT", coll+"/docs/1", body, "If-Match", `"0000000000000000"`, ada[0], ada[1]), 412)
	r = must(t, c.do("PUT", coll+"/docs/1", body, "If-Match", etag, ada[0], ada[1]), 200)
	if r.json(t)["n"] != 2.0 || r.header.Get("etag") == etag {
		t.Errorf("replaced: %s", r.body)
	}
	must(t, c.do("PUT", coll+"/docs/nope", `{"id":"nope","pk":"ada"}`, ada...), 404)
	must(t, c.do("PUT", coll+"/docs/1", `{"id":"2","pk":"ada"}`, ada...), 400)

	// Upsert: 201 then 200; Prefer: return=minimal leaves the body out.
	must(t, c.do("POST", coll+"/docs", `{"id":"u","pk":"ada"}`, "x-ms-documentdb-is-upsert", "True", ada[0], ada[1]), 201)
	r = must(t, c.do("POST", coll+"/docs", `{"id":"u","pk":"ada","v":1}`, "x-ms-documentdb-is-upsert", "true", "Prefer", "return=minimal", ada[0], ada[1]), 200)
	if len(r.body) != 0 || r.header.Get("etag") == "" {
		t.Errorf("minimal upsert: body %q etag %q", r.body, r.header.Get("etag"))
	}

	// Ids that need escaping in a path.
	must(t, c.do("POST", coll+"/docs", `{"id":"a b%c","pk":"ada"}`, ada...), 201)
	must(t, c.do("GET", coll+"/docs/a%20b%25c", nil, ada...), 200)

	// Partition key values: numbers, booleans, null, none, and the Go SDK's
	// strconv.QuoteToASCII escapes.
	for _, tc := range []struct{ doc, header string }{
		{`{"id":"n","pk":12.5}`, `[12.5]`},
		{`{"id":"b","pk":true}`, `[true]`},
		{`{"id":"z","pk":null}`, `[null]`},
		{`{"id":"none"}`, `[{}]`},
		{`{"id":"e","pk":"é😀\u0007"}`, `["\u00e9\U0001f600\a"]`},
	} {
		must(t, c.do("POST", coll+"/docs", tc.doc, "x-ms-documentdb-partitionkey", tc.header), 201)
		must(t, c.do("GET", coll+"/docs/"+strings.Split(tc.doc, `"`)[3], nil, "x-ms-documentdb-partitionkey", tc.header), 200)
	}

	must(t, c.do("DELETE", coll+"/docs/1", nil, "If-Match", `"0000000000000000"`, ada[0], ada[1]), 412)
	r = must(t, c.do("DELETE", coll+"/docs/1", nil, ada...), 204)
	if len(r.body) != 0 {
		t.Errorf("delete body %q", r.body)
	}
	must(t, c.do("DELETE", coll+"/docs/1", nil, ada...), 404)
	must(t, c.do("PATCH", coll+"/docs/u", `{"operations":[]}`, ada...), 400)
	must(t, c.do("POST", coll+"/docs", `[]`, "x-ms-cosmos-is-batch-request", "True", ada[0], ada[1]), 400)
	must(t, c.do("POST", coll+"/docs", `{"id":"t","pk":"ada"}`, "x-ms-documentdb-pre-trigger-include", "tr", ada[0], ada[1]), 404)
	must(t, c.do("GET", "/dbs/db/colls/c/schemas", nil), 400)
	must(t, c.do("GET", coll+"/docs", nil, "A-IM", "Bogus Feed"), 400)
	must(t, c.do("GET", "/dbs/db/clientencryptionkeys", nil), 400)
	must(t, c.do("GET", "/nothing/here", nil), 404)

	// A container without partition key paths takes no header, [] or [{}].
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "flat"}), 201)
	must(t, c.do("POST", "/dbs/db/colls/flat/docs", `{"id":"1"}`), 201)
	must(t, c.do("GET", "/dbs/db/colls/flat/docs/1", nil, "x-ms-documentdb-partitionkey", `[]`), 200)
	must(t, c.do("GET", "/dbs/db/colls/flat/docs/1", nil, "x-ms-documentdb-partitionkey", `[{}]`), 200)
}

func TestBodyLimit(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c"}), 201)
	big := `{"id":"big","s":"` + strings.Repeat("x", cosmosrest.MaxRequestSize) + `"}`
	must(t, c.do("POST", "/dbs/db/colls/c/docs", big), 413)
	justOver := `{"id":"big","s":"` + strings.Repeat("x", lethe.MaxItemSize) + `"}`
	must(t, c.do("POST", "/dbs/db/colls/c/docs", justOver), 413)
	r := must(t, c.do("GET", "/dbs/db/colls/c", nil), 200)
	if !strings.Contains(r.header.Get("x-ms-resource-usage"), "documentsCount=0") {
		t.Errorf("a refused document was stored: %s", r.header.Get("x-ms-resource-usage"))
	}
}

func TestTTLExpiry(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	_, c := testServer(t, cosmosrest.Config{Clock: clock})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "defaultTtl": 100, "partitionKey": map[string]any{"paths": []string{"/id"}}}), 201)
	const coll = "/dbs/db/colls/c"
	pk := func(id string) []string { return []string{"x-ms-documentdb-partitionkey", `["` + id + `"]`} }
	must(t, c.do("POST", coll+"/docs", `{"id":"default"}`, pk("default")...), 201)
	must(t, c.do("POST", coll+"/docs", `{"id":"short","ttl":10}`, pk("short")...), 201)
	must(t, c.do("POST", coll+"/docs", `{"id":"never","ttl":-1}`, pk("never")...), 201)
	r := must(t, c.do("GET", coll+"/docs/short", nil, pk("short")...), 200)
	if r.json(t)["_ts"] != 1_700_000_000.0 {
		t.Errorf("_ts from the injected clock: %s", r.body)
	}
	count := func() string {
		r := must(t, c.query(coll, "SELECT VALUE COUNT(1) FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", "0"), 200)
		return string(documents(t, r, "Documents")[0])
	}
	if n := count(); n != "3" {
		t.Fatalf("count %s", n)
	}
	clock.Advance(10 * time.Second)
	must(t, c.do("GET", coll+"/docs/short", nil, pk("short")...), 404)
	if n := count(); n != "2" {
		t.Fatalf("count after 10s: %s", n)
	}
	must(t, c.do("POST", coll+"/docs", `{"id":"short"}`, pk("short")...), 201) // create over an expired item
	clock.Advance(90 * time.Second)
	must(t, c.do("GET", coll+"/docs/default", nil, pk("default")...), 404)
	must(t, c.do("GET", coll+"/docs/short", nil, pk("short")...), 200)
	must(t, c.do("GET", coll+"/docs/never", nil, pk("never")...), 200)

	// Lengthen the default through a replace: it applies from each item's last write.
	props := must(t, c.do("GET", coll, nil), 200).json(t)
	props["defaultTtl"] = 1000
	must(t, c.do("PUT", coll, props), 200)
	clock.Advance(500 * time.Second)
	must(t, c.do("GET", coll+"/docs/short", nil, pk("short")...), 200)
	delete(props, "defaultTtl") // off: nothing expires
	must(t, c.do("PUT", coll, props), 200)
	clock.Advance(time.Hour)
	must(t, c.do("GET", coll+"/docs/short", nil, pk("short")...), 200)
	if n := count(); n != "2" {
		t.Fatalf("count with TTL off: %s", n)
	}
}

func TestQueries(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/t"}}}), 201)
	const coll = "/dbs/db/colls/c"
	for i := range 25 {
		tenant := []string{"a", "b"}[i%2]
		must(t, c.do("POST", coll+"/docs", fmt.Sprintf(`{"id":"%02d","t":%q,"n":%d}`, i, tenant, i), "x-ms-documentdb-partitionkey", `["`+tenant+`"]`), 201)
	}
	params := []map[string]any{{"name": "@min", "value": 10}}
	// Cross-partition, paged by 4, sent for the one range as the SDKs send
	// it after asking for the plan: every result once, in order.
	var ids []string
	token := ""
	pages := 0
	for {
		r := must(t, c.query(coll, "SELECT VALUE c.id FROM c WHERE c.n >= @min ORDER BY c.n", params, "x-ms-max-item-count", "4", "x-ms-continuation", token, "x-ms-documentdb-partitionkeyrangeid", "0"), 200)
		docs := documents(t, r, "Documents")
		if r.header.Get("x-ms-item-count") != strconv.Itoa(len(docs)) {
			t.Errorf("x-ms-item-count %q, %d documents", r.header.Get("x-ms-item-count"), len(docs))
		}
		for _, d := range docs {
			ids = append(ids, strings.Trim(string(d), `"`))
		}
		pages++
		token = r.header.Get("x-ms-continuation")
		if token == "" {
			break
		}
	}
	if len(ids) != 15 || ids[0] != "10" || ids[14] != "24" || pages != 4 {
		t.Fatalf("%d pages: %v", pages, ids)
	}
	// Single partition.
	r := must(t, c.query(coll, "SELECT VALUE COUNT(1) FROM c", nil, "x-ms-documentdb-partitionkey", `["a"]`), 200)
	if d := documents(t, r, "Documents"); string(d[0]) != "13" {
		t.Errorf("count in a: %s", d[0])
	}
	// TOP, aggregates, DISTINCT: all evaluated by lethe.
	for q, want := range map[string]string{
		"SELECT TOP 2 VALUE c.n FROM c ORDER BY c.n DESC": "[24,23]",
		"SELECT VALUE SUM(c.n) FROM c":                    "[300]",
		"SELECT DISTINCT VALUE c.t FROM c":                "[\"a\",\"b\"]",
	} {
		r := must(t, c.query(coll, q, nil, "x-ms-documentdb-partitionkeyrangeid", "0"), 200)
		got, _ := json.Marshal(documents(t, r, "Documents"))
		if string(got) != want {
			t.Errorf("%s: %s, want %s", q, got, want)
		}
	}
	// Errors.
	r = must(t, c.query(coll, "SELECT * FROM c WHERE", nil), 400)
	if !strings.Contains(r.json(t)["message"].(string), "1:") {
		t.Errorf("syntax error message: %s", r.body)
	}
	cross := []string{"x-ms-documentdb-query-enablecrosspartition", "True"}
	r = must(t, c.query(coll, "SELECT * FROM c WHERE c.n = @missing", nil, cross...), 400)
	if !strings.Contains(r.json(t)["message"].(string), "@missing") {
		t.Errorf("missing parameter: %s", r.body)
	}
	must(t, c.query(coll, "SELECT * FROM c", nil, append(cross, "x-ms-continuation", "bogus")...), 400)
	must(t, c.query(coll, "SELECT * FROM c", nil, append(cross, "x-ms-max-item-count", "-7")...), 400)
	must(t, c.do("POST", coll+"/docs", `{"nope":1}`, "Content-Type", "application/query+json"), 400)

	// Read feed, -1: everything in one page.
	r = must(t, c.do("GET", coll+"/docs", nil, "x-ms-max-item-count", "-1"), 200)
	if d := documents(t, r, "Documents"); len(d) != 25 || r.header.Get("x-ms-continuation") != "" {
		t.Errorf("read feed: %d documents", len(d))
	}
	r = must(t, c.do("GET", coll+"/docs", nil, "x-ms-documentdb-partitionkey", `["b"]`), 200)
	if d := documents(t, r, "Documents"); len(d) != 12 {
		t.Errorf("read feed of b: %d documents", len(d))
	}

	// The service's plan: each range counts its own, the SDK sums them,
	// over the whole space of effective partition keys.
	r = must(t, c.query(coll, "SELECT VALUE COUNT(1) FROM c", nil, "x-ms-cosmos-is-query-plan-request", "True"), 200)
	var plan struct {
		QueryInfo struct {
			Aggregates     []string `json:"aggregates"`
			RewrittenQuery string   `json:"rewrittenQuery"`
			HasSelectValue bool     `json:"hasSelectValue"`
		} `json:"queryInfo"`
		QueryRanges []struct {
			Min, Max string
		} `json:"queryRanges"`
	}
	if err := json.Unmarshal(r.body, &plan); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.QueryInfo.Aggregates, []string{"Count"}) || plan.QueryInfo.RewrittenQuery != "SELECT VALUE [{\"item\": COUNT(1)}]\nFROM c" || !plan.QueryInfo.HasSelectValue ||
		len(plan.QueryRanges) != 1 || plan.QueryRanges[0].Min != "" || plan.QueryRanges[0].Max != "FF" {
		t.Errorf("plan: %s", r.body)
	}
	r = must(t, c.query(coll, plan.QueryInfo.RewrittenQuery, nil, "x-ms-documentdb-partitionkeyrangeid", "0"), 200)
	if d := documents(t, r, "Documents"); len(d) != 1 || string(d[0]) != `[{"item":25}]` {
		t.Errorf("the rewritten count over range 0: %s", r.body)
	}
	must(t, c.query(coll, "SELECT FROM", nil, "x-ms-cosmos-is-query-plan-request", "True"), 400)
	// A query routed to the one range.
	r = must(t, c.query(coll, "SELECT VALUE COUNT(1) FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", "0"), 200)
	if d := documents(t, r, "Documents"); string(d[0]) != "25" {
		t.Errorf("count over range 0: %s", d[0])
	}
	// A range the container does not have is gone (410, substatus 1002).
	must(t, c.query(coll, "SELECT VALUE COUNT(1) FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", "1"), 410)
}

func TestPartitionKeyRanges(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/t"}}}), 201)
	r := must(t, c.do("GET", "/dbs/db/colls/c/pkranges", nil, "A-IM", "Incremental Feed", "x-ms-max-item-count", "-1"), 200)
	ranges := documents(t, r, "PartitionKeyRanges")
	var rg map[string]any
	if len(ranges) != 1 || json.Unmarshal(ranges[0], &rg) != nil || rg["id"] != "0" || rg["minInclusive"] != "" || rg["maxExclusive"] != "FF" {
		t.Fatalf("ranges: %s", r.body)
	}
	etag := r.header.Get("etag")
	must(t, c.do("GET", "/dbs/db/colls/c/pkranges", nil, "A-IM", "Incremental Feed", "If-None-Match", etag), 304)
	must(t, c.do("GET", "/dbs/db/colls/c/pkranges/0", nil), 200)
	must(t, c.do("GET", "/dbs/db/colls/c/pkranges/1", nil), 404)
	must(t, c.do("GET", "/dbs/db/colls/none/pkranges", nil), 404)
}

func TestThrottling(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{Clock: lethe.NewManualClock(time.Unix(1_700_000_000, 0))})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c"}, "x-ms-offer-throughput", "400"), 201) // 72 creates (5.5 RU each) fit: the clock stands still
	var throttled response
	for i := range 100 {
		r := c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`{"id":"%d"}`, i))
		if r.status == 429 {
			throttled = r
			break
		}
		must(t, r, 201)
	}
	if throttled.status != 429 {
		t.Fatal("never throttled")
	}
	ms, err := strconv.Atoi(throttled.header.Get("x-ms-retry-after-ms"))
	if err != nil || ms < 1 || ms > 2000 {
		t.Errorf("x-ms-retry-after-ms %q", throttled.header.Get("x-ms-retry-after-ms"))
	}
	if throttled.header.Get("x-ms-substatus") != "3200" || throttled.json(t)["code"] != "TooManyRequests" {
		t.Errorf("429: substatus %q body %s", throttled.header.Get("x-ms-substatus"), throttled.body)
	}
}

func TestDurable(t *testing.T) {
	dir := t.TempDir()
	h, err := cosmosrest.New(cosmosrest.Config{Dir: dir, Sync: lethe.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	_, c := serve(t, h)
	createDB(t, c, "keep")
	createDB(t, c, "drop")
	must(t, c.do("POST", "/dbs/keep/colls", map[string]any{"id": "c", "defaultTtl": -1}), 201)
	must(t, c.do("POST", "/dbs/keep/colls/c/docs", `{"id":"1","ttl":100000}`), 201)
	must(t, c.do("DELETE", "/dbs/drop", nil), 204)
	c.srv.Close()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if r := direct(t, h, "GET", "/dbs/keep"); r.status != 503 {
		t.Errorf("after Close: status %d, want 503", r.status)
	}

	h2, err := cosmosrest.New(cosmosrest.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cosmosrest.New(cosmosrest.Config{Dir: dir}); !errors.Is(err, lethe.ErrLocked) {
		t.Errorf("a second handler on the same directory: %v, want lethe.ErrLocked", err)
	}
	// Even without databases, the directory is taken.
	empty := t.TempDir()
	h3, err := cosmosrest.New(cosmosrest.Config{Dir: empty})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cosmosrest.New(cosmosrest.Config{Dir: empty}); !errors.Is(err, lethe.ErrLocked) {
		t.Errorf("a second handler on an empty directory: %v, want lethe.ErrLocked", err)
	}
	h3.Close()
	h4, err := cosmosrest.New(cosmosrest.Config{Dir: empty})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	h4.Close()
	_, c2 := serve(t, h2)
	t.Cleanup(func() { h2.Close() })
	list := documents(t, must(t, c2.do("GET", "/dbs", nil), 200), "Databases")
	if len(list) != 1 || !strings.Contains(string(list[0]), `"keep"`) {
		t.Fatalf("databases after reopening: %s", list)
	}
	got := must(t, c2.do("GET", "/dbs/keep/colls/c/docs/1", nil), 200).json(t)
	if got["ttl"] != 100000.0 {
		t.Errorf("document after reopening: %v", got)
	}
	if p := must(t, c2.do("GET", "/dbs/keep/colls/c", nil), 200).json(t); p["defaultTtl"] != -1.0 {
		t.Errorf("container after reopening: %v", p)
	}
}

// serve serves h over TLS, without closing h at the end.
func serve(t *testing.T, h *cosmosrest.Handler) (*cosmosrest.Handler, *client) {
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return h, &client{t: t, srv: srv, key: cosmosrest.EmulatorKey}
}

func TestOffers(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	created := must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c"}, "x-ms-offer-throughput", "400"), 201).json(t)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "unlimited"}), 201)
	list := documents(t, must(t, c.do("GET", "/offers", nil), 200), "Offers")
	if len(list) != 1 {
		t.Fatalf("offers: %s", list)
	}
	r := must(t, c.do("POST", "/offers", map[string]any{"query": "SELECT * FROM c WHERE c.offerResourceId = '" + created["_rid"].(string) + "'"},
		"Content-Type", "application/query+json"), 200)
	found := documents(t, r, "Offers")
	if len(found) != 1 {
		t.Fatalf("offer of c: %s", r.body)
	}
	var offer map[string]any
	if err := json.Unmarshal(found[0], &offer); err != nil {
		t.Fatal(err)
	}
	if offer["content"].(map[string]any)["offerThroughput"] != 400.0 || offer["offerResourceId"] != created["_rid"] {
		t.Errorf("offer %v", offer)
	}
	self := "/" + strings.TrimSuffix(offer["_self"].(string), "/")
	must(t, c.do("GET", self, nil), 200)
	offer["content"] = map[string]any{"offerThroughput": 1000}
	r = must(t, c.do("PUT", self, offer), 200)
	if r.json(t)["content"].(map[string]any)["offerThroughput"] != 1000.0 {
		t.Errorf("replaced offer: %s", r.body)
	}
	offer["content"] = map[string]any{"offerThroughput": 0}
	must(t, c.do("PUT", self, offer), 400)
	must(t, c.do("GET", "/offers/nope", nil), 404)
	must(t, c.do("POST", "/offers", "{}"), 400)
}

// patchCase is a request that must fail with status and a message
// containing msg, changing nothing.
type patchCase struct {
	name   string
	id     string
	body   string
	hdr    []string
	status int
	msg    string
}

func TestPatch(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	_, c := testServer(t, cosmosrest.Config{Clock: clock})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "defaultTtl": -1, "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	const coll = "/dbs/db/colls/c"
	ada := []string{"x-ms-documentdb-partitionkey", `["ada"]`}
	created := must(t, c.do("POST", coll+"/docs", `{"id":"1","pk":"ada","n":1,"f":1.5,"a":{"b":[1,2,3]},"s":"x","old":"o"}`, ada...), 201)
	etag := created.header.Get("etag")

	// Every operation type, in order, all applied.
	body := `{"operations":[
		{"op":"set","path":"/s","value":"y"},
		{"op":"add","path":"/a/b/1","value":9},
		{"op":"remove","path":"/a/b/0"},
		{"op":"incr","path":"/n","value":41},
		{"op":"incr","path":"/f","value":0.25},
		{"op":"replace","path":"/old","value":{"k":[true,null]}},
		{"op":"move","from":"/old","path":"/moved"},
		{"op":"set","path":"/nothing","value":null}]}`
	r := must(t, c.do("PATCH", coll+"/docs/1", body, ada...), 200)
	got := r.json(t)
	want := map[string]any{"s": "y", "n": 42.0, "f": 1.75, "nothing": nil,
		"a": map[string]any{"b": []any{9.0, 2.0, 3.0}}, "moved": map[string]any{"k": []any{true, nil}}}
	for k, v := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v; body %s", k, got[k], v, r.body)
		}
	}
	if _, ok := got["old"]; ok {
		t.Errorf("moved member still there: %s", r.body)
	}
	if _, ok := got["nothing"]; !ok {
		t.Errorf("set to null did not create the member: %s", r.body)
	}
	if got["_rid"] == nil || got["_self"] == nil || got["_attachments"] != "attachments/" || got["_etag"] == nil {
		t.Errorf("system properties: %s", r.body)
	}
	if r.header.Get("etag") == etag || r.header.Get("etag") != got["_etag"] {
		t.Errorf("etag %q (before %q), _etag %v", r.header.Get("etag"), etag, got["_etag"])
	}
	if ch, err := strconv.ParseFloat(r.header.Get("x-ms-request-charge"), 64); err != nil || ch <= 0 {
		t.Errorf("request charge %q", r.header.Get("x-ms-request-charge"))
	}
	etag = r.header.Get("etag")

	// A bare array of operations; Prefer: return=minimal; the current etag.
	r = must(t, c.do("PATCH", coll+"/docs/1", `[{"op":"incr","path":"/n","value":-2}]`, "Prefer", "return=minimal", "If-Match", etag, ada[0], ada[1]), 200)
	if len(r.body) != 0 || r.header.Get("etag") == "" || r.header.Get("etag") == etag {
		t.Errorf("minimal patch: body %q etag %q", r.body, r.header.Get("etag"))
	}
	// A condition that holds.
	must(t, c.do("PATCH", coll+"/docs/1", `{"condition":"from c where c.n = 40","operations":[{"op":"set","path":"/cond","value":true}]}`, ada...), 200)

	before := must(t, c.do("GET", coll+"/docs/1", nil, ada...), 200).body
	eleven := `{"operations":[` + strings.TrimSuffix(strings.Repeat(`{"op":"set","path":"/x","value":1},`, 11), ",") + `]}`
	for _, tc := range []patchCase{
		{"malformed JSON", "1", `{"operations":[`, nil, 400, "not valid JSON"},
		{"empty body", "1", ``, nil, 400, "no body"},
		{"a string", "1", `"set"`, nil, 400, "not an array"},
		{"no operations", "1", `{}`, nil, 400, `no "operations"`},
		{"operations an object", "1", `{"operations":{"op":"set"}}`, nil, 400, "not an array"},
		{"no operation", "1", `{"operations":[]}`, nil, 400, "no operations"},
		{"operation not an object", "1", `{"operations":[1]}`, nil, 400, "Operation(1)"},
		{"unknown op", "1", `{"operations":[{"op":"frob","path":"/n","value":1}]}`, nil, 400, `"frob"`},
		{"op in capitals", "1", `{"operations":[{"op":"SET","path":"/n","value":1}]}`, nil, 400, `"SET"`},
		{"no op", "1", `{"operations":[{"path":"/n","value":1}]}`, nil, 400, `no "op"`},
		{"no path", "1", `{"operations":[{"op":"set","value":1}]}`, nil, 400, `no "path"`},
		{"no value", "1", `{"operations":[{"op":"set","path":"/n"}]}`, nil, 400, `no "value"`},
		{"incr by a string", "1", `{"operations":[{"op":"incr","path":"/n","value":"1"}]}`, nil, 400, "not a number"},
		{"incr out of range", "1", `{"operations":[{"op":"incr","path":"/n","value":1e400}]}`, nil, 400, "not a number"},
		{"incr of a string", "1", `{"operations":[{"op":"incr","path":"/s","value":1}]}`, nil, 400, "not a number"},
		{"move without from", "1", `{"operations":[{"op":"move","path":"/n"}]}`, nil, 400, `no "from"`},
		{"eleven operations", "1", eleven, nil, 400, "limit of 10"},
		{"relative path", "1", `{"operations":[{"op":"set","path":"n","value":1}]}`, nil, 400, "JSON Pointer"},
		{"the id", "1", `{"operations":[{"op":"set","path":"/id","value":"2"}]}`, nil, 400, "system property"},
		{"the partition key", "1", `{"operations":[{"op":"set","path":"/pk","value":"bob"}]}`, nil, 400, "partition key"},
		{"replace of nothing", "1", `{"operations":[{"op":"replace","path":"/absent","value":1}]}`, nil, 400, "does not exist"},
		{"second operation fails", "1", `{"operations":[{"op":"set","path":"/n","value":99},{"op":"remove","path":"/absent"}]}`, nil, 400, "Operation(2)"},
		{"invalid value", "1", `{"operations":[{"op":"set","path":"/n","value":01}]}`, nil, 400, "not valid"},
		{"bad condition", "1", `{"condition":"where c.n = 1","operations":[{"op":"set","path":"/n","value":1}]}`, nil, 400, "FROM clause"},
		{"condition false", "1", `{"condition":"from c where c.n = 0","operations":[{"op":"set","path":"/n","value":1}]}`, nil, 412, "condition"},
		{"stale If-Match", "1", `{"operations":[{"op":"set","path":"/n","value":1}]}`, []string{"If-Match", `"0000000000000000"`}, 412, ""},
		{"missing item", "2", `{"operations":[{"op":"set","path":"/n","value":1}]}`, nil, 404, ""},
		{"other partition", "1", `{"operations":[{"op":"set","path":"/n","value":1}]}`, []string{"x-ms-documentdb-partitionkey", `["bob"]`}, 404, ""},
		{"no partition key", "1", `{"operations":[{"op":"set","path":"/n","value":1}]}`, []string{"x-ms-documentdb-partitionkey", ""}, 400, "PartitionKey"},
		{"trigger", "1", `{"operations":[{"op":"set","path":"/n","value":1}]}`, []string{"x-ms-documentdb-pre-trigger-include", "t"}, 400, "triggers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := must(t, c.do("PATCH", coll+"/docs/"+tc.id, tc.body, append(append([]string{}, ada...), tc.hdr...)...), tc.status)
			m := r.json(t)
			if m["code"] != map[int]string{400: "BadRequest", 404: "NotFound", 412: "PreconditionFailed"}[tc.status] || !strings.Contains(m["message"].(string), tc.msg) {
				t.Errorf("body %s, want a message with %q", r.body, tc.msg)
			}
		})
	}
	if after := must(t, c.do("GET", coll+"/docs/1", nil, ada...), 200).body; string(after) != string(before) {
		t.Errorf("refused patches changed the item:\n%s\n%s", before, after)
	}

	// A ttl set through a patch makes the item expire; an expired item
	// cannot be patched.
	must(t, c.do("PATCH", coll+"/docs/1", `{"operations":[{"op":"add","path":"/ttl","value":5}]}`, ada...), 200)
	clock.Advance(4 * time.Second)
	must(t, c.do("GET", coll+"/docs/1", nil, ada...), 200)
	clock.Advance(time.Second)
	must(t, c.do("GET", coll+"/docs/1", nil, ada...), 404)
	must(t, c.do("PATCH", coll+"/docs/1", `{"operations":[{"op":"remove","path":"/ttl"}]}`, ada...), 404)
	r = must(t, c.do("PATCH", coll+"/docs/1", `{"operations":[{"op":"set","path":"/ttl","value":0}]}`, ada...), 404)
	if r.json(t)["code"] != "NotFound" {
		t.Errorf("patch of an expired item: %s", r.body)
	}
}

// batchHeaders are the headers the SDKs send with a transactional batch.
func batchHeaders(pk string, more ...string) []string {
	return append([]string{"x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True",
		"x-ms-cosmos-batch-ordered", "True", "x-ms-documentdb-partitionkey", pk}, more...)
}

// batchResults decodes a batch response's body.
func batchResults(t *testing.T, r response) []map[string]any {
	t.Helper()
	var res []map[string]any
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatalf("batch response %q: %v", r.body, err)
	}
	return res
}

func statuses(res []map[string]any) string {
	var s []string
	for _, r := range res {
		s = append(s, fmt.Sprint(r["statusCode"]))
	}
	return strings.Join(s, " ")
}

func TestBatch(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	_, c := testServer(t, cosmosrest.Config{Clock: clock})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "defaultTtl": -1, "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	const coll = "/dbs/db/colls/c"
	ada := []string{"x-ms-documentdb-partitionkey", `["ada"]`}
	must(t, c.do("POST", coll+"/docs", `{"id":"1","pk":"ada","n":1}`, ada...), 201)
	must(t, c.do("POST", coll+"/docs", `{"id":"del","pk":"ada"}`, ada...), 201)
	etag1 := must(t, c.do("GET", coll+"/docs/1", nil, ada...), 200).header.Get("etag")

	// Every operation type; the client's system properties are dropped.
	ops := `[
		{"operationType":"Create","resourceBody":{"id":"2","pk":"ada","_rid":"client","_self":"client","_attachments":"client"}},
		{"operationType":"Upsert","resourceBody":{"id":"3","pk":"ada"}},
		{"operationType":"Read","id":"1"},
		{"operationType":"Replace","id":"1","ifMatch":` + strconv.Quote(etag1) + `,"resourceBody":{"id":"1","pk":"ada","n":2}},
		{"operationType":"Patch","id":"1","resourceBody":{"operations":[{"op":"incr","path":"/n","value":10}]}},
		{"operationType":"Delete","id":"del","partitionKey":"[\"ada\"]"},
		{"operationType":"Read","id":"1"}]`
	r := must(t, c.do("POST", coll+"/docs", ops, batchHeaders(`["ada"]`)...), 200)
	res := batchResults(t, r)
	if got := statuses(res); got != "201 201 200 200 200 204 200" {
		t.Fatalf("statuses %s; body %s", got, r.body)
	}
	sum := 0.0
	for i, x := range res {
		sum += x["requestCharge"].(float64)
		if x["requestCharge"].(float64) <= 0 {
			t.Errorf("result %d: charge %v", i, x["requestCharge"])
		}
		body, hasBody := x["resourceBody"].(map[string]any)
		if i == 5 {
			if hasBody || x["eTag"] != nil {
				t.Errorf("delete result %v", x)
			}
			continue
		}
		if !hasBody || body["_rid"] == nil || body["_self"] == nil || body["_attachments"] != "attachments/" {
			t.Errorf("result %d: resourceBody %v", i, x["resourceBody"])
			continue
		}
		if x["eTag"] != body["_etag"] {
			t.Errorf("result %d: eTag %v, _etag %v", i, x["eTag"], body["_etag"])
		}
	}
	if strings.Count(string(r.body), `"_rid":"client"`) != 0 {
		t.Errorf("the client's _rid was kept: %s", r.body)
	}
	if n := res[6]["resourceBody"].(map[string]any)["n"]; n != 12.0 {
		t.Errorf("read after replace and patch: n = %v", n)
	}
	if ch, err := strconv.ParseFloat(r.header.Get("x-ms-request-charge"), 64); err != nil || ch < sum-0.01 || ch > sum+0.01 {
		t.Errorf("x-ms-request-charge %q, results' sum %v", r.header.Get("x-ms-request-charge"), sum)
	}
	if !strings.HasPrefix(r.header.Get("x-ms-session-token"), "0:-1#") {
		t.Errorf("session token %q", r.header.Get("x-ms-session-token"))
	}
	must(t, c.do("GET", coll+"/docs/del", nil, ada...), 404)
	read2 := must(t, c.do("GET", coll+"/docs/2", nil, ada...), 200).json(t)
	if read2["_rid"] == "client" {
		t.Errorf("stored the client's _rid: %v", read2)
	}

	// Prefer: return=minimal: only reads have a body.
	r = must(t, c.do("POST", coll+"/docs", `[{"operationType":"Upsert","resourceBody":{"id":"4","pk":"ada"}},{"operationType":"Read","id":"2"}]`,
		batchHeaders(`["ada"]`, "Prefer", "return=minimal")...), 200)
	res = batchResults(t, r)
	if res[0]["resourceBody"] != nil || res[0]["eTag"] == nil || res[1]["resourceBody"] == nil {
		t.Errorf("minimal batch: %s", r.body)
	}

	// A failing operation: 207, its own status, 424 for the others,
	// nothing applied.
	r = must(t, c.do("POST", coll+"/docs", `[{"operationType":"Create","resourceBody":{"id":"new","pk":"ada"}},
		{"operationType":"Patch","id":"1","resourceBody":{"operations":[{"op":"set","path":"/n","value":0}]}},
		{"operationType":"Create","resourceBody":{"id":"2","pk":"ada"}},
		{"operationType":"Delete","id":"3"}]`, batchHeaders(`["ada"]`)...), 207)
	res = batchResults(t, r)
	if got := statuses(res); got != "424 424 409 424" {
		t.Errorf("failed batch statuses %s; body %s", got, r.body)
	}
	if res[2]["message"] == nil || res[2]["resourceBody"] != nil {
		t.Errorf("failing result %v", res[2])
	}
	must(t, c.do("GET", coll+"/docs/new", nil, ada...), 404)
	must(t, c.do("GET", coll+"/docs/3", nil, ada...), 200)
	if n := must(t, c.do("GET", coll+"/docs/1", nil, ada...), 200).json(t)["n"]; n != 12.0 {
		t.Errorf("a failed batch patched the item: n = %v", n)
	}
	for _, tc := range []struct {
		name, ops string
		status    int
	}{
		{"stale ifMatch", `[{"operationType":"Replace","id":"1","ifMatch":"\"0000000000000000\"","resourceBody":{"id":"1","pk":"ada"}}]`, 412},
		{"condition false", `[{"operationType":"Patch","id":"1","resourceBody":{"condition":"from c where c.n = 0","operations":[{"op":"set","path":"/n","value":0}]}}]`, 412},
		{"patch of the id", `[{"operationType":"Patch","id":"1","resourceBody":{"operations":[{"op":"set","path":"/id","value":"x"}]}}]`, 400},
		{"read of nothing", `[{"operationType":"Read","id":"nothing"}]`, 404},
		{"other partition key", `[{"operationType":"Create","resourceBody":{"id":"b","pk":"bob"}}]`, 400},
	} {
		r := must(t, c.do("POST", coll+"/docs", `[{"operationType":"Upsert","resourceBody":{"id":"fresh","pk":"ada"}},`+tc.ops[1:], batchHeaders(`["ada"]`)...), 207)
		if got, want := statuses(batchResults(t, r)), fmt.Sprintf("424 %d", tc.status); got != want {
			t.Errorf("%s: statuses %s, want %s", tc.name, got, want)
		}
	}

	// Requests refused whole: 400, nothing applied.
	var many []string
	for i := range 101 {
		many = append(many, fmt.Sprintf(`{"operationType":"Create","resourceBody":{"id":"m%d","pk":"ada"}}`, i))
	}
	fresh := `{"operationType":"Create","resourceBody":{"id":"fresh","pk":"ada"}}`
	for _, tc := range []struct {
		name, body string
		hdr        []string
		msg        string
	}{
		{"malformed JSON", `[` + fresh, nil, "not valid JSON"},
		{"an object", fresh, nil, "not a JSON array"},
		{"empty", `[]`, nil, "no operations"},
		{"101 operations", "[" + strings.Join(many, ",") + "]", nil, "limit of 100"},
		{"operation not an object", `[` + fresh + `,1]`, nil, "operation 1"},
		{"no operationType", `[` + fresh + `,{"id":"1"}]`, nil, "no operationType"},
		{"unknown operationType", `[` + fresh + `,{"operationType":"Frob","id":"1"}]`, nil, `"Frob"`},
		{"read without id", `[` + fresh + `,{"operationType":"Read"}]`, nil, "no id"},
		{"create without body", `[` + fresh + `,{"operationType":"Create"}]`, nil, "resourceBody"},
		{"create of an array", `[` + fresh + `,{"operationType":"Create","resourceBody":[1]}]`, nil, "resourceBody"},
		{"patch without body", `[` + fresh + `,{"operationType":"Patch","id":"1"}]`, nil, "resourceBody"},
		{"patch with an unknown op", `[` + fresh + `,{"operationType":"Patch","id":"1","resourceBody":{"operations":[{"op":"frob","path":"/n"}]}}]`, nil, `"frob"`},
		{"ifNoneMatch", `[` + fresh + `,{"operationType":"Read","id":"1","ifNoneMatch":"*"}]`, nil, "ifNoneMatch"},
		{"operation partition key", `[` + fresh + `,{"operationType":"Read","id":"1","partitionKey":"[\"bob\"]"}]`, nil, "One or more operations within the batch request have a different partition key value than the request."},
		{"bad operation partition key", `[` + fresh + `,{"operationType":"Read","id":"1","partitionKey":"[bob"}]`, nil, "partitionKey"},
		{"no partition key header", `[` + fresh + `]`, []string{"x-ms-documentdb-partitionkey", ""}, "PartitionKey"},
		{"continue on error", `[` + fresh + `]`, []string{"x-ms-cosmos-batch-continue-on-error", "True"}, "continue-on-error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := must(t, c.do("POST", coll+"/docs", tc.body, batchHeaders(`["ada"]`, tc.hdr...)...), 400)
			if m := r.json(t); m["code"] != "BadRequest" || !strings.Contains(m["message"].(string), tc.msg) {
				t.Errorf("body %s, want a message with %q", r.body, tc.msg)
			}
		})
	}
	must(t, c.do("GET", coll+"/docs/fresh", nil, ada...), 404)
	must(t, c.do("GET", coll+"/docs/m0", nil, ada...), 404)

	// An expired item is missing inside a batch as outside: it cannot be
	// read or replaced, and can be created again.
	must(t, c.do("POST", coll+"/docs", `{"id":"short","pk":"ada","ttl":5}`, ada...), 201)
	clock.Advance(5 * time.Second)
	r = must(t, c.do("POST", coll+"/docs", `[{"operationType":"Read","id":"short"}]`, batchHeaders(`["ada"]`)...), 207)
	if got := statuses(batchResults(t, r)); got != "404" {
		t.Errorf("read of an expired item: %s", got)
	}
	r = must(t, c.do("POST", coll+"/docs", `[{"operationType":"Patch","id":"short","resourceBody":[{"op":"set","path":"/a","value":1}]}]`, batchHeaders(`["ada"]`)...), 207)
	if got := statuses(batchResults(t, r)); got != "404" {
		t.Errorf("patch of an expired item: %s", got)
	}
	r = must(t, c.do("POST", coll+"/docs", `[{"operationType":"Create","resourceBody":{"id":"short","pk":"ada"}}]`, batchHeaders(`["ada"]`)...), 200)
	if got := statuses(batchResults(t, r)); got != "201" {
		t.Errorf("create over an expired item: %s", got)
	}

	// A container without partition key paths takes no header.
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "flat"}), 201)
	r = must(t, c.do("POST", "/dbs/db/colls/flat/docs", `[{"operationType":"Create","resourceBody":{"id":"1"}},{"operationType":"Read","id":"1","partitionKey":"[{}]"}]`,
		batchHeaders("")...), 200)
	if got := statuses(batchResults(t, r)); got != "201 200" {
		t.Errorf("batch on a flat container: %s", r.body)
	}
	must(t, c.do("GET", "/dbs/db/colls/none/docs", nil), 404)
	must(t, c.do("POST", "/dbs/db/colls/none/docs", `[`+fresh+`]`, batchHeaders(`["ada"]`)...), 404)
}

func TestBatchThrottled(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{Clock: lethe.NewManualClock(time.Unix(1_700_000_000, 0))})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c"}, "x-ms-offer-throughput", "400"), 201)
	var throttled response
	for i := range 100 {
		r := c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`[{"operationType":"Create","resourceBody":{"id":"%d"}}]`, i), batchHeaders("")...)
		if r.status == 429 {
			throttled = r
			break
		}
		must(t, r, 200)
	}
	if throttled.status != 429 {
		t.Fatal("never throttled")
	}
	ms, err := strconv.Atoi(throttled.header.Get("x-ms-retry-after-ms"))
	if err != nil || ms < 1 || ms > 2000 {
		t.Errorf("x-ms-retry-after-ms %q", throttled.header.Get("x-ms-retry-after-ms"))
	}
	if throttled.header.Get("x-ms-substatus") != "3200" || throttled.json(t)["code"] != "TooManyRequests" {
		t.Errorf("429: substatus %q body %s", throttled.header.Get("x-ms-substatus"), throttled.body)
	}
}

// TestIndexingPolicyPaths: a container's included and excluded paths round
// trip; a bad one is a 400.
func TestIndexingPolicyPaths(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	body := map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/id"}},
		"indexingPolicy": map[string]any{"indexingMode": "consistent",
			"includedPaths":    []any{map[string]any{"path": "/*"}},
			"excludedPaths":    []any{map[string]any{"path": "/secret/?"}, map[string]any{"path": `/"_etag"/?`}},
			"compositeIndexes": []any{[]any{map[string]any{"path": "/name", "order": "ascending"}, map[string]any{"path": "/age", "order": "descending"}}}}}
	r := must(t, c.do("POST", "/dbs/db/colls", body), 201)
	ip, _ := json.Marshal(r.json(t)["indexingPolicy"])
	if !strings.Contains(string(ip), `"excludedPaths":[{"path":"/secret/?"},{"path":"/\"_etag\"/?"}]`) {
		t.Errorf("indexing policy %s", ip)
	}
	if !strings.Contains(string(ip), `"compositeIndexes":[[{"order":"ascending","path":"/name"},{"order":"descending","path":"/age"}]]`) {
		t.Errorf("composite indexes: %s", ip)
	}
	body["id"] = "badcomposite"
	body["indexingPolicy"] = map[string]any{"compositeIndexes": []any{[]any{map[string]any{"path": "/name"}}}}
	if r := c.do("POST", "/dbs/db/colls", body); r.status != 400 || !strings.Contains(string(r.body), "composite index") {
		t.Errorf("a composite index of one path: %d %s", r.status, r.body)
	}
	body["id"] = "bad"
	body["indexingPolicy"] = map[string]any{"excludedPaths": []any{map[string]any{"path": "secret"}}}
	if r := c.do("POST", "/dbs/db/colls", body); r.status != 400 || !strings.Contains(string(r.body), "indexing policy path") {
		t.Errorf("a bad path: %d %s", r.status, r.body)
	}
}

// TestQueryJoinPathAndNonFinite: the query forms of the documentation
// reach the front: JOIN f.children (one row per item), ToString(NaN); a
// result holding NaN or Infinity is refused with 400.
func TestQueryJoinPathAndNonFinite(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/id"}}}), 201)
	const coll = "/dbs/db/colls/c"
	must(t, c.do("POST", coll+"/docs", `{"id":"f","children":[{"n":1},{"n":2}]}`, "x-ms-documentdb-partitionkey", `["f"]`), 201)
	for q, want := range map[string]string{
		"SELECT VALUE ARRAY_LENGTH(k) FROM f JOIN f.children k": "2",
		"SELECT VALUE k.n FROM f JOIN k IN f.children":          "1",
		"SELECT VALUE [ToString(NaN), ToString(-Infinity)]":     `["NaN","-Infinity"]`,
		"SELECT VALUE IS_FINITE_NUMBER(8.9 / 0.0)":              "false",
		"SELECT VALUE COUNT(1) FROM f JOIN f.nonExistent":       "0",
	} {
		r := must(t, c.query(coll, q, nil, "x-ms-documentdb-partitionkey", `["f"]`), 200)
		if got := string(documents(t, r, "Documents")[0]); got != want {
			t.Errorf("%s: first result %s, want %s", q, got, want)
		}
	}
	must(t, c.query(coll, "SELECT VALUE f.children[0].n / 0 FROM f", nil, "x-ms-documentdb-partitionkey", `["f"]`), 400)
	must(t, c.query(coll, "SELECT VALUE NaN", nil, "x-ms-documentdb-partitionkey", `["f"]`), 400)
}
