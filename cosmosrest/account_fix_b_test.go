package cosmosrest_test

import (
	"strings"
	"sync/atomic"
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

// A change of a container taken for delivery before the container is
// deleted, and applied after a container of the same name is made again,
// is of the old incarnation: the read region drops it (and its session
// progress), as the write region holds nothing of it in the new one.
func TestAccountRecreatedContainerDropsOldChanges(t *testing.T) {
	a, clock, cs := lagged(t, 5*time.Second, cosmosrest.Session)
	east, west := cs["East US"], cs["West US"]
	must(t, east.do("POST", accColl+"/docs", `{"id":"old","pk":"x"}`, pkHeader("x")...), 201)
	release := cosmosrest.HoldDelivery(a, "West US")
	must(t, east.do("DELETE", accColl, nil), 204)
	must(t, east.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	release()
	clock.Advance(10 * time.Second)
	a.DeliverDue()
	must(t, east.do("GET", accColl+"/docs/old", nil, pkHeader("x")...), 404)
	if r := west.do("GET", accColl+"/docs/old", nil, append(pkHeader("x"), "x-ms-consistency-level", "Eventual")...); r.status != 404 {
		t.Fatalf("West US answers %d for an item of the deleted container, in the container made again; East US, the write region, 404", r.status)
	}
	// West US holds nothing of the new container: its token is the first.
	if tok := must(t, west.do("GET", accColl+"/docs", nil, "x-ms-consistency-level", "Eventual"), 200).header.Get("x-ms-session-token"); tok != "0:-1#1" {
		t.Errorf("West US's session token for the container made again is %q, not 0:-1#1", tok)
	}
}

// A fault rule is for the client's requests: the replays of an
// account-wide change in the other regions never meet it (a 503 there
// would leave the regions differing after the client was answered 201).
func TestAccountReplaysSkipFaults(t *testing.T) {
	faults := &cosmosrest.Faults{}
	cfg := cosmosrest.AccountConfig{}
	cfg.Faults = faults
	cfg.Reaper.Disabled = true
	_, cs := testAccount(t, cfg)
	east, west := cs["East US"], cs["West US"]
	createDB(t, east, "db")
	// The first hit is the client's request in East US; any further one a
	// replay's.
	if err := faults.Add(cosmosrest.FaultRule{ID: "second", Condition: cosmosrest.FaultCondition{OperationType: cosmosrest.FaultMetadataContainer},
		Result: cosmosrest.FaultResult{Delay: time.Nanosecond}, HitLimit: 1}); err != nil {
		t.Fatal(err)
	}
	if err := faults.Add(cosmosrest.FaultRule{ID: "fail", Condition: cosmosrest.FaultCondition{OperationType: cosmosrest.FaultMetadataContainer},
		Result: cosmosrest.FaultResult{StatusCode: 503}}); err != nil {
		t.Fatal(err)
	}
	must(t, east.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	if hits, _ := faults.Hits("fail"); hits != 0 {
		t.Errorf("the rule fired %d times on the replays of the create", hits)
	}
	faults.Clear()
	must(t, west.do("GET", accColl, nil), 200)
	must(t, cs["North Europe"].do("GET", accColl, nil), 200)
}

// A region that fails an account-wide change the answering region made
// leaves the regions differing: the client is answered 503 naming it, not
// the answering region's 201.
func TestAccountFailedReplayAnswers503(t *testing.T) {
	a, cs := testAccount(t, cosmosrest.AccountConfig{})
	east := cs["East US"]
	createDB(t, east, "db")
	if err := cosmosrest.CreateInStore(a.Region("West US"), "db", "c"); err != nil {
		t.Fatal(err)
	}
	r := must(t, east.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 503)
	if !strings.Contains(string(r.body), "West US (409)") {
		t.Errorf("the 503 does not name the region that failed the create: %s", r.body)
	}
	// The regions that made it hold it.
	must(t, east.do("GET", accColl, nil), 200)
	must(t, cs["North Europe"].do("GET", accColl, nil), 200)
}

// tickClock moves one second at every reading: the clock crosses a second
// between a region's making of an account-wide change and its replay in
// the next region.
type tickClock struct{ n atomic.Int64 }

func (c *tickClock) Now() time.Time { return time.Unix(1_700_000_000+c.n.Add(1), 0) }

// A container has the instant the answering region gave it, and so the same
// _ts and _etag, in every region: a replace with If-Match on that ETag is
// made in every region, and one on another ETag in none.
func TestAccountContainerSameETagEverywhere(t *testing.T) {
	cfg := cosmosrest.AccountConfig{}
	cfg.Clock = &tickClock{}
	cfg.Reaper.Disabled = true
	a, cs := testAccount(t, cfg)
	east := cs["East US"]
	createDBColl(t, east)
	e := must(t, east.do("GET", accColl, nil), 200).json(t)
	for _, name := range a.Regions() {
		if got := must(t, cs[name].do("GET", accColl, nil), 200).json(t); got["_etag"] != e["_etag"] || got["_ts"] != e["_ts"] {
			t.Errorf("the container's _etag, _ts are %v, %v in %s; %v, %v in East US", got["_etag"], got["_ts"], name, e["_etag"], e["_ts"])
		}
	}
	props := map[string]any{"id": "c", "defaultTtl": 60, "partitionKey": map[string]any{"paths": []string{"/pk"}}}
	must(t, east.do("PUT", accColl, props, "If-Match", `"0000000000000000"`), 412)
	must(t, cs["West US"].do("PUT", accColl, props, "If-Match", e["_etag"].(string)), 200)
	for _, name := range a.Regions() {
		if ttl := must(t, cs[name].do("GET", accColl, nil), 200).json(t)["defaultTtl"]; ttl != 60.0 {
			t.Errorf("%s's container has defaultTtl %v after the replace West US made", name, ttl)
		}
	}
}

// Every region gives the containers it finds on disk one instant (their
// _ts when none was made or replaced since the start): the same ETag.
func TestAccountRegionsShareStart(t *testing.T) {
	a, _ := testAccount(t, cosmosrest.AccountConfig{})
	first := cosmosrest.Start(a.Region(a.Regions()[0]))
	for _, name := range a.Regions() {
		if s := cosmosrest.Start(a.Region(name)); !s.Equal(first) {
			t.Errorf("%s starts at %v, the first region at %v", name, s, first)
		}
	}
}
