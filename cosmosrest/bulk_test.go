package cosmosrest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// bulkHeaders are the headers of a bulk request as @azure/cosmos sends it:
// a batch request, not atomic, on partition key range 0.
func bulkHeaders(more ...string) []string {
	return append([]string{"x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "False",
		"x-ms-cosmos-batch-continue-on-error", "True", "x-ms-documentdb-partitionkeyrangeid", "0"}, more...)
}

func TestBulk(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	_, c := testServer(t, cosmosrest.Config{Clock: clock})
	createDBColl(t, c)
	coll := "/dbs/db/colls/c"
	ada, bob := []string{"x-ms-documentdb-partitionkey", `["ada"]`}, []string{"x-ms-documentdb-partitionkey", `["bob"]`}
	must(t, c.do("POST", coll+"/docs", `{"id":"1","pk":"ada","n":1}`, ada...), 201)
	etag := must(t, c.do("GET", coll+"/docs/1", nil, ada...), 200).json(t)["_etag"].(string)

	// Operations on several partition keys, some failing: each runs on
	// its own, in order, and a failure neither stops nor undoes the rest.
	body := `[
		{"operationType":"Create","partitionKey":"[\"ada\"]","resourceBody":{"id":"2","pk":"ada"}},
		{"operationType":"Create","partitionKey":"[\"ada\"]","resourceBody":{"id":"1","pk":"ada"}},
		{"operationType":"Upsert","partitionKey":"[\"bob\"]","resourceBody":{"id":"1","pk":"bob"}},
		{"operationType":"Read","partitionKey":"[\"ada\"]","id":"1"},
		{"operationType":"Replace","partitionKey":"[\"ada\"]","id":"1","ifMatch":"\"0000000000000000\"","resourceBody":{"id":"1","pk":"ada","n":2}},
		{"operationType":"Patch","partitionKey":"[\"ada\"]","id":"1","ifMatch":` + fmt.Sprintf("%q", etag) + `,"resourceBody":{"operations":[{"op":"incr","path":"/n","value":5}]}},
		{"operationType":"Delete","partitionKey":"[\"bob\"]","id":"nothing"},
		{"operationType":"Create","partitionKey":"[\"bob\"]","resourceBody":{"id":"3","pk":"ada"}},
		{"operationType":"Delete","partitionKey":"[\"ada\"]","id":"2"}
	]`
	r := must(t, c.do("POST", coll+"/docs", body, bulkHeaders()...), 207)
	res := batchResults(t, r)
	if got, want := statuses(res), "201 409 201 200 412 200 404 400 204"; got != want {
		t.Fatalf("statuses %s, want %s: %s", got, want, r.body)
	}
	var sum float64
	for i, x := range res {
		sum += x["requestCharge"].(float64)
		if x["statusCode"].(float64) < 400 && x["requestCharge"].(float64) <= 0 {
			t.Errorf("operation %d: no charge", i)
		}
		if x["statusCode"].(float64) >= 400 && x["message"] == nil {
			t.Errorf("operation %d: a failure without a message", i)
		}
	}
	if got := r.header.Get("x-ms-request-charge"); got != fmt.Sprint(sum) {
		t.Errorf("request charge %s, want the operations' sum %v", got, sum)
	}
	read := res[3]["resourceBody"].(map[string]any)
	if read["id"] != "1" || read["_rid"] == nil || read["_self"] == nil || read["_etag"] != etag || res[3]["eTag"] != etag {
		t.Errorf("read result: %v", res[3])
	}
	if res[5]["resourceBody"].(map[string]any)["n"] != 6.0 {
		t.Errorf("patch result: %v", res[5])
	}
	if !strings.Contains(res[7]["message"].(string), "PartitionKey extracted from document") {
		t.Errorf("a document whose partition key is not the operation's: %v", res[7])
	}
	// What succeeded is there; what failed changed nothing.
	must(t, c.do("GET", coll+"/docs/2", nil, ada...), 404) // created, then deleted
	must(t, c.do("GET", coll+"/docs/1", nil, bob...), 200)
	must(t, c.do("GET", coll+"/docs/3", nil, bob...), 404)
	must(t, c.do("GET", coll+"/docs/3", nil, ada...), 404)
	if n := must(t, c.do("GET", coll+"/docs/1", nil, ada...), 200).json(t)["n"]; n != 6.0 {
		t.Errorf("n = %v after the failed replace and the patch, want 6", n)
	}

	// All succeeded: 200.
	r = must(t, c.do("POST", coll+"/docs", `[{"operationType":"Create","partitionKey":"[\"ada\"]","resourceBody":{"id":"4","pk":"ada"}}]`, bulkHeaders()...), 200)
	if got := statuses(batchResults(t, r)); got != "201" {
		t.Errorf("statuses %s", got)
	}

	// Without continue-on-error, the first failure stops the rest: 424.
	r = must(t, c.do("POST", coll+"/docs", `[
		{"operationType":"Create","partitionKey":"[\"ada\"]","resourceBody":{"id":"5","pk":"ada"}},
		{"operationType":"Create","partitionKey":"[\"ada\"]","resourceBody":{"id":"5","pk":"ada"}},
		{"operationType":"Create","partitionKey":"[\"ada\"]","resourceBody":{"id":"6","pk":"ada"}}]`,
		bulkHeaders("x-ms-cosmos-batch-continue-on-error", "False")...), 207)
	if got := statuses(batchResults(t, r)); got != "201 409 424" {
		t.Errorf("statuses without continue-on-error: %s", got)
	}
	must(t, c.do("GET", coll+"/docs/6", nil, ada...), 404)

	// Prefer: return=minimal leaves the documents out of write results.
	r = must(t, c.do("POST", coll+"/docs", `[{"operationType":"Upsert","partitionKey":"[\"ada\"]","resourceBody":{"id":"7","pk":"ada"}}]`, bulkHeaders("Prefer", "return=minimal")...), 200)
	if x := batchResults(t, r)[0]; x["resourceBody"] != nil || x["eTag"] == nil {
		t.Errorf("minimal result: %v", x)
	}

	// An operation without a partition key on a partitioned container
	// fails alone.
	r = must(t, c.do("POST", coll+"/docs", `[{"operationType":"Create","resourceBody":{"id":"8","pk":"ada"}},{"operationType":"Create","partitionKey":"[\"ada\"]","resourceBody":{"id":"9","pk":"ada"}}]`, bulkHeaders()...), 207)
	if got := statuses(batchResults(t, r)); got != "400 201" {
		t.Errorf("statuses: %s", got)
	}

	// Malformed requests are refused whole, and change nothing.
	var many []string
	for i := range 101 {
		many = append(many, fmt.Sprintf(`{"operationType":"Create","partitionKey":"[\"ada\"]","resourceBody":{"id":"m%d","pk":"ada"}}`, i))
	}
	fresh := `{"operationType":"Create","partitionKey":"[\"ada\"]","resourceBody":{"id":"fresh","pk":"ada"}}`
	for _, tc := range []struct{ name, body, msg string }{
		{"not JSON", `[` + fresh, "not valid JSON"},
		{"an object", fresh, "not a JSON array"},
		{"empty", `[]`, "no operations"},
		{"101 operations", "[" + strings.Join(many, ",") + "]", "limit of 100"},
		{"unknown operationType", `[` + fresh + `,{"operationType":"Frob","id":"1"}]`, `Frob`},
		{"bad partition key", `[` + fresh + `,{"operationType":"Read","id":"1","partitionKey":"[bob"}]`, "partitionKey"},
	} {
		if r := must(t, c.do("POST", coll+"/docs", tc.body, bulkHeaders()...), 400); !strings.Contains(string(r.body), tc.msg) {
			t.Errorf("%s: %s, want a message with %q", tc.name, r.body, tc.msg)
		}
	}
	must(t, c.do("GET", coll+"/docs/fresh", nil, ada...), 404)
	must(t, c.do("GET", coll+"/docs/m0", nil, ada...), 404)
	must(t, c.do("POST", "/dbs/db/colls/none/docs", `[`+fresh+`]`, bulkHeaders()...), 404)
}

// TestBulkThrottled: an operation over the container's budget is that
// operation's 429, with its wait, and the others still run.
func TestBulkThrottled(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	_, c := testServer(t, cosmosrest.Config{Clock: clock})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}, "x-ms-offer-throughput", "400"), 201)
	// Sixty creates of 20 KB (15.5 RU each) are more than a second of
	// 400 RU/s.
	pad := strings.Repeat("x", 20<<10)
	var ops []string
	for i := range 60 {
		ops = append(ops, fmt.Sprintf(`{"operationType":"Create","partitionKey":"[\"a\"]","resourceBody":{"id":"%d","pk":"a","pad":%q}}`, i, pad))
	}
	r := c.do("POST", "/dbs/db/colls/c/docs", "["+strings.Join(ops, ",")+"]", bulkHeaders()...)
	if r.status != 207 {
		t.Fatalf("status %d, want 207", r.status)
	}
	res := batchResults(t, r)
	var created, throttled int
	for _, x := range res {
		switch x["statusCode"] {
		case 201.0:
			created++
		case 429.0:
			throttled++
			if x["subStatusCode"] != 3200.0 || x["retryAfterMilliseconds"].(float64) < 1 {
				t.Errorf("throttled result: %v", x)
			}
		default:
			t.Errorf("result %v", x)
		}
	}
	if created == 0 || throttled == 0 {
		t.Fatalf("created %d, throttled %d", created, throttled)
	}
	// After the wait, the throttled ones go through.
	clock.Advance(2 * time.Second)
	r = c.do("POST", "/dbs/db/colls/c/docs", "["+strings.Join(ops, ",")+"]", bulkHeaders()...)
	if got := statuses(batchResults(t, r)); r.status != 207 || !strings.Contains(got, "201") {
		t.Errorf("after the wait: %d, %s", r.status, got)
	}
}
