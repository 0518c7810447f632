package cosmosrest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// regionNames are the regions of the accounts of these tests; the first
// is the write region.
var regionNames = []string{"East US", "West US", "North Europe"}

// testAccount serves an account of regionNames (the first writable) over
// TLS, one server per region, and returns it with a client per region,
// stopped and closed when t ends.
func testAccount(t *testing.T, cfg cosmosrest.AccountConfig) (*cosmosrest.Account, map[string]*client) {
	t.Helper()
	a, clients, stop := serveAccount(t, cfg, 1)
	t.Cleanup(stop)
	return a, clients
}

// serveAccount serves an account of regionNames, the first writable of
// them writable, over TLS, one server per region, and returns it, a
// client per region, and what stops and closes it.
func serveAccount(t *testing.T, cfg cosmosrest.AccountConfig, writable int) (*cosmosrest.Account, map[string]*client, func()) {
	t.Helper()
	srvs := map[string]*httptest.Server{}
	for i, name := range regionNames {
		srv := httptest.NewUnstartedServer(nil)
		srvs[name] = srv
		cfg.Regions = append(cfg.Regions, cosmosrest.RegionConfig{Name: name, Writable: i < writable, Endpoint: "https://" + srv.Listener.Addr().String() + "/"})
	}
	a, err := cosmosrest.NewAccount(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clients := map[string]*client{}
	for name, srv := range srvs {
		srv.Config.Handler = a.Region(name)
		srv.StartTLS()
		clients[name] = &client{t: t, srv: srv, key: cosmosrest.EmulatorKey}
	}
	return a, clients, func() {
		for _, srv := range srvs {
			srv.Close()
		}
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	}
}

// serveUpsert serves one request to h signed with the emulator's key, as
// an upsert into the partition "x" when it is a document's, and returns
// its status: the benchmarks' client.
func serveUpsert(h http.Handler, method, path, body string) int {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	date := time.Now().UTC().Format(http.TimeFormat)
	typ, link := resource(path)
	auth, _ := cosmosrest.SignRequest(cosmosrest.EmulatorKey, method, typ, link, date)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", auth)
	req.Header.Set("x-ms-documentdb-partitionkey", `["x"]`)
	req.Header.Set("x-ms-documentdb-is-upsert", "true")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code
}

const accColl = "/dbs/db/colls/c"

func pkHeader(v string) []string { return []string{"x-ms-documentdb-partitionkey", `["` + v + `"]`} }

// lagged returns an account on a manual clock whose changes reach every
// read region lag after they are written, with a container db/c on /pk.
func lagged(t *testing.T, lag time.Duration, level string) (*cosmosrest.Account, *lethe.ManualClock, map[string]*client) {
	t.Helper()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	cfg := cosmosrest.AccountConfig{Consistency: level, Lag: func(string, string) time.Duration { return lag }}
	cfg.Clock = clock
	cfg.Reaper.Disabled = true
	a, cs := testAccount(t, cfg)
	hub := cs[regionNames[0]]
	createDBColl(t, hub)
	return a, clock, cs
}

func TestAccountResource(t *testing.T) {
	a, cs := testAccount(t, cosmosrest.AccountConfig{Consistency: "boundedstaleness", MaxStalenessPrefix: 7, MaxIntervalInSeconds: 9})
	for _, name := range regionNames {
		m := must(t, cs[name].do("GET", "/", nil), 200).json(t)
		endpoint := func(n string) string { return cs[n].srv.URL + "/" }
		want := fmt.Sprintf("[map[databaseAccountEndpoint:%s name:East US]]", endpoint("East US"))
		if got := fmt.Sprint(m["writableLocations"]); got != want {
			t.Errorf("%s: writableLocations %s, want %s", name, got, want)
		}
		want = fmt.Sprintf("[map[databaseAccountEndpoint:%s name:East US] map[databaseAccountEndpoint:%s name:West US] map[databaseAccountEndpoint:%s name:North Europe]]",
			endpoint("East US"), endpoint("West US"), endpoint("North Europe"))
		if got := fmt.Sprint(m["readableLocations"]); got != want {
			t.Errorf("%s: readableLocations %s, want %s", name, got, want)
		}
		if got := fmt.Sprint(m["userConsistencyPolicy"]); got != "map[defaultConsistencyLevel:BoundedStaleness maxIntervalInSeconds:9 maxStalenessPrefix:7]" {
			t.Errorf("%s: userConsistencyPolicy %s", name, got)
		}
		if m["enableMultipleWriteLocations"] != false {
			t.Errorf("%s: enableMultipleWriteLocations %v", name, m["enableMultipleWriteLocations"])
		}
	}
	if a.Consistency() != cosmosrest.BoundedStaleness || a.WriteRegion() != "East US" {
		t.Errorf("Consistency %q, WriteRegion %q", a.Consistency(), a.WriteRegion())
	}
}

// TestAccountPortEndpoint: an endpoint ":port" is the request's host with
// that port, localhost answered with the loopback address.
func TestAccountPortEndpoint(t *testing.T) {
	a, err := cosmosrest.NewAccount(cosmosrest.AccountConfig{Regions: []cosmosrest.RegionConfig{
		{Name: "A", Writable: true, Endpoint: ":8081"}, {Name: "B", Endpoint: ":8082"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	req := httptest.NewRequest("GET", "http://localhost:8082/", nil)
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, _ := cosmosrest.SignRequest(cosmosrest.EmulatorKey, "GET", "", "", date)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", auth)
	w := httptest.NewRecorder()
	a.Region("B").ServeHTTP(w, req)
	m := response{w.Code, w.Header(), w.Body.Bytes()}.json(t)
	if got := fmt.Sprint(m["readableLocations"]); got != "[map[databaseAccountEndpoint:http://127.0.0.1:8081/ name:A] map[databaseAccountEndpoint:http://127.0.0.1:8082/ name:B]]" {
		t.Errorf("readableLocations %s", got)
	}
	if got := fmt.Sprint(m["userConsistencyPolicy"]); !strings.Contains(got, "defaultConsistencyLevel:Session") {
		t.Errorf("several regions default to Session: %s", got)
	}
}

func TestAccountConfigRefused(t *testing.T) {
	two := func(w1, w2 bool) []cosmosrest.RegionConfig {
		return []cosmosrest.RegionConfig{{Name: "A", Writable: w1}, {Name: "B", Writable: w2}}
	}
	for _, tc := range []struct {
		name string
		cfg  cosmosrest.AccountConfig
		want string
	}{
		{"no region", cosmosrest.AccountConfig{}, "at least one region"},
		{"no write region", cosmosrest.AccountConfig{Regions: two(false, false)}, "exactly one write region"},
		{"two write regions", cosmosrest.AccountConfig{Regions: two(true, true)}, "exactly one write region"},
		{"multi-write and Strong", cosmosrest.AccountConfig{Regions: two(true, true), MultipleWriteLocations: true, Consistency: "Strong"}, "not offered"},
		{"multi-write and no writable region", cosmosrest.AccountConfig{Regions: two(false, false), MultipleWriteLocations: true}, "at least one writable"},
		{"one name twice", cosmosrest.AccountConfig{Regions: []cosmosrest.RegionConfig{{Name: "East US", Writable: true}, {Name: "east-us"}}}, "one name"},
		{"a name of no letter", cosmosrest.AccountConfig{Regions: []cosmosrest.RegionConfig{{Name: " ", Writable: true}}}, "no letter"},
		{"unknown level", cosmosrest.AccountConfig{Regions: two(true, false), Consistency: "Linearizable"}, "not a consistency level"},
		{"negative bound", cosmosrest.AccountConfig{Regions: two(true, false), MaxStalenessPrefix: -1}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := cosmosrest.NewAccount(tc.cfg)
			if err == nil {
				a.Close()
				t.Fatal("NewAccount accepted it")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestRegionSlug(t *testing.T) {
	for in, want := range map[string]string{"East US": "east-us", "  North--Europe 2 ": "north-europe-2", "westus": "westus", "Süd": "s-d"} {
		if got := cosmosrest.RegionSlug(in); got != want {
			t.Errorf("RegionSlug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAccountMetadataEveryRegion: a database and container made through a
// read region are in every region at once, items are not.
func TestAccountMetadataEveryRegion(t *testing.T) {
	a, cs := testAccount(t, cosmosrest.AccountConfig{Lag: func(string, string) time.Duration { return time.Hour }})
	createDBColl(t, cs["West US"])
	for _, name := range regionNames {
		must(t, cs[name].do("GET", accColl, nil), 200)
	}
	must(t, cs["North Europe"].do("DELETE", accColl, nil), 204)
	for _, name := range regionNames {
		must(t, cs[name].do("GET", accColl, nil), 404)
	}
	// A container made again of the same name starts afresh: the changes
	// of the one deleted, still on their way, never reach it.
	createDBColl2 := func() {
		must(t, cs["East US"].do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	}
	createDBColl2()
	must(t, cs["East US"].do("POST", accColl+"/docs", `{"id":"old","pk":"x"}`, pkHeader("x")...), 201)
	must(t, cs["East US"].do("DELETE", accColl, nil), 204)
	createDBColl2()
	if st := a.Status(); st[1].Pending != 0 {
		t.Fatalf("changes of a deleted container still on their way: %+v", st)
	}
	// A split, over HTTP or in process, is made in every region.
	must(t, split(cs["West US"], "db", "c", "0"), 200)
	if _, err := a.SplitPartitionKeyRange("db", "c", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SplitPartitionKeyRange("db", "c", "9"); !errors.Is(err, lethe.ErrNotFound) {
		t.Errorf("splitting a range there is not: %v", err)
	}
	var ranges []string
	for _, name := range regionNames {
		ranges = append(ranges, string(documents(t, must(t, cs[name].do("GET", accColl+"/pkranges", nil), 200), "PartitionKeyRanges")[0]))
	}
	if ranges[0] != ranges[1] || ranges[1] != ranges[2] || !strings.Contains(ranges[0], `"parents":["0","1"]`) {
		t.Errorf("the regions' first ranges after the splits: %v", ranges)
	}
	// A permission made in one region gives a resource token every region
	// takes.
	must(t, cs["East US"].do("POST", "/dbs/db/users", map[string]any{"id": "ada"}), 201)
	p := must(t, cs["East US"].do("POST", "/dbs/db/users/ada/permissions", map[string]any{"id": "read-c", "permissionMode": "Read", "resource": "dbs/db/colls/c"}), 201).json(t)
	for _, name := range regionNames {
		must(t, cs[name].do("GET", accColl, nil, "Authorization", url.QueryEscape(p["_token"].(string))), 200)
	}
	// A refusal is made nowhere else.
	must(t, cs["West US"].do("POST", "/dbs", map[string]any{"id": "db"}), 409)
}

func TestAccountWriteForbidden(t *testing.T) {
	_, _, cs := lagged(t, 0, "")
	for _, name := range regionNames[1:] {
		r := cs[name].do("POST", accColl+"/docs", `{"id":"a","pk":"x"}`, pkHeader("x")...)
		if r.status != 403 || r.header.Get("x-ms-substatus") != "3" {
			t.Fatalf("%s: a write answered %d/%s, want 403/3: %s", name, r.status, r.header.Get("x-ms-substatus"), r.body)
		}
	}
	for _, name := range regionNames {
		must(t, cs[name].do("GET", accColl+"/docs/a", nil, pkHeader("x")...), 404)
	}
}

// TestAccountReplicationLag: a write reaches a read region after its lag,
// by the account's clock, with the write region's _ts and ETag.
func TestAccountReplicationLag(t *testing.T) {
	_, clock, cs := lagged(t, 10*time.Second, cosmosrest.Eventual)
	hub, west := cs["East US"], cs["West US"]
	w := must(t, hub.do("POST", accColl+"/docs", `{"id":"a","pk":"x"}`, pkHeader("x")...), 201)
	clock.Advance(9 * time.Second)
	must(t, west.do("GET", accColl+"/docs/a", nil, pkHeader("x")...), 404)
	clock.Advance(time.Second)
	r := must(t, west.do("GET", accColl+"/docs/a", nil, pkHeader("x")...), 200)
	if r.header.Get("etag") != w.header.Get("etag") || r.json(t)["_ts"] != w.json(t)["_ts"] {
		t.Fatalf("the replica's version: etag %s _ts %v, the write region's %s %v", r.header.Get("etag"), r.json(t)["_ts"], w.header.Get("etag"), w.json(t)["_ts"])
	}
	// A delete follows in order.
	must(t, hub.do("DELETE", accColl+"/docs/a", nil, pkHeader("x")...), 204)
	must(t, west.do("GET", accColl+"/docs/a", nil, pkHeader("x")...), 200)
	clock.Advance(10 * time.Second)
	must(t, west.do("GET", accColl+"/docs/a", nil, pkHeader("x")...), 404)
}

// TestAccountDeliverDue: under an injected clock, DeliverDue delivers what
// became due without a request.
func TestAccountDeliverDue(t *testing.T) {
	a, clock, cs := lagged(t, time.Second, cosmosrest.Eventual)
	must(t, cs["East US"].do("POST", accColl+"/docs", `{"id":"a","pk":"x"}`, pkHeader("x")...), 201)
	clock.Advance(time.Second)
	if st := a.Status(); st[1].Pending != 1 || st[1].LagMS != 1000 {
		t.Fatalf("before DeliverDue: %+v", st)
	}
	a.DeliverDue()
	if st := a.Status(); st[1].Pending != 0 || st[2].Pending != 0 || !st[0].Write {
		t.Fatalf("after DeliverDue: %+v", st)
	}
}

// TestAccountRealClock: on the system clock, the account delivers by
// itself.
func TestAccountRealClock(t *testing.T) {
	a, cs := testAccount(t, cosmosrest.AccountConfig{Lag: func(string, string) time.Duration { return time.Millisecond }})
	createDBColl(t, cs["East US"])
	must(t, cs["East US"].do("POST", accColl+"/docs", `{"id":"a","pk":"x"}`, pkHeader("x")...), 201)
	deadline := time.Now().Add(10 * time.Second)
	for a.Status()[1].Pending+a.Status()[2].Pending > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: %+v", a.Status())
		}
		time.Sleep(time.Millisecond) // waiting for the loop, not for correctness
	}
	s, ok := a.Region("North Europe").Store("db")
	if !ok {
		t.Fatal("North Europe has no database db")
	}
	c, err := s.Container("c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadItem(context.Background(), lethe.NewPartitionKey().AppendString("x"), "a", nil); err != nil {
		t.Fatal(err)
	}
}

// TestAccountSession: a read region behind the client's session token
// answers 404 substatus 1002 until it has caught up; tokens compare
// across regions.
func TestAccountSession(t *testing.T) {
	_, clock, cs := lagged(t, 5*time.Second, cosmosrest.Session)
	hub, west := cs["East US"], cs["West US"]
	w := must(t, hub.do("POST", accColl+"/docs", `{"id":"a","pk":"x"}`, pkHeader("x")...), 201)
	tok := w.header.Get("x-ms-session-token")
	for _, path := range []string{accColl + "/docs/a", accColl + "/docs"} {
		r := west.do("GET", path, nil, append(pkHeader("x"), "x-ms-session-token", tok)...)
		if r.status != 404 || r.header.Get("x-ms-substatus") != "1002" {
			t.Fatalf("GET %s behind the token %s: %d/%s %s", path, tok, r.status, r.header.Get("x-ms-substatus"), r.body)
		}
	}
	// Without the token, or weakened to Eventual, it answers what it has.
	must(t, west.do("GET", accColl+"/docs/a", nil, pkHeader("x")...), 404)
	must(t, west.do("GET", accColl+"/docs/a", nil, append(pkHeader("x"), "x-ms-session-token", tok, "x-ms-consistency-level", "Eventual")...), 404)
	// The write region always holds its own tokens.
	must(t, hub.do("GET", accColl+"/docs/a", nil, append(pkHeader("x"), "x-ms-session-token", tok)...), 200)
	clock.Advance(5 * time.Second)
	r := must(t, west.do("GET", accColl+"/docs/a", nil, append(pkHeader("x"), "x-ms-session-token", tok)...), 200)
	if got := r.header.Get("x-ms-session-token"); got != tok {
		t.Errorf("the caught-up region's token %s, the write's %s", got, tok)
	}
	// A token of several ranges, in the multi-region form, is read too.
	must(t, hub.do("POST", accColl+"/docs", `{"id":"b","pk":"x"}`, pkHeader("x")...), 201)
	r = west.do("GET", accColl+"/docs/a", nil, append(pkHeader("x"), "x-ms-session-token", "0:-1#1#0=1,1:-1#99#0=99")...)
	if r.status != 404 || r.header.Get("x-ms-substatus") != "1002" {
		t.Fatalf("a token of two ranges: %d/%s", r.status, r.header.Get("x-ms-substatus"))
	}
}

func TestAccountConsistencyHeader(t *testing.T) {
	_, _, cs := lagged(t, 0, cosmosrest.Session)
	for _, tc := range []struct {
		level  string
		status int
	}{{"Strong", 400}, {"BoundedStaleness", 400}, {"Session", 404}, {"consistentprefix", 404}, {"Eventual", 404}, {"Linear", 400}} {
		r := cs["West US"].do("GET", accColl+"/docs/a", nil, append(pkHeader("x"), "x-ms-consistency-level", tc.level)...)
		if r.status != tc.status {
			t.Errorf("x-ms-consistency-level %s: %d, want %d: %s", tc.level, r.status, tc.status, r.body)
		}
	}
	// Only item requests read at a level: the account and its metadata are
	// served whatever the header says.
	for _, path := range []string{"/", accColl} {
		must(t, cs["West US"].do("GET", path, nil, "x-ms-consistency-level", "Strong"), 200)
	}
}

// TestAccountStrong: under Strong a write is in every region when it is
// answered, whatever the lag; a region that was down catches up before it
// answers a read.
func TestAccountStrong(t *testing.T) {
	a, _, cs := lagged(t, time.Hour, cosmosrest.Strong)
	must(t, cs["East US"].do("POST", accColl+"/docs", `{"id":"a","pk":"x"}`, pkHeader("x")...), 201)
	if st := a.Status(); st[1].Pending+st[2].Pending != 0 {
		t.Fatalf("a Strong write answered before every region has it: %+v", st)
	}
	for _, name := range regionNames {
		must(t, cs[name].do("GET", accColl+"/docs/a", nil, pkHeader("x")...), 200)
	}
	if err := a.TakeRegionDown("West US", cosmosrest.RegionUnavailable); err != nil {
		t.Fatal(err)
	}
	must(t, cs["East US"].do("PUT", accColl+"/docs/a", `{"id":"a","pk":"x","v":2}`, pkHeader("x")...), 200)
	if err := a.BringRegionUp("West US"); err != nil {
		t.Fatal(err)
	}
	if v := must(t, cs["West US"].do("GET", accColl+"/docs/a", nil, pkHeader("x")...), 200).json(t)["v"]; v != 2.0 {
		t.Fatalf("West US after coming up: v %v", v)
	}
}

// TestAccountBoundedStaleness: a read region lags at most
// MaxStalenessPrefix changes, and at most MaxIntervalInSeconds.
func TestAccountBoundedStaleness(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	cfg := cosmosrest.AccountConfig{Consistency: cosmosrest.BoundedStaleness, MaxStalenessPrefix: 2, MaxIntervalInSeconds: 3,
		Lag: func(string, string) time.Duration { return time.Hour }}
	cfg.Clock = clock
	_, cs := testAccount(t, cfg)
	createDBColl(t, cs["East US"])
	for i := range 5 {
		must(t, cs["East US"].do("POST", accColl+"/docs", fmt.Sprintf(`{"id":"%d","pk":"x"}`, i), pkHeader("x")...), 201)
	}
	count := func() int {
		docs := documents(t, must(t, cs["West US"].do("GET", accColl+"/docs", nil), 200), "Documents")
		return len(docs)
	}
	if n := count(); n != 3 {
		t.Fatalf("West US holds %d of 5 items, want 3 (2 behind at most)", n)
	}
	clock.Advance(3 * time.Second)
	if n := count(); n != 5 {
		t.Fatalf("West US holds %d of 5 items 3 s later, want all", n)
	}
}

// TestAccountFailover: a manual failover loses no acknowledged write,
// moves the write region (the account resource and 403/3 follow), keeps
// session tokens and ETags valid, and the new write region's writes reach
// the old one.
func TestAccountFailover(t *testing.T) {
	a, clock, cs := lagged(t, 10*time.Second, cosmosrest.Session)
	east, west := cs["East US"], cs["West US"]
	var tok, etag string
	for i := range 3 {
		w := must(t, east.do("POST", accColl+"/docs", fmt.Sprintf(`{"id":"%d","pk":"x"}`, i), pkHeader("x")...), 201)
		tok, etag = w.header.Get("x-ms-session-token"), w.header.Get("etag")
	}
	if err := a.Failover("West US"); err != nil {
		t.Fatal(err)
	}
	if a.WriteRegion() != "West US" {
		t.Fatalf("WriteRegion %q", a.WriteRegion())
	}
	m := must(t, east.do("GET", "/", nil), 200).json(t)
	if got := fmt.Sprint(m["writableLocations"]); !strings.Contains(got, "name:West US") {
		t.Fatalf("writableLocations after the failover: %s", got)
	}
	// Nothing acknowledged is lost, and the client's token holds in the new
	// write region.
	for i := range 3 {
		must(t, west.do("GET", fmt.Sprintf(accColl+"/docs/%d", i), nil, append(pkHeader("x"), "x-ms-session-token", tok)...), 200)
	}
	r := east.do("POST", accColl+"/docs", `{"id":"z","pk":"x"}`, pkHeader("x")...)
	if r.status != 403 || r.header.Get("x-ms-substatus") != "3" {
		t.Fatalf("a write to the old write region: %d/%s", r.status, r.header.Get("x-ms-substatus"))
	}
	// An ETag read in the old write region matches in the new one, and the
	// new write's ETag and token are above the old ones.
	w := must(t, west.do("PUT", accColl+"/docs/2", `{"id":"2","pk":"x","v":2}`, append(pkHeader("x"), "If-Match", etag)...), 200)
	if w.header.Get("etag") <= etag {
		t.Errorf("the new write region's ETag %s is not above the old one's %s", w.header.Get("etag"), etag)
	}
	newTok := w.header.Get("x-ms-session-token")
	if !tokenAbove(newTok, tok) {
		t.Errorf("the new write region's token %s is not above the old one's %s", newTok, tok)
	}
	// The old write region receives the new one's writes after the lag,
	// and is behind the new token until then.
	r = east.do("GET", accColl+"/docs/2", nil, append(pkHeader("x"), "x-ms-session-token", newTok)...)
	if r.status != 404 || r.header.Get("x-ms-substatus") != "1002" {
		t.Fatalf("the old write region before the lag: %d/%s", r.status, r.header.Get("x-ms-substatus"))
	}
	clock.Advance(10 * time.Second)
	if v := must(t, east.do("GET", accColl+"/docs/2", nil, append(pkHeader("x"), "x-ms-session-token", newTok)...), 200).json(t)["v"]; v != 2.0 {
		t.Fatalf("the old write region after the lag: v %v", v)
	}
	if err := a.Failover("Nowhere"); !errors.Is(err, cosmosrest.ErrRegion) {
		t.Errorf("a failover to no region: %v", err)
	}
}

// tokenAbove reports whether session token a's LSN is above b's.
func tokenAbove(a, b string) bool {
	lsn := func(s string) int {
		var n int
		_, _ = fmt.Sscanf(s[strings.IndexByte(s, '#')+1:], "%d", &n)
		return n
	}
	return lsn(a) > lsn(b)
}

// TestAccountRegionDown: a region down fails its requests in the chosen
// way, the control endpoint excepted, and is served again once up.
func TestAccountRegionDown(t *testing.T) {
	a, _, cs := lagged(t, 0, "")
	west := cs["West US"]
	control := func(c *client, name, action, body string) response {
		return c.doAs("POST", "/_lethe/regions/"+strings.ReplaceAll(name, " ", "%20")+"/"+action, "regions", name, body)
	}
	must(t, control(west, "West US", "down", `{"mode":"unavailable"}`), 200)
	if r := west.do("GET", accColl, nil); r.status != 503 {
		t.Fatalf("a region down (unavailable): %d", r.status)
	}
	must(t, control(west, "West US", "up", ""), 200)
	must(t, west.do("GET", accColl, nil), 200)

	must(t, control(west, "West US", "down", `{"mode":"refuse"}`), 200)
	req, _ := http.NewRequest("GET", west.srv.URL+"/", nil)
	if resp, err := west.srv.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a region down (refuse) answered %d", resp.StatusCode)
	}
	if err := a.BringRegionUp("West US"); err != nil {
		t.Fatal(err)
	}

	if err := a.TakeRegionDown("West US", cosmosrest.RegionTimeout); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, "GET", west.srv.URL+"/", nil)
	if resp, err := west.srv.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a region down (timeout) answered %d", resp.StatusCode)
	}
	// A held request is served when the region comes up.
	done := make(chan response, 1)
	go func() { done <- west.do("GET", accColl, nil) }()
	_ = a.BringRegionUp("West US")
	must(t, <-done, 200)

	st := must(t, west.doAs("GET", "/_lethe/regions", "regions", "", nil), 200).json(t)
	if st["writeRegion"] != "East US" || len(st["regions"].([]any)) != 3 {
		t.Errorf("the regions' state: %v", st)
	}
	for _, tc := range []struct{ name, action, body, want string }{
		{"Nowhere", "down", "", "no region"},
		{"West US", "down", `{"mode":"sideways"}`, "not a way"},
		{"West US", "down", `{`, "not valid JSON"},
	} {
		if r := control(west, tc.name, tc.action, tc.body); r.status != 400 || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s %s %s: %d %s", tc.name, tc.action, tc.body, r.status, r.body)
		}
	}
	if r := control(west, "West US", "sideways", ""); r.status != 404 {
		t.Errorf("an unknown action: %d", r.status)
	}
	if err := a.TakeRegionDown("North Europe", cosmosrest.RegionUnavailable); err != nil {
		t.Fatal(err)
	}
	if err := a.Failover("North Europe"); !errors.Is(err, cosmosrest.ErrRegion) {
		t.Errorf("a failover to a region down: %v", err)
	}
}

// TestAccountTTLEverywhere: an item with a time to live expires at the
// same instant in every region, whatever the lag; a region receiving it
// after its expiry never shows it; each region's change feed reports the
// expiry at its instant.
func TestAccountTTLEverywhere(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	lags := map[string]time.Duration{"West US": 2 * time.Second, "North Europe": 10 * time.Second}
	cfg := cosmosrest.AccountConfig{Consistency: cosmosrest.Eventual, Lag: func(_, to string) time.Duration { return lags[to] }}
	cfg.Clock = clock
	cfg.Reaper.Disabled = true
	_, cs := testAccount(t, cfg)
	must(t, cs["East US"].do("POST", "/dbs", map[string]any{"id": "db"}), 201)
	must(t, cs["East US"].do("POST", "/dbs/db/colls", map[string]any{"id": "c", "defaultTtl": -1, "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	must(t, cs["East US"].do("POST", accColl+"/docs", `{"id":"a","pk":"x","ttl":5}`, pkHeader("x")...), 201)
	visible := func(name string) bool {
		r := cs[name].do("GET", accColl+"/docs/a", nil, pkHeader("x")...)
		return r.status == 200
	}
	for _, step := range []struct {
		at   time.Duration
		want map[string]bool
	}{
		{1 * time.Second, map[string]bool{"East US": true, "West US": false, "North Europe": false}},
		{4 * time.Second, map[string]bool{"East US": true, "West US": true, "North Europe": false}},
		{5 * time.Second, map[string]bool{"East US": false, "West US": false, "North Europe": false}},
		{11 * time.Second, map[string]bool{"East US": false, "West US": false, "North Europe": false}},
	} {
		clock.Set(time.Unix(1_700_000_000, 0).Add(step.at))
		for _, name := range regionNames {
			if got := visible(name); got != step.want[name] {
				t.Errorf("at %v, %s shows the item: %v, want %v", step.at, name, got, step.want[name])
			}
		}
	}
	for _, name := range regionNames {
		avad := readFeed(t, cs[name], accColl, "A-IM", "Full-Fidelity Feed", "x-ms-cosmos-changefeed-wire-format-version", "2021-09-15",
			"If-Modified-Since", time.Unix(1_600_000_000, 0).UTC().Format(http.TimeFormat))
		var expiry map[string]any
		for _, d := range avad.docs {
			if md := d["metadata"].(map[string]any); md["timeToLiveExpired"] == true {
				expiry = md
			}
		}
		if expiry == nil || expiry["crts"] != 1_700_000_005.0 {
			t.Errorf("%s's change feed reports the expiry %v: %v", name, expiry, avad.docs)
		}
	}
}

// TestAccountDir: with a Dir, each region keeps its databases in its own
// subdirectory, and an account reopened there finds its replicas as Close
// left them: consistent.
func TestAccountDir(t *testing.T) {
	dir := t.TempDir()
	regions := []cosmosrest.RegionConfig{{Name: "East US", Writable: true}, {Name: "West US"}}
	open := func() *cosmosrest.Account {
		cfg := cosmosrest.AccountConfig{Regions: regions, Lag: func(string, string) time.Duration { return time.Hour }}
		cfg.Dir = dir
		a, err := cosmosrest.NewAccount(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := open()
	east := &client{t: t, srv: httptest.NewTLSServer(a.Region("East US")), key: cosmosrest.EmulatorKey}
	createDBColl(t, east)
	must(t, east.do("POST", accColl+"/docs", `{"id":"a","pk":"x"}`, pkHeader("x")...), 201)
	east.srv.Close()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"east-us", "west-us"} {
		if _, err := os.Stat(filepath.Join(dir, sub)); err != nil {
			t.Errorf("the region's directory: %v", err)
		}
	}
	a = open()
	defer a.Close()
	west := &client{t: t, srv: httptest.NewTLSServer(a.Region("West US")), key: cosmosrest.EmulatorKey}
	defer west.srv.Close()
	must(t, west.do("GET", accColl+"/docs/a", nil, pkHeader("x")...), 200)
}

// BenchmarkAccountWrite compares an upsert through a one-region Handler
// with one through the write region of an account of two regions, zero
// lag (the change applied in the other region before the write is
// answered, under Strong; sent, and applied at the next request or by the
// delivery loop, under Session).
func BenchmarkAccountWrite(b *testing.B) {
	run := func(b *testing.B, h http.Handler) {
		serve := func(method, path, body string) int { return serveUpsert(h, method, path, body) }
		serve("POST", "/dbs", `{"id":"db"}`)
		serve("POST", "/dbs/db/colls", `{"id":"c","partitionKey":{"paths":["/pk"]}}`)
		b.ResetTimer()
		for i := range b.N {
			if code := serve("POST", accColl+"/docs", fmt.Sprintf(`{"id":"%d","pk":"x","v":%d}`, i%1000, i)); code != 200 && code != 201 {
				b.Fatalf("upsert: %d", code)
			}
		}
	}
	b.Run("one region", func(b *testing.B) {
		h, err := cosmosrest.New(cosmosrest.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		run(b, h)
	})
	for _, level := range []string{cosmosrest.Session, cosmosrest.Strong} {
		b.Run("two regions "+level, func(b *testing.B) {
			a, err := cosmosrest.NewAccount(cosmosrest.AccountConfig{Consistency: level,
				Regions: []cosmosrest.RegionConfig{{Name: "A", Writable: true}, {Name: "B"}}})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			run(b, a.Region("A"))
		})
	}
}

// BenchmarkAccountKeepUp writes from 16 clients at once into the write
// region of an account of two regions, zero lag, Session, on the system
// clock, and reports how many changes still waited for the read region
// when the writes ended, and how long it then took to have them all.
func BenchmarkAccountKeepUp(b *testing.B) {
	a, err := cosmosrest.NewAccount(cosmosrest.AccountConfig{Consistency: cosmosrest.Session,
		Regions: []cosmosrest.RegionConfig{{Name: "A", Writable: true}, {Name: "B"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	h := a.Region("A")
	serve := func(method, path, body string) int { return serveUpsert(h, method, path, body) }
	serve("POST", "/dbs", `{"id":"db"}`)
	serve("POST", "/dbs/db/colls", `{"id":"c","partitionKey":{"paths":["/pk"]}}`)
	var next atomic.Int64
	b.SetParallelism(8) // 16 clients on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			if code := serve("POST", accColl+"/docs", fmt.Sprintf(`{"id":"%d","pk":"x"}`, i%5000)); code != 200 && code != 201 {
				b.Errorf("upsert: %d", code)
				return
			}
		}
	})
	b.StopTimer()
	pending := a.Status()[1].Pending
	start := time.Now()
	for a.Status()[1].Pending > 0 {
		time.Sleep(100 * time.Microsecond) // measuring the drain, not for correctness
	}
	b.ReportMetric(float64(pending), "pending-at-end")
	b.ReportMetric(float64(time.Since(start).Microseconds()), "µs-to-drain")
}

// TestAccountMultiWrite: with several write regions, each accepts writes
// (a read region still answers 403/3), writes to one item in two regions
// within the lag conflict and every region ends with the one written
// last, and session tokens are vectors honoured in every region.
func TestAccountMultiWrite(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	cfg := cosmosrest.AccountConfig{MultipleWriteLocations: true, Consistency: cosmosrest.Session,
		Lag: func(string, string) time.Duration { return 10 * time.Second }}
	cfg.Clock = clock
	cfg.Reaper.Disabled = true
	a, cs, stop := serveAccount(t, cfg, 2)
	t.Cleanup(stop)
	east, west, north := cs["East US"], cs["West US"], cs["North Europe"]
	createDBColl(t, east)

	m := must(t, north.do("GET", "/", nil), 200).json(t)
	if m["enableMultipleWriteLocations"] != true || !strings.Contains(fmt.Sprint(m["writableLocations"]), "name:West US") || strings.Contains(fmt.Sprint(m["writableLocations"]), "North Europe") {
		t.Fatalf("the account resource: %v %v", m["enableMultipleWriteLocations"], m["writableLocations"])
	}
	if r := north.do("POST", accColl+"/docs", `{"id":"x","pk":"x"}`, pkHeader("x")...); r.status != 403 || r.header.Get("x-ms-substatus") != "3" {
		t.Fatalf("a write to the read region: %d/%s", r.status, r.header.Get("x-ms-substatus"))
	}

	// Concurrent creates of x and a replace racing a delete of y: the later
	// of each pair wins everywhere.
	must(t, east.do("POST", accColl+"/docs", `{"id":"y","pk":"x","v":"first"}`, pkHeader("x")...), 201)
	clock.Advance(10 * time.Second)
	ex := must(t, east.do("POST", accColl+"/docs", `{"id":"x","pk":"x","v":"east"}`, pkHeader("x")...), 201)
	must(t, west.do("PUT", accColl+"/docs/y", `{"id":"y","pk":"x","v":"west"}`, pkHeader("x")...), 200)
	clock.Advance(time.Second)
	wx := must(t, west.do("POST", accColl+"/docs", `{"id":"x","pk":"x","v":"west"}`, pkHeader("x")...), 201)
	// Each write region's ETags are its own: their write sequence numbers
	// are its index modulo the regions.
	z1 := must(t, east.do("POST", accColl+"/docs", `{"id":"z1","pk":"x"}`, pkHeader("x")...), 201)
	z2 := must(t, east.do("POST", accColl+"/docs", `{"id":"z2","pk":"x"}`, pkHeader("x")...), 201)
	for i, r := range []response{ex, wx, z1, z2} {
		region := []int{0, 1, 0, 0}[i]
		var seq uint64
		if _, err := fmt.Sscanf(strings.Trim(r.header.Get("etag"), `"`), "%x", &seq); err != nil || seq%3 != uint64(region) {
			t.Errorf("%s's ETag %s is not its own", regionNames[region], r.header.Get("etag"))
		}
	}
	must(t, east.do("DELETE", accColl+"/docs/y", nil, pkHeader("x")...), 204)
	tok := wx.header.Get("x-ms-session-token")
	if strings.Count(tok, "=") != 2 {
		t.Errorf("a multi-write session token %q is not a vector of the two write regions", tok)
	}
	// North Europe is behind West US's write: 1002 with its token.
	if r := north.do("GET", accColl+"/docs/x", nil, append(pkHeader("x"), "x-ms-session-token", tok)...); r.status != 404 || r.header.Get("x-ms-substatus") != "1002" {
		t.Fatalf("North Europe behind the token: %d/%s", r.status, r.header.Get("x-ms-substatus"))
	}
	clock.Advance(10 * time.Second)
	a.DeliverDue()
	etag := ""
	for _, name := range regionNames {
		r := must(t, cs[name].do("GET", accColl+"/docs/x", nil, append(pkHeader("x"), "x-ms-session-token", tok)...), 200)
		if v := r.json(t)["v"]; v != "west" {
			t.Errorf("%s: x is %v, want the later write, west's", name, v)
		}
		if etag == "" {
			etag = r.header.Get("etag")
		} else if r.header.Get("etag") != etag {
			t.Errorf("%s: x's ETag %s, another region's %s", name, r.header.Get("etag"), etag)
		}
		if r := cs[name].do("GET", accColl+"/docs/y", nil, pkHeader("x")...); r.status != 404 {
			t.Errorf("%s: y, deleted after it was replaced elsewhere, answers %d", name, r.status)
		}
	}
	if err := a.Failover("West US"); !errors.Is(err, cosmosrest.ErrRegion) {
		t.Errorf("a failover of a multi-write account: %v", err)
	}
	// East US received West US's x and replace of y, each conflicting with
	// its own; West US, East US's x and delete of y.
	if st := a.Status(); st[0].Conflicts < 2 || st[1].Conflicts < 2 {
		t.Errorf("conflicts counted: %+v", st)
	}
}

// TestAccountConsistentPrefix: under a seeded random lag, a read region
// always holds a gap-free prefix of the write region's changes, never a
// later one without an earlier.
func TestAccountConsistentPrefix(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	rnd := rand.New(rand.NewPCG(3, 3))
	cfg := cosmosrest.AccountConfig{Consistency: cosmosrest.ConsistentPrefix,
		Lag: func(string, string) time.Duration { return time.Duration(rnd.IntN(5000)) * time.Millisecond }}
	cfg.Clock = clock
	_, cs := testAccount(t, cfg)
	createDBColl(t, cs["East US"])
	const n = 20
	for i := range n {
		must(t, cs["East US"].do("POST", accColl+"/docs", fmt.Sprintf(`{"id":"%d","pk":"x"}`, i), pkHeader("x")...), 201)
		clock.Advance(200 * time.Millisecond)
	}
	for step := 0; step < 40; step++ {
		for _, name := range regionNames[1:] {
			held := map[string]bool{}
			for _, d := range documents(t, must(t, cs[name].do("GET", accColl+"/docs", nil), 200), "Documents") {
				var doc struct{ ID string }
				if err := json.Unmarshal(d, &doc); err != nil {
					t.Fatal(err)
				}
				held[doc.ID] = true
			}
			for i := range len(held) {
				if !held[fmt.Sprint(i)] {
					t.Fatalf("%s holds %d items but not item %d: %v", name, len(held), i, held)
				}
			}
		}
		clock.Advance(100 * time.Millisecond)
	}
}

// TestAccountCloseReleasesHeld: a request held by a region down
// (RegionTimeout) is answered when the account closes.
func TestAccountCloseReleasesHeld(t *testing.T) {
	a, err := cosmosrest.NewAccount(cosmosrest.AccountConfig{Regions: []cosmosrest.RegionConfig{{Name: "A", Writable: true}, {Name: "B"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.TakeRegionDown("B", cosmosrest.RegionTimeout); err != nil {
		t.Fatal(err)
	}
	answered := make(chan int)
	go func() {
		w := httptest.NewRecorder()
		a.Region("B").ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		answered <- w.Code
	}()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the held request is still held after Close")
	}
}

// TestAccountDirCrash: changes still on their way when the stores stop
// without the account's Close (a crash) reach their replicas when the
// account opens again.
func TestAccountDirCrash(t *testing.T) {
	dir := t.TempDir()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	open := func() *cosmosrest.Account {
		cfg := cosmosrest.AccountConfig{Regions: []cosmosrest.RegionConfig{{Name: "East US", Writable: true}, {Name: "West US"}},
			Lag: func(string, string) time.Duration { return time.Hour }}
		cfg.Dir, cfg.Clock = dir, clock
		a, err := cosmosrest.NewAccount(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := open()
	east := &client{t: t, srv: httptest.NewTLSServer(a.Region("East US")), key: cosmosrest.EmulatorKey}
	createDBColl(t, east)
	w := must(t, east.do("POST", accColl+"/docs", `{"id":"a","pk":"x"}`, pkHeader("x")...), 201)
	east.srv.Close()
	for _, name := range a.Regions() {
		if err := a.Region(name).Close(); err != nil { // the stores stop; the change to West US is lost
			t.Fatal(err)
		}
	}
	b := open()
	defer b.Close()
	west := &client{t: t, srv: httptest.NewTLSServer(b.Region("West US")), key: cosmosrest.EmulatorKey}
	defer west.srv.Close()
	r := must(t, west.do("GET", accColl+"/docs/a", nil, append(pkHeader("x"), "x-ms-session-token", w.header.Get("x-ms-session-token"))...), 200)
	if r.header.Get("etag") != w.header.Get("etag") {
		t.Errorf("the replica's ETag %s, the write's %s", r.header.Get("etag"), w.header.Get("etag"))
	}
	a.Close()
}
