package lethe

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/lethedb/lethe/internal/jsontext"
)

// Partition keys, as in Azure Cosmos DB.
//
// A partitioned container names, in its PartitionKeyDefinition, one path
// (or two or three: a hierarchical key) into its items' documents. The
// values at those paths form the item's partition key value, and an item is
// identified by that value and its id: the same id may exist once in every
// logical partition (every distinct value). Every item call takes the
// partition key value first, as azcosmos's do, and a write whose document
// holds another value fails with 400 and Cosmos DB's message, changing
// nothing. A path that leads nowhere in a document, or to an object or an
// array, gives the "none" value (NonePartitionKey), which is distinct from
// JSON null (NullPartitionKey): Cosmos DB sends it as [{}] where null is
// [null].
//
// A container without paths is not partitioned: its items are identified by
// id alone, and every call passes NewPartitionKey(), the empty value.

// MaxPartitionKeyLevels is the most paths a partition key definition has,
// and the most components a PartitionKey value has (a hierarchical key).
const MaxPartitionKeyLevels = 3

// MaxPartitionKeyLength is the longest partition key value, in bytes of its
// strings and numbers together (Cosmos DB's limit is 2 KB).
const MaxPartitionKeyLength = 2048

// PartitionKey is a partition key value: empty, or one component per path
// of the container's definition (string, number, bool, null or none). The
// zero value is the empty key. PartitionKey values are comparable: two are
// == when they name the same logical partition.
//
// Building a key never fails; a key that cannot be valid (more than
// MaxPartitionKeyLevels components, a NaN or infinite number, a string that
// is not UTF-8 or too long) makes every call that uses it fail with
// ErrBadRequest, naming what is wrong.
type PartitionKey struct {
	enc string // the components, each self-delimiting: see the tags below
	n   uint8  // the number of components
	bad string // why the key is invalid; "" when it is valid
	// scope narrows the partitions a query reads to a feed range
	// (feedrange.go); nil in every key a caller makes.
	scope *epkScope
}

// The encoding of one component: a tag byte, then for a number the 8 bytes
// of its float64 (big endian, -0 as 0), for a string its length as a
// uvarint and its bytes. Equal values have equal encodings, and a key's
// encoding starts with the encoding of each of its prefixes.
const (
	pkNone   = 'u'
	pkNull   = 'n'
	pkFalse  = 'f'
	pkTrue   = 't'
	pkNumber = 'd'
	pkString = 's'
)

// NullPartitionKey is the partition key value JSON null.
var NullPartitionKey = PartitionKey{enc: string(rune(pkNull)), n: 1}

// NonePartitionKey is the value of a document that has nothing at its
// container's partition key path, or an object or array there: Cosmos DB's
// "none" or undefined (PartitionKey.None in its .NET SDK, [{}] on the wire).
// It is not JSON null.
var NonePartitionKey = PartitionKey{enc: string(rune(pkNone)), n: 1}

// NewPartitionKey returns the empty partition key: for the items of a
// container without partition key paths, and, in a query, every partition.
func NewPartitionKey() PartitionKey { return PartitionKey{} }

// NewPartitionKeyString returns the partition key value value.
func NewPartitionKeyString(value string) PartitionKey {
	return PartitionKey{}.AppendString(value)
}

// NewPartitionKeyNumber returns the partition key value value.
func NewPartitionKeyNumber(value float64) PartitionKey {
	return PartitionKey{}.AppendNumber(value)
}

// NewPartitionKeyBool returns the partition key value value.
func NewPartitionKeyBool(value bool) PartitionKey {
	return PartitionKey{}.AppendBool(value)
}

// AppendString returns pk with one more component, the string value: the
// next level of a hierarchical key.
func (pk PartitionKey) AppendString(value string) PartitionKey {
	if !utf8.ValidString(value) {
		return pk.invalid("a string component is not valid UTF-8")
	}
	var n [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(n[:], uint64(len(value)))
	var b strings.Builder // one allocation
	b.Grow(len(pk.enc) + 1 + k + len(value))
	b.WriteString(pk.enc)
	b.WriteByte(pkString)
	b.Write(n[:k])
	b.WriteString(value)
	return pk.with(b.String())
}

// AppendNumber returns pk with one more component, the number value.
func (pk PartitionKey) AppendNumber(value float64) PartitionKey {
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return pk.invalid("a number component is not finite")
	}
	return pk.with(pk.enc + encodeNumber(value))
}

// AppendBool returns pk with one more component, the boolean value.
func (pk PartitionKey) AppendBool(value bool) PartitionKey {
	if value {
		return pk.with(pk.enc + string(rune(pkTrue)))
	}
	return pk.with(pk.enc + string(rune(pkFalse)))
}

// AppendNull returns pk with one more component, JSON null.
func (pk PartitionKey) AppendNull() PartitionKey {
	return pk.with(pk.enc + string(rune(pkNull)))
}

// AppendNone returns pk with one more component, none: the document has
// nothing at that path.
func (pk PartitionKey) AppendNone() PartitionKey {
	return pk.with(pk.enc + string(rune(pkNone)))
}

func (pk PartitionKey) with(enc string) PartitionKey {
	if pk.bad != "" {
		return pk
	}
	if pk.n >= MaxPartitionKeyLevels {
		return pk.invalid("more than " + strconv.Itoa(MaxPartitionKeyLevels) + " components")
	}
	if pkValueBytes(enc) > MaxPartitionKeyLength {
		return pk.invalid("over " + strconv.Itoa(MaxPartitionKeyLength) + " bytes")
	}
	return PartitionKey{enc: enc, n: pk.n + 1}
}

// pkValueBytes returns the bytes of the strings and numbers of an encoded
// key, which MaxPartitionKeyLength bounds.
func pkValueBytes(enc string) int {
	total := 0
	for enc != "" {
		n := pkComponentLen(enc)
		switch enc[0] {
		case pkNumber:
			total += 8
		case pkString:
			_, k := binary.Uvarint([]byte(enc[1:min(len(enc), 1+binary.MaxVarintLen64)]))
			total += n - 1 - k
		}
		enc = enc[n:]
	}
	return total
}

func (pk PartitionKey) invalid(why string) PartitionKey {
	if pk.bad != "" {
		return pk
	}
	return PartitionKey{enc: pk.enc, n: pk.n, bad: why}
}

func encodeNumber(v float64) string {
	if v == 0 {
		v = 0 // -0 is 0
	}
	var b [9]byte
	b[0] = pkNumber
	binary.BigEndian.PutUint64(b[1:], math.Float64bits(v))
	return string(b[:])
}

// String returns the key as Cosmos DB's REST API writes it in the
// x-ms-documentdb-partitionkey header: a JSON array of the components, none
// written {}. The empty key is [].
func (pk PartitionKey) String() string {
	var buf [64]byte // most keys fit: one allocation, the string
	b := append(buf[:0], '[')
	for i, enc := 0, pk.enc; enc != ""; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		n := pkComponentLen(enc)
		b = appendPKComponent(b, enc[:n])
		enc = enc[n:]
	}
	return string(append(b, ']'))
}

// appendPKComponent appends the JSON value of one encoded component, none
// written {}.
func appendPKComponent(b []byte, c string) []byte {
	switch c[0] {
	case pkNone:
		b = append(b, "{}"...)
	case pkNull:
		b = append(b, "null"...)
	case pkFalse:
		b = append(b, "false"...)
	case pkTrue:
		b = append(b, "true"...)
	case pkNumber:
		f := math.Float64frombits(binary.BigEndian.Uint64([]byte(c[1:])))
		if math.IsNaN(f) || math.IsInf(f, 0) { // invalid, refused where used
			b = strconv.AppendFloat(b, f, 'g', -1, 64)
		} else {
			b = jsontext.AppendNumber(b, f)
		}
	case pkString:
		_, k := binary.Uvarint([]byte(c[1:min(len(c), 1+binary.MaxVarintLen64)]))
		b = jsontext.AppendString(b, c[1+k:])
	}
	return b
}

// pkComponentLen returns the length of the encoded component enc starts
// with.
func pkComponentLen(enc string) int {
	switch enc[0] {
	case pkNumber:
		return 9
	case pkString:
		l, k := binary.Uvarint([]byte(enc[1:min(len(enc), 1+binary.MaxVarintLen64)]))
		return 1 + k + int(l)
	}
	return 1
}

// PartitionKeyKind is how a container hashes its partition key values.
type PartitionKeyKind string

// The partition key kinds.
const (
	// PartitionKeyKindHash: one path.
	PartitionKeyKindHash PartitionKeyKind = "Hash"
	// PartitionKeyKindMultiHash: a hierarchical key of up to
	// MaxPartitionKeyLevels paths.
	PartitionKeyKindMultiHash PartitionKeyKind = "MultiHash"
)

// PartitionKeyDefinition says where a container's items keep their
// partition key value. It is fixed when the container is created.
type PartitionKeyDefinition struct {
	// Paths are JSON paths into the items, such as "/tenantId" or
	// "/address/zip": each starts with "/", its segments are names (a
	// segment in double quotes may hold any character, "/" included). One
	// path is a plain key; two or three a hierarchical one. None: the
	// container is not partitioned.
	Paths []string
	// Kind is PartitionKeyKindHash for one path, PartitionKeyKindMultiHash
	// for several; it is inferred when empty.
	Kind PartitionKeyKind
	// Version is the hash version, 1 or 2; 0 means 2. It is recorded and
	// returned; lethe's hashing is its own.
	Version int
}

// pkPaths is a container's partition key definition, parsed for use.
type pkPaths struct {
	segs    [][]string // per path, its segments; empty: not partitioned
	byID    bool       // the definition is the one path "/id"
	version int        // the hash version, 1 or 2 (feedrange.go)
	multi   bool       // the key is hashed as hierarchical: MultiHash, or several paths (feedrange.go)
}

// systemProperties are the top-level properties the store owns, which no
// partition key path may name.
var systemProperties = map[string]bool{"_ts": true, "_etag": true, "_rid": true, "_self": true, "_attachments": true}

// normalizePKDef validates a definition and returns it with its kind and
// version filled in, and its parsed paths.
func normalizePKDef(d PartitionKeyDefinition) (PartitionKeyDefinition, pkPaths, *Error) {
	var pp pkPaths
	if len(d.Paths) == 0 {
		if d.Kind != "" {
			return d, pp, badRequest("the partition key definition has the kind %q but no paths", d.Kind)
		}
		d.Paths = nil
		d.Version = 0
		return d, pp, nil
	}
	if len(d.Paths) > MaxPartitionKeyLevels {
		return d, pp, badRequest("the partition key definition has %d paths, over the limit of %d", len(d.Paths), MaxPartitionKeyLevels)
	}
	switch d.Kind {
	case "":
		d.Kind = PartitionKeyKindHash
		if len(d.Paths) > 1 {
			d.Kind = PartitionKeyKindMultiHash
		}
	case PartitionKeyKindHash:
		if len(d.Paths) > 1 {
			return d, pp, badRequest("the partition key kind Hash takes one path, not %d: use MultiHash for a hierarchical key", len(d.Paths))
		}
	case PartitionKeyKindMultiHash:
	default:
		return d, pp, badRequest("unknown partition key kind %q: use Hash or MultiHash", clip(string(d.Kind)))
	}
	switch d.Version {
	case 0:
		d.Version = 2
	case 1, 2:
	default:
		return d, pp, badRequest("unknown partition key version %d: use 1 or 2", d.Version)
	}
	d.Paths = append([]string(nil), d.Paths...)
	seen := make(map[string]bool, len(d.Paths))
	for _, path := range d.Paths {
		segs, err := parsePKPath(path)
		if err != nil {
			return d, pp, err
		}
		canon := strings.Join(segs, "\x00")
		if seen[canon] {
			return d, pp, badRequest("the partition key path %q is given twice", clip(path))
		}
		seen[canon] = true
		pp.segs = append(pp.segs, segs)
	}
	pp.byID = len(pp.segs) == 1 && len(pp.segs[0]) == 1 && pp.segs[0][0] == "id"
	pp.version = d.Version
	pp.multi = d.Kind == PartitionKeyKindMultiHash || len(d.Paths) > 1 // as EffectivePartitionKey hashes it
	return d, pp, nil
}

// parsePKPath splits a partition key path into its segments.
func parsePKPath(path string) ([]string, *Error) {
	bad := func(why string) *Error {
		return badRequest("the partition key path %q is invalid: %s", clip(path), why)
	}
	if !strings.HasPrefix(path, "/") {
		// The service's words, which clients look for.
		return nil, badRequest("The partition key component definition path '%s' could not be accepted, failed near position '0'. Partition key paths must contain only valid characters and not contain a trailing slash or wildcard character: a path starts with '/'", clip(path))
	}
	if !utf8.ValidString(path) {
		return nil, bad("it is not valid UTF-8")
	}
	var segs []string
	for rest := path; rest != ""; {
		rest = rest[1:] // the '/'
		var seg string
		if strings.HasPrefix(rest, `"`) {
			end, _, f := jsontext.ScanString([]byte(rest), 0)
			if f != jsontext.OK {
				return nil, bad("a quoted segment is not a valid JSON string")
			}
			s, ok := jsontext.Unquote([]byte(rest[1 : end-1]))
			if !ok {
				return nil, bad("a quoted segment is not a valid JSON string")
			}
			seg, rest = s, rest[end:]
			if rest != "" && rest[0] != '/' {
				return nil, bad("a quoted segment must be followed by '/' or the end")
			}
		} else if strings.HasPrefix(rest, "'") {
			// The service's other quoting: a name up to the next single
			// quote, as it is (/'a"b'/'c/d' names a"b, then c/d).
			end := strings.IndexByte(rest[1:], '\'')
			if end < 0 {
				return nil, bad("a segment in single quotes has no closing quote")
			}
			seg, rest = rest[1:1+end], rest[2+end:]
			if rest != "" && rest[0] != '/' {
				return nil, bad("a quoted segment must be followed by '/' or the end")
			}
		} else {
			i := strings.IndexByte(rest, '/')
			if i < 0 {
				i = len(rest)
			}
			seg, rest = rest[:i], rest[i:]
			if j := strings.IndexAny(seg, `"*[]?`); j >= 0 {
				return nil, bad("the character " + strconv.QuoteRune(rune(seg[j])) + " must be inside a quoted segment")
			}
		}
		if seg == "" {
			return nil, bad("it has an empty segment")
		}
		segs = append(segs, seg)
	}
	if systemProperties[segs[0]] {
		return nil, bad("'" + segs[0] + "' is a system property")
	}
	return segs, nil
}

// check validates a key given to an operation on a container with these
// paths. Point operations need a full key; a query (prefix) may give fewer
// components of a hierarchical key, or none for every partition.
func (pp *pkPaths) check(pk PartitionKey, prefix bool) *Error {
	if pk.bad != "" {
		return badRequest("the partition key %s is invalid: %s", clip(pk.String()), pk.bad)
	}
	switch levels := len(pp.segs); {
	case levels == 0 && pk.n != 0:
		return badRequest("the container is not partitioned, so the partition key must be empty (NewPartitionKey()), not %s", clip(pk.String()))
	case pk.n == 0 && levels > 0 && !prefix:
		return badRequest("the container is partitioned by %d path(s): the operation needs a partition key value, not the empty key", levels)
	case int(pk.n) > levels:
		return badRequest("the partition key %s has %d components, more than the %d path(s) of the container's definition", clip(pk.String()), pk.n, levels)
	case int(pk.n) < levels && !prefix:
		return badRequest("the partition key %s has %d components, fewer than the %d paths of the container's definition", clip(pk.String()), pk.n, levels)
	}
	return nil
}

// msgPKMismatch is Cosmos DB's message for a document whose partition key
// value is not the one the call gave.
const msgPKMismatch = "PartitionKey extracted from document doesn't match the one specified in the header"

// matches reports whether the partition key value of a parsed, valid
// document is pk (encoded). It allocates nothing for the usual keys.
func (pp *pkPaths) matches(doc []byte, p *parsedItem, pk string) (bool, *Error) {
	if pp.byID {
		return isStringComponent(pk, p.id), nil
	}
	var buf [64]byte
	b := buf[:0]
	for _, segs := range pp.segs {
		i := p.member(doc, segs[0])
		for _, seg := range segs[1:] {
			if i < 0 {
				break
			}
			i = objectMember(doc, i, seg)
		}
		var err *Error
		if b, err = appendPKValue(b, doc, i); err != nil {
			return false, err
		}
	}
	if len(b) > len(buf) && pkValueBytes(string(b)) > MaxPartitionKeyLength {
		return false, badRequest("the partition key value is over %d bytes", MaxPartitionKeyLength)
	}
	return string(b) == pk, nil
}

// isStringComponent reports whether enc is the encoding of the one string s.
func isStringComponent(enc, s string) bool {
	if len(enc) < 2 || enc[0] != pkString {
		return false
	}
	n, k := uint64(0), 1
	for shift := 0; k < len(enc) && k <= binary.MaxVarintLen64; shift += 7 {
		c := enc[k]
		k++
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return n == uint64(len(s)) && enc[k:] == s
		}
	}
	return false
}

// appendPKValue appends the encoding of the value at doc[i]: none if i < 0
// or the value is an object or array, which Cosmos DB takes as undefined
// (as its .NET SDK's DocumentAnalyzer extracts a document's key).
func appendPKValue(b, doc []byte, i int) ([]byte, *Error) {
	if i < 0 {
		return append(b, pkNone), nil
	}
	switch c := doc[i]; {
	case c == 'n':
		return append(b, pkNull), nil
	case c == 't':
		return append(b, pkTrue), nil
	case c == 'f':
		return append(b, pkFalse), nil
	case c == '"':
		end, fl, _ := jsontext.ScanString(doc, i)
		raw := doc[i+1 : end-1]
		s := unsafe.String(unsafe.SliceData(raw), len(raw))
		if fl&jsontext.Escaped != 0 {
			s = decodeString(raw)
		}
		b = append(b, pkString)
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...), nil
	case c == '-' || (c >= '0' && c <= '9'):
		end, _ := jsontext.ScanNumber(doc, i)
		f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(doc[i:end]), end-i), 64)
		if err != nil && !isUnderflow(f) {
			return nil, badRequest("the partition key value %s is not a double", clip(doc[i:end]))
		}
		return append(b, encodeNumber(f)...), nil
	default: // an object or array: Cosmos DB takes it as undefined
		return append(b, pkNone), nil
	}
}

// isUnderflow reports whether ParseFloat's result f came with a range error
// only because the number is too small: it then reads as 0 (or -0).
func isUnderflow(f float64) bool { return f == 0 }

// member returns the offset of the value of the document's top-level member
// name, or -1.
func (p *parsedItem) member(doc []byte, name string) int {
	at := -1
	p.runs(func(r span) {
		if at < 0 {
			at = memberValue(doc, r.start, r.end, name)
		}
	})
	return at
}

// objectMember returns the offset of the value of member name of the object
// at doc[i] (valid JSON), or -1 if doc[i] is no object or has no such member.
func objectMember(doc []byte, i int, name string) int {
	if doc[i] != '{' {
		return -1
	}
	return memberValue(doc, jsontext.SkipSpace(doc, i+1), len(doc), name)
}

// memberValue returns the offset of the value of member name among the
// members of an object (valid JSON) that start at doc[i] and before end, or
// -1 if none has that name.
func memberValue(doc []byte, i, end int, name string) int {
	for i < end && doc[i] == '"' {
		vend, fl, _ := jsontext.ScanString(doc, i)
		raw := doc[i+1 : vend-1]
		match := string(raw) == name
		if fl&jsontext.Escaped != 0 {
			match = decodeString(raw) == name
		}
		i = jsontext.SkipSpace(doc, vend)
		i = jsontext.SkipSpace(doc, i+1) // past the ':'
		if match {
			return i
		}
		vend, _ = jsontext.SkipValue(doc, i) // doc is valid JSON
		i = jsontext.SkipSpace(doc, vend)
		if i < len(doc) && doc[i] == ',' {
			i = jsontext.SkipSpace(doc, i+1)
		}
	}
	return -1
}
