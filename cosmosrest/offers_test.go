package cosmosrest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// offerOf finds the offer of the resource whose _rid is rid, as the SDKs
// do (a query on offerResourceId), or fails; nil when there is none.
func offerOf(t *testing.T, c *client, rid string) map[string]any {
	t.Helper()
	r := must(t, c.do("POST", "/offers", map[string]any{"query": "SELECT * FROM c WHERE c.offerResourceId = '" + rid + "'"},
		"Content-Type", "application/query+json"), 200)
	found := documents(t, r, "Offers")
	switch len(found) {
	case 0:
		return nil
	case 1:
	default:
		t.Fatalf("offers of %s: %s", rid, r.body)
	}
	var offer map[string]any
	if err := json.Unmarshal(found[0], &offer); err != nil {
		t.Fatal(err)
	}
	return must(t, c.do("GET", "/"+strings.TrimSuffix(offer["_self"].(string), "/"), nil), 200).json(t)
}

// offerFigures returns an offer's content.offerThroughput and
// content.offerAutopilotSettings.maxThroughput (0 without).
func offerFigures(o map[string]any) (throughput, autoscaleMax float64) {
	content, _ := o["content"].(map[string]any)
	throughput, _ = content["offerThroughput"].(float64)
	if ap, ok := content["offerAutopilotSettings"].(map[string]any); ok {
		autoscaleMax, _ = ap["maxThroughput"].(float64)
	}
	return throughput, autoscaleMax
}

// replaceOffer puts o back with content, and returns the response.
func replaceOffer(c *client, o map[string]any, content map[string]any) response {
	put := map[string]any{}
	for k, v := range o {
		put[k] = v
	}
	put["content"] = content
	return c.do("PUT", "/"+strings.TrimSuffix(o["_self"].(string), "/"), put)
}

// TestDatabaseOffer: a database created with throughput has an offer,
// read and replaced as the SDKs do; its containers without throughput of
// their own have none and share its budget.
func TestDatabaseOffer(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{Clock: lethe.NewManualClock(time.Unix(1_700_000_000, 0))})
	db := must(t, c.do("POST", "/dbs", map[string]any{"id": "shared"}, "x-ms-offer-throughput", "400"), 201).json(t)
	a := must(t, c.do("POST", "/dbs/shared/colls", map[string]any{"id": "a"}), 201).json(t)
	must(t, c.do("POST", "/dbs/shared/colls", map[string]any{"id": "b"}), 201)
	o := offerOf(t, c, db["_rid"].(string))
	if o == nil || o["resource"] != "dbs/"+db["_rid"].(string)+"/" || o["offerVersion"] != "V2" || o["id"] != o["_rid"] {
		t.Fatalf("database offer: %v", o)
	}
	if m, ap := offerFigures(o); m != 400 || ap != 0 {
		t.Errorf("database offer: %v", o)
	}
	if offerOf(t, c, a["_rid"].(string)) != nil {
		t.Error("a container in a shared database has an offer of its own")
	}
	// The two containers share the 400 RU/s: 72 creates of 5.5 RU fit,
	// wherever they go, the 73rd does not (the clock stands still).
	for i := range 72 {
		must(t, c.do("POST", "/dbs/shared/colls/"+[]string{"a", "b"}[i%2]+"/docs", fmt.Sprintf(`{"id":"%d"}`, i)), 201)
	}
	must(t, c.do("POST", "/dbs/shared/colls/b/docs", `{"id":"over"}`), 429)

	r := must(t, replaceOffer(c, o, map[string]any{"offerThroughput": 500}), 200)
	if m, _ := offerFigures(r.json(t)); m != 500 {
		t.Errorf("replaced: %s", r.body)
	}
	for _, content := range []map[string]any{
		{"offerThroughput": 450}, {"offerThroughput": 300}, {"offerThroughput": 2_000_000}, {"offerThroughput": 0}, {},
		{"offerAutopilotSettings": map[string]any{"maxThroughput": 4000}},
	} {
		r := must(t, replaceOffer(c, o, content), 400)
		if !strings.Contains(string(r.body), "The offer should have valid throughput") && !strings.Contains(string(r.body), "x-ms-cosmos-migrate-offer-to-autopilot must be supplied") {
			t.Errorf("replace with %v: %s", content, r.body)
		}
		if m, ap := offerFigures(offerOf(t, c, db["_rid"].(string))); m != 500 || ap != 0 {
			t.Errorf("a refused replace (%v) changed the offer to %v, %v", content, m, ap)
		}
	}

	// A database without throughput has no offer.
	plain := must(t, c.do("POST", "/dbs", map[string]any{"id": "plain"}), 201).json(t)
	if offerOf(t, c, plain["_rid"].(string)) != nil {
		t.Error("a database without throughput has an offer")
	}
}

// TestAutoscaleOffer: autoscale throughput from
// x-ms-cosmos-offer-autopilot-settings, its offer's maximum read and
// replaced; offerThroughput is the throughput it scaled to, at least a
// tenth of the maximum.
func TestAutoscaleOffer(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	_, c := testServer(t, cosmosrest.Config{Clock: clock})
	createDB(t, c, "db")
	coll := must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c"}, "x-ms-cosmos-offer-autopilot-settings", `{"maxThroughput":5000}`), 201).json(t)
	o := offerOf(t, c, coll["_rid"].(string))
	if m, ap := offerFigures(o); m != 500 || ap != 5000 {
		t.Fatalf("autoscale offer: %v", o)
	}
	for i := range 200 { // 1100 RU within one second
		must(t, c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`{"id":"%d"}`, i)), 201)
	}
	if m, _ := offerFigures(offerOf(t, c, coll["_rid"].(string))); m != 1100 {
		t.Errorf("scaled to %v, want 1100", m)
	}
	clock.Advance(2 * time.Second)
	r := must(t, replaceOffer(c, o, map[string]any{"offerAutopilotSettings": map[string]any{"maxThroughput": 10000}}), 200)
	if m, ap := offerFigures(r.json(t)); m != 1000 || ap != 10000 {
		t.Errorf("replaced: %s", r.body)
	}
	for _, content := range []map[string]any{
		{"offerAutopilotSettings": map[string]any{"maxThroughput": 1500}},
		{"offerAutopilotSettings": map[string]any{"maxThroughput": 0}},
		{"offerAutopilotSettings": map[string]any{}},
		{"offerThroughput": 400},
	} {
		r := must(t, replaceOffer(c, o, content), 400)
		if !strings.Contains(string(r.body), "The offer should have valid throughput values between 1000") && !strings.Contains(string(r.body), "x-ms-cosmos-migrate-offer-to-manual-throughput must be supplied") {
			t.Errorf("replace with %v: %s", content, r.body)
		}
		if _, ap := offerFigures(offerOf(t, c, coll["_rid"].(string))); ap != 10000 {
			t.Errorf("a refused replace (%v) changed the offer", content)
		}
	}
	// Sent back as read (offerThroughput and the settings), it is replaced.
	r = must(t, replaceOffer(c, o, map[string]any{"offerThroughput": 1000, "offerAutopilotSettings": map[string]any{"maxThroughput": 4000}}), 200)
	if m, ap := offerFigures(r.json(t)); m != 400 || ap != 4000 {
		t.Errorf("replaced: %s", r.body)
	}
}

// TestThroughputHeaders: the throughput of a database or container create
// is checked as Cosmos DB checks it; a refused create makes nothing.
func TestThroughputHeaders(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	const (
		auto      = "x-ms-cosmos-offer-autopilot-settings"
		manualMsg = "between 400 and 1000000 inclusive in increments of 100"
		autoMsg   = "between 1000 and 1000000 inclusive in increments of 1000"
	)
	for i, tc := range []struct {
		hdr    []string
		status int
		msg    string // in the body of a 400
	}{
		{[]string{"x-ms-offer-throughput", "400"}, 201, ""},
		{[]string{"x-ms-offer-throughput", "1000000"}, 201, ""},
		{[]string{"x-ms-offer-throughput", "399"}, 400, manualMsg},
		{[]string{"x-ms-offer-throughput", "450"}, 400, manualMsg},
		{[]string{"x-ms-offer-throughput", "1000100"}, 400, manualMsg},
		{[]string{"x-ms-offer-throughput", "-400"}, 400, "x-ms-offer-throughput"},
		{[]string{"x-ms-offer-throughput", "many"}, 400, "x-ms-offer-throughput"},
		{[]string{auto, `{"maxThroughput":1000}`}, 201, ""},
		{[]string{auto, `{"maxThroughput":4000,"autoUpgradePolicy":{"throughputPolicy":{"incrementPercent":10}}}`}, 201, ""},
		{[]string{auto, `{"maxThroughput":999}`}, 400, autoMsg},
		{[]string{auto, `{"maxThroughput":4500}`}, 400, autoMsg},
		{[]string{auto, `{"maxThroughput":0}`}, 400, autoMsg},
		{[]string{auto, `{}`}, 400, auto},
		{[]string{auto, `4000`}, 400, auto},
		{[]string{"x-ms-offer-throughput", "400", auto, `{"maxThroughput":4000}`}, 400, "cannot both"},
	} {
		for _, path := range []string{"/dbs", "/dbs/db/colls"} {
			id := fmt.Sprintf("r%d", i)
			r := must(t, c.do("POST", path, map[string]any{"id": id}, tc.hdr...), tc.status)
			if tc.status == 400 {
				must(t, c.do("GET", path+"/"+id, nil), 404)
				if !strings.Contains(string(r.body), tc.msg) {
					t.Errorf("%s with %v: %s, want %q", path, tc.hdr, r.body, tc.msg)
				}
			}
		}
	}
}

// TestDurableDatabaseOffer: a durable database keeps its offer, as
// created and as replaced, across a restart.
func TestDurableDatabaseOffer(t *testing.T) {
	dir := t.TempDir()
	h, err := cosmosrest.New(cosmosrest.Config{Dir: dir, Sync: lethe.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	_, c := serve(t, h)
	manual := must(t, c.do("POST", "/dbs", map[string]any{"id": "manual"}, "x-ms-offer-throughput", "400"), 201).json(t)
	auto := must(t, c.do("POST", "/dbs", map[string]any{"id": "auto"}, "x-ms-cosmos-offer-autopilot-settings", `{"maxThroughput":4000}`), 201).json(t)
	must(t, c.do("POST", "/dbs", map[string]any{"id": "none"}), 201)
	must(t, replaceOffer(c, offerOf(t, c, manual["_rid"].(string)), map[string]any{"offerThroughput": 700}), 200)
	must(t, replaceOffer(c, offerOf(t, c, auto["_rid"].(string)), map[string]any{"offerAutopilotSettings": map[string]any{"maxThroughput": 6000}}), 200)
	c2 := restartFront(t, h, c, dir)
	if m, ap := offerFigures(offerOf(t, c2, manual["_rid"].(string))); m != 700 || ap != 0 {
		t.Errorf("manual offer after restart: %v, %v", m, ap)
	}
	if m, ap := offerFigures(offerOf(t, c2, auto["_rid"].(string))); m != 600 || ap != 6000 {
		t.Errorf("autoscale offer after restart: %v, %v", m, ap)
	}
	if n := len(documents(t, must(t, c2.do("GET", "/offers", nil), 200), "Offers")); n != 2 {
		t.Errorf("%d offers after restart, want 2", n)
	}
}
