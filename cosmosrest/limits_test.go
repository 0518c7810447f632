package cosmosrest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestQueryTextLimits: a query over the account's advertised length or
// JOINs gets 400 with the service's message.
func TestQueryTextLimits(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/id"}}}), 201)
	long := "SELECT * FROM c WHERE c.id = '" + strings.Repeat("x", 512<<10) + "'"
	joins := "SELECT 1 FROM c JOIN a IN c.a JOIN b IN c.a JOIN d IN c.a JOIN e IN c.a JOIN f IN c.a JOIN g IN c.a"
	for _, tc := range []struct {
		q, msg string
	}{
		{long, "The SQL query text exceeded the maximum limit of 524288 characters."},
		{joins, "The SQL query exceeded the maximum number of joins. The allowed limit is 5."},
	} {
		r := must(t, c.query("/dbs/db/colls/c", tc.q, nil, "x-ms-documentdb-query-enablecrosspartition", "True"), 400)
		if !strings.Contains(string(r.body), tc.msg) {
			t.Errorf("body %.200s, want %q", r.body, tc.msg)
		}
	}
	longest := long[:512<<10-1] + "'" // at the limit
	r := must(t, c.query("/dbs/db/colls/c", longest, nil, "x-ms-documentdb-query-enablecrosspartition", "True"), 200)
	if len(documents(t, r, "Documents")) != 0 {
		t.Errorf("documents of a query that matches none: %s", r.body)
	}
}

// TestResponseLimitOfBatchAndBulk: a transactional batch whose response
// would pass 4 MB fails whole with 413/3402 and applies nothing; a bulk
// request runs its operations while their results fit in 4 MB and answers
// the others 413/3402, not run, which the SDKs send again.
func TestResponseLimitOfBatchAndBulk(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	coll := "/dbs/db/colls/c"
	pk := []string{"x-ms-documentdb-partitionkey", `["a"]`}
	big := `{"id":"big","pk":"a","s":"` + strings.Repeat("x", 1900<<10) + `"}` // two fit in 4 MB, three do not
	must(t, c.do("POST", coll+"/docs", big, pk...), 201)

	reads := func(n int, first string) string {
		ops := []string{first}
		for range n {
			ops = append(ops, `{"operationType":"Read","partitionKey":"[\"a\"]","id":"big"}`)
		}
		return "[" + strings.Join(ops, ",") + "]"
	}
	create := `{"operationType":"Create","partitionKey":"[\"a\"]","resourceBody":{"id":"new","pk":"a"}}`
	batch := append([]string{"x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True"}, pk...)
	r := must(t, c.do("POST", coll+"/docs", reads(3, create), batch...), 413)
	if got := r.header.Get("x-ms-substatus"); got != "3402" {
		t.Errorf("substatus %q, want 3402", got)
	}
	must(t, c.do("GET", coll+"/docs/new", nil, pk...), 404) // nothing applied
	r = must(t, c.do("POST", coll+"/docs", reads(2, create), batch...), 200)
	if len(r.body) > 4<<20 {
		t.Errorf("a batch response of %d bytes", len(r.body))
	}

	r = must(t, c.do("POST", coll+"/docs", reads(4, `{"operationType":"Delete","partitionKey":"[\"a\"]","id":"new"}`), bulkHeaders()...), 207)
	res := batchResults(t, r)
	if got, want := statuses(res), "204 200 200 413 413"; got != want {
		t.Fatalf("statuses %s, want %s", got, want)
	}
	if res[3]["subStatusCode"].(float64) != 3402 {
		t.Errorf("a cut operation's substatus %v, want 3402", res[3]["subStatusCode"])
	}
	if len(r.body) > 4<<20 {
		t.Errorf("a bulk response of %d bytes", len(r.body))
	}
	must(t, c.do("POST", coll+"/docs", reads(0, `{"operationType":"Read","partitionKey":"[\"a\"]","id":"big"}`), bulkHeaders()...), 200) // one item alone always fits
}

// TestRequestBodyBounds: a body announced over MaxRequestSize gets 413
// before any of it is sent; one that stalls gets 408 when the body timeout
// passes, not a goroutine and buffer held for as long as the client likes.
func TestRequestBodyBounds(t *testing.T) {
	h, c := testServer(t, cosmosrest.Config{})
	cosmosrest.SetBodyTimeout(h, 200*time.Millisecond)
	createDBColl(t, c)
	for _, tc := range []struct {
		name   string
		length int64
		want   int
	}{
		{"announced over the limit", cosmosrest.MaxRequestSize + 1, http.StatusRequestEntityTooLarge},
		{"stalled", 100, http.StatusRequestTimeout},
	} {
		pr, pw := io.Pipe()
		go pw.Write([]byte(`{"id":"x",`)) // then nothing
		req, err := http.NewRequest("POST", c.srv.URL+"/dbs/db/colls/c/docs", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = tc.length
		date := time.Now().UTC().Format(http.TimeFormat)
		auth, err := cosmosrest.SignRequest(c.key, "POST", "docs", "dbs/db/colls/c", date)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-ms-date", date)
		req.Header.Set("Authorization", auth)
		req.Header.Set("x-ms-documentdb-partitionkey", `["a"]`)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a safety net: the answer comes long before
		context.AfterFunc(ctx, func() { pw.Close() })                            // the client waits for its body to end
		resp, err := c.srv.Client().Do(req.WithContext(ctx))
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		cancel()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
}

// TestUnopenableDatabase: a database whose directory cannot be opened at
// start is served as unavailable, 503 with the cause, while the others run;
// its directory is left as it was.
func TestUnopenableDatabase(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dbDir string)
		cause  string
	}{
		{"damaged meta file", func(t *testing.T, dbDir string) {
			if err := os.WriteFile(filepath.Join(dbDir, "database.json"), []byte("{"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "database.json is damaged"},
		{"store not a directory", func(t *testing.T, dbDir string) {
			if err := os.RemoveAll(filepath.Join(dbDir, "store")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dbDir, "store"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, `database \"bad\"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h, err := cosmosrest.New(cosmosrest.Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewTLSServer(h)
			c := &client{t: t, srv: srv, key: cosmosrest.EmulatorKey}
			createDB(t, c, "bad")
			entries, _ := filepath.Glob(filepath.Join(dir, "db-*"))
			createDB(t, c, "good")
			srv.Close()
			if err := h.Close(); err != nil || len(entries) != 1 {
				t.Fatalf("close: %v; %d directories", err, len(entries))
			}
			tc.damage(t, entries[0])

			_, c = testServer(t, cosmosrest.Config{Dir: dir})
			must(t, c.do("GET", "/dbs/good", nil), 200)
			must(t, c.do("POST", "/dbs/good/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
			for _, r := range []response{
				c.do("GET", "/dbs/bad", nil),
				c.do("GET", "/dbs/bad/colls", nil),
				c.do("POST", "/dbs", map[string]any{"id": "bad"}),
				c.do("DELETE", "/dbs/bad", nil),
			} {
				if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), tc.cause) {
					t.Errorf("%d %s, want 503 naming %s", r.status, r.body, tc.cause)
				}
			}
			if _, err := os.Stat(entries[0]); err != nil {
				t.Errorf("the unavailable database's directory: %v", err)
			}
		})
	}
}

// TestOneIDRule: databases and containers take ids by one rule (no
// trailing space, no control character, none of / \ ? #), the library's and
// the front's alike; document ids stay free-form.
func TestOneIDRule(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"plain", true},
		{"\u202eright-to-left", true},
		{"trailing ", false},
		{"nul\x00", false},
		{"bell\a", false},
		{"a/b", false},
		{"a#b", false},
	} {
		want := 400
		if tc.ok {
			want = 201
		}
		if r := c.do("POST", "/dbs", map[string]any{"id": tc.id}); r.status != want {
			t.Errorf("database %q: %d %s, want %d", tc.id, r.status, r.body, want)
		}
		if r := c.do("POST", "/dbs/db/colls", map[string]any{"id": tc.id, "partitionKey": map[string]any{"paths": []string{"/pk"}}}); r.status != want {
			t.Errorf("container %q: %d %s, want %d", tc.id, r.status, r.body, want)
		}
	}
	for _, id := range []string{"trailing ", "nul\x00", "a/b", "\u202e"} {
		must(t, c.do("POST", "/dbs/db/colls/plain/docs", map[string]any{"id": id, "pk": "p"}, "x-ms-documentdb-partitionkey", `["p"]`), 201)
	}
}
