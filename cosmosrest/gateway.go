package cosmosrest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/lethedb/lethe/internal/query"
	"github.com/lethedb/lethe/internal/queryspec"
)

// The gateway's refusals of cross-partition queries. Cosmos DB's gateway
// runs a query over several partitions only when it can concatenate what
// each partition returns: a query that needs a client's work across
// partitions (ORDER BY, TOP, OFFSET LIMIT, DISTINCT, aggregates, GROUP BY)
// is refused with substatus 1004 and the query plan in the error's
// additionalErrorInfo, and SDKs then run it themselves, range by range. An
// SDK that asks for the plan first (x-ms-cosmos-is-query-plan-request)
// sends the query once per partition key range
// (x-ms-documentdb-partitionkeyrangeid), and a query for one partition
// (x-ms-documentdb-partitionkey, or a filter that fixes every partition key
// path to one value) is one partition's: both are served whole, but for an
// aggregate without VALUE sent across partitions, which is refused whatever
// its filter. lethe evaluates every query whole, so it could answer them
// all; it refuses as
// the gateway does so that code that would fail against Cosmos DB fails
// against lethe too, with the service's text first (SDKs match on it) and
// lethe's note after it.
const (
	msgCrossPartitionNotServable = "The provided cross partition query can not be directly served by the gateway. " +
		"This is a first chance (internal) exception that all newer clients will know how to handle gracefully. " +
		"This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), " +
		"then you can safely ignore this message."
	msgCrossPartitionDisabled = "Cross partition query is required but disabled. " +
		"Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, " +
		"or revise your query to avoid this exception."
	msgCrossPartitionAggregate = "Cross partition query only supports 'VALUE <AggregateFunc>' for aggregates."
)

// lethe's notes on the two refusals of a query that needs a client's work
// across partitions, after the service's text (withDetail): the service's
// 1004 text says to ignore it, and neither says what a client without a
// cross-partition query pipeline (azcosmos, the Go SDK) can do instead.
const (
	noteCrossPartition = "the client sent this query across partitions without a query plan " +
		"(no x-ms-cosmos-is-query-plan-request before it, no x-ms-documentdb-partitionkeyrangeid), " +
		"as azcosmos, the Go SDK, does: it has no cross-partition query pipeline, and Cosmos DB refuses the query the same way. " +
		whatWorks
	noteCrossPartitionAggregate = "the client sent this query across partitions without a query plan, as azcosmos, the Go SDK, does, " +
		"and its SELECT holds an aggregate without VALUE (GROUP BY with COUNT(1) AS n, say): " +
		"Cosmos DB refuses it the same way, with substatus 0 and no plan. " +
		whatWorks
	whatWorks = "What works: name the partition key (azcosmos.NewPartitionKeyString(\"...\")); " +
		"or run the query once per partition key value, or per partition key range (x-ms-documentdb-partitionkeyrangeid), " +
		"and combine the results yourself; or use an SDK with a cross-partition query pipeline (.NET, Java, JavaScript, Python)"
)

// gatewayServes reports whether the gateway serves the query text as sent:
// when it does not, it has answered 400 as Cosmos DB's gateway does.
// Queries lethe cannot parse are served (the query answers the syntax
// error).
func (q *request) gatewayServes(text string, params map[string]json.RawMessage) bool {
	h := q.r.Header
	if h.Get("x-ms-documentdb-partitionkey") != "" || h.Get("x-ms-documentdb-partitionkeyrangeid") != "" {
		return true
	}
	_, _, props, ok := q.documentContainer()
	if !ok {
		return false
	}
	pkPaths := props.PartitionKeyDefinition.Paths
	if len(pkPaths) == 0 {
		return true // one partition
	}
	parsed, err := query.Parse(text)
	if err != nil {
		return true
	}
	anyParams := queryspec.Spec{Params: params}.Values()
	paths := make([][]string, len(pkPaths))
	for i, p := range pkPaths {
		paths[i] = strings.Split(strings.TrimPrefix(p, "/"), "/")
	}
	cross := headerTrue(h.Get("x-ms-documentdb-query-enablecrosspartition"))
	f := parsed.Features()
	if cross && f.Aggregate && !f.SelectValue {
		// Refused before the filter is looked at: the service refuses
		// SELECT AVG(c.n) FROM c WHERE c.pk = 'x' so (the legacy Python
		// SDK's aggregate tests expect its 400).
		q.answerError(http.StatusBadRequest, withDetail(msgCrossPartitionAggregate, noteCrossPartitionAggregate))
		return false
	}
	if parsed.Pinned(anyParams, paths) {
		return true // one partition, named by the filter
	}
	if !cross {
		q.answerError(http.StatusBadRequest, msgCrossPartitionDisabled)
		return false
	}
	if !f.Any() {
		return true
	}
	plan, err := queryPlanJSON(queryspec.Spec{Query: text, Params: params}, props, h.Get("x-ms-cosmos-supported-query-features"))
	if err != nil {
		return true // the query answers its error
	}
	apiError{
		status: http.StatusBadRequest,
		sub:    subCrossPartitionNotServable,
		msg:    withDetail(msgCrossPartitionNotServable, noteCrossPartition),
		info:   string(plan),
	}.write(q.w)
	return false
}

// addQueryMetrics adds the query metrics of one page of lethe's (b) to
// those of the pages before it in one response (a, "" for none): the sum
// of every time and count, and the index utilization ratio of all the
// documents retrieved.
func addQueryMetrics(a, b string) string {
	if a == "" {
		return b
	}
	as, bs := strings.Split(a, ";"), strings.Split(b, ";")
	if len(as) != len(bs) {
		return b
	}
	value := func(pairs []string, name string) float64 {
		for _, p := range pairs {
			if n, v, _ := strings.Cut(p, "="); n == name {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		return 0
	}
	ra, rb := value(as, "retrievedDocumentCount"), value(bs, "retrievedDocumentCount")
	out := make([]string, len(as))
	for i := range as {
		name, va, _ := strings.Cut(as[i], "=")
		_, vb, _ := strings.Cut(bs[i], "=")
		x, _ := strconv.ParseFloat(va, 64)
		y, _ := strconv.ParseFloat(vb, 64)
		switch {
		case name == "indexUtilizationRatio":
			r := 0.0
			if ra+rb > 0 {
				r = (x*ra + y*rb) / (ra + rb)
			}
			out[i] = name + "=" + strconv.FormatFloat(r, 'f', 2, 64)
		case strings.HasSuffix(name, "InMs"):
			out[i] = name + "=" + strconv.FormatFloat(x+y, 'f', 2, 64)
		default:
			out[i] = name + "=" + strconv.FormatFloat(x+y, 'f', 0, 64)
		}
	}
	return strings.Join(out, ";")
}
