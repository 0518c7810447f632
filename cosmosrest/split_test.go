package cosmosrest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// split sends a signed POST /_lethe/split.
func split(c *client, db, coll, rangeID string) response {
	c.t.Helper()
	return c.doAs("POST", "/_lethe/split", "split", "", map[string]string{"database": db, "container": coll, "range": rangeID})
}

// queryPages reads every page of a query over a range (or part of one,
// lo and hi), from the continuation token, and returns the ids.
func queryPages(t *testing.T, c *client, rangeID, lo, hi, token string) []string {
	t.Helper()
	var ids []string
	for {
		hdr := []string{"x-ms-documentdb-partitionkeyrangeid", rangeID, "x-ms-max-item-count", "7", "x-ms-continuation", token}
		if lo != "" || hi != "" {
			hdr = append(hdr, "x-ms-start-epk", lo, "x-ms-end-epk", hi)
		}
		r := must(t, c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, hdr...), http.StatusOK)
		for id := range docIDsAndKeys(t, r) {
			ids = append(ids, id)
		}
		if token = r.header.Get("x-ms-continuation"); token == "" {
			return ids
		}
	}
}

// feedPages reads a range's change feed from etag until it has caught up,
// and returns the ids.
func feedPages(t *testing.T, c *client, rangeID, etag string) []string {
	t.Helper()
	var ids []string
	for {
		r := c.do("GET", "/dbs/db/colls/c/docs", nil, "A-IM", "Incremental Feed", "x-ms-documentdb-partitionkeyrangeid", rangeID,
			"If-None-Match", etag, "x-ms-max-item-count", "7")
		if r.status == http.StatusNotModified {
			return ids
		}
		must(t, r, http.StatusOK)
		for id := range docIDsAndKeys(t, r) {
			ids = append(ids, id)
		}
		etag = r.header.Get("etag")
	}
}

// exactlyOnce reports the ids of want missing from got or in it twice.
func exactlyOnce(t *testing.T, what string, got, want []string) {
	t.Helper()
	count := map[string]int{}
	for _, id := range got {
		count[id]++
	}
	for _, id := range want {
		if count[id] != 1 {
			t.Errorf("%s: item %s seen %d times", what, id, count[id])
		}
		delete(count, id)
	}
	for id := range count {
		t.Errorf("%s: item %s is not the range's", what, id)
	}
}

// TestSplit: a split replaces a range by two children that divide it and
// name it as their parent; the range is gone (410/1002) for queries and
// change feeds; a query's continuation and a change feed's etag taken
// from it before the split resume over the children (as the SDKs resume
// them, with the children's ids and the range's bounds), and together
// the children return every item of the range once, the writes after the
// split included.
func TestSplit(t *testing.T) {
	c, ranges := rangedServer(t, 200)
	parent := ranges[0]
	var want []string
	for i := range 200 {
		if rangeOfKey(t, ranges, fmt.Sprintf("p%d", i%20)) == parent.ID {
			want = append(want, fmt.Sprint(i))
		}
	}
	if len(want) == 0 {
		t.Fatal("range 0 holds no item")
	}
	first := must(t, c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", parent.ID, "x-ms-max-item-count", "3"), http.StatusOK)
	token := first.header.Get("x-ms-continuation")
	feed := must(t, c.do("GET", "/dbs/db/colls/c/docs", nil, "A-IM", "Incremental Feed", "x-ms-documentdb-partitionkeyrangeid", parent.ID, "x-ms-max-item-count", "3"), http.StatusOK)
	etagBefore := must(t, c.do("GET", "/dbs/db/colls/c/pkranges", nil), http.StatusOK).header.Get("etag")

	r := must(t, split(c, "db", "c", parent.ID), http.StatusOK)
	var answer struct{ Children []string }
	if err := json.Unmarshal(r.body, &answer); err != nil || !slices.Equal(answer.Children, []string{"4", "5"}) {
		t.Fatalf("split: %s", r.body)
	}
	after := listRanges(t, c, "/dbs/db/colls/c")
	if len(after) != 5 {
		t.Fatalf("%d ranges after the split: %+v", len(after), after)
	}
	a, b := after[0], after[1]
	if a.ID != "4" || b.ID != "5" || a.MinInclusive != parent.MinInclusive || a.MaxExclusive != b.MinInclusive || b.MaxExclusive != parent.MaxExclusive ||
		!slices.Equal(a.Parents, []string{"0"}) || !slices.Equal(b.Parents, []string{"0"}) {
		t.Fatalf("children: %+v %+v of %+v", a, b, parent)
	}
	if got := must(t, c.do("GET", "/dbs/db/colls/c/pkranges", nil), http.StatusOK).header.Get("etag"); got == etagBefore {
		t.Errorf("the ranges' etag %s did not change", got)
	}
	must(t, c.do("GET", "/dbs/db/colls/c/pkranges", nil, "A-IM", "Incremental Feed", "If-None-Match", etagBefore), http.StatusOK)

	// The parent is gone.
	for _, r := range []response{
		c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", parent.ID),
		c.do("GET", "/dbs/db/colls/c/docs", nil, "A-IM", "Incremental Feed", "x-ms-documentdb-partitionkeyrangeid", parent.ID),
	} {
		if r.status != http.StatusGone || r.header.Get("x-ms-substatus") != "1002" {
			t.Errorf("the parent after its split: %d/%s %s", r.status, r.header.Get("x-ms-substatus"), r.body)
		}
	}

	// Writes after the split, in the parent's space.
	for i := 200; i < 240; i++ {
		pk := fmt.Sprintf("p%d", i%20)
		must(t, c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`{"id":"%d","pk":%q}`, i, pk), "x-ms-documentdb-partitionkey", `["`+pk+`"]`), http.StatusCreated)
		if rangeOfKey(t, ranges, pk) == parent.ID {
			want = append(want, fmt.Sprint(i))
		}
	}

	// The query resumes over the children, with the parent's bounds (as
	// the JavaScript SDK sends them) and without (as a child's own query).
	var got []string
	for id := range docIDsAndKeys(t, first) {
		got = append(got, id)
	}
	for _, ch := range []pkRange{a, b} {
		got = append(got, queryPages(t, c, ch.ID, parent.MinInclusive, parent.MaxExclusive, token)...)
	}
	// The query's first page was read before the writes after the split;
	// those the continuation reaches come after the first page's items.
	exactlyOnce(t, "query resumed over the children", got, want)

	var changes []string
	for id := range docIDsAndKeys(t, feed) {
		changes = append(changes, id)
	}
	for _, ch := range []pkRange{a, b} {
		changes = append(changes, feedPages(t, c, ch.ID, feed.header.Get("etag"))...)
	}
	exactlyOnce(t, "change feed resumed over the children", changes, want)

	// A child splits again: its children name both ancestors.
	r = must(t, split(c, "db", "c", "5"), http.StatusOK)
	if err := json.Unmarshal(r.body, &answer); err != nil || !slices.Equal(answer.Children, []string{"6", "7"}) {
		t.Fatalf("second split: %s", r.body)
	}
	for _, rg := range listRanges(t, c, "/dbs/db/colls/c") {
		if (rg.ID == "6" || rg.ID == "7") && !slices.Equal(rg.Parents, []string{"0", "5"}) {
			t.Errorf("range %s: parents %v", rg.ID, rg.Parents)
		}
	}
}

// TestSplitRefused: a split of a database, container or range that does
// not exist is 404, of a bad body 400, unsigned 401, and not a POST 405;
// the Go call wraps lethe.ErrNotFound, or ErrRangeNotSplittable for a
// range of one point.
func TestSplitRefused(t *testing.T) {
	h, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), http.StatusCreated)
	for _, tc := range []struct {
		r    response
		want int
	}{
		{split(c, "none", "c", "0"), http.StatusNotFound},
		{split(c, "db", "none", "0"), http.StatusNotFound},
		{split(c, "db", "c", "3"), http.StatusNotFound},
		{c.doAs("POST", "/_lethe/split", "split", "", `{"database":"db"}`), http.StatusBadRequest},
		{c.doAs("POST", "/_lethe/split", "split", "", `[]`), http.StatusBadRequest},
		{c.doAs("POST", "/_lethe/split", "split", "", nil, "Authorization", ""), http.StatusUnauthorized},
		{c.doAs("GET", "/_lethe/split", "split", "", nil), http.StatusMethodNotAllowed},
		{c.doAs("POST", "/_lethe/split/x", "split", "", nil), http.StatusNotFound},
	} {
		if tc.r.status != tc.want {
			t.Errorf("%d %s, want %d", tc.r.status, tc.r.body, tc.want)
		}
	}
	if _, err := h.SplitPartitionKeyRange("db", "c", "9"); !errors.Is(err, lethe.ErrNotFound) {
		t.Errorf("a missing range: %v", err)
	}
	// Split the first range until it is one point wide.
	id := "0"
	for range 70 {
		children, err := h.SplitPartitionKeyRange("db", "c", id)
		if errors.Is(err, cosmosrest.ErrRangeNotSplittable) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		id = children[0]
	}
	t.Error("a range split 70 times is still splittable")
}

// BenchmarkSplitPartitionKeyRange: a split of one range of a container
// of 1,024 ranges, the most a container has: metadata only, whatever the
// container holds (it reads no item).
func BenchmarkSplitPartitionKeyRange(b *testing.B) {
	benchmarkSplit(b, cosmosrest.Config{Ranges: cosmosrest.RangeConfig{Min: 1024}})
}

// BenchmarkSplitPartitionKeyRangeDir: the same split with Config.Dir,
// which writes the container's new layout (1,025 ranges) to the
// database's directory, synced, before it is seen.
func BenchmarkSplitPartitionKeyRangeDir(b *testing.B) {
	benchmarkSplit(b, cosmosrest.Config{Dir: b.TempDir(), Ranges: cosmosrest.RangeConfig{Min: 1024}})
}

// benchmarkSplit splits one range after another of containers of a
// front of cfg, a new container every 1,024 splits.
func benchmarkSplit(b *testing.B, cfg cosmosrest.Config) {
	h, err := cosmosrest.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	create := func(path, typ, link, body string) {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		date := time.Now().UTC().Format(http.TimeFormat)
		auth, err := cosmosrest.SignRequest(cosmosrest.EmulatorKey, "POST", typ, link, date)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("x-ms-date", date)
		req.Header.Set("Authorization", auth)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusCreated {
			b.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
	}
	create("/dbs", "dbs", "", `{"id":"db"}`)
	n, coll := 0, ""
	b.ReportAllocs()
	for b.Loop() {
		if n%1024 == 0 {
			b.StopTimer()
			coll = fmt.Sprint("c", n)
			create("/dbs/db/colls", "colls", "dbs/db", `{"id":"`+coll+`","partitionKey":{"paths":["/pk"]}}`)
			b.StartTimer()
		}
		if _, err := h.SplitPartitionKeyRange("db", coll, fmt.Sprint(n%1024)); err != nil {
			b.Fatal(err)
		}
		n++
	}
}

// TestSplitConcurrent: splits while requests run (point reads, queries of
// ranges, the ranges' listing) are safe under -race: every request is
// answered 200, or 410/1002 for a range split meanwhile.
func TestSplitConcurrent(t *testing.T) {
	h, c := testServer(t, cosmosrest.Config{Ranges: cosmosrest.RangeConfig{Min: 2}})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), http.StatusCreated)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"a","pk":"a"}`, "x-ms-documentdb-partitionkey", `["a"]`), http.StatusCreated)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []int
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				var status int
				switch (g + i) % 3 {
				case 0:
					status = c.do("GET", "/dbs/db/colls/c/docs/a", nil, "x-ms-documentdb-partitionkey", `["a"]`).status
				case 1:
					status = c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", fmt.Sprint(i%8)).status
				default:
					status = c.do("GET", "/dbs/db/colls/c/pkranges", nil).status
				}
				if status != http.StatusOK && status != http.StatusGone {
					mu.Lock()
					bad = append(bad, status)
					mu.Unlock()
					return
				}
			}
		})
	}
	for _, id := range []string{"0", "1", "2", "3", "4", "5"} {
		if _, err := h.SplitPartitionKeyRange("db", "c", id); err != nil {
			t.Error(err)
		}
	}
	close(done)
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("statuses during the splits: %v", bad)
	}
}

// TestRangesBySelf: every partition key range is read by its _self, the
// path of its resource ids, before and after splits; a range keeps its
// _rid when splits change the layout around it, a child's differs from
// its parent's, and the _self of a range gone is 404.
func TestRangesBySelf(t *testing.T) {
	c, before := rangedServer(t, 0)
	must(t, split(c, "db", "c", "0"), http.StatusOK)
	must(t, split(c, "db", "c", "5"), http.StatusOK)
	after := listRanges(t, c, "/dbs/db/colls/c")
	rids := map[string]string{}
	for _, rg := range before {
		rids[rg.ID] = rg.RID
	}
	seen := map[string]bool{}
	for _, rg := range after {
		if old, ok := rids[rg.ID]; ok && old != rg.RID {
			t.Errorf("range %s: _rid %s after the splits, %s before", rg.ID, rg.RID, old)
		}
		if seen[rg.RID] {
			t.Errorf("range %s: _rid %s is another range's", rg.ID, rg.RID)
		}
		seen[rg.RID] = true
		var got pkRange
		if err := json.Unmarshal(must(t, c.doRID("GET", "/"+rg.Self, nil), http.StatusOK).body, &got); err != nil ||
			got.ID != rg.ID || got.RID != rg.RID || got.MinInclusive != rg.MinInclusive {
			t.Errorf("range %s by its _self %s: %+v", rg.ID, rg.Self, got)
		}
	}
	if seen[before[0].RID] {
		t.Errorf("a child has the _rid of its parent, %s", before[0].RID)
	}
	must(t, c.doRID("GET", "/"+before[0].Self, nil), http.StatusNotFound)
}

// TestThroughputRaiseSplits: a container's offer replaced upward splits
// its ranges, widest first, until it has the count its new throughput
// gives at creation (manual or autoscale maximum, by the configured
// throughput a range); lowered, it keeps them, as the service merges
// none; a container without partition key paths keeps its one range.
func TestThroughputRaiseSplits(t *testing.T) {
	pk := map[string]any{"paths": []string{"/pk"}}
	manual := func(n int) map[string]any { return map[string]any{"offerThroughput": n} }
	auto := func(n int) map[string]any {
		return map[string]any{"offerThroughput": n / 10, "offerAutopilotSettings": map[string]any{"maxThroughput": n}}
	}
	tests := []struct {
		name  string
		cfg   cosmosrest.RangeConfig
		body  map[string]any
		hdr   []string
		steps []map[string]any
		want  [][]string // the ids after each step
	}{
		{"manual", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": pk}, []string{"x-ms-offer-throughput", "10000"},
			[]map[string]any{manual(20000), manual(40000), manual(50000), manual(10000), manual(50000)},
			[][]string{{"1", "2"}, {"3", "4", "5", "6"}, {"7", "8", "4", "5", "6"}, {"7", "8", "4", "5", "6"}, {"7", "8", "4", "5", "6"}}},
		{"from 3", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": pk}, []string{"x-ms-offer-throughput", "30000"},
			[]map[string]any{manual(30100), manual(60000)},
			[][]string{{"3", "4", "1", "2"}, {"3", "4", "5", "6", "7", "8"}}},
		{"autoscale", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": pk}, []string{"x-ms-cosmos-offer-autopilot-settings", `{"maxThroughput":10000}`},
			[]map[string]any{auto(30000)},
			[][]string{{"3", "4", "2"}}},
		{"6,000 a range", cosmosrest.RangeConfig{Throughput: 6000}, map[string]any{"partitionKey": pk}, []string{"x-ms-offer-throughput", "6000"},
			[]map[string]any{manual(12000), manual(30000)},
			[][]string{{"1", "2"}, {"7", "8", "4", "5", "6"}}},
		{"hierarchical", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": map[string]any{"paths": []string{"/a", "/b"}, "kind": "MultiHash", "version": 2}}, []string{"x-ms-offer-throughput", "10000"},
			[]map[string]any{manual(20000)},
			[][]string{{"1", "2"}}},
		{"not partitioned", cosmosrest.RangeConfig{}, map[string]any{}, []string{"x-ms-offer-throughput", "10000"},
			[]map[string]any{manual(40000)},
			[][]string{{"0"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := testServer(t, cosmosrest.Config{Ranges: tt.cfg})
			createDB(t, c, "db")
			tt.body["id"] = "c"
			created := must(t, c.do("POST", "/dbs/db/colls", tt.body, tt.hdr...), http.StatusCreated).json(t)
			for i, content := range tt.steps {
				must(t, replaceOffer(c, offerOf(t, c, created["_rid"].(string)), content), http.StatusOK)
				ranges := listRanges(t, c, "/dbs/db/colls/c")
				if ids := rangeIDs(ranges); !slices.Equal(ids, tt.want[i]) {
					t.Fatalf("after %v: the ranges %v, want %v", content, ids, tt.want[i])
				}
				lo := ""
				for _, r := range ranges {
					if r.MinInclusive != lo || r.MaxExclusive <= lo {
						t.Errorf("after %v: range %s is [%s, %s) after %s", content, r.ID, r.MinInclusive, r.MaxExclusive, lo)
					}
					lo = r.MaxExclusive
				}
				if lo != "FF" {
					t.Errorf("after %v: the ranges end at %s", content, lo)
				}
			}
		})
	}
}

// TestThroughputRangesSurviveRestart: with Config.Dir the ranges a raise
// of throughput split are the same after a restart, and so after a raise
// then a lowering: not the count of the throughput the container has.
func TestThroughputRangesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	h, c := durableFront(t, dir, cosmosrest.Config{})
	createDB(t, c, "db")
	created := must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}, "x-ms-offer-throughput", "10000"), http.StatusCreated).json(t)
	must(t, replaceOffer(c, offerOf(t, c, created["_rid"].(string)), map[string]any{"offerThroughput": 30000}), http.StatusOK)
	must(t, replaceOffer(c, offerOf(t, c, created["_rid"].(string)), map[string]any{"offerThroughput": 10000}), http.StatusOK)
	before := listRanges(t, c, "/dbs/db/colls/c")
	if len(before) != 3 {
		t.Fatalf("raised to 30,000 RU/s, then lowered, the container has the ranges %v, want 3", rangeIDs(before))
	}
	_, c = reopen(t, h, c, dir, cosmosrest.Config{})
	if after := listRanges(t, c, "/dbs/db/colls/c"); !reflect.DeepEqual(after, before) {
		t.Errorf("after a restart the ranges are %v, not %v", rangeIDs(after), rangeIDs(before))
	}
}
