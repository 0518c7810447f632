package cosmosrest_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// feedKey is a change as the references of these tests count it: the
// version an item was written at, or the version a delete or an expiry
// removed (each region finds its own expiries, and a region that received
// a version after it expired shows an expiry where the write region shows
// a delete: a removal is a removal).
type feedKey struct {
	id, etag string
	removed  bool
}

func (k feedKey) String() string {
	if k.removed {
		return "-" + k.id + "@" + k.etag
	}
	return "+" + k.id + "@" + k.etag
}

// avadPage reads one page of accColl's all-versions-and-deletes feed in
// region c, on from continuation cont ("" for the beginning), of at most
// max changes, and returns its status, its changes and its continuation
// (or, for a status other than 200 and 304, its body).
func avadPage(t *testing.T, c *client, cont string, max int) (int, []feedKey, string) {
	t.Helper()
	return feedKeysPage(t, c, cont, max, false)
}

// latestPage reads one page of accColl's latest-version feed, as
// avadPage does.
func latestPage(t *testing.T, c *client, cont string, max int) (int, []feedKey, string) {
	t.Helper()
	return feedKeysPage(t, c, cont, max, true)
}

func feedKeysPage(t *testing.T, c *client, cont string, max int, latest bool) (int, []feedKey, string) {
	t.Helper()
	hdr := []string{"A-IM", "Full-Fidelity Feed", "x-ms-cosmos-changefeed-wire-format-version", "2021-09-15",
		"x-ms-max-item-count", fmt.Sprint(max), "x-ms-consistency-level", "Eventual"}
	switch {
	case latest:
		hdr[1] = "Incremental Feed"
		if cont != "" {
			hdr = append(hdr, "If-None-Match", cont)
		}
	case cont == "":
		hdr = append(hdr, "If-Modified-Since", time.Unix(1_600_000_000, 0).UTC().Format(http.TimeFormat))
	default:
		hdr = append(hdr, "If-None-Match", cont)
	}
	r := c.do("GET", accColl+"/docs", nil, hdr...)
	if r.status != http.StatusOK && r.status != http.StatusNotModified {
		return r.status, nil, string(r.body)
	}
	var keys []feedKey
	if r.status == http.StatusOK {
		for _, raw := range documents(t, r, "Documents") {
			var d map[string]any
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			k, v := feedKey{}, d
			if !latest {
				if v, _ = d["current"].(map[string]any); len(v) == 0 {
					v, k.removed = d["previous"].(map[string]any), true
				}
			}
			k.id, _ = v["id"].(string)
			k.etag, _ = v["_etag"].(string)
			keys = append(keys, k)
		}
	}
	return r.status, keys, strings.Trim(r.header.Get("etag"), `"`)
}

// avadAll reads on from cont in region c until a page is empty, and
// returns the changes and the last continuation.
func avadAll(t *testing.T, c *client, cont string, max int) ([]feedKey, string) {
	t.Helper()
	return feedAll(t, c, cont, max, false)
}

// latestAll is avadAll of the latest-version feed.
func latestAll(t *testing.T, c *client, cont string, max int) ([]feedKey, string) {
	t.Helper()
	return feedAll(t, c, cont, max, true)
}

func feedAll(t *testing.T, c *client, cont string, max int, latest bool) ([]feedKey, string) {
	t.Helper()
	var all []feedKey
	for range 1000 {
		status, keys, next := feedKeysPage(t, c, cont, max, latest)
		if status != http.StatusOK && status != http.StatusNotModified {
			t.Fatalf("change feed: %d: %s", status, next)
		}
		all, cont = append(all, keys...), next
		if status == http.StatusNotModified {
			return all, cont
		}
	}
	t.Fatal("the change feed never ends")
	return nil, ""
}

// missing returns the changes of want that got lacks.
func missing(want, got []feedKey) []feedKey {
	var out []feedKey
	for _, k := range want {
		if !slices.Contains(got, k) {
			out = append(out, k)
		}
	}
	return out
}

// feedAccount returns an account on a manual clock whose changes reach
// each read region after its lag (lags), with a container db/c on /pk
// whose items may expire.
func feedAccount(t *testing.T, lags map[string]time.Duration) (*cosmosrest.Account, *lethe.ManualClock, map[string]*client) {
	t.Helper()
	return feedAccountOf(t, cosmosrest.AccountConfig{Consistency: cosmosrest.Eventual, Lag: func(_, to string) time.Duration { return lags[to] }}, 1)
}

// feedAccountOf returns the account cfg makes of regionNames, the first
// writable of them writable, on a manual clock, with a container db/c on
// /pk whose items may expire.
func feedAccountOf(t *testing.T, cfg cosmosrest.AccountConfig, writable int) (*cosmosrest.Account, *lethe.ManualClock, map[string]*client) {
	t.Helper()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	cfg.Clock = clock
	cfg.Reaper.Disabled = true
	a, cs, stop := serveAccount(t, cfg, writable)
	t.Cleanup(stop)
	createDB(t, cs["East US"], "db")
	must(t, cs["East US"].do("POST", "/dbs/db/colls", map[string]any{"id": "c", "defaultTtl": -1, "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	return a, clock, cs
}

func write(t *testing.T, c *client, doc string) {
	t.Helper()
	if r := c.do("POST", accColl+"/docs", doc, append(pkHeader("x"), "x-ms-documentdb-is-upsert", "true")...); r.status != http.StatusOK && r.status != http.StatusCreated {
		t.Fatalf("upsert %s: %d %s", doc, r.status, r.body)
	}
}

// A continuation read on in another region misses none of the changes
// after it: with that region caught up, behind, and with its expiries
// found elsewhere among its writes than where the first region found them.
func TestAccountChangeFeedReadsOnInAnotherRegion(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, a *cosmosrest.Account, clock *lethe.ManualClock, east, west *client) []feedKey
	}{
		{"caught up", func(t *testing.T, a *cosmosrest.Account, clock *lethe.ManualClock, east, west *client) []feedKey {
			for _, id := range []string{"a", "b", "c", "d"} {
				write(t, east, `{"id":"`+id+`","pk":"x"}`)
			}
			clock.Advance(5 * time.Second)
			a.DeliverDue()
			_, first, cont := avadPage(t, east, "", 2)
			rest, _ := avadAll(t, west, cont, 10)
			if len(rest) > 2 {
				t.Errorf("West US returned %v after %v: more than the rest", rest, first)
			}
			return append(first, rest...)
		}},
		{"behind", func(t *testing.T, a *cosmosrest.Account, clock *lethe.ManualClock, east, west *client) []feedKey {
			write(t, east, `{"id":"a","pk":"x"}`)
			clock.Advance(5 * time.Second)
			a.DeliverDue()
			write(t, east, `{"id":"b","pk":"x"}`)
			write(t, east, `{"id":"a","pk":"x","v":2}`)
			// West US has not received b.
			seen, rest := behindThenCaughtUp(t, a, clock, east, west, east, "c", false)
			if len(rest) != 1 {
				t.Errorf("West US, caught up, returns %v, not just c", rest)
			}
			return append(seen, rest...)
		}},
		{"expiries found elsewhere", func(t *testing.T, a *cosmosrest.Account, clock *lethe.ManualClock, east, west *client) []feedKey {
			// East US finds short's expiry after b; West US, which
			// receives b 5 s late, before it.
			write(t, east, `{"id":"short","pk":"x","ttl":3}`)
			clock.Advance(5 * time.Second)
			a.DeliverDue()
			write(t, east, `{"id":"b","pk":"x"}`)
			seen, cont := avadAll(t, east, "", 1) // at t0+5s: short, its expiry, b
			clock.Advance(time.Second)
			write(t, east, `{"id":"long","pk":"x","ttl":8}`) // expires at t0+14s
			seen2, cont := avadAll(t, east, cont, 10)
			clock.Advance(8 * time.Second)
			avadAll(t, west, "", 10) // West US finds long's expiry, and has neither b nor long yet
			a.DeliverDue()
			rest, _ := avadAll(t, west, cont, 10)
			return append(append(seen, seen2...), rest...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, clock, cs := feedAccount(t, map[string]time.Duration{"West US": 5 * time.Second, "North Europe": 5 * time.Second})
			got := tc.run(t, a, clock, cs["East US"], cs["West US"])
			clock.Advance(time.Minute)
			a.DeliverDue()
			want, _ := avadAll(t, cs["East US"], "", 100)
			westAll, _ := avadAll(t, cs["West US"], "", 100)
			// What the reader saw, then what West US shows after it
			// (its expiries), must hold every change.
			if lost := missing(want, got); len(lost) > 0 {
				t.Errorf("lost %v: got %v, East US's feed %v, West US's %v", lost, got, want, westAll)
			}
		})
	}
}

// behindThenCaughtUp reads region from's feed to its end, checks that
// region to, which has not received all of it, answers 304 and the
// continuation as it came, then writes the item id in region writer,
// delivers everything due after 10 s, reads on in to, and returns what
// from gave and what to gave after it, which must hold id.
func behindThenCaughtUp(t *testing.T, a *cosmosrest.Account, clock *lethe.ManualClock, from, to, writer *client, id string, latest bool) (seen, rest []feedKey) {
	t.Helper()
	seen, cont := feedAll(t, from, "", 10, latest)
	status, keys, next := feedKeysPage(t, to, cont, 10, latest)
	if status != http.StatusNotModified || len(keys) != 0 || next != cont {
		t.Errorf("a region behind the continuation answers %d %v %q, not 304 and the continuation", status, keys, next)
	}
	write(t, writer, `{"id":"`+id+`","pk":"x"}`)
	clock.Advance(10 * time.Second)
	a.DeliverDue()
	rest, _ = feedAll(t, to, next, 10, latest)
	if !slices.ContainsFunc(rest, func(k feedKey) bool { return k.id == id }) {
		t.Errorf("the region, caught up, returns %v, not %s", rest, id)
	}
	return seen, rest
}

// The expiry of a version West US holds and East US had replaced before
// it expired (West US received the replace late) is a change the reader
// was not given in East US: West US returns it, and nothing is lost.
func TestAccountChangeFeedExpiryAfterTheRead(t *testing.T) {
	a, clock, cs := feedAccount(t, map[string]time.Duration{"West US": 3 * time.Second, "North Europe": 3 * time.Second})
	east, west := cs["East US"], cs["West US"]
	write(t, east, `{"id":"a","pk":"x","ttl":5}`)
	clock.Advance(4 * time.Second)
	a.DeliverDue() // a reaches West US
	write(t, east, `{"id":"b","pk":"x"}`)
	seen, cont := avadAll(t, east, "", 10) // at t0+4s, before a expires
	clock.Advance(2 * time.Second)
	// West US, at t0+6s, finds a's expiry (t0+5s) before b arrives.
	if _, keys, _ := avadPage(t, west, "", 10); len(keys) != 2 {
		t.Fatalf("West US has %v, not a and its expiry", keys)
	}
	clock.Advance(2 * time.Second)
	a.DeliverDue()
	rest, _ := avadAll(t, west, cont, 10)
	if !slices.ContainsFunc(rest, func(k feedKey) bool { return k.id == "a" && k.removed }) {
		t.Errorf("West US returns %v after the reader's %v: not a's expiry", rest, seen)
	}
}

// Moves between regions at random points of a random history, with
// failovers, against the changes of every region's whole feed: every
// change is seen at least once; in latest-version mode, every item's last
// version.
func TestAccountChangeFeedMovesRandomly(t *testing.T) {
	for _, latest := range []bool{false, true} {
		for seed := uint64(1); seed <= 6; seed++ {
			t.Run(fmt.Sprintf("latest=%v/%d", latest, seed), func(t *testing.T) { movesRandomly(t, seed, latest, 1) })
		}
	}
	// With several write regions, of the latest-version feed: the writes
	// of random regions, conflicts among them.
	for _, writers := range []int{2, 3} {
		for seed := uint64(1); seed <= 6; seed++ {
			t.Run(fmt.Sprintf("writers=%d/%d", writers, seed), func(t *testing.T) { movesRandomly(t, seed, true, writers) })
		}
	}
}

// movesRandomly is a random history of seed in an account of writers
// write regions (1: with failovers).
func movesRandomly(t *testing.T, seed uint64, latest bool, writers int) {
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	lags := map[string]time.Duration{"East US": 2 * time.Second, "West US": 3 * time.Second, "North Europe": 7 * time.Second}
	var a *cosmosrest.Account
	var clock *lethe.ManualClock
	var cs map[string]*client
	if writers == 1 {
		a, clock, cs = feedAccount(t, lags)
	} else {
		// Each change's lag its own, from 0 to 8 s.
		lagRNG := rand.New(rand.NewPCG(seed, 0))
		a, clock, cs = multiFeedAccount(t, writers, func(string, string) time.Duration {
			return time.Duration(lagRNG.IntN(8000)) * time.Millisecond
		})
	}
	read := func(c *client, cont string, max int) (int, []feedKey, string) {
		if latest {
			return latestPage(t, c, cont, max)
		}
		return avadPage(t, c, cont, max)
	}
	var got []feedKey
	cont, region := "", regionNames[rng.IntN(3)]
	for step := range 150 {
		hub := cs[a.WriteRegion()]
		if writers > 1 {
			hub = cs[regionNames[rng.IntN(writers)]]
		}
		switch rng.IntN(7) {
		case 0, 1:
			ttl := ""
			if rng.IntN(2) == 0 {
				ttl = fmt.Sprintf(`,"ttl":%d`, 1+rng.IntN(10))
			}
			write(t, hub, fmt.Sprintf(`{"id":"i%d","pk":"x","v":%d%s}`, rng.IntN(8), step, ttl))
		case 2:
			hub.do("DELETE", accColl+"/docs/"+fmt.Sprintf("i%d", rng.IntN(8)), nil, pkHeader("x")...)
		case 3:
			clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
			a.DeliverDue()
		case 4:
			region = regionNames[rng.IntN(3)]
			if writers == 1 && rng.IntN(4) == 0 {
				if err := a.Failover(regionNames[rng.IntN(3)]); err != nil {
					t.Fatal(err)
				}
			}
		default:
			status, keys, next := read(cs[region], cont, 1+rng.IntN(4))
			if status != http.StatusOK && status != http.StatusNotModified {
				t.Fatalf("step %d, in %s: %d %s", step, region, status, next)
			}
			got, cont = append(got, keys...), next
		}
	}
	clock.Advance(time.Minute)
	a.DeliverDue()
	for range 1000 {
		status, keys, next := read(cs[region], cont, 10)
		got, cont = append(got, keys...), next
		if status != http.StatusOK {
			break
		}
	}
	// The changes every region shows: a region that received a version
	// after its expiry shows that expiry even though the write region
	// replaced the version before it (the lag's, not the history's).
	want := shownEverywhere(t, cs, latest)
	if lost := missing(want, got); len(lost) > 0 {
		t.Errorf("lost %v of %v: got %v", lost, want, got)
	}
}

// shownEverywhere returns the changes every region's feed (latest: its
// latest-version feed) shows, from its beginning.
func shownEverywhere(t *testing.T, cs map[string]*client, latest bool) []feedKey {
	t.Helper()
	var want []feedKey
	for i, name := range regionNames {
		all, _ := feedAll(t, cs[name], "", 1000, latest)
		if i == 0 {
			want = all
		}
		want = slices.DeleteFunc(want, func(k feedKey) bool { return !slices.Contains(all, k) })
	}
	return want
}

// firstContinuation writes an item in region east of a, delivers it,
// and returns the continuation of east's feed (latest: latest-version)
// after it, its region's token and its cover.
func firstContinuation(t *testing.T, a *cosmosrest.Account, east *client, latest bool) (cont, tok, cover string) {
	t.Helper()
	write(t, east, `{"id":"a","pk":"x"}`)
	a.DeliverDue()
	_, _, cont = feedKeysPage(t, east, "", 10, latest)
	slug, rest, _ := strings.Cut(cont, ":")
	tok, cover, _ = strings.Cut(rest, ":")
	if slug != "east-us" || tok == "" || cover == "" {
		t.Fatalf("the continuation %q is not region:token:cover", cont)
	}
	return cont, tok, cover
}

// A continuation that names no region, whose cover is garbled, that is
// of a container deleted since, or that comes from another region of an
// account of several write regions, is refused with 400 saying what is
// wrong, and changes nothing.
func TestAccountChangeFeedBadContinuations(t *testing.T) {
	a, clock, cs := feedAccount(t, nil)
	east, west := cs["East US"], cs["West US"]
	cont, tok, cover := firstContinuation(t, a, east, false)
	rest := tok + ":" + cover
	for _, tc := range []struct{ name, cont, want string }{
		{"no region", "mars:" + rest, "no region of the account"},
		{"no colon", "garbled", "no region of the account"},
		{"no token", "east-us:", "no region of the account"},
		{"garbled cover", "east-us:" + tok + ":%%%", "cover"},
		{"cover of another version", "east-us:" + tok + ":AgA", "cover"},
		{"cover cut short", "east-us:" + tok + ":" + cover[:len(cover)-3], "cover"},
		{"no cover", "east-us:" + tok, "reads on only in its region"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, keys, body := avadPage(t, west, tc.cont, 10)
			if status != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Errorf("%q: %d %v %s, want 400 saying %q", tc.cont, status, keys, body, tc.want)
			}
		})
	}
	// Still read on in both regions after the refusals.
	if _, keys, _ := avadPage(t, west, cont, 10); len(keys) != 0 {
		t.Errorf("West US returns %v after a continuation past a", keys)
	}

	// The container deleted and made again: in its region the token's
	// container is not this one, and elsewhere neither is the cover's.
	must(t, east.do("DELETE", accColl, nil), 204)
	must(t, east.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "defaultTtl": -1, "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	clock.Advance(time.Second)
	for _, c := range []*client{east, west} {
		if status, _, body := avadPage(t, c, cont, 10); status != http.StatusBadRequest || !strings.Contains(body, "another container") {
			t.Errorf("a continuation of the deleted container: %d %s", status, body)
		}
	}
}

// With several write regions, an all-versions-and-deletes continuation
// reads on only in its region (its deletes carry no write of their own to
// place them by elsewhere); a latest-version one reads on anywhere.
func TestAccountChangeFeedMultiWriteAllVersionsStaysInItsRegion(t *testing.T) {
	_, _, cs := multiFeedAccount(t, 2, nil)
	east, west := cs["East US"], cs["West US"]
	write(t, east, `{"id":"a","pk":"x"}`)
	_, _, cont := avadPage(t, east, "", 10)
	if status, _, body := avadPage(t, west, cont, 10); status != http.StatusBadRequest || !strings.Contains(body, "all-versions-and-deletes continuation has no cover") {
		t.Errorf("a continuation of East US in West US: %d %s", status, body)
	}
	if status, _, body := avadPage(t, east, cont, 10); status != http.StatusNotModified {
		t.Errorf("a continuation of East US in East US: %d %s", status, body)
	}
	_, _, cont = latestPage(t, east, "", 10)
	if status, keys, body := latestPage(t, west, cont, 10); status != http.StatusNotModified {
		t.Errorf("a latest-version continuation of East US in West US, which has a: %d %v %s", status, keys, body)
	}
}

// multiFeedAccount returns an account of regionNames, the first writers
// of them write regions, on a manual clock, whose changes go from one
// region to another after lag (nil: none), with a container db/c on /pk
// whose items may expire.
func multiFeedAccount(t *testing.T, writers int, lag func(from, to string) time.Duration) (*cosmosrest.Account, *lethe.ManualClock, map[string]*client) {
	t.Helper()
	return feedAccountOf(t, cosmosrest.AccountConfig{MultipleWriteLocations: true, Consistency: cosmosrest.Eventual, Lag: lag}, writers)
}

// A latest-version continuation of an account of several write regions
// reads on in another region missing no item's latest version: with that
// region caught up, behind in one write region's writes, with a
// conflict's loser it never holds, and with expiries among the writes.
func TestAccountChangeFeedMultiWriteReadsOnInAnotherRegion(t *testing.T) {
	type run func(t *testing.T, a *cosmosrest.Account, clock *lethe.ManualClock, cs map[string]*client) []feedKey
	for _, tc := range []struct {
		name string
		run  run
	}{
		{"caught up", func(t *testing.T, a *cosmosrest.Account, clock *lethe.ManualClock, cs map[string]*client) []feedKey {
			for i, id := range []string{"a", "b", "c", "d", "e", "f"} {
				write(t, cs[writer(a, i)], `{"id":"`+id+`","pk":"x"}`)
				clock.Advance(time.Second)
			}
			clock.Advance(10 * time.Second)
			a.DeliverDue()
			// Read to its end in East US, a continuation reads on in
			// West US with nothing again.
			all, end := latestAll(t, cs["East US"], "", 2)
			if again, _ := latestAll(t, cs["West US"], end, 10); len(again) != 0 {
				t.Errorf("West US returned %v after East US's whole feed %v", again, all)
			}
			// Read in part, it reads on where it may lack a write.
			_, first, cont := latestPage(t, cs["East US"], "", 2)
			rest, _ := latestAll(t, cs["West US"], cont, 10)
			return append(first, rest...)
		}},
		{"behind in one write region's writes", func(t *testing.T, a *cosmosrest.Account, clock *lethe.ManualClock, cs map[string]*client) []feedKey {
			east, west := cs["East US"], cs["West US"]
			write(t, east, `{"id":"a","pk":"x"}`)
			write(t, west, `{"id":"w","pk":"x"}`)
			clock.Advance(10 * time.Second)
			a.DeliverDue()
			write(t, west, `{"id":"w2","pk":"x"}`)
			// East US has not received w2.
			seen, rest := behindThenCaughtUp(t, a, clock, west, east, east, "b", true)
			return append(seen, rest...)
		}},
		{"a conflict's loser", func(t *testing.T, a *cosmosrest.Account, clock *lethe.ManualClock, cs map[string]*client) []feedKey {
			east, west := cs["East US"], cs["West US"]
			write(t, east, `{"id":"x","pk":"x","v":"east"}`)
			clock.Advance(time.Millisecond)
			write(t, west, `{"id":"x","pk":"x","v":"west"}`) // the later: it wins
			seen, cont := latestAll(t, east, "", 10)         // East US's version, the loser
			clock.Advance(10 * time.Second)
			a.DeliverDue()
			if len(seen) != 1 {
				t.Fatalf("East US gave %v, not its x", seen)
			}
			westAll, _ := avadAll(t, west, "", 100)
			if slices.ContainsFunc(westAll, func(k feedKey) bool { return k.etag == seen[0].etag }) {
				t.Fatalf("West US's feed %v holds the loser %v", westAll, seen[0])
			}
			// West US never holds the loser, but has received it: it
			// reads on, with its winner.
			status, rest, _ := latestPage(t, west, cont, 10)
			if status != http.StatusOK {
				t.Errorf("West US, which received the loser, answers %d %v", status, rest)
			}
			return append(seen, rest...)
		}},
		{"expiries among the writes", func(t *testing.T, a *cosmosrest.Account, clock *lethe.ManualClock, cs map[string]*client) []feedKey {
			east, west := cs["East US"], cs["West US"]
			write(t, east, `{"id":"short","pk":"x","ttl":3}`)
			write(t, west, `{"id":"w","pk":"x"}`)
			clock.Advance(5 * time.Second)
			a.DeliverDue()
			write(t, east, `{"id":"b","pk":"x"}`)
			seen, cont := latestAll(t, east, "", 1)
			clock.Advance(time.Second)
			write(t, west, `{"id":"long","pk":"x","ttl":8}`)
			write(t, east, `{"id":"c","pk":"x"}`)
			clock.Advance(8 * time.Second)
			latestAll(t, west, "", 10) // West US finds long's expiry
			a.DeliverDue()
			rest, _ := latestAll(t, west, cont, 10)
			return append(seen, rest...)
		}},
	} {
		for _, writers := range []int{2, 3} {
			t.Run(tc.name+"/"+strings.Repeat("w", writers), func(t *testing.T) {
				lag := func(string, string) time.Duration { return 5 * time.Second }
				a, clock, cs := multiFeedAccount(t, writers, lag)
				got := tc.run(t, a, clock, cs)
				clock.Advance(time.Minute)
				a.DeliverDue()
				if lost := missing(shownEverywhere(t, cs, true), got); len(lost) > 0 {
					t.Errorf("lost %v: got %v", lost, got)
				}
			})
		}
	}
}

// writer returns the i-th write region of a, round robin.
func writer(a *cosmosrest.Account, i int) string {
	var ws []string
	for _, r := range a.Status() {
		if r.Write {
			ws = append(ws, r.Name)
		}
	}
	return ws[i%len(ws)]
}

// Continuations of an account of several write regions garbled, or of
// an account of one, are refused with 400.
func TestAccountChangeFeedMultiWriteBadCovers(t *testing.T) {
	a, _, cs := multiFeedAccount(t, 2, nil)
	east, west := cs["East US"], cs["West US"]
	_, tok, cover := firstContinuation(t, a, east, true)
	one, _, ones := feedAccount(t, nil)
	_, _, singleCover := firstContinuation(t, one, ones["East US"], true)
	for _, tc := range []struct{ name, cont string }{
		{"cut short", "east-us:" + tok + ":" + cover[:len(cover)-2]},
		{"a cover of one write region", "east-us:" + tok + ":" + singleCover},
		{"garbled", "east-us:" + tok + ":AgAC"},
		{"of no region", "east-us:" + tok + ":AgAAAA"},
		{"of four regions", "east-us:" + tok + ":AgAEAQEBAQA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []*client{east, west} {
				if status, keys, body := latestPage(t, c, tc.cont, 10); status != http.StatusBadRequest || !strings.Contains(body, "cover") {
					t.Errorf("%q: %d %v %s, want 400 about its cover", tc.cont, status, keys, body)
				}
			}
		})
	}
}

// What a region has received of each write region's writes is counted
// again when the account is opened again on its Dir: a continuation from
// another region reads on there, rather than waiting.
func TestAccountChangeFeedMultiWriteAfterRestart(t *testing.T) {
	dir := t.TempDir()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	open := func() (*cosmosrest.Account, map[string]*client, func()) {
		cfg := cosmosrest.AccountConfig{MultipleWriteLocations: true, Consistency: cosmosrest.Eventual}
		cfg.Clock, cfg.Dir = clock, dir
		cfg.Reaper.Disabled = true
		return serveAccount(t, cfg, 3)
	}
	a, cs, stop := open()
	createDB(t, cs["East US"], "db")
	must(t, cs["East US"].do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	write(t, cs["West US"], `{"id":"w","pk":"x"}`)
	a.DeliverDue()
	seen, cont := latestAll(t, cs["West US"], "", 10)
	stop()

	_, cs, stop = open()
	t.Cleanup(stop)
	status, keys, next := latestPage(t, cs["East US"], cont, 10)
	if status != http.StatusNotModified || len(keys) != 0 || next == cont {
		t.Errorf("East US, which holds %v, answers %d %v %q to West US's continuation after it: not 304 and a continuation of its own", seen, status, keys, next)
	}
}
