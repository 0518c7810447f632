package cosmosrest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
)

// reset sends a signed POST /_lethe/reset.
func (c *client) reset() response {
	c.t.Helper()
	return c.doAs("POST", "/_lethe/reset", "reset", "", nil)
}

// dropped decodes a reset's answer.
func dropped(t *testing.T, r response) []string {
	t.Helper()
	var a struct{ Dropped []string }
	if err := json.Unmarshal(r.body, &a); err != nil || a.Dropped == nil {
		t.Fatalf("answer %s: %v", r.body, err)
	}
	return a.Dropped
}

// databaseIDs lists the account's databases.
func databaseIDs(t *testing.T, c *client) []string {
	t.Helper()
	ids := []string{}
	for _, d := range documents(t, must(t, c.do("GET", "/dbs", nil), 200), "Databases") {
		var db struct{ ID string }
		if err := json.Unmarshal(d, &db); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, db.ID)
	}
	slices.Sort(ids)
	return ids
}

// fillAccount creates databases a and b, each with a container c holding
// an item, and a user of a.
func fillAccount(t *testing.T, c *client) {
	t.Helper()
	for _, db := range []string{"b", "a"} {
		createDB(t, c, db)
		must(t, c.do("POST", "/dbs/"+db+"/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
		must(t, c.do("POST", "/dbs/"+db+"/colls/c/docs", map[string]any{"id": "d", "pk": "x"}, "x-ms-documentdb-partitionkey", `["x"]`), 201)
	}
	must(t, c.do("POST", "/dbs/a/users", map[string]any{"id": "ada"}), 201)
}

// TestReset: a reset signed with the master key drops every database and
// answers 200 with their ids; the account works afterwards, the same ids
// created again empty; fault rules are kept.
func TestReset(t *testing.T) {
	f := &cosmosrest.Faults{}
	_, c := testServer(t, cosmosrest.Config{Faults: f})
	fillAccount(t, c)
	if err := f.Add(cosmosrest.FaultRule{ID: "kept", Condition: cosmosrest.FaultCondition{Database: "elsewhere"}, Result: cosmosrest.FaultResult{StatusCode: 503}}); err != nil {
		t.Fatal(err)
	}

	r := must(t, c.reset(), http.StatusOK)
	if got := dropped(t, r); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("dropped %v, want [a b]", got)
	}
	if ids := databaseIDs(t, c); len(ids) != 0 {
		t.Errorf("after the reset: databases %v", ids)
	}
	must(t, c.do("GET", "/dbs/a/colls/c/docs/d", nil, "x-ms-documentdb-partitionkey", `["x"]`), 404)
	if rules := f.Rules(); len(rules) != 1 {
		t.Errorf("the reset left fault rules %+v, want the one rule", rules)
	}

	// The account works: the same ids again, empty.
	createDB(t, c, "a")
	must(t, c.do("GET", "/dbs/a/colls/c", nil), 404)
	must(t, c.do("GET", "/dbs/a/users/ada", nil), 404)
	must(t, c.do("POST", "/dbs/a/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	must(t, c.do("GET", "/dbs/a/colls/c/docs/d", nil, "x-ms-documentdb-partitionkey", `["x"]`), 404)
	must(t, c.do("POST", "/dbs/a/colls/c/docs", map[string]any{"id": "d", "pk": "x"}, "x-ms-documentdb-partitionkey", `["x"]`), 201)

	// A reset of what is left, then of nothing.
	if got := dropped(t, must(t, c.reset(), http.StatusOK)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("second reset dropped %v", got)
	}
	if got := dropped(t, must(t, c.reset(), http.StatusOK)); len(got) != 0 {
		t.Errorf("reset of an empty account dropped %v", got)
	}
}

// TestResetRefused: a reset unsigned, signed wrongly, signed with another
// key or for another resource, with a resource token, with another method
// or on another path is refused, 401, 403, 405 or 404, and drops nothing;
// an Entra ID token as the emulator accepts one works, as it does on the
// fault rules' endpoint.
func TestResetRefused(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	fillAccount(t, c)
	perm := must(t, c.do("POST", "/dbs/a/users/ada/permissions", map[string]any{"id": "all", "permissionMode": "All", "resource": "dbs/a/colls/c"}), 201).json(t)
	token := url.QueryEscape(perm["_token"].(string))
	other := &client{t: t, srv: c.srv, key: "b3RoZXIta2V5"}
	old := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	oldAuth, err := cosmosrest.SignRequest(cosmosrest.EmulatorKey, "POST", "reset", "", old)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		r      response
		status int
	}{
		{"unsigned", c.doAs("POST", "/_lethe/reset", "reset", "", nil, "Authorization", ""), 401},
		{"another key", other.reset(), 401},
		{"signed for another type", c.doAs("POST", "/_lethe/reset", "dbs", "", nil), 401},
		{"signed for another link", c.doAs("POST", "/_lethe/reset", "reset", "dbs/a", nil), 401},
		{"signed as a GET", c.doAs("POST", "/_lethe/reset", "reset", "", nil, "Authorization", mustSign(t, "GET", "reset", "")), 401},
		{"garbled signature", c.doAs("POST", "/_lethe/reset", "reset", "", nil, "Authorization", "type=master&ver=1.0&sig=AAAA"), 401},
		{"dated an hour ago", c.doAs("POST", "/_lethe/reset", "reset", "", nil, "x-ms-date", old, "Authorization", oldAuth), 403},
		{"resource token", c.doAs("POST", "/_lethe/reset", "reset", "", nil, "Authorization", token), 403},
		{"GET", c.doAs("GET", "/_lethe/reset", "reset", "", nil), 405},
		{"DELETE", c.doAs("DELETE", "/_lethe/reset", "reset", "", nil), 405},
		{"under the path", c.doAs("POST", "/_lethe/reset/a", "reset", "a", nil), 404},
		{"a body over the control limit", c.doAs("POST", "/_lethe/reset", "reset", "", strings.Repeat("x", 65<<10)), 413},
	} {
		if tc.r.status != tc.status {
			t.Errorf("%s: %d, want %d: %s", tc.name, tc.r.status, tc.status, tc.r.body)
		}
		if ids := databaseIDs(t, c); !slices.Equal(ids, []string{"a", "b"}) {
			t.Fatalf("%s dropped databases: %v left", tc.name, ids)
		}
	}
	if r := must(t, c.do("GET", "/_lethe/reset", nil), 405); r.header.Get("Allow") != "POST" {
		t.Errorf("Allow %q", r.header.Get("Allow"))
	}

	now := time.Now().Unix()
	aad := url.QueryEscape("type=aad&ver=1.0&sig=" + emulatorToken(cosmosrest.EmulatorKey, fmt.Sprintf(`{"nbf":%d,"exp":%d}`, now, now+3600)))
	must(t, c.doAs("POST", "/_lethe/reset", "reset", "", nil, "Authorization", aad), 200)
	if ids := databaseIDs(t, c); len(ids) != 0 {
		t.Errorf("after a reset with an Entra ID token: %v", ids)
	}
}

// mustSign signs a request of now with the emulator's key.
func mustSign(t *testing.T, verb, resType, link string) string {
	t.Helper()
	auth, err := cosmosrest.SignRequest(cosmosrest.EmulatorKey, verb, resType, link, time.Now().UTC().Format(http.TimeFormat))
	if err != nil {
		t.Fatal(err)
	}
	return auth
}

// TestResetDurable: a reset removes every durable database's directory;
// after a restart on the same directory nothing comes back, and the ids
// can be created again.
func TestResetDurable(t *testing.T) {
	dir := t.TempDir()
	h, err := cosmosrest.New(cosmosrest.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, c := serve(t, h)
	fillAccount(t, c)
	if got := dropped(t, must(t, c.reset(), http.StatusOK)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("dropped %v", got)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range names {
		if e.Name() != "LOCK" {
			t.Errorf("left in the directory after the reset: %s", e.Name())
		}
	}
	c2 := restartFront(t, h, c, dir)
	if ids := databaseIDs(t, c2); len(ids) != 0 {
		t.Errorf("after a restart: databases %v", ids)
	}
	createDB(t, c2, "a")
	must(t, c2.do("GET", "/dbs/a/colls/c", nil), 404)
	must(t, c2.do("GET", "/dbs/a/users/ada", nil), 404)
}

// TestResetFailure: a database whose directory cannot be removed fails the
// reset with 500, saying which; the others are dropped all the same, and
// after Close a reset is 503.
func TestResetFailure(t *testing.T) {
	dir, efs, h, c := faultyFront(t)
	fillAccount(t, c)
	efs.Inject(vfstest.Fault{Op: vfstest.OpRemove, N: 1, Err: syscall.EIO})
	r := must(t, c.reset(), http.StatusInternalServerError)
	if !strings.Contains(string(r.body), `dropping the database \"a\"`) {
		t.Errorf("answer %s does not name the database", r.body)
	}
	if ids := databaseIDs(t, c); len(ids) != 0 {
		t.Errorf("after the failed reset: databases %v", ids)
	}
	if _, err := os.Stat(filepath.Join(dir, dbDir("b"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b's directory: %v, want it removed", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	must(t, c.reset(), http.StatusServiceUnavailable)
	if _, err := h.Reset(); !errors.Is(err, lethe.ErrClosed) {
		t.Errorf("Reset after Close: %v, want lethe.ErrClosed", err)
	}
}

// TestResetDuringTraffic: resets while clients create databases,
// containers and items, read and query them, are safe (go test -race):
// every request gets an answer a client can see from a database deleted
// under it, never a 500, and the account works once they stop.
func TestResetDuringTraffic(t *testing.T) {
	h, c := testServer(t, cosmosrest.Config{})
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	progress := make(chan struct{}) // a request answered while a reset waits for it
	for w := range 3 {
		wg.Go(func() {
			db := fmt.Sprintf("db%d", w)
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				for _, r := range []response{
					c.do("POST", "/dbs", map[string]any{"id": db}),
					c.do("POST", "/dbs/"+db+"/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}),
					c.do("POST", "/dbs/"+db+"/colls/c/docs", map[string]any{"id": fmt.Sprint(i), "pk": "x"}, "x-ms-documentdb-partitionkey", `["x"]`),
					c.do("GET", "/dbs/"+db+"/colls/c/docs/"+fmt.Sprint(i), nil, "x-ms-documentdb-partitionkey", `["x"]`),
					c.query("/dbs/"+db+"/colls/c", "SELECT * FROM c", nil, "x-ms-documentdb-partitionkey", `["x"]`),
				} {
					select {
					case progress <- struct{}{}:
					default:
					}
					if r.status >= 500 {
						select {
						case errs <- fmt.Sprintf("%d %s", r.status, r.body):
						default:
						}
					}
				}
			}
		})
	}
	for i := range 20 {
		for range 5 { // each reset among the clients' requests
			<-progress
		}
		if i%2 == 0 {
			must(t, c.reset(), http.StatusOK)
		} else if _, err := h.Reset(); err != nil {
			t.Error(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("during resets: %s", e)
	}
	must(t, c.reset(), http.StatusOK)
	fillAccount(t, c)
	if ids := databaseIDs(t, c); !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("after the traffic: %v", ids)
	}
}

// TestResetLeavesUnavailable: a database that could not be opened at
// start is not dropped: its directory is its owner's to repair; the
// reset's answer names it, and its requests still get 503.
func TestResetLeavesUnavailable(t *testing.T) {
	dir := t.TempDir()
	h, err := cosmosrest.New(cosmosrest.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, c := serve(t, h)
	createDB(t, c, "bad")
	c.srv.Close()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, dbDir("bad"), "database.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, c = testServer(t, cosmosrest.Config{Dir: dir})
	createDB(t, c, "good")
	var a struct{ Dropped, Unavailable []string }
	if err := json.Unmarshal(must(t, c.reset(), http.StatusOK).body, &a); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Dropped, []string{"good"}) || !slices.Equal(a.Unavailable, []string{dbDir("bad")}) {
		t.Errorf("answer %+v, want good dropped and bad's directory unavailable", a)
	}
	must(t, c.do("GET", "/dbs/bad", nil), http.StatusServiceUnavailable)
	if _, err := os.Stat(filepath.Join(dir, dbDir("bad"))); err != nil {
		t.Errorf("the unavailable database's directory: %v", err)
	}
}
