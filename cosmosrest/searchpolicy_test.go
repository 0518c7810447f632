package cosmosrest_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// searchContainer is a container body with both policies and their
// indexes, in Cosmos DB's JSON.
const searchContainer = `{
	"id": "search",
	"partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2},
	"vectorEmbeddingPolicy": {"vectorEmbeddings": [
		{"path": "/embedding", "dataType": "float32", "distanceFunction": "cosine", "dimensions": 3},
		{"path": "/textEmbedding", "dataType": "int8", "distanceFunction": "dotproduct", "dimensions": 1024}
	]},
	"fullTextPolicy": {"defaultLanguage": "en-US", "fullTextPaths": [
		{"path": "/title", "language": "en-US"}, {"path": "/description", "language": "de-DE"}
	]},
	"indexingPolicy": {
		"indexingMode": "consistent", "automatic": true,
		"includedPaths": [{"path": "/*"}],
		"excludedPaths": [{"path": "/\"_etag\"/?"}, {"path": "/embedding/*"}],
		"vectorIndexes": [{"path": "/embedding", "type": "flat"}, {"path": "/textEmbedding", "type": "diskANN"}],
		"fullTextIndexes": [{"path": "/title"}, {"path": "/description"}]
	}
}`

// searchParts returns the vector and full-text parts of a container's JSON.
func searchParts(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	ip, _ := m["indexingPolicy"].(map[string]any)
	return map[string]any{
		"vectorEmbeddingPolicy": m["vectorEmbeddingPolicy"],
		"fullTextPolicy":        m["fullTextPolicy"],
		"vectorIndexes":         ip["vectorIndexes"],
		"fullTextIndexes":       ip["fullTextIndexes"],
	}
}

// TestContainerSearchPolicies: the vector embedding and full-text policies
// and their indexes go in and come back out in Cosmos DB's JSON, through
// create, read, list and replace; what Cosmos DB refuses is a 400 that says
// why, and changes nothing.
func TestContainerSearchPolicies(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	created := must(t, c.do("POST", "/dbs/db/colls", searchContainer), 201)
	want := searchParts(t, []byte(searchContainer))
	if got := searchParts(t, created.body); !reflect.DeepEqual(got, want) {
		t.Errorf("created:\n got %v\nwant %v", got, want)
	}
	read := must(t, c.do("GET", "/dbs/db/colls/search", nil), 200)
	if got := searchParts(t, read.body); !reflect.DeepEqual(got, want) {
		t.Errorf("read:\n got %v\nwant %v", got, want)
	}
	list := must(t, c.do("GET", "/dbs/db/colls", nil), 200)
	if docs := documents(t, list, "DocumentCollections"); len(docs) != 1 || !reflect.DeepEqual(searchParts(t, docs[0]), want) {
		t.Errorf("list: %s", list.body)
	}

	// A container without them has none.
	plain := must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "plain"}), 201)
	for _, k := range []string{"vectorEmbeddingPolicy", "fullTextPolicy", "vectorIndexes", "fullTextIndexes"} {
		if strings.Contains(string(plain.body), k) {
			t.Errorf("a container without policies shows %s: %s", k, plain.body)
		}
	}

	// Replace: a vector embedding's settings cannot change; paths can be
	// added and removed, the full-text policy changed.
	m := read.json(t)
	vectors := m["vectorEmbeddingPolicy"].(map[string]any)["vectorEmbeddings"].([]any)
	vectors[0].(map[string]any)["dimensions"] = 4
	r := c.do("PUT", "/dbs/db/colls/search", m)
	if r.status != 400 || !strings.Contains(string(r.body), `the vector embedding of path \"/embedding\" cannot be changed`) {
		t.Errorf("changed embedding: status %d, body %s", r.status, r.body)
	}
	again := must(t, c.do("GET", "/dbs/db/colls/search", nil), 200)
	if got := searchParts(t, again.body); !reflect.DeepEqual(got, want) {
		t.Errorf("a refused replace changed the container: %v", got)
	}
	m = again.json(t)
	m["vectorEmbeddingPolicy"].(map[string]any)["vectorEmbeddings"] = append(
		m["vectorEmbeddingPolicy"].(map[string]any)["vectorEmbeddings"].([]any)[1:],
		map[string]any{"path": "/image", "dataType": "uint8", "distanceFunction": "euclidean", "dimensions": 512})
	ip := m["indexingPolicy"].(map[string]any)
	ip["vectorIndexes"] = []any{map[string]any{"path": "/image", "type": "quantizedFlat"}}
	delete(ip, "fullTextIndexes")
	m["fullTextPolicy"] = map[string]any{"defaultLanguage": "fr-FR", "fullTextPaths": []any{map[string]any{"path": "/body", "language": "fr-FR"}}}
	replaced := must(t, c.do("PUT", "/dbs/db/colls/search", m), 200)
	got := searchParts(t, replaced.body)
	want = map[string]any{
		"vectorEmbeddingPolicy": map[string]any{"vectorEmbeddings": []any{
			map[string]any{"path": "/textEmbedding", "dataType": "int8", "distanceFunction": "dotproduct", "dimensions": 1024.0},
			map[string]any{"path": "/image", "dataType": "uint8", "distanceFunction": "euclidean", "dimensions": 512.0},
		}},
		"fullTextPolicy":  map[string]any{"defaultLanguage": "fr-FR", "fullTextPaths": []any{map[string]any{"path": "/body", "language": "fr-FR"}}},
		"vectorIndexes":   []any{map[string]any{"path": "/image", "type": "quantizedFlat"}},
		"fullTextIndexes": nil,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("replaced:\n got %v\nwant %v", got, want)
	}

	for _, tc := range []struct{ body, msg string }{
		{`{"id":"x","indexingPolicy":{"vectorIndexes":[{"path":"/v","type":"flat"}]}}`, `vector index path \"/v\" is not a path of the container's vector embedding policy`},
		{`{"id":"x","vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","distanceFunction":"cosine","dimensions":600}]},"indexingPolicy":{"vectorIndexes":[{"path":"/v","type":"flat"}]}}`, "at most 505 dimensions"},
		{`{"id":"x","vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float64","distanceFunction":"cosine","dimensions":3}]}}`, `the data type \"float64\"`},
		{`{"id":"x","vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dimensions":-3}]}}`, "dimensions"},
		{`{"id":"x","fullTextPolicy":{"defaultLanguage":"xx-XX","fullTextPaths":[]}}`, `default language \"xx-XX\"`},
		{`{"id":"x","fullTextPolicy":{"defaultLanguage":"en-US","fullTextPaths":[{"path":"/a","language":"en-US"}]},"indexingPolicy":{"fullTextIndexes":[{"path":"/b"}]}}`, `full-text index path \"/b\" is not a path`},
	} {
		r := c.do("POST", "/dbs/db/colls", tc.body)
		if r.status != 400 || !strings.Contains(string(r.body), tc.msg) {
			t.Errorf("%s: status %d, body %s; want 400 with %q", tc.body, r.status, r.body, tc.msg)
		}
	}
	must(t, c.do("GET", "/dbs/db/colls/x", nil), 404)
}

// TestFullTextQuery: the full-text functions through the REST front, on a
// container whose full-text policy gives each path its language: the
// azcosmos suite's query finds exactly the item that has the word, English
// text is stemmed and German only folded, and the query plan a gateway SDK
// asks for first is served.
func TestFullTextQuery(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", searchContainer), 201)
	pk := []string{"x-ms-documentdb-partitionkey", `["test"]`}
	for _, doc := range []map[string]any{
		{"id": "1", "pk": "test", "title": "Azure Cosmos DB Full Text Search", "description": "Die Suche nach Fahrrädern"},
		{"id": "2", "pk": "test", "title": "Not related", "description": "An unrelated item that should not match the query"},
		{"id": "3", "pk": "test", "title": "Searching for bicycles", "description": "Ein Fahrrad"},
		{"id": "4", "pk": "test", "title": "Autos", "description": "Neue Autos"},
	} {
		must(t, c.do("POST", "/dbs/db/colls/search/docs", doc, pk...), 201)
	}
	ids := func(q string) string {
		t.Helper()
		var out []string
		for _, d := range documents(t, must(t, c.query("/dbs/db/colls/search", q, nil, pk...), 200), "Documents") {
			var m map[string]any
			if err := json.Unmarshal(d, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m["id"].(string))
		}
		return strings.Join(out, ",")
	}
	for q, want := range map[string]string{
		`SELECT * FROM c WHERE FullTextContains(c.title, "search") OR FullTextContains(c.description, "search")`: "1,3",
		`SELECT * FROM c WHERE FullTextContains(c.title, "Full Text Search")`:                                    "1",
		`SELECT * FROM c WHERE FullTextContainsAll(c.title, "bicycle", "searches")`:                              "3",
		`SELECT * FROM c WHERE FullTextContainsAny(c.description, "fahrrad", "suchen")`:                          "3",
		`SELECT * FROM c WHERE FullTextContains(c.description, "SUCHE")`:                                         "1",
		`SELECT * FROM c WHERE FullTextContains(c.title, "auto") OR FullTextContains(c.description, "auto")`:     "4",
		`SELECT * FROM c WHERE FullTextContains(c.description, "auto")`:                                          "",
	} {
		if got := ids(q); got != want {
			t.Errorf("%s: got %q, want %q", q, got, want)
		}
	}
	plan := must(t, c.query("/dbs/db/colls/search", `SELECT * FROM c WHERE FullTextContains(c.title, "search")`, nil,
		"x-ms-cosmos-is-query-plan-request", "True", "x-ms-cosmos-supported-query-features", "NonValueAggregate"), 200)
	if !strings.Contains(string(plan.body), `"queryRanges"`) {
		t.Errorf("query plan: %s", plan.body)
	}
}

// TestSearchQueries: VectorDistance, ORDER BY RANK FullTextScore and RRF
// through the REST front, partition-scoped and cross-partition: most
// similar and most relevant first, the policy's distance function for the
// path; FullTextScore outside ORDER BY RANK is a 400 with the service's
// message; the query plan is a hybrid search's (queryplan_test.go runs
// its queries).
func TestSearchQueries(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", searchContainer), 201)
	for _, doc := range []map[string]any{
		{"id": "1", "pk": "a", "title": "red fox", "embedding": []float64{1, 0, 0}},
		{"id": "2", "pk": "a", "title": "brown bear", "embedding": []float64{0, 1, 0}},
		{"id": "3", "pk": "b", "title": "red apples and red cherries", "embedding": []float64{0.9, 0.1, 0}},
		{"id": "4", "pk": "b", "title": "green apples", "embedding": []float64{1, 0}},
	} {
		must(t, c.do("POST", "/dbs/db/colls/search/docs", doc, "x-ms-documentdb-partitionkey", `["`+doc["pk"].(string)+`"]`), 201)
	}
	// A gateway SDK sends a cross-partition ORDER BY query for each range
	// after the plan (the front has one range, "0"), as for any ORDER BY.
	cross := []string{"x-ms-documentdb-partitionkeyrangeid", "0"}
	params := []map[string]any{{"name": "@q", "value": []float64{1, 0, 0}}}
	ids := func(q string, hdr ...string) string {
		t.Helper()
		var out []string
		for _, d := range documents(t, must(t, c.query("/dbs/db/colls/search", q, params, hdr...), 200), "Documents") {
			var m map[string]any
			if err := json.Unmarshal(d, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m["id"].(string))
		}
		return strings.Join(out, ",")
	}
	for q, want := range map[string]string{
		`SELECT TOP 3 c.id FROM c ORDER BY VectorDistance(c.embedding, @q)`:                                              "1,3,2",
		`SELECT c.id FROM c ORDER BY VectorDistance(c.embedding, @q, false, {"distanceFunction": "euclidean"})`:          "1,3,2,4",
		`SELECT TOP 10 c.id FROM c ORDER BY RANK FullTextScore(c.title, "red")`:                                          "3,1,2,4",
		`SELECT TOP 10 c.id FROM c ORDER BY RANK RRF(FullTextScore(c.title, "apples"), VectorDistance(c.embedding, @q))`: "3,1,4,2",
	} {
		if got := ids(q, cross...); got != want {
			t.Errorf("%s: got %q, want %q", q, got, want)
		}
	}
	if got := ids(`SELECT c.id FROM c ORDER BY VectorDistance(c.embedding, @q)`, "x-ms-documentdb-partitionkey", `["b"]`); got != "3,4" {
		t.Errorf("in partition b: got %q", got)
	}
	r := c.query("/dbs/db/colls/search", `SELECT FullTextScore(c.title, "red") AS s FROM c`, nil, cross...)
	if r.status != 400 || !strings.Contains(string(r.body), "The FullTextScore function is only allowed in the ORDER BY RANK clause.") {
		t.Errorf("FullTextScore projected: %d %s", r.status, r.body)
	}
	r = c.query("/dbs/db/colls/search", `SELECT TOP 10 c.id FROM c ORDER BY RANK FullTextScore(c.title, "red")`, nil, "x-ms-documentdb-query-enablecrosspartition", "True")
	if r.status != 400 || r.header.Get("x-ms-substatus") != "1004" {
		t.Errorf("a cross-partition ranked query without a range: %d %s", r.status, r.body)
	}
	plan := must(t, c.query("/dbs/db/colls/search", `SELECT TOP 10 c.id FROM c ORDER BY RANK RRF(FullTextScore(c.title, "red"), VectorDistance(c.embedding, @q))`, params,
		"x-ms-cosmos-is-query-plan-request", "True", "x-ms-cosmos-supported-query-features", "NonValueAggregate, HybridSearch"), 200)
	if s := string(plan.body); !strings.Contains(s, `"hybridSearchQueryInfo":{"globalStatisticsQuery":`) || strings.Count(s, "_VectorScore(c.embedding, @q)") != 5 {
		t.Errorf("query plan: %s", plan.body)
	}
}
