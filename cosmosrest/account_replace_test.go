package cosmosrest_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// steppingClock is a manual clock that, while step is set, moves step
// further at every reading: the regions of an account that replays a
// change take their readings a moment after the region that answered.
type steppingClock struct {
	*lethe.ManualClock
	step atomic.Int64
}

func (c *steppingClock) Now() time.Time {
	if d := c.step.Load(); d > 0 {
		c.Advance(time.Duration(d))
	}
	return c.ManualClock.Now()
}

// replaceAccount serves an account of regionNames at Eventual
// consistency on a steppingClock (standing still until told to step),
// without a reaper, with the database db, and returns the clock, the
// account and a client per region.
func replaceAccount(t *testing.T) (*steppingClock, *cosmosrest.Account, map[string]*client) {
	t.Helper()
	clock := &steppingClock{ManualClock: lethe.NewManualClock(time.Unix(1_700_000_000, 0))}
	cfg := cosmosrest.AccountConfig{Consistency: cosmosrest.Eventual}
	cfg.Clock = clock
	cfg.Reaper.Disabled = true
	a, cs := testAccount(t, cfg)
	createDB(t, cs["East US"], "db")
	return clock, a, cs
}

// regionExpiries returns, by id, the instant (crts) at which each item of
// db/coll expired in region's change feed.
func regionExpiries(t *testing.T, a *cosmosrest.Account, region, coll string) map[string]int64 {
	t.Helper()
	s, ok := a.Region(region).Store("db")
	if !ok {
		t.Fatalf("%s has no database db", region)
	}
	c, err := s.Container(coll)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	o := &lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes}
	for {
		page, err := c.ReadChangeFeed(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) == 0 {
			return out
		}
		o.Continuation = page.ContinuationToken
		for _, raw := range page.Items {
			var ch struct {
				Metadata struct {
					Expired bool   `json:"timeToLiveExpired"`
					ID      string `json:"id"`
					CRTS    int64  `json:"crts"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(raw, &ch); err != nil {
				t.Fatal(err)
			}
			if ch.Metadata.Expired {
				out[ch.Metadata.ID] = ch.Metadata.CRTS
			}
		}
	}
}

// TestAccountContainerReplaceSameInstant: a defaultTtl change is made in
// every region at the instant of the region that answered it, though the
// others replay it later by the account's clock: a shorter default
// expires the same items at the same instants everywhere, and a longer
// one keeps alive everywhere what it keeps alive where it was answered.
func TestAccountContainerReplaceSameInstant(t *testing.T) {
	clock, a, cs := replaceAccount(t)
	east := cs["East US"]
	coll := func(id string, ttl int) map[string]any {
		return map[string]any{"id": id, "defaultTtl": ttl, "partitionKey": map[string]any{"paths": []string{"/pk"}}}
	}
	must(t, east.do("POST", "/dbs/db/colls", coll("short", 100)), 201)
	must(t, east.do("POST", "/dbs/db/colls", coll("long", 10)), 201)
	for i := range 30 {
		for _, c := range []string{"short", "long"} {
			must(t, east.do("POST", "/dbs/db/colls/"+c+"/docs", fmt.Sprintf(`{"id":"%d","pk":"x"}`, i), pkHeader("x")...), 201)
		}
		clock.Advance(time.Second)
	}
	a.DeliverDue()
	// replace changes coll's default to ttl through East US on a clock
	// that moves a second at every reading meanwhile, and returns the
	// instant East US gave the change.
	replace := func(id string, ttl int) time.Time {
		clock.step.Store(int64(time.Second))
		r := must(t, east.do("PUT", "/dbs/db/colls/"+id, coll(id, ttl)), 200)
		clock.step.Store(0)
		return time.Unix(int64(r.json(t)["_ts"].(float64)), 0)
	}
	// Items written 0 s to 29 s before the change, at about 30 s: a
	// default of 10 s made 1000 s keeps those not expired at the change
	// alive for good, in the regions replaying it too, where some of them
	// have expired by the reading they take.
	at := replace("long", 1000)
	if !clock.Now().After(at.Add(time.Second)) {
		t.Fatalf("the regions took their readings at %v, no later than the change, at %v", clock.Now(), at)
	}
	// A default of 100 s made 10 s expires most at once, the others one a
	// second from then.
	replace("short", 10)
	clock.Advance(time.Minute)
	for _, c := range []string{"short", "long"} {
		want := regionExpiries(t, a, "East US", c)
		if n := len(want); n == 0 || (n == 30) != (c == "short") {
			t.Fatalf("East US: %d items of %s expired of 30: %v", n, c, want)
		}
		for _, name := range regionNames[1:] {
			if got := regionExpiries(t, a, name, c); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s expired %v; East US, where the change was answered, %v", c, name, got, want)
			}
		}
	}
}

// TestAccountContainerReplaceKeepsExpired: a defaultTtl raised, or
// removed, through one region leaves expired for good, in a region that
// replays the change later, what that region showed expired meanwhile
// (the seed rule): no item read of that region is answered between the
// change where it was answered and its replay there.
func TestAccountContainerReplaceKeepsExpired(t *testing.T) {
	for _, ttl := range []any{1000, nil} {
		t.Run(fmt.Sprint(ttl), func(t *testing.T) {
			clock, a, cs := replaceAccount(t)
			east, west := cs["East US"], cs["West US"]
			coll := func(ttl any) map[string]any {
				p := map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}
				if ttl != nil {
					p["defaultTtl"] = ttl
				}
				return p
			}
			must(t, east.do("POST", "/dbs/db/colls", coll(10)), 201)
			must(t, east.do("POST", accColl+"/docs", `{"id":"a","pk":"x"}`, pkHeader("x")...), 201)
			a.DeliverDue()
			read := func() int { return west.do("GET", accColl+"/docs/a", nil, pkHeader("x")...).status }
			clock.Advance(8 * time.Second) // 2 s left of the item's 10
			must(t, west.do("GET", accColl+"/docs/a", nil, pkHeader("x")...), 200)

			// West US replays the change 5 s after East US made it, by
			// when the item has expired there by the old default; a read
			// of West US sent meanwhile is answered, or waits.
			meanwhile := make(chan int, 1)
			cosmosrest.BeforeReplay(a, func(region string) {
				if region != "West US" {
					return
				}
				cosmosrest.BeforeReplay(a, func(string) {})
				clock.Advance(5 * time.Second)
				go func() { meanwhile <- read() }()
				if cosmosrest.ItemsAdmitted(a) {
					meanwhile <- <-meanwhile // answered now
				}
			})
			must(t, east.do("PUT", "/dbs/db/colls/c", coll(ttl)), 200)
			got, after := <-meanwhile, read()
			if got != after {
				t.Errorf("West US answered a read sent while it replayed the change %d, and one after %d", got, after)
			}
			if east := east.do("GET", accColl+"/docs/a", nil, pkHeader("x")...).status; east != after {
				t.Errorf("the item is %d in East US, where the change was answered, and %d in West US", east, after)
			}
		})
	}
}

// TestAccountOfferReplaceSameInstant: a container's throughput change is
// made in every region at the instant of the region that answered it, as
// a defaultTtl change is (TestAccountContainerReplaceSameInstant), though
// the others replay it later by the account's clock: every region has the
// new throughput, and the items that expire meanwhile expire at the same
// instants everywhere. (The instant itself only starts the new budget's
// refill, which no request shows.)
func TestAccountOfferReplaceSameInstant(t *testing.T) {
	clock, a, cs := replaceAccount(t)
	east := cs["East US"]
	coll := must(t, east.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "defaultTtl": 10, "partitionKey": map[string]any{"paths": []string{"/pk"}}},
		"x-ms-offer-throughput", "400"), 201).json(t)
	for i := range 30 {
		must(t, east.do("POST", accColl+"/docs", fmt.Sprintf(`{"id":"%d","pk":"x"}`, i), pkHeader("x")...), 201)
		clock.Advance(time.Second)
	}
	a.DeliverDue()
	o := offerOf(t, east, coll["_rid"].(string))
	clock.step.Store(int64(time.Second))
	must(t, replaceOffer(east, o, map[string]any{"offerThroughput": 500}), 200)
	clock.step.Store(0)
	clock.Advance(time.Minute)
	want := regionExpiries(t, a, "East US", "c")
	if len(want) != 30 {
		t.Fatalf("East US: %d items expired of 30: %v", len(want), want)
	}
	for _, name := range regionNames[1:] {
		if got := regionExpiries(t, a, name, "c"); !reflect.DeepEqual(got, want) {
			t.Errorf("%s expired %v; East US, where the change was answered, %v", name, got, want)
		}
		if m, _ := offerFigures(offerOf(t, cs[name], coll["_rid"].(string))); m != 500 {
			t.Errorf("%s: the offer is %v RU/s, want 500", name, m)
		}
	}
}
