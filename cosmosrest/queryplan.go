package cosmosrest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/jsontext"
	"github.com/lethedb/lethe/internal/query"
	"github.com/lethedb/lethe/internal/queryspec"
)

// The service's query plans, and the backend's answers to the queries they
// rewrite. An SDK with a cross-partition query pipeline (JavaScript,
// .NET, Java, Python) asks for a query's plan (x-ms-cosmos-is-query-plan-
// request), sends each partition key range the plan's rewritten query (or
// the query itself when the plan rewrote none), with the range's id
// (x-ms-documentdb-partitionkeyrangeid), and merges what the ranges return
// as the plan says. The plan is the service's (query.ServicePlan): ORDER
// BY queries return each result's _rid, its ORDER BY items and its
// payload; aggregates their partial values, GROUP BY its groups' items;
// ORDER BY VectorDistance is a non-streaming ORDER BY; ORDER BY RANK a
// hybrid search, with its global statistics query and its components'
// queries. The backend evaluates those queries as it does any other, and
// gives their results the item's system properties where they hold the
// item: its _rid where they select c._rid, and _rid, _self and
// _attachments where the payload is the item itself, as SELECT * has
// them. A shape the plan does not rewrite gets a plan that asks the SDK
// for nothing (queryPlanJSON's fallback): lethe evaluates the whole query
// for the range and the SDK passes its results through. So does ORDER BY
// RANK with SELECT VALUE of anything but the item or an object literal:
// the service's plan has the VALUE as each component's payload, which
// @azure/cosmos's hybrid search refuses when it is no object ("payload
// must exist"; the .NET SDK reads any), where lethe's fallback at least
// ranks each range.

// featureSkipOrderByRewrite is the query feature (x-ms-cosmos-supported-
// query-features) of the SDKs that read the service's optimized hybrid
// search plan.
const featureSkipOrderByRewrite = "HybridSearchSkipOrderByRewrite"

// queryPlan answers a query plan request (x-ms-cosmos-is-query-plan-request)
// with queryPlanJSON.
func (q *request) queryPlan() {
	_, _, p, ok := q.documentContainer()
	if !ok {
		return
	}
	spec, ok := q.parseQueryBody()
	if !ok {
		return
	}
	plan, err := queryPlanJSON(spec, p, q.r.Header.Get("x-ms-cosmos-supported-query-features"))
	if err != nil {
		if !q.badQuery(err, msgQueryPlanFailed) {
			q.answerError(http.StatusBadRequest, msgQueryPlanFailed+err.Error())
		}
		return
	}
	q.reply(http.StatusOK, plan, 0)
}

// wholeRange is the query range of the whole space of effective partition
// keys.
const wholeRange = `{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}`

// planRanges are the query ranges of the plan of pq (parameters params)
// over a container partitioned by def: when pq's filter pins the partition
// key to one value (query.PartitionKeyPoints: an equality on each path),
// that key's point, [epk, epk] with both ends inclusive, as the service
// gives it; when it pins a prefix of a hierarchical key, the range of the
// prefix's keys (lethe.PrefixFeedRange); the whole space otherwise, so
// that the SDK asks only the ranges that may hold the query's items.
// Several values (an IN) get one range from the least to the greatest:
// the service gives one range each, which the legacy Python SDK (3.1.1)
// refuses ("the list of ranges is not a non-overlapping sorted ranges":
// it takes no two adjacent inclusive ends), where every SDK reads one.
func planRanges(pq *query.Query, params map[string]any, def lethe.PartitionKeyDefinition) string {
	paths := make([][]string, len(def.Paths))
	for i, path := range def.Paths {
		paths[i] = pathSegments(path)
	}
	points, ok := pq.PartitionKeyPoints(params, paths)
	if !ok {
		return "[" + wholeRange + "]"
	}
	// A point is [min, max] with min == max; a prefix's keys [min, max).
	// Points all, or prefixes all, sorted by min: the last has the greatest
	// max.
	type queryRange struct{ min, max string }
	ranges := make([]queryRange, len(points))
	for i, point := range points {
		pk := lethe.NewPartitionKey()
		for _, v := range point {
			switch v := v.(type) {
			case nil:
				pk = pk.AppendNull()
			case bool:
				pk = pk.AppendBool(v)
			case float64:
				pk = pk.AppendNumber(v)
			case string:
				pk = pk.AppendString(v)
			}
		}
		if len(point) < len(paths) {
			fr := lethe.PrefixFeedRange(pk)
			ranges[i] = queryRange{fr.MinInclusive, fr.MaxExclusive}
			continue
		}
		k := lethe.EffectivePartitionKey(def, pk)
		ranges[i] = queryRange{k, k}
	}
	slices.SortFunc(ranges, func(a, b queryRange) int { return strings.Compare(a.min, b.min) })
	first, last := ranges[0], ranges[len(ranges)-1]
	return fmt.Sprintf(`[{"min":"%s","max":"%s","isMinInclusive":true,"isMaxInclusive":%t}]`, first.min, last.max, last.min == last.max)
}

// queryPlanJSON is the service's query plan of the query spec over a
// container of properties p, for a client of the query features features,
// as a query plan request answers it and a refused cross-partition query
// carries it. Its error is the query's (a syntax error, a missing
// parameter).
func queryPlanJSON(spec queryspec.Spec, p lethe.ContainerProperties, features string) ([]byte, error) {
	pq, err := query.Parse(spec.Query)
	if err != nil {
		return nil, err
	}
	o := query.PlanOptions{
		Params:             spec.Values(),
		SkipOrderByRewrite: hasFeature(features, featureSkipOrderByRewrite),
		ObjectPayloads:     true, // @azure/cosmos's hybrid search
	}
	if vp := p.VectorEmbeddingPolicy; vp != nil {
		o.Vector = func(path []string) (string, string) {
			for _, e := range vp.VectorEmbeddings {
				if e.Path == "/"+strings.Join(path, "/") {
					return string(e.DistanceFunction), string(e.DataType)
				}
			}
			return "", ""
		}
	}
	qi, h, err := pq.ServicePlan(o)
	if errors.Is(err, query.ErrNoServicePlan) {
		qi, h, err = passThrough(pq), nil, nil
	}
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"partitionedQueryExecutionInfoVersion":2,`)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if h != nil {
		b.WriteString(`"hybridSearchQueryInfo":`)
		err = enc.Encode(h)
	} else {
		b.WriteString(`"queryInfo":`)
		err = enc.Encode(qi)
	}
	if err != nil {
		return nil, err
	}
	b.Truncate(b.Len() - 1) // the encoder's newline
	b.WriteString(`,"queryRanges":` + planRanges(pq, o.Params, p.PartitionKeyDefinition) + `}`)
	return b.Bytes(), nil
}

// hasFeature reports whether the comma-separated list of query features
// features names feature.
func hasFeature(features, feature string) bool {
	for _, f := range strings.Split(features, ",") {
		if strings.TrimSpace(f) == feature {
			return true
		}
	}
	return false
}

// passThrough is the plan of a query whose shape the service's plan does
// not rewrite: one that asks the SDK for nothing (no ORDER BY, TOP, OFFSET
// LIMIT, DISTINCT, aggregates or GROUP BY of its own), since lethe
// evaluates the whole query for the range and the SDK passes its results
// through unchanged.
func passThrough(pq *query.Query) *query.QueryInfo {
	qi := query.QueryInfo{
		DistinctType:                "None",
		OrderBy:                     []string{},
		OrderByExpressions:          []string{},
		GroupByExpressions:          []string{},
		GroupByAliases:              []string{},
		Aggregates:                  []string{},
		GroupByAliasToAggregateType: map[string]*string{},
		HasSelectValue:              pq.Features().SelectValue,
	}
	return &qi
}

// itemRID is the _rid of the item doc of container coll (partition key
// paths paths), as withSelf gives it: from its id and partition key.
func (db *database) itemRID(coll string, paths []string, doc []byte) (string, bool) {
	id, ok := stringMember(doc, "id")
	if !ok {
		return "", false
	}
	return ridString(documentRID(containerRID(db.id, coll), docPartitionKey(doc, paths).String(), id)), true
}

// rewritten is how the backend runs a query: the text it evaluates, where
// its results need the item's _rid (query.RIDFields) and system properties
// (query.ItemFields), and whether it is the SDK's rewritten ORDER BY query
// (orderByResume).
type rewritten struct {
	text    string
	rids    []string
	fields  [][]string
	orderBy bool
}

// rewrittenRun is how the backend runs the query text (parsed pq, or the
// parse error perr) over a container of properties p. A query that
// selects c._rid (the service's rewritten queries do) runs with the
// item's id and partition key in its place, from which its _rid is
// derived.
func rewrittenRun(text string, pq *query.Query, perr error, p lethe.ContainerProperties) rewritten {
	rw := rewritten{text: text}
	if perr != nil {
		return rw
	}
	keyPaths := make([][]string, len(p.PartitionKeyDefinition.Paths))
	for i, path := range p.PartitionKeyDefinition.Paths {
		keyPaths[i] = pathSegments(path)
	}
	if names, t := pq.RIDFields(keyPaths); names != nil {
		rw.rids, rw.text = names, t
		rw.orderBy = pq.Features().OrderBy && pq.Selects("orderByItems")
	}
	rw.fields = pq.ItemFields()
	return rw
}

// withItemFields returns res, a result of a query whose results hold the
// item whole at fields of theirs (query.ItemFields) and the item's id and
// partition key in place of its _rid at rids (query.RIDFields), with the
// item's _rid at rids and its
// system properties at fields, its members in their order. A result that
// is not an object is returned as it is.
func (db *database) withItemFields(coll string, paths []string, res []byte, rids []string, fields [][]string) []byte {
	return mapMembers(res, func(name string, v []byte) []byte {
		if slices.Contains(rids, name) {
			rid, ok := db.itemRID(coll, paths, v)
			if !ok {
				return nil // no _rid: undefined
			}
			return jsontext.AppendString(nil, rid)
		}
		for _, f := range fields {
			switch {
			case f[0] != name:
			case len(f) == 1:
				return db.withSelf(coll, paths, v)
			default:
				return mapMembers(v, func(inner string, iv []byte) []byte {
					if inner == f[1] {
						return db.withSelf(coll, paths, iv)
					}
					return iv
				})
			}
		}
		return v
	})
}

// mapMembers returns the JSON object obj with the value v of each of its
// top-level members replaced by edit(name, v), the member dropped when
// that is nil; obj itself when it is no object.
func mapMembers(obj []byte, edit func(name string, v []byte) []byte) []byte {
	ms, ok := topMembers(obj)
	if !ok {
		return obj
	}
	out := make([]byte, 0, len(obj)+128)
	out = append(out, '{')
	for _, m := range ms {
		v := obj[m.valStart:m.valEnd]
		if name, ok := memberName(obj, m); ok {
			v = edit(name, v)
		}
		if v == nil {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, obj[m.nameStart:m.nameEnd]...)
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}')
}

// orderByTokenPrefix begins the continuation of a rewritten ORDER BY query
// (one that selects c._rid and orderByItems): the queryKey of the query it
// continues, ':', and lethe's continuation.
const orderByTokenPrefix = "ob:"

// orderByResume returns lethe's continuation in token, a continuation of
// the rewritten ORDER BY query of key: "" (from the start) when token is
// one of another query. An SDK resumes such a query with its continuation
// and the query rewritten with the filter of the results after the last it
// returned (the plan's placeholder), which from the start gives what
// follows, less ties the SDK skips itself. A token without the prefix is
// lethe's, which it checks.
func orderByResume(token, key string) string {
	rest, ok := strings.CutPrefix(token, orderByTokenPrefix)
	if !ok {
		return token
	}
	k, inner, _ := strings.Cut(rest, ":")
	if k != key {
		return ""
	}
	return inner
}
