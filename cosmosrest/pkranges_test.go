package cosmosrest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// pkRange is a partition key range as /pkranges lists it.
type pkRange struct {
	RID          string   `json:"_rid"`
	ID           string   `json:"id"`
	ETag         string   `json:"_etag"`
	MinInclusive string   `json:"minInclusive"`
	MaxExclusive string   `json:"maxExclusive"`
	Parents      []string `json:"parents"`
	Self         string   `json:"_self"`
	LSN          *uint64  `json:"_lsn"`
}

// listRanges reads a container's partition key ranges.
func listRanges(t *testing.T, c *client, coll string) []pkRange {
	t.Helper()
	r := must(t, c.do("GET", coll+"/pkranges", nil, "A-IM", "Incremental Feed"), http.StatusOK)
	var out []pkRange
	for _, d := range documents(t, r, "PartitionKeyRanges") {
		var rg pkRange
		if err := json.Unmarshal(d, &rg); err != nil {
			t.Fatal(err)
		}
		out = append(out, rg)
	}
	return out
}

// TestPartitionKeyRangeCount: a container's ranges follow its own
// throughput as the service's do (one range a 10,000 RU/s, manual or
// autoscale maximum), one without throughput of its own or without
// partition key paths has one, and RangeConfig changes both rules. The
// ranges cover the space from "" to "FF" in order, each with its own id,
// _rid and _self, no parents, the layout's _etag and _lsn, and each is
// readable by id.
func TestPartitionKeyRangeCount(t *testing.T) {
	pk := map[string]any{"paths": []string{"/pk"}}
	tests := []struct {
		name string
		cfg  cosmosrest.RangeConfig
		body map[string]any
		hdr  []string
		want int
	}{
		{"no throughput", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": pk}, nil, 1},
		{"400 RU/s", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": pk}, []string{"x-ms-offer-throughput", "400"}, 1},
		{"10,000 RU/s", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": pk}, []string{"x-ms-offer-throughput", "10000"}, 1},
		{"10,100 RU/s", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": pk}, []string{"x-ms-offer-throughput", "10100"}, 2},
		{"30,000 RU/s", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": pk}, []string{"x-ms-offer-throughput", "30000"}, 3},
		{"40,000 RU/s", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": pk}, []string{"x-ms-offer-throughput", "40000"}, 4},
		{"autoscale 50,000", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": pk}, []string{"x-ms-cosmos-offer-autopilot-settings", `{"maxThroughput":50000}`}, 5},
		{"hierarchical 40,000", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": map[string]any{"paths": []string{"/a", "/b"}, "kind": "MultiHash", "version": 2}}, []string{"x-ms-offer-throughput", "40000"}, 4},
		{"version 1 30,000", cosmosrest.RangeConfig{}, map[string]any{"partitionKey": map[string]any{"paths": []string{"/pk"}, "version": 1}}, []string{"x-ms-offer-throughput", "30000"}, 3},
		{"not partitioned 40,000", cosmosrest.RangeConfig{}, map[string]any{}, []string{"x-ms-offer-throughput", "40000"}, 1},
		{"6,000 a range", cosmosrest.RangeConfig{Throughput: 6000}, map[string]any{"partitionKey": pk}, []string{"x-ms-offer-throughput", "30000"}, 5},
		{"at least 3", cosmosrest.RangeConfig{Min: 3}, map[string]any{"partitionKey": pk}, nil, 3},
		{"at least 3, 40,000", cosmosrest.RangeConfig{Min: 3}, map[string]any{"partitionKey": pk}, []string{"x-ms-offer-throughput", "40000"}, 4},
		{"at least 3, not partitioned", cosmosrest.RangeConfig{Min: 3}, map[string]any{}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := testServer(t, cosmosrest.Config{Ranges: tt.cfg})
			createDB(t, c, "db")
			tt.body["id"] = "c"
			must(t, c.do("POST", "/dbs/db/colls", tt.body, tt.hdr...), http.StatusCreated)
			ranges := listRanges(t, c, "/dbs/db/colls/c")
			if len(ranges) != tt.want {
				t.Fatalf("%d ranges, want %d: %+v", len(ranges), tt.want, ranges)
			}
			rids := map[string]bool{}
			for i, rg := range ranges {
				lo := ""
				if i > 0 {
					lo = ranges[i-1].MaxExclusive
				}
				if rg.ID != fmt.Sprint(i) || rg.MinInclusive != lo || rg.MinInclusive >= rg.MaxExclusive || rg.Parents == nil || len(rg.Parents) != 0 ||
					rg.ETag == "" || rg.LSN == nil || rids[rg.RID] || !strings.HasSuffix(rg.Self, "/pkranges/"+strings.ReplaceAll(rg.RID, "/", "-")+"/") {
					t.Errorf("range %d: %+v", i, rg)
				}
				rids[rg.RID] = true
				var one pkRange
				if err := json.Unmarshal(must(t, c.do("GET", "/dbs/db/colls/c/pkranges/"+rg.ID, nil), http.StatusOK).body, &one); err != nil || one.MinInclusive != rg.MinInclusive {
					t.Errorf("range %s by id: %+v", rg.ID, one)
				}
			}
			if last := ranges[len(ranges)-1].MaxExclusive; last != "FF" {
				t.Errorf("the last range ends at %q", last)
			}
			must(t, c.do("GET", fmt.Sprintf("/dbs/db/colls/c/pkranges/%d", tt.want), nil), http.StatusNotFound)
		})
	}
}

// rangedServer serves a container "c" at 40,000 RU/s (4 ranges),
// partitioned by /pk, with n documents of 20 partition key values.
func rangedServer(t *testing.T, n int) (*client, []pkRange) {
	t.Helper()
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}, "version": 2}}, "x-ms-offer-throughput", "40000"), http.StatusCreated)
	for i := range n {
		pk := fmt.Sprintf("p%d", i%20)
		must(t, c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`{"id":"%d","pk":%q}`, i, pk), "x-ms-documentdb-partitionkey", `["`+pk+`"]`), http.StatusCreated)
	}
	return c, listRanges(t, c, "/dbs/db/colls/c")
}

// rangeOfKey returns the id of the range of ranges that holds the string
// partition key pk.
func rangeOfKey(t *testing.T, ranges []pkRange, pk string) string {
	t.Helper()
	key := lethe.EffectivePartitionKey(lethe.PartitionKeyDefinition{Paths: []string{"/pk"}, Version: 2}, lethe.NewPartitionKeyString(pk))
	for _, r := range ranges {
		if key >= r.MinInclusive && key < r.MaxExclusive {
			return r.ID
		}
	}
	t.Fatalf("no range holds %s", key)
	return ""
}

// TestDocumentNamesItsRange: every response about a document names the
// range its partition key lies in, with that range's session token, and
// the documents of 20 keys spread over more than one of 4 ranges.
func TestDocumentNamesItsRange(t *testing.T) {
	c, ranges := rangedServer(t, 0)
	if len(ranges) != 4 {
		t.Fatalf("%d ranges", len(ranges))
	}
	must(t, c.do("POST", "/dbs/db/colls/c/sprocs", map[string]any{"id": "s", "body": "function () { getContext().getResponse().setBody(1) }"}), http.StatusCreated)
	used := map[string]bool{}
	for i := range 20 {
		pk := fmt.Sprintf("p%d", i)
		want := rangeOfKey(t, ranges, pk)
		used[want] = true
		hdr := []string{"x-ms-documentdb-partitionkey", `["` + pk + `"]`}
		for _, r := range []response{
			must(t, c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`{"id":"d","pk":%q}`, pk), hdr...), http.StatusCreated),
			must(t, c.do("GET", "/dbs/db/colls/c/docs/d", nil, hdr...), http.StatusOK),
			must(t, c.do("PUT", "/dbs/db/colls/c/docs/d", fmt.Sprintf(`{"id":"d","pk":%q,"v":1}`, pk), hdr...), http.StatusOK),
			must(t, c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, hdr...), http.StatusOK),
			must(t, c.do("POST", "/dbs/db/colls/c/docs", []any{map[string]any{"operationType": "Read", "id": "d"}},
				append(hdr, "x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True")...), http.StatusOK),
			must(t, c.do("POST", "/dbs/db/colls/c/sprocs/s", []any{}, hdr...), http.StatusOK),
			must(t, c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`[{"operationType":"Read","id":"d","partitionKey":"[\"%s\"]"}]`, pk),
				append(bulkHeaders()[:6], "x-ms-documentdb-partitionkeyrangeid", want)...), http.StatusOK),
			must(t, c.do("DELETE", "/dbs/db/colls/c/docs/d", nil, hdr...), http.StatusNoContent),
		} {
			if got := r.header.Get("x-ms-documentdb-partitionkeyrangeid"); got != want {
				t.Errorf("key %s: range %q, want %q", pk, got, want)
			}
			if tok := r.header.Get("x-ms-session-token"); !strings.HasPrefix(tok, want+":-1#") {
				t.Errorf("key %s: session token %q, not of range %s", pk, tok, want)
			}
		}
	}
	if len(used) < 2 {
		t.Errorf("20 keys in %d of 4 ranges", len(used))
	}
	// A read feed of the whole container names no range, and has a
	// session token for each.
	r := must(t, c.do("GET", "/dbs/db/colls/c/docs", nil), http.StatusOK)
	if tok := r.header.Get("x-ms-session-token"); strings.Count(tok, ",") != 3 || r.header.Get("x-ms-documentdb-partitionkeyrangeid") != "" {
		t.Errorf("the whole container: range %q, session token %q", r.header.Get("x-ms-documentdb-partitionkeyrangeid"), tok)
	}
}

// docIDsAndKeys reads a feed's documents' ids and partition keys (of the
// document, or of an all-versions change's current or previous version).
func docIDsAndKeys(t *testing.T, r response) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range documents(t, r, "Documents") {
		var doc struct {
			ID, PK            string
			Current, Previous *struct{ ID, PK string }
		}
		if err := json.Unmarshal(d, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Current != nil && doc.Current.ID != "" {
			doc.ID, doc.PK = doc.Current.ID, doc.Current.PK
		} else if doc.Previous != nil {
			doc.ID, doc.PK = doc.Previous.ID, doc.Previous.PK
		}
		if _, dup := out[doc.ID]; dup {
			t.Errorf("document %s twice in one page", doc.ID)
		}
		out[doc.ID] = doc.PK
	}
	return out
}

// TestQueryByRange: a query naming a range reads that range's documents
// only, and x-ms-start-epk and x-ms-end-epk narrow it to a part of the
// range; the ranges' answers together hold every document exactly once.
func TestQueryByRange(t *testing.T) {
	c, ranges := rangedServer(t, 200)
	seen := map[string]int{}
	for _, rg := range ranges {
		r := must(t, c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", rg.ID, "x-ms-max-item-count", "-1"), http.StatusOK)
		if got := r.header.Get("x-ms-documentdb-partitionkeyrangeid"); got != rg.ID {
			t.Errorf("range %s answered as %q", rg.ID, got)
		}
		whole := docIDsAndKeys(t, r)
		for id, pk := range whole {
			seen[id]++
			if got := rangeOfKey(t, ranges, pk); got != rg.ID {
				t.Errorf("document %s of range %s in range %s's answer", id, got, rg.ID)
			}
		}
		// Halves of the range, by effective partition key.
		mid := rg.MinInclusive + "8"
		if rg.MinInclusive == "" {
			mid = "08"
		}
		halves := map[string]string{}
		for _, h := range [][2]string{{rg.MinInclusive, mid}, {mid, rg.MaxExclusive}} {
			r := must(t, c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", rg.ID,
				"x-ms-start-epk", h[0], "x-ms-end-epk", h[1], "x-ms-read-key-type", "EffectivePartitionKeyRange", "x-ms-max-item-count", "-1"), http.StatusOK)
			for id, pk := range docIDsAndKeys(t, r) {
				if _, dup := halves[id]; dup {
					t.Errorf("document %s in both halves of range %s", id, rg.ID)
				}
				halves[id] = pk
			}
		}
		if len(halves) != len(whole) {
			t.Errorf("range %s: %d documents, its halves %d", rg.ID, len(whole), len(halves))
		}
	}
	if len(seen) != 200 {
		t.Errorf("the ranges hold %d of 200 documents", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("document %s in %d ranges", id, n)
		}
	}
}

// TestChangeFeedByRange: the change feed of a range, in both modes, holds
// the changes of its documents only, names the range, and the ranges'
// feeds together hold every change once.
func TestChangeFeedByRange(t *testing.T) {
	c, ranges := rangedServer(t, 0)
	const coll = "/dbs/db/colls/c"
	// Start the all-versions feed of each range now, before the writes.
	starts := map[string]string{}
	for _, rg := range ranges {
		r := c.do("GET", coll+"/docs", nil, "A-IM", "Full-Fidelity Feed", "If-None-Match", "*", "x-ms-documentdb-partitionkeyrangeid", rg.ID)
		if r.status != http.StatusNotModified {
			t.Fatalf("range %s from now: %d %s", rg.ID, r.status, r.body)
		}
		starts[rg.ID] = r.header.Get("etag")
	}
	for i := range 100 {
		pk := fmt.Sprintf("p%d", i%20)
		must(t, c.do("POST", coll+"/docs", fmt.Sprintf(`{"id":"%d","pk":%q}`, i, pk), "x-ms-documentdb-partitionkey", `["`+pk+`"]`), http.StatusCreated)
	}
	for _, mode := range []struct{ aim, start string }{{"Incremental Feed", ""}, {"Full-Fidelity Feed", "start"}} {
		seen := map[string]int{}
		for _, rg := range ranges {
			hdr := []string{"A-IM", mode.aim, "x-ms-documentdb-partitionkeyrangeid", rg.ID, "x-ms-max-item-count", "-1"}
			if mode.start != "" {
				hdr = append(hdr, "If-None-Match", starts[rg.ID], "x-ms-cosmos-changefeed-wire-format-version", "2021-09-15")
			}
			r := c.do("GET", coll+"/docs", nil, hdr...)
			if r.status == http.StatusNotModified {
				continue
			}
			must(t, r, http.StatusOK)
			if got := r.header.Get("x-ms-documentdb-partitionkeyrangeid"); got != rg.ID {
				t.Errorf("%s: range %s answered as %q", mode.aim, rg.ID, got)
			}
			for id, pk := range docIDsAndKeys(t, r) {
				seen[id]++
				if got := rangeOfKey(t, ranges, pk); got != rg.ID {
					t.Errorf("%s: document %s of range %s in range %s's feed", mode.aim, id, got, rg.ID)
				}
			}
		}
		if len(seen) != 100 {
			t.Errorf("%s: the ranges' feeds hold %d of 100 documents", mode.aim, len(seen))
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s: document %s in %d ranges' feeds", mode.aim, id, n)
			}
		}
	}
}

// TestPartitionKeyRangeGone: a query or change feed naming a range the
// container does not have is 410 with substatus 1002, as after a split;
// the SDKs' "{collection rid},{range id}" form names a range too; an
// effective partition key range outside the named range is a 400.
func TestPartitionKeyRangeGone(t *testing.T) {
	c, ranges := rangedServer(t, 10)
	const coll = "/dbs/db/colls/c"
	for _, r := range []response{
		c.query(coll, "SELECT * FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", "4"),
		c.do("GET", coll+"/docs", nil, "x-ms-documentdb-partitionkeyrangeid", "9"),
		c.do("GET", coll+"/docs", nil, "A-IM", "Incremental Feed", "x-ms-documentdb-partitionkeyrangeid", "17"),
	} {
		if r.status != http.StatusGone || r.header.Get("x-ms-substatus") != "1002" || !strings.Contains(string(r.body), "partition key range") {
			t.Errorf("%d (substatus %s) %s, want 410/1002", r.status, r.header.Get("x-ms-substatus"), r.body)
		}
	}
	r := must(t, c.query(coll, "SELECT * FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", "rZ5XAMotFp8=,2"), http.StatusOK)
	if got := r.header.Get("x-ms-documentdb-partitionkeyrangeid"); got != "2" {
		t.Errorf("the rid form named range %q", got)
	}
	r = c.query(coll, "SELECT * FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", "0", "x-ms-start-epk", ranges[1].MinInclusive, "x-ms-end-epk", ranges[1].MaxExclusive)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "x-ms-start-epk") {
		t.Errorf("an effective partition key range outside its range: %d %s", r.status, r.body)
	}
}

// TestAllVersionsFromBeginningRefused: the all-versions-and-deletes feed
// does not start from the beginning, as the service's (400, "You must
// read the change feed from within the retention period."); it starts
// from now or from a point in time, and the latest-version feed from the
// beginning.
func TestAllVersionsFromBeginningRefused(t *testing.T) {
	c, ranges := rangedServer(t, 3)
	const coll = "/dbs/db/colls/c"
	avad := []string{"A-IM", "Full-Fidelity Feed", "x-ms-cosmos-changefeed-wire-format-version", "2021-09-15"}
	for _, hdr := range [][]string{nil, {"x-ms-documentdb-partitionkeyrangeid", ranges[0].ID}, {"x-ms-documentdb-partitionkey", `["p1"]`}} {
		r := c.do("GET", coll+"/docs", nil, append(slices.Clone(avad), hdr...)...)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "You must read the change feed from within the retention period.") {
			t.Errorf("%v from the beginning: %d %s", hdr, r.status, r.body)
		}
	}
	if r := c.do("GET", coll+"/docs", nil, append(slices.Clone(avad), "If-None-Match", "*")...); r.status != http.StatusNotModified {
		t.Errorf("from now: %d %s", r.status, r.body)
	}
	if r := c.do("GET", coll+"/docs", nil, append(slices.Clone(avad), "If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT")...); r.status != http.StatusOK {
		t.Errorf("from a point in time: %d %s", r.status, r.body)
	}
	if r := c.do("GET", coll+"/docs", nil, "A-IM", "Incremental Feed"); r.status != http.StatusOK {
		t.Errorf("latest version from the beginning: %d %s", r.status, r.body)
	}
}

// TestRangeConfigRefused: a negative throughput a range, or a minimum
// below 0 or above 1024, is refused by New.
func TestRangeConfigRefused(t *testing.T) {
	for _, rc := range []cosmosrest.RangeConfig{{Throughput: -1}, {Min: -1}, {Min: 1025}} {
		if _, err := cosmosrest.New(cosmosrest.Config{Ranges: rc}); err == nil || !strings.Contains(err.Error(), "range") {
			t.Errorf("%+v: %v", rc, err)
		}
	}
	h, err := cosmosrest.New(cosmosrest.Config{Ranges: cosmosrest.RangeConfig{Min: 1024, Throughput: 400}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
}
