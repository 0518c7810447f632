package cosmosrest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// feedPage is one change feed response, decoded.
type feedPage struct {
	status int
	etag   string
	docs   []map[string]any
}

// readFeed sends one change feed request to a container's documents.
func readFeed(t *testing.T, c *client, coll string, hdr ...string) feedPage {
	t.Helper()
	r := c.do("GET", coll+"/docs", nil, append([]string{"A-IM", "Incremental Feed"}, hdr...)...)
	p := feedPage{status: r.status, etag: r.header.Get("etag")}
	switch r.status {
	case http.StatusOK:
		for _, d := range documents(t, r, "Documents") {
			var m map[string]any
			if err := json.Unmarshal(d, &m); err != nil {
				t.Fatal(err)
			}
			p.docs = append(p.docs, m)
		}
		if n := r.header.Get("x-ms-item-count"); n == "" {
			t.Errorf("no x-ms-item-count")
		}
	case http.StatusNotModified:
		if len(r.body) != 0 {
			t.Errorf("304 with a body: %s", r.body)
		}
	default:
		t.Fatalf("change feed: status %d: %s", r.status, r.body)
	}
	if p.etag == "" || !strings.HasPrefix(p.etag, `"`) {
		t.Fatalf("change feed: etag %q is not a quoted continuation", p.etag)
	}
	if r.header.Get("x-ms-request-charge") == "" {
		t.Errorf("no x-ms-request-charge")
	}
	return p
}

func ids(docs []map[string]any) string {
	var s []string
	for _, d := range docs {
		if cur, ok := d["current"].(map[string]any); ok && len(cur) > 0 {
			d = cur
		} else if prev, ok := d["previous"].(map[string]any); ok {
			d = prev
		}
		s = append(s, d["id"].(string))
	}
	return strings.Join(s, ",")
}

func TestChangeFeed(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	// Without the reaper, an expiry is found when the feed is next read:
	// after the delete below, whatever the timing.
	_, c := testServer(t, cosmosrest.Config{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "defaultTtl": 100, "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	const coll = "/dbs/db/colls/c"
	pk := func(v string) []string { return []string{"x-ms-documentdb-partitionkey", `["` + v + `"]`} }

	// Start from now before anything is written: 304, and an etag to go on from.
	now := readFeed(t, c, coll, "If-None-Match", "*")
	if now.status != http.StatusNotModified {
		t.Fatalf("start from now on an empty feed: %d", now.status)
	}
	must(t, c.do("POST", coll+"/docs", `{"id":"a","pk":"x"}`, pk("x")...), 201)
	must(t, c.do("POST", coll+"/docs", `{"id":"b","pk":"y","ttl":10}`, pk("y")...), 201)
	must(t, c.do("PUT", coll+"/docs/a", `{"id":"a","pk":"x","v":2}`, pk("x")...), 200)

	// Latest version from the beginning: b, then a at its latest version, with _lsn.
	all := readFeed(t, c, coll)
	if all.status != 200 || ids(all.docs) != "b,a" {
		t.Fatalf("latest version from the beginning: %d %v", all.status, all.docs)
	}
	if all.docs[1]["v"] != 2.0 || all.docs[1]["_lsn"] != 3.0 {
		t.Errorf("a's latest version with its lsn: %v", all.docs[1])
	}
	// The same from "now" taken before the writes, page by page.
	p1 := readFeed(t, c, coll, "If-None-Match", now.etag, "x-ms-max-item-count", "1")
	p2 := readFeed(t, c, coll, "If-None-Match", p1.etag, "x-ms-max-item-count", "1")
	p3 := readFeed(t, c, coll, "If-None-Match", p2.etag, "x-ms-max-item-count", "1")
	if ids(p1.docs) != "b" || ids(p2.docs) != "a" || p3.status != http.StatusNotModified {
		t.Fatalf("pages: %v / %v / %d", p1.docs, p2.docs, p3.status)
	}
	if p3.etag != p2.etag {
		t.Errorf("a 304 keeps the position: %s, then %s", p2.etag, p3.etag)
	}
	// One partition key value.
	if y := readFeed(t, c, coll, pk("y")...); ids(y.docs) != "b" {
		t.Errorf("partition y: %v", y.docs)
	}

	// All versions and deletes: the expiry of b at its instant, marked.
	clock.Advance(10 * time.Second)
	must(t, c.do("DELETE", coll+"/docs/a", nil, pk("x")...), 204)
	// (From a point in time: the service refuses to start this mode from
	// the beginning, TestAllVersionsFromBeginningRefused.)
	avad := readFeed(t, c, coll, "A-IM", "Full-Fidelity Feed", "x-ms-cosmos-changefeed-wire-format-version", "2021-09-15",
		"If-Modified-Since", time.Unix(1_700_000_000, 0).UTC().Format(http.TimeFormat))
	var ops []string
	for _, d := range avad.docs {
		md := d["metadata"].(map[string]any)
		op := md["operationType"].(string)
		if md["timeToLiveExpired"] == true {
			op += "(ttl " + md["id"].(string) + ")"
		}
		ops = append(ops, op)
	}
	if got := strings.Join(ops, ","); got != "create,create,replace,delete,delete(ttl b)" {
		t.Fatalf("all versions and deletes: %s: %v", got, avad.docs)
	}
	if md := avad.docs[4]["metadata"].(map[string]any); md["crts"] != 1_700_000_010.0 {
		t.Errorf("the expiry is dated at its instant: %v", md)
	}
	// The latest-version feed no longer shows either item.
	if lv := readFeed(t, c, coll); lv.status != http.StatusNotModified {
		t.Errorf("latest version after the deletes: %v", lv.docs)
	}

	// From a point in time: only what changed since.
	clock.Advance(time.Hour)
	must(t, c.do("POST", coll+"/docs", `{"id":"c","pk":"x"}`, pk("x")...), 201)
	since := clock.Now().Add(-time.Second).UTC().Format(http.TimeFormat)
	if s := readFeed(t, c, coll, "If-Modified-Since", since); ids(s.docs) != "c" {
		t.Errorf("from a time: %v", s.docs)
	}
	// A date past 2262 saturates: nothing changed since (it overflowed into
	// the whole feed).
	if s := readFeed(t, c, coll, "If-Modified-Since", "Fri, 31 Dec 9999 23:59:59 GMT"); s.status != http.StatusNotModified {
		t.Errorf("from year 9999: %d %v", s.status, s.docs)
	}

	// Bad requests change nothing and say what was wrong.
	for _, tc := range []struct {
		hdr  []string
		want string
	}{
		{[]string{"A-IM", "Everything"}, "A-IM"},
		{[]string{"If-None-Match", `"garbage"`}, "continuation"},
		{[]string{"If-Modified-Since", "yesterday"}, "If-Modified-Since"},
		{[]string{"A-IM", "Full-Fidelity Feed", "If-None-Match", now.etag}, "mode"},
	} {
		r := c.do("GET", coll+"/docs", nil, append([]string{"A-IM", "Incremental Feed"}, tc.hdr...)...)
		if r.status != 400 || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%v: %d %s, want 400 naming %q", tc.hdr, r.status, r.body, tc.want)
		}
	}
}

func TestChangeFeedOff(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{NoChangeFeed: true})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c"}), 201)
	r := c.do("GET", "/dbs/db/colls/c/docs", nil, "A-IM", "Incremental Feed")
	if r.status != 400 || !strings.Contains(string(r.body), "change feed") {
		t.Fatalf("a container without a feed: %d %s", r.status, r.body)
	}
	if _, err := cosmosrest.New(cosmosrest.Config{ChangeFeed: &lethe.ChangeFeedPolicy{MaxChanges: -1}}); err == nil {
		t.Error("a negative retention is accepted")
	}
}

func TestChangeFeedDurable(t *testing.T) {
	dir := t.TempDir()
	h, c := testServer(t, cosmosrest.Config{Dir: dir})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/id"}}}), 201)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"a"}`, "x-ms-documentdb-partitionkey", `["a"]`), 201)
	p := readFeed(t, c, "/dbs/db/colls/c")
	if ids(p.docs) != "a" {
		t.Fatalf("before the restart: %v", p.docs)
	}
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"b"}`, "x-ms-documentdb-partitionkey", `["b"]`), 201)
	c.srv.Close()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	_, c2 := testServer(t, cosmosrest.Config{Dir: dir})
	if q := readFeed(t, c2, "/dbs/db/colls/c", "If-None-Match", p.etag); ids(q.docs) != "b" {
		t.Fatalf("after the restart, the continuation goes on: %v", q.docs)
	}
}
