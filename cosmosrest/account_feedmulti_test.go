package cosmosrest_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// multiFeedAccount returns an account of regionNames, the first writers
// of them write regions, on a manual clock, whose changes go from one
// region to another after lag (nil: none), with a container db/c on /pk
// whose items may expire.
func multiFeedAccount(t *testing.T, writers int, lag func(from, to string) time.Duration) (*cosmosrest.Account, *lethe.ManualClock, map[string]*client) {
	t.Helper()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	cfg := cosmosrest.AccountConfig{MultipleWriteLocations: true, Consistency: cosmosrest.Eventual, Lag: lag}
	cfg.Clock = clock
	cfg.Reaper.Disabled = true
	a, cs, stop := serveAccount(t, cfg, writers)
	t.Cleanup(stop)
	createDB(t, cs["East US"], "db")
	must(t, cs["East US"].do("POST", "/dbs/db/colls", map[string]any{"id": "c", "defaultTtl": -1, "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	a.DeliverDue()
	return a, clock, cs
}

// latestEverywhere returns the latest versions every region's feed shows,
// once the account has delivered everything.
func latestEverywhere(t *testing.T, a *cosmosrest.Account, clock *lethe.ManualClock, cs map[string]*client) []feedKey {
	t.Helper()
	clock.Advance(time.Minute)
	a.DeliverDue()
	var want []feedKey
	for i, name := range regionNames {
		all, _ := latestAll(t, cs[name], "", 1000)
		if i == 0 {
			want = all
		}
		want = slices.DeleteFunc(want, func(k feedKey) bool { return !slices.Contains(all, k) })
	}
	return want
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
			seen, cont := latestAll(t, west, "", 10)
			// East US has not received w2: nothing new, and the
			// continuation as it came, until it has.
			status, keys, next := latestPage(t, east, cont, 10)
			if status != http.StatusNotModified || len(keys) != 0 || next != cont {
				t.Errorf("a region behind the continuation answers %d %v %q, not 304 and the continuation", status, keys, next)
			}
			write(t, east, `{"id":"b","pk":"x"}`)
			clock.Advance(10 * time.Second)
			a.DeliverDue()
			rest, _ := latestAll(t, east, next, 10)
			if len(rest) == 0 || !slices.ContainsFunc(rest, func(k feedKey) bool { return k.id == "b" }) {
				t.Errorf("East US, caught up, returns %v, not b", rest)
			}
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
				if lost := missing(latestEverywhere(t, a, clock, cs), got); len(lost) > 0 {
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
	write(t, east, `{"id":"a","pk":"x"}`)
	a.DeliverDue()
	_, _, cont := latestPage(t, east, "", 10)
	_, one, _ := strings.Cut(cont, ":")
	tok, cover, _ := strings.Cut(one, ":")
	_, _, single := latestPage(t, singleEast(t), "", 10)
	_, singleRest, _ := strings.Cut(single, ":")
	_, singleCover, _ := strings.Cut(singleRest, ":")
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

// singleEast returns East US of an account of one write region, with
// db/c holding an item.
func singleEast(t *testing.T) *client {
	t.Helper()
	_, _, cs := feedAccount(t, nil)
	write(t, cs["East US"], `{"id":"a","pk":"x"}`)
	return cs["East US"]
}
