package cosmosrest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// TestRewrittenQueries runs the queries of the service's plans as an SDK
// does: the plan, then the rewritten query for the range with its
// placeholders replaced. An ORDER BY query's results carry the item's _rid
// (the one a point read gives) and a payload with the item's system
// properties; the partial aggregates, GROUP BY items, global statistics
// and hybrid components come in the service's shapes.
func TestRewrittenQueries(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", searchContainer), 201)
	const coll = "/dbs/db/colls/search"
	for _, doc := range []map[string]any{
		{"id": "1", "pk": "a", "n": 3, "title": "red fox", "embedding": []float64{1, 0, 0}},
		{"id": "2", "pk": "a", "n": 1, "title": "brown bear", "embedding": []float64{0, 1, 0}},
		{"id": "3", "pk": "b", "n": 2, "title": "red apples and red cherries", "embedding": []float64{0.9, 0.1, 0}},
	} {
		must(t, c.do("POST", coll+"/docs", doc, "x-ms-documentdb-partitionkey", `["`+doc["pk"].(string)+`"]`), 201)
	}
	var read map[string]any
	if err := json.Unmarshal(must(t, c.do("GET", coll+"/docs/1", nil, "x-ms-documentdb-partitionkey", `["a"]`), 200).body, &read); err != nil {
		t.Fatal(err)
	}
	plan := func(text string, features string) map[string]json.RawMessage {
		t.Helper()
		r := must(t, c.query(coll, text, nil, "x-ms-cosmos-is-query-plan-request", "True", "x-ms-cosmos-supported-query-features", features), 200)
		var p map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rewritten := func(info json.RawMessage) string {
		t.Helper()
		var qi struct{ RewrittenQuery string }
		if err := json.Unmarshal(info, &qi); err != nil {
			t.Fatal(err)
		}
		r := strings.NewReplacer("{documentdb-formattableorderbyquery-filter}", "true",
			"{documentdb-formattablehybridsearchquery-totaldocumentcount}", "3",
			"{documentdb-formattablehybridsearchquery-totalwordcount-0}", "8",
			"{documentdb-formattablehybridsearchquery-hitcountsarray-0}", "[2]")
		return r.Replace(qi.RewrittenQuery)
	}
	run := func(text string) []map[string]any {
		t.Helper()
		var out []map[string]any
		for _, d := range documents(t, must(t, c.query(coll, text, nil, "x-ms-documentdb-partitionkeyrangeid", "0"), 200), "Documents") {
			var m map[string]any
			if err := json.Unmarshal(d, &m); err != nil {
				t.Fatalf("%s: %s", d, err)
			}
			out = append(out, m)
		}
		return out
	}

	res := run(rewritten(plan(`SELECT * FROM c ORDER BY c.n DESC`, "")["queryInfo"]))
	if len(res) != 3 || res[0]["_rid"] != read["_rid"] {
		t.Fatalf("ORDER BY: %v, want the _rid %v first", res, read["_rid"])
	}
	payload := res[0]["payload"].(map[string]any)
	for _, name := range []string{"_rid", "_self", "_etag", "_ts", "_attachments"} {
		if payload[name] != read[name] {
			t.Errorf("ORDER BY payload's %s: %v, want %v", name, payload[name], read[name])
		}
	}
	if items := res[0]["orderByItems"].([]any); len(items) != 1 || items[0].(map[string]any)["item"] != 3.0 {
		t.Errorf("ORDER BY items: %v", res[0]["orderByItems"])
	}

	// A query of the user's that selects c._rid and the item: in the
	// order of its select list.
	raw := documents(t, must(t, c.query(coll, `SELECT c.id, c AS doc, c._rid FROM c WHERE c.id = "1"`, nil, "x-ms-documentdb-partitionkey", `["a"]`), 200), "Documents")
	if len(raw) != 1 || !strings.HasPrefix(string(raw[0]), `{"id":"1","doc":{`) || !strings.HasSuffix(string(raw[0]), `,"_rid":"`+read["_rid"].(string)+`"}`) ||
		!strings.Contains(string(raw[0]), `"_self":"`+read["_self"].(string)+`"`) {
		t.Errorf("c.id, c AS doc, c._rid: %s", raw)
	}

	res = run(rewritten(plan(`SELECT c.pk, COUNT(1) AS n, MIN(c.n) AS least FROM c GROUP BY c.pk`, "")["queryInfo"]))
	got, _ := json.Marshal(res)
	want := `[{"groupByItems":[{"item":"a"}],"payload":{"least":{"item":1,"item2":{"count":2,"min":1}},"n":{"item":2},"pk":"a"}},` +
		`{"groupByItems":[{"item":"b"}],"payload":{"least":{"item":2,"item2":{"count":1,"min":2}},"n":{"item":1},"pk":"b"}}]`
	if string(got) != want {
		t.Errorf("GROUP BY: %s\nwant %s", got, want)
	}

	h := plan(`SELECT TOP 2 c.id FROM c ORDER BY RANK RRF(FullTextScore(c.title, "red"), VectorDistance(c.embedding, [1, 0, 0]))`, "HybridSearch,HybridSearchSkipOrderByRewrite")["hybridSearchQueryInfo"]
	var hi struct {
		GlobalStatisticsQuery string
		ComponentQueryInfos   []json.RawMessage
	}
	if err := json.Unmarshal(h, &hi); err != nil {
		t.Fatal(err)
	}
	got, _ = json.Marshal(run(hi.GlobalStatisticsQuery))
	if string(got) != `[{"documentCount":3,"fullTextStatistics":[{"hitCounts":[2],"totalWordCount":8}]}]` {
		t.Errorf("global statistics: %s", got)
	}
	if len(hi.ComponentQueryInfos) != 2 {
		t.Fatalf("components: %s", h)
	}
	// A ranked SELECT VALUE that may be no object, whose service plan
	// @azure/cosmos's hybrid search cannot read, gets a plan that asks
	// nothing of the SDK: lethe answers it whole for the range.
	if p := plan(`SELECT TOP 2 VALUE c.id FROM c ORDER BY RANK FullTextScore(c.title, "red")`, "HybridSearch"); p["hybridSearchQueryInfo"] != nil ||
		!strings.Contains(string(p["queryInfo"]), `"orderBy":[],`) || !strings.Contains(string(p["queryInfo"]), `"rewrittenQuery":""`) {
		t.Errorf("the plan of a ranked SELECT VALUE c.id: %v", p)
	}
	// One of the item gets the service's plan, and its components'
	// payloads carry the item's system properties.
	var hv struct{ ComponentQueryInfos []json.RawMessage }
	if err := json.Unmarshal(plan(`SELECT TOP 2 VALUE c FROM c ORDER BY RANK FullTextScore(c.title, "red")`, "HybridSearch")["hybridSearchQueryInfo"], &hv); err != nil || len(hv.ComponentQueryInfos) != 1 {
		t.Fatalf("the plan of a ranked SELECT VALUE c: %v %v", hv, err)
	}
	res = run(rewritten(hv.ComponentQueryInfos[0]))
	if len(res) != 3 || res[0]["payload"].(map[string]any)["payload"].(map[string]any)["_self"] == nil {
		t.Errorf("the component of a ranked SELECT VALUE c: %v", res)
	}
	res = run(rewritten(hi.ComponentQueryInfos[1]))
	if len(res) != 3 || res[0]["_rid"] != read["_rid"] || res[0]["payload"].(map[string]any)["id"] != "1" || len(res[0]["componentScores"].([]any)) != 2 {
		t.Errorf("vector component: %v", res)
	}
}

// TestRewrittenOrderByResumes: the continuation of a rewritten ORDER BY
// query resumes it, and resumes the query the SDK rewrites with the filter
// of what follows its last result (a text of its own) from the start of
// that filter, as the service's does, where lethe's own token would be
// refused for another query's.
func TestRewrittenOrderByResumes(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	const coll = "/dbs/db/colls/c"
	for i := range 5 {
		must(t, c.do("POST", coll+"/docs", map[string]any{"id": string(rune('a' + i)), "pk": "p", "n": i}, "x-ms-documentdb-partitionkey", `["p"]`), 201)
	}
	const rewritten = "SELECT c._rid, [{\"item\": c.n}] AS orderByItems, c.id AS payload\nFROM c\nWHERE (%s)\nORDER BY c.n"
	page := func(filter, token string) ([]string, string) {
		t.Helper()
		hdr := []string{"x-ms-documentdb-partitionkeyrangeid", "0", "x-ms-max-item-count", "2"}
		if token != "" {
			hdr = append(hdr, "x-ms-continuation", token)
		}
		r := must(t, c.query(coll, strings.Replace(rewritten, "%s", filter, 1), nil, hdr...), 200)
		var ids []string
		for _, d := range documents(t, r, "Documents") {
			var m struct{ Payload string }
			if err := json.Unmarshal(d, &m); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, m.Payload)
		}
		return ids, r.header.Get("x-ms-continuation")
	}
	first, token := page("true", "")
	if strings.Join(first, ",") != "a,b" || !strings.HasPrefix(token, "ob:") {
		t.Fatalf("first page: %v, token %q", first, token)
	}
	if next, _ := page("true", token); strings.Join(next, ",") != "c,d" {
		t.Errorf("the same query resumed: %v", next)
	}
	if next, _ := page("(c.n >= 1)", token); strings.Join(next, ",") != "b,c" {
		t.Errorf("the query with the SDK's filter: %v, want its first page", next)
	}
	// A query of the user's that selects c._rid keeps lethe's check of its
	// tokens.
	hdr := []string{"x-ms-documentdb-partitionkeyrangeid", "0", "x-ms-max-item-count", "2"}
	r := must(t, c.query(coll, "SELECT c._rid, c.id FROM c ORDER BY c.n", nil, hdr...), 200)
	must(t, c.query(coll, "SELECT c._rid, c.id FROM c WHERE c.n > 0 ORDER BY c.n", nil, append(hdr, "x-ms-continuation", r.header.Get("x-ms-continuation"))...), 400)
}

// TestPlanQueryRanges: a plan's query ranges are the whole space, or when
// the filter pins the partition key, the key's point, [epk, epk], and when
// it pins a hierarchical key's prefix, the range of the prefix's keys, by
// the container's hash (version 1 or 2, MultiHash); several keys (IN) get
// one range from the least to the greatest.
func TestPlanQueryRanges(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{Ranges: cosmosrest.RangeConfig{Min: 4}})
	createDB(t, c, "db")
	defs := map[string]lethe.PartitionKeyDefinition{
		"v2":   {Paths: []string{"/pk"}, Kind: lethe.PartitionKeyKindHash, Version: 2},
		"v1":   {Paths: []string{"/pk"}, Kind: lethe.PartitionKeyKindHash, Version: 1},
		"tree": {Paths: []string{"/t", "/u/id"}, Kind: lethe.PartitionKeyKindMultiHash, Version: 2},
	}
	for id, def := range defs {
		must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": id, "partitionKey": def}), 201)
	}
	const whole = `[{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}]`
	point := func(coll string, pk lethe.PartitionKey) string {
		k := lethe.EffectivePartitionKey(defs[coll], pk)
		return `{"min":"` + k + `","max":"` + k + `","isMinInclusive":true,"isMaxInclusive":true}`
	}
	prefix := func(pk lethe.PartitionKey) string {
		fr := lethe.PrefixFeedRange(pk)
		return `{"min":"` + fr.MinInclusive + `","max":"` + fr.MaxExclusive + `","isMinInclusive":true,"isMaxInclusive":false}`
	}
	// span is the range from the lesser of two ranges' min to the other's
	// max.
	span := func(x, y string) string {
		if x > y {
			x, y = y, x
		}
		return x[:strings.Index(x, `"max"`)] + y[strings.Index(y, `"max"`):]
	}
	s := lethe.NewPartitionKeyString
	a, b := point("v2", s("a")), point("v2", s("b"))
	for _, tc := range []struct {
		name, coll, query string
		want              string
	}{
		{"no filter", "v2", `SELECT * FROM c ORDER BY c.n`, whole},
		{"a key", "v2", `SELECT * FROM c WHERE c.pk = "a" ORDER BY c.n`, `[` + point("v2", s("a")) + `]`},
		{"a key by parameter", "v2", `SELECT VALUE COUNT(1) FROM c WHERE c.pk = @k`, `[` + point("v2", lethe.NewPartitionKeyNumber(7)) + `]`},
		{"IN: from the least key to the greatest", "v2", `SELECT * FROM c WHERE c.pk IN ("b", "a", "b")`, `[` + span(a, b) + `]`},
		{"IN of one key", "v2", `SELECT * FROM c WHERE c.pk IN ("a", "a")`, `[` + point("v2", s("a")) + `]`},
		{"IN on a hierarchical prefix", "tree", `SELECT * FROM c WHERE c.t IN ("x", "w")`, `[` + span(prefix(s("x")), prefix(s("w"))) + `]`},
		{"version 1", "v1", `SELECT * FROM c WHERE c.pk = "a" ORDER BY c.n`, `[` + point("v1", s("a")) + `]`},
		{"a hierarchical key", "tree", `SELECT * FROM c WHERE c.t = "x" AND c.u.id = "y" ORDER BY c.n`, `[` + point("tree", s("x").AppendString("y")) + `]`},
		{"a hierarchical prefix", "tree", `SELECT * FROM c WHERE c.t = "x" ORDER BY c.n`, `[` + prefix(s("x")) + `]`},
		{"a hierarchical key's second path alone", "tree", `SELECT * FROM c WHERE c.u.id = "y" ORDER BY c.n`, whole},
		{"a range of keys", "v2", `SELECT * FROM c WHERE c.pk > "a" ORDER BY c.n`, whole},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := must(t, c.query("/dbs/db/colls/"+tc.coll, tc.query, []map[string]any{{"name": "@k", "value": 7}}, "x-ms-cosmos-is-query-plan-request", "True"), 200)
			var p struct{ QueryRanges json.RawMessage }
			if err := json.Unmarshal(r.body, &p); err != nil {
				t.Fatal(err)
			}
			if string(p.QueryRanges) != tc.want {
				t.Errorf("queryRanges %s\nwant %s", p.QueryRanges, tc.want)
			}
		})
	}
}
