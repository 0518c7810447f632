package cosmosrest_test

import (
	"encoding/json"
	"fmt"
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

// TestPartitionKeyRangeStatistics: a container's read with
// x-ms-documentdb-populatepartitionstatistics has the statistics of each
// of its ranges in its body (the suite's test_partitioned_collection_quota
// looks for them): the range's id, its documents' count and size, and no
// partition key of 1 GB or more; a read without the header has none.
func TestPartitionKeyRangeStatistics(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{Ranges: cosmosrest.RangeConfig{Min: 3}})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	for i := range 30 {
		pk := fmt.Sprintf("k%d", i)
		must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "d", "pk": pk, "pad": strings.Repeat("x", 100)},
			"x-ms-documentdb-partitionkey", `["`+pk+`"]`), 201)
	}
	if r := must(t, c.do("GET", "/dbs/db/colls/c", nil), 200); strings.Contains(string(r.body), `"statistics"`) {
		t.Errorf("statistics without the header: %s", r.body)
	}
	r := must(t, c.do("GET", "/dbs/db/colls/c", nil, "x-ms-documentdb-populatepartitionstatistics", "True"), 200)
	var body struct {
		ID         string `json:"id"`
		Statistics []struct {
			ID            string            `json:"id"`
			SizeInKB      int64             `json:"sizeInKB"`
			DocumentCount int64             `json:"documentCount"`
			PartitionKeys []json.RawMessage `json:"partitionKeys"`
		} `json:"statistics"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || body.ID != "c" || len(body.Statistics) != 3 {
		t.Fatalf("statistics: %v %s", err, r.body)
	}
	total := int64(0)
	for i, st := range body.Statistics {
		q := must(t, c.query("/dbs/db/colls/c", "SELECT VALUE COUNT(1) FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", st.ID), 200)
		var count int64
		if err := json.Unmarshal(documents(t, q, "Documents")[0], &count); err != nil {
			t.Fatal(err)
		}
		if st.ID != fmt.Sprint(i) || st.DocumentCount != count || st.PartitionKeys == nil || len(st.PartitionKeys) != 0 ||
			(count > 0) != (st.SizeInKB > 0) || st.SizeInKB > (count*200+1023)/1024 {
			t.Errorf("range %d: %+v, %d documents in it", i, st, count)
		}
		total += st.DocumentCount
	}
	if total != 30 {
		t.Errorf("%d documents over the ranges, want 30", total)
	}

	// A container without a partition key: one range, all its documents.
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "plain"}), 201)
	must(t, c.do("POST", "/dbs/db/colls/plain/docs", map[string]any{"id": "d"}), 201)
	r = must(t, c.do("GET", "/dbs/db/colls/plain", nil, "x-ms-documentdb-populatepartitionstatistics", "true"), 200)
	if !strings.Contains(string(r.body), `"statistics":[{"id":"0","sizeInKB":1,"documentCount":1,"partitionKeys":[]}]`) {
		t.Errorf("statistics of a container without a partition key: %s", r.body)
	}
}
