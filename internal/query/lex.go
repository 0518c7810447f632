package query

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// lexer splits a query into tokens on demand.
type lexer struct {
	src string
	pos int
}

func isIdentStart(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= utf8.RuneSelf && unicode.IsLetter(r)
}

func isIdentPart(r rune) bool {
	return isIdentStart(r) || r >= '0' && r <= '9' || r >= utf8.RuneSelf && unicode.IsDigit(r)
}

// next returns the next token; errors come back as tError tokens.
func (l *lexer) next() token {
	l.skipSpace()
	start := l.pos
	if l.pos >= len(l.src) {
		return token{typ: tEOF, pos: start}
	}
	c := l.src[l.pos]
	tok := func(t tokType, n int) token {
		l.pos += n
		return token{typ: t, pos: start, val: l.src[start:l.pos]}
	}
	at := func(i int) byte {
		if l.pos+i < len(l.src) {
			return l.src[l.pos+i]
		}
		return 0
	}
	switch c {
	case '(':
		return tok(tLParen, 1)
	case ')':
		return tok(tRParen, 1)
	case '[':
		return tok(tLBrack, 1)
	case ']':
		return tok(tRBrack, 1)
	case '{':
		return tok(tLBrace, 1)
	case '}':
		return tok(tRBrace, 1)
	case ',':
		return tok(tComma, 1)
	case ':':
		return tok(tColon, 1)
	case '?':
		if at(1) == '?' {
			return tok(tCoalesce, 2)
		}
		return tok(tQuestion, 1)
	case '*':
		return tok(tStar, 1)
	case '/':
		return tok(tSlash, 1)
	case '%':
		return tok(tPercent, 1)
	case '+':
		return tok(tPlus, 1)
	case '-':
		return tok(tMinus, 1)
	case '~':
		return tok(tTilde, 1)
	case '&':
		return tok(tAmp, 1)
	case '^':
		return tok(tCaret, 1)
	case '|':
		if at(1) == '|' {
			return tok(tConcat, 2)
		}
		return tok(tPipe, 1)
	case '=':
		if at(1) == '=' {
			return tok(tEq, 2)
		}
		return tok(tEq, 1)
	case '!':
		if at(1) == '=' {
			return tok(tNe, 2)
		}
		l.pos++
		return token{typ: tError, pos: start, val: "unexpected character '!'"}
	case '<':
		switch at(1) {
		case '=':
			return tok(tLe, 2)
		case '>':
			return tok(tNe, 2)
		case '<':
			return tok(tShl, 2)
		}
		return tok(tLt, 1)
	case '>':
		switch at(1) {
		case '=':
			return tok(tGe, 2)
		case '>':
			if at(2) == '>' {
				return tok(tUShr, 3)
			}
			return tok(tShr, 2)
		}
		return tok(tGt, 1)
	case '.':
		if at(1) >= '0' && at(1) <= '9' {
			return l.number()
		}
		return tok(tDot, 1)
	case '"', '\'':
		return l.str(c)
	case '@':
		l.pos++
		for l.pos < len(l.src) {
			r, n := utf8.DecodeRuneInString(l.src[l.pos:])
			if !isIdentPart(r) {
				break
			}
			l.pos += n
		}
		if l.pos == start+1 {
			return token{typ: tError, pos: start, val: "expected parameter name after '@'"}
		}
		return token{typ: tParam, pos: start, val: l.src[start:l.pos]}
	}
	if c >= '0' && c <= '9' {
		return l.number()
	}
	r, n := utf8.DecodeRuneInString(l.src[l.pos:])
	if isIdentStart(r) {
		l.pos += n
		for l.pos < len(l.src) {
			r, n := utf8.DecodeRuneInString(l.src[l.pos:])
			if !isIdentPart(r) {
				break
			}
			l.pos += n
		}
		word := l.src[start:l.pos]
		if word == "NaN" || word == "Infinity" {
			// JavaScript's names, case-sensitive as there
			return token{typ: tNonFinite, pos: start, val: word}
		}
		if t, ok := keywords[strings.ToUpper(word)]; ok && len(word) <= 9 {
			return token{typ: t, pos: start, val: word}
		}
		return token{typ: tIdent, pos: start, val: word}
	}
	l.pos += n
	if r == utf8.RuneError && n <= 1 {
		return token{typ: tError, pos: start, val: "invalid UTF-8 in query"}
	}
	return token{typ: tError, pos: start, val: "unexpected character " + quoteRune(r)}
}

func quoteRune(r rune) string {
	if r < 0x20 || r == 0x7f {
		return fmt.Sprintf("U+%02X", r)
	}
	return "'" + string(r) + "'"
}

// skipSpace skips whitespace and -- line comments.
func (l *lexer) skipSpace() {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case c == '-' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '-':
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
		default:
			return
		}
	}
}

func (l *lexer) number() token {
	start := l.pos
	digits := func() int {
		n := 0
		for l.pos < len(l.src) && l.src[l.pos] >= '0' && l.src[l.pos] <= '9' {
			l.pos++
			n++
		}
		return n
	}
	if strings.HasPrefix(l.src[l.pos:], "0x") || strings.HasPrefix(l.src[l.pos:], "0X") {
		l.pos += 2
		h := l.pos
		for l.pos < len(l.src) && strings.IndexByte("0123456789abcdefABCDEF", l.src[l.pos]) >= 0 {
			l.pos++
		}
		if l.pos == h {
			return token{typ: tError, pos: start, val: "malformed number " + quoteStr(l.src[start:l.pos])}
		}
		return token{typ: tNumber, pos: start, val: l.src[start:l.pos]}
	}
	digits()
	if l.pos < len(l.src) && l.src[l.pos] == '.' {
		l.pos++
		digits()
	}
	if l.pos < len(l.src) && (l.src[l.pos] == 'e' || l.src[l.pos] == 'E') {
		l.pos++
		if l.pos < len(l.src) && (l.src[l.pos] == '+' || l.src[l.pos] == '-') {
			l.pos++
		}
		if digits() == 0 {
			return token{typ: tError, pos: start, val: "malformed number " + quoteStr(l.src[start:l.pos])}
		}
	}
	if l.pos < len(l.src) {
		if r, n := utf8.DecodeRuneInString(l.src[l.pos:]); isIdentStart(r) {
			return token{typ: tError, pos: start, val: "malformed number " + quoteStr(l.src[start:l.pos+n])}
		}
	}
	return token{typ: tNumber, pos: start, val: l.src[start:l.pos]}
}

// str lexes a quoted string literal and decodes its escapes.
func (l *lexer) str(q byte) token {
	start := l.pos
	l.pos++
	var sb strings.Builder
	for {
		if l.pos >= len(l.src) {
			return token{typ: tError, pos: start, val: "unterminated string literal", badString: true}
		}
		c := l.src[l.pos]
		if c == q {
			l.pos++
			return token{typ: tString, pos: start, val: sb.String()}
		}
		if c != '\\' {
			sb.WriteByte(c)
			l.pos++
			continue
		}
		if l.pos+1 >= len(l.src) {
			return token{typ: tError, pos: start, val: "unterminated string literal", badString: true}
		}
		r, n, ok := decodeEscape(l.src[l.pos:])
		switch {
		case !ok && l.src[l.pos+1] == 'u':
			return token{typ: tError, pos: l.pos, val: "invalid \\u escape in string literal", badString: true}
		case !ok:
			_, n := utf8.DecodeRuneInString(l.src[l.pos+1:])
			return token{typ: tError, pos: l.pos, val: "invalid escape sequence " + quoteStr(l.src[l.pos:l.pos+1+n]) + " in string literal", badString: true}
		}
		sb.WriteRune(r)
		l.pos += n
	}
}
