package cosmosrest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/jsontext"
)

// maxPKHeader bounds the x-ms-documentdb-partitionkey header: three
// components of at most 2 KB together, each byte escaped at worst as \UXXXXXXXX.
const maxPKHeader = 24 << 10

var (
	errPKHeader = errors.New("the x-ms-documentdb-partitionkey header is not a JSON array of partition key values (strings, numbers, booleans, null, or {} for none)")
	errPKLevels = fmt.Errorf("the x-ms-documentdb-partitionkey header has more than %d components", lethe.MaxPartitionKeyLevels)
)

// parsePKHeader parses an x-ms-documentdb-partitionkey header: a JSON array
// of the key's components, each a string, number, boolean, null, or {} for
// "none" or undefined (a document without the path, or with an object or an
// array there), as PartitionKey.String writes it. No other object, and no
// array, is a component: the service refuses them too.
// Strings also accept the escapes of Go's strconv.QuoteToASCII, which the
// Go SDK (azcosmos) uses to write them: \a, \v, \xHH and \UHHHHHHHH, on top
// of JSON's.
func parsePKHeader(s string) (lethe.PartitionKey, error) {
	pk := lethe.NewPartitionKey()
	if len(s) > maxPKHeader {
		return pk, errPKHeader
	}
	p := pkParser{s: s}
	p.ws()
	if !p.eat('[') {
		return pk, errPKHeader
	}
	p.ws()
	if p.eat(']') {
		p.ws()
		if p.i != len(s) {
			return pk, errPKHeader
		}
		return pk, nil
	}
	for n := 0; ; n++ {
		if n == lethe.MaxPartitionKeyLevels {
			return pk, errPKLevels
		}
		var ok bool
		pk, ok = p.value(pk)
		if !ok {
			return pk, errPKHeader
		}
		p.ws()
		if p.eat(',') {
			p.ws()
			continue
		}
		if p.eat(']') {
			break
		}
		return pk, errPKHeader
	}
	p.ws()
	if p.i != len(s) {
		return pk, errPKHeader
	}
	return pk, nil
}

type pkParser struct {
	s string
	i int
}

func (p *pkParser) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *pkParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pkParser) lit(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

// value parses one component and appends it to pk.
func (p *pkParser) value(pk lethe.PartitionKey) (lethe.PartitionKey, bool) {
	if p.i >= len(p.s) {
		return pk, false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		str, ok := p.str()
		if !ok {
			return pk, false
		}
		return pk.AppendString(str), true
	case c == '{':
		p.i++
		p.ws()
		if !p.eat('}') {
			return pk, false
		}
		return pk.AppendNone(), true
	case p.lit("true"):
		return pk.AppendBool(true), true
	case p.lit("false"):
		return pk.AppendBool(false), true
	case p.lit("null"):
		return pk.AppendNull(), true
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.i
		p.i++
		for p.i < len(p.s) && strings.IndexByte("0123456789.eE+-", p.s[p.i]) >= 0 {
			p.i++
		}
		text := p.s[start:p.i]
		if end, f := jsontext.ScanNumber([]byte(text), 0); f != jsontext.OK || end != len(text) {
			return pk, false
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return pk, false
		}
		return pk.AppendNumber(f), true
	}
	return pk, false
}

// str parses a double-quoted string at p.i.
func (p *pkParser) str() (string, bool) {
	p.i++ // the opening quote
	var b strings.Builder
	for {
		if p.i >= len(p.s) {
			return "", false
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			str := b.String()
			if !utf8.ValidString(str) {
				return "", false // lethe refuses it too; say so here
			}
			return str, true
		case c < 0x20:
			return "", false
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		p.i++ // the backslash
		if p.i >= len(p.s) {
			return "", false
		}
		e := p.s[p.i]
		p.i++
		switch e {
		case '"', '\\', '/', '\'':
			b.WriteByte(e)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x':
			v, ok := p.hex(2)
			if !ok {
				return "", false
			}
			b.WriteByte(byte(v)) // a raw byte, as Go's quoting means it
		case 'u':
			v, ok := p.hex(4)
			if !ok {
				return "", false
			}
			r := rune(v)
			if utf16.IsSurrogate(r) {
				// A high surrogate must be followed by \u and a low one.
				if r >= 0xDC00 || !p.lit(`\u`) {
					return "", false
				}
				lo, ok := p.hex(4)
				if !ok {
					return "", false
				}
				r = utf16.DecodeRune(r, rune(lo))
				if r == utf8.RuneError {
					return "", false
				}
			}
			b.WriteRune(r)
		case 'U':
			v, ok := p.hex(8)
			if !ok || v > utf8.MaxRune || utf16.IsSurrogate(rune(v)) {
				return "", false
			}
			b.WriteRune(rune(v))
		default:
			return "", false
		}
	}
}

// hex parses n hexadecimal digits.
func (p *pkParser) hex(n int) (uint32, bool) {
	if len(p.s)-p.i < n {
		return 0, false
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += n
	return uint32(v), true
}
