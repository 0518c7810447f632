package lethe

// The item parser as it was before it was rewritten for speed (issue 28),
// kept as the oracle of FuzzParseItemOracle: the parser must accept,
// refuse and report exactly as this one did.

import (
	"encoding/json"
	"fmt"
	"testing"
	"unsafe"

	"github.com/lethedb/lethe/internal/jsontext"
)

// refParseItem reads a document once: it checks its size, that it is valid
// JSON and an object nested at most MaxDepth deep, finds its id and ttl, and
// notes the members to keep (all but the system properties _ts and _etag,
// which the store owns). It never panics, whatever the input.
//
// Beyond JSON's grammar it refuses, so that every reader reads an item the
// same way: an object with two members of one name (compared decoded, at
// any depth), a lone surrogate escape in a member name or the id, and a
// number beyond the range of a double.
func refParseItem(doc []byte) (parsedItem, *Error) {
	var p parsedItem
	if len(doc) > MaxItemSize {
		return p, &Error{StatusCode: statusRequestEntityTooLarge,
			Message: fmt.Sprintf("the item is %d bytes, over the limit of %d", len(doc), MaxItemSize)}
	}
	s := refScanner{b: doc}
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
	var names refObjectNames // of the item's members
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
			key, fl, err := s.name(&names, 0)
			if err != nil {
				return p, err
			}
			s.skipSpace()
			if s.peek() != ':' {
				return p, s.errExpected("':'")
			}
			s.i++
			s.skipSpace()
			// A view of the caller's bytes, compared and forgotten.
			name := unsafe.String(unsafe.SliceData(key), len(key))
			if fl&jsontext.Escaped != 0 {
				name = decodeString(key)
			}
			vstart := s.i
			switch name {
			case "id":
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
				// "ttl": null inherits the container default (as Cosmos DB).
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
				refAddMember(&p, span{start, end})
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

// refScanner is a single-pass JSON validator over a byte slice.
type refScanner struct {
	b []byte
	i int

	// maxDepth is the deepest nesting of an object or array read so far.
	maxDepth int

	// The names read so far of the members of the objects being read,
	// innermost object last (refObjectNames.base), nNames of them: the first
	// in place (most items), the rest in moreNames.
	nNames    int
	names     [64]refMemberName
	moreNames []refMemberName
}

func (s *refScanner) nameAt(k int) refMemberName {
	if k < len(s.names) {
		return s.names[k]
	}
	return s.moreNames[k-len(s.names)]
}

func (s *refScanner) pushName(m refMemberName) {
	if k := s.nNames; k < len(s.names) {
		s.names[k] = m
	} else if k -= len(s.names); k < len(s.moreNames) {
		s.moreNames[k] = m
	} else {
		s.moreNames = append(s.moreNames, m)
	}
	s.nNames++
}

// refMemberName is where the raw contents of a member name are in the item,
// and its refNameSlot.
type refMemberName struct {
	off uint32
	n   uint32 // length << 8 | refNameSlot << 1 | 1 if the name has escapes
}

func refMakeMemberName(off, length int, slot uint, esc bool) refMemberName {
	n := uint32(length)<<8 | uint32(slot)<<1
	if esc {
		n |= 1
	}
	return refMemberName{uint32(off), n}
}

func (m refMemberName) raw(b []byte) []byte { return b[m.off : m.off+m.n>>8] }
func (m refMemberName) escaped() bool       { return m.n&1 != 0 }
func (m refMemberName) slot() uint          { return uint(m.n>>1) & 127 }

// refObjectNames is what the refScanner knows of the member names of one object,
// to refuse a name that comes twice. Names are compared decoded ("a" and
// "\u0061" are one name). Up to refMaxListedNames names are listed in
// refScanner.names and compared in place, skipping most comparisons with a
// two-word filter; beyond, the object's names go in a map.
type refObjectNames struct {
	base    int       // the object's first name in refScanner.names
	mask    [2]uint64 // a bit for the refNameSlot of every name listed, while no name has escapes
	escaped bool      // a listed name has escapes: compare with every one
	seen    map[string]struct{}
}

const refMaxListedNames = 32

// refNameSlot is a 7-bit digest of a name without escapes, from its length
// and its first, middle and last bytes: names in different slots differ,
// and a new name whose slot is taken is compared only with the listed names
// of that slot.
func refNameSlot(raw []byte) uint {
	h := uint32(len(raw))
	if n := len(raw); n > 0 {
		h = h<<24 ^ uint32(raw[0])<<16 ^ uint32(raw[n/2])<<8 ^ uint32(raw[n-1])
	}
	return uint(h * 0x9e3779b1 >> 25)
}

// take reports whether a listed name of o is in slot, and notes one there.
func (o *refObjectNames) take(slot uint) (taken bool) {
	w, bit := &o.mask[slot>>6], uint64(1)<<(slot&63)
	taken = *w&bit != 0
	*w |= bit
	return taken
}

// member notes the name whose raw contents are at b[start:end] as a member
// of the object o (at offset at; 0: the item itself), and refuses it if o
// already has a member of that name.
func (s *refScanner) member(o *refObjectNames, start, end int, fl jsontext.Flags, at int) *Error {
	raw := s.b[start:end]
	esc := fl&jsontext.Escaped != 0
	if o.seen != nil {
		return s.memberSeen(o, raw, esc, at)
	}
	var slot uint
	if esc {
		o.escaped = true
	} else {
		slot = refNameSlot(raw)
	}
	switch {
	case o.escaped:
		for k := o.base; k < s.nNames; k++ {
			m := s.nameAt(k)
			other := m.raw(s.b)
			if (!m.escaped() && !esc && string(other) == string(raw)) ||
				((m.escaped() || esc) && jsontext.EqualDecoded(other, raw)) {
				return duplicateError(raw, esc, at)
			}
		}
	case o.take(slot):
		// Every listed name is plain: only those of raw's slot can be it.
		for k := o.base; k < s.nNames; k++ {
			if m := s.nameAt(k); m.slot() == slot && string(m.raw(s.b)) == string(raw) {
				return duplicateError(raw, esc, at)
			}
		}
	}
	if s.nNames-o.base == refMaxListedNames {
		// Too many to compare each new one with all: a map from here on.
		o.seen = make(map[string]struct{}, 2*refMaxListedNames)
		for k := o.base; k < s.nNames; k++ {
			m := s.nameAt(k)
			o.seen[refNameKey(m.raw(s.b), m.escaped())] = struct{}{}
		}
		s.nNames = o.base
		return s.memberSeen(o, raw, esc, at)
	}
	s.pushName(refMakeMemberName(start, end-start, slot, esc))
	return nil
}

// memberSeen is member for an object with many names.
func (s *refScanner) memberSeen(o *refObjectNames, raw []byte, esc bool, at int) *Error {
	k := refNameKey(raw, esc)
	if _, dup := o.seen[k]; dup {
		return duplicateError(raw, esc, at)
	}
	o.seen[k] = struct{}{}
	return nil
}

// refNameKey is a name decoded: a view of the item's bytes if it has no
// escapes (the item does not change while it is parsed).
func refNameKey(raw []byte, esc bool) string {
	if esc {
		return decodeString(raw)
	}
	return unsafe.String(unsafe.SliceData(raw), len(raw))
}

func (s *refScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *refScanner) skipSpace() { s.i = jsontext.SkipSpace(s.b, s.i) }

func (s *refScanner) errExpected(what string) *Error {
	if s.i >= len(s.b) {
		return badRequest("invalid JSON: unexpected end of input, expected %s", what)
	}
	return badRequest("invalid JSON at offset %d: expected %s, found %q", s.i, what, s.b[s.i])
}

// value skips one JSON value; depth is the nesting depth of its container.
func (s *refScanner) value(depth int) *Error {
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
func (s *refScanner) composite(depth int) *Error {
	s.maxDepth = max(s.maxDepth, depth)
	start := s.i
	object := s.b[s.i] == '{'
	closing := byte(']')
	var names refObjectNames
	if object {
		closing = '}'
		names.base = s.nNames
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
			if _, _, err := s.name(&names, start); err != nil {
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
			s.nNames = names.base // the object's names
			return nil
		default:
			return s.errExpected(fmt.Sprintf("',' or '%c'", closing))
		}
	}
}

// str scans a string at s.i and returns its raw contents (between the
// quotes) and its flags.
func (s *refScanner) str() (raw []byte, fl jsontext.Flags, err *Error) {
	end, fl, f := jsontext.ScanString(s.b, s.i)
	if f != jsontext.OK {
		return nil, 0, faultError(end, f)
	}
	raw = s.b[s.i+1 : end-1]
	s.i = end
	return raw, fl, nil
}

// name scans the name of a member of the object o (at offset at; 0: the
// item itself) at s.i, as str does, and refuses one o already has. A name with a \u escape of
// a lone surrogate is refused: such an escape is no character and decodes
// to U+FFFD, so "a\ud800" and "a\udbff" would be one name. The id is refused
// for the same reason (two ids would collide). String values are kept
// verbatim, lone surrogates included: they identify nothing, and a reader
// decodes them to U+FFFD as encoding/json does.
func (s *refScanner) name(o *refObjectNames, at int) (raw []byte, fl jsontext.Flags, err *Error) {
	start := s.i + 1
	end, fl, f := jsontext.ScanString(s.b, s.i)
	if f != jsontext.OK {
		return nil, 0, faultError(end, f)
	}
	s.i = end
	raw = s.b[start : end-1]
	// The common case: a plain name in a small object, new by its refNameSlot.
	if fl == 0 && o.seen == nil && !o.escaped && s.nNames < len(s.names) && s.nNames-o.base < refMaxListedNames {
		if slot := refNameSlot(raw); !o.take(slot) {
			s.names[s.nNames] = refMakeMemberName(start, len(raw), slot, false)
			s.nNames++
			return raw, 0, nil
		}
	}
	if fl&jsontext.LoneSurrogate != 0 {
		return nil, 0, loneSurrogateError("the property name", raw, start)
	}
	return raw, fl, s.member(o, start, start+len(raw), fl, at)
}

func (s *refScanner) literal() *Error {
	end, ok := jsontext.ScanLiteral(s.b, s.i)
	if !ok {
		return s.errExpected("a value")
	}
	s.i = end
	return nil
}

// refAddMember notes a member as the old parser did: each member its own
// run.
func refAddMember(p *parsedItem, m span) {
	if p.nFirst < len(p.first) {
		p.first[p.nFirst] = m
		p.nFirst++
		return
	}
	p.more = append(p.more, m)
}

// FuzzParseItemOracle checks parseItem against refParseItem, the parser it
// replaced: the same documents accepted, the same errors (status and
// message) for the others, the same id, ttl and sizes, the same top-level
// members found (as a partition key path's), and the same stored record;
// and every document accepted is valid JSON to encoding/json.
func FuzzParseItemOracle(f *testing.F) {
	for _, seed := range append(parseItemSeeds,
		"{ \"id\" : \"a\" ,\n\"_etag\":\"x\", \"b\" :[ true , false,null ] }", `{"id":"a","ttl":-1,"_ts":5,"_etag":"e"}`,
		`{"id":"a","ttl":"5"}`, `{"id":"a","ttl":1e1}`, `{"id":"a","ttl":00}`, `{"id":"a","ttl":-0}`, `{"id":"a","ttl":2147483648}`,
		`{"id":"é\u00e9","x":"\u00e9é","\u0078y":1,"xy":2}`, "{\"id\":\"a\",\"x\":\"\x01\"}", "{\"id\":\"a\xff\"}",
		`{"id":"a","x":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"r":18,"s":19,"t":20,"u":21,"v":22,"w":23,"x":24,"y":25,"z":26,"A":1,"B":2,"C":3,"D":4,"E":5,"F":6,"G":7,"a":0}}`,
		`{"id":"a","n":-`, `{"id":"a","n":01}`, `{"id":"a","n":1.}`, `{"id":"a","n":.5}`, `{"id":"a","t":tru}`, `{"id":"a"} x`,
		`{"id":"a","s":"abc`, `{"id":"a","s":"\x"}`, `{"id":"a","s":"\u12"}`, `{"id":""}`, `{"a":1}`, `{"id":"a" "b":1}`,
	) {
		f.Add([]byte(seed))
	}
	// W1's shape (perOpItems).
	f.Add([]byte(`{"id":"user-12345678-1","name":"ada lovelace","email":"ada.lovelace1@example.com","status":"active","age":19,"city":"Berlin","country":"DE","score":1.01,"tags":["cache","index"],"bio":"storage storage storage storage storage storage storage storage storage storage storage storag","ttl":3600}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, err := parseItem(doc)
		rp, rerr := refParseItem(doc)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("%q: error %v; the old parser's %v", doc, err, rerr)
		}
		if err != nil {
			if err.StatusCode != rerr.StatusCode || err.Message != rerr.Message {
				t.Fatalf("%q: error %d %q; the old parser's %d %q", doc, err.StatusCode, err.Message, rerr.StatusCode, rerr.Message)
			}
			return
		}
		if !json.Valid(doc) {
			t.Fatalf("%q accepted, not JSON to encoding/json", doc)
		}
		if p.id != rp.id || p.ttl != rp.ttl || p.ttlSize != rp.ttlSize || p.size != rp.size {
			t.Fatalf("%q: id %q ttl %v ttlSize %d size %d; the old parser's %q %v %d %d",
				doc, p.id, p.ttl, p.ttlSize, p.size, rp.id, rp.ttl, rp.ttlSize, rp.size)
		}
		for _, name := range []string{"id", "ttl", "_ts", "a", "b", "x", "tenant"} {
			if at, ref := p.member(doc, name), rp.member(doc, name); at != ref {
				t.Fatalf("%q: member %q at %d; the old parser's at %d", doc, name, at, ref)
			}
		}
		rec := buildRecord(doc, &p, "pk", 1_700_000_000_000_000_000, 7, 1)
		if ref := buildRecord(doc, &rp, "pk", 1_700_000_000_000_000_000, 7, 1); rec != ref {
			t.Fatalf("%q: record %q; the old parser's %q", doc, rec, ref)
		}
	})
}
