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
