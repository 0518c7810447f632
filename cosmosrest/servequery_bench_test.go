package cosmosrest_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// BenchmarkServeQuery measures the REST front's own work on a query's
// first page, signed with the master key and served without a network:
// ten of 100 documents of one partition, with a continuation, as an SDK
// pages a query (the query's parse and run, the page's headers and body).
func BenchmarkServeQuery(b *testing.B) {
	h, err := cosmosrest.New(cosmosrest.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	serve := func(method, path, typ, link, body string, want int, hdr ...string) {
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
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			b.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
	}
	serve("POST", "/dbs", "dbs", "", `{"id":"db"}`, 201)
	serve("POST", "/dbs/db/colls", "colls", "dbs/db", `{"id":"c","partitionKey":{"paths":["/pk"]}}`, 201)
	for i := range 100 {
		serve("POST", "/dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", `{"id":"`+strconv.Itoa(i)+`","pk":"a","n":`+strconv.Itoa(i)+`}`, 201)
	}
	query := `{"query":"SELECT * FROM c WHERE c.n >= @n","parameters":[{"name":"@n","value":0}]}`
	b.ReportAllocs()
	for b.Loop() {
		serve("POST", "/dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", query, 200,
			"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True", "x-ms-max-item-count", "10")
	}
}
