package lethe

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// parsedItem is what one pass over an incoming document finds.
type parsedItem struct {
	id      string
	ttl     TTL // TTLOff when absent or null
	ttlSize int // bytes the ttl member adds to the stored JSON
	size    int // bytes of the stored members, separators included

	// The top-level members kept in the stored document: the first ones in
	// place (no allocation for most documents), the rest in more.
	first  [24]span
	nFirst int
	more   []span
}

func (p *parsedItem) addMember(m span) {
	if p.nFirst < len(p.first) {
		p.first[p.nFirst] = m
		p.nFirst++
		return
	}
	p.more = append(p.more, m)
}

type span struct{ start, end int }

// parseItem reads a document once: it checks its size, that it is valid
// JSON and an object nested at most MaxDepth deep, finds its id and ttl, and
// notes the members to keep (all but the system properties _ts and _etag,
// which the store owns). It never panics, whatever the input.
func parseItem(doc []byte) (parsedItem, *Error) {
	var p parsedItem
	if len(doc) > MaxItemSize {
		return p, &Error{StatusCode: statusRequestEntityTooLarge,
			Message: fmt.Sprintf("the item is %d bytes, over the limit of %d", len(doc), MaxItemSize)}
	}
	s := scanner{b: doc}
	s.skipSpace()
	if s.i >= len(doc) || doc[s.i] != '{' {
		if s.i >= len(doc) {
			return p, badRequest("the item is empty: it must be a JSON object")
		}
		if err := s.value(0); err != nil {
			return p, err
		}
		return p, badRequest("the item must be a JSON object")
	}
	s.i++
	haveID := false
	haveTTL := false
	s.skipSpace()
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			s.skipSpace()
			start := s.i
			if s.peek() != '"' {
				return p, s.errExpected("a property name")
			}
			key, escaped, err := s.str()
			if err != nil {
				return p, err
			}
			s.skipSpace()
			if s.peek() != ':' {
				return p, s.errExpected("':'")
			}
			s.i++
			s.skipSpace()
			name := string(key)
			if escaped {
				name = decodeString(key)
			}
			vstart := s.i
			switch name {
			case "id":
				if haveID {
					return p, badRequest("the item has the property 'id' twice")
				}
				haveID = true
				if s.peek() != '"' {
					if err := s.value(1); err != nil {
						return p, err
					}
					return p, badRequest("the property 'id' must be a string, not %s", clip(doc[vstart:s.i]))
				}
				raw, esc, err := s.str()
				if err != nil {
					return p, err
				}
				// A view of the caller's bytes: buildRecord copies it, and
				// errors clone it (withContext).
				p.id = unsafe.String(unsafe.SliceData(raw), len(raw))
				if esc {
					p.id = decodeString(raw)
				}
			case "ttl":
				if haveTTL {
					return p, badRequest("the item has the property 'ttl' twice")
				}
				haveTTL = true
				if err := s.value(1); err != nil {
					return p, err
				}
				raw := doc[vstart:s.i]
				switch c := raw[0]; {
				case c == 'n':
					// "ttl": null inherits the container default (SPEC §2).
				case c == '-' || (c >= '0' && c <= '9'):
					t, err := parseItemTTL(raw)
					if err != nil {
						return p, err
					}
					p.ttl = t
				default:
					return p, ttlError(string(raw))
				}
			default:
				if err := s.value(1); err != nil {
					return p, err
				}
			}
			end := s.i
			if name != "_ts" && name != "_etag" {
				p.addMember(span{start, end})
				p.size += end - start + 1 // the member and the separator after it
				if name == "ttl" {
					p.ttlSize = end - start + 1
				}
			}
			s.skipSpace()
			if s.peek() == ',' {
				s.i++
				continue
			}
			if s.peek() == '}' {
				s.i++
				break
			}
			return p, s.errExpected("',' or '}'")
		}
	}
	s.skipSpace()
	if s.i != len(doc) {
		return p, badRequest("invalid JSON at offset %d: data after the end of the item", s.i)
	}
	if !haveID {
		return p, badRequest("the item has no 'id' property")
	}
	if err := validateItemID(p.id); err != nil {
		return p, err
	}
	return p, nil
}

// scanner is a single-pass JSON validator over a byte slice.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) errExpected(what string) *Error {
	if s.i >= len(s.b) {
		return badRequest("invalid JSON: unexpected end of input, expected %s", what)
	}
	return badRequest("invalid JSON at offset %d: expected %s, found %q", s.i, what, s.b[s.i])
}

// value skips one JSON value; depth is the nesting depth of its container.
func (s *scanner) value(depth int) *Error {
	switch c := s.peek(); {
	case c == '{' || c == '[':
		if depth+1 > MaxDepth {
			return badRequest("the item is nested deeper than %d levels", MaxDepth)
		}
		return s.composite(depth + 1)
	case c == '"':
		_, _, err := s.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.errExpected("a value")
	}
}

// composite skips an object or array whose opening bracket is at s.i.
func (s *scanner) composite(depth int) *Error {
	object := s.b[s.i] == '{'
	closing := byte(']')
	if object {
		closing = '}'
	}
	s.i++
	s.skipSpace()
	if s.peek() == closing {
		s.i++
		return nil
	}
	for {
		s.skipSpace()
		if object {
			if s.peek() != '"' {
				return s.errExpected("a property name")
			}
			if _, _, err := s.str(); err != nil {
				return err
			}
			s.skipSpace()
			if s.peek() != ':' {
				return s.errExpected("':'")
			}
			s.i++
			s.skipSpace()
		}
		if err := s.value(depth); err != nil {
			return err
		}
		s.skipSpace()
		switch s.peek() {
		case ',':
			s.i++
		case closing:
			s.i++
			return nil
		default:
			return s.errExpected(fmt.Sprintf("',' or '%c'", closing))
		}
	}
}

// str scans a string at s.i and returns its raw contents (between the
// quotes) and whether it has escapes.
func (s *scanner) str() (raw []byte, escaped bool, err *Error) {
	s.i++ // the opening quote
	start := s.i
	for s.i < len(s.b) {
		// Skip plain characters fast: eight at a time, then one by one.
		for s.i+8 <= len(s.b) && !hasSpecial(binary.LittleEndian.Uint64(s.b[s.i:])) {
			s.i += 8
		}
		for s.i < len(s.b) && plain[s.b[s.i]] {
			s.i++
		}
		if s.i >= len(s.b) {
			break
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			s.i++
			switch s.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if s.i+5 > len(s.b) || !isHex4(s.b[s.i+1:s.i+5]) {
					return nil, false, badRequest("invalid JSON at offset %d: bad \\u escape", s.i-1)
				}
				s.i += 5
			default:
				return nil, false, badRequest("invalid JSON at offset %d: bad escape", s.i-1)
			}
		case c < 0x20:
			return nil, false, badRequest("invalid JSON at offset %d: control character in a string", s.i)
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && n == 1 {
				return nil, false, badRequest("invalid JSON at offset %d: invalid UTF-8", s.i)
			}
			s.i += n
		}
	}
	return nil, false, badRequest("invalid JSON: unterminated string")
}

// hasSpecial reports whether any of the eight bytes in x is not plain: a
// quote, a backslash, a control character or a byte of 0x80 or more. It may
// report true for a plain word next to such a byte; never false for one.
func hasSpecial(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	quote := x ^ (lo * '"')
	backslash := x ^ (lo * '\\')
	return ((quote-lo)&^quote|(backslash-lo)&^backslash|(x-lo*0x20)|x)&hi != 0
}

// plain marks the bytes a string may hold as they are: not a quote, a
// backslash, a control character or the start of a multi-byte sequence.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func (s *scanner) number() *Error {
	start := s.i
	if s.peek() == '-' {
		s.i++
	}
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return badRequest("invalid JSON at offset %d: malformed number", start)
	}
	if s.peek() == '.' {
		s.i++
		if !s.digits() {
			return badRequest("invalid JSON at offset %d: malformed number", start)
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !s.digits() {
			return badRequest("invalid JSON at offset %d: malformed number", start)
		}
	}
	return nil
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

func (s *scanner) literal(word string) *Error {
	if !strings.HasPrefix(string(s.b[s.i:min(len(s.b), s.i+len(word))]), word) {
		return s.errExpected("a value")
	}
	s.i += len(word)
	return nil
}

// decodeString decodes the raw contents of a valid JSON string with escapes.
// Unpaired surrogates become U+FFFD, as in encoding/json.
func decodeString(raw []byte) string {
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		i++
		switch raw[i] {
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
		case 'u':
			r := hex4(raw[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) {
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					if r2 := hex4(raw[i+3 : i+7]); utf16.DecodeRune(r, r2) != utf8.RuneError {
						r = utf16.DecodeRune(r, r2)
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			b.WriteRune(r)
		default: // '"', '\\', '/'
			b.WriteByte(raw[i])
		}
		i++
	}
	return b.String()
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// clip returns JSON text short enough for an error message.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
