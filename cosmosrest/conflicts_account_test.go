package cosmosrest_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// conflictLag is the replication lag of multiWrite's accounts.
const conflictLag = 10 * time.Second

// multiWrite serves an account of regionNames on a manual clock, East US
// and West US writable, North Europe a read region, changes delivered
// conflictLag after they are written, and makes db/c (createConflictColl).
func multiWrite(t *testing.T, policy map[string]any, merge string) (*cosmosrest.Account, *lethe.ManualClock, map[string]*client) {
	t.Helper()
	return multiWriteWith(t, policy, merge, nil)
}

// multiWriteWith is multiWrite with more of the container's properties
// (nil: none).
func multiWriteWith(t *testing.T, policy map[string]any, merge string, props map[string]any) (*cosmosrest.Account, *lethe.ManualClock, map[string]*client) {
	t.Helper()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	a, cs, stop := serveMulti(t, clock, "")
	t.Cleanup(stop)
	createConflictCollWith(t, cs["East US"], policy, merge, props)
	return a, clock, cs
}

// serveMulti serves multiWrite's account, on dir ("": in memory), and
// returns it, a client per region, and what stops and closes it.
func serveMulti(t *testing.T, clock *lethe.ManualClock, dir string) (*cosmosrest.Account, map[string]*client, func()) {
	t.Helper()
	return serveMultiLag(t, clock, dir, func(string, string) time.Duration { return conflictLag })
}

// createConflictColl makes, through c, the database db and its container
// c (partition key /pk) with the conflict resolution policy given (nil:
// the default) and, when merge is not "", the stored procedure "merge" of
// that body.
func createConflictColl(t *testing.T, c *client, policy map[string]any, merge string) {
	t.Helper()
	createConflictCollWith(t, c, policy, merge, nil)
}

// createConflictCollWith is createConflictColl with more of the
// container's properties (nil: none).
func createConflictCollWith(t *testing.T, c *client, policy map[string]any, merge string, props map[string]any) {
	t.Helper()
	createDB(t, c, "db")
	body := map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}
	if policy != nil {
		body["conflictResolutionPolicy"] = policy
	}
	maps.Copy(body, props)
	must(t, c.do("POST", "/dbs/db/colls", body), 201)
	if merge != "" {
		must(t, c.do("POST", accColl+"/sprocs", map[string]any{"id": "merge", "body": merge}), 201)
	}
}

// serveMultiLag is serveMulti with the lag given.
func serveMultiLag(t *testing.T, clock *lethe.ManualClock, dir string, lag func(from, to string) time.Duration) (*cosmosrest.Account, map[string]*client, func()) {
	t.Helper()
	cfg := cosmosrest.AccountConfig{MultipleWriteLocations: true, Consistency: cosmosrest.Eventual, Lag: lag}
	cfg.Clock = clock
	cfg.Dir = dir
	cfg.Reaper.Disabled = true
	return serveAccount(t, cfg, 2)
}

// settle lets every change, and every change they cause, arrive.
func settle(a *cosmosrest.Account, clock *lethe.ManualClock) {
	for range 3 {
		clock.Advance(conflictLag)
		a.DeliverDue()
	}
}

// converged reads item id in every region, fails the test unless each
// holds the same version (or none: nil), and returns it.
func converged(t *testing.T, cs map[string]*client, id string) map[string]any {
	t.Helper()
	var first map[string]any
	firstETag := ""
	for i, name := range regionNames {
		r := cs[name].do("GET", accColl+"/docs/"+id, nil, pkHeader("x")...)
		var doc map[string]any
		switch r.status {
		case 200:
			doc = r.json(t)
		case 404:
		default:
			t.Fatalf("%s: %s is %d %s", name, id, r.status, r.body)
		}
		if i == 0 {
			first, firstETag = doc, r.header.Get("etag")
			continue
		}
		if r.header.Get("etag") != firstETag || fmt.Sprint(doc) != fmt.Sprint(first) {
			t.Errorf("%s holds %s as %v (%s), %s as %v (%s)", name, id, doc, r.header.Get("etag"), regionNames[0], first, firstETag)
		}
	}
	return first
}

// conflictsIn returns region c's conflicts feed of db/c.
func conflictsIn(t *testing.T, c *client) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, d := range documents(t, must(t, c.do("GET", accColl+"/conflicts", nil), 200), "Conflicts") {
		var m map[string]any
		if err := json.Unmarshal(d, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// content returns a conflict's content, the loser, decoded.
func content(t *testing.T, conflict map[string]any) map[string]any {
	t.Helper()
	var m map[string]any
	if s, ok := conflict["content"].(string); !ok || json.Unmarshal([]byte(s), &m) != nil {
		t.Fatalf("a conflict's content is not a JSON object in a string: %v", conflict["content"])
	}
	return m
}

// write writes x in two regions within the lag: East US's version at the
// account's instant, West US's a second later, both as the method says
// (POST creates, PUT replaces the x written before).
func writeBoth(t *testing.T, clock *lethe.ManualClock, cs map[string]*client, method, east, west string) {
	t.Helper()
	path, status := accColl+"/docs", 201
	if method == "PUT" {
		path, status = accColl+"/docs/x", 200
	}
	must(t, cs["East US"].do(method, path, east, pkHeader("x")...), status)
	clock.Advance(time.Second)
	must(t, cs["West US"].do(method, path, west, pkHeader("x")...), status)
}

// TestConflictsLastWriterWinsPath: under Last Writer Wins on a custom
// path, the version with the higher number there wins in every region,
// though it was written first; no conflict is recorded.
func TestConflictsLastWriterWinsPath(t *testing.T) {
	a, clock, cs := multiWrite(t, map[string]any{"mode": "LastWriterWins", "conflictResolutionPath": "/score"}, "")
	writeBoth(t, clock, cs, "POST", `{"id":"x","pk":"x","score":7,"v":"east"}`, `{"id":"x","pk":"x","score":3,"v":"west"}`)
	settle(a, clock)
	if got := converged(t, cs, "x"); got["v"] != "east" {
		t.Errorf("x is %v, want East US's, of the higher score", got)
	}
	// Replaced concurrently: the higher score again, now West US's.
	writeBoth(t, clock, cs, "PUT", `{"id":"x","pk":"x","score":8,"v":"east2"}`, `{"id":"x","pk":"x","score":9,"v":"west2"}`)
	settle(a, clock)
	if got := converged(t, cs, "x"); got["v"] != "west2" {
		t.Errorf("x is %v, want West US's, of the higher score", got)
	}
	for _, name := range regionNames {
		if got := conflictsIn(t, cs[name]); len(got) != 0 {
			t.Errorf("%s's conflicts feed under Last Writer Wins: %v", name, got)
		}
	}
	if st := a.Status(); st[0].Conflicts == 0 || st[1].Conflicts == 0 {
		t.Errorf("the conflicts are not counted: %+v", st)
	}
}

// TestConflictsLastWriterWinsDefault: the default policy keeps the later
// write by its instant (West US's here, though East US's score is higher).
func TestConflictsLastWriterWinsDefault(t *testing.T) {
	a, clock, cs := multiWrite(t, nil, "")
	writeBoth(t, clock, cs, "POST", `{"id":"x","pk":"x","score":7,"v":"east"}`, `{"id":"x","pk":"x","score":3,"v":"west"}`)
	settle(a, clock)
	if got := converged(t, cs, "x"); got["v"] != "west" {
		t.Errorf("x is %v, want the later write, West US's", got)
	}
}

// TestConflictsDeleteWins: a delete in East US wins over West US's later
// replace within the lag, whatever its score, under every Last Writer Wins
// policy, and an item East US created again after its delete wins over
// such a replace; without a procedure, every region records the replace as
// the loser.
func TestConflictsDeleteWins(t *testing.T) {
	for _, policy := range []map[string]any{nil, {"mode": "LastWriterWins", "conflictResolutionPath": "/score"}, {"mode": "Custom"}} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			a, clock, cs := multiWrite(t, policy, "")
			east, west := cs["East US"], cs["West US"]
			for i, again := range []bool{false, true} {
				must(t, east.do("POST", accColl+"/docs", `{"id":"x","pk":"x","score":1,"v":"base"}`, pkHeader("x")...), 201)
				settle(a, clock)
				must(t, east.do("DELETE", accColl+"/docs/x", nil, pkHeader("x")...), 204)
				if again {
					must(t, east.do("POST", accColl+"/docs", `{"id":"x","pk":"x","score":2,"v":"again"}`, pkHeader("x")...), 201)
				}
				clock.Advance(time.Second)
				must(t, west.do("PUT", accColl+"/docs/x", fmt.Sprintf(`{"id":"x","pk":"x","score":9,"v":"west%d"}`, i), pkHeader("x")...), 200)
				settle(a, clock)
				got := converged(t, cs, "x")
				switch {
				case !again && got != nil:
					t.Errorf("x is %v, want it deleted", got)
				case again && (got == nil || got["v"] != "again"):
					t.Errorf("x is %v, want East US's, created again after its delete", got)
				}
				if again {
					must(t, east.do("DELETE", accColl+"/docs/x", nil, pkHeader("x")...), 204)
					settle(a, clock)
				}
			}
			for _, name := range regionNames {
				got := conflictsIn(t, cs[name])
				if policy["mode"] != "Custom" {
					if len(got) != 0 {
						t.Errorf("%s's conflicts feed under Last Writer Wins: %v", name, got)
					}
					continue
				}
				if len(got) != 2 {
					t.Fatalf("%s's conflicts feed: %v, want West US's two replaces", name, got)
				}
				for i, c := range got {
					if lost := content(t, c); lost["v"] != fmt.Sprintf("west%d", i) || c["operationType"] != "replace" {
						t.Errorf("%s: conflict %d is %v, holding %v; want West US's replace", name, i, c, lost)
					}
				}
			}
		})
	}
}

// mergeTags is a merge procedure: the union of both versions' tags, in
// order, and what it saw.
const mergeTags = `function merge(incoming, existing, isTombstone, conflicting) {
	var c = getContext().getCollection();
	if (!incoming || !existing) throw new Error("a merge needs two versions");
	var tags = existing.tags.concat(incoming.tags).sort();
	var doc = {id: existing.id, pk: existing.pk, tags: tags, saw: [existing.v, incoming.v, isTombstone, conflicting.length]};
	if (!c.replaceDocument(existing._self, doc, function (err) { if (err) throw err; })) throw new Error("not accepted");
}`

// TestConflictsCustomMerge: under Custom with a merge procedure, every
// region ends with the procedure's merge of the two versions, run once, in
// the arbiter (East US: existingItem its own, incomingItem West US's); no
// conflict is recorded.
func TestConflictsCustomMerge(t *testing.T) {
	a, clock, cs := multiWrite(t, map[string]any{"mode": "Custom", "conflictResolutionProcedure": "dbs/db/colls/c/sprocs/merge"}, mergeTags)
	writeBoth(t, clock, cs, "POST", `{"id":"x","pk":"x","tags":["b","a"],"v":"east"}`, `{"id":"x","pk":"x","tags":["c"],"v":"west"}`)
	settle(a, clock)
	got := converged(t, cs, "x")
	if fmt.Sprint(got["tags"]) != "[a b c]" || fmt.Sprint(got["saw"]) != "[east west false 0]" {
		t.Errorf("x is %v, want the merge of both versions, East US's the existing one", got)
	}
	for _, name := range regionNames {
		if got := conflictsIn(t, cs[name]); len(got) != 0 {
			t.Errorf("%s's conflicts feed after a merge: %v", name, got)
		}
	}
	// The other way round: West US writes first; the arbiter's view is
	// the same (its own version existing).
	writeBoth(t, clock, cs, "PUT", `{"id":"x","pk":"x","tags":["e"],"v":"east2"}`, `{"id":"x","pk":"x","tags":["d"],"v":"west2"}`)
	settle(a, clock)
	if got := converged(t, cs, "x"); fmt.Sprint(got["tags"]) != "[d e]" || fmt.Sprint(got["saw"]) != "[east2 west2 false 0]" {
		t.Errorf("x is %v after concurrent replaces, want their merge", got)
	}
}

// TestConflictsCustomFailing: a merge procedure that throws merges
// nothing: the arbiter records the loser of Last Writer Wins by /_ts in
// its conflicts feed, and every region keeps the winner.
func TestConflictsCustomFailing(t *testing.T) {
	a, clock, cs := multiWrite(t, map[string]any{"mode": "Custom", "conflictResolutionProcedure": "dbs/db/colls/c/sprocs/merge"},
		`function merge() { throw new Error("no"); }`)
	writeBoth(t, clock, cs, "POST", `{"id":"x","pk":"x","v":"east"}`, `{"id":"x","pk":"x","v":"west"}`)
	settle(a, clock)
	if got := converged(t, cs, "x"); got["v"] != "west" {
		t.Errorf("x is %v, want the later write", got)
	}
	east := conflictsIn(t, cs["East US"])
	if len(east) != 1 || content(t, east[0])["v"] != "east" {
		t.Fatalf("the arbiter's conflicts feed: %v, want East US's version, the loser", east)
	}
	for _, name := range regionNames[1:] {
		if got := conflictsIn(t, cs[name]); len(got) != 0 {
			t.Errorf("%s, not the arbiter, records %v", name, got)
		}
	}
}

// TestConflictsCustomFeed: under Custom without a procedure, every region
// that saw a conflict records its loser in its conflicts feed, and every
// region keeps the Last Writer Wins winner by /_ts; the feed is read in
// pages, queried, read and deleted by id.
func TestConflictsCustomFeed(t *testing.T) {
	a, clock, cs := multiWrite(t, map[string]any{"mode": "Custom"}, "")
	writeBoth(t, clock, cs, "POST", `{"id":"x","pk":"x","v":"east"}`, `{"id":"x","pk":"x","v":"west"}`)
	settle(a, clock)
	writeBoth(t, clock, cs, "PUT", `{"id":"x","pk":"x","v":"east2"}`, `{"id":"x","pk":"x","v":"west2"}`)
	settle(a, clock)
	winner := converged(t, cs, "x")
	if winner["v"] != "west2" {
		t.Errorf("x is %v, want the later write", winner)
	}
	for _, name := range regionNames {
		got := conflictsIn(t, cs[name])
		if len(got) != 2 {
			t.Fatalf("%s's conflicts feed: %v, want the two losers", name, got)
		}
		for i, want := range []struct{ v, op string }{{"east", "create"}, {"east2", "replace"}} {
			c := got[i]
			if lost := content(t, c); lost["v"] != want.v || lost["id"] != "x" || lost["_etag"] == nil {
				t.Errorf("%s: conflict %d holds %v, want East US's %s", name, i, lost, want.v)
			}
			if c["operationType"] != want.op || c["resourceType"] != "document" || c["resourceId"] != winner["_rid"] ||
				c["id"] != c["_rid"] || c["_self"] == nil || c["_etag"] == nil || c["_ts"] == nil || c["conflict_lsn"] == nil {
				t.Errorf("%s: conflict %d is %v", name, i, c)
			}
		}
	}
	west := cs["West US"]
	// Paged.
	r := must(t, west.do("GET", accColl+"/conflicts", nil, "x-ms-max-item-count", "1"), 200)
	tok := r.header.Get("x-ms-continuation")
	if len(documents(t, r, "Conflicts")) != 1 || tok == "" {
		t.Fatalf("a page of one: %s, continuation %q", r.body, tok)
	}
	r = must(t, west.do("GET", accColl+"/conflicts", nil, "x-ms-max-item-count", "1", "x-ms-continuation", tok), 200)
	if d := documents(t, r, "Conflicts"); len(d) != 1 || r.header.Get("x-ms-continuation") != "" || !json.Valid(d[0]) {
		t.Fatalf("the last page: %s, continuation %q", r.body, r.header.Get("x-ms-continuation"))
	}
	// Queried.
	q := must(t, west.do("POST", accColl+"/conflicts", map[string]any{"query": "SELECT c.id FROM c WHERE c.operationType = @op",
		"parameters": []any{map[string]any{"name": "@op", "value": "replace"}}},
		"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"), 200)
	conflicts := conflictsIn(t, west)
	if d := documents(t, q, "Conflicts"); len(d) != 1 || string(d[0]) != fmt.Sprintf(`{"id":%q}`, conflicts[1]["id"]) {
		t.Errorf("the query: %s", q.body)
	}
	// Read (by name and id, and by its _self), deleted (with its
	// partition key), gone.
	id := conflicts[0]["id"].(string)
	one := must(t, west.do("GET", accColl+"/conflicts/"+id, nil), 200)
	if one.json(t)["content"] != conflicts[0]["content"] || one.header.Get("etag") != conflicts[0]["_etag"] {
		t.Errorf("read by id: %s (etag %s)", one.body, one.header.Get("etag"))
	}
	if r := must(t, west.doRID("GET", "/"+conflicts[0]["_self"].(string), nil), 200); string(r.body) != string(one.body) {
		t.Errorf("read by its _self: %s", r.body)
	}
	if r := west.do("DELETE", accColl+"/conflicts/"+id, nil); r.status != 400 {
		t.Errorf("a delete without a partition key: %d", r.status)
	}
	must(t, west.do("DELETE", accColl+"/conflicts/"+id, nil, pkHeader("other")...), 404)
	must(t, west.do("DELETE", accColl+"/conflicts/"+id, nil, pkHeader("x")...), 204)
	must(t, west.do("GET", accColl+"/conflicts/"+id, nil), 404)
	if got := conflictsIn(t, west); len(got) != 1 || got[0]["id"] != conflicts[1]["id"] {
		t.Errorf("after the delete: %v", got)
	}
	if got := conflictsIn(t, cs["East US"]); len(got) != 2 {
		t.Errorf("a delete in West US removed East US's conflicts: %v", got)
	}
}

// TestConflictsFeedDurable: with Dir, each region's conflicts feed is kept
// across a restart, a conflict deleted stays deleted, and a container
// deleted and made again under its id starts with none.
func TestConflictsFeedDurable(t *testing.T) {
	dir := t.TempDir()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	a, cs, stop := serveMulti(t, clock, dir)
	createDB(t, cs["East US"], "db")
	for _, coll := range []string{"c", "d"} {
		must(t, cs["East US"].do("POST", "/dbs/db/colls", map[string]any{"id": coll, "partitionKey": map[string]any{"paths": []string{"/pk"}},
			"conflictResolutionPolicy": map[string]any{"mode": "Custom"}}), 201)
	}
	for _, coll := range []string{"c", "d"} {
		must(t, cs["East US"].do("POST", "/dbs/db/colls/"+coll+"/docs", `{"id":"x","pk":"x","v":"east"}`, pkHeader("x")...), 201)
		clock.Advance(time.Second)
		must(t, cs["West US"].do("POST", "/dbs/db/colls/"+coll+"/docs", `{"id":"x","pk":"x","v":"west"}`, pkHeader("x")...), 201)
	}
	settle(a, clock)
	before := map[string][]map[string]any{}
	for _, name := range regionNames {
		before[name] = conflictsIn(t, cs[name])
		if len(before[name]) != 1 {
			t.Fatalf("%s: %v", name, before[name])
		}
	}
	id := before["West US"][0]["id"].(string)
	must(t, cs["West US"].do("DELETE", accColl+"/conflicts/"+id, nil, pkHeader("x")...), 204)
	// d is deleted and made again: its conflicts are gone.
	must(t, cs["East US"].do("DELETE", "/dbs/db/colls/d", nil), 204)
	must(t, cs["East US"].do("POST", "/dbs/db/colls", map[string]any{"id": "d", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	stop()

	_, cs, stop = serveMulti(t, clock, dir)
	defer stop()
	for _, name := range regionNames {
		got := conflictsIn(t, cs[name])
		want := before[name]
		if name == "West US" {
			want = nil
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s after a restart: %v, want %v", name, got, want)
		}
		if d := documents(t, must(t, cs[name].do("GET", "/dbs/db/colls/d/conflicts", nil), 200), "Conflicts"); len(d) != 0 {
			t.Errorf("%s: the container made again has the deleted one's conflicts: %s", name, d)
		}
		if got := policyOf(t, must(t, cs[name].do("GET", "/dbs/db/colls/d", nil), 200)); got != `{"mode":"LastWriterWins","conflictResolutionPath":"/_ts","conflictResolutionProcedure":""}` {
			t.Errorf("%s: the container made again has %s", name, got)
		}
	}
}

// TestConflictsMergeOnce: a merge is made once: the catch-up at a restart,
// which replays the write regions' feeds, does not merge again.
func TestConflictsMergeOnce(t *testing.T) {
	dir := t.TempDir()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	a, cs, stop := serveMulti(t, clock, dir)
	createConflictColl(t, cs["East US"], map[string]any{"mode": "Custom", "conflictResolutionProcedure": "dbs/db/colls/c/sprocs/merge"}, mergeTags)
	// West US writes first: its version loses by /_ts in East US, the
	// arbiter, which the catch-up then meets again.
	must(t, cs["West US"].do("POST", accColl+"/docs", `{"id":"x","pk":"x","tags":["b"],"v":"west"}`, pkHeader("x")...), 201)
	clock.Advance(time.Second)
	must(t, cs["East US"].do("POST", accColl+"/docs", `{"id":"x","pk":"x","tags":["a"],"v":"east"}`, pkHeader("x")...), 201)
	settle(a, clock)
	merged := converged(t, cs, "x")
	if fmt.Sprint(merged["tags"]) != "[a b]" {
		t.Fatalf("x is %v, want the merge", merged)
	}
	stop()
	a, cs, stop = serveMulti(t, clock, dir)
	defer stop()
	settle(a, clock)
	if got := converged(t, cs, "x"); got["_etag"] != merged["_etag"] {
		t.Errorf("after a restart x is %v, not the merge made before, %v", got, merged)
	}
}

// TestConflictsSeededConverge: seeded writers in both write regions
// upsert and delete a few items under a random lag, under every kind of
// policy; once every change has arrived, every region holds the same
// version of each item (or none in all). (A path whose numbers do not
// grow along an item's history may leave regions apart: see
// lethe.ConflictRule.)
func TestConflictsSeededConverge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy map[string]any
		merge  string
	}{
		{"LastWriterWins /_ts", nil, ""},
		{"LastWriterWins /score", map[string]any{"mode": "LastWriterWins", "conflictResolutionPath": "/score"}, ""},
		{"Custom without a procedure", map[string]any{"mode": "Custom"}, ""},
		{"Custom with a merge", map[string]any{"mode": "Custom", "conflictResolutionProcedure": "dbs/db/colls/c/sprocs/merge"}, mergeTags},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(10) {
				rnd := rand.New(rand.NewPCG(seed, 45))
				clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
				a, cs, stop := serveMultiLag(t, clock, "", func(string, string) time.Duration { return time.Duration(rnd.IntN(5000)) * time.Millisecond })
				createConflictColl(t, cs["East US"], tc.policy, tc.merge)
				ids := []string{"a", "b", "c"}
				for i := range 60 {
					region := regionNames[rnd.IntN(2)]
					id := ids[rnd.IntN(len(ids))]
					if rnd.IntN(5) == 0 {
						if r := cs[region].do("DELETE", accColl+"/docs/"+id, nil, pkHeader("x")...); r.status != 204 && r.status != 404 {
							t.Fatalf("delete: %d %s", r.status, r.body)
						}
					} else {
						// The score grows along each item's history, as
						// lethe.ConflictRule needs a path's numbers to.
						doc := fmt.Sprintf(`{"id":%q,"pk":"x","score":%d,"tags":[%q],"v":"%s%d"}`, id, i, region, region, i)
						if r := cs[region].do("POST", accColl+"/docs", doc, append(pkHeader("x"), "x-ms-documentdb-is-upsert", "True")...); r.status != 200 && r.status != 201 {
							t.Fatalf("upsert: %d %s", r.status, r.body)
						}
					}
					clock.Advance(time.Duration(rnd.IntN(1000)) * time.Millisecond)
					a.DeliverDue()
				}
				for range 4 {
					clock.Advance(10 * time.Second)
					a.DeliverDue()
				}
				for _, id := range ids {
					converged(t, cs, id)
				}
				stop()
			}
		})
	}
}

// BenchmarkConflicts writes one item in both write regions of an account
// on a manual clock, within the lag, then delivers: two concurrent writes
// and their conflicts' resolution in each region per op, under each kind
// of policy (with a merge, the arbiter's merge write delivered at the
// next op).
func BenchmarkConflicts(b *testing.B) {
	for _, tc := range []struct {
		name, policy, merge string
	}{
		{"LastWriterWins", `{"mode":"LastWriterWins"}`, ""},
		{"Custom feed", `{"mode":"Custom"}`, ""},
		{"Custom merge", `{"mode":"Custom","conflictResolutionProcedure":"dbs/db/colls/c/sprocs/merge"}`, mergeTags},
	} {
		b.Run(tc.name, func(b *testing.B) {
			clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
			cfg := cosmosrest.AccountConfig{MultipleWriteLocations: true, Consistency: cosmosrest.Eventual,
				Regions: []cosmosrest.RegionConfig{{Name: "A", Writable: true}, {Name: "B", Writable: true}},
				Lag:     func(string, string) time.Duration { return time.Second }}
			cfg.Clock = clock
			cfg.Reaper.Disabled = true
			a, err := cosmosrest.NewAccount(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			serve := serveUpsert
			ha, hb := a.Region("A"), a.Region("B")
			serve(ha, "POST", "/dbs", `{"id":"db"}`)
			serve(ha, "POST", "/dbs/db/colls", `{"id":"c","partitionKey":{"paths":["/pk"]},"conflictResolutionPolicy":`+tc.policy+`}`)
			if tc.merge != "" {
				text, _ := json.Marshal(map[string]string{"id": "merge", "body": tc.merge})
				serve(ha, "POST", accColl+"/sprocs", string(text))
			}
			b.ResetTimer()
			for i := range b.N {
				for _, h := range []http.Handler{ha, hb} {
					if code := serve(h, "POST", accColl+"/docs", fmt.Sprintf(`{"id":"x","pk":"x","tags":["%d"]}`, i)); code != 200 && code != 201 {
						b.Fatalf("upsert: %d", code)
					}
					clock.Advance(time.Millisecond)
				}
				clock.Advance(time.Second)
				a.DeliverDue()
			}
			b.StopTimer()
			var conflicts int64
			for _, st := range a.Status() {
				conflicts += st.Conflicts
			}
			b.ReportMetric(float64(conflicts)/float64(b.N), "conflicts/op")
		})
	}
}
