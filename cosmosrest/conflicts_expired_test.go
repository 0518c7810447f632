package cosmosrest_test

import (
	"testing"
	"time"

	"github.com/lethedb/lethe"
)

// mergeNothing and mergeLog are merge procedures: one writes nothing, the
// other writes what it was given.
const (
	mergeNothing = `function merge(incoming, existing, isTombstone, conflicting) {}`
	mergeLog     = `function merge(incoming, existing, isTombstone, conflicting) {
	var c = getContext().getCollection();
	var doc = {id: "x", pk: "x", v: "merged", inc: incoming ? incoming.v : null, ex: existing ? existing.v : null, tomb: isTombstone};
	if (!c.upsertDocument(c.getSelfLink(), doc, function (err) { if (err) throw err; })) throw new Error("not accepted");
}`
)

// TestConflictsExpiredSideNotRestored: East US replaces x with a ttl of
// 3 s, West US replaces it a second later with none; West's version
// reaches East after East's expired. An expired version is no version:
// no policy brings it back (the seed rule), and West's acknowledged,
// never-expiring write stays in every region. A merge procedure is not
// given the expired version, and no conflict is recorded for it. (A merge
// restored East's expired version with a new _ts, and with a procedure
// that wrote nothing, the restored version expired again: x was gone
// everywhere.)
func TestConflictsExpiredSideNotRestored(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		mode  map[string]any
		merge string
	}{
		{"merge writing nothing", map[string]any{"mode": "Custom", "conflictResolutionProcedure": "dbs/db/colls/c/sprocs/merge"}, mergeNothing},
		{"merge writing what it saw", map[string]any{"mode": "Custom", "conflictResolutionProcedure": "dbs/db/colls/c/sprocs/merge"}, mergeLog},
		{"custom without a procedure", map[string]any{"mode": "Custom"}, ""},
		{"last writer wins", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, clock, cs := multiWrite(t, tc.mode, tc.merge)
			props := map[string]any{"id": "c", "defaultTtl": -1, "partitionKey": map[string]any{"paths": []string{"/pk"}}}
			if tc.mode != nil {
				props["conflictResolutionPolicy"] = tc.mode
			}
			must(t, cs["East US"].do("PUT", accColl, props), 200)
			must(t, cs["East US"].do("POST", accColl+"/docs", `{"id":"x","pk":"x","v":"0"}`, pkHeader("x")...), 201)
			settle(a, clock)
			writeBoth(t, clock, cs, "PUT", `{"id":"x","pk":"x","v":"east","ttl":3}`, `{"id":"x","pk":"x","v":"west"}`)
			clock.Advance(conflictLag) // East's version expired 7 s ago; West's arrives in East
			a.DeliverDue()
			r := cs["East US"].do("GET", accColl+"/docs/x", nil, pkHeader("x")...)
			if r.status != 200 {
				t.Fatalf("East US lost West US's write: %d %s", r.status, r.body)
			}
			if v := r.json(t)["v"]; v != "west" {
				t.Errorf("East US holds %v, not West US's version (an expired version was brought back or merged): %s", v, r.body)
			}
			settle(a, clock)
			if got := converged(t, cs, "x"); got == nil || got["v"] != "west" {
				t.Errorf("the regions hold %v, not West US's version", got)
			}
			for _, region := range []string{"East US", "West US"} {
				if cf := conflictsIn(t, cs[region]); len(cf) != 0 {
					t.Errorf("%s recorded a conflict with an expired version: %v", region, cf)
				}
			}
		})
	}
}

// TestConflictsIDNotReusedAfterRestart: a conflict deleted before a
// restart leaves its number taken: the next conflict has another id (it
// was given the deleted one's, and the same _etag).
func TestConflictsIDNotReusedAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	a, cs, stop := serveMulti(t, clock, dir)
	createConflictColl(t, cs["East US"], map[string]any{"mode": "Custom"}, "")
	writeBoth(t, clock, cs, "POST", `{"id":"x","pk":"x","v":"east"}`, `{"id":"x","pk":"x","v":"west"}`)
	settle(a, clock)
	feed := conflictsIn(t, cs["West US"])
	if len(feed) != 1 {
		t.Fatalf("West US's conflicts: %v", feed)
	}
	id := feed[0]["id"].(string)
	must(t, cs["West US"].do("DELETE", accColl+"/conflicts/"+id, nil, pkHeader("x")...), 204)
	stop()
	a, cs, stop = serveMulti(t, clock, dir)
	defer stop()
	writeBoth(t, clock, cs, "PUT", `{"id":"x","pk":"x","v":"east2"}`, `{"id":"x","pk":"x","v":"west2"}`)
	settle(a, clock)
	feed = conflictsIn(t, cs["West US"])
	if len(feed) == 0 {
		t.Fatal("no conflict after the restart")
	}
	for _, c := range feed {
		if c["id"] == id {
			t.Errorf("the deleted conflict's id %s was given again: %v", id, c)
		}
	}
}
