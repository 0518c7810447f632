package cosmosrest_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestCrossPartitionGateway: a query over several partitions that needs a
// client's work is refused as Cosmos DB's gateway refuses it (substatus
// 1004, the plan in additionalErrorInfo; an aggregate without VALUE, and a
// query without x-ms-documentdb-query-enablecrosspartition, with their own
// messages), and every query for one partition or one range is served.
func TestCrossPartitionGateway(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/t"}}}), 201)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "h", "partitionKey": map[string]any{"paths": []string{"/a", "/b"}, "kind": "MultiHash", "version": 2}}), 201)
	for i := range 6 {
		tenant := []string{"a", "b"}[i%2]
		must(t, c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`{"id":"%d","t":%q,"n":%d}`, i, tenant, i), "x-ms-documentdb-partitionkey", `["`+tenant+`"]`), 201)
		must(t, c.do("POST", "/dbs/db/colls/h/docs", fmt.Sprintf(`{"id":"%d","a":%q,"b":"y","n":%d}`, i, tenant, i), "x-ms-documentdb-partitionkey", `["`+tenant+`","y"]`), 201)
	}
	const (
		served    = 0
		plan      = 1 // 400, substatus 1004, the plan
		aggregate = 2 // 400: only VALUE aggregates
		disabled  = 3 // 400: cross-partition queries disabled
	)
	cross := []string{"x-ms-documentdb-query-enablecrosspartition", "True"}
	tenant := []map[string]any{{"name": "@t", "value": "a"}}
	for _, tc := range []struct {
		coll   string
		q      string
		params []map[string]any
		hdr    []string
		want   int
	}{
		{"c", "SELECT * FROM c", nil, cross, served},
		{"c", "SELECT c.id FROM c WHERE c.n > 1 AND STARTSWITH(c.id, '1')", nil, cross, served},
		{"c", "SELECT * FROM c ORDER BY c.n", nil, cross, plan},
		{"c", "SELECT TOP 2 * FROM c", nil, cross, plan},
		{"c", "SELECT * FROM c OFFSET 1 LIMIT 2", nil, cross, plan},
		{"c", "SELECT DISTINCT VALUE c.t FROM c", nil, cross, plan},
		{"c", "SELECT VALUE COUNT(1) FROM c", nil, cross, plan},
		{"c", "SELECT VALUE c.t FROM c GROUP BY c.t", nil, cross, plan},
		{"c", "SELECT COUNT(1) AS n FROM c", nil, cross, aggregate},
		{"c", "SELECT c.t, COUNT(1) AS n FROM c GROUP BY c.t", nil, cross, aggregate},
		{"c", "SELECT * FROM c WHERE c.t IN ('a', 'b') ORDER BY c.n", nil, cross, plan},
		{"c", "SELECT * FROM c WHERE c.t = 'a' OR c.n = 1 ORDER BY c.n", nil, cross, plan},
		// One partition: by header, by range, by a filter on the key.
		{"c", "SELECT * FROM c ORDER BY c.n", nil, []string{"x-ms-documentdb-partitionkey", `["a"]`}, served},
		{"c", "SELECT * FROM c ORDER BY c.n", nil, []string{"x-ms-documentdb-partitionkeyrangeid", "0"}, served},
		{"c", "SELECT COUNT(1) AS n FROM c", nil, []string{"x-ms-documentdb-partitionkeyrangeid", "0"}, served},
		{"c", "SELECT * FROM c WHERE c.t = 'a' ORDER BY c.n", nil, cross, served},
		{"c", "SELECT VALUE COUNT(1) FROM c WHERE c.n > 0 AND c.t = @t", tenant, cross, served},
		// An aggregate without VALUE across partitions, whatever the filter.
		{"c", "SELECT COUNT(1) AS n FROM c WHERE c.t = 'a'", nil, cross, aggregate},
		{"c", "SELECT AVG(c.n) FROM c WHERE c.t = @t", tenant, cross, aggregate},
		{"c", "SELECT COUNT(1) AS n FROM c WHERE c.t = 'a'", nil, nil, served},
		{"h", "SELECT * FROM c WHERE c.a = 'a' ORDER BY c.n", nil, cross, plan},
		{"h", "SELECT * FROM c WHERE c.a = 'a' AND c.b = 'y' ORDER BY c.n", nil, cross, served},
		// Without enablecrosspartition, only one partition's queries.
		{"c", "SELECT * FROM c", nil, nil, disabled},
		{"c", "SELECT * FROM c ORDER BY c.n", nil, nil, disabled},
		{"c", "SELECT * FROM c WHERE c.t = 'b'", nil, nil, served},
	} {
		r := c.query("/dbs/db/colls/"+tc.coll, tc.q, tc.params, tc.hdr...)
		name := fmt.Sprintf("%s %v", tc.q, tc.hdr)
		if tc.want == served {
			must(t, r, 200)
			continue
		}
		must(t, r, 400)
		body := r.json(t)
		msg, _ := body["message"].(string)
		sub := r.header.Get("x-ms-substatus")
		switch tc.want {
		case plan:
			if sub != "1004" || !strings.Contains(msg, "cross partition query can not be directly served by the gateway") {
				t.Errorf("%s: substatus %s, %s", name, sub, r.body)
			}
			info, _ := body["additionalErrorInfo"].(string)
			var p struct {
				Version     int `json:"partitionedQueryExecutionInfoVersion"`
				QueryRanges []struct {
					Min, Max string
				} `json:"queryRanges"`
			}
			if err := json.Unmarshal([]byte(info), &p); err != nil || p.Version != 2 || len(p.QueryRanges) == 0 {
				t.Errorf("%s: additionalErrorInfo %q", name, info)
			}
		case aggregate:
			if sub != "0" || !strings.HasPrefix(msg, "Cross partition query only supports 'VALUE <AggregateFunc>' for aggregates. (lethe: ") {
				t.Errorf("%s: substatus %s, %s", name, sub, r.body)
			}
		case disabled:
			if !strings.HasPrefix(msg, "Cross partition query is required but disabled.") {
				t.Errorf("%s: %s", name, r.body)
			}
		}
	}
}

// metricsOf reads x-ms-documentdb-query-metrics into its figures.
func metricsOf(t *testing.T, r response) map[string]float64 {
	t.Helper()
	v := r.header.Get("x-ms-documentdb-query-metrics")
	m := map[string]float64{}
	for p := range strings.SplitSeq(v, ";") {
		name, x, ok := strings.Cut(p, "=")
		f, err := strconv.ParseFloat(x, 64)
		if !ok || err != nil {
			t.Fatalf("query metrics %q", v)
		}
		m[name] = f
	}
	return m
}

// TestQueryMetricsHeaders: with x-ms-documentdb-populatequerymetrics, a
// page carries lethe's figures of it (summed over the library's pages it
// joins); with x-ms-cosmos-populateindexmetrics, the index utilization in
// base64; neither without its request header.
func TestQueryMetricsHeaders(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/t"}}}), 201)
	const coll = "/dbs/db/colls/c"
	for i := range 130 {
		must(t, c.do("POST", coll+"/docs", fmt.Sprintf(`{"id":"%03d","t":"a","n":%d}`, i, i%10), "x-ms-documentdb-partitionkey", `["a"]`), 201)
	}
	pk := []string{"x-ms-documentdb-partitionkey", `["a"]`}
	ask := append([]string{"x-ms-documentdb-populatequerymetrics", "True", "x-ms-cosmos-populateindexmetrics", "True"}, pk...)
	// The first query on a path scans.
	r := must(t, c.query(coll, "SELECT c.id FROM c WHERE c.n = 3", nil, ask...), 200)
	m := metricsOf(t, r)
	docs := documents(t, r, "Documents")
	size := 0
	for _, d := range docs {
		size += len(d)
	}
	if m["retrievedDocumentCount"] != 130 || m["outputDocumentCount"] != 13 || len(docs) != 13 || m["outputDocumentSize"] != float64(size) || m["indexUtilizationRatio"] != 0.1 {
		t.Errorf("metrics of a scan: %s", r.header.Get("x-ms-documentdb-query-metrics"))
	}
	raw, err := base64.StdEncoding.DecodeString(r.header.Get("x-ms-cosmos-index-utilization"))
	var im map[string][]json.RawMessage
	if err != nil || json.Unmarshal(raw, &im) != nil || len(im) != 4 || im["UtilizedSingleIndexes"] == nil || im["PotentialCompositeIndexes"] == nil {
		t.Errorf("index utilization %q (%s)", r.header.Get("x-ms-cosmos-index-utilization"), raw)
	}
	r = must(t, c.query(coll, "SELECT c.id FROM c WHERE c.n = 3", nil, pk...), 200)
	if v := r.header.Get("x-ms-documentdb-query-metrics"); v != "" {
		t.Errorf("query metrics not asked for: %q", v)
	}
	if v := r.header.Get("x-ms-cosmos-index-utilization"); v != "" {
		t.Errorf("index metrics not asked for: %q", v)
	}
	// The third finds its items through the index the second made.
	r = must(t, c.query(coll, "SELECT c.id FROM c WHERE c.n = 3", nil, ask...), 200)
	if m := metricsOf(t, r); m["retrievedDocumentCount"] != 13 || m["indexUtilizationRatio"] != 1 {
		t.Errorf("metrics through the index: %s", r.header.Get("x-ms-documentdb-query-metrics"))
	}
	raw, _ = base64.StdEncoding.DecodeString(r.header.Get("x-ms-cosmos-index-utilization"))
	if !strings.Contains(string(raw), `"UtilizedSingleIndexes":[{"IndexSpec":"/n/?"`) {
		t.Errorf("index utilization through the index: %s", raw)
	}
	// -1 joins the library's pages of 100: the figures are their sum (the
	// item that tells the first page that more follow is read by both).
	r = must(t, c.query(coll, "SELECT * FROM c", nil, append(ask, "x-ms-max-item-count", "-1")...), 200)
	if m := metricsOf(t, r); m["retrievedDocumentCount"] < 130 || m["retrievedDocumentCount"] > 132 || m["outputDocumentCount"] != 130 || m["indexUtilizationRatio"] != 1 {
		t.Errorf("metrics of joined pages: %s", r.header.Get("x-ms-documentdb-query-metrics"))
	}
	// Every page of a paged query carries both.
	token := ""
	for range 3 {
		r = must(t, c.query(coll, "SELECT * FROM c", nil, append(ask, "x-ms-max-item-count", "50", "x-ms-continuation", token)...), 200)
		if m := metricsOf(t, r); m["outputDocumentCount"] != float64(len(documents(t, r, "Documents"))) || r.header.Get("x-ms-cosmos-index-utilization") == "" {
			t.Errorf("page after %q: %s", token, r.header.Get("x-ms-documentdb-query-metrics"))
		}
		token = r.header.Get("x-ms-continuation")
	}
}

// TestOrderByCompositeIndex: the front refuses, as Cosmos DB does, a query
// ordered by several paths that no composite index serves, unless
// Config.AllowOrderByWithoutCompositeIndex.
func TestOrderByCompositeIndex(t *testing.T) {
	for _, lenient := range []bool{false, true} {
		_, c := testServer(t, cosmosrest.Config{AllowOrderByWithoutCompositeIndex: lenient})
		createDB(t, c, "db")
		must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/t"}},
			"indexingPolicy": map[string]any{"compositeIndexes": [][]map[string]any{{{"path": "/n"}, {"path": "/id", "order": "descending"}}}}}), 201)
		const coll = "/dbs/db/colls/c"
		pk := []string{"x-ms-documentdb-partitionkey", `["a"]`}
		for i := range 4 {
			must(t, c.do("POST", coll+"/docs", fmt.Sprintf(`{"id":"%d","t":"a","n":%d}`, i, i%2), pk...), 201)
		}
		r := must(t, c.query(coll, "SELECT VALUE c.id FROM c ORDER BY c.n, c.id DESC", nil, pk...), 200)
		if got, _ := json.Marshal(documents(t, r, "Documents")); string(got) != `["2","0","3","1"]` {
			t.Errorf("served by the composite index: %s", got)
		}
		must(t, c.query(coll, "SELECT VALUE c.id FROM c ORDER BY c.n DESC, c.id", nil, pk...), 200)
		r = c.query(coll, "SELECT VALUE c.id FROM c ORDER BY c.n, c.id", nil, pk...)
		if lenient {
			must(t, r, 200)
			continue
		}
		must(t, r, 400)
		if msg, _ := r.json(t)["message"].(string); !strings.Contains(msg, "The order by query does not have a corresponding composite index that it can be served from.") {
			t.Errorf("message %q", msg)
		}
	}
}

// TestQueryPagesParameters: the continuation of a query with several
// parameters answers the same query with the same parameters on the next
// request, every time (the front passes them on in a map's order, which
// changes from one request to the next).
func TestQueryPagesParameters(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	const coll = "/dbs/db/colls/c"
	pk := []string{"x-ms-documentdb-partitionkey", `["a"]`, "x-ms-max-item-count", "4"}
	for i := range 10 {
		must(t, c.do("POST", coll+"/docs", fmt.Sprintf(`{"id":"%d","pk":"a","n":%d}`, i, i), pk[:2]...), 201)
	}
	const text = "SELECT VALUE c.id FROM c WHERE c.n >= @a AND c.n < @b AND @c < @d ORDER BY c.n DESC"
	params := []map[string]any{{"name": "@a", "value": 1}, {"name": "@b", "value": 9}, {"name": "@c", "value": 1}, {"name": "@d", "value": 2}}
	for range 20 {
		var ids []json.RawMessage
		token := ""
		for range 3 {
			r := must(t, c.query(coll, text, params, append(slices.Clone(pk), "x-ms-continuation", token)...), 200)
			ids = append(ids, documents(t, r, "Documents")...)
			if token = r.header.Get("x-ms-continuation"); token == "" {
				break
			}
		}
		if got, _ := json.Marshal(ids); string(got) != `["8","7","6","5","4","3","2","1"]` || token != "" {
			t.Fatalf("got %s, token %q", got, token)
		}
	}
}

// TestQueryBodyMalformed: a query request whose body is not a query
// specification (queryspec) is a 400 saying what it must be, for the
// documents, the query plan and the databases alike; a parameter without
// a value is missing.
func TestQueryBodyMalformed(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	const coll = "/dbs/db/colls/c"
	q := []string{"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True", "x-ms-documentdb-query-enablecrosspartition", "True"}
	const want = `The request payload is invalid. Ensure to provide a valid request payload. (lethe: the body of a query must be a JSON object {"query": "...", "parameters": [{"name": "@p", "value": ...}]})`
	for _, body := range []string{`{"parameters":[]}`, `{"query":7}`, `[]`, `{"query":"SELECT * FROM c"`} {
		for _, path := range []string{coll + "/docs", "/dbs"} {
			r := must(t, c.do("POST", path, body, q...), 400)
			if msg, _ := r.json(t)["message"].(string); msg != want {
				t.Errorf("%s to %s: %q", body, path, msg)
			}
		}
		r := must(t, c.do("POST", coll+"/docs", body, append(slices.Clone(q), "x-ms-cosmos-is-query-plan-request", "True")...), 400)
		if msg, _ := r.json(t)["message"].(string); msg != want {
			t.Errorf("%s, plan: %q", body, msg)
		}
	}
	r := must(t, c.do("POST", coll+"/docs", `{"query":"SELECT * FROM c WHERE c.n = @n","parameters":[{"name":"@n"}]}`, q...), 400)
	if msg, _ := r.json(t)["message"].(string); !strings.Contains(msg, "missing parameter @n") {
		t.Errorf("a parameter without a value: %q", msg)
	}
}
