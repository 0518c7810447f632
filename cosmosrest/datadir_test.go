package cosmosrest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
)

// frontView is what a client sees of a durable front's data directory:
// its databases, their offers and the users of each.
func frontView(t *testing.T, c *client) string {
	t.Helper()
	var b strings.Builder
	var ids []string
	for _, d := range documents(t, must(t, c.do("GET", "/dbs", nil), 200), "Databases") {
		var db struct{ ID string }
		if err := json.Unmarshal(d, &db); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, db.ID)
	}
	slices.Sort(ids)
	for _, id := range ids {
		var users []string
		for _, u := range documents(t, must(t, c.do("GET", "/dbs/"+id+"/users", nil), 200), "Users") {
			var user struct{ ID string }
			if err := json.Unmarshal(u, &user); err != nil {
				t.Fatal(err)
			}
			users = append(users, user.ID)
		}
		slices.Sort(users)
		fmt.Fprintf(&b, "%s users %v; ", id, users)
	}
	var offers []string
	for _, o := range documents(t, must(t, c.do("GET", "/offers", nil), 200), "Offers") {
		var offer map[string]any
		if err := json.Unmarshal(o, &offer); err != nil {
			t.Fatal(err)
		}
		m, ap := offerFigures(offer)
		offers = append(offers, fmt.Sprint(m, "/", ap))
	}
	slices.Sort(offers)
	fmt.Fprintf(&b, "offers %v", offers)
	return b.String()
}

// TestDataDirFaults: the front's data directory (database directories,
// database.json, users.json) goes through the file-system seam, as the
// stores do; a file that cannot be written (ENOSPC, EIO at a write, an
// fsync, a rename, a creation) fails the request with a 5xx and leaves the
// front as it was, in memory and on disk: a restart shows what the clients
// saw, and nothing half made is left in the directory.
func TestDataDirFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault vfstest.Fault
		do    func(c *client) response
	}{
		{"create database, write", vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC}, createB},
		{"create database, sync", vfstest.Fault{Op: vfstest.OpSync, N: 1, Err: syscall.EIO}, createB},
		{"create database, rename", vfstest.Fault{Op: vfstest.OpRename, N: 1, Err: syscall.EIO}, createB},
		{"create database, its store", vfstest.Fault{Op: vfstest.OpCreate, N: 2, Err: syscall.EIO}, createB},
		// A full disk under the new store opens it read-only: the database
		// could hold nothing, so it is not made (503), not a 201.
		{"create database, its store on a full disk", vfstest.Fault{Op: vfstest.OpCreate, N: 2, Err: syscall.ENOSPC}, createB},
		{"replace offer, write", vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC}, replaceA},
		{"replace offer, rename", vfstest.Fault{Op: vfstest.OpRename, N: 1, Err: syscall.EIO}, replaceA},
		{"create user, write", vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC}, userA},
		{"create user, rename", vfstest.Fault{Op: vfstest.OpRename, N: 1, Err: syscall.EIO}, userA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, efs, h, c := faultyFront(t)
			must(t, c.do("POST", "/dbs", map[string]any{"id": "a"}, "x-ms-offer-throughput", "400"), 201)
			must(t, c.do("POST", "/dbs/a/users", map[string]any{"id": "ada"}), 201)
			before := frontView(t, c)

			efs.Inject(tc.fault)
			if r := tc.do(c); r.status < 500 {
				t.Fatalf("the request got %d with its file failing: %s", r.status, r.body)
			}
			if got := frontView(t, c); got != before {
				t.Errorf("after the failure the front shows\n%s\nnot\n%s", got, before)
			}
			names, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range names {
				if e.Name() != "LOCK" && e.Name() != dbDir("a") {
					t.Errorf("left in the directory: %s", e.Name())
				}
			}
			c2 := restartFront(t, h, c, dir)
			if got := frontView(t, c2); got != before {
				t.Errorf("after a restart the front shows\n%s\nnot\n%s", got, before)
			}
			// Once the disk is well again, the request succeeds.
			if r := tc.do(c2); r.status >= 300 {
				t.Errorf("the request again: %d %s", r.status, r.body)
			}
		})
	}
}

// dbDir is the name of the directory of the database id (as the front
// names it: a hash of the id).
func dbDir(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "db-" + hex.EncodeToString(sum[:16])
}

func createB(c *client) response {
	return c.do("POST", "/dbs", map[string]any{"id": "b"})
}

func replaceA(c *client) response {
	db := must(c.t, c.do("GET", "/dbs/a", nil), 200).json(c.t)
	return replaceOffer(c, offerOf(c.t, c, db["_rid"].(string)), map[string]any{"offerThroughput": 900})
}

func userA(c *client) response {
	return c.do("POST", "/dbs/a/users", map[string]any{"id": "bob"})
}

// TestDataDirDiskFullHeals: a full disk under a database's store refuses
// document writes with 503 and a message that names the disk; reads,
// queries and the change feed go on; once there is room the writes
// succeed again, without a restart (the store retries at most once a
// second), and a restart shows exactly what was acknowledged.
func TestDataDirDiskFullHeals(t *testing.T) {
	dir, efs, h, c := faultyFront(t)
	must(t, c.do("POST", "/dbs", map[string]any{"id": "db"}), 201)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	const coll = "/dbs/db/colls/c"
	ada := []string{"x-ms-documentdb-partitionkey", `["ada"]`}
	must(t, c.do("POST", coll+"/docs", `{"id":"1","pk":"ada"}`, ada...), 201)

	efs.SetFull(true)
	r := must(t, c.do("POST", coll+"/docs", `{"id":"2","pk":"ada"}`, ada...), 503)
	if msg := r.json(t)["message"].(string); !strings.Contains(msg, "the disk holding "+dir) || !strings.Contains(msg, "is full") {
		t.Errorf("the 503's message does not name the full disk: %s", msg)
	}
	must(t, c.do("GET", coll+"/docs/1", nil, ada...), 200)
	q := must(t, c.do("POST", coll+"/docs", map[string]any{"query": "SELECT * FROM c"},
		append([]string{"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"}, ada...)...), 200)
	if docs := documents(t, q, "Documents"); len(docs) != 1 {
		t.Errorf("query on the full disk: %s", q.body)
	}
	must(t, c.do("GET", coll+"/docs", nil, append([]string{"A-IM", "Incremental Feed"}, ada...)...), 200)

	efs.SetFull(false)
	deadline := time.Now().Add(10 * time.Second)
	for r = c.do("POST", coll+"/docs", `{"id":"3","pk":"ada"}`, ada...); r.status == 503 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		r = c.do("POST", coll+"/docs", `{"id":"3","pk":"ada"}`, ada...)
	}
	must(t, r, 201)
	c2 := restartFront(t, h, c, dir)
	must(t, c2.do("GET", coll+"/docs/1", nil, ada...), 200)
	must(t, c2.do("GET", coll+"/docs/2", nil, ada...), 404)
	must(t, c2.do("GET", coll+"/docs/3", nil, ada...), 200)
}

// restartFront closes the front h (and its client c's server) and serves
// a new one on dir, on the real file system, returning its client.
func restartFront(t *testing.T, h *cosmosrest.Handler, c *client, dir string) *client {
	t.Helper()
	c.srv.Close()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h2, err := cosmosrest.New(cosmosrest.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h2.Close() })
	_, c2 := serve(t, h2)
	return c2
}

// faultyFront serves a front on a new data directory on an ErrorFS over
// the real file system.
func faultyFront(t *testing.T) (string, *vfstest.ErrorFS, *cosmosrest.Handler, *client) {
	dir := t.TempDir()
	efs := vfstest.NewErrorFS(vfs.OS)
	cfg := cosmosrest.Config{Dir: dir}
	vfs.SetConfigFS(&cfg, efs)
	h, err := cosmosrest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, c := serve(t, h)
	return dir, efs, h, c
}
