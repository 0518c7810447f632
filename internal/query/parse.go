package query

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lethedb/lethe/internal/jsontext"
)

// Limits on query text, those of Cosmos DB's documentation (its service
// quotas: a query of 512 KB, the emulator's 5 JOINs), which the REST front
// advertises in the account's query configuration. Parsing takes memory
// linear in the text: about 100 bytes a byte of text at most.
const (
	MaxQueryLen = 512 << 10 // maximum query length in characters (maxSqlQueryInputLength)
	MaxJoins    = 5         // maximum JOINs in a query, its subqueries' included (maxJoinsPerSqlQuery)
	MaxDepth    = 128       // maximum expression nesting depth
)

// Error is a bad query: a syntax error or a semantic one (unknown function,
// wrong argument count, missing parameter, TOP/OFFSET/LIMIT not a
// non-negative integer, ...).
//
// Msg is lethe's explanation, Line and Col where it points. Code, Service,
// Start and End are the error as Cosmos DB's query engine reports it, in
// the list of errors of a 400: its code (SC1001 ...), its message, and
// its span in the query text. Code is "" for the errors the service words
// otherwise (the limits on the query's length and joins, a continuation
// token that does not fit).
type Error struct {
	Line, Col int // 1-based position in the query text; 0 when not tied to a position
	Msg       string

	Code       string // the service's code, such as "SC1001"; "" when it has none for the error
	Service    string // the service's message, when it is not Msg
	Start, End int    // the span as the service counts it: offsets in UTF-16 code units of the query text
}

// Error returns "Line:Col: Msg", or just Msg when Line is 0.
func (e *Error) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Col) + ": " + e.Msg
}

// ServiceMessage is the message of the error in the service's list of
// errors: the service's wording where lethe knows it, else Msg.
func (e *Error) ServiceMessage() string {
	if e.Service != "" {
		return e.Service
	}
	return e.Msg
}

// The codes of the errors of Cosmos DB's query engine that lethe gives.
// SC1001, SC1002, SC1012, SC2001 and SC2050 are the service's, with the
// messages quoted from it in SDKs' issues and tests. An unknown function's
// message is the service's too (quoted in EF Core's tests), its code
// SC2005 lethe's guess; SC2022 is the service's code for two select items
// of one name, the message lethe's. lethe gives SC2000 to the other
// semantic errors, whose codes in the service it does not know.
const (
	codeSyntax      = "SC1001" // Syntax error, incorrect syntax near 'X'.
	codeEndOfQuery  = "SC1002" // Syntax error, unexpected end-of-file.
	codeBadString   = "SC1012" // Syntax error, invalid string literal token 'X'.
	codeSemantic    = "SC2000" // lethe's: a semantic error whose service code is not known
	codeUnresolved  = "SC2001" // Identifier 'X' could not be resolved.
	codeUnknownFunc = "SC2005" // 'X' is not a recognized built-in function name.
	codeDupName     = "SC2022" // two select items with one name
	codeArgCount    = "SC2050" // The X function requires N argument(s).
)

// errAt makes an *Error at byte offset pos of text (pos < 0: no position),
// a semantic error (codeSemantic) whose span is the token at pos.
func errAt(text string, pos int, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if pos < 0 {
		return &Error{Msg: msg, Code: codeSemantic}
	}
	if pos > len(text) {
		pos = len(text)
	}
	line, col := 1, 1
	for i := 0; i < pos; {
		r, n := utf8.DecodeRuneInString(text[i:])
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
		i += n
	}
	e := &Error{Line: line, Col: col, Msg: msg, Code: codeSemantic}
	e.span(text, pos, pos+len(tokenText(text, pos)))
	return e
}

// span sets the error's span to the bytes from pos to end of text, in
// UTF-16 code units as the service counts.
func (e *Error) span(text string, pos, end int) {
	e.Start = utf16Len(text[:pos])
	e.End = e.Start + utf16Len(text[pos:end])
}

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// tokenText is the source text of the token at byte offset pos of text:
// "" at the end, one character where no token starts (a stray '!', an
// unterminated string's quote), a number's characters where it is
// malformed.
func tokenText(text string, pos int) string {
	if pos >= len(text) {
		return ""
	}
	l := lexer{src: text, pos: pos}
	if t := l.next(); t.typ != tError && t.typ != tEOF && t.pos == pos {
		return text[pos:l.pos]
	}
	end := pos
	if c := text[pos]; c >= '0' && c <= '9' || c == '.' {
		for end < len(text) {
			r, n := utf8.DecodeRuneInString(text[end:])
			if !isIdentPart(r) && r != '.' {
				break
			}
			end += n
		}
		return text[pos:end]
	}
	_, n := utf8.DecodeRuneInString(text[pos:])
	return text[pos : pos+n]
}

// syntaxErr is a syntax error at byte offset pos of text, as the service
// gives it: SC1002 at the end of the query, else SC1001 near the token
// at pos.
func syntaxErr(text string, pos int, msg string) *Error {
	e := errAt(text, pos, "%s", msg)
	if pos >= len(text) {
		e.Code, e.Service = codeEndOfQuery, "Syntax error, unexpected end-of-file."
		return e
	}
	e.Code, e.Service = codeSyntax, "Syntax error, incorrect syntax near '"+tokenText(text, pos)+"'."
	return e
}

// atEnd moves e's span, as the service gives it, to the end of text: an
// SC1002, for a parenthesis lethe reports where it opens.
func (e *Error) atEnd(text string) *Error {
	e.Code, e.Service = codeEndOfQuery, "Syntax error, unexpected end-of-file."
	e.span(text, len(text), len(text))
	return e
}

func quoteStr(s string) string { return strconv.Quote(s) }

// bailout carries a parse error up the recursive descent.
type bailout struct{ err *Error }

type parser struct {
	lex    lexer
	tok    token // current lookahead
	back   bool  // one token of pushback: tok is pending
	prev   token
	depth  int
	q      *Query
	params map[string]int

	lastImplicitAlias *token // an alias written without AS
	aliasTok          int    // ntok when lastImplicitAlias was read
	ntok              int    // tokens read from the lexer

	root   *Query   // the top-level query (q is a subquery's while it is parsed)
	njoins int      // JOINs read so far, in every query of the text
	follow []string // what may follow at this point of the query (for errors)
	nslots int      // binding slots given out so far (check)

	udfDefs map[string]*funcDef // the function of each user-defined function called, by name (udf.go)
}

// Parse parses a query. Every error it returns is a *Error.
func Parse(text string) (q *Query, err error) {
	if len(text) > MaxQueryLen && (len(text) > utf8.UTFMax*MaxQueryLen || utf8.RuneCountInString(text) > MaxQueryLen) {
		return nil, &Error{Msg: fmt.Sprintf("The SQL query text exceeded the maximum limit of %d characters.", MaxQueryLen)}
	}
	p := &parser{lex: lexer{src: text}, q: &Query{text: text}, params: map[string]int{}}
	p.root = p.q
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			q, err = nil, b.err
		}
	}()
	p.parseQuery()
	if err := p.check(); err != nil {
		return nil, err
	}
	p.q.shareVectorCalls()
	return p.q, nil
}

// fail stops the parse with a syntax error at byte offset pos.
func (p *parser) fail(pos int, format string, args ...any) {
	panic(bailout{syntaxErr(p.lex.src, pos, fmt.Sprintf(format, args...))})
}

// failWith stops the parse with e.
func (p *parser) failWith(e *Error) { panic(bailout{e}) }

// next consumes and returns the next token.
func (p *parser) next() token {
	if p.back {
		p.back = false
	} else {
		p.tok = p.lex.next()
		p.ntok++
	}
	if p.tok.typ == tError {
		if p.tok.badString {
			// an unterminated string or a bad escape: the service
			// names the character where it stopped
			e := errAt(p.lex.src, p.tok.pos, "%s", p.tok.val)
			c := tokenText(p.lex.src, p.tok.pos)
			e.Code, e.Service = codeBadString, "Syntax error, invalid string literal token '"+c+"'."
			p.failWith(e)
		}
		p.fail(p.tok.pos, "%s", p.tok.val)
	}
	p.prev = p.tok
	return p.tok
}

// backup pushes the last token back.
func (p *parser) backup() { p.back = true }

func (p *parser) peek() token {
	t := p.next()
	p.backup()
	return t
}

func (p *parser) accept(t tokType) bool {
	if p.next().typ == t {
		return true
	}
	p.backup()
	return false
}

func describe(t token) string {
	switch t.typ {
	case tEOF:
		return "end of query"
	case tString:
		return "string " + quoteStr(t.val)
	}
	return quoteStr(t.val)
}

// unexpected fails at t, listing what was expected. If t is an identifier
// that looks like a misspelling of one expected keyword, name just that one.
func (p *parser) unexpected(t token, expected ...string) {
	if t.typ == tIdent {
		best, bestD := "", 3
		up := strings.ToUpper(t.val)
		for _, e := range expected {
			kw := strings.Fields(e)[0]
			if d := editDistance(up, kw); d < bestD && d <= len(kw)/2 {
				best, bestD = e, d
			}
		}
		if best != "" {
			p.fail(t.pos, "expected %s, found %s", best, describe(t))
		}
	}
	var exp string
	switch len(expected) {
	case 1:
		exp = expected[0]
	default:
		exp = strings.Join(expected[:len(expected)-1], ", ") + " or " + expected[len(expected)-1]
	}
	p.fail(t.pos, "expected %s, found %s", exp, describe(t))
}

func editDistance(a, b string) int {
	if len(a) > 20 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (p *parser) expect(t tokType, what string) token {
	tok := p.next()
	if tok.typ != t {
		p.unexpected(tok, what)
	}
	return tok
}

func (p *parser) parseQuery() {
	p.parseQueryIn(false)
	if t := p.next(); t.typ != tEOF {
		p.trailing(t)
	}
}

// parseQueryIn parses a query up to its end: the end of the text, or, in a
// subquery, the ")" that closes it (left unread).
func (p *parser) parseQueryIn(sub bool) {
	q := p.q
	end := "end of query"
	if sub {
		end = "\")\""
	}
	p.expect(tSelect, "SELECT")
	if p.accept(tDistinct) {
		q.distinct = true
	}
	if p.accept(tTop) {
		q.top = p.parseCount("TOP")
	}
	p.parseSelectList()
	switch t := p.peek(); t.typ {
	case tFrom, tEOF, tWhere, tOrder, tOffset, tGroup:
	default:
		if sub && t.typ == tRParen {
			break
		}
		p.next()
		if t.typ == tRParen {
			p.fail(t.pos, "unbalanced parentheses: unexpected \")\"")
		}
		exp := []string{"FROM", "WHERE", "GROUP BY", "ORDER BY", "OFFSET", end}
		if !q.star && !q.valueSel {
			exp = []string{"FROM", "\",\"", "WHERE", "GROUP BY", "ORDER BY", "OFFSET", end}
		}
		p.blameAlias(t, exp...)
	}
	if p.accept(tFrom) {
		if t := p.peek(); t.typ == tLParen {
			p.fail(t.pos, "a subquery in FROM is not supported; use JOIN (SELECT ...) or FROM x IN <array>")
		}
		p.parseFrom()
	}
	p.follow = []string{"WHERE", "GROUP BY", "ORDER BY", "OFFSET", end}
	if q.from != nil {
		p.follow = []string{"JOIN", "WHERE", "GROUP BY", "ORDER BY", "OFFSET", end}
		for p.accept(tJoin) {
			p.parseJoin()
		}
	}
	if p.accept(tWhere) {
		q.where = p.parseExpr()
		p.follow = []string{"GROUP BY", "ORDER BY", "OFFSET", end}
	}
	if t := p.peek(); t.typ == tGroup {
		p.next()
		if sub {
			p.fail(t.pos, "GROUP BY is not supported in a subquery")
		}
		p.expect(tBy, "BY")
		for {
			q.groupBy = append(q.groupBy, p.parseExpr())
			if !p.accept(tComma) {
				break
			}
		}
		p.follow = []string{"ORDER BY", "OFFSET", end}
	}
	if p.accept(tOrder) {
		p.expect(tBy, "BY")
		if p.acceptRank() {
			if sub {
				p.fail(p.tok.pos, "ORDER BY RANK is not supported in a subquery")
			}
			q.rank = true
			q.orderBy = append(q.orderBy, orderItem{x: p.parseExpr()})
			p.follow = []string{"OFFSET", end}
		}
		for !q.rank {
			o := orderItem{x: p.parseExpr()}
			if p.accept(tDesc) {
				o.desc = true
			} else {
				p.accept(tAsc)
			}
			q.orderBy = append(q.orderBy, o)
			if !p.accept(tComma) {
				break
			}
		}
		p.follow = []string{"OFFSET", end}
	}
	if p.accept(tOffset) {
		q.offset = p.parseCount("OFFSET")
		p.expect(tLimit, "LIMIT")
		q.limit = p.parseCount("LIMIT")
		p.follow = []string{end}
	}
	if sub {
		if t := p.peek(); t.typ != tRParen {
			p.next()
			if t.typ == tEOF {
				p.fail(t.pos, "unbalanced parentheses: the subquery's \"(\" is never closed")
			}
			p.trailing(t)
		}
	}
}

// trailing reports t, found where the query (or subquery) should end.
func (p *parser) trailing(t token) {
	if t.typ == tLimit {
		p.fail(t.pos, "LIMIT requires OFFSET (OFFSET n LIMIT m)")
	}
	if t.typ == tRParen {
		p.fail(t.pos, "unbalanced parentheses: unexpected \")\"")
	}
	p.blameAlias(t, p.follow...)
}

// parseJoin parses what follows JOIN: alias IN expr, or (SELECT ...) with
// an optional alias.
func (p *parser) parseJoin() {
	q := p.q
	if p.njoins++; p.njoins > MaxJoins {
		panic(bailout{&Error{Msg: fmt.Sprintf("The SQL query exceeded the maximum number of joins. The allowed limit is %d.", MaxJoins)}})
	}
	if t := p.peek(); t.typ == tLParen {
		p.next()
		if s := p.peek(); s.typ != tSelect {
			p.unexpected(s, "SELECT (a subquery after JOIN)")
		}
		j := joinClause{sub: p.parseSubquery(t.pos), pos: t.pos}
		p.expect(tRParen, "\")\"")
		j.alias, _ = p.parseAlias()
		q.joins = append(q.joins, j)
		return
	}
	first := p.expect(tIdent, "alias after JOIN")
	if p.accept(tIn) {
		x := p.parseExpr()
		q.joins = append(q.joins, joinClause{alias: first.val, in: true, x: x, pos: x.position()})
		return
	}
	// JOIN <path> [[AS] alias]: the path's value as a one-element set
	path := p.parsePostfix(&ident{pos: first.pos, name: first.val})
	j := joinClause{alias: inferredAlias(path, first.val), x: path, pos: first.pos}
	explicit := p.peek().typ == tAs
	if alias, ok := p.parseAlias(); ok {
		if t := p.peek(); !explicit && (t.typ == tDot || t.typ == tLBrack) {
			// JOIN t c.tags: the IN of JOIN t IN c.tags is missing
			p.unexpected(*p.lastImplicitAlias, "IN")
		}
		j.alias = alias
	}
	q.joins = append(q.joins, j)
}

// inferredAlias is the alias a FROM or JOIN source written without one
// takes: the last property name of its path (FROM c.a.b is b), or, when
// that is not a plain name, the name the path starts with (first).
func inferredAlias(path expr, first string) string {
	alias := first
	switch x := path.(type) {
	case *member:
		alias = x.name
	case *index:
		if l, ok := x.idx.(*literal); ok && l.val.k == kStr {
			alias = l.val.s
		}
	}
	if !isPlainIdent(alias) {
		return first
	}
	return alias
}

// parseSubquery parses the query of a subquery, after its "(", up to its
// ")" (left unread).
func (p *parser) parseSubquery(pos int) *Query {
	p.enter(pos)
	outer, follow := p.q, p.follow
	sq := &Query{text: p.root.text, sub: true}
	p.q = sq
	p.parseQueryIn(true)
	p.q, p.follow = outer, follow
	p.depth--
	return sq
}

// blameAlias reports t as unexpected; when the previous token was an alias
// written without AS, that alias was probably a misspelled keyword, so the
// error points there.
func (p *parser) blameAlias(t token, expected ...string) {
	if p.lastImplicitAlias != nil && p.ntok == p.aliasTok+1 {
		p.unexpected(*p.lastImplicitAlias, expected...)
	}
	p.unexpected(t, expected...)
}

// parseCount parses the operand of TOP, OFFSET or LIMIT: a non-negative
// integer literal or a parameter.
func (p *parser) parseCount(what string) expr {
	t := p.next()
	switch t.typ {
	case tNumber:
		f := p.number(t)
		if f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
			p.fail(t.pos, "%s must be a non-negative integer, found %s", what, t.val)
		}
		return &literal{pos: t.pos, val: numVal(f)}
	case tParam:
		return p.param(t)
	}
	p.fail(t.pos, "%s must be a non-negative integer or a parameter, found %s", what, describe(t))
	return nil
}

func (p *parser) number(t token) float64 {
	s := t.val
	if len(s) > 2 && (s[1] == 'x' || s[1] == 'X') {
		u, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			p.fail(t.pos, "malformed number %s", quoteStr(s))
		}
		return float64(u)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isRangeErr(err) {
		p.fail(t.pos, "malformed number %s", quoteStr(s))
	}
	if math.IsInf(f, 0) {
		p.fail(t.pos, "number %s is out of range", s)
	}
	return f
}

func (p *parser) param(t token) *paramRef {
	idx, ok := p.params[t.val]
	if !ok {
		idx = len(p.root.params)
		p.params[t.val] = idx
		p.root.params = append(p.root.params, t.val)
		p.root.paramPos = append(p.root.paramPos, t.pos)
	}
	return &paramRef{pos: t.pos, name: t.val, idx: idx}
}

func (p *parser) parseSelectList() {
	q := p.q
	if t := p.next(); t.typ == tStar {
		q.star, q.starPos = true, t.pos
		return
	}
	p.backup()
	if p.accept(tValue) {
		q.valueSel = true
		q.items = []selectItem{{x: p.parseExpr()}}
		return
	}
	for {
		it := selectItem{x: p.parseExpr()}
		p.lastImplicitAlias = nil
		it.alias, _ = p.parseAlias()
		q.items = append(q.items, it)
		if !p.accept(tComma) {
			break
		}
	}
}

func (p *parser) parseFrom() {
	q := p.q
	first := p.expect(tIdent, "a name after FROM")
	if p.accept(tIn) {
		// FROM alias IN path; in a subquery, any expression of the
		// queries around it
		var path expr
		if p.q.sub {
			path = p.parseExpr()
		} else {
			path = p.parsePath()
		}
		q.from = &fromClause{alias: first.val, in: true, path: path}
		return
	}
	path := p.parsePostfix(&ident{pos: first.pos, name: first.val})
	q.root = first.val
	if id, ok := path.(*ident); ok && !q.sub {
		q.from = &fromClause{alias: id.name}
	} else {
		q.from = &fromClause{alias: inferredAlias(path, first.val), path: path}
	}
	if alias, ok := p.parseAlias(); ok {
		q.from.alias, q.rootExpl = alias, true
	}
}

// parseAlias parses an optional alias: "AS name", or a name alone
// (remembered, so that an error just after it can point at it).
func (p *parser) parseAlias() (string, bool) {
	if p.accept(tAs) {
		return p.expect(tIdent, "alias after AS").val, true
	}
	if t := p.next(); t.typ == tIdent {
		p.lastImplicitAlias, p.aliasTok = &t, p.ntok
		return t.val, true
	}
	p.backup()
	return "", false
}

// parsePath parses name followed by .prop and [index] accessors.
func (p *parser) parsePath() expr {
	t := p.expect(tIdent, "a name")
	var x expr = &ident{pos: t.pos, name: t.val}
	return p.parsePostfix(x)
}

// Binding powers of the binary operators (higher binds tighter). The unary
// operators - + ~ bind tighter than all of them; NOT binds looser than the
// comparisons and tighter than AND; the conditional operator ?: binds
// loosest.
var binPrec = [kwLast]int8{
	tCoalesce: 1,
	tOr:       2,
	tAnd:      3,
	tEq:       4, tNe: 4, tLt: 4, tLe: 4, tGt: 4, tGe: 4, tIn: 4, tBetween: 4, tLike: 4, tNot: 4,
	tConcat: 5,
	tPipe:   6,
	tCaret:  7,
	tAmp:    8,
	tShl:    9, tShr: 9, tUShr: 9,
	tPlus: 10, tMinus: 10,
	tStar: 11, tSlash: 11, tPercent: 11,
}

func (p *parser) enter(pos int) {
	p.depth++
	if p.depth > MaxDepth {
		p.fail(pos, "expression nested too deeply (more than %d levels)", MaxDepth)
	}
}

// parseExpr parses a full expression, including ?: .
func (p *parser) parseExpr() expr {
	t := p.peek()
	p.enter(t.pos)
	c := p.parseBinary(1)
	if q := p.next(); q.typ == tQuestion {
		a := p.parseExpr()
		p.expect(tColon, "\":\"")
		b := p.parseExpr()
		c = &ternary{pos: q.pos, c: c, a: a, b: b}
	} else {
		p.backup()
	}
	p.depth--
	return c
}

func (p *parser) parseBinary(minPrec int8) expr {
	x := p.parseUnary()
	for {
		t := p.next()
		prec := int8(0)
		if t.typ < kwLast {
			prec = binPrec[t.typ]
		}
		if prec == 0 || prec < minPrec {
			p.backup()
			return x
		}
		not := false
		op := t
		if t.typ == tNot {
			op = p.next()
			if op.typ != tIn && op.typ != tLike && op.typ != tBetween {
				p.unexpected(op, "IN", "LIKE", "BETWEEN")
			}
			not = true
		}
		switch op.typ {
		case tIn:
			p.expect(tLParen, "\"(\"")
			var list []expr
			if p.peek().typ == tSelect {
				p.fail(p.peek().pos, "IN (SELECT ...) is not supported; use EXISTS(SELECT VALUE x FROM x IN ... WHERE x = ...)")
			}
			for {
				list = append(list, p.parseExpr())
				if !p.accept(tComma) {
					break
				}
			}
			p.expect(tRParen, "\")\"")
			x = &inList{pos: t.pos, not: not, x: x, list: list}
		case tBetween:
			lo := p.parseBinary(prec + 1)
			p.expect(tAnd, "AND")
			hi := p.parseBinary(prec + 1)
			x = &between{pos: t.pos, not: not, x: x, lo: lo, hi: hi}
		case tLike:
			pat := p.parseBinary(prec + 1)
			var esc expr
			if p.accept(tEscape) {
				esc = p.parseBinary(prec + 1)
			}
			x = &like{pos: t.pos, not: not, x: x, pattern: pat, escape: esc}
		default:
			r := p.parseBinary(prec + 1)
			x = &binary{pos: t.pos, op: op.typ, l: x, r: r}
		}
	}
}

func (p *parser) parseUnary() expr {
	t := p.next()
	switch t.typ {
	case tNot:
		// NOT binds looser than comparisons, as in SQL: NOT c.a = 1 is
		// NOT (c.a = 1); NOT a AND b is (NOT a) AND b.
		p.enter(t.pos)
		x := p.parseBinary(binPrec[tEq])
		p.depth--
		return &unary{pos: t.pos, op: t.typ, x: x}
	case tMinus, tPlus, tTilde:
		p.enter(t.pos)
		x := p.parseUnary()
		p.depth--
		if l, ok := x.(*literal); ok && t.typ == tMinus && l.val.k == kNum {
			return &literal{pos: t.pos, val: value{k: kNum, n: -l.val.n}}
		}
		return &unary{pos: t.pos, op: t.typ, x: x}
	}
	p.backup()
	return p.parsePostfix(p.parsePrimary())
}

func (p *parser) parsePostfix(x expr) expr {
	for {
		t := p.next()
		switch t.typ {
		case tDot:
			n := p.next()
			if n.typ != tIdent && n.typ != tNonFinite && !n.typ.isKeyword() {
				p.unexpected(n, "property name after \".\"")
			}
			x = &member{pos: x.position(), x: x, name: n.val}
		case tLBrack:
			p.enter(t.pos)
			i := p.parseExpr()
			p.depth--
			p.expect(tRBrack, "\"]\"")
			if l, ok := i.(*literal); ok && l.val.k == kStr {
				x = &member{pos: x.position(), x: x, name: l.val.s}
			} else {
				x = &index{pos: x.position(), x: x, idx: i}
			}
		default:
			p.backup()
			return x
		}
	}
}

func (p *parser) parsePrimary() expr {
	t := p.next()
	switch t.typ {
	case tNumber:
		return &literal{pos: t.pos, val: value{k: kNum, n: p.number(t)}}
	case tNonFinite:
		f := math.Inf(1)
		if t.val == "NaN" {
			f = math.NaN()
		}
		return &literal{pos: t.pos, val: value{k: kNum, n: f}}
	case tString:
		return &literal{pos: t.pos, val: strVal(t.val)}
	case tTrue:
		return &literal{pos: t.pos, val: trueVal}
	case tFalse:
		return &literal{pos: t.pos, val: falseV}
	case tNull:
		return &literal{pos: t.pos, val: nullVal}
	case tUndefined:
		return &literal{pos: t.pos, val: undef}
	case tParam:
		return p.param(t)
	case tIdent:
		if p.accept(tLParen) {
			return p.parseCall(t)
		}
		return &ident{pos: t.pos, name: t.val}
	case tUDF:
		return p.parseUDF(t)
	case tExists, tArray:
		kw := strings.ToUpper(t.val)
		if o := p.next(); o.typ != tLParen {
			p.unexpected(o, "\"(\" after "+kw)
		}
		if s := p.peek(); s.typ != tSelect {
			p.unexpected(s, "SELECT (a subquery: "+kw+"(SELECT ...))")
		}
		sq := &subquery{pos: t.pos, kind: t.typ, q: p.parseSubquery(t.pos)}
		p.expect(tRParen, "\")\"")
		return sq
	case tLParen:
		if p.peek().typ == tSelect {
			sq := &subquery{pos: t.pos, kind: tLParen, q: p.parseSubquery(t.pos)}
			p.expect(tRParen, "\")\"")
			return sq
		}
		x := p.parseExpr()
		if c := p.next(); c.typ != tRParen {
			if c.typ == tEOF {
				p.failWith(syntaxErr(p.lex.src, t.pos, "unbalanced parentheses: \"(\" is never closed").atEnd(p.lex.src))
			}
			p.unexpected(c, "\")\"")
		}
		return x
	case tLBrack:
		var elems []expr
		if !p.accept(tRBrack) {
			for {
				elems = append(elems, p.parseExpr())
				if !p.accept(tComma) {
					break
				}
			}
			p.expect(tRBrack, "\"]\"")
		}
		return &arrayLit{pos: t.pos, elems: elems}
	case tLBrace:
		o := &objectLit{pos: t.pos}
		if !p.accept(tRBrace) {
			seen := map[string]bool{}
			for {
				k := p.next()
				if k.typ != tString && k.typ != tIdent && k.typ != tNonFinite && !k.typ.isKeyword() {
					p.unexpected(k, "property name")
				}
				if seen[k.val] {
					p.fail(k.pos, "duplicate property name %s in object literal", quoteStr(k.val))
				}
				seen[k.val] = true
				p.expect(tColon, "\":\"")
				o.keys = append(o.keys, k.val)
				o.vals = append(o.vals, p.parseExpr())
				if !p.accept(tComma) {
					break
				}
			}
			p.expect(tRBrace, "\"}\"")
		}
		return o
	case tRParen:
		p.fail(t.pos, "unbalanced parentheses: unexpected \")\"")
	}
	p.unexpected(t, "an expression")
	return nil
}

func (p *parser) parseCall(name token) expr {
	c := &call{pos: name.pos, name: name.val, agg: -1}
	fn := lookupFunc(name.val)
	if fn == nil {
		e := errAt(p.lex.src, name.pos, "unknown function '%s'", name.val)
		e.Code, e.Service = codeUnknownFunc, "'"+name.val+"' is not a recognized built-in function name."
		p.failWith(e)
	}
	c.fn = fn
	c.args = p.parseArgs(name.pos+len(name.val), func() {
		if fn.agg && p.peek().typ == tStar {
			p.fail(p.peek().pos, "%s(*) is not supported; use %s(1)", strings.ToUpper(name.val), strings.ToUpper(name.val))
		}
	})
	if len(c.args) < fn.minArgs || (fn.maxArgs >= 0 && len(c.args) > fn.maxArgs) {
		e := errAt(p.lex.src, name.pos, "function '%s' %s, found %d", name.val, fn.arity(), len(c.args))
		e.Code = codeArgCount
		if fn.minArgs == fn.maxArgs {
			e.Service = fmt.Sprintf("The %s function requires %d argument(s).", strings.ToUpper(name.val), fn.minArgs)
		}
		p.failWith(e)
	}
	return c
}

// parseArgs parses the arguments of a call, after its "(", and the ")";
// open is where to report a "(" that is never closed (just after the
// function's name). before runs before each argument is parsed.
func (p *parser) parseArgs(open int, before func()) []expr {
	var args []expr
	if p.accept(tRParen) {
		return args
	}
	for {
		before()
		args = append(args, p.parseExpr())
		if !p.accept(tComma) {
			break
		}
	}
	if t := p.next(); t.typ != tRParen {
		if t.typ == tEOF {
			p.failWith(syntaxErr(p.lex.src, open, "unbalanced parentheses: \"(\" is never closed").atEnd(p.lex.src))
		}
		p.unexpected(t, "\",\"", "\")\"")
	}
	return args
}

// ---- semantic checks ----

// walk calls f on e and its subexpressions (pre-order); f returning false
// skips the children.
func walk(e expr, f func(expr) bool) {
	if e == nil || !f(e) {
		return
	}
	switch x := e.(type) {
	case *member:
		walk(x.x, f)
	case *index:
		walk(x.x, f)
		walk(x.idx, f)
	case *unary:
		walk(x.x, f)
	case *binary:
		walk(x.l, f)
		walk(x.r, f)
	case *between:
		walk(x.x, f)
		walk(x.lo, f)
		walk(x.hi, f)
	case *inList:
		walk(x.x, f)
		for _, y := range x.list {
			walk(y, f)
		}
	case *like:
		walk(x.x, f)
		walk(x.pattern, f)
		walk(x.escape, f)
	case *ternary:
		walk(x.c, f)
		walk(x.a, f)
		walk(x.b, f)
	case *call:
		for _, y := range x.args {
			walk(y, f)
		}
	case *objectLit:
		for _, y := range x.vals {
			walk(y, f)
		}
	case *arrayLit:
		for _, y := range x.elems {
			walk(y, f)
		}
	}
}

// check resolves identifiers to binding slots, validates aggregates, GROUP
// BY and subqueries, and derives projection names.
func (p *parser) check() *Error {
	if err := p.checkQuery(p.q, nil); err != nil {
		return err
	}
	p.q.nslots = p.nslots
	return nil
}

// checkQuery checks q, a top-level query (outer nil) or a subquery that
// sees the aliases of outer.
func (p *parser) checkQuery(q *Query, outer map[string]int) *Error {
	text := q.text
	var err *Error
	q.base = p.nslots
	p.nslots = q.lastSlot() + 1
	scope := map[string]int{}
	for k, v := range outer {
		scope[k] = v
	}
	// resolve resolves the identifiers of e in scope, checks its
	// subqueries and refuses aggregates (where != "": the clause's name).
	resolve := func(e expr, where string) {
		walk(e, func(e expr) bool {
			if err != nil {
				return false
			}
			switch x := e.(type) {
			case *ident:
				slot, ok := scope[x.name]
				if !ok {
					switch {
					case q.sub:
						err = errAt(text, x.pos, "identifier '%s' could not be resolved (a subquery sees its own aliases and those of the queries around it)", x.name)
					case q.from == nil:
						err = errAt(text, x.pos, "identifier '%s' could not be resolved (the query has no FROM clause)", x.name)
					default:
						err = errAt(text, x.pos, "identifier '%s' could not be resolved", x.name)
					}
					err.Code, err.Service = codeUnresolved, "Identifier '"+x.name+"' could not be resolved."
					return false
				}
				x.slot = slot
			case *call:
				if x.fn.agg {
					if where != "" {
						err = errAt(text, x.pos, "aggregate function '%s' is not allowed in %s", x.name, where)
						return false
					}
				}
				if err = checkSearchCall(text, x, where); err != nil {
					return false
				}
			case *subquery:
				if where == "GROUP BY" {
					err = errAt(text, x.pos, "subqueries are not allowed in GROUP BY")
					return false
				}
				err = p.checkQuery(x.q, scope)
				return false
			}
			return true
		})
	}
	if q.from != nil {
		if q.from.path != nil {
			if q.sub {
				resolve(q.from.path, "FROM")
			} else {
				scope[rootName(q.from.path)] = q.base
				resolve(q.from.path, "FROM")
				scope = map[string]int{}
			}
			scope[q.from.alias] = q.fromSlot()
		} else {
			scope[q.from.alias] = q.base
		}
		local := map[string]bool{q.from.alias: true}
		for j := range q.joins {
			jc := &q.joins[j]
			if jc.sub != nil {
				if err = p.checkQuery(jc.sub, scope); err != nil {
					return err
				}
			} else {
				resolve(jc.x, "JOIN")
			}
			if err != nil {
				return err
			}
			if jc.alias == "" {
				continue
			}
			if local[jc.alias] {
				return errAt(text, jc.pos, "alias '%s' is already defined", jc.alias)
			}
			local[jc.alias] = true
			scope[jc.alias] = q.joinSlot(j)
		}
	}
	if err != nil {
		return err
	}
	resolve(q.where, "WHERE")
	for i := range q.orderBy {
		o := &q.orderBy[i]
		if q.rank {
			resolve(o.x, "ORDER BY RANK")
			if err == nil {
				err = checkRank(text, o.x)
			}
			continue
		}
		resolve(o.x, "ORDER BY")
		if c, ok := o.x.(*call); ok && c.fn.vector {
			o.similar, o.desc = true, false
		}
	}
	for _, g := range q.groupBy {
		resolve(g, "GROUP BY")
		if err != nil {
			return err
		}
		hasRef := false
		walk(g, func(e expr) bool {
			if _, ok := e.(*ident); ok {
				hasRef = true
			}
			return !hasRef
		})
		if !hasRef {
			return errAt(text, g.position(), "a GROUP BY expression must refer to a property of the input (it has no alias in it)")
		}
	}
	if err != nil {
		return err
	}
	if q.star && len(q.joins) > 0 {
		return errAt(text, q.starPos, "'SELECT *' is only valid with a single input set; project the aliases instead")
	}
	if q.star && q.from == nil {
		return errAt(text, q.starPos, "'SELECT *' is only valid with a FROM clause")
	}
	if q.star && len(q.groupBy) > 0 {
		return errAt(text, q.starPos, "'SELECT *' is not valid with GROUP BY; select the GROUP BY expressions and aggregates")
	}
	// select list: aggregates
	dollar, firstBare, firstSub := 0, -1, -1
	names := map[string]bool{}
	for i := range q.items {
		it := &q.items[i]
		resolve(it.x, "")
		if err != nil {
			return err
		}
		hasAgg, bare := false, -1
		var visit func(e expr, inAgg bool)
		visit = func(e expr, inAgg bool) {
			walk(e, func(e expr) bool {
				switch x := e.(type) {
				case *ident:
					if !inAgg && bare < 0 {
						bare = x.pos
					}
				case *subquery:
					if !inAgg && firstSub < 0 {
						firstSub = x.pos
					}
				case *call:
					if x.fn.agg {
						if inAgg && err == nil {
							err = errAt(text, x.pos, "aggregate function '%s' cannot be nested in another aggregate", x.name)
						}
						hasAgg = true
						x.agg = len(q.aggs)
						q.aggs = append(q.aggs, x)
						for _, a := range x.args {
							visit(a, true)
						}
						return false
					}
				}
				return true
			})
		}
		visit(it.x, false)
		if err != nil {
			return err
		}
		if hasAgg {
			q.aggregated = true
		}
		if bare >= 0 && firstBare < 0 {
			firstBare = bare
		}
		if !q.valueSel {
			name := it.alias
			if name == "" {
				switch x := it.x.(type) {
				case *member:
					name = x.name
				case *ident:
					name = x.name
				default:
					dollar++
					name = "$" + strconv.Itoa(dollar)
				}
			}
			if names[name] {
				e := errAt(text, it.x.position(), "duplicate property name '%s' in the select list", name)
				e.Code = codeDupName
				return e
			}
			names[name] = true
			it.name = name
		}
	}
	if len(q.groupBy) > 0 {
		if len(q.orderBy) > 0 {
			return errAt(text, q.orderBy[0].x.position(), "ORDER BY cannot be used with GROUP BY")
		}
		if firstSub >= 0 {
			return errAt(text, firstSub, "a subquery in the select list cannot be used with GROUP BY (only inside an aggregate's argument)")
		}
		q.aggregated, q.grouped = false, true
		return p.groupSelect(q)
	}
	if q.aggregated && firstBare >= 0 {
		return errAt(text, firstBare, "an aggregate cannot be combined with a non-aggregate expression without GROUP BY")
	}
	if q.aggregated && firstSub >= 0 {
		return errAt(text, firstSub, "an aggregate cannot be combined with a subquery in the select list (only inside an aggregate's argument)")
	}
	if q.aggregated && len(q.orderBy) > 0 {
		if q.rank {
			return errAt(text, q.orderBy[0].x.position(), "ORDER BY RANK cannot be used with aggregates")
		}
		// One result, which the service's ORDER BY leaves as it is (its
		// plans keep it in the ranges' aggregates).
		q.orderBy = nil
	}
	return nil
}

// groupSelect checks the select list of a GROUP BY query, which may hold
// only GROUP BY expressions (and expressions of them), aggregates and
// constants, and replaces each GROUP BY expression in it by a groupRef.
func (p *parser) groupSelect(q *Query) *Error {
	gsize := make([]int, len(q.groupBy))
	for i, g := range q.groupBy {
		gsize[i] = exprSize(g)
	}
	sizes := map[expr]int{}
	var measure func(e expr) int
	measure = func(e expr) int {
		n := 1
		mapChildren(e, func(c expr) expr { n += measure(c); return c })
		sizes[e] = n
		return n
	}
	for _, it := range q.items {
		measure(it.x)
	}
	var bad expr
	extend := false // bad is the innermost part of the path being left
	var sub func(e expr) expr
	sub = func(e expr) expr {
		if bad != nil {
			return e
		}
		if n := sizes[e]; n > 0 {
			for i, g := range q.groupBy {
				if gsize[i] == n && sameExpr(e, g) {
					return &groupRef{x: e, idx: i}
				}
			}
		}
		switch x := e.(type) {
		case *call:
			if x.fn.agg {
				return e
			}
		case *ident:
			bad, extend = e, true
			return e
		}
		mapChildren(e, sub)
		if bad != nil && extend {
			switch x := e.(type) {
			case *member:
				bad = e
			case *index:
				if bad == x.x {
					bad = e
				} else {
					extend = false
				}
			default:
				extend = false
			}
		}
		return e
	}
	for i := range q.items {
		it := &q.items[i]
		it.x = sub(it.x)
		if bad != nil {
			return errAt(q.text, bad.position(), "%s is neither a GROUP BY expression nor inside an aggregate: with GROUP BY, the select list may hold only GROUP BY expressions, aggregates and constants", pathText(bad))
		}
	}
	return nil
}

// pathText writes a property path as it could be written in a query.
func pathText(e expr) string {
	var sb strings.Builder
	var w func(e expr)
	w = func(e expr) {
		switch x := e.(type) {
		case *ident:
			sb.WriteString(x.name)
		case *member:
			w(x.x)
			if isPlainIdent(x.name) {
				sb.WriteByte('.')
				sb.WriteString(x.name)
			} else {
				sb.WriteByte('[')
				sb.Write(jsontext.AppendString(nil, x.name))
				sb.WriteByte(']')
			}
		default:
			e.write(&sb)
		}
	}
	w(e)
	return sb.String()
}

// exprSize counts the nodes of e (a subquery counts as one).
func exprSize(e expr) int {
	n := 1
	mapChildren(e, func(c expr) expr { n += exprSize(c); return c })
	return n
}

// mapChildren replaces each direct subexpression c of e by f(c).
func mapChildren(e expr, f func(expr) expr) {
	opt := func(x expr) expr {
		if x == nil {
			return nil
		}
		return f(x)
	}
	switch x := e.(type) {
	case *member:
		x.x = f(x.x)
	case *index:
		x.x, x.idx = f(x.x), f(x.idx)
	case *unary:
		x.x = f(x.x)
	case *binary:
		x.l, x.r = f(x.l), f(x.r)
	case *between:
		x.x, x.lo, x.hi = f(x.x), f(x.lo), f(x.hi)
	case *inList:
		x.x = f(x.x)
		for i := range x.list {
			x.list[i] = f(x.list[i])
		}
	case *like:
		x.x, x.pattern, x.escape = f(x.x), f(x.pattern), opt(x.escape)
	case *ternary:
		x.c, x.a, x.b = f(x.c), f(x.a), f(x.b)
	case *call:
		for i := range x.args {
			x.args[i] = f(x.args[i])
		}
	case *objectLit:
		for i := range x.vals {
			x.vals[i] = f(x.vals[i])
		}
	case *arrayLit:
		for i := range x.elems {
			x.elems[i] = f(x.elems[i])
		}
	}
}

// sameExpr reports whether a and b are the same expression (as GROUP BY
// matches select expressions): same operators, functions, names and
// constants. Subqueries are never the same.
func sameExpr(a, b expr) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	all := func(xs, ys []expr) bool {
		if len(xs) != len(ys) {
			return false
		}
		for i := range xs {
			if !sameExpr(xs[i], ys[i]) {
				return false
			}
		}
		return true
	}
	switch x := a.(type) {
	case *literal:
		y, ok := b.(*literal)
		return ok && x.val.k == y.val.k && compareTotal(x.val, y.val) == 0
	case *paramRef:
		y, ok := b.(*paramRef)
		return ok && x.idx == y.idx
	case *ident:
		y, ok := b.(*ident)
		return ok && x.slot == y.slot && x.name == y.name
	case *member:
		y, ok := b.(*member)
		return ok && x.name == y.name && sameExpr(x.x, y.x)
	case *index:
		y, ok := b.(*index)
		return ok && sameExpr(x.x, y.x) && sameExpr(x.idx, y.idx)
	case *unary:
		y, ok := b.(*unary)
		return ok && x.op == y.op && sameExpr(x.x, y.x)
	case *binary:
		y, ok := b.(*binary)
		return ok && x.op == y.op && sameExpr(x.l, y.l) && sameExpr(x.r, y.r)
	case *between:
		y, ok := b.(*between)
		return ok && x.not == y.not && sameExpr(x.x, y.x) && sameExpr(x.lo, y.lo) && sameExpr(x.hi, y.hi)
	case *inList:
		y, ok := b.(*inList)
		return ok && x.not == y.not && sameExpr(x.x, y.x) && all(x.list, y.list)
	case *like:
		y, ok := b.(*like)
		return ok && x.not == y.not && sameExpr(x.x, y.x) && sameExpr(x.pattern, y.pattern) && sameExpr(x.escape, y.escape)
	case *ternary:
		y, ok := b.(*ternary)
		return ok && sameExpr(x.c, y.c) && sameExpr(x.a, y.a) && sameExpr(x.b, y.b)
	case *call:
		y, ok := b.(*call)
		return ok && x.fn == y.fn && all(x.args, y.args)
	case *objectLit:
		y, ok := b.(*objectLit)
		return ok && slices.Equal(x.keys, y.keys) && all(x.vals, y.vals)
	case *arrayLit:
		y, ok := b.(*arrayLit)
		return ok && all(x.elems, y.elems)
	}
	return false
}

func rootName(e expr) string {
	for {
		switch x := e.(type) {
		case *ident:
			return x.name
		case *member:
			e = x.x
		case *index:
			e = x.x
		default:
			return ""
		}
	}
}

// isPlainIdent reports whether s lexes as a single identifier (not a
// keyword).
func isPlainIdent(s string) bool {
	l := lexer{src: s}
	t := l.next()
	return t.typ == tIdent && t.val == s && l.next().typ == tEOF
}
