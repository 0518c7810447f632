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

	// The top-level members kept in the stored document, as runs: a run is
	// members that follow each other with a bare comma between them, kept
	// as one span of the document. A compact document without _ts and
	// _etag is one run. The first runs are in place, the rest in more.
	first  [4]span
	nFirst int
	more   []span
}

// addRun notes a run of members to keep.
func (p *parsedItem) addRun(r span) {
	p.size += r.end - r.start + 1 // the members and the separator after each
	if p.nFirst < len(p.first) {
		p.first[p.nFirst] = r
		p.nFirst++
		return
	}
	p.more = append(p.more, r)
}

// runs calls f with each run in order.
func (p *parsedItem) runs(f func(span)) {
	for _, r := range p.first[:p.nFirst] {
		f(r)
	}
	for _, r := range p.more {
		f(r)
	}
}

type span struct{ start, end int }

// parseItem reads a document once: it checks its size, that it is valid
// JSON and an object nested at most MaxDepth deep, finds its id and ttl, and
// notes the members to keep (all but the system properties _ts and _etag,
// which the store owns). It never panics, whatever the input.
//
// Beyond JSON's grammar it refuses, so that every reader reads an item the
// same way: an object with two members of one name (compared decoded, at
// any depth), a lone surrogate escape in a member name or the id, and a
// number beyond the range of a double.
//
// It is the write path's hot loop: it works on a local index, checks for
// whitespace before skipping it, and decides most member names and short
// strings from one 8-byte word (jsontext.ShortString).
func parseItem(doc []byte) (parsedItem, *Error) {
	var p parsedItem
	if len(doc) > MaxItemSize {
		return p, &Error{StatusCode: statusRequestEntityTooLarge,
			Message: fmt.Sprintf("the item is %d bytes, over the limit of %d", len(doc), MaxItemSize)}
	}
	s := scanner{b: doc}
	b := doc
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		if i >= len(b) {
			return p, badRequest("the item is empty: it must be a JSON object")
		}
		if _, err := s.value(i, 0); err != nil {
			return p, err
		}
		return p, badRequest("the item must be a JSON object")
	}
	i = skipSpace(b, i+1)
	haveID := false
	var names objectNames // of the item's members
	run := span{-1, -1}   // the run of kept members being read
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			i = skipSpace(b, i)
			start := i
			if i >= len(b) || b[i] != '"' {
				return p, s.errExpected(i, "a property name")
			}
			// s.name's commonest case, here to save a call: a short plain
			// name, new by its nameSlot.
			end, w := jsontext.ShortString(b, i)
			var fl jsontext.Flags
			var err *Error
			if slot := wordSlot(w); end >= 0 && names.seen == nil && !names.escaped &&
				s.nNames < maxListedNames && !names.take(slot) {
				s.names[s.nNames] = makeMemberName(i+1, end-i-2, slot, false)
				s.nNames++
			} else if end, fl, w, err = s.name(&names, i, 0); err != nil {
				return p, err
			}
			if i = end; i >= len(b) || b[i] != ':' {
				if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
					return p, s.errExpected(i, "':'")
				}
			}
			i = skipSpace(b, i+1)
			var kind int
			switch {
			case w != 0: // read by ShortString
				kind = memberKindOf(w)
			case fl&jsontext.Escaped != 0:
				kind = memberKindOf(stringWord(decodeString(b[start+1 : end-1])))
			case end-start <= 9:
				key := b[start+1 : end-1]
				kind = memberKindOf(stringWord(unsafe.String(unsafe.SliceData(key), len(key))))
			}
			vstart := i
			keep := true
			switch kind {
			case memberID:
				haveID = true
				if i >= len(b) || b[i] != '"' {
					if i, err = s.value(i, 1); err != nil {
						return p, err
					}
					return p, badRequest("the property 'id' must be a string, not %s", clip(b[vstart:i]))
				}
				end, fl, f := jsontext.ScanString(b, i)
				if f != jsontext.OK {
					return p, faultError(end, f)
				}
				raw := b[i+1 : end-1]
				i = end
				if fl&jsontext.LoneSurrogate != 0 {
					return p, loneSurrogateError("the id", raw, vstart+1)
				}
				// A view of the caller's bytes: buildRecord copies it, and
				// errors clone it (withContext).
				p.id = unsafe.String(unsafe.SliceData(raw), len(raw))
				if fl&jsontext.Escaped != 0 {
					p.id = decodeString(raw)
				}
			case memberTTL:
				if i < len(b) && (b[i] == '-' || (b[i] >= '0' && b[i] <= '9')) {
					// A number beyond a double is beyond a ttl too:
					// parseItemTTL refuses it in the words of Cosmos.
					end, f := jsontext.ScanNumber(b, i)
					if f == jsontext.BadNumber {
						return p, faultError(end, f)
					}
					i = end
					t, ok := plainTTL(b[vstart:end])
					if !ok {
						if t, err = parseItemTTL(b[vstart:end]); err != nil {
							return p, err
						}
					}
					p.ttl = t
					break
				}
				if i, err = s.value(i, 1); err != nil {
					return p, err
				}
				// "ttl": null inherits the container default (as Cosmos DB).
				if raw := b[vstart:i]; raw[0] != 'n' {
					return p, ttlError(string(raw))
				}
			case memberSystem:
				keep = false
				fallthrough
			default:
				if end, _ := jsontext.ShortString(b, i); end >= 0 && b[i] == '"' {
					i = end
				} else if i, err = s.value(i, 1); err != nil {
					return p, err
				}
			}
			if keep {
				if start != run.end+1 || b[run.end] != ',' { // a new run
					if run.start >= 0 {
						p.addRun(run)
					}
					run.start = start
				}
				run.end = i
				if kind == memberTTL {
					p.ttlSize = i - start + 1
				}
			}
			if i = skipSpace(b, i); i < len(b) && b[i] == ',' {
				i++
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return p, s.errExpected(i, "',' or '}'")
		}
	}
	if i = skipSpace(b, i); i != len(b) {
		return p, badRequest("invalid JSON at offset %d: data after the end of the item", i)
	}
	if run.start >= 0 {
		p.addRun(run)
	}
	if !haveID {
		return p, badRequest("the item has no 'id' property")
	}
	// ScanString checked the id is UTF-8, and decoding makes UTF-8.
	if p.id == "" || len(p.id) > MaxIDLength {
		return p, validateItemID(p.id)
	}
	return p, nil
}

// The members of an item parseItem tells apart.
const (
	memberOther  = iota
	memberID     // "id"
	memberTTL    // "ttl"
	memberSystem // "_ts" or "_etag", which the store owns
)

// memberKindOf tells what member a name of up to 7 bytes is, given as
// jsontext.ShortString gives it (stringWord; 0 for a longer one).
func memberKindOf(w uint64) int {
	switch w {
	case 'i' | 'd'<<8:
		return memberID
	case 't' | 't'<<8 | 'l'<<16:
		return memberTTL
	case '_' | 't'<<8 | 's'<<16, '_' | 'e'<<8 | 't'<<16 | 'a'<<24 | 'g'<<32:
		return memberSystem
	}
	return memberOther
}

// stringWord is name as a little-endian word if it has at most 7 bytes, as
// jsontext.ShortString gives a short name; 0 if it is longer or holds a
// zero byte (a decoded "\u0000"), which the word could not tell from its
// end: "id\u0000" is not "id".
func stringWord(name string) uint64 {
	if len(name) > 7 {
		return 0
	}
	var w uint64
	for k := len(name) - 1; k >= 0; k-- {
		if name[k] == 0 {
			return 0
		}
		w = w<<8 | uint64(name[k])
	}
	return w
}

// plainTTL reads the commonest ttl quickly: one to nine digits, not
// starting with 0, so from 1 to 999999999 (within MaxTTL). ok is false for
// any other number text, which parseItemTTL then reads.
func plainTTL(num []byte) (TTL, bool) {
	if len(num) == 0 || len(num) > 9 || num[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return TTL(n), true
}

// skipSpace is jsontext.SkipSpace, after a check that inlines: most items
// have no whitespace between tokens.
func skipSpace(b []byte, i int) int {
	if i < len(b) && b[i] > ' ' {
		return i
	}
	return jsontext.SkipSpace(b, i)
}

// scanner is a single-pass JSON validator over a byte slice: its methods
// take the index to read at and return the index after what they read.
type scanner struct {
	b []byte

	// maxDepth is the deepest nesting of an object or array read so far.
	maxDepth int

	// The names read so far of the members of the objects being read,
	// innermost object last (objectNames.base), nNames of them: the first
	// in place (most items), the rest in moreNames.
	nNames    int
	names     [64]memberName
	moreNames []memberName
}

func (s *scanner) nameAt(k int) memberName {
	if k < len(s.names) {
		return s.names[k]
	}
	return s.moreNames[k-len(s.names)]
}

func (s *scanner) pushName(m memberName) {
	if k := s.nNames; k < len(s.names) {
		s.names[k] = m
	} else if k -= len(s.names); k < len(s.moreNames) {
		s.moreNames[k] = m
	} else {
		s.moreNames = append(s.moreNames, m)
	}
	s.nNames++
}

// memberName is where the raw contents of a member name are in the item,
// and its nameSlot.
type memberName struct {
	off uint32
	n   uint32 // length << 8 | nameSlot << 1 | 1 if the name has escapes
}

func makeMemberName(off, length int, slot uint, esc bool) memberName {
	n := uint32(length)<<8 | uint32(slot)<<1
	if esc {
		n |= 1
	}
	return memberName{uint32(off), n}
}

func (m memberName) raw(b []byte) []byte { return b[m.off : m.off+m.n>>8] }
func (m memberName) escaped() bool       { return m.n&1 != 0 }
func (m memberName) slot() uint          { return uint(m.n>>1) & 127 }

// objectNames is what the scanner knows of the member names of one object,
// to refuse a name that comes twice. Names are compared decoded ("a" and
// "\u0061" are one name). Up to maxListedNames names are listed in
// scanner.names and compared in place, skipping most comparisons with a
// two-word filter; beyond, the object's names go in a map.
type objectNames struct {
	base    int       // the object's first name in scanner.names
	mask    [2]uint64 // a bit for the nameSlot of every name listed, while no name has escapes
	escaped bool      // a listed name has escapes: compare with every one
	seen    map[string]struct{}
}

const maxListedNames = 32

// nameSlot is a 7-bit digest of a name without escapes: names in
// different slots differ, and a new name whose slot is taken is compared
// only with the listed names of that slot. A name of up to 7 bytes is
// digested whole (wordSlot of its bytes, as jsontext.ShortString gives
// them); a longer one from its length and its first, middle and last bytes.
func nameSlot(raw []byte) uint {
	n := len(raw)
	if n <= 7 {
		var w uint64
		for k := n - 1; k >= 0; k-- {
			w = w<<8 | uint64(raw[k])
		}
		return wordSlot(w)
	}
	h := uint32(n)<<24 ^ uint32(raw[0])<<16 ^ uint32(raw[n/2])<<8 ^ uint32(raw[n-1])
	return uint(h * 0x9e3779b1 >> 25)
}

// wordSlot is the nameSlot of a name of up to 7 bytes, given as a
// little-endian word (zero above them: a plain name has no zero byte, so the
// word tells its length).
func wordSlot(w uint64) uint { return uint((w ^ w>>29) * 0x9e3779b97f4a7c15 >> 57) }

// take reports whether a listed name of o is in slot, and notes one there.
func (o *objectNames) take(slot uint) (taken bool) {
	w, bit := &o.mask[slot>>6], uint64(1)<<(slot&63)
	taken = *w&bit != 0
	*w |= bit
	return taken
}

// member notes the name whose raw contents are at b[start:end] as a member
// of the object o (at offset at; 0: the item itself), and refuses it if o
// already has a member of that name.
func (s *scanner) member(o *objectNames, start, end int, fl jsontext.Flags, at int) *Error {
	raw := s.b[start:end]
	esc := fl&jsontext.Escaped != 0
	if o.seen != nil {
		return s.memberSeen(o, raw, esc, at)
	}
	var slot uint
	if esc {
		o.escaped = true
	} else {
		slot = nameSlot(raw)
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
	if s.nNames-o.base == maxListedNames {
		// Too many to compare each new one with all: a map from here on.
		o.seen = make(map[string]struct{}, 2*maxListedNames)
		for k := o.base; k < s.nNames; k++ {
			m := s.nameAt(k)
			o.seen[nameKey(m.raw(s.b), m.escaped())] = struct{}{}
		}
		s.nNames = o.base
		return s.memberSeen(o, raw, esc, at)
	}
	s.pushName(makeMemberName(start, end-start, slot, esc))
	return nil
}

// memberSeen is member for an object with many names.
func (s *scanner) memberSeen(o *objectNames, raw []byte, esc bool, at int) *Error {
	k := nameKey(raw, esc)
	if _, dup := o.seen[k]; dup {
		return duplicateError(raw, esc, at)
	}
	o.seen[k] = struct{}{}
	return nil
}

// nameKey is a name decoded: a view of the item's bytes if it has no
// escapes (the item does not change while it is parsed).
func nameKey(raw []byte, esc bool) string {
	if esc {
		return decodeString(raw)
	}
	return unsafe.String(unsafe.SliceData(raw), len(raw))
}

func duplicateError(raw []byte, esc bool, at int) *Error {
	name := string(raw)
	if esc {
		name = decodeString(raw)
	}
	if len(name) > 40 {
		name = name[:40] + "..."
	}
	if at == 0 {
		return badRequest("the item has the property '%s' twice", name)
	}
	return badRequest("the item has the property '%s' twice in the object at offset %d", name, at)
}

func (s *scanner) errExpected(i int, what string) *Error {
	if i >= len(s.b) {
		return badRequest("invalid JSON: unexpected end of input, expected %s", what)
	}
	return badRequest("invalid JSON at offset %d: expected %s, found %q", i, what, s.b[i])
}

// value skips the JSON value at b[i] and returns the index after it; depth
// is the nesting depth of its container.
func (s *scanner) value(i, depth int) (int, *Error) {
	b := s.b
	if i >= len(b) {
		return i, s.errExpected(i, "a value")
	}
	switch c := b[i]; {
	case c == '"':
		if end, _ := jsontext.ShortString(b, i); end >= 0 {
			return end, nil
		}
		end, _, f := jsontext.ScanString(b, i)
		if f != jsontext.OK {
			return i, faultError(end, f)
		}
		return end, nil
	case c == '-' || (c >= '0' && c <= '9'):
		// A number beyond the range of a double (1e400) is refused: readers
		// would make it an infinity, an error or a different number. One
		// below it (1e-400) is accepted, kept as written, and reads as 0.
		end, f := jsontext.ScanNumber(b, i)
		if f != jsontext.OK {
			return i, numberError(b, i, end, f)
		}
		return end, nil
	case c == '{' || c == '[':
		if depth+1 > MaxDepth {
			return i, badRequest("the item is nested deeper than %d levels", MaxDepth)
		}
		return s.composite(i, depth+1)
	case c == 't' || c == 'f' || c == 'n':
		end, ok := jsontext.ScanLiteral(b, i)
		if !ok {
			return i, s.errExpected(i, "a value")
		}
		return end, nil
	default:
		return i, s.errExpected(i, "a value")
	}
}

// composite skips the object or array whose opening bracket is at b[i] and
// returns the index after it.
func (s *scanner) composite(i, depth int) (int, *Error) {
	b := s.b
	s.maxDepth = max(s.maxDepth, depth)
	start := i
	object := b[i] == '{'
	closing := byte(']')
	var names objectNames
	if object {
		closing = '}'
		names.base = s.nNames
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closing {
		return i + 1, nil
	}
	var err *Error
	for {
		i = skipSpace(b, i)
		if object {
			if i >= len(b) || b[i] != '"' {
				return i, s.errExpected(i, "a property name")
			}
			if i, _, _, err = s.name(&names, i, start); err != nil {
				return i, err
			}
			if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
				return i, s.errExpected(i, "':'")
			}
			i = skipSpace(b, i+1)
		}
		if i, err = s.value(i, depth); err != nil {
			return i, err
		}
		i = skipSpace(b, i)
		switch {
		case i < len(b) && b[i] == ',':
			i++
		case i < len(b) && b[i] == closing:
			s.nNames = names.base // the object's names
			return i + 1, nil
		default:
			return i, s.errExpected(i, fmt.Sprintf("',' or '%c'", closing))
		}
	}
}

// name scans the name of a member of the object o (at offset at; 0: the
// item itself) whose opening quote is at b[i], returns the index after it
// and its flags, and refuses a name o already has. A name with a \u escape
// of a lone surrogate is refused: such an escape is no character and
// decodes to U+FFFD, so "a\ud800" and "a\udbff" would be one name. The id is
// refused for the same reason (two ids would collide). String values are
// kept verbatim, lone surrogates included: they identify nothing, and a
// reader decodes them to U+FFFD as encoding/json does.
func (s *scanner) name(o *objectNames, i, at int) (end int, fl jsontext.Flags, w uint64, err *Error) {
	small := o.seen == nil && !o.escaped && s.nNames < len(s.names) && s.nNames-o.base < maxListedNames
	// The commonest case: a short plain name in a small object, new by its
	// nameSlot, read from one word.
	if end, w = jsontext.ShortString(s.b, i); end >= 0 && small {
		if slot := wordSlot(w); !o.take(slot) {
			s.names[s.nNames] = makeMemberName(i+1, end-i-2, slot, false)
			s.nNames++
			return end, 0, w, nil
		}
		return end, 0, w, s.member(o, i+1, end-1, 0, at)
	}
	end, fl, f := jsontext.ScanString(s.b, i)
	if f != jsontext.OK {
		return i, 0, 0, faultError(end, f)
	}
	start := i + 1
	raw := s.b[start : end-1]
	// A plain name in a small object, new by its nameSlot.
	if fl == 0 && small {
		if slot := nameSlot(raw); !o.take(slot) {
			s.names[s.nNames] = makeMemberName(start, len(raw), slot, false)
			s.nNames++
			return end, 0, 0, nil
		}
	}
	if fl&jsontext.LoneSurrogate != 0 {
		return i, 0, 0, loneSurrogateError("the property name", raw, start)
	}
	return end, fl, 0, s.member(o, start, end-1, fl, at)
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

// decodeString decodes the raw contents of a valid JSON string with escapes.
// Unpaired surrogates become U+FFFD, as in encoding/json.
func decodeString(raw []byte) string {
	s, _ := jsontext.Unquote(raw)
	return s
}
