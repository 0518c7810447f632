package cosmosrest_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestMethodNotAllowed sends every method to a path of every kind of
// resource: a method the kind does not serve is answered 405 with the
// kind's Allow header, and a method it serves is not.
func TestMethodNotAllowed(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	tests := []struct {
		path, allow string
	}{
		{"/", "GET"},
		{"/dbs", "GET, POST"},
		{"/dbs/db", "GET, DELETE"},
		{"/dbs/db/colls", "GET, POST"},
		{"/dbs/db/colls/c", "GET, PUT, DELETE"},
		{"/dbs/db/colls/c/docs", "GET, POST"},
		{"/dbs/db/colls/c/docs/d", "GET, PUT, PATCH, DELETE"},
		{"/dbs/db/colls/c/pkranges", "GET"},
		{"/dbs/db/colls/c/pkranges/0", "GET"},
		{"/offers", "GET, POST"},
		{"/offers/x", "GET, PUT"},
		{"/dbs/db/colls/c/conflicts", "GET, POST"},
		{"/dbs/db/colls/c/conflicts/x", "GET, DELETE"},
		{"/dbs/db/users", "GET, POST"},
		{"/dbs/db/users/u", "GET, PUT, DELETE"},
		{"/dbs/db/users/u/permissions", "GET, POST"},
		{"/dbs/db/users/u/permissions/p", "GET, PUT, DELETE"},
		{"/dbs/db/colls/c/sprocs", "GET, POST"},
		{"/dbs/db/colls/c/sprocs/s", "GET, POST, PUT, DELETE"},
		{"/dbs/db/colls/c/triggers", "GET, POST"},
		{"/dbs/db/colls/c/triggers/t", "GET, PUT, DELETE"},
		{"/dbs/db/colls/c/udfs", "GET, POST"},
		{"/dbs/db/colls/c/udfs/f", "GET, PUT, DELETE"},
	}
	for _, tt := range tests {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"} {
			r := c.do(m, tt.path, nil)
			served := strings.Contains(", "+tt.allow+", ", ", "+m+", ")
			// A POST on conflicts that is not a query is not served.
			if tt.path == "/dbs/db/colls/c/conflicts" && m == "POST" {
				served = false
			}
			if !served {
				if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != tt.allow {
					t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q", m, tt.path, r.status, r.header.Get("Allow"), tt.allow)
				}
				continue
			}
			if r.status == http.StatusMethodNotAllowed || r.header.Get("Allow") != "" {
				t.Errorf("%s %s: %d, Allow %q; want it served", m, tt.path, r.status, r.header.Get("Allow"))
			}
		}
	}
}

// TestResourceTokenRoutes sends, with a resource token whose permission
// is All on one partition key of a container, requests to each kind of
// target, served or not: what the token may do is checked before a
// method's 405.
func TestResourceTokenRoutes(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "ada"}), 201)
	p := must(t, c.do("POST", "/dbs/db/users/ada/permissions", map[string]any{"id": "p", "permissionMode": "All", "resource": "dbs/db/colls/c", "resourcePartitionKey": []any{"a"}}), 201).json(t)
	auth := url.QueryEscape(p["_token"].(string))
	query := []string{"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"}
	tests := []struct {
		method, path string
		hdr          []string
		status       int
		msg          string // a part of the refusal's message
	}{
		{"GET", "/", nil, 200, ""},
		{"POST", "/", nil, 403, "reads the account"},
		{"GET", "/dbs", nil, 403, "on another resource"},
		{"GET", "/dbs/db/colls/c", nil, 200, ""},
		{"DELETE", "/dbs/db/colls/c", nil, 403, "needs a permission on the whole container"},
		{"GET", "/dbs/db/colls/c/pkranges", nil, 200, ""},
		{"POST", "/dbs/db/colls/c/pkranges", nil, 403, "does not change or delete a container"},
		{"PUT", "/dbs/db/colls/c/docs", nil, 403, "not a request on documents"},
		{"GET", "/dbs/db/colls/c/docs", nil, 403, "name it in x-ms-documentdb-partitionkey"},
		{"POST", "/dbs/db/colls/c/docs/d", []string{"x-ms-documentdb-partitionkey", `["a"]`}, 405, ""},
		{"POST", "/dbs/db/colls/c/docs/d", []string{"x-ms-documentdb-partitionkey", `["b"]`}, 403, "not on"},
		{"POST", "/dbs/db/colls/c/conflicts", nil, 403, "reads conflicts"},
		{"POST", "/dbs/db/colls/c/conflicts/x", query, 405, ""},
		{"DELETE", "/dbs/db/colls/c/conflicts/x", nil, 403, "reads conflicts"},
		{"POST", "/dbs/db/colls/c/triggers/t", query, 405, ""},
		{"POST", "/dbs/db/colls/c/triggers/t", nil, 403, "changing them needs a permission on the whole container"},
		{"PATCH", "/dbs/db/colls/c/sprocs", nil, 403, "changing them needs a permission on the whole container"},
		{"GET", "/dbs/db/colls/c/sprocs", nil, 200, ""},
		{"POST", "/dbs/db/colls/c/sprocs/s", query, 403, "name it in x-ms-documentdb-partitionkey"},
		// Query headers do not make a procedure's run a read: a token scoped
		// to ["a"] runs none in ["b"] (before, it ran, and wrote there).
		{"POST", "/dbs/db/colls/c/sprocs/s", append(slices.Clone(query), "x-ms-documentdb-partitionkey", `["b"]`), 403, "not on"},
		{"POST", "/dbs/db/colls/c/sprocs/s", nil, 403, "name it in x-ms-documentdb-partitionkey"},
		{"GET", "/dbs/db/colls/c/media", nil, 403, "on another resource"},
	}
	for _, tt := range tests {
		r := c.do(tt.method, tt.path, nil, append([]string{"Authorization", auth}, tt.hdr...)...)
		if r.status != tt.status || !strings.Contains(string(r.body), tt.msg) {
			t.Errorf("%s %s %v: %d %s; want %d, %q", tt.method, tt.path, tt.hdr, r.status, r.body, tt.status, tt.msg)
		}
	}
}

// BenchmarkServeDocument measures the REST front's own work on the hot
// paths, a document's create and its read, signed with the master key and
// served without a network (the handler's routing, authentication and
// answer).
func BenchmarkServeDocument(b *testing.B) {
	h, err := cosmosrest.New(cosmosrest.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	serve := func(method, path, typ, link, body string, want int) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		date := time.Now().UTC().Format(http.TimeFormat)
		auth, err := cosmosrest.SignRequest(cosmosrest.EmulatorKey, method, typ, link, date)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("x-ms-date", date)
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-ms-documentdb-partitionkey", `["a"]`)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			b.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
	}
	serve("POST", "/dbs", "dbs", "", `{"id":"db"}`, 201)
	serve("POST", "/dbs/db/colls", "colls", "dbs/db", `{"id":"c","partitionKey":{"paths":["/pk"]}}`, 201)
	n := 0 // b.Run calls its function more than once: the ids go on
	b.Run("create", func(b *testing.B) {
		for range b.N {
			serve("POST", "/dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", `{"id":"`+strconv.Itoa(n)+`","pk":"a","n":1}`, 201)
			n++
		}
	})
	b.Run("read", func(b *testing.B) {
		for range b.N {
			serve("GET", "/dbs/db/colls/c/docs/0", "docs", "dbs/db/colls/c/docs/0", "", 200)
		}
	})
}
