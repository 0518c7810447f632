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

// faultServer serves a handler with fault rules, with a database "db" and
// a container "c" (partition key /pk) holding document "d" of key "a".
func faultServer(t *testing.T) (*cosmosrest.Faults, *client) {
	t.Helper()
	f := &cosmosrest.Faults{}
	_, c := testServer(t, cosmosrest.Config{Faults: f})
	must(t, c.do("POST", "/dbs", map[string]any{"id": "db"}), http.StatusCreated)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}, "kind": "Hash"}}), http.StatusCreated)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "d", "pk": "a"}, "x-ms-documentdb-partitionkey", `["a"]`), http.StatusCreated)
	return f, c
}

// TestFaultOperations: each kind of request is the operation type a rule
// names, and no rule for another kind fires on it.
func TestFaultOperations(t *testing.T) {
	f, c := faultServer(t)
	pk := []string{"x-ms-documentdb-partitionkey", `["a"]`}
	requests := []struct {
		op   cosmosrest.FaultOperation
		send func() response
	}{
		{cosmosrest.FaultMetadataDatabaseAccount, func() response { return c.do("GET", "/", nil) }},
		{cosmosrest.FaultMetadataContainer, func() response { return c.do("GET", "/dbs/db/colls/c", nil) }},
		{cosmosrest.FaultMetadataPartitionKeyRange, func() response { return c.do("GET", "/dbs/db/colls/c/pkranges", nil) }},
		{cosmosrest.FaultReadItem, func() response { return c.do("GET", "/dbs/db/colls/c/docs/d", nil, pk...) }},
		{cosmosrest.FaultCreateItem, func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "n", "pk": "a"}, pk...)
		}},
		{cosmosrest.FaultUpsertItem, func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "d", "pk": "a"}, append(pk, "x-ms-documentdb-is-upsert", "True")...)
		}},
		{cosmosrest.FaultReplaceItem, func() response {
			return c.do("PUT", "/dbs/db/colls/c/docs/d", map[string]any{"id": "d", "pk": "a"}, pk...)
		}},
		{cosmosrest.FaultPatchItem, func() response {
			return c.do("PATCH", "/dbs/db/colls/c/docs/d", map[string]any{"operations": []any{map[string]any{"op": "set", "path": "/x", "value": 1}}}, pk...)
		}},
		{cosmosrest.FaultQueryItem, func() response { return c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, pk...) }},
		{cosmosrest.FaultReadFeed, func() response { return c.do("GET", "/dbs/db/colls/c/docs", nil, "A-IM", "Incremental Feed") }},
		{cosmosrest.FaultBatch, func() response {
			return c.do("POST", "/dbs/db/colls/c/docs", []any{map[string]any{"operationType": "Read", "id": "d"}},
				append(pk, "x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True")...)
		}},
		{cosmosrest.FaultDeleteItem, func() response { return c.do("DELETE", "/dbs/db/colls/c/docs/d", nil, pk...) }},
	}
	for i, rq := range requests {
		t.Run(string(rq.op), func(t *testing.T) {
			f.Clear()
			if err := f.Add(cosmosrest.FaultRule{ID: "r", Condition: cosmosrest.FaultCondition{OperationType: rq.op},
				Result: cosmosrest.FaultResult{StatusCode: http.StatusServiceUnavailable, SubStatusCode: 21008}}); err != nil {
				t.Fatal(err)
			}
			// Every other kind passes (the one after, so as not to delete first).
			other := requests[(i+1)%len(requests)]
			if other.op != cosmosrest.FaultDeleteItem {
				if r := other.send(); r.header.Get("x-ms-lethe-fault") != "" {
					t.Errorf("%s fired on %s", rq.op, other.op)
				}
			}
			r := rq.send()
			if r.status != http.StatusServiceUnavailable || r.header.Get("x-ms-substatus") != "21008" || r.header.Get("x-ms-lethe-fault") != "r" ||
				!strings.Contains(string(r.body), `(lethe: injected by the fault rule \"r\")`) {
				t.Errorf("%s: %d %v %s", rq.op, r.status, r.header, r.body)
			}
			if n, _ := f.Hits("r"); n != 1 {
				t.Errorf("hits %d", n)
			}
		})
	}
}

// TestFaultConditions: a rule fires only for its database, container and
// partition key; the first rule that matches answers; a 429 carries its
// retry-after.
func TestFaultConditions(t *testing.T) {
	f, c := faultServer(t)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "d", "pk": "b"}, "x-ms-documentdb-partitionkey", `["b"]`), http.StatusCreated)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c2", "partitionKey": map[string]any{"paths": []string{"/pk"}, "kind": "Hash"}}), http.StatusCreated)
	must(t, c.do("POST", "/dbs/db/colls/c2/docs", map[string]any{"id": "d", "pk": "a"}, "x-ms-documentdb-partitionkey", `["a"]`), http.StatusCreated)
	pkA := lethe.NewPartitionKeyString("a")
	for _, r := range []cosmosrest.FaultRule{
		{ID: "throttle-a", Condition: cosmosrest.FaultCondition{Database: "db", Container: "c", PartitionKey: &pkA},
			Result: cosmosrest.FaultResult{StatusCode: 429, RetryAfter: 250 * time.Millisecond}},
		{ID: "fallback", Condition: cosmosrest.FaultCondition{Database: "db", Container: "c"},
			Result: cosmosrest.FaultResult{StatusCode: 410, SubStatusCode: 1007}},
	} {
		if err := f.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	read := func(coll, pk string) response {
		return c.do("GET", "/dbs/db/colls/"+coll+"/docs/d", nil, "x-ms-documentdb-partitionkey", pk)
	}
	r := read("c", `["a"]`)
	if r.status != 429 || r.header.Get("x-ms-retry-after-ms") != "250" || r.header.Get("x-ms-substatus") != "3200" {
		t.Errorf("a in c: %d %v", r.status, r.header)
	}
	if r := read("c", `[ "b" ]`); r.status != 410 || r.header.Get("x-ms-substatus") != "1007" {
		t.Errorf("b in c: %d %v", r.status, r.header)
	}
	must(t, read("c2", `["a"]`), http.StatusOK)
	if err := f.Add(cosmosrest.FaultRule{ID: "fallback", Result: cosmosrest.FaultResult{StatusCode: 500}}); err == nil {
		t.Error("a second rule of one id was added")
	}
	if !f.Remove("throttle-a") || f.Remove("throttle-a") {
		t.Error("Remove")
	}
	if r := read("c", `["a"]`); r.status != 410 {
		t.Errorf("after the first rule's removal: %d", r.status)
	}
	if rs := f.Rules(); len(rs) != 1 || rs[0].Rule.ID != "fallback" || rs[0].HitCount != 2 {
		t.Errorf("rules %+v", rs)
	}
}

// TestFaultControl: the control endpoint, signed with the master key,
// adds, lists, counts and removes rules.
func TestFaultControl(t *testing.T) {
	f, c := faultServer(t)
	rule := map[string]any{"id": "slow a", "condition": map[string]any{"operationType": "ReadItem", "container": "c", "partitionKey": []any{"a"}},
		"result": map[string]any{"statusCode": 429, "retryAfterMs": 7}, "hitLimit": 2}
	created := must(t, c.doAs("POST", "/_lethe/faults", "faults", "", rule), http.StatusCreated).json(t)
	if created["id"] != "slow a" || created["hitCount"] != 0.0 {
		t.Errorf("created %v", created)
	}
	if rs := f.Rules(); len(rs) != 1 || rs[0].Rule.Result.RetryAfter != 7*time.Millisecond || rs[0].Rule.Condition.PartitionKey.String() != `["a"]` {
		t.Errorf("rules %+v", rs)
	}
	for range 3 {
		c.do("GET", "/dbs/db/colls/c/docs/d", nil, "x-ms-documentdb-partitionkey", `["a"]`)
	}
	one := must(t, c.doAs("GET", "/_lethe/faults/slow%20a", "faults", "slow a", nil), http.StatusOK).json(t)
	if one["hitCount"] != 2.0 {
		t.Errorf("one rule %v", one)
	}
	var list struct{ Rules []map[string]any }
	if err := json.Unmarshal(must(t, c.doAs("GET", "/_lethe/faults", "faults", "", nil), http.StatusOK).body, &list); err != nil || len(list.Rules) != 1 {
		t.Errorf("list %+v %v", list, err)
	}
	must(t, c.doAs("DELETE", "/_lethe/faults/slow%20a", "faults", "slow a", nil), http.StatusNoContent)
	must(t, c.doAs("DELETE", "/_lethe/faults/slow%20a", "faults", "slow a", nil), http.StatusNotFound)
	must(t, c.doAs("POST", "/_lethe/faults", "faults", "", map[string]any{"id": "x", "result": map[string]any{"statusCode": 503}}), http.StatusCreated)
	must(t, c.doAs("DELETE", "/_lethe/faults", "faults", "", nil), http.StatusNoContent)
	if len(f.Rules()) != 0 {
		t.Error("DELETE left rules")
	}

	// Refused: unsigned, signed for another resource, with another key,
	// bad rules; nothing is added.
	other := &client{t: t, srv: c.srv, key: "b3RoZXIta2V5"}
	for name, r := range map[string]response{
		"wrong link":  c.doAs("POST", "/_lethe/faults", "faults", "x", rule),
		"wrong type":  c.doAs("POST", "/_lethe/faults", "docs", "", rule),
		"another key": other.doAs("POST", "/_lethe/faults", "faults", "", rule),
		"no auth":     c.doAs("POST", "/_lethe/faults", "faults", "", rule, "Authorization", ""),
	} {
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	for name, body := range map[string]any{
		"not json":     "{",
		"no id":        map[string]any{"result": map[string]any{"statusCode": 503}},
		"no result":    map[string]any{"id": "x"},
		"2xx":          map[string]any{"id": "x", "result": map[string]any{"statusCode": 200}},
		"unknown op":   map[string]any{"id": "x", "condition": map[string]any{"operationType": "Nap"}, "result": map[string]any{"statusCode": 503}},
		"bad pk":       map[string]any{"id": "x", "condition": map[string]any{"partitionKey": "a"}, "result": map[string]any{"statusCode": 503}},
		"rate":         map[string]any{"id": "x", "result": map[string]any{"statusCode": 503}, "injectionRate": 2},
		"delay":        map[string]any{"id": "x", "result": map[string]any{"delayMs": -1}},
		"long delay":   map[string]any{"id": "x", "result": map[string]any{"delayMs": 1e9}},
		"neg limit":    map[string]any{"id": "x", "result": map[string]any{"statusCode": 503}, "hitLimit": -1},
		"neg substat":  map[string]any{"id": "x", "result": map[string]any{"statusCode": 503, "subStatusCode": -1}},
		"status > 599": map[string]any{"id": "x", "result": map[string]any{"statusCode": 600}},
	} {
		if r := c.doAs("POST", "/_lethe/faults", "faults", "", body); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if len(f.Rules()) != 0 {
		t.Errorf("refused requests added %+v", f.Rules())
	}
	must(t, c.doAs("PUT", "/_lethe/faults", "faults", "", rule), http.StatusMethodNotAllowed)
	must(t, c.doAs("GET", "/_lethe/faults/a/b", "faults", "a/b", nil), http.StatusNotFound)
}

// TestFaultControlOff: without Config.Faults there is no control
// endpoint, and no rule applies.
func TestFaultControlOff(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	if r := c.doAs("POST", "/_lethe/faults", "faults", "", map[string]any{"id": "x", "result": map[string]any{"statusCode": 503}}); r.status == http.StatusCreated {
		t.Errorf("a handler without faults took a rule: %d", r.status)
	}
}
