package query

import (
	"strings"

	"github.com/lethedb/lethe/internal/jsontext"
)

// expr is an expression node.
type expr interface {
	position() int
	write(sb *strings.Builder)
}

type (
	// literal is a constant.
	literal struct {
		pos int
		val value
	}
	// paramRef is @name; idx indexes Query.params.
	paramRef struct {
		pos  int
		name string
		idx  int
	}
	// ident is a reference to a FROM/JOIN alias; slot is its binding.
	ident struct {
		pos  int
		name string
		slot int
	}
	// member is x.name.
	member struct {
		pos  int
		x    expr
		name string
	}
	// index is x[i].
	index struct {
		pos int
		x   expr
		idx expr
	}
	unary struct {
		pos int
		op  tokType
		x   expr
	}
	binary struct {
		pos  int
		op   tokType
		l, r expr
	}
	between struct {
		pos       int
		not       bool
		x, lo, hi expr
	}
	inList struct {
		pos  int
		not  bool
		x    expr
		list []expr
	}
	like struct {
		pos        int
		not        bool
		x, pattern expr
		escape     expr // may be nil
	}
	ternary struct {
		pos     int
		c, a, b expr
	}
	call struct {
		pos  int
		name string // as written
		args []expr
		fn   *funcDef
		agg  int // aggregate index in Query.aggs, or -1
		// memo, for a VectorDistance call of the item alone: the first
		// call of the query the same as it, which keeps the value of the
		// item being evaluated for both (see vector.go).
		memo *call
	}
	objectLit struct {
		pos  int
		keys []string
		vals []expr
	}
	arrayLit struct {
		pos   int
		elems []expr
	}
	// subquery is a scalar subquery (SELECT ...), EXISTS(SELECT ...) or
	// ARRAY(SELECT ...); kind is tLParen, tExists or tArray.
	subquery struct {
		pos  int
		kind tokType
		q    *Query
	}
	// groupRef stands, in the select list of a GROUP BY query, for the
	// GROUP BY expression number idx, which it matched (x, kept for
	// String).
	groupRef struct {
		x   expr
		idx int
	}
)

func (e *literal) position() int   { return e.pos }
func (e *paramRef) position() int  { return e.pos }
func (e *ident) position() int     { return e.pos }
func (e *member) position() int    { return e.pos }
func (e *index) position() int     { return e.pos }
func (e *unary) position() int     { return e.pos }
func (e *binary) position() int    { return e.pos }
func (e *between) position() int   { return e.pos }
func (e *inList) position() int    { return e.pos }
func (e *like) position() int      { return e.pos }
func (e *ternary) position() int   { return e.pos }
func (e *call) position() int      { return e.pos }
func (e *objectLit) position() int { return e.pos }
func (e *arrayLit) position() int  { return e.pos }
func (e *subquery) position() int  { return e.pos }
func (e *groupRef) position() int  { return e.x.position() }

// selectItem is one projection: expr [AS alias].
type selectItem struct {
	x     expr
	alias string // explicit alias, or "" (name derived later)
	name  string // property name in the output object
}

// orderItem is one ORDER BY key.
type orderItem struct {
	x    expr
	desc bool
	// similar: x is a VectorDistance call, ordered most similar first
	// whatever the direction written (see vector.go).
	similar bool
}

// fromClause is FROM <name> [AS] alias, FROM <path> [AS alias] or
// FROM alias IN <path>. root is the container name written in the query.
type fromClause struct {
	alias string
	in    bool
	path  expr // nil for a plain FROM name; otherwise rooted at slot 0
}

// joinClause is JOIN alias IN expr (in set: each element of the array x
// is a row), JOIN <path> [[AS] alias] (the value of x is one row, none
// when it is undefined), or JOIN (SELECT ...) [AS alias] (sub set, x nil;
// alias "" when none was written).
type joinClause struct {
	alias string
	in    bool
	x     expr
	sub   *Query
	pos   int
}

// Query is a parsed query. It is immutable and safe for concurrent use by
// multiple Exec calls.
type Query struct {
	text       string
	distinct   bool
	top        expr
	star       bool
	starPos    int
	valueSel   bool
	items      []selectItem
	from       *fromClause
	joins      []joinClause
	where      expr
	orderBy    []orderItem
	rank       bool // ORDER BY RANK: orderBy holds the one scoring expression (rank.go)
	offset     expr
	limit      expr
	params     []string // distinct parameter names, "@x"
	paramPos   []int
	aggs       []*call
	root       string // container name after FROM (for String)
	rootExpl   bool   // the alias was written explicitly
	aggregated bool   // aggregates without GROUP BY: one result
	groupBy    []expr
	grouped    bool // GROUP BY: one result per group
	sub        bool // a subquery
	base       int  // the first binding slot of this query (see fromSlot)
	nslots     int  // the binding slots of the query and all its subqueries (top-level query only)

	// udfs are the user-defined functions the query and its subqueries
	// call, in the order of their first calls (top-level query only;
	// udf.go).
	udfs []udfRef
}

// Binding slots: a query's slots start at base. Slot base holds the
// document (top-level query only); a FROM with a path binds its alias in
// base+1; each JOIN binds the next. A subquery's slots come after those of
// the query around it, so that all share one array of bindings.

// fromSlot is the slot the FROM alias is bound in.
func (q *Query) fromSlot() int {
	if q.from != nil && q.from.path != nil {
		return q.base + 1
	}
	return q.base
}

// joinSlot is the slot JOIN number j binds.
func (q *Query) joinSlot(j int) int { return q.fromSlot() + 1 + j }

// lastSlot is the slot of the last alias (what SELECT * returns).
func (q *Query) lastSlot() int { return q.fromSlot() + len(q.joins) }

// keyLen is the number of values in the key of a result: the ORDER BY
// values, or for GROUP BY the group's values.
func (q *Query) keyLen() int {
	if q.grouped {
		return len(q.groupBy)
	}
	return len(q.orderBy)
}

// String returns a canonical, fully parenthesised form of the query that
// parses back to an equivalent query.
func (q *Query) String() string {
	var sb strings.Builder
	sb.WriteString("SELECT ")
	if q.distinct {
		sb.WriteString("DISTINCT ")
	}
	if q.top != nil {
		sb.WriteString("TOP ")
		q.top.write(&sb)
		sb.WriteByte(' ')
	}
	switch {
	case q.star:
		sb.WriteString("*")
	case q.valueSel:
		sb.WriteString("VALUE ")
		q.items[0].x.write(&sb)
	default:
		for i, it := range q.items {
			if i > 0 {
				sb.WriteString(", ")
			}
			it.x.write(&sb)
			if it.alias != "" {
				sb.WriteString(" AS ")
				writeName(&sb, it.alias)
			}
		}
	}
	if q.from != nil {
		sb.WriteString(" FROM ")
		switch {
		case q.from.in:
			writeName(&sb, q.from.alias)
			sb.WriteString(" IN ")
			q.from.path.write(&sb)
		case q.from.path != nil:
			q.from.path.write(&sb)
			sb.WriteString(" AS ")
			writeName(&sb, q.from.alias)
		default:
			writeName(&sb, q.root)
			sb.WriteString(" AS ")
			writeName(&sb, q.from.alias)
		}
		for _, j := range q.joins {
			sb.WriteString(" JOIN ")
			if j.sub != nil {
				sb.WriteByte('(')
				sb.WriteString(j.sub.String())
				sb.WriteByte(')')
				if j.alias != "" {
					sb.WriteString(" AS ")
					writeName(&sb, j.alias)
				}
				continue
			}
			if !j.in {
				j.x.write(&sb)
				sb.WriteString(" AS ")
				writeName(&sb, j.alias)
				continue
			}
			writeName(&sb, j.alias)
			sb.WriteString(" IN ")
			j.x.write(&sb)
		}
	}
	if q.where != nil {
		sb.WriteString(" WHERE ")
		q.where.write(&sb)
	}
	if len(q.groupBy) > 0 {
		sb.WriteString(" GROUP BY ")
		for i, g := range q.groupBy {
			if i > 0 {
				sb.WriteString(", ")
			}
			g.write(&sb)
		}
	}
	if len(q.orderBy) > 0 {
		sb.WriteString(" ORDER BY ")
		if q.rank {
			sb.WriteString("RANK ")
		}
		for i, o := range q.orderBy {
			if i > 0 {
				sb.WriteString(", ")
			}
			o.x.write(&sb)
			if o.desc {
				sb.WriteString(" DESC")
			}
		}
	}
	if q.offset != nil {
		sb.WriteString(" OFFSET ")
		q.offset.write(&sb)
		sb.WriteString(" LIMIT ")
		q.limit.write(&sb)
	}
	return sb.String()
}

// writeName writes an identifier; names that are not plain identifiers
// cannot be written (the parser only produces plain ones).
func writeName(sb *strings.Builder, s string) { sb.WriteString(s) }

func (e *literal) write(sb *strings.Builder) {
	switch e.val.k {
	case kUndef:
		sb.WriteString("undefined")
	case kNum:
		if e.val.n < 0 || (e.val.n == 0 && 1/e.val.n < 0) {
			sb.WriteString("(-")
			sb.Write(appendNum(nil, -e.val.n))
			sb.WriteString(")")
			return
		}
		sb.Write(appendNum(nil, e.val.n))
	default:
		sb.Write(appendJSON(nil, e.val))
	}
}
func (e *paramRef) write(sb *strings.Builder) { sb.WriteString(e.name) }
func (e *ident) write(sb *strings.Builder)    { sb.WriteString(e.name) }
func (e *member) write(sb *strings.Builder) {
	e.x.write(sb)
	sb.WriteByte('[')
	sb.Write(jsontext.AppendString(nil, e.name))
	sb.WriteByte(']')
}
func (e *index) write(sb *strings.Builder) {
	e.x.write(sb)
	sb.WriteByte('[')
	e.idx.write(sb)
	sb.WriteByte(']')
}
func (e *unary) write(sb *strings.Builder) {
	sb.WriteByte('(')
	sb.WriteString(e.op.String())
	sb.WriteByte(' ')
	e.x.write(sb)
	sb.WriteByte(')')
}
func (e *binary) write(sb *strings.Builder) {
	sb.WriteByte('(')
	e.l.write(sb)
	sb.WriteByte(' ')
	sb.WriteString(e.op.String())
	sb.WriteByte(' ')
	e.r.write(sb)
	sb.WriteByte(')')
}
func (e *between) write(sb *strings.Builder) {
	sb.WriteByte('(')
	e.x.write(sb)
	if e.not {
		sb.WriteString(" NOT")
	}
	sb.WriteString(" BETWEEN ")
	e.lo.write(sb)
	sb.WriteString(" AND ")
	e.hi.write(sb)
	sb.WriteByte(')')
}
func (e *inList) write(sb *strings.Builder) {
	sb.WriteByte('(')
	e.x.write(sb)
	if e.not {
		sb.WriteString(" NOT")
	}
	sb.WriteString(" IN (")
	for i, x := range e.list {
		if i > 0 {
			sb.WriteString(", ")
		}
		x.write(sb)
	}
	sb.WriteString("))")
}
func (e *like) write(sb *strings.Builder) {
	sb.WriteByte('(')
	e.x.write(sb)
	if e.not {
		sb.WriteString(" NOT")
	}
	sb.WriteString(" LIKE ")
	e.pattern.write(sb)
	if e.escape != nil {
		sb.WriteString(" ESCAPE ")
		e.escape.write(sb)
	}
	sb.WriteByte(')')
}
func (e *ternary) write(sb *strings.Builder) {
	sb.WriteByte('(')
	e.c.write(sb)
	sb.WriteString(" ? ")
	e.a.write(sb)
	sb.WriteString(" : ")
	e.b.write(sb)
	sb.WriteByte(')')
}
func (e *call) write(sb *strings.Builder) {
	sb.WriteString(e.name)
	sb.WriteByte('(')
	for i, a := range e.args {
		if i > 0 {
			sb.WriteString(", ")
		}
		a.write(sb)
	}
	sb.WriteByte(')')
}
func (e *objectLit) write(sb *strings.Builder) {
	sb.WriteByte('{')
	for i, k := range e.keys {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.Write(jsontext.AppendString(nil, k))
		sb.WriteString(": ")
		e.vals[i].write(sb)
	}
	sb.WriteByte('}')
}
func (e *subquery) write(sb *strings.Builder) {
	switch e.kind {
	case tExists:
		sb.WriteString("EXISTS")
	case tArray:
		sb.WriteString("ARRAY")
	}
	sb.WriteByte('(')
	sb.WriteString(e.q.String())
	sb.WriteByte(')')
}
func (e *groupRef) write(sb *strings.Builder) { e.x.write(sb) }
func (e *arrayLit) write(sb *strings.Builder) {
	sb.WriteByte('[')
	for i, x := range e.elems {
		if i > 0 {
			sb.WriteString(", ")
		}
		x.write(sb)
	}
	sb.WriteByte(']')
}
