package query

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// planJSON is the service plan of text as the plan endpoint writes it: the
// queryInfo, or the hybridSearchQueryInfo.
func planJSON(t *testing.T, text string, o PlanOptions) string {
	t.Helper()
	q, err := Parse(text)
	require.NoError(t, err)
	qi, h, err := q.ServicePlan(o)
	require.NoError(t, err)
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if h != nil {
		err = enc.Encode(h)
	} else {
		err = enc.Encode(qi)
	}
	require.NoError(t, err)
	return strings.TrimSuffix(b.String(), "\n")
}

// TestServicePlan compares the plans with the service's own, as the SDKs'
// tests carry them (the .NET SDK's QueryPlanRetrieverTests, whose
// expected plans come from the service's query engine), and with the
// shapes the SDKs' pipelines read for the others.
func TestServicePlan(t *testing.T) {
	const none = `"distinctType":"None","top":null,"offset":null,"limit":null,`
	const empty = `"orderBy":[],"orderByExpressions":[],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},`
	const tail = `"dCountInfo":null,"hasNonStreamingOrderBy":false}`
	euclidean := func([]string) (string, string) { return "euclidean", "float32" }
	for _, tc := range []struct {
		name, query string
		o           PlanOptions
		want        string
	}{
		{"plain", `SELECT * FROM c WHERE FullTextContains(c.abstract, 'calculation')`, PlanOptions{},
			`{` + none + empty + `"rewrittenQuery":"","hasSelectValue":false,` + tail},
		{"ORDER BY", `SELECT * FROM c ORDER BY c.id`, PlanOptions{},
			`{` + none + `"orderBy":["Ascending"],"orderByExpressions":["c.id"],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},` +
				`"rewrittenQuery":"SELECT c._rid, [{\"item\": c.id}] AS orderByItems, c AS payload\nFROM c\nWHERE ({documentdb-formattableorderbyquery-filter})\nORDER BY c.id","hasSelectValue":false,` + tail},
		{"ORDER BY several, a filter, TOP", `SELECT TOP 3 c.id, c["a b"] AS ab FROM c WHERE c.n > 1 ORDER BY c.n DESC, c.id`, PlanOptions{},
			`{"distinctType":"None","top":3,"offset":null,"limit":null,"orderBy":["Descending","Ascending"],"orderByExpressions":["c.n","c.id"],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},` +
				`"rewrittenQuery":"SELECT TOP 3 c._rid, [{\"item\": c.n}, {\"item\": c.id}] AS orderByItems, {\"id\": c.id, \"ab\": c[\"a b\"]} AS payload\nFROM c\nWHERE ((c.n > 1) AND ({documentdb-formattableorderbyquery-filter}))\nORDER BY c.n DESC, c.id","hasSelectValue":false,` + tail},
		{"GROUP BY", `SELECT c.id FROM c GROUP BY c.id`, PlanOptions{},
			`{` + none + `"orderBy":[],"orderByExpressions":[],"groupByExpressions":["c.id"],"groupByAliases":["id"],"aggregates":[],"groupByAliasToAggregateType":{"id":null},` +
				`"rewrittenQuery":"SELECT [{\"item\": c.id}] AS groupByItems, {\"id\": c.id} AS payload\nFROM c\nGROUP BY c.id","hasSelectValue":false,` + tail},
		{"GROUP BY with MIN and MAX", `SELECT c.region, c.zipcode, MIN(c.age) AS min_age, MAX(c.age) AS max_age FROM c GROUP BY c.region, c.zipcode`, PlanOptions{},
			`{` + none + `"orderBy":[],"orderByExpressions":[],"groupByExpressions":["c.region","c.zipcode"],"groupByAliases":["region","zipcode","min_age","max_age"],"aggregates":[],"groupByAliasToAggregateType":{"max_age":"Max","min_age":"Min","region":null,"zipcode":null},` +
				`"rewrittenQuery":"SELECT [{\"item\": c.region}, {\"item\": c.zipcode}] AS groupByItems, {\"region\": c.region, \"zipcode\": c.zipcode, \"min_age\": {\"item\": MIN(c.age), \"item2\": {\"min\": MIN(c.age), \"count\": COUNT(c.age)}}, \"max_age\": {\"item\": MAX(c.age), \"item2\": {\"max\": MAX(c.age), \"count\": COUNT(c.age)}}} AS payload\nFROM c\nGROUP BY c.region, c.zipcode","hasSelectValue":false,` + tail},
		{"GROUP BY with COUNTIF", `SELECT c.zipcode, COUNTIF(c.valid) AS valid_count FROM c GROUP BY c.zipcode`, PlanOptions{},
			`{` + none + `"orderBy":[],"orderByExpressions":[],"groupByExpressions":["c.zipcode"],"groupByAliases":["zipcode","valid_count"],"aggregates":[],"groupByAliasToAggregateType":{"valid_count":"CountIf","zipcode":null},` +
				`"rewrittenQuery":"SELECT [{\"item\": c.zipcode}] AS groupByItems, {\"zipcode\": c.zipcode, \"valid_count\": {\"item\": COUNTIF(c.valid)}} AS payload\nFROM c\nGROUP BY c.zipcode","hasSelectValue":false,` + tail},
		{"GROUP BY VALUE", `SELECT VALUE COUNT(1) FROM c GROUP BY c.k`, PlanOptions{},
			`{` + none + `"orderBy":[],"orderByExpressions":[],"groupByExpressions":["c.k"],"groupByAliases":[],"aggregates":["Count"],"groupByAliasToAggregateType":{},` +
				`"rewrittenQuery":"SELECT [{\"item\": c.k}] AS groupByItems, [{\"item\": COUNT(1)}] AS payload\nFROM c\nGROUP BY c.k","hasSelectValue":true,` + tail},
		{"VALUE COUNTIF", `SELECT VALUE COUNTIF(c.valid) FROM c`, PlanOptions{},
			`{` + none + `"orderBy":[],"orderByExpressions":[],"groupByExpressions":[],"groupByAliases":[],"aggregates":["CountIf"],"groupByAliasToAggregateType":{},` +
				`"rewrittenQuery":"SELECT VALUE [{\"item\": COUNTIF(c.valid)}]\nFROM c","hasSelectValue":true,` + tail},
		{"VALUE AVG", `SELECT VALUE AVG(c.n) FROM c WHERE c.n > 0`, PlanOptions{},
			`{` + none + `"orderBy":[],"orderByExpressions":[],"groupByExpressions":[],"groupByAliases":[],"aggregates":["Average"],"groupByAliasToAggregateType":{},` +
				`"rewrittenQuery":"SELECT VALUE [{\"item\": {\"sum\": SUM(c.n), \"count\": COUNT(c.n)}}]\nFROM c\nWHERE (c.n > 0)","hasSelectValue":true,` + tail},
		{"aggregates without VALUE", `SELECT COUNTIF(_FullTextWordCount(c.abstract) > 10), COUNTIF(FullTextContains(c.abstract, 'inspiration')) FROM c`, PlanOptions{},
			`{` + none + `"orderBy":[],"orderByExpressions":[],"groupByExpressions":[],"groupByAliases":["$1","$2"],"aggregates":[],"groupByAliasToAggregateType":{"$1":"CountIf","$2":"CountIf"},` +
				`"rewrittenQuery":"SELECT {\"$1\": {\"item\": COUNTIF((_FullTextWordCount(c.abstract) > 10))}, \"$2\": {\"item\": COUNTIF(FullTextContains(c.abstract, \"inspiration\"))}} AS payload\nFROM c","hasSelectValue":false,` + tail},
		{"DISTINCT", `SELECT DISTINCT VALUE c.id FROM c`, PlanOptions{},
			`{"distinctType":"Unordered","top":null,"offset":null,"limit":null,` + empty + `"rewrittenQuery":"","hasSelectValue":true,` + tail},
		{"OFFSET LIMIT", `SELECT c.id FROM c OFFSET @o LIMIT 7`, PlanOptions{Params: map[string]any{"@o": 5}},
			`{"distinctType":"None","top":null,"offset":5,"limit":7,` + empty + `"rewrittenQuery":"SELECT c.id\nFROM c\nOFFSET 0 LIMIT 12","hasSelectValue":false,` + tail},
		{"VectorDistance, dot product", `SELECT c.id, VectorDistance([-0.008861,0.097097], c.vector1, true, {dataType:'Float32', distanceFunction:'DotProduct'}) AS VectorDistance FROM c ORDER BY VectorDistance([-0.008861,0.097097], c.vector1, true, {dataType:'Float32', distanceFunction:'DotProduct'})`, PlanOptions{},
			`{` + none + `"orderBy":["Descending"],"orderByExpressions":["VectorDistance([-0.008861, 0.097097], c.vector1, true, {\"dataType\": \"Float32\", \"distanceFunction\": \"DotProduct\"})"],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},` +
				`"rewrittenQuery":"SELECT c._rid, [{\"item\": VectorDistance([-0.008861, 0.097097], c.vector1, true, {\"dataType\": \"Float32\", \"distanceFunction\": \"DotProduct\"})}] AS orderByItems, {\"id\": c.id, \"VectorDistance\": VectorDistance([-0.008861, 0.097097], c.vector1, true, {\"dataType\": \"Float32\", \"distanceFunction\": \"DotProduct\"})} AS payload\nFROM c\nWHERE ({documentdb-formattableorderbyquery-filter})\nORDER BY VectorDistance([-0.008861, 0.097097], c.vector1, true, {\"dataType\": \"Float32\", \"distanceFunction\": \"DotProduct\"})","hasSelectValue":false,"dCountInfo":null,"hasNonStreamingOrderBy":true}`},
		{"VectorDistance, euclidean by policy, OFFSET LIMIT", `SELECT c._ts FROM c ORDER BY VectorDistance([0.66178012, -0.37191326], c.vector1) OFFSET 5 LIMIT 7`, PlanOptions{Vector: euclidean},
			`{"distinctType":"None","top":null,"offset":5,"limit":7,"orderBy":["Ascending"],"orderByExpressions":["VectorDistance([0.66178012, -0.37191326], c.vector1)"],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},` +
				`"rewrittenQuery":"SELECT c._rid, [{\"item\": VectorDistance([0.66178012, -0.37191326], c.vector1)}] AS orderByItems, {\"_ts\": c._ts} AS payload\nFROM c\nWHERE ({documentdb-formattableorderbyquery-filter})\nORDER BY VectorDistance([0.66178012, -0.37191326], c.vector1)\nOFFSET 0 LIMIT 12","hasSelectValue":false,"dCountInfo":null,"hasNonStreamingOrderBy":true}`},
		{"FullTextScore", `SELECT TOP 10 * FROM c ORDER BY RANK FullTextScore(c.text, "swim", "run")`, PlanOptions{},
			`{"globalStatisticsQuery":"SELECT COUNT(1) AS documentCount, [{\"totalWordCount\": SUM(_FullTextWordCount(c.text)), \"hitCounts\": [COUNTIF(FullTextContains(c.text, \"swim\")), COUNTIF(FullTextContains(c.text, \"run\"))]}] AS fullTextStatistics\nFROM c",` +
				`"componentQueryInfos":[{"distinctType":"None","top":120,"offset":null,"limit":null,"orderBy":["Descending"],"orderByExpressions":["_FullTextScore(c.text, [\"swim\", \"run\"], {documentdb-formattablehybridsearchquery-totaldocumentcount}, {documentdb-formattablehybridsearchquery-totalwordcount-0}, {documentdb-formattablehybridsearchquery-hitcountsarray-0})"],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},` +
				`"rewrittenQuery":"SELECT TOP 120 c._rid, [{\"item\": _FullTextScore(c.text, [\"swim\", \"run\"], {documentdb-formattablehybridsearchquery-totaldocumentcount}, {documentdb-formattablehybridsearchquery-totalwordcount-0}, {documentdb-formattablehybridsearchquery-hitcountsarray-0})}] AS orderByItems, {\"payload\": c, \"componentScores\": [(_FullTextScore(c.text, [\"swim\", \"run\"], {documentdb-formattablehybridsearchquery-totaldocumentcount}, {documentdb-formattablehybridsearchquery-totalwordcount-0}, {documentdb-formattablehybridsearchquery-hitcountsarray-0}) ?? -1)]} AS payload\nFROM c\nWHERE ({documentdb-formattableorderbyquery-filter})\nORDER BY _FullTextScore(c.text, [\"swim\", \"run\"], {documentdb-formattablehybridsearchquery-totaldocumentcount}, {documentdb-formattablehybridsearchquery-totalwordcount-0}, {documentdb-formattablehybridsearchquery-hitcountsarray-0}) DESC","hasSelectValue":false,"dCountInfo":null,"hasNonStreamingOrderBy":true}],` +
				`"componentWithoutPayloadQueryInfos":[],"projectionQueryInfo":null,"componentWeights":[],"skip":null,"take":10,"requiresGlobalStatistics":true}`},
		{"RRF optimized, weighted", `SELECT TOP 10 * FROM c ORDER BY RANK RRF(VectorDistance(c.backup_image, [0.5, 0.2, 0.33]), VectorDistance(c.image, [1, 2, 3]), [1, -0.3])`, PlanOptions{SkipOrderByRewrite: true},
			`{"globalStatisticsQuery":"SELECT COUNT(1) AS documentCount, [] AS fullTextStatistics\nFROM c","componentQueryInfos":[` +
				`{` + none + empty + `"rewrittenQuery":"SELECT TOP 120 c._rid, c AS payload, [(_VectorScore(c.backup_image, [0.5, 0.2, 0.33]) ?? -1.79769e+308), (-1 * (_VectorScore(c.image, [1, 2, 3]) ?? 1.79769e+308))] AS componentScores\nFROM c\nORDER BY _VectorScore(c.backup_image, [0.5, 0.2, 0.33])","hasSelectValue":false,` + tail + `,` +
				`{` + none + empty + `"rewrittenQuery":"SELECT TOP 120 c._rid, c AS payload, [(_VectorScore(c.backup_image, [0.5, 0.2, 0.33]) ?? -1.79769e+308), (-1 * (_VectorScore(c.image, [1, 2, 3]) ?? 1.79769e+308))] AS componentScores\nFROM c\nORDER BY _VectorScore(c.image, [1, 2, 3]) ASC","hasSelectValue":false,` + tail + `],` +
				`"componentWithoutPayloadQueryInfos":[],"projectionQueryInfo":null,"componentWeights":[1,0.3],"skip":null,"take":10,"requiresGlobalStatistics":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, planJSON(t, tc.query, tc.o))
		})
	}
}

// TestServicePlanRefusals: shapes without a rewrite, and a missing
// parameter.
func TestServicePlanRefusals(t *testing.T) {
	for _, text := range []string{
		`SELECT * FROM c.children ch ORDER BY ch.age`,
		`SELECT VALUE COUNT(1) + 1 FROM c`,
		`SELECT COUNT(1) + 1 AS n FROM c`,
	} {
		q, err := Parse(text)
		require.NoError(t, err)
		_, _, err = q.ServicePlan(PlanOptions{})
		assert.ErrorIs(t, err, ErrNoServicePlan, text)
	}
	q, err := Parse(`SELECT TOP @n * FROM c ORDER BY c.id`)
	require.NoError(t, err)
	_, _, err = q.ServicePlan(PlanOptions{})
	var qe *Error
	assert.ErrorAs(t, err, &qe)
}

// TestServicePlanValueRank: ORDER BY RANK with SELECT VALUE has the
// hybrid search plan of the other projections, its payload the VALUE's
// expression, as the service's (the .NET SDK reads any payload); for a
// client that reads only object payloads (ObjectPayloads), only a VALUE
// that is an object by its form has one.
func TestServicePlanValueRank(t *testing.T) {
	const rank = ` FROM c ORDER BY RANK FullTextScore(c.text, "swim")`
	const score = `_FullTextScore(c.text, [\"swim\"], {documentdb-formattablehybridsearchquery-totaldocumentcount}, {documentdb-formattablehybridsearchquery-totalwordcount-0}, {documentdb-formattablehybridsearchquery-hitcountsarray-0})`
	component := func(payload string) string {
		return `"rewrittenQuery":"SELECT TOP 24 c._rid, [{\"item\": ` + score + `}] AS orderByItems, {\"payload\": ` + payload +
			`, \"componentScores\": [(` + score + ` ?? -1)]} AS payload\nFROM c\nWHERE ({documentdb-formattableorderbyquery-filter})\nORDER BY ` + score + ` DESC"`
	}
	// The optimized plan of an RRF has the VALUE as its results' payload.
	assert.Contains(t, planJSON(t, `SELECT TOP 1 VALUE c.id FROM c ORDER BY RANK RRF(VectorDistance(c.v, [1, 2]), VectorDistance(c.w, [3, 4]))`, PlanOptions{SkipOrderByRewrite: true}),
		`"rewrittenQuery":"SELECT TOP 12 c._rid, c.id AS payload, [(_VectorScore(c.v, [1, 2]) ?? -1.79769e+308), (_VectorScore(c.w, [3, 4]) ?? -1.79769e+308)] AS componentScores\nFROM c\nORDER BY _VectorScore(c.v, [1, 2])"`)
	for _, tc := range []struct {
		name, query string
		objects     bool
		payload     string // "" for no plan
	}{
		{"a path", `SELECT TOP 2 VALUE c.id` + rank, false, `c.id`},
		{"a path, for a client of object payloads", `SELECT TOP 2 VALUE c.id` + rank, true, ""},
		{"an expression, for a client of object payloads", `SELECT TOP 2 VALUE [c.id]` + rank, true, ""},
		{"a join's alias, for a client of object payloads", `SELECT TOP 2 VALUE t FROM c JOIN t IN c.tags ORDER BY RANK FullTextScore(c.text, "swim")`, true, ""},
		{"the item", `SELECT TOP 2 VALUE c` + rank, true, `c`},
		{"an object", `SELECT TOP 2 VALUE {"id": c.id, "n": c.n + 1}` + rank, true, `{\"id\": c.id, \"n\": (c.n + 1)}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := PlanOptions{ObjectPayloads: tc.objects}
			if tc.payload == "" {
				q, err := Parse(tc.query)
				require.NoError(t, err)
				_, _, err = q.ServicePlan(o)
				assert.ErrorIs(t, err, ErrNoServicePlan)
				return
			}
			assert.Contains(t, planJSON(t, tc.query, o), component(tc.payload))
		})
	}
}

func TestSystemFields(t *testing.T) {
	for _, tc := range []struct {
		query, text string
		rids        []string
		items       [][]string
	}{
		{`SELECT * FROM c`, "", nil, nil},
		{`SELECT VALUE c._rid FROM c`, "", nil, nil},
		{`SELECT c.id, c.x._rid FROM c`, "", nil, nil},
		{`SELECT c._rid, [{"item": c.n}] AS orderByItems, c AS payload FROM c WHERE (true) ORDER BY c.n`,
			`SELECT {"id": c["id"], "a": {"b": c["a"]["b"], "c": c["a"]["c"]}, "k": c["k"]} AS _rid, [{"item": c["n"]}] AS orderByItems, c AS payload FROM c AS c WHERE true ORDER BY c["n"]`,
			[]string{"_rid"}, [][]string{{"payload"}}},
		{`SELECT r._rid AS id, {"payload": r, "s": [1]} AS payload FROM root r`,
			`SELECT {"id": r["id"], "a": {"b": r["a"]["b"], "c": r["a"]["c"]}, "k": r["k"]} AS id, {"payload": r, "s": [1]} AS payload FROM root AS r`,
			[]string{"id"}, [][]string{{"payload", "payload"}}},
		{`SELECT ch._rid, ch AS payload FROM c.children ch`, "", nil, nil},
	} {
		q, err := Parse(tc.query)
		require.NoError(t, err)
		names, text := q.RIDFields([][]string{{"a", "b"}, {"k"}, {"a", "c"}})
		assert.Equal(t, tc.rids, names, tc.query)
		assert.Equal(t, tc.text, text, tc.query)
		assert.Equal(t, tc.items, q.ItemFields(), tc.query)
		assert.Equal(t, strings.Contains(tc.query, "AS orderByItems"), q.Selects("orderByItems"), tc.query)
		if text != "" {
			_, err := Parse(text)
			assert.NoError(t, err, text)
		}
	}
}

// TestPartitionKeyPoints: the partition key values a filter pins, for the
// plan's query ranges.
func TestPartitionKeyPoints(t *testing.T) {
	pk := [][]string{{"pk"}}
	tree := [][]string{{"tenant"}, {"user", "id"}}
	many := make([]string, 1001)
	for i := range many {
		many[i] = strconv.Itoa(i)
	}
	for _, tc := range []struct {
		name, query string
		paths       [][]string
		want        [][]any // nil: no points
	}{
		{"equality", `SELECT * FROM c WHERE c.pk = 'x'`, pk, [][]any{{"x"}}},
		{"equality, reversed, among others", `SELECT * FROM c WHERE c.n > 1 AND 'x' = c.pk AND c.k = 2 ORDER BY c.n`, pk, [][]any{{"x"}}},
		{"a parameter", `SELECT * FROM c WHERE c.pk = @p`, pk, [][]any{{float64(3)}}},
		{"null and a boolean", `SELECT * FROM c WHERE c.pk IN (null, true)`, pk, [][]any{{nil}, {true}}},
		{"IN", `SELECT * FROM c WHERE c.pk IN ('a', 'b')`, pk, [][]any{{"a"}, {"b"}}},
		{"hierarchical", `SELECT * FROM c WHERE c.tenant = 't' AND c.user.id IN ('u', 'v')`, tree, [][]any{{"t", "u"}, {"t", "v"}}},
		{"hierarchical prefix", `SELECT * FROM c WHERE c.tenant IN ('t', 's') AND c.user.name = 'u'`, tree, [][]any{{"t"}, {"s"}}},
		{"hierarchical, not from the first path", `SELECT * FROM c WHERE c.user.id = 'u'`, tree, nil},
		{"hierarchical, too many below a prefix", `SELECT * FROM c WHERE c.tenant = 't' AND c.user.id IN (` + strings.Join(many, ", ") + `)`, tree, [][]any{{"t"}}},
		{"no filter", `SELECT * FROM c`, pk, nil},
		{"a range", `SELECT * FROM c WHERE c.pk > 'a'`, pk, nil},
		{"OR", `SELECT * FROM c WHERE c.pk = 'a' OR c.n = 1`, pk, nil},
		{"another path", `SELECT * FROM c WHERE c.pk2 = 'a'`, pk, nil},
		{"an array", `SELECT * FROM c WHERE c.pk = [1]`, pk, nil},
		{"FROM a path", `SELECT * FROM c.children ch WHERE ch.pk = 'a'`, pk, nil},
		{"no paths", `SELECT * FROM c WHERE c.pk = 'a'`, nil, nil},
		{"too many", `SELECT * FROM c WHERE c.pk IN (` + strings.Join(many, ", ") + `)`, pk, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.query)
			require.NoError(t, err)
			got, ok := q.PartitionKeyPoints(map[string]any{"@p": 3}, tc.paths)
			assert.Equal(t, tc.want != nil, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestAggregateOrderBy: an aggregate without GROUP BY takes an ORDER BY, as
// the service's does (the SDKs' aggregate specs send one): its one result
// is the aggregate's, and its plan the aggregate's.
func TestAggregateOrderBy(t *testing.T) {
	got, err := run(t, `SELECT VALUE MIN(c.n) FROM c WHERE IS_NUMBER(c.n) ORDER BY c.n DESC, c.id`, nil, []Doc{
		{ID: "a", JSON: []byte(`{"id":"a","n":3}`)}, {ID: "b", JSON: []byte(`{"id":"b","n":1}`)}, {ID: "c", JSON: []byte(`{"id":"c"}`)},
	})
	require.NoError(t, err)
	assert.Equal(t, `[1]`, got)
	assert.Contains(t, planJSON(t, `SELECT VALUE COUNT(c.k) FROM c ORDER BY c.k`, PlanOptions{}),
		`"orderBy":[],"orderByExpressions":[],"groupByExpressions":[],"groupByAliases":[],"aggregates":["Count"],"groupByAliasToAggregateType":{},"rewrittenQuery":"SELECT VALUE [{\"item\": COUNT(c.k)}]\nFROM c","hasSelectValue":true`)
}
