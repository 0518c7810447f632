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
