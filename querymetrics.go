package lethe

import (
	"strconv"
	"time"
)

// queryMetrics are the measured figures of one page of a query, written as
// QueryItemsResponse.QueryMetrics. Times are wall-clock durations measured
// while the page was made; they describe the work and decide nothing.
type queryMetrics struct {
	total    time.Duration // the whole NextPage
	compile  time.Duration // parsing the query
	bind     time.Duration // checking its parameters and continuation token
	lookup   time.Duration // finding candidates through an index (or walking one in order)
	load     time.Duration // listing every live item, or looking a later page's items up again
	exec     time.Duration // evaluating the query on its items
	write    time.Duration // making the page and its token
	retrieve int           // items the evaluation read
	retBytes int           // their JSON's bytes
	matched  int           // of those, the items that had a result
	output   int           // results on the page
	outBytes int           // their JSON's bytes
}

// String writes the figures as Cosmos DB's x-ms-documentdb-query-metrics
// does: every name the service sends, in its order.
func (m queryMetrics) String() string {
	b := make([]byte, 0, 400)
	ms := func(name string, d time.Duration) {
		b = append(b, name...)
		b = append(b, '=')
		b = strconv.AppendFloat(b, float64(d)/float64(time.Millisecond), 'f', 2, 64)
		b = append(b, ';')
	}
	count := func(name string, n int) {
		b = append(b, name...)
		b = append(b, '=')
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, ';')
	}
	ms("totalExecutionTimeInMs", m.total)
	ms("queryCompileTimeInMs", m.compile)
	ms("queryLogicalPlanBuildTimeInMs", m.bind)
	ms("queryPhysicalPlanBuildTimeInMs", 0)
	ms("queryOptimizationTimeInMs", 0)
	ms("VMExecutionTimeInMs", m.exec)
	ms("indexLookupTimeInMs", m.lookup)
	ms("documentLoadTimeInMs", m.load)
	ms("systemFunctionExecuteTimeInMs", 0)
	ms("userFunctionExecuteTimeInMs", 0)
	count("retrievedDocumentCount", m.retrieve)
	count("retrievedDocumentSize", m.retBytes)
	count("outputDocumentCount", m.output)
	count("outputDocumentSize", m.outBytes)
	ms("writeOutputTimeInMs", m.write)
	ratio := 0.0
	if m.retrieve > 0 {
		ratio = float64(m.matched) / float64(m.retrieve)
	}
	b = append(b, "indexUtilizationRatio="...)
	b = strconv.AppendFloat(b, ratio, 'f', 2, 64)
	return string(b)
}

// stopwatch adds the time since its start to a duration.
type stopwatch time.Time

func startWatch() stopwatch { return stopwatch(time.Now()) }

// addTo adds the time since w started to *d, and returns a watch started now.
func (w stopwatch) addTo(d *time.Duration) stopwatch {
	now := time.Now()
	*d += now.Sub(time.Time(w))
	return stopwatch(now)
}
