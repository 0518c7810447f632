package lethe_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lethedb/lethe"
)

// metricNames are the names of Cosmos DB's x-ms-documentdb-query-metrics,
// in the order the service writes them.
var metricNames = []string{
	"totalExecutionTimeInMs", "queryCompileTimeInMs", "queryLogicalPlanBuildTimeInMs",
	"queryPhysicalPlanBuildTimeInMs", "queryOptimizationTimeInMs", "VMExecutionTimeInMs",
	"indexLookupTimeInMs", "documentLoadTimeInMs", "systemFunctionExecuteTimeInMs",
	"userFunctionExecuteTimeInMs", "retrievedDocumentCount", "retrievedDocumentSize",
	"outputDocumentCount", "outputDocumentSize", "writeOutputTimeInMs", "indexUtilizationRatio",
}

// parseMetrics reads a page's QueryMetrics, checking that it has every
// name, in order, each once, with a number.
func parseMetrics(t *testing.T, s string) map[string]float64 {
	t.Helper()
	pairs := strings.Split(s, ";")
	require.Len(t, pairs, len(metricNames), s)
	m := map[string]float64{}
	for i, p := range pairs {
		name, v, ok := strings.Cut(p, "=")
		require.True(t, ok, s)
		require.Equal(t, metricNames[i], name, s)
		f, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err, s)
		if strings.HasSuffix(name, "InMs") || name == "indexUtilizationRatio" {
			require.Regexp(t, `^\d+\.\d\d$`, v, "%s has two decimals: %s", name, s)
		} else {
			require.Regexp(t, `^\d+$`, v, "%s is a count: %s", name, s)
		}
		m[name] = f
	}
	return m
}

// TestQueryMetrics: every page's QueryMetrics count what the evaluation
// read (the items a scan or an index found, and their bytes), what the
// page holds, and the share of the retrieved items that had a result; a
// later page from the same evaluation retrieves nothing; the times add up.
func TestQueryMetrics(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	stored, s1 := 0.0, 0.0 // the stored JSON's bytes: of every item, of those with status s1
	for i := range 20 {
		doc := fmt.Sprintf(`{"id":"i%02d","status":"s%d","pad":%q}`, i, i%4, strings.Repeat("x", i))
		create(t, c, doc)
		stored += float64(len(doc))
		if i%4 == 1 {
			s1 += float64(len(doc))
		}
	}
	pages := func(q string, size int32) (metrics []map[string]float64, items [][]string) {
		t.Helper()
		p := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: size})
		for p.More() {
			r, err := p.NextPage(ctx)
			require.NoError(t, err, q)
			metrics = append(metrics, parseMetrics(t, r.QueryMetrics))
			items = append(items, texts(r.Items))
		}
		return metrics, items
	}
	bytes := func(items []string) float64 {
		n := 0
		for _, it := range items {
			n += len(it)
		}
		return float64(n)
	}

	// Every item, in pages of 8: each page retrieves its own items, and
	// the one after them that tells that more follow (evaluated again by
	// the next page), no more.
	ms, items := pages(`SELECT * FROM c`, 8)
	require.Len(t, ms, 3)
	retrieved := 0.0
	for i, m := range ms {
		assert.Equal(t, float64(len(items[i])), m["outputDocumentCount"], "page %d", i)
		assert.Equal(t, bytes(items[i]), m["outputDocumentSize"], "page %d", i)
		assert.GreaterOrEqual(t, m["retrievedDocumentCount"], m["outputDocumentCount"], "page %d", i)
		assert.LessOrEqual(t, m["retrievedDocumentCount"], m["outputDocumentCount"]+1, "page %d evaluates a page, not the query", i)
		assert.Positive(t, m["retrievedDocumentSize"], "page %d", i)
		retrieved += m["retrievedDocumentCount"]
		parts := m["queryCompileTimeInMs"] + m["queryLogicalPlanBuildTimeInMs"] + m["VMExecutionTimeInMs"] +
			m["indexLookupTimeInMs"] + m["documentLoadTimeInMs"] + m["writeOutputTimeInMs"]
		assert.LessOrEqual(t, parts, m["totalExecutionTimeInMs"]+0.07, "page %d: the parts fit in the whole", i)
	}
	assert.Equal(t, 22.0, retrieved, "the 20 items, and the first of pages 2 and 3 twice")

	// A filter: the first query scans (20 retrieved, 5 with a result), the
	// second finds the 5 through the index it made.
	ms, items = pages(`SELECT c.id FROM c WHERE c.status = "s1"`, 0)
	require.Len(t, ms, 1)
	assert.Equal(t, 20.0, ms[0]["retrievedDocumentCount"])
	assert.Equal(t, stored, ms[0]["retrievedDocumentSize"])
	assert.Equal(t, 5.0, ms[0]["outputDocumentCount"])
	assert.Equal(t, bytes(items[0]), ms[0]["outputDocumentSize"])
	assert.Equal(t, 0.25, ms[0]["indexUtilizationRatio"])
	ms, _ = pages(`SELECT c.id FROM c WHERE c.status = "s1"`, 0)
	assert.Equal(t, 5.0, ms[0]["retrievedDocumentCount"])
	assert.Equal(t, 1.0, ms[0]["indexUtilizationRatio"])
	assert.Equal(t, s1, ms[0]["retrievedDocumentSize"])

	// An aggregate outputs one result from every matching item.
	ms, items = pages(`SELECT VALUE COUNT(1) FROM c WHERE c.pad > "xxxxxxxxxxxxxxx"`, 0)
	assert.Equal(t, []string{"4"}, items[0])
	assert.Equal(t, 1.0, ms[0]["outputDocumentCount"])
	assert.Equal(t, 0.2, ms[0]["indexUtilizationRatio"])

	// A query without FROM retrieves nothing.
	ms, _ = pages(`SELECT VALUE 1`, 0)
	assert.Zero(t, ms[0]["retrievedDocumentCount"])
	assert.Zero(t, ms[0]["indexUtilizationRatio"])
	assert.Equal(t, 1.0, ms[0]["outputDocumentCount"])
}

// TestRequireCompositeIndexes: with the option, a query ordered by several
// paths runs only when a composite index serves it (its directions, or all
// reversed), and is refused with Cosmos DB's message otherwise; without
// it, every one runs.
func TestRequireCompositeIndexes(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", IndexingPolicy: &lethe.IndexingPolicy{
		CompositeIndexes: [][]lethe.CompositeIndex{{{Path: "/name"}, {Path: "/age", Order: lethe.CompositeIndexDescending}}},
	}})
	none := mustContainer(t, s, lethe.ContainerProperties{ID: "none", IndexingPolicy: &lethe.IndexingPolicy{
		IndexingMode:     lethe.IndexingModeNone,
		CompositeIndexes: [][]lethe.CompositeIndex{{{Path: "/name"}, {Path: "/age", Order: lethe.CompositeIndexDescending}}},
	}})
	for _, k := range []*lethe.Container{c, none} {
		for i := range 6 {
			create(t, k, fmt.Sprintf(`{"id":"i%d","name":"n%d","age":%d}`, i, i%2, i))
		}
	}
	for _, tc := range []struct {
		c      *lethe.Container
		q      string
		served bool
		n      int // results
	}{
		{c, `SELECT c.id FROM c ORDER BY c.name, c.age DESC`, true, 6},
		{c, `SELECT c.id FROM c ORDER BY c.name DESC, c.age ASC`, true, 6},
		{c, `SELECT c.id FROM c WHERE c.age > 1 ORDER BY c.name ASC, c.age DESC`, true, 4},
		{c, `SELECT c.id FROM c ORDER BY c.name, c.age`, false, 6},
		{c, `SELECT c.id FROM c ORDER BY c.age DESC, c.name`, false, 6},
		{c, `SELECT c.id FROM c ORDER BY c.name, c.age DESC, c.id`, false, 6},
		{c, `SELECT TOP 2 c.id FROM c ORDER BY c.id, c.name`, false, 2},
		{c, `SELECT c.id FROM c ORDER BY c.name`, true, 6},
		{c, `SELECT c.id FROM c`, true, 6},
		{none, `SELECT c.id FROM c ORDER BY c.name, c.age DESC`, false, 6},
	} {
		for _, strict := range []bool{false, true} {
			p := tc.c.NewQueryItemsPager(tc.q, lethe.NewPartitionKey(), &lethe.QueryOptions{RequireCompositeIndexes: strict})
			r, err := p.NextPage(ctx)
			if tc.served || !strict {
				require.NoError(t, err, "%s (strict %v)", tc.q, strict)
				assert.Len(t, r.Items, tc.n, tc.q)
				continue
			}
			require.ErrorIs(t, err, lethe.ErrBadRequest, tc.q)
			var le *lethe.Error
			require.ErrorAs(t, err, &le)
			assert.Equal(t, "The order by query does not have a corresponding composite index that it can be served from.", le.Message, tc.q)
		}
	}
}
