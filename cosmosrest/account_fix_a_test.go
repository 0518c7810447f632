package cosmosrest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// crashAccount is an account of East US (writable) and West US on dir,
// opened by open; crash closes its regions' handlers without delivering
// what is on its way, as a crash loses it.
type crashAccount struct {
	t     *testing.T
	dir   string
	clock *lethe.ManualClock
	lag   time.Duration
}

func (c *crashAccount) open() *cosmosrest.Account {
	c.t.Helper()
	cfg := cosmosrest.AccountConfig{Regions: []cosmosrest.RegionConfig{{Name: "East US", Writable: true}, {Name: "West US"}},
		Lag: func(string, string) time.Duration { return c.lag }}
	cfg.Dir, cfg.Clock = c.dir, c.clock
	cfg.Reaper.Disabled = true
	a, err := cosmosrest.NewAccount(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	return a
}

func (c *crashAccount) client(a *cosmosrest.Account, region string) *client {
	cl := &client{t: c.t, srv: httptest.NewTLSServer(a.Region(region)), key: cosmosrest.EmulatorKey}
	c.t.Cleanup(cl.srv.Close)
	return cl
}

func (c *crashAccount) crash(a *cosmosrest.Account) {
	c.t.Helper()
	for _, name := range a.Regions() {
		if err := a.Region(name).Close(); err != nil {
			c.t.Fatal(err)
		}
	}
}

// failoverThenCrash writes v1 in East US, fails over to West US, which
// acknowledges v2, and crashes while v2 is on its way to East US.
func (c *crashAccount) failoverThenCrash() {
	c.t.Helper()
	a := c.open()
	east, west := c.client(a, "East US"), c.client(a, "West US")
	createDBColl(c.t, east)
	must(c.t, east.do("POST", accColl+"/docs", `{"id":"a","pk":"x","v":1}`, pkHeader("x")...), 201)
	if err := a.Failover("West US"); err != nil {
		c.t.Fatal(err)
	}
	must(c.t, west.do("PUT", accColl+"/docs/a", `{"id":"a","pk":"x","v":2}`, pkHeader("x")...), 200)
	c.crash(a)
}

// The write region a failover made is the write region again after a
// crash: the write it acknowledged is there, and its later writes reach
// every region.
func TestAccountFailoverSurvivesRestart(t *testing.T) {
	c := &crashAccount{t: t, dir: t.TempDir(), clock: lethe.NewManualClock(time.Unix(1_700_000_000, 0)), lag: time.Hour}
	c.failoverThenCrash()
	b := c.open()
	defer b.Close()
	if w := b.WriteRegion(); w != "West US" {
		t.Fatalf("the write region after the restart is %s, not West US (the failover's)", w)
	}
	c.acknowledgedThenOn(b, "West US", "East US")
}

// acknowledgedThenOn checks, after failoverThenCrash and a restart as b,
// that the write region writer reads the v2 West US acknowledged before
// the crash, and that its next write, v3, reaches the region other.
func (c *crashAccount) acknowledgedThenOn(b *cosmosrest.Account, writer, other string) {
	t := c.t
	t.Helper()
	w, o := c.client(b, writer), c.client(b, other)
	if v := must(t, w.do("GET", accColl+"/docs/a", nil, pkHeader("x")...), 200).json(t)["v"]; v != 2.0 {
		t.Errorf("%s, the write region, reads v %v after the restart: the write West US acknowledged is lost", writer, v)
	}
	must(t, w.do("PUT", accColl+"/docs/a", `{"id":"a","pk":"x","v":3}`, pkHeader("x")...), 200)
	c.clock.Advance(2 * time.Hour)
	b.DeliverDue()
	if v := must(t, o.do("GET", accColl+"/docs/a", nil, append(pkHeader("x"), "x-ms-consistency-level", "Eventual")...), 200).json(t)["v"]; v != 3.0 {
		t.Errorf("%s holds v %v once %s's v3 is delivered: the regions diverge", other, v, writer)
	}
}

// Without the saved write region (a Dir from before it was kept), the
// configuration's write region starts, and receives at start what the
// region that was the write region acknowledged: no acknowledged write is
// lost, and its later writes win in every region.
func TestAccountRestartReplaysEveryRegion(t *testing.T) {
	c := &crashAccount{t: t, dir: t.TempDir(), clock: lethe.NewManualClock(time.Unix(1_700_000_000, 0)), lag: time.Hour}
	c.failoverThenCrash()
	if err := os.Remove(filepath.Join(c.dir, "account.json")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	b := c.open()
	defer b.Close()
	if w := b.WriteRegion(); w != "East US" {
		t.Fatalf("the write region is %s, not the configuration's East US", w)
	}
	c.acknowledgedThenOn(b, "East US", "West US")
}

// A session token read before a restart is honoured after it, by every
// region, and the tokens go on from it: the offset a failover gave the
// write region's tokens is kept. (East US numbers an expiry in its feed
// that West US, skipping it, does not before it restarts: the failover
// gives West US's tokens offset 1. The start replays East US's feed into
// West US, which numbers the expiry then, after b: without the offset it
// would take the number West US gave b, and East US, holding it, would
// answer b's token.)
func TestAccountTokensSurviveRestart(t *testing.T) {
	c := &crashAccount{t: t, dir: t.TempDir(), clock: lethe.NewManualClock(time.Unix(1_700_000_000, 0)), lag: 5 * time.Second}
	a := c.open()
	east, west := c.client(a, "East US"), c.client(a, "West US")
	createDB(t, east, "db")
	must(t, east.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "defaultTtl": -1, "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	must(t, east.do("POST", accColl+"/docs", `{"id":"short","pk":"x","ttl":1}`, pkHeader("x")...), 201)
	c.clock.Advance(2 * time.Second)
	east.do("GET", accColl+"/docs", nil, "A-IM", "Full-Fidelity Feed", "If-None-Match", "*")
	c.clock.Advance(10 * time.Second)
	a.DeliverDue()
	if err := a.Failover("West US"); err != nil {
		t.Fatal(err)
	}
	tok := must(t, west.do("POST", accColl+"/docs", `{"id":"b","pk":"x"}`, pkHeader("x")...), 201).header.Get("x-ms-session-token")
	c.clock.Advance(10 * time.Second)
	a.DeliverDue()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := c.open()
	defer b.Close()
	east = c.client(b, "East US")
	r := east.do("GET", accColl+"/docs/b", nil, append(pkHeader("x"), "x-ms-session-token", tok)...)
	if r.status != 200 {
		t.Errorf("East US answers %d/%s after the restart to the session token %s West US gave before it", r.status, r.header.Get("x-ms-substatus"), tok)
	}
	if got := r.header.Get("x-ms-session-token"); !tokenAbove(got, tok) {
		t.Errorf("East US's token after the restart is %s, not above %s before it, though it holds West US's changes since", got, tok)
	}
}

// A container deleted and made again under the same name keeps its
// resource id, so an SDK keeps the old container's session token for it:
// the new container's tokens start above every token of the old one, and
// a read region that holds the new container's writes serves that token.
func TestAccountTokenFloorAfterRecreate(t *testing.T) {
	for _, dir := range []bool{false, true} {
		cfg := cosmosrest.AccountConfig{}
		cfg.Clock = lethe.NewManualClock(time.Unix(1_700_000_000, 0))
		cfg.Reaper.Disabled = true
		if dir {
			cfg.Dir = t.TempDir()
		}
		_, cs := testAccount(t, cfg)
		east, west := cs["East US"], cs["West US"]
		createDBColl(t, east)
		var old string
		for i := range 20 {
			old = must(t, east.do("POST", accColl+"/docs", fmt.Sprintf(`{"id":"%d","pk":"x"}`, i), pkHeader("x")...), 201).header.Get("x-ms-session-token")
		}
		must(t, east.do("DELETE", accColl, nil), 204)
		must(t, east.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
		tok := must(t, east.do("POST", accColl+"/docs", `{"id":"new","pk":"x"}`, pkHeader("x")...), 201).header.Get("x-ms-session-token")
		if !tokenAbove(tok, old) {
			t.Errorf("dir %v: the new container's first write has token %s, not above the old one's last %s", dir, tok, old)
		}
		// The SDK merges tokens by range, keeping the higher LSN: it sends old's.
		if r := west.do("GET", accColl+"/docs/new", nil, append(pkHeader("x"), "x-ms-session-token", old)...); r.status != 200 {
			t.Errorf("dir %v: West US, holding every write of the new container, answers %d/%s to the old container's token", dir, r.status, r.header.Get("x-ms-substatus"))
		}
	}
}

// With Dir, the floor of a container made again is kept across a restart.
func TestAccountTokenFloorSurvivesRestart(t *testing.T) {
	c := &crashAccount{t: t, dir: t.TempDir(), clock: lethe.NewManualClock(time.Unix(1_700_000_000, 0))}
	a := c.open()
	east := c.client(a, "East US")
	createDBColl(t, east)
	var old string
	for i := range 20 {
		old = must(t, east.do("POST", accColl+"/docs", fmt.Sprintf(`{"id":"%d","pk":"x"}`, i), pkHeader("x")...), 201).header.Get("x-ms-session-token")
	}
	must(t, east.do("DELETE", accColl, nil), 204)
	must(t, east.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := c.open()
	defer b.Close()
	east = c.client(b, "East US")
	if tok := must(t, east.do("POST", accColl+"/docs", `{"id":"new","pk":"x"}`, pkHeader("x")...), 201).header.Get("x-ms-session-token"); !tokenAbove(tok, old) {
		t.Errorf("after the restart, the new container's first write has token %s, not above the old one's last %s", tok, old)
	}
}

// An account replicates through each container's change feed: one
// without (Config.NoChangeFeed) is refused, and opens nothing.
func TestAccountNoChangeFeedRefused(t *testing.T) {
	cfg := cosmosrest.AccountConfig{Regions: []cosmosrest.RegionConfig{{Name: "East US", Writable: true}, {Name: "West US"}}}
	cfg.NoChangeFeed = true
	cfg.Dir = t.TempDir()
	a, err := cosmosrest.NewAccount(cfg)
	if err == nil {
		a.Close()
		t.Fatal("NewAccount accepted an account of regions without change feeds")
	}
	if !strings.Contains(err.Error(), "NoChangeFeed") {
		t.Errorf("error %q does not name NoChangeFeed", err)
	}
	if entries, _ := os.ReadDir(cfg.Dir); len(entries) != 0 {
		t.Errorf("the refused account left %d entries in its Dir", len(entries))
	}
}

// A staleness interval above the service's largest (a day) is refused: a
// larger one would overflow the bound's duration, turning it off.
func TestAccountStalenessIntervalBound(t *testing.T) {
	for _, tc := range []struct {
		interval int
		ok       bool
	}{{86400, true}, {86401, false}, {9_223_372_037, false}} {
		cfg := cosmosrest.AccountConfig{Regions: []cosmosrest.RegionConfig{{Name: "East US", Writable: true}, {Name: "West US"}},
			Consistency: cosmosrest.BoundedStaleness, MaxIntervalInSeconds: tc.interval}
		a, err := cosmosrest.NewAccount(cfg)
		if err == nil {
			a.Close()
		}
		if (err == nil) != tc.ok {
			t.Errorf("interval %d s: %v, want accepted %v", tc.interval, err, tc.ok)
		}
	}
}

// A request held by a region down in RegionTimeout keeps its connection
// active, so http.Server.Shutdown (cmd/lethe's graceful stop) would wait
// for it until its deadline: ReleaseHeld answers it 503 first.
func TestAccountReleaseHeld(t *testing.T) {
	cfg := cosmosrest.AccountConfig{}
	cfg.Reaper.Disabled = true
	a, cs := testAccount(t, cfg)
	createDBColl(t, cs["East US"])
	if err := a.TakeRegionDown("West US", cosmosrest.RegionTimeout); err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{}, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		a.Region("West US").ServeHTTP(w, r)
	}))
	defer srv.Close()
	west := &client{t: t, srv: srv, key: cosmosrest.EmulatorKey}
	held := make(chan int)
	go func() { held <- west.do("GET", accColl+"/docs/a", nil, pkHeader("x")...).status }()
	<-entered
	a.ReleaseHeld()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Config.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown of a region whose held requests were released: %v", err)
		_ = a.BringRegionUp("West US") // serves the held request
	}
	if st := <-held; st != http.StatusServiceUnavailable {
		t.Errorf("the held request was answered %d, want 503", st)
	}
	if d := a.RegionDown("West US"); d != cosmosrest.RegionUnavailable {
		t.Errorf("the region released is down %q, want %q", d, cosmosrest.RegionUnavailable)
	}
}

// A region failing a split the first region made is named by the error,
// and the regions after it split still.
func TestAccountSplitLaterRegionFails(t *testing.T) {
	cfg := cosmosrest.AccountConfig{}
	cfg.Reaper.Disabled = true
	a, cs := testAccount(t, cfg)
	createDBColl(t, cs["East US"])
	if _, err := a.SplitPartitionKeyRange("db", "nowhere", "0"); !errors.Is(err, lethe.ErrNotFound) || strings.Contains(err.Error(), "region") {
		t.Errorf("a split of no container: %v, want the first region's not found", err)
	}
	if err := a.Region("West US").Close(); err != nil {
		t.Fatal(err)
	}
	children, err := a.SplitPartitionKeyRange("db", "c", "0")
	if !errors.Is(err, lethe.ErrClosed) || !strings.Contains(err.Error(), `"West US"`) {
		t.Fatalf("a split West US, closed, fails: %v, want an error naming West US", err)
	}
	if len(children) != 2 {
		t.Errorf("children %v", children)
	}
	if _, err := a.Region("North Europe").SplitPartitionKeyRange("db", "c", "0"); err == nil {
		t.Error("North Europe, after West US, did not split range 0")
	}
}

// Close waits for an account-wide change under way: containers created
// while the account closes are, after it, in every region or in none.
// They are created through West US, so that the region Close closes
// first, East US, is one the change is replayed in after West US made it:
// a Close that did not wait would close it under the change.
func TestAccountCloseWaitsForMetadata(t *testing.T) {
	dir := t.TempDir()
	open := func() (*cosmosrest.Account, map[string]*client) {
		cfg := cosmosrest.AccountConfig{}
		cfg.Dir = dir
		cfg.Reaper.Disabled = true
		return testAccount(t, cfg)
	}
	a, cs := open()
	createDB(t, cs["East US"], "db")
	west := cs["West US"]
	created := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			r := west.do("POST", "/dbs/db/colls", map[string]any{"id": fmt.Sprintf("c%d", i), "partitionKey": map[string]any{"paths": []string{"/pk"}}})
			if r.status != 201 {
				return
			}
			if i == 0 {
				close(created)
			}
		}
	}()
	<-created
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	<-stopped
	_, cs = open()
	ids := func(c *client) map[string]bool {
		var list struct {
			DocumentCollections []struct {
				ID string `json:"id"`
			}
		}
		if err := json.Unmarshal(must(t, c.do("GET", "/dbs/db/colls", nil), 200).body, &list); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, c := range list.DocumentCollections {
			out[c.ID] = true
		}
		return out
	}
	want := ids(cs["East US"])
	for name, c := range cs {
		if got := ids(c); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s has the containers %v after the restart; East US %v", name, got, want)
		}
	}
}

// TestAccountTokenFloorKeptByLaterDeletes: a floor kept for a deleted
// container that is not made again yet survives the delete of another
// container (each delete rewrote account.json with the floors of the
// containers deleted then only) and a restart: the container made again
// numbers its tokens above the deleted one's.
func TestAccountTokenFloorKeptByLaterDeletes(t *testing.T) {
	t.Parallel()
	c := &crashAccount{t: t, dir: t.TempDir(), clock: lethe.NewManualClock(time.Unix(1_700_000_000, 0))}
	a := c.open()
	east := c.client(a, "East US")
	createDBColl(t, east)
	must(t, east.do("POST", "/dbs/db/colls", map[string]any{"id": "other", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	var old string
	for i := range 20 {
		old = must(t, east.do("POST", accColl+"/docs", fmt.Sprintf(`{"id":"%d","pk":"x"}`, i), pkHeader("x")...), 201).header.Get("x-ms-session-token")
	}
	must(t, east.do("DELETE", accColl, nil), 204)
	must(t, east.do("DELETE", "/dbs/db/colls/other", nil), 204)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := c.open()
	defer b.Close()
	east = c.client(b, "East US")
	must(t, east.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	if tok := must(t, east.do("POST", accColl+"/docs", `{"id":"new","pk":"x"}`, pkHeader("x")...), 201).header.Get("x-ms-session-token"); !tokenAbove(tok, old) {
		t.Errorf("token %s is not above the deleted container's %s", tok, old)
	}
}
