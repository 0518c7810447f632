package query

// tokType is the type of a lexical token.
type tokType uint8

const (
	tEOF tokType = iota
	tError
	tIdent
	tParam
	tNumber
	tString
	tNonFinite // NaN or Infinity

	// punctuation and operators
	tLParen
	tRParen
	tLBrack
	tRBrack
	tLBrace
	tRBrace
	tComma
	tDot
	tColon
	tQuestion
	tCoalesce // ??
	tStar
	tSlash
	tPercent
	tPlus
	tMinus
	tTilde
	tAmp
	tPipe
	tCaret
	tShl  // <<
	tShr  // >>
	tUShr // >>>
	tConcat
	tEq
	tNe // != or <>
	tLt
	tLe
	tGt
	tGe

	// keywords (case-insensitive)
	kwFirst
	tSelect
	tFrom
	tWhere
	tOrder
	tBy
	tAsc
	tDesc
	tAnd
	tOr
	tNot
	tIn
	tBetween
	tLike
	tEscape
	tTop
	tDistinct
	tValue
	tAs
	tJoin
	tOffset
	tLimit
	tGroup
	tTrue
	tFalse
	tNull
	tUndefined
	tExists
	tArray
	tUDF
	kwLast
)

var keywords = map[string]tokType{
	"SELECT":    tSelect,
	"FROM":      tFrom,
	"WHERE":     tWhere,
	"ORDER":     tOrder,
	"BY":        tBy,
	"ASC":       tAsc,
	"DESC":      tDesc,
	"AND":       tAnd,
	"OR":        tOr,
	"NOT":       tNot,
	"IN":        tIn,
	"BETWEEN":   tBetween,
	"LIKE":      tLike,
	"ESCAPE":    tEscape,
	"TOP":       tTop,
	"DISTINCT":  tDistinct,
	"VALUE":     tValue,
	"AS":        tAs,
	"JOIN":      tJoin,
	"OFFSET":    tOffset,
	"LIMIT":     tLimit,
	"GROUP":     tGroup,
	"TRUE":      tTrue,
	"FALSE":     tFalse,
	"NULL":      tNull,
	"UNDEFINED": tUndefined,
	"EXISTS":    tExists,
	"ARRAY":     tArray,
	"UDF":       tUDF,
}

var tokNames = map[tokType]string{
	tEOF: "end of query", tError: "error", tIdent: "identifier", tParam: "parameter",
	tNumber: "number", tString: "string", tNonFinite: "NaN or Infinity",
	tLParen: "(", tRParen: ")", tLBrack: "[", tRBrack: "]", tLBrace: "{", tRBrace: "}",
	tComma: ",", tDot: ".", tColon: ":", tQuestion: "?", tCoalesce: "??",
	tStar: "*", tSlash: "/", tPercent: "%", tPlus: "+", tMinus: "-", tTilde: "~",
	tAmp: "&", tPipe: "|", tCaret: "^", tShl: "<<", tShr: ">>", tUShr: ">>>",
	tConcat: "||", tEq: "=", tNe: "!=", tLt: "<", tLe: "<=", tGt: ">", tGe: ">=",
}

func init() {
	for name, t := range keywords {
		tokNames[t] = name
	}
}

func (t tokType) String() string {
	if s, ok := tokNames[t]; ok {
		return s
	}
	return "token"
}

func (t tokType) isKeyword() bool { return t > kwFirst && t < kwLast }

// token is one lexical token. pos is its byte offset in the query text.
type token struct {
	typ tokType
	pos int
	val string // source text (identifier, number); decoded text for strings; message for tError
	// badString marks a tError of a string literal (unterminated, or a bad
	// escape), which the service reports as SC1012.
	badString bool
}
