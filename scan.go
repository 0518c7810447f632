package lethe

import (
	"fmt"
	"unsafe"

	"github.com/lethedb/lethe/internal/jsontext"
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
			key, fl, err := s.name()
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
			if fl&jsontext.Escaped != 0 {
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
				raw, fl, err := s.str()
				if err != nil {
					return p, err
				}
				if fl&jsontext.LoneSurrogate != 0 {
					return p, loneSurrogateError("the id", raw, vstart+1)
				}
				// A view of the caller's bytes: buildRecord copies it, and
				// errors clone it (withContext).
				p.id = unsafe.String(unsafe.SliceData(raw), len(raw))
				if fl&jsontext.Escaped != 0 {
					p.id = decodeString(raw)
				}
			case "ttl":
				if haveTTL {
					return p, badRequest("the item has the property 'ttl' twice")
				}
				haveTTL = true
				if c := s.peek(); c == '-' || (c >= '0' && c <= '9') {
					// A number beyond a double is beyond a ttl too:
					// parseItemTTL refuses it in the words of Cosmos.
					end, f := jsontext.ScanNumber(doc, s.i)
					if f == jsontext.BadNumber {
						return p, faultError(end, f)
					}
					s.i = end
					t, err := parseItemTTL(doc[vstart:end])
					if err != nil {
						return p, err
					}
					p.ttl = t
					break
				}
				if err := s.value(1); err != nil {
					return p, err
				}
				// "ttl": null inherits the container default (SPEC §2).
				if raw := doc[vstart:s.i]; raw[0] != 'n' {
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

func (s *scanner) skipSpace() { s.i = jsontext.SkipSpace(s.b, s.i) }

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
		end, _, f := jsontext.ScanString(s.b, s.i)
		if f != jsontext.OK {
			return faultError(end, f)
		}
		s.i = end
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		// A number beyond the range of a double (1e400) is refused: readers
		// would make it an infinity, an error or a different number. One
		// below it (1e-400) is accepted, kept as written, and reads as 0.
		end, f := jsontext.ScanNumber(s.b, s.i)
		if f != jsontext.OK {
			return numberError(s.b, s.i, end, f)
		}
		s.i = end
		return nil
	case c == 't' || c == 'f' || c == 'n':
		return s.literal()
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
			if _, _, err := s.name(); err != nil {
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
// quotes) and its flags.
func (s *scanner) str() (raw []byte, fl jsontext.Flags, err *Error) {
	end, fl, f := jsontext.ScanString(s.b, s.i)
	if f != jsontext.OK {
		return nil, 0, faultError(end, f)
	}
	raw = s.b[s.i+1 : end-1]
	s.i = end
	return raw, fl, nil
}

// name scans a member name at s.i, as str does. A name with a \u escape of
// a lone surrogate is refused: such an escape is no character and decodes
// to U+FFFD, so "a\ud800" and "a\udbff" would be one name. The id is refused
// for the same reason (two ids would collide). String values are kept
// verbatim, lone surrogates included: they identify nothing, and a reader
// decodes them to U+FFFD as encoding/json does.
func (s *scanner) name() (raw []byte, fl jsontext.Flags, err *Error) {
	at := s.i + 1
	if raw, fl, err = s.str(); err == nil && fl&jsontext.LoneSurrogate != 0 {
		err = loneSurrogateError("the property name", raw, at)
	}
	return raw, fl, err
}

// loneSurrogateError is the error for the id or a name (what) whose raw
// contents, at offset at of the item, hold a lone surrogate escape.
func loneSurrogateError(what string, raw []byte, at int) *Error {
	k := max(jsontext.LoneSurrogateAt(raw), 0)
	return badRequest("%s at offset %d has the escape %s of a lone UTF-16 surrogate, which is no character",
		what, at+k, raw[k:min(k+6, len(raw))])
}

// faultError is the error for a fault jsontext found at offset at.
func faultError(at int, f jsontext.Fault) *Error {
	if f == jsontext.Unterminated {
		return badRequest("invalid JSON: unterminated string")
	}
	return badRequest("invalid JSON at offset %d: %v", at, f)
}

// numberError is the error for a fault in the number from start; end is
// where jsontext.ScanNumber stopped.
func numberError(b []byte, start, end int, f jsontext.Fault) *Error {
	if f == jsontext.OutOfRange {
		return badRequest("the number %s at offset %d is outside the range of a double", clip(b[start:end]), start)
	}
	return faultError(end, f)
}

func (s *scanner) literal() *Error {
	end, ok := jsontext.ScanLiteral(s.b, s.i)
	if !ok {
		return s.errExpected("a value")
	}
	s.i = end
	return nil
}

// decodeString decodes the raw contents of a valid JSON string with escapes.
// Unpaired surrogates become U+FFFD, as in encoding/json.
func decodeString(raw []byte) string {
	s, _ := jsontext.Unquote(raw)
	return s
}

// clip returns JSON text short enough for an error message.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
