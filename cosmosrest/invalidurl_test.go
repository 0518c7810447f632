package cosmosrest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestRoutingGatewayInvalidURLPage: a path that decodes to a control
// character is refused by the routing gateway's HTTP layer (http.sys)
// before Cosmos DB sees it, with its HTML page, not the service's JSON: so
// @azure/cosmos fails to parse the answer and throws an error with no
// status code, which its id encoding spec expects (RGW_idWithCarriageReturn
// and the like), while azcosmos still reads a 400.
func TestRoutingGatewayInvalidURLPage(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	for _, esc := range []string{"With%0DCarriageReturn", "With%09Tab", "With%0ALineFeed"} {
		r := c.doAs("GET", "/dbs/db/colls/c/docs/"+esc, "docs", "dbs/db/colls/c/docs/x", nil, p1...)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", esc, r.status)
		}
		if ct := r.header.Get("Content-Type"); ct != "text/html; charset=us-ascii" {
			t.Errorf("%s: Content-Type %q, want http.sys's text/html; charset=us-ascii", esc, ct)
		}
		if json.Valid(r.body) || !strings.Contains(string(r.body), "<h2>Bad Request - Invalid URL</h2>") {
			t.Errorf("%s: body %q, want http.sys's page", esc, r.body)
		}
	}
}
