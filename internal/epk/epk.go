// Package epk computes effective partition keys as Azure Cosmos DB does:
// the point of a partition key value in the space its partition key ranges
// divide, an upper-case hexadecimal string that orders as the service
// orders it (byte by byte, "" the least, "FF" above every key).
//
// A container whose partition key definition has version 2 and kind Hash
// hashes the binary encoding of all its key's components together
// (MurmurHash3 x64 128-bit, seed 0); kind MultiHash (a hierarchical key)
// hashes each component alone and joins the hashes, so that the keys
// beginning with one prefix lie together, in PrefixRange. Version 1
// (kind Hash) hashes the first component with MurmurHash3 x86 32-bit and
// follows the hash with the component's own order-preserving encoding.
// The encodings are those the SDKs write for routing (@azure/cosmos's
// utils/hashing), so lethe puts every item in the range an SDK looks for
// it in.
package epk

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// Min is the least effective partition key: the lower bound of the first
// range. Max is above every key: the upper bound of the last range.
const (
	Min = ""
	Max = "FF"
)

// Kind is the JSON type of one component of a partition key value.
type Kind uint8

// The kinds of a component. Undefined is a document with nothing at the
// key's path (Cosmos DB's "none", [{}] on the wire).
const (
	Undefined Kind = iota
	Null
	False
	True
	Number
	String
)

// A Value is one component of a partition key value.
type Value struct {
	Kind   Kind
	Number float64 // when Kind is Number
	String string  // when Kind is String
}

// The type bytes of the binary encoding.
const (
	tagUndefined = 0x00
	tagNull      = 0x01
	tagFalse     = 0x02
	tagTrue      = 0x03
	tagNumber    = 0x05
	tagString    = 0x08
	tagEnd       = 0xFF // after a string, in version 2
)

// Hash returns the effective partition key of vals in a container of the
// given definition: version 1 or 2 (0 means 2), multi for kind MultiHash.
// A key without components (a container without partition key paths) is
// Min.
func Hash(version int, multi bool, vals []Value) string {
	switch {
	case len(vals) == 0:
		return Min
	case multi:
		return MultiHash(vals)
	case version == 1:
		return V1(vals[0])
	}
	return V2(vals)
}

// V2 returns the version 2 effective partition key of vals hashed together
// (kind Hash): 32 hexadecimal digits, the hash's two halves high half
// first, each big-endian, with the top two bits cleared.
func V2(vals []Value) string {
	var buf [64]byte
	b := buf[:0]
	for _, v := range vals {
		b = appendV2(b, v)
	}
	h1, h2 := murmur3x64(b)
	var out [16]byte
	binary.BigEndian.PutUint64(out[:8], h2)
	binary.BigEndian.PutUint64(out[8:], h1)
	out[0] &= 0x3F
	return strings.ToUpper(hex.EncodeToString(out[:]))
}

// MultiHash returns the effective partition key of a hierarchical key:
// the V2 key of each component alone, joined.
func MultiHash(vals []Value) string {
	var sb strings.Builder
	sb.Grow(32 * len(vals))
	for _, v := range vals {
		sb.WriteString(V2([]Value{v}))
	}
	return sb.String()
}

// PrefixRange returns the range of the effective partition keys of the
// hierarchical keys that begin with prefix: from its MultiHash, inclusive,
// to that followed by Max, exclusive.
func PrefixRange(prefix []Value) (minInclusive, maxExclusive string) {
	lo := MultiHash(prefix)
	return lo, lo + Max
}

// appendV2 appends the version 2 hashing encoding of v: its type byte,
// then a number's float64 little-endian, a string's UTF-8 and tagEnd.
func appendV2(b []byte, v Value) []byte {
	switch v.Kind {
	case Number:
		b = append(b, tagNumber)
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Number))
	case String:
		b = append(b, tagString)
		b = append(b, v.String...)
		return append(b, tagEnd)
	}
	return append(b, simpleTag(v.Kind))
}

// simpleTag is the one byte that encodes a component without a payload.
func simpleTag(k Kind) byte {
	switch k {
	case Null:
		return tagNull
	case False:
		return tagFalse
	case True:
		return tagTrue
	}
	return tagUndefined
}

// v1MaxChars is how much of a string version 1 hashes and encodes: its
// first 100 UTF-16 code units.
const v1MaxChars = 100

// V1 returns the version 1 effective partition key of v: the 32-bit hash
// of v's hashing encoding, as a number in the binary encoding, followed by
// v in the binary encoding.
func V1(v Value) string {
	if v.Kind == String {
		v.String = truncateUTF16(v.String, v1MaxChars)
	}
	var buf [128]byte
	h := murmur3x86(appendV1Hashing(buf[:0], v))
	out := appendNumberEncoding(buf[:0], float64(h))
	switch v.Kind {
	case Number:
		out = appendNumberEncoding(out, v.Number)
	case String:
		out = append(out, tagString)
		for i := 0; i < len(v.String); i++ {
			c := v.String[i]
			if c < 0xFF {
				c++
			}
			out = append(out, c)
		}
		out = append(out, tagUndefined)
	default:
		out = append(out, simpleTag(v.Kind))
	}
	return strings.ToUpper(hex.EncodeToString(out))
}

// appendV1Hashing appends the version 1 hashing encoding of v: as version
// 2's, but a string ends with 0x00.
func appendV1Hashing(b []byte, v Value) []byte {
	if v.Kind == String {
		b = append(b, tagString)
		b = append(b, v.String...)
		return append(b, tagUndefined)
	}
	return appendV2(b, v)
}

// appendNumberEncoding appends f in the service's order-preserving binary
// encoding of numbers: the type byte, the top byte of f's bits made
// unsigned-ordered, then the rest seven bits a byte, each with its low bit
// set but the last.
func appendNumberEncoding(b []byte, f float64) []byte {
	u := math.Float64bits(f)
	if u < 1<<63 {
		u ^= 1 << 63
	} else {
		u = -u
	}
	b = append(b, tagNumber, byte(u>>56))
	u <<= 8
	var last byte
	for first := true; first || u != 0; first = false {
		if !first {
			b = append(b, last)
		}
		last = byte(u>>56) | 1
		u <<= 7
	}
	if last &^= 1; last != 0 {
		b = append(b, last)
	}
	return b
}

// truncateUTF16 returns the longest prefix of s of at most n UTF-16 code
// units; a character that would be cut in half becomes U+FFFD, as
// JavaScript's substr and TextEncoder make it.
func truncateUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if units+w > n {
			if units < n {
				return s[:i] + string(utf8.RuneError)
			}
			return s[:i]
		}
		units += w
	}
	return s
}

// murmur3x64 is MurmurHash3's x64 128-bit hash of data with seed 0.
func murmur3x64(data []byte) (h1, h2 uint64) {
	const c1, c2 = 0x87c37b91114253d5, 0x4cf5ad432745937f
	n := uint64(len(data))
	for ; len(data) >= 16; data = data[16:] {
		k1 := binary.LittleEndian.Uint64(data)
		k2 := binary.LittleEndian.Uint64(data[8:])
		h1 ^= bits.RotateLeft64(k1*c1, 31) * c2
		h1 = (bits.RotateLeft64(h1, 27)+h2)*5 + 0x52dce729
		h2 ^= bits.RotateLeft64(k2*c2, 33) * c1
		h2 = (bits.RotateLeft64(h2, 31)+h1)*5 + 0x38495ab5
	}
	var k1, k2 uint64
	for i := len(data) - 1; i >= 8; i-- {
		k2 |= uint64(data[i]) << (8 * (i - 8))
	}
	if len(data) > 8 {
		h2 ^= bits.RotateLeft64(k2*c2, 33) * c1
	}
	for i := min(len(data), 8) - 1; i >= 0; i-- {
		k1 |= uint64(data[i]) << (8 * i)
	}
	if len(data) > 0 {
		h1 ^= bits.RotateLeft64(k1*c1, 31) * c2
	}
	h1 ^= n
	h2 ^= n
	h1 += h2
	h2 += h1
	h1, h2 = fmix64(h1), fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// murmur3x86 is MurmurHash3's x86 32-bit hash of data with seed 0.
func murmur3x86(data []byte) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	var h uint32
	n := uint32(len(data))
	for ; len(data) >= 4; data = data[4:] {
		k := binary.LittleEndian.Uint32(data)
		h ^= bits.RotateLeft32(k*c1, 15) * c2
		h = bits.RotateLeft32(h, 13)*5 + 0xe6546b64
	}
	var k uint32
	for i := len(data) - 1; i >= 0; i-- {
		k |= uint32(data[i]) << (8 * i)
	}
	if len(data) > 0 {
		h ^= bits.RotateLeft32(k*c1, 15) * c2
	}
	h ^= n
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// Bounds returns the n-1 effective partition keys that divide the space
// of a container's keys into n ranges of equal share of the hash space,
// in order: the first range is [Min, bounds[0]), the last
// [bounds[n-2], Max). Version 2 keys (and hierarchical ones, by their
// first component) are split over their 62 significant high bits, version
// 1 keys over their 32-bit hash. n below 2 has no bounds.
func Bounds(version int, multi bool, n int) []string {
	if n < 2 {
		return nil
	}
	out := make([]string, 0, n-1)
	for i := 1; i < n; i++ {
		if version == 1 && !multi {
			h := uint64(i) << 32 / uint64(n)
			out = append(out, strings.ToUpper(hex.EncodeToString(appendNumberEncoding(nil, float64(h)))))
			continue
		}
		hi, lo := bits.Mul64(uint64(i), 1<<62)
		q, _ := bits.Div64(hi, lo, uint64(n))
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], q)
		out = append(out, strings.ToUpper(hex.EncodeToString(b[:])))
	}
	return out
}

// InRange reports whether the key lies in [minInclusive, maxExclusive).
func InRange(key, minInclusive, maxExclusive string) bool {
	return key >= minInclusive && key < maxExclusive
}

// Mid returns a key that divides [lo, hi) in two, halving the share of
// the hash space between them: version 2 keys (and hierarchical ones, by
// their first component) lie below "40", version 1 keys between "05" and
// "06", and a bound is read as its first 16 hexadecimal digits (a key as
// long as a 64-bit number). ok is false when no such key lies strictly
// between lo and hi.
func Mid(version int, multi bool, lo, hi string) (mid string, ok bool) {
	floor, ceil := uint64(0), uint64(1)<<62
	if version == 1 && !multi {
		floor, ceil = 0x05<<56, 0x06<<56
	}
	a, b := max(prefix64(lo), floor), ceil
	if hi != Max {
		b = min(prefix64(hi), ceil)
	}
	if b <= a+1 {
		return "", false
	}
	var out [8]byte
	binary.BigEndian.PutUint64(out[:], a+(b-a)/2)
	mid = strings.ToUpper(hex.EncodeToString(out[:]))
	return mid, lo < mid && (hi == Max || mid < hi)
}

// prefix64 reads the first 16 hexadecimal digits of key (padded with
// zeros) as a number.
func prefix64(key string) uint64 {
	var buf [16]byte
	for i := range buf {
		buf[i] = '0'
	}
	copy(buf[:], key)
	var b [8]byte
	if _, err := hex.Decode(b[:], buf[:]); err != nil {
		return 0
	}
	return binary.BigEndian.Uint64(b[:])
}
