package cosmosrest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// TestConflictsMarksPruned: a region keeps the marks of the changes whose
// conflicts it handled only until every write region's feed, as it stood
// then, has reached it; a restart's catch-up, which replays every feed,
// then records none of those conflicts again (a conflict deleted stays
// deleted), for the position the region had reached is kept.
func TestConflictsMarksPruned(t *testing.T) {
	dir := t.TempDir()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	a, cs, stop := serveMulti(t, clock, dir)
	createDB(t, cs["East US"], "db")
	must(t, cs["East US"].do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}},
		"conflictResolutionPolicy": map[string]any{"mode": "Custom"}}), 201)
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
