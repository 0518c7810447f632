package cosmosrest_test

import (
	"fmt"
	"testing"
	"time"
)

// uniqueEmails is a container's unique key policy: one email an item.
var uniqueEmails = map[string]any{"uniqueKeyPolicy": map[string]any{"uniqueKeys": []any{map[string]any{"paths": []string{"/email"}}}}}

// mergeUnique is a merge procedure for unique-key conflicts: it keeps the
// incoming item, noting the ids of the items it collided with and whether
// it was told of a tombstone, and deletes those items.
const mergeUnique = `function merge(incoming, existing, isTombstone, conflicting) {
	var c = getContext().getCollection();
	if (existing) throw new Error("a unique-key conflict has no existing item");
	var saw = [];
	conflicting.forEach(function (d) {
		saw.push(d.id + ":" + d.v);
		if (!c.deleteDocument(d._self, {}, function (err) { if (err) throw err; })) throw new Error("not accepted");
	});
	var doc = {id: incoming.id, pk: incoming.pk, email: incoming.email, v: incoming.v, saw: saw, tombstone: isTombstone};
	if (!c.upsertDocument(c.getSelfLink(), doc, function (err) { if (err) throw err; })) throw new Error("not accepted");
}`

// TestConflictsUniqueKey: East US creates x and West US, a second later,
// y, both of one partition with the same email; after replication every
// region holds the one the policy picks (Last Writer Wins on _ts or on a
// path; Custom's procedure, which sees the colliding items, or without one
// Last Writer Wins on _ts), and the conflicts feeds hold exactly the
// losers: none under Last Writer Wins or after a merge; without a
// procedure, the loser in every region; with a failing one, in the
// arbiter only.
func TestConflictsUniqueKey(t *testing.T) {
	merge := map[string]any{"mode": "Custom", "conflictResolutionProcedure": "dbs/db/colls/c/sprocs/merge"}
	for _, tc := range []struct {
		name   string
		policy map[string]any
		proc   string
		winner string // "x" or "y"
		saw    string // the merged winner's saw
		feeds  []int  // the losers each region records
		// eastLater: East US writes a second after West US, so that the
		// arbiter's own item wins Last Writer Wins there.
		eastLater bool
	}{
		{name: "lww _ts", winner: "y", feeds: []int{0, 0, 0}},
		{name: "lww path", policy: map[string]any{"mode": "LastWriterWins", "conflictResolutionPath": "/score"}, winner: "x", feeds: []int{0, 0, 0}},
		{name: "custom merge", policy: merge, proc: mergeUnique, winner: "y", saw: "[x:east]", feeds: []int{0, 0, 0}},
		{name: "custom merge, the arbiter's later", policy: merge, proc: mergeUnique, winner: "y", saw: "[x:east]", feeds: []int{0, 0, 0}, eastLater: true},
		{name: "custom failing", policy: merge, proc: `function merge() { throw new Error("no"); }`, winner: "y", feeds: []int{1, 0, 0}},
		{name: "custom", policy: map[string]any{"mode": "Custom"}, winner: "y", feeds: []int{1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, clock, cs := multiWriteWith(t, tc.policy, tc.proc, uniqueEmails)
			writes := []func(){
				func() {
					must(t, cs["East US"].do("POST", accColl+"/docs", `{"id":"x","pk":"x","email":"e","score":7,"v":"east"}`, pkHeader("x")...), 201)
				},
				func() {
					must(t, cs["West US"].do("POST", accColl+"/docs", `{"id":"y","pk":"x","email":"e","score":3,"v":"west"}`, pkHeader("x")...), 201)
				},
			}
			if tc.eastLater {
				writes[0], writes[1] = writes[1], writes[0]
			}
			writes[0]()
			clock.Advance(time.Second)
			writes[1]()
			settle(a, clock)
			loser := map[string]string{"x": "y", "y": "x"}[tc.winner]
			if got := converged(t, cs, loser); got != nil {
				t.Errorf("the loser %s is %v", loser, got)
			}
			got := converged(t, cs, tc.winner)
			if got == nil || got["email"] != "e" {
				t.Fatalf("the winner %s is %v", tc.winner, got)
			}
			if tc.saw != "" && (fmt.Sprint(got["saw"]) != tc.saw || got["tombstone"] != false) {
				t.Errorf("the merged %s is %v, want it to have seen %s, no tombstone", tc.winner, got, tc.saw)
			}
			for i, name := range regionNames {
				feed := conflictsIn(t, cs[name])
				if len(feed) != tc.feeds[i] {
					t.Fatalf("%s's conflicts feed: %v, want %d losers", name, feed, tc.feeds[i])
				}
				for _, c := range feed {
					if lost := content(t, c); lost["id"] != loser || lost["email"] != "e" || c["operationType"] != "create" {
						t.Errorf("%s records %v, holding %v; want the loser %s's create", name, c, lost, loser)
					}
				}
			}
		})
	}
}
