package cosmosrest_test

import (
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// The differences the legacy Python SDK's own suite (azure-cosmos 3.1.1,
// sdktest/python/run_suite.sh) found, each as the service answers it.

// TestOfferReplaceWithoutIDs: an offer's replace whose body has neither
// id nor _rid (the suite's test_offer_replace sets both to null) is the
// service's 400 and changes nothing.
func TestOfferReplaceWithoutIDs(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	coll := must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}},
		"x-ms-offer-throughput", "400"), 201).json(t)
	offer := offerOf(t, c, coll["_rid"].(string))
	path := "/" + strings.TrimSuffix(offer["_self"].(string), "/")
	offer["content"].(map[string]any)["offerThroughput"] = 500
	for name, set := range map[string]func(){
		"null":    func() { offer["id"], offer["_rid"] = nil, nil },
		"missing": func() { delete(offer, "id"); delete(offer, "_rid") },
	} {
		set()
		if r := c.do("PUT", path, offer); r.status != 400 || !strings.Contains(string(r.body), "neither its id nor its _rid") {
			t.Errorf("%s id and _rid: %d %s", name, r.status, r.body)
		}
	}
	if th, _ := offerFigures(offerOf(t, c, coll["_rid"].(string))); th != 400 {
		t.Errorf("after the refusals: %v RU/s, want 400", th)
	}
}
