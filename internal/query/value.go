package query

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/lethedb/lethe/internal/jsontext"
)

// kind is the JSON type of a value; kUndef is Cosmos DB's undefined.
type kind uint8

const (
	kUndef kind = iota
	kNull
	kBool
	kNum
	kStr
	kArr
	kObj
)

// value is one query value. Objects keep their properties in order. raw,
// when set, is the exact JSON text the value was decoded from (arrays and
// objects only); encoding copies it verbatim.
type value struct {
	k   kind
	b   bool
	n   float64
	s   string
	a   []value
	o   []field
	raw []byte
}

type field struct {
	k string
	v value
}

var (
	undef   = value{}
	nullVal = value{k: kNull}
	trueVal = value{k: kBool, b: true}
	falseV  = value{k: kBool}
)

func boolVal(b bool) value  { return value{k: kBool, b: b} }
func strVal(s string) value { return value{k: kStr, s: s} }

// numVal makes a number. NaN and the infinities are numbers while a query
// is evaluated (the literals NaN and Infinity, 1 / 0, SQRT(-1)), but JSON
// cannot hold them: a result that holds one fails the query (checkResult).
func numVal(f float64) value { return value{k: kNum, n: f} }

// finite reports whether v holds no NaN or infinite number at any depth.
// Values decoded from JSON (raw) cannot.
func finite(v value) bool {
	switch {
	case v.raw != nil:
	case v.k == kNum:
		return !math.IsNaN(v.n) && !math.IsInf(v.n, 0)
	case v.k == kArr:
		for _, e := range v.a {
			if !finite(e) {
				return false
			}
		}
	case v.k == kObj:
		for _, f := range v.o {
			if !finite(f.v) {
				return false
			}
		}
	}
	return true
}

// appendNum appends f as JavaScript writes a number: the JSON number, or
// NaN, Infinity, -Infinity.
func appendNum(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	return jsontext.AppendNumber(dst, f)
}

func (v value) isTrue() bool { return v.k == kBool && v.b }

// get returns property name of an object (undefined otherwise).
func (v value) get(name string) value {
	if v.k != kObj {
		return undef
	}
	for i := range v.o {
		if v.o[i].k == name {
			return v.o[i].v
		}
	}
	return undef
}

// ---- decoding ----

const maxJSONDepth = 512

func skipWS(b []byte, i int) int { return jsontext.SkipSpace(b, i) }

// scanString returns the end (index after the closing quote) of the string
// starting at b[i]=='"', and whether it contains escapes. ok is false if
// the string is not valid JSON (jsontext.ScanString).
func scanString(b []byte, i int) (end int, esc bool, ok bool) {
	end, fl, f := jsontext.ScanString(b, i)
	return end, fl&jsontext.Escaped != 0, f == jsontext.OK
}

// lookupKey finds property key in the raw JSON object b and returns the raw
// value (without surrounding whitespace).
func lookupKey(b []byte, key string) ([]byte, bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil, false
	}
	for i < len(b) {
		if b[i] != '"' {
			return nil, false
		}
		end, esc, ok := scanString(b, i)
		if !ok {
			return nil, false
		}
		var match bool
		if !esc {
			match = string(b[i+1:end-1]) == key
		} else {
			s, ok := unquote(b[i+1 : end-1])
			match = ok && s == key
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipWS(b, i+1)
		vend, ok := jsontext.SkipValue(b, i)
		if !ok {
			return nil, false
		}
		if match {
			return b[i:vend], true
		}
		i = skipWS(b, vend)
		if i >= len(b) || b[i] != ',' {
			return nil, false
		}
		i = skipWS(b, i+1)
	}
	return nil, false
}

// arrayElem returns the raw element idx of the raw JSON array b.
func arrayElem(b []byte, idx int) ([]byte, bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil, false
	}
	for n := 0; i < len(b); n++ {
		end, ok := jsontext.SkipValue(b, i)
		if !ok {
			return nil, false
		}
		if n == idx {
			return b[i:end], true
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ',' {
			return nil, false
		}
		i = skipWS(b, i+1)
	}
	return nil, false
}

// decodeRaw decodes the JSON value b; invalid JSON gives undefined. Strings
// without escapes alias b (b is never modified and outlives the value's use).
func decodeRaw(b []byte) value {
	i := skipWS(b, 0)
	v, end, ok := decodeAt(b, i, 0)
	if !ok || skipWS(b, end) != len(b) {
		return undef
	}
	return v
}

func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func decodeAt(b []byte, i int, depth int) (value, int, bool) {
	if i >= len(b) || depth > maxJSONDepth {
		return undef, 0, false
	}
	switch c := b[i]; c {
	case '"':
		end, esc, ok := scanString(b, i)
		if !ok {
			return undef, 0, false
		}
		if !esc {
			return strVal(bstr(b[i+1 : end-1])), end, true // valid UTF-8: scanString checked it
		}
		s, ok := jsontext.Unquote(b[i+1 : end-1])
		return strVal(s), end, ok
	case '{':
		start := i
		i = skipWS(b, i+1)
		var fs []field
		if i < len(b) && b[i] == '}' {
			return value{k: kObj, o: []field{}, raw: b[start : i+1]}, i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return undef, 0, false
			}
			kv, end, ok := decodeAt(b, i, depth+1)
			if !ok {
				return undef, 0, false
			}
			i = skipWS(b, end)
			if i >= len(b) || b[i] != ':' {
				return undef, 0, false
			}
			i = skipWS(b, i+1)
			v, end, ok := decodeAt(b, i, depth+1)
			if !ok {
				return undef, 0, false
			}
			fs = append(fs, field{kv.s, v})
			i = skipWS(b, end)
			if i >= len(b) {
				return undef, 0, false
			}
			if b[i] == '}' {
				return value{k: kObj, o: fs, raw: b[start : i+1]}, i + 1, true
			}
			if b[i] != ',' {
				return undef, 0, false
			}
			i = skipWS(b, i+1)
		}
	case '[':
		start := i
		i = skipWS(b, i+1)
		var as []value
		if i < len(b) && b[i] == ']' {
			return value{k: kArr, a: []value{}, raw: b[start : i+1]}, i + 1, true
		}
		for {
			v, end, ok := decodeAt(b, i, depth+1)
			if !ok {
				return undef, 0, false
			}
			as = append(as, v)
			i = skipWS(b, end)
			if i >= len(b) {
				return undef, 0, false
			}
			if b[i] == ']' {
				return value{k: kArr, a: as, raw: b[start : i+1]}, i + 1, true
			}
			if b[i] != ',' {
				return undef, 0, false
			}
			i = skipWS(b, i+1)
		}
	case 't', 'f', 'n':
		end, ok := jsontext.ScanLiteral(b, i)
		if !ok {
			return undef, 0, false
		}
		switch c {
		case 't':
			return trueVal, end, true
		case 'f':
			return falseV, end, true
		}
		return nullVal, end, true
	default:
		end, f := jsontext.ScanNumber(b, i)
		switch f {
		case jsontext.OK:
		case jsontext.OutOfRange:
			// Stored items never hold one (the item parser refuses them);
			// an infinity is not a query value.
			return undef, end, true
		default:
			return undef, 0, false
		}
		n, err := strconv.ParseFloat(bstr(b[i:end]), 64)
		if err != nil && !isRangeErr(err) {
			return undef, 0, false
		}
		return numVal(n), end, true // 1e-400 underflows to 0
	}
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// unquote decodes the body of a JSON string (between the quotes).
func unquote(s []byte) (string, bool) { return jsontext.Unquote(s) }

// decodeEscape decodes the escape sequence at the start of s (s[0] is a
// backslash) of a query string literal: JSON's escapes
// (jsontext.DecodeEscape: a lone surrogate is U+FFFD) and \'. ok is false
// for a bad escape.
func decodeEscape(s string) (r rune, n int, ok bool) {
	if len(s) >= 2 && s[1] == '\'' {
		return '\'', 2, true
	}
	return jsontext.DecodeEscape(s)
}

// ---- encoding ----

// appendJSON appends the JSON encoding of v (which must be defined).
// Undefined properties and array elements are left out.
func appendJSON(dst []byte, v value) []byte {
	if v.raw != nil {
		return append(dst, v.raw...)
	}
	switch v.k {
	case kNull, kUndef:
		return append(dst, "null"...)
	case kBool:
		if v.b {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case kNum:
		return appendNum(dst, v.n)
	case kStr:
		return jsontext.AppendString(dst, v.s)
	case kArr:
		dst = append(dst, '[')
		first := true
		for _, e := range v.a {
			if e.k == kUndef {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendJSON(dst, e)
		}
		return append(dst, ']')
	case kObj:
		dst = append(dst, '{')
		first := true
		for _, f := range v.o {
			if f.v.k == kUndef {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = jsontext.AppendString(dst, f.k)
			dst = append(dst, ':')
			dst = appendJSON(dst, f.v)
		}
		return append(dst, '}')
	}
	return dst
}

// canonical appends an encoding of v that is equal for deeply equal values
// (object properties sorted), used for DISTINCT.
func canonical(dst []byte, v value) []byte {
	switch v.k {
	case kUndef:
		return append(dst, 'u')
	case kArr:
		dst = append(dst, '[')
		for _, e := range v.a {
			dst = canonical(dst, e)
			dst = append(dst, ',')
		}
		return append(dst, ']')
	case kObj:
		fs := make([]field, 0, len(v.o))
		for _, f := range v.o {
			if f.v.k != kUndef {
				fs = append(fs, f)
			}
		}
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].k < fs[j].k })
		dst = append(dst, '{')
		for _, f := range fs {
			dst = jsontext.AppendString(dst, f.k)
			dst = append(dst, ':')
			dst = canonical(dst, f.v)
			dst = append(dst, ',')
		}
		return append(dst, '}')
	}
	v.raw = nil
	return appendJSON(dst, v)
}

// ---- comparison ----

// compareTotal orders any two values: undefined < null < false < true <
// numbers < strings < arrays < objects; arrays and objects element-wise.
func compareTotal(a, b value) int {
	if a.k != b.k {
		if a.k < b.k {
			return -1
		}
		return 1
	}
	switch a.k {
	case kBool:
		if a.b == b.b {
			return 0
		}
		if !a.b {
			return -1
		}
		return 1
	case kNum:
		switch an, bn := math.IsNaN(a.n), math.IsNaN(b.n); {
		case a.n < b.n || an && !bn:
			return -1 // NaN first, for a total order
		case a.n > b.n || bn && !an:
			return 1
		}
		return 0
	case kStr:
		return strings.Compare(a.s, b.s)
	case kArr:
		for i := 0; i < len(a.a) && i < len(b.a); i++ {
			if c := compareTotal(a.a[i], b.a[i]); c != 0 {
				return c
			}
		}
		return cmpInt(len(a.a), len(b.a))
	case kObj:
		ca := canonical(nil, a)
		cb := canonical(nil, b)
		return bytes.Compare(ca, cb)
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// deepEqual is Cosmos equality for two values of the same kind; objects
// compare regardless of property order.
func deepEqual(a, b value) bool {
	if a.k != b.k {
		return false
	}
	switch a.k {
	case kUndef, kNull:
		return true
	case kBool:
		return a.b == b.b
	case kNum:
		return a.n == b.n
	case kStr:
		return a.s == b.s
	case kArr:
		if len(a.a) != len(b.a) {
			return false
		}
		for i := range a.a {
			if !deepEqual(a.a[i], b.a[i]) {
				return false
			}
		}
		return true
	case kObj:
		na := 0
		for _, f := range a.o {
			if f.v.k == kUndef {
				continue
			}
			na++
			if !deepEqual(f.v, b.get(f.k)) {
				return false
			}
		}
		nb := 0
		for _, f := range b.o {
			if f.v.k != kUndef {
				nb++
			}
		}
		return na == nb
	}
	return false
}

// ---- Go values (parameters) ----

// fromGo converts a parameter as a user supplied it.
func fromGo(x any, depth int) (value, bool) {
	if depth > maxJSONDepth {
		return undef, false
	}
	switch t := x.(type) {
	case nil:
		return nullVal, true
	case bool:
		return boolVal(t), true
	case string:
		return strVal(t), true
	case int:
		return numVal(float64(t)), true
	case int8:
		return numVal(float64(t)), true
	case int16:
		return numVal(float64(t)), true
	case int32:
		return numVal(float64(t)), true
	case int64:
		return numVal(float64(t)), true
	case uint:
		return numVal(float64(t)), true
	case uint8:
		return numVal(float64(t)), true
	case uint16:
		return numVal(float64(t)), true
	case uint32:
		return numVal(float64(t)), true
	case uint64:
		return numVal(float64(t)), true
	case uintptr:
		return numVal(float64(t)), true
	case float32:
		return numVal(float64(t)), true
	case float64:
		return numVal(t), true
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return undef, false
		}
		return numVal(f), true
	case json.RawMessage:
		v := decodeRaw(bytes.Clone(t))
		v = stripRaw(v)
		return v, v.k != kUndef
	case []float64: // a vector, as a query parameter: what JSON would make of it
		out := make([]value, len(t))
		for i, f := range t {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return undef, false
			}
			out[i] = numVal(f)
		}
		return value{k: kArr, a: out}, true
	case []float32:
		out := make([]value, len(t))
		var buf [32]byte
		for i, f := range t {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return undef, false
			}
			// JSON writes a float32 in its shortest form: 0.1, not 0.10000000149011612.
			n, err := strconv.ParseFloat(string(strconv.AppendFloat(buf[:0], float64(f), 'g', -1, 32)), 64)
			if err != nil {
				return undef, false
			}
			out[i] = numVal(n)
		}
		return value{k: kArr, a: out}, true
	case []any:
		out := make([]value, 0, len(t))
		for _, e := range t {
			v, ok := fromGo(e, depth+1)
			if !ok {
				return undef, false
			}
			out = append(out, v)
		}
		return value{k: kArr, a: out}, true
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fs := make([]field, 0, len(keys))
		for _, k := range keys {
			v, ok := fromGo(t[k], depth+1)
			if !ok {
				return undef, false
			}
			fs = append(fs, field{k, v})
		}
		return value{k: kObj, o: fs}, true
	}
	b, err := json.Marshal(x)
	if err != nil {
		return undef, false
	}
	v := decodeRaw(b)
	return stripRaw(v), v.k != kUndef
}

// stripRaw drops raw text so that parameter values are re-encoded.
func stripRaw(v value) value {
	v.raw = nil
	return v
}
