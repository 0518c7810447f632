package cosmosrest_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// TestConflictsContinuationSurvivesDelete: the conflicts feed's
// continuation is a position, the number of the page's last conflict: a
// conflict deleted between two pages skips none of the others (it was an
// index into the list, and the next page began a conflict later).
func TestConflictsContinuationSurvivesDelete(t *testing.T) {
	a, clock, cs := multiWrite(t, map[string]any{"mode": "Custom"}, "")
	writeBoth(t, clock, cs, "POST", `{"id":"x","pk":"x","v":"east1"}`, `{"id":"x","pk":"x","v":"west1"}`)
	settle(a, clock)
	for i := 2; i <= 3; i++ {
		writeBoth(t, clock, cs, "PUT", fmt.Sprintf(`{"id":"x","pk":"x","v":"east%d"}`, i), fmt.Sprintf(`{"id":"x","pk":"x","v":"west%d"}`, i))
		settle(a, clock)
	}
	west := cs["West US"]
	all := conflictsIn(t, west)
	if len(all) != 3 {
		t.Fatalf("West US's conflicts: %v", all)
	}
	r := must(t, west.do("GET", accColl+"/conflicts", nil, "x-ms-max-item-count", "1"), 200)
	tok := r.header.Get("x-ms-continuation")
	if d := documents(t, r, "Conflicts"); len(d) != 1 || tok == "" {
		t.Fatalf("the first page: %s, continuation %q", r.body, tok)
	}
	must(t, west.do("DELETE", accColl+"/conflicts/"+all[0]["id"].(string), nil, pkHeader("x")...), 204)
	var got []string
	for tok != "" {
		r = must(t, west.do("GET", accColl+"/conflicts", nil, "x-ms-max-item-count", "1", "x-ms-continuation", tok), 200)
		for _, d := range documents(t, r, "Conflicts") {
			var c map[string]any
			if err := json.Unmarshal(d, &c); err != nil {
				t.Fatal(err)
			}
			got = append(got, content(t, c)["v"].(string))
		}
		tok = r.header.Get("x-ms-continuation")
	}
	if fmt.Sprint(got) != "[east2 east3]" {
		t.Errorf("the pages after a delete hold %v, want [east2 east3]", got)
	}
}

// TestConflictsLoserOperation: a conflict's operationType is the
// operation of the version that lost: East US's create, lost to West US's
// replace of its own create, is a create (it was given the incoming
// change's, a replace).
func TestConflictsLoserOperation(t *testing.T) {
	a, clock, cs := multiWrite(t, map[string]any{"mode": "Custom"}, "")
	must(t, cs["West US"].do("POST", accColl+"/docs", `{"id":"x","pk":"x","v":"west1"}`, pkHeader("x")...), 201)
	clock.Advance(time.Second)
	must(t, cs["East US"].do("POST", accColl+"/docs", `{"id":"x","pk":"x","v":"east"}`, pkHeader("x")...), 201)
	clock.Advance(time.Second)
	must(t, cs["West US"].do("PUT", accColl+"/docs/x", `{"id":"x","pk":"x","v":"west2"}`, pkHeader("x")...), 200)
	settle(a, clock)
	if got := converged(t, cs, "x"); got["v"] != "west2" {
		t.Fatalf("x is %v, want West US's replace, the latest", got)
	}
	ops := map[string]any{}
	for _, c := range conflictsIn(t, cs["East US"]) {
		ops[content(t, c)["v"].(string)] = c["operationType"]
	}
	if fmt.Sprint(ops) != "map[east:create west1:create]" {
		t.Errorf("East US's conflicts, by loser: %v, want both creates", ops)
	}
}

// TestConflictsMarksPruned: a region keeps the marks of the changes whose
// conflicts it handled only until every write region's feed, as it stood
// then, has reached it; a restart's catch-up, which replays every feed,
// then records none of those conflicts again (a conflict deleted stays
// deleted), for the position the region had reached is kept.
func TestConflictsMarksPruned(t *testing.T) {
	dir := t.TempDir()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	a, cs, stop := serveMulti(t, clock, dir)
	createConflictColl(t, cs["East US"], map[string]any{"mode": "Custom"}, "")
	writeBoth(t, clock, cs, "POST", `{"id":"x","pk":"x","v":"east0"}`, `{"id":"x","pk":"x","v":"west0"}`)
	settle(a, clock)
	const rounds = 60
	for i := 1; i <= rounds; i++ {
		writeBoth(t, clock, cs, "PUT", fmt.Sprintf(`{"id":"x","pk":"x","v":"east%d"}`, i), fmt.Sprintf(`{"id":"x","pk":"x","v":"west%d"}`, i))
		settle(a, clock)
		for _, c := range conflictsIn(t, cs["West US"]) {
			must(t, cs["West US"].do("DELETE", accColl+"/conflicts/"+c["id"].(string), nil, pkHeader("x")...), 204)
		}
	}
	if n := cosmosrest.HandledMarks(a.Region("West US"), "db", "c"); n >= rounds {
		t.Errorf("West US holds %d handled marks after %d conflicts, every one: none was pruned", n, rounds+1)
	}
	east := len(conflictsIn(t, cs["East US"]))
	stop()
	a, cs, stop = serveMulti(t, clock, dir)
	defer stop()
	settle(a, clock)
	if got := conflictsIn(t, cs["West US"]); len(got) != 0 {
		t.Errorf("after a restart West US recorded again %d conflicts it had deleted", len(got))
	}
	if got := len(conflictsIn(t, cs["East US"])); got != east {
		t.Errorf("after a restart East US holds %d conflicts, %d before", got, east)
	}
}
