package cosmosrest_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// tokenEntries returns a session token's entries: "global" its own LSN,
// and each write region's index its LSN in the vector form
// ("0:-1#5#0=4#1=7").
func tokenEntries(t *testing.T, tok string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	segs := strings.Split(tok, "#")
	if len(segs) < 2 {
		t.Fatalf("the session token %q has no LSN", tok)
	}
	for i, seg := range segs[1:] {
		name, v := "global", seg
		if i > 0 {
			var ok bool
			if name, v, ok = strings.Cut(seg, "="); !ok {
				t.Fatalf("the session token %q has an entry %q", tok, seg)
			}
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("the session token %q: %v", tok, err)
		}
		out[name] = n
	}
	return out
}

// notBelow fails the test when a session token's entry is below the same
// entry of an older one.
func notBelow(t *testing.T, what, tok, old string) {
	t.Helper()
	now := tokenEntries(t, tok)
	for name, v := range tokenEntries(t, old) {
		if now[name] < v {
			t.Errorf("%s: the token %s is below %s before (entry %s)", what, tok, old, name)
		}
	}
}

// serveSession serves serveMulti's account at Session consistency.
func serveSession(t *testing.T, clock *lethe.ManualClock, dir string) (*cosmosrest.Account, map[string]*client, func()) {
	t.Helper()
	cfg := cosmosrest.AccountConfig{MultipleWriteLocations: true, Consistency: cosmosrest.Session, Lag: func(string, string) time.Duration { return conflictLag }}
	cfg.Clock, cfg.Dir = clock, dir
	cfg.Reaper.Disabled = true
	return serveAccount(t, cfg, 2)
}

// TestAccountMultiWriteTokensSurviveRestart: an account of several write
// regions keeps, with Dir, the token floors of a container deleted and
// made again: after a restart every token the account gave before (the
// deleted container's, the new one's, from each write region) is served
// in every region, and the new tokens are not below them. (The floors
// were in memory only: the new container's tokens went back to its
// feeds' LSNs, and a read region answered 404/1002 to the tokens of
// before.)
func TestAccountMultiWriteTokensSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	a, cs, stop := serveSession(t, clock, dir)
	createDBColl(t, cs["East US"])
	write := func(region, id string) string {
		return must(t, cs[region].do("POST", accColl+"/docs", `{"id":"`+id+`","pk":"x"}`, pkHeader("x")...), 201).header.Get("x-ms-session-token")
	}
	var old []string
	for i := range 6 {
		old = append(old, write("East US", "e"+strconv.Itoa(i)), write("West US", "w"+strconv.Itoa(i)))
	}
	settle(a, clock)
	must(t, cs["East US"].do("DELETE", accColl, nil), 204)
	must(t, cs["East US"].do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	recreated := []string{write("East US", "new-e"), write("West US", "new-w")}
	for _, tok := range recreated {
		notBelow(t, "the container made again", tok, old[len(old)-1])
	}
	// d is made again and written to no more: its floors alone serve
	// its tokens.
	must(t, cs["East US"].do("POST", "/dbs/db/colls", map[string]any{"id": "d", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	dTok := must(t, cs["West US"].do("POST", "/dbs/db/colls/d/docs", `{"id":"w","pk":"x"}`, pkHeader("x")...), 201).header.Get("x-ms-session-token")
	settle(a, clock)
	must(t, cs["East US"].do("DELETE", "/dbs/db/colls/d", nil), 204)
	must(t, cs["East US"].do("POST", "/dbs/db/colls", map[string]any{"id": "d", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	settle(a, clock)
	stop()

	a, cs, stop = serveSession(t, clock, dir)
	defer stop()
	settle(a, clock)
	for _, region := range regionNames {
		for _, tok := range append(old[len(old)-2:], recreated...) {
			r := cs[region].do("GET", accColl+"/docs/new-e", nil, append(pkHeader("x"), "x-ms-session-token", tok)...)
			if r.status != 200 {
				t.Errorf("%s answers %d/%s after the restart to the session token %s given before it", region, r.status, r.header.Get("x-ms-substatus"), tok)
			}
		}
	}
	for _, region := range regionNames {
		if r := cs[region].do("GET", "/dbs/db/colls/d/docs/w", nil, append(pkHeader("x"), "x-ms-session-token", dTok)...); r.status != 404 || r.header.Get("x-ms-substatus") != "" && r.header.Get("x-ms-substatus") != "0" {
			t.Errorf("%s answers %d/%s after the restart to the token %s of the container d deleted", region, r.status, r.header.Get("x-ms-substatus"), dTok)
		}
	}
	for _, region := range []string{"East US", "West US"} {
		tok := write(region, "after "+region)
		for _, before := range recreated {
			notBelow(t, region+" after the restart", tok, before)
		}
	}
}

// A damaged account.json of an account of several write regions is an
// error naming it, and opens nothing.
func TestAccountMultiWriteStateDamaged(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "account.json"), []byte(`{"floors":`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := cosmosrest.AccountConfig{MultipleWriteLocations: true, Consistency: cosmosrest.Session,
		Regions: []cosmosrest.RegionConfig{{Name: "East US", Writable: true}, {Name: "West US", Writable: true}}}
	cfg.Dir = dir
	cfg.Clock = lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	if a, err := cosmosrest.NewAccount(cfg); err == nil || !strings.Contains(err.Error(), "account.json") {
		if a != nil {
			a.Close()
		}
		t.Errorf("NewAccount on a damaged account.json: %v", err)
	}
}
