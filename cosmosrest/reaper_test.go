package cosmosrest_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// reaperState reads a container's x-ms-lethe-reaper header into a map.
func reaperState(t *testing.T, c *client, coll string) map[string]float64 {
	t.Helper()
	r := must(t, c.do("GET", coll, nil), 200)
	v := r.header.Get("x-ms-lethe-reaper")
	m := map[string]float64{}
	for _, kv := range strings.Split(strings.TrimSuffix(v, ";"), ";") {
		k, num, ok := strings.Cut(kv, "=")
		f, err := strconv.ParseFloat(num, 64)
		if !ok || err != nil {
			t.Fatalf("x-ms-lethe-reaper %q: %q is not name=number", v, kv)
		}
		m[k] = f
	}
	return m
}

// TestReaperHeader: container responses carry the reaper's backlog, its
// lag behind the oldest expiry, what it purged and the RU it spent, as
// lethe's ContainerStats has them.
func TestReaperHeader(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	h, c := testServer(t, cosmosrest.Config{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	createDB(t, c, "db")
	created := must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "defaultTtl": 10, "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	if v := created.header.Get("x-ms-lethe-reaper"); v != "expiredPending=0;purgeLagMs=0;purged=0;requestCharge=0;" {
		t.Errorf("a new container: %q", v)
	}
	const coll = "/dbs/db/colls/c"
	for _, id := range []string{"a", "b", "c"} {
		must(t, c.do("POST", coll+"/docs", `{"id":"`+id+`","pk":"x"}`, "x-ms-documentdb-partitionkey", `["x"]`), 201)
	}
	must(t, c.do("POST", coll+"/docs", `{"id":"d","pk":"x","ttl":-1}`, "x-ms-documentdb-partitionkey", `["x"]`), 201)

	clock.Advance(12500 * time.Millisecond)
	got := reaperState(t, c, coll)
	if got["expiredPending"] != 3 || got["purgeLagMs"] != 2500 || got["purged"] != 0 || got["requestCharge"] != 0 {
		t.Errorf("three expired 2.5 s ago, none purged: %v", got)
	}
	if n, err := h.Purge(context.Background()); err != nil || n != 3 {
		t.Fatalf("Purge: %d, %v", n, err)
	}
	got = reaperState(t, c, coll)
	if got["expiredPending"] != 0 || got["purgeLagMs"] != 0 || got["purged"] != 3 || got["requestCharge"] <= 0 {
		t.Errorf("after the purge: %v", got)
	}
}
