package cosmosrest_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestIdEncodingGateways checks how each gateway reads a document's id in
// a request path, as the Cosmos DB emulator's do (the SDKs' emulator suites,
// azcosmos's TestItemIdEncodingRoutingGW and TestItemIdEncodingComputeGW,
// hold the same statuses). The client writes what an SDK writes: the id
// escaped once in the path (url.PathEscape), the id itself in the
// signature; twice says the path carries it escaped twice. Creating always
// works: the id is in the body. The routing gateway decodes the whole path,
// then each segment again, after taking '\' for '/', cutting at '#' and
// trimming trailing spaces: an id it reads otherwise than the client
// signed is 401, a control character 400. The compute gateway decodes each
// segment once.
func TestIdEncodingGateways(t *testing.T) {
	h, routing := testServer(t, cosmosrest.Config{})
	compute := computeClient(t, h, cosmosrest.EmulatorKey)
	must(t, routing.do("POST", "/dbs", map[string]any{"id": "db"}), http.StatusCreated)
	must(t, routing.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}, "kind": "Hash"}}), http.StatusCreated)

	const ok, unauthorized, bad = http.StatusOK, http.StatusUnauthorized, http.StatusBadRequest
	for _, tc := range []struct {
		id               string
		twice            bool
		routing, compute int // the status of a read, and of a replace (a delete: 204 for 200)
	}{
		{id: "Test", routing: ok, compute: ok},
		{id: "This is a test", routing: ok, compute: ok},
		{id: " Test", routing: ok, compute: ok},
		{id: "Test ", routing: unauthorized, compute: ok},  // trimmed
		{id: "Test  ", routing: unauthorized, compute: ok}, // trimmed
		{id: "WithAllowedSpecial,=.:~+-@()^${}[]!_Chars", routing: ok, compute: ok},
		{id: "BQE1D3PdG4N4bzU9TKaCIM3qc0TVcZ2-Y3jnsRfwdHC1ombkX3F1dot-SG0-UTq9AbgdX3kOWoP6qL6lJqWeKgV3zwWWPZO-t5X0ehJzv9LGkWld07LID2rhWhGT6huBM6Q=", routing: ok, compute: ok},
		{id: "IdEndingWithPercentEncodedWhitespace%20", routing: unauthorized, compute: ok}, // decoded again
		{id: "WithPercentEncodedSpecialChar%E9%B1%80", routing: unauthorized, compute: ok},  // decoded again
		{id: "100%", routing: ok, compute: ok}, // no escape to decode again
		{id: "Disallowed?Chars", routing: ok, compute: ok},
		{id: "Disallowed/Chars", routing: unauthorized, compute: ok}, // one segment more
		{id: `Disallowed\Chars`, routing: unauthorized, compute: ok}, // '\' is '/'
		{id: "Disallowed#Chars", routing: unauthorized, compute: ok}, // a fragment, dropped
		{id: "With\rCarriageReturn", routing: bad, compute: ok},      // an invalid URL
		{id: "With\tTab", routing: bad, compute: ok},                 // an invalid URL
		{id: "With\nLineFeed", routing: bad, compute: ok},            // an invalid URL
		{id: "WithUnicode鱀", routing: ok, compute: ok},
		// Escaped twice, an id survives the routing gateway's two
		// decodings; the compute gateway reads one escape too many.
		{id: "Disallowed/Chars", twice: true, routing: ok, compute: unauthorized},
		{id: `Disallowed\Chars`, twice: true, routing: ok, compute: unauthorized},
		{id: "Disallowed#Chars", twice: true, routing: ok, compute: unauthorized},
		{id: "IdEndingWithPercentEncodedWhitespace%20", twice: true, routing: ok, compute: unauthorized},
		{id: "Test ", twice: true, routing: ok, compute: unauthorized},
		{id: "With\rCarriageReturn", twice: true, routing: ok, compute: unauthorized},
		{id: "Test", twice: true, routing: ok, compute: ok},
	} {
		for _, gw := range []struct {
			name string
			c    *client
			want int
		}{{"routing", routing, tc.routing}, {"compute", compute, tc.compute}} {
			doc := map[string]any{"id": tc.id, "pk": tc.id}
			pk := "x-ms-documentdb-partitionkey"
			pkj, _ := json.Marshal([]string{tc.id})
			pkv := string(pkj)
			must(t, gw.c.do("POST", "/dbs/db/colls/c/docs", doc, pk, pkv), http.StatusCreated)

			esc := url.PathEscape(tc.id)
			if tc.twice {
				esc = url.PathEscape(esc)
			}
			path, link := "/dbs/db/colls/c/docs/"+esc, "dbs/db/colls/c/docs/"+tc.id
			for _, op := range []struct {
				method string
				body   any
				want   int
			}{{"GET", nil, gw.want}, {"PUT", doc, gw.want}, {"DELETE", nil, gw.want}} {
				if op.method == "DELETE" && op.want == ok {
					op.want = http.StatusNoContent
				}
				r := gw.c.doAs(op.method, path, "docs", link, op.body, pk, pkv)
				if r.status != op.want {
					t.Errorf("%s gateway, %s of %q (twice: %v): %d, want %d; body %s", gw.name, op.method, tc.id, tc.twice, r.status, op.want, r.body)
				}
			}
			if gw.want != ok {
				// Clean up through the gateway that reads the id as written.
				other := compute
				if tc.twice {
					other = routing
				}
				must(t, other.doAs("DELETE", path, "docs", link, nil, pk, pkv), http.StatusNoContent)
			}
		}
	}
}

// TestRoutingGatewaySignsWhatItRead checks that a 401 of the routing
// gateway shows the payload it signed, with the id as it read it: the
// client learns why its signature did not match.
func TestRoutingGatewaySignsWhatItRead(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	must(t, c.do("POST", "/dbs", map[string]any{"id": "db"}), http.StatusCreated)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c"}), http.StatusCreated)
	for id, read := range map[string]string{
		"Test ":            "dbs/db/colls/c/docs/Test\n",
		"a#b":              "dbs/db/colls/c/docs/a\n",
		"a%41":             "dbs/db/colls/c/docs/aA\n",
		"Disallowed/Chars": "get\nchars\ndbs/db/colls/c/docs/Disallowed\n",
	} {
		r := c.doAs("GET", "/dbs/db/colls/c/docs/"+url.PathEscape(id), "docs", "dbs/db/colls/c/docs/"+id, nil)
		if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), strings.ReplaceAll(read, "\n", `\n`)) {
			t.Errorf("GET %q: %d %s, want 401 naming %q", id, r.status, r.body, read)
		}
	}
}

// TestCrossPartitionTruthTable holds the gateway's answer to each shape of
// query that needs a client's work across partitions, sent as azcosmos
// sends it (x-ms-documentdb-query-enablecrosspartition, no query plan, no
// range), and to the same query for one partition key: the service's status,
// substatus and text, then lethe's note saying that the client sent it
// without a query plan, that Cosmos DB refuses it the same way, and what
// works. A SELECT with an aggregate and no VALUE, GROUP BY or not, is the
// service's other refusal: substatus 0, no plan.
func TestCrossPartitionTruthTable(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	must(t, c.do("POST", "/dbs", map[string]any{"id": "db"}), http.StatusCreated)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), http.StatusCreated)
	for i, pk := range []string{"a", "b", "a"} {
		must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": string(rune('1' + i)), "pk": pk, "n": i}, "x-ms-documentdb-partitionkey", `["`+pk+`"]`), http.StatusCreated)
	}
	const (
		works = `What works: name the partition key (azcosmos.NewPartitionKeyString("...")); or run the query once per partition key value, ` +
			"or per partition key range (x-ms-documentdb-partitionkeyrangeid), and combine the results yourself; " +
			"or use an SDK with a cross-partition query pipeline (.NET, Java, JavaScript, Python)"
		notServable = "The provided cross partition query can not be directly served by the gateway. " +
			"This is a first chance (internal) exception that all newer clients will know how to handle gracefully. " +
			"This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), " +
			"then you can safely ignore this message. (lethe: the client sent this query across partitions without a query plan " +
			"(no x-ms-cosmos-is-query-plan-request before it, no x-ms-documentdb-partitionkeyrangeid), as azcosmos, the Go SDK, does: " +
			"it has no cross-partition query pipeline, and Cosmos DB refuses the query the same way. " + works + ")"
		onlyValue = "Cross partition query only supports 'VALUE <AggregateFunc>' for aggregates. (lethe: the client sent this query " +
			"across partitions without a query plan, as azcosmos, the Go SDK, does, and its SELECT holds an aggregate without VALUE " +
			"(GROUP BY with COUNT(1) AS n, say): Cosmos DB refuses it the same way, with substatus 0 and no plan. " + works + ")"
	)
	cross := []string{"x-ms-documentdb-query-enablecrosspartition", "True"}
	for _, tc := range []struct {
		shape, q string
		sub      string // the substatus of the refusal across partitions
		msg      string
		onePK    string // the result for partition key "a"
	}{
		{"ORDER BY", "SELECT VALUE c.id FROM c ORDER BY c.n", "1004", notServable, `["1","3"]`},
		{"ORDER BY DESC", "SELECT VALUE c.id FROM c ORDER BY c.n DESC", "1004", notServable, `["3","1"]`},
		{"TOP", "SELECT TOP 1 VALUE c.id FROM c", "1004", notServable, `["1"]`},
		{"OFFSET LIMIT", "SELECT VALUE c.id FROM c OFFSET 1 LIMIT 1", "1004", notServable, `["3"]`},
		{"DISTINCT", "SELECT DISTINCT VALUE c.pk FROM c", "1004", notServable, `["a"]`},
		{"VALUE COUNT", "SELECT VALUE COUNT(1) FROM c", "1004", notServable, `[2]`},
		{"VALUE MAX", "SELECT VALUE MAX(c.n) FROM c", "1004", notServable, `[2]`},
		{"GROUP BY", "SELECT c.pk FROM c GROUP BY c.pk", "1004", notServable, `[{"pk":"a"}]`},
		{"GROUP BY, VALUE", "SELECT VALUE c.pk FROM c GROUP BY c.pk", "1004", notServable, `["a"]`},
		{"GROUP BY, VALUE COUNT", "SELECT VALUE COUNT(1) FROM c GROUP BY c.pk", "1004", notServable, `[2]`},
		{"GROUP BY with COUNT(1) AS n", "SELECT c.pk, COUNT(1) AS n FROM c GROUP BY c.pk", "0", onlyValue, `[{"pk":"a","n":2}]`},
		{"aggregate with an alias", "SELECT COUNT(1) AS n FROM c", "0", onlyValue, `[{"n":2}]`},
		{"aggregate without an alias", "SELECT MAX(c.n) FROM c", "0", onlyValue, `[{"$1":2}]`},
		{"aggregates", "SELECT MIN(c.n) AS lo, MAX(c.n) AS hi FROM c", "0", onlyValue, `[{"lo":0,"hi":2}]`},
	} {
		t.Run(tc.shape, func(t *testing.T) {
			r := must(t, c.query("/dbs/db/colls/c", tc.q, nil, cross...), http.StatusBadRequest)
			body := r.json(t)
			if got := r.header.Get("x-ms-substatus"); got != tc.sub {
				t.Errorf("substatus %s, want %s", got, tc.sub)
			}
			if body["message"] != tc.msg {
				t.Errorf("message\n%v\nwant\n%s", body["message"], tc.msg)
			}
			if _, plan := body["additionalErrorInfo"]; plan != (tc.sub == "1004") {
				t.Errorf("additionalErrorInfo present: %v, want %v", plan, tc.sub == "1004")
			}
			for _, hdr := range [][]string{
				{"x-ms-documentdb-partitionkey", `["a"]`},
				append([]string{"x-ms-documentdb-partitionkey", `["a"]`}, cross...),
			} {
				r = must(t, c.query("/dbs/db/colls/c", tc.q, nil, hdr...), http.StatusOK)
				got, _ := json.Marshal(documents(t, r, "Documents"))
				if string(got) != tc.onePK {
					t.Errorf("for one partition key %v: %s, want %s", hdr, got, tc.onePK)
				}
			}
		})
	}
}
