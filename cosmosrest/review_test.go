package cosmosrest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestReviewContainerReplaceReaperMeanwhile: a region's reaper does not
// wait for an account-wide change as item requests do (fanout's topo). A
// defaultTtl raised in East US keeps an item alive there; West US, whose
// reaper purges the item under the old default between the change in
// East US and its replay in West US, must keep it alive too (the change
// is made at East US's instant: "a defaultTtl change expires the same
// items at the same instants in every region", docs/regions.md).
func TestReviewContainerReplaceReaperMeanwhile(t *testing.T) {
	clock, a, cs := replaceAccount(t)
	east, west := cs["East US"], cs["West US"]
	coll := func(ttl int) map[string]any {
		return map[string]any{"id": "c", "defaultTtl": ttl, "partitionKey": map[string]any{"paths": []string{"/pk"}}}
	}
	must(t, east.do("POST", "/dbs/db/colls", coll(10)), 201)
	must(t, east.do("POST", accColl+"/docs", `{"id":"a","pk":"x"}`, pkHeader("x")...), 201)
	a.DeliverDue()
	clock.Advance(8 * time.Second) // 2 s left of the item's 10
	cosmosrest.BeforeReplay(a, func(region string) {
		if region != "West US" {
			return
		}
		cosmosrest.BeforeReplay(a, func(string) {})
		clock.Advance(5 * time.Second)
		// West US's reaper runs, as it does whatever the account does.
		s, _ := a.Region("West US").Store("db")
		c, err := s.Container("c")
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := c.Purge(t.Context()); err != nil {
			t.Error(err)
		}
	})
	must(t, east.do("PUT", "/dbs/db/colls/c", coll(1000)), 200)
	cosmosrest.BeforeReplay(a, func(string) {})
	e := east.do("GET", accColl+"/docs/a", nil, pkHeader("x")...).status
	w := west.do("GET", accColl+"/docs/a", nil, pkHeader("x")...).status
	if e != w || e != http.StatusOK {
		t.Errorf("after the defaultTtl raised to 1000 s: the item is %d in East US and %d in West US (want 200 in both)", e, w)
	}
}
