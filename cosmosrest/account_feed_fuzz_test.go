package cosmosrest

import (
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
)

// FuzzDecodeFeedCover checks that decodeFeedCover never panics on a
// crafted cover, and that a cover it reads encodes to one it reads back
// the same.
func FuzzDecodeFeedCover(f *testing.F) {
	at := time.Unix(1_700_000_000, 123)
	for _, c := range []feedCover{
		{},
		{gen: 3, last: lethe.ChangeFeedVersion{ETag: "00000000000000a1", Written: at}, through: at.Add(time.Second)},
		{gen: 1 << 62, last: lethe.ChangeFeedVersion{ETag: strings.Repeat("x", 300)}, through: time.Unix(0, -1)},
	} {
		f.Add(c.encode())
	}
	f.Add("")
	f.Add("AQ")
	f.Add("AQD_____________AQ")
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := decodeFeedCover(s)
		if !ok {
			return
		}
		again, ok := decodeFeedCover(c.encode())
		if !ok || again.gen != c.gen || again.last.ETag != c.last.ETag ||
			!again.last.Written.Equal(c.last.Written) || !again.through.Equal(c.through) {
			t.Fatalf("%q reads as %+v, which encodes to one read as %+v (%v)", s, c, again, ok)
		}
	})
}

// FuzzReadFeedToken checks that readFeedToken never panics on a crafted
// continuation, and that what it accepts names a region of the account
// and a token, and carries a cover when it comes from another region.
func FuzzReadFeedToken(f *testing.F) {
	a := twoRegions(false)
	h := &Handler{region: a.regions[1]}
	cover := (&feedCover{gen: 1, last: lethe.ChangeFeedVersion{ETag: "0000000000000011", Written: time.Unix(5, 0)}}).encode()
	for _, s := range []string{"", ":", "::", "east-us", "east-us:tok", "east-us:tok:" + cover, "west-us:tok", "west-us:tok:" + cover,
		"east-us::" + cover, "east-us:tok:" + cover + ":more", "mars:tok:" + cover} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fc, why := h.readFeedToken(s)
		if why != "" {
			return
		}
		if fc.from == nil || fc.tok == "" {
			t.Fatalf("%q is accepted with no region or no token: %+v", s, fc)
		}
		if fc.from != h.region && fc.cover == nil {
			t.Fatalf("%q from %s is accepted in %s with no cover", s, fc.from.name, h.region.name)
		}
	})
}

// twoRegions returns an account of the regions East US and West US, with
// several write regions if multi, for tests of its continuations.
func twoRegions(multi bool) *Account {
	a := &Account{multi: multi}
	for i, name := range []string{"East US", "West US"} {
		a.regions = append(a.regions, &regionNode{acct: a, idx: i, name: name})
	}
	return a
}

// TestFeedTokenExpiredThrough: a page that reaches the feed's end gives a
// continuation whose cover takes as given the expiries up to the instant
// the read found them through (ChangeFeedResponse.ExpiredThrough), not
// the read's own: while a settings change waits for the log, a read finds
// none after the change's instant, and another region reading on from the
// cover must not pass over one between the two.
func TestFeedTokenExpiredThrough(t *testing.T) {
	started := time.Unix(1_700_000_100, 0)
	found := started.Add(-time.Minute)
	for _, multi := range []bool{false, true} {
		a := twoRegions(multi)
		h := &Handler{region: a.regions[0]}
		r := &feedRead{n: a.regions[0], started: started}
		if multi {
			r.cover.seen, r.recv = make([]uint64, 2), make([]uint64, 2)
		}
		resp := &lethe.ChangeFeedResponse{ContinuationToken: "tok", ExpiredThrough: found}
		tok := r.token(&request{h: h}, &lethe.ChangeFeedOptions{MaxItemCount: 10}, resp)
		fc, why := h.readFeedToken(tok)
		if why != "" || fc.cover == nil {
			t.Fatalf("multi %v: %q does not read back: %s", multi, tok, why)
		}
		if !fc.cover.through.Equal(found) {
			t.Errorf("multi %v: the cover takes the expiries up to %v as given; the read found them up to %v", multi, fc.cover.through, found)
		}
	}
}
