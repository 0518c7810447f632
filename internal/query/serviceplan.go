package query

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lethedb/lethe/internal/jsontext"
	"github.com/lethedb/lethe/internal/vector"
)

// The service's query plans. An SDK with a cross-partition query pipeline
// asks the service for a query's plan, then sends each partition key range
// the query the plan rewrote (or the query itself when the plan rewrote
// none), and merges what the ranges return as the plan says: the ORDER BY
// items of each result, the partial aggregates of each range, the GROUP BY
// items, the hybrid search components' scores. ServicePlan computes that
// plan as the service's query engine does, in its shapes and wording (the
// SDKs' own tests carry the service's plans); the functions its rewritten
// queries call are in hybrid.go.

// Placeholders of the service's rewritten queries that the SDKs replace
// before sending them: the ORDER BY query's filter (true, or the filter
// that resumes after a continuation), and the global statistics of a
// hybrid search (each full-text component's, suffixed "-" and the
// component's index).
const (
	PlaceholderOrderByFilter = "{documentdb-formattableorderbyquery-filter}"
	PlaceholderDocumentCount = "{documentdb-formattablehybridsearchquery-totaldocumentcount}"
	PlaceholderWordCount     = "{documentdb-formattablehybridsearchquery-totalwordcount-"
	PlaceholderHitCounts     = "{documentdb-formattablehybridsearchquery-hitcountsarray-"
)

// PlanOptions are what a query's plan depends on beyond its text.
type PlanOptions struct {
	// Params are the query's parameters, by name ("@n"): a TOP, OFFSET or
	// LIMIT given by one is written as its value.
	Params map[string]any
	// Vector is the container's vector embedding policy, as Env.Vector:
	// ORDER BY VectorDistance orders descending by the similarity of
	// cosine and dot product, ascending by euclidean distance.
	Vector func(path []string) (distanceFunction, dataType string)
	// SkipOrderByRewrite: the client supports the service's optimized
	// hybrid search plan (query feature HybridSearchSkipOrderByRewrite),
	// whose component queries of an RRF return their scores without
	// ORDER BY items.
	SkipOrderByRewrite bool
	// ObjectPayloads: the client's hybrid search reads only payloads that
	// are objects (@azure/cosmos's does, and fails on any other), so an
	// ORDER BY RANK query with SELECT VALUE of anything but the item or
	// an object literal has no plan for it (ErrNoServicePlan).
	ObjectPayloads bool
}

// QueryInfo is the queryInfo of a service query plan: what the SDK does
// over the results of each range, and the query it sends them.
type QueryInfo struct {
	DistinctType                string             `json:"distinctType"`
	Top                         *int               `json:"top"`
	Offset                      *int               `json:"offset"`
	Limit                       *int               `json:"limit"`
	OrderBy                     []string           `json:"orderBy"`
	OrderByExpressions          []string           `json:"orderByExpressions"`
	GroupByExpressions          []string           `json:"groupByExpressions"`
	GroupByAliases              []string           `json:"groupByAliases"`
	Aggregates                  []string           `json:"aggregates"`
	GroupByAliasToAggregateType map[string]*string `json:"groupByAliasToAggregateType"`
	RewrittenQuery              string             `json:"rewrittenQuery"`
	HasSelectValue              bool               `json:"hasSelectValue"`
	DCountInfo                  *struct{}          `json:"dCountInfo"`
	HasNonStreamingOrderBy      bool               `json:"hasNonStreamingOrderBy"`
}

// HybridSearchQueryInfo is the hybridSearchQueryInfo of the plan of an
// ORDER BY RANK query: the global statistics query the SDK sends every
// range first (when a component is a full-text score), the components'
// queries, with the statistics' placeholders, and what to keep of the
// fused ranking.
type HybridSearchQueryInfo struct {
	GlobalStatisticsQuery             string      `json:"globalStatisticsQuery"`
	ComponentQueryInfos               []QueryInfo `json:"componentQueryInfos"`
	ComponentWithoutPayloadQueryInfos []QueryInfo `json:"componentWithoutPayloadQueryInfos"`
	ProjectionQueryInfo               *QueryInfo  `json:"projectionQueryInfo"`
	ComponentWeights                  []float64   `json:"componentWeights"`
	Skip                              *int        `json:"skip"`
	Take                              *int        `json:"take"`
	RequiresGlobalStatistics          bool        `json:"requiresGlobalStatistics"`
}

// ErrNoServicePlan is ServicePlan's error for a query whose shape it does
// not rewrite (a FROM over a path with ORDER BY, an aggregate inside an
// expression of the select list), or whose plan the client cannot read
// (PlanOptions.ObjectPayloads).
var ErrNoServicePlan = errors.New("query: no service plan for this shape of query")

// hybridTopFactor: each component of a hybrid search returns this many
// times the results the query keeps (120 for a TOP 10, as the service's
// plans have it).
const hybridTopFactor = 12

// ServicePlan returns the service's plan of q: its queryInfo, or for ORDER
// BY RANK its hybridSearchQueryInfo. It fails with ErrNoServicePlan for a
// shape it does not rewrite, and with a parameter's error when one is
// missing.
func (q *Query) ServicePlan(o PlanOptions) (*QueryInfo, *HybridSearchQueryInfo, error) {
	vals, err := bindParams(q, o.Params)
	if err != nil {
		return nil, nil, err
	}
	p := &planner{q: q, vals: vals, o: o}
	if q.rank {
		h, err := p.hybrid()
		return nil, h, err
	}
	qi, err := p.queryInfo()
	return qi, nil, err
}

type planner struct {
	q    *Query
	vals []value
	o    PlanOptions
}

// newQueryInfo is a queryInfo that asks nothing of the SDK.
func newQueryInfo() QueryInfo {
	return QueryInfo{
		DistinctType:                "None",
		OrderBy:                     []string{},
		OrderByExpressions:          []string{},
		GroupByExpressions:          []string{},
		GroupByAliases:              []string{},
		Aggregates:                  []string{},
		GroupByAliasToAggregateType: map[string]*string{},
	}
}

// count is the value of a TOP, OFFSET or LIMIT operand, nil without one.
func (p *planner) count(e expr) (*int, error) {
	if e == nil {
		return nil, nil
	}
	v, ok := constant(e, p.vals)
	if !ok || v.k != kNum || v.n < 0 || v.n != math.Trunc(v.n) || v.n > math.MaxInt32 {
		return nil, errAt(p.q.text, e.position(), "TOP, OFFSET and LIMIT must be non-negative integers, found %s", describeValue(v))
	}
	n := int(v.n)
	return &n, nil
}

func (p *planner) queryInfo() (*QueryInfo, error) {
	q := p.q
	qi := newQueryInfo()
	qi.HasSelectValue = q.valueSel
	var err error
	if qi.Top, err = p.count(q.top); err != nil {
		return nil, err
	}
	if qi.Offset, err = p.count(q.offset); err != nil {
		return nil, err
	}
	if qi.Limit, err = p.count(q.limit); err != nil {
		return nil, err
	}
	if q.distinct {
		qi.DistinctType = "Unordered"
	}
	switch {
	case q.grouped || len(q.aggs) > 0:
		err = p.aggregates(&qi)
	case len(q.orderBy) > 0:
		if q.distinct {
			qi.DistinctType = "Ordered"
		}
		err = p.orderBy(&qi)
	case qi.Limit != nil:
		// Each range returns the first OFFSET + LIMIT; the SDK skips
		// and keeps.
		if q.from == nil || q.from.path == nil {
			qi.RewrittenQuery = p.selectClause() + p.fromWhere("") + p.limitClause(qi)
		}
	}
	if err != nil {
		return nil, err
	}
	return &qi, nil
}

// limitClause is the OFFSET 0 LIMIT of a rewritten query, "" without
// OFFSET LIMIT.
func (p *planner) limitClause(qi QueryInfo) string {
	if qi.Limit == nil {
		return ""
	}
	return "\nOFFSET 0 LIMIT " + strconv.Itoa(*qi.Offset+*qi.Limit)
}

// selectClause is SELECT [DISTINCT] [TOP n] and q's select list, in the
// service's form.
func (p *planner) selectClause() string {
	q := p.q
	var sb strings.Builder
	sb.WriteString("SELECT ")
	if q.distinct {
		sb.WriteString("DISTINCT ")
	}
	if q.top != nil {
		sb.WriteString("TOP ")
		svcWrite(&sb, q.top)
		sb.WriteByte(' ')
	}
	switch {
	case q.star:
		sb.WriteString("*")
	case q.valueSel:
		sb.WriteString("VALUE ")
		svcWrite(&sb, q.items[0].x)
	default:
		for i, it := range q.items {
			if i > 0 {
				sb.WriteString(", ")
			}
			svcWrite(&sb, it.x)
			if it.alias != "" {
				sb.WriteString(" AS ")
				sb.WriteString(it.alias)
			}
		}
	}
	return sb.String()
}

// fromWhere is q's FROM and JOIN clauses and its WHERE clause, in the
// service's form, the WHERE clause joined by AND to filter when it is not
// "" (and filter alone without one).
func (p *planner) fromWhere(filter string) string {
	q := p.q
	var sb strings.Builder
	if q.from != nil {
		sb.WriteString("\nFROM ")
		switch {
		case q.from.in:
			sb.WriteString(q.from.alias + " IN ")
			svcWrite(&sb, q.from.path)
		case q.from.path != nil:
			svcWrite(&sb, q.from.path)
			sb.WriteString(" AS " + q.from.alias)
		case q.rootExpl && q.root != q.from.alias:
			sb.WriteString(q.root + " AS " + q.from.alias)
		default:
			sb.WriteString(q.from.alias)
		}
		for _, j := range q.joins {
			sb.WriteString("\nJOIN ")
			switch {
			case j.sub != nil:
				sb.WriteString("(" + j.sub.String() + ")")
				if j.alias != "" {
					sb.WriteString(" AS " + j.alias)
				}
			case j.in:
				sb.WriteString(j.alias + " IN ")
				svcWrite(&sb, j.x)
			default:
				svcWrite(&sb, j.x)
				sb.WriteString(" AS " + j.alias)
			}
		}
	}
	switch {
	case q.where != nil && filter != "":
		sb.WriteString("\nWHERE (")
		svcWrite(&sb, q.where)
		sb.WriteString(" AND (" + filter + "))")
	case q.where != nil:
		sb.WriteString("\nWHERE ")
		svcWrite(&sb, q.where)
	case filter != "":
		sb.WriteString("\nWHERE (" + filter + ")")
	}
	return sb.String()
}

// payload is the service's payload of q's results: the item (its alias),
// VALUE's expression, or an object of the select list's items.
func (p *planner) payload() string {
	q := p.q
	var sb strings.Builder
	switch {
	case q.star:
		sb.WriteString(q.from.alias)
	case q.valueSel:
		svcWrite(&sb, q.items[0].x)
	default:
		sb.WriteByte('{')
		for i, it := range q.items {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.Write(jsontext.AppendString(nil, it.name))
			sb.WriteString(": ")
			svcWrite(&sb, it.x)
		}
		sb.WriteByte('}')
	}
	return sb.String()
}

// objectValue reports whether q's SELECT VALUE expression is an object
// whatever the item: the item itself (its FROM alias) or an object
// literal.
func (p *planner) objectValue() bool {
	switch x := p.q.items[0].x.(type) {
	case *ident:
		return x.name == p.q.from.alias
	case *objectLit:
		return true
	}
	return false
}

// itemQuery reports whether q reads the container's items by an alias of
// their own (FROM c, not FROM c.children x), as the ORDER BY and hybrid
// rewrites need: they select the item's _rid.
func (p *planner) itemQuery() bool {
	return p.q.from != nil && p.q.from.path == nil
}

func (p *planner) orderBy(qi *QueryInfo) error {
	q := p.q
	if !p.itemQuery() {
		return ErrNoServicePlan
	}
	var items, keys strings.Builder
	for i, o := range q.orderBy {
		if i > 0 {
			items.WriteString(", ")
			keys.WriteString(", ")
		}
		x := svcString(o.x)
		qi.OrderByExpressions = append(qi.OrderByExpressions, x)
		items.WriteString(`{"item": ` + x + `}`)
		keys.WriteString(x)
		desc := o.desc
		if o.similar {
			desc = p.higherIsCloser(o.x.(*call))
			qi.HasNonStreamingOrderBy = true
		} else if desc {
			keys.WriteString(" DESC")
		}
		if desc {
			qi.OrderBy = append(qi.OrderBy, "Descending")
		} else {
			qi.OrderBy = append(qi.OrderBy, "Ascending")
		}
	}
	sel := "SELECT "
	if qi.Top != nil {
		sel += "TOP " + strconv.Itoa(*qi.Top) + " "
	}
	qi.RewrittenQuery = sel + q.from.alias + "._rid, [" + items.String() + "] AS orderByItems, " + p.payload() + " AS payload" +
		p.fromWhere(PlaceholderOrderByFilter) + "\nORDER BY " + keys.String() + p.limitClause(*qi)
	return nil
}

// higherIsCloser reports whether the VectorDistance call x scores by a
// similarity (cosine, dot product), higher for the closer, rather than
// by the euclidean distance: its options' distanceFunction, else the
// container's policy for its path, else cosine.
func (p *planner) higherIsCloser(x *call) bool {
	dist := ""
	if p.o.Vector != nil {
		for _, a := range x.args[:2] {
			if path, ok := itemPath(a); ok {
				if dist, _ = p.o.Vector(path); dist != "" {
					break
				}
			}
		}
	}
	if len(x.args) > 3 {
		if v, ok := constValue(x.args[3], p.vals); ok && v.k == kObj {
			for _, f := range v.o {
				if strings.EqualFold(f.k, "distanceFunction") && f.v.k == kStr {
					dist = f.v.s
				}
			}
		}
	}
	m, _ := vector.ParseMetric(dist)
	return m.HigherIsCloser()
}

// aggKinds are the service's names of the aggregates, for the plan.
var aggKinds = map[string]string{
	"COUNT": "Count", "SUM": "Sum", "AVG": "Average", "MIN": "Min", "MAX": "Max", "COUNTIF": "CountIf",
}

// partial is the service's rewrite of the aggregate x: what each range
// returns of it, {"item": ...} and for MIN and MAX an "item2" with the
// count, for AVG the sum and the count.
func partial(x *call) string {
	arg := svcString(x.args[0])
	switch x.fn.name {
	case "AVG":
		return `{"item": {"sum": SUM(` + arg + `), "count": COUNT(` + arg + `)}}`
	case "MIN", "MAX":
		f := strings.ToLower(x.fn.name)
		return `{"item": ` + x.name + `(` + arg + `), "item2": {"` + f + `": ` + x.name + `(` + arg + `), "count": COUNT(` + arg + `)}}`
	}
	return `{"item": ` + x.name + `(` + arg + `)}`
}

// aggregates rewrites a query with aggregates or GROUP BY: each range
// returns its groups' GROUP BY items and partial aggregates.
func (p *planner) aggregates(qi *QueryInfo) error {
	q := p.q
	aggOf := func(e expr) (*call, bool) {
		x, ok := e.(*call)
		return x, ok && x.agg >= 0
	}
	var sb strings.Builder
	sb.WriteString("SELECT ")
	if q.grouped {
		sb.WriteByte('[')
		for i, g := range q.groupBy {
			if i > 0 {
				sb.WriteString(", ")
			}
			x := svcString(g)
			qi.GroupByExpressions = append(qi.GroupByExpressions, x)
			sb.WriteString(`{"item": ` + x + `}`)
		}
		sb.WriteString("] AS groupByItems, ")
	}
	switch {
	case q.valueSel:
		x, isAgg := aggOf(q.items[0].x)
		switch {
		case isAgg:
			qi.Aggregates = append(qi.Aggregates, aggKinds[x.fn.name])
			if q.grouped {
				sb.WriteString("[" + partial(x) + "] AS payload")
			} else {
				sb.WriteString("VALUE [" + partial(x) + "]")
			}
		case len(q.aggs) > 0:
			return ErrNoServicePlan // an aggregate inside VALUE's expression
		default:
			sb.WriteString(svcString(q.items[0].x) + " AS payload")
		}
	default:
		sb.WriteByte('{')
		for i, it := range q.items {
			if i > 0 {
				sb.WriteString(", ")
			}
			qi.GroupByAliases = append(qi.GroupByAliases, it.name)
			sb.Write(jsontext.AppendString(nil, it.name))
			sb.WriteString(": ")
			if x, ok := aggOf(it.x); ok {
				kind := aggKinds[x.fn.name]
				qi.GroupByAliasToAggregateType[it.name] = &kind
				sb.WriteString(partial(x))
				continue
			}
			hasAgg := false
			walk(it.x, func(e expr) bool {
				_, ok := aggOf(e)
				hasAgg = hasAgg || ok
				return !hasAgg
			})
			if hasAgg {
				return ErrNoServicePlan // an aggregate inside an expression
			}
			qi.GroupByAliasToAggregateType[it.name] = nil
			svcWrite(&sb, it.x)
		}
		sb.WriteString("} AS payload")
	}
	sb.WriteString(p.fromWhere(""))
	if q.grouped {
		sb.WriteString("\nGROUP BY " + strings.Join(qi.GroupByExpressions, ", "))
	}
	qi.RewrittenQuery = sb.String()
	return nil
}

// hybrid is the plan of an ORDER BY RANK query.
func (p *planner) hybrid() (*HybridSearchQueryInfo, error) {
	q := p.q
	if !p.itemQuery() || p.o.ObjectPayloads && q.valueSel && !p.objectValue() {
		return nil, ErrNoServicePlan
	}
	h := &HybridSearchQueryInfo{
		ComponentQueryInfos:               []QueryInfo{},
		ComponentWithoutPayloadQueryInfos: []QueryInfo{},
		ComponentWeights:                  []float64{},
	}
	var err error
	if h.Take, err = p.count(q.top); err != nil {
		return nil, err
	}
	if q.limit != nil {
		if h.Skip, err = p.count(q.offset); err != nil {
			return nil, err
		}
		if h.Take, err = p.count(q.limit); err != nil {
			return nil, err
		}
	}
	x := q.orderBy[0].x.(*call)
	cs := rankComponents(x)
	weights := make([]float64, len(cs))
	for i := range weights {
		weights[i] = 1
	}
	if x.fn.name == "RRF" && len(x.args) > len(cs) {
		w, ok := constValue(x.args[len(x.args)-1], p.vals)
		if !ok || w.k != kArr || len(w.a) != len(cs) {
			return nil, ErrNoServicePlan
		}
		for i, e := range w.a {
			if e.k != kNum {
				return nil, ErrNoServicePlan
			}
			weights[i] = e.n
			h.ComponentWeights = append(h.ComponentWeights, math.Abs(e.n))
		}
	}
	// Each component's score, its order, and its default for the items it
	// does not score.
	type component struct {
		score, order string
		asc          bool
	}
	comps := make([]component, len(cs))
	var stats []string
	for i, c := range cs {
		if c.fn.name == "FullTextScore" {
			text := svcString(c.args[0])
			var strs []string
			for _, a := range c.args[1:] {
				v, ok := constValue(a, p.vals)
				list := []value{v}
				if v.k == kArr {
					list = v.a
				}
				for _, s := range list {
					if !ok || s.k != kStr {
						return nil, ErrNoServicePlan
					}
					strs = append(strs, string(jsontext.AppendString(nil, s.s)))
				}
			}
			n := strconv.Itoa(i)
			comps[i].score = "_FullTextScore(" + text + ", [" + strings.Join(strs, ", ") + "], " + PlaceholderDocumentCount + ", " +
				PlaceholderWordCount + n + "}, " + PlaceholderHitCounts + n + "})"
			comps[i].order = comps[i].score + " DESC"
			hits := make([]string, len(strs))
			for j, s := range strs {
				hits[j] = "COUNTIF(FullTextContains(" + text + ", " + s + "))"
			}
			stats = append(stats, `{"totalWordCount": SUM(_FullTextWordCount(`+text+`)), "hitCounts": [`+strings.Join(hits, ", ")+`]}`)
			continue
		}
		args := make([]string, len(c.args))
		for j, a := range c.args {
			args[j] = svcString(a)
		}
		comps[i].score = "_VectorScore(" + strings.Join(args, ", ") + ")"
		comps[i].asc = !p.higherIsCloser(c) != (weights[i] < 0)
		comps[i].order = comps[i].score
		if comps[i].asc {
			comps[i].order += " ASC"
		}
	}
	if len(stats) > 0 {
		h.RequiresGlobalStatistics = true
	}
	h.GlobalStatisticsQuery = "SELECT COUNT(1) AS documentCount, [" + strings.Join(stats, ", ") + "] AS fullTextStatistics\nFROM " + q.from.alias
	optimized := p.o.SkipOrderByRewrite
	scores := make([]string, len(comps))
	for i, c := range comps {
		switch {
		case c.asc && optimized:
			scores[i] = "(-1 * (" + c.score + " ?? 1.79769e+308))"
		case c.asc:
			scores[i] = "(" + c.score + " ?? 1.79769e+308)"
		case cs[i].fn.name == "FullTextScore":
			scores[i] = "(" + c.score + " ?? -1)"
		default:
			scores[i] = "(" + c.score + " ?? -1.79769e+308)"
		}
	}
	top := ""
	var topN *int
	if h.Take != nil {
		n := hybridTopFactor * *h.Take
		if h.Skip != nil {
			n += hybridTopFactor * *h.Skip
		}
		top, topN = "TOP "+strconv.Itoa(n)+" ", &n
	}
	payload := p.payload()
	for _, c := range comps {
		qi := newQueryInfo()
		if optimized && len(comps) > 1 {
			// The ranges return the scores; the SDK ranks by them.
			qi.RewrittenQuery = "SELECT " + top + q.from.alias + "._rid, " + payload + " AS payload, [" + strings.Join(scores, ", ") +
				"] AS componentScores" + p.fromWhere("") + "\nORDER BY " + c.order
			h.ComponentQueryInfos = append(h.ComponentQueryInfos, qi)
			continue
		}
		qi.Top = topN
		qi.OrderByExpressions = []string{c.score}
		qi.OrderBy = []string{"Descending"}
		if c.asc {
			qi.OrderBy = []string{"Ascending"}
		}
		qi.HasNonStreamingOrderBy = true
		componentScores := strings.Join(scores, ", ")
		if optimized {
			componentScores = ""
		}
		qi.RewrittenQuery = "SELECT " + top + q.from.alias + `._rid, [{"item": ` + c.score + `}] AS orderByItems, {"payload": ` + payload +
			`, "componentScores": [` + componentScores + `]} AS payload` + p.fromWhere(PlaceholderOrderByFilter) + "\nORDER BY " + c.order
		h.ComponentQueryInfos = append(h.ComponentQueryInfos, qi)
	}
	return h, nil
}

// svcString is e in the service's form (svcWrite).
func svcString(e expr) string {
	var sb strings.Builder
	svcWrite(&sb, e)
	return sb.String()
}

// svcWrite writes e as the service writes the expressions of its
// rewritten queries: c.name for a property with an identifier's name,
// constants as JSON with a space after each comma and colon, operations
// in parentheses; functions keep the name as written.
func svcWrite(sb *strings.Builder, e expr) {
	switch x := e.(type) {
	case *literal:
		svcValue(sb, x.val)
	case *member:
		svcWrite(sb, x.x)
		if isName(x.name) {
			sb.WriteString("." + x.name)
			return
		}
		sb.WriteByte('[')
		sb.Write(jsontext.AppendString(nil, x.name))
		sb.WriteByte(']')
	case *index:
		svcWrite(sb, x.x)
		sb.WriteByte('[')
		svcWrite(sb, x.idx)
		sb.WriteByte(']')
	case *unary:
		sb.WriteString("(" + x.op.String() + " ")
		svcWrite(sb, x.x)
		sb.WriteByte(')')
	case *binary:
		sb.WriteByte('(')
		svcWrite(sb, x.l)
		sb.WriteString(" " + x.op.String() + " ")
		svcWrite(sb, x.r)
		sb.WriteByte(')')
	case *ternary:
		sb.WriteByte('(')
		svcWrite(sb, x.c)
		sb.WriteString(" ? ")
		svcWrite(sb, x.a)
		sb.WriteString(" : ")
		svcWrite(sb, x.b)
		sb.WriteByte(')')
	case *call:
		sb.WriteString(x.name + "(")
		for i, a := range x.args {
			if i > 0 {
				sb.WriteString(", ")
			}
			svcWrite(sb, a)
		}
		sb.WriteByte(')')
	case *objectLit:
		sb.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.Write(jsontext.AppendString(nil, k))
			sb.WriteString(": ")
			svcWrite(sb, x.vals[i])
		}
		sb.WriteByte('}')
	case *arrayLit:
		sb.WriteByte('[')
		for i, el := range x.elems {
			if i > 0 {
				sb.WriteString(", ")
			}
			svcWrite(sb, el)
		}
		sb.WriteByte(']')
	case *groupRef:
		svcWrite(sb, x.x)
	default:
		e.write(sb)
	}
}

// svcValue writes a constant as svcWrite does.
func svcValue(sb *strings.Builder, v value) {
	switch v.k {
	case kUndef:
		sb.WriteString("undefined")
	case kNum:
		if v.n < 0 {
			sb.WriteByte('-')
			sb.Write(appendNum(nil, -v.n))
			return
		}
		sb.Write(appendNum(nil, v.n))
	case kArr:
		sb.WriteByte('[')
		for i, el := range v.a {
			if i > 0 {
				sb.WriteString(", ")
			}
			svcValue(sb, el)
		}
		sb.WriteByte(']')
	case kObj:
		sb.WriteByte('{')
		for i, f := range v.o {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.Write(jsontext.AppendString(nil, f.k))
			sb.WriteString(": ")
			svcValue(sb, f.v)
		}
		sb.WriteByte('}')
	default:
		sb.Write(appendJSON(nil, v))
	}
}

// isName reports whether s can be written as an identifier after a dot.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if i == 0 && !isIdentStart(r) || !isIdentPart(r) {
			return false
		}
	}
	_, kw := keywords[strings.ToUpper(s)]
	return !kw
}

// maxKeyPoints is the most partition key values PartitionKeyPoints gives:
// beyond, a plan reads every range.
const maxKeyPoints = 1000

// PartitionKeyPoints returns the partition key values q's WHERE clause
// allows, with params bound, when it holds (joined by AND at the top) an
// equality or an IN of scalar constants on paths[0], and maybe on the
// paths after it: every combination of the values each of those paths
// may have, in the order of paths, each value nil, a bool, a float64 or a
// string, for the longest run of paths from the first that has such a
// condition (a prefix of a hierarchical key, or the whole key). The plan
// of such a query reads only the ranges of those keys. ok is false when
// paths[0] has no such condition, or the combinations are more than
// maxKeyPoints.
func (q *Query) PartitionKeyPoints(params map[string]any, paths [][]string) (points [][]any, ok bool) {
	if len(paths) == 0 {
		return nil, false
	}
	ranges := q.IndexRanges(params)
	points = [][]any{nil}
	for n, path := range paths {
		i := slices.IndexFunc(ranges, func(r IndexRange) bool { return r.Points != nil && slices.Equal(r.Path, path) })
		if i < 0 || slices.ContainsFunc(ranges[i].Points, func(k IndexKey) bool { return !k.Scalar() }) ||
			len(points)*len(ranges[i].Points) > maxKeyPoints {
			if n == 0 {
				return nil, false
			}
			break
		}
		var next [][]any
		for _, k := range ranges[i].Points {
			for _, p := range points {
				next = append(next, append(slices.Clip(p), toGo(k.value())))
			}
		}
		points = next
	}
	return points, true
}
