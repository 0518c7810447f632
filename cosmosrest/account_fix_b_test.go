package cosmosrest_test

import (
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// A container is made in the write region first and replayed in the
// others after; a write to it in between (another client's) must not be
// sent to a region that has no container yet, where it would be dropped
// for good. (The fault delays the replay in West US, as a slow disk would:
// seed 6 draws no delay for East US and one for West US.)
func TestAccountCreateContainerHoldsWrites(t *testing.T) {
	faults := &cosmosrest.Faults{}
	cfg := cosmosrest.AccountConfig{Consistency: cosmosrest.Eventual}
	cfg.Faults = faults // the system clock: the delivery loop delivers at once
	cfg.Reaper.Disabled = true
	a, cs := testAccount(t, cfg)
	east, west := cs["East US"], cs["West US"]
	createDB(t, east, "db")
	if err := faults.Add(cosmosrest.FaultRule{ID: "slow", Condition: cosmosrest.FaultCondition{OperationType: cosmosrest.FaultMetadataContainer},
		Result: cosmosrest.FaultResult{Delay: 500 * time.Millisecond}, InjectionRate: 0.5, Seed: 6}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if r := east.do("POST", accColl+"/docs", `{"id":"early","pk":"x"}`, pkHeader("x")...); r.status == 201 {
				return
			}
			time.Sleep(time.Millisecond) // pacing only: 404 until East US has the container
		}
	}()
	must(t, east.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	<-done
	faults.Clear()
	a.DeliverDue() // waits for a delivery under way, then delivers the rest
	if r := west.do("GET", accColl+"/docs/early", nil, pkHeader("x")...); r.status != 200 {
		t.Fatalf("West US answers %d for the write East US acknowledged", r.status)
	}
}
