// Package jsontext reads JSON text: the scanning primitives and the string
// escape decoder shared by lethe's item parser and its query engine, so that
// both read a document the same way.
//
// The scanners work on a byte slice and an index and return the index after
// what they read; they never allocate, except ScanNumber's rare slow path
// when it refuses a number (the error strconv makes). On a fault the index
// returned is where the fault is.
package jsontext

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Fault is what is wrong with JSON text; OK when nothing is.
type Fault uint8

// The faults.
const (
	OK               Fault = iota
	Unterminated           // a string without its closing quote
	BadEscape              // a backslash followed by a character JSON does not allow there
	BadUnicodeEscape       // \u not followed by four hex digits
	ControlChar            // a control character (below U+0020) in a string
	InvalidUTF8            // a byte sequence that is not UTF-8, in a string
	BadNumber              // text that starts like a number but is not one
	OutOfRange             // a number whose magnitude is too large for a float64
)

// String says what the fault is, in a few words for an error message.
func (f Fault) String() string {
	switch f {
	case OK:
		return "ok"
	case Unterminated:
		return "unterminated string"
	case BadEscape:
		return "bad escape"
	case BadUnicodeEscape:
		return `bad \u escape`
	case ControlChar:
		return "control character in a string"
	case InvalidUTF8:
		return "invalid UTF-8"
	case BadNumber:
		return "malformed number"
	case OutOfRange:
		return "number outside the range of a double"
	}
	return "fault " + strconv.Itoa(int(f))
}

// Flags describe a string ScanString read.
type Flags uint8

const (
	// Escaped: the string has escape sequences; decode it (Unquote) before use.
	Escaped Flags = 1 << iota
	// LoneSurrogate: the string has a \u escape of a UTF-16 surrogate that is
	// not half of a pair (a high one followed by a low one). It is no
	// character: Unquote and DecodeEscape make it U+FFFD, so two strings
	// differing only there decode the same.
	LoneSurrogate
)

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace (space, tab, line feed, carriage return).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// ScanString reads the string whose opening quote is at b[i]. It returns
// the index after the closing quote, so that b[i+1:end-1] is the string's
// raw contents. The string must be valid JSON: escapes as the grammar has
// them, no control characters, valid UTF-8. On a fault, end is the offset of
// the offending byte (the backslash of a bad escape; len(b) when the string
// is unterminated).
func ScanString(b []byte, i int) (end int, fl Flags, f Fault) {
	i++ // the opening quote
	for i < len(b) {
		// Skip plain characters fast: eight at a time, up to the first
		// special byte of a word, then one by one near the end.
		for i+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto special
			}
			i += 8
		}
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
	special:
		switch c := b[i]; {
		case c == '"':
			return i + 1, fl, OK
		case c == '\\':
			fl |= Escaped
			if i+1 >= len(b) {
				return i, fl, BadEscape
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(b[i+2:])
				if !ok {
					return i, fl, BadUnicodeEscape
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r < 0xdc00 && i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' {
						if r2, ok := hex4(b[i+2:]); ok && 0xdc00 <= r2 && r2 < 0xe000 {
							i += 6
							continue
						}
					}
					fl |= LoneSurrogate
				}
			default:
				return i, fl, BadEscape
			}
		case c < 0x20:
			return i, fl, ControlChar
		default: // the first byte of a multi-byte sequence, or not UTF-8
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i, fl, InvalidUTF8
			}
			i += n
		}
	}
	return len(b), fl, Unterminated
}

// ShortString reads, from one 8-byte word, the string whose opening quote
// is at b[i] if its raw contents are at most 7 plain bytes (no escape,
// control character or byte of 0x80 or more): it returns the index after
// its closing quote and the contents as a little-endian word, zero above
// them. end is -1 for any other string (and near the end of b), which
// ScanString then reads.
func ShortString(b []byte, i int) (end int, w uint64) {
	if uint(i)+9 > uint(len(b)) {
		return -1, 0
	}
	x := binary.LittleEndian.Uint64(b[i+1:])
	// The high bit of the first special byte, 8k+7 for byte k; 64 if none.
	hb := uint(bits.TrailingZeros64(special(x)))
	if hb == 64 || byte(x>>(hb-7)) != '"' {
		return -1, 0
	}
	return i + 2 + int(hb>>3), x & (1<<(hb-7) - 1)
}

// special marks the bytes of the little-endian word x that are not plain
// (a quote, a backslash, a control character, a byte of 0x80 or more) with
// their high bit. The lowest marked byte is the first special one; bytes
// after it may be marked although plain (a borrow carries into them), but
// no plain byte before the first special one is ever marked.
func special(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	quote := x ^ (lo * '"')
	backslash := x ^ (lo * '\\')
	return ((quote-lo)&^quote | (backslash-lo)&^backslash | (x - lo*0x20) | x) & hi
}

// plain marks the bytes a string may hold as they are: not a quote, a
// backslash, a control character or the start of a multi-byte sequence.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// maxPlainDigits is the most integer digits (after the exponent is applied)
// a number can have and surely be below math.MaxFloat64 (about 1.8e308).
const maxPlainDigits = 308

// ScanNumber reads the number that starts at b[i] and returns the index
// after it. A number whose magnitude rounds beyond math.MaxFloat64 (1e400,
// -1e400) is OutOfRange, with end after it; one too small for a float64
// (1e-400) is not a fault: it reads as zero, as strconv.ParseFloat makes it.
// Plain numbers (a short integer part and a small exponent) are decided
// from their digits alone; only the others are parsed.
func ScanNumber(b []byte, i int) (end int, f Fault) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	intStart := i
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return start, BadNumber
	}
	// The value is below 10^(intDigits+exp): in range if that is 10^308 or less.
	intDigits := i - intStart
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return start, BadNumber
		}
		i = j
	}
	exp := 0
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		neg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			neg = b[i] == '-'
			i++
		}
		j := i
		for ; j < len(b) && '0' <= b[j] && b[j] <= '9'; j++ {
			if exp < 1<<30 { // saturate: beyond, only the sign matters here
				exp = exp*10 + int(b[j]-'0')
			}
		}
		if j == i {
			return start, BadNumber
		}
		if neg {
			exp = -exp
		}
		i = j
	}
	if intDigits+exp > maxPlainDigits && !inRange(b[start:i]) {
		return i, OutOfRange
	}
	return i, OK
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// inRange reports whether the valid JSON number text does not round to an
// infinity as a float64. strconv.ParseFloat takes time linear in the text,
// whatever its length or exponent.
func inRange(num []byte) bool {
	f, _ := strconv.ParseFloat(unsafe.String(unsafe.SliceData(num), len(num)), 64)
	return !math.IsInf(f, 0)
}

// ScanLiteral reads true, false or null at b[i] and returns the index after
// it; ok is false if b[i:] starts with none of them.
func ScanLiteral(b []byte, i int) (end int, ok bool) {
	if i >= len(b) {
		return i, false
	}
	var word string
	switch b[i] {
	case 't':
		word = "true"
	case 'f':
		word = "false"
	case 'n':
		word = "null"
	default:
		return i, false
	}
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// DecodeEscape decodes the JSON escape sequence at the start of s (s[0] is
// a backslash): the rune it stands for and its length. A \u escape of a high
// surrogate followed by one of a low surrogate is one rune (length 12); a
// lone surrogate is U+FFFD (length 6). ok is false for a bad escape.
func DecodeEscape[S ~string | ~[]byte](s S) (r rune, n int, ok bool) {
	if len(s) < 2 {
		return 0, 0, false
	}
	switch s[1] {
	case '"', '\\', '/':
		return rune(s[1]), 2, true
	case 'b':
		return '\b', 2, true
	case 'f':
		return '\f', 2, true
	case 'n':
		return '\n', 2, true
	case 'r':
		return '\r', 2, true
	case 't':
		return '\t', 2, true
	case 'u':
		r, ok := hex4(s[2:])
		if !ok {
			return 0, 0, false
		}
		if !utf16.IsSurrogate(r) {
			return r, 6, true
		}
		if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if r2, ok := hex4(s[8:]); ok {
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					return d, 12, true
				}
			}
		}
		return utf8.RuneError, 6, true
	}
	return 0, 0, false
}

// hex4 decodes four hex digits at the start of s.
func hex4[S ~string | ~[]byte](s S) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := range 4 {
		c := s[i]
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Unquote decodes the raw contents of a JSON string (between its quotes).
// Lone surrogates and bytes that are not UTF-8 become U+FFFD. ok is false
// for a bad escape.
func Unquote(raw []byte) (s string, ok bool) {
	var sb strings.Builder
	sb.Grow(len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			if c < utf8.RuneSelf {
				sb.WriteByte(c)
				i++
				continue
			}
			r, n := utf8.DecodeRune(raw[i:])
			sb.WriteRune(r)
			i += n
			continue
		}
		r, n, ok := DecodeEscape(raw[i:])
		if !ok {
			return "", false
		}
		sb.WriteRune(r)
		i += n
	}
	return sb.String(), true
}

// EqualDecoded reports whether the raw contents of two valid JSON strings
// (as ScanString accepts them) decode to the same string, without decoding
// them into memory. Strings with lone surrogates compare as Unquote decodes
// them: U+FFFD.
func EqualDecoded(a, b []byte) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if ca != '\\' && cb != '\\' {
			// Both valid UTF-8 and equal so far: the same position in the
			// same character, so bytes compare as characters do.
			if ca != cb {
				return false
			}
			i++
			j++
			continue
		}
		ra, na := next(a[i:])
		rb, nb := next(b[j:])
		if ra != rb {
			return false
		}
		i += na
		j += nb
	}
	return i == len(a) && j == len(b)
}

// next decodes the character at the start of the raw contents s.
func next(s []byte) (rune, int) {
	if s[0] == '\\' {
		r, n, ok := DecodeEscape(s)
		if !ok {
			return utf8.RuneError, len(s)
		}
		return r, n
	}
	return utf8.DecodeRune(s)
}

// LoneSurrogateAt returns the offset of the first \u escape of a lone
// surrogate in the raw contents of a string, or -1 if it has none.
func LoneSurrogateAt(raw []byte) int {
	for i := 0; i < len(raw); {
		if raw[i] != '\\' {
			i++
			continue
		}
		r, n, ok := DecodeEscape(raw[i:])
		if !ok {
			return -1
		}
		if r == utf8.RuneError && n == 6 && raw[i+1] == 'u' {
			if u, _ := hex4(raw[i+2:]); utf16.IsSurrogate(u) {
				return i
			}
		}
		i += n
	}
	return -1
}

// SkipValue returns the index after the JSON value that starts at b[i]
// (not at a space). It checks strings (ScanString) and that brackets
// balance, not the rest of the grammar: it is for text that has been
// validated, or will be. ok is false when the value does not end inside b
// or a string in it is invalid; end is then where reading stopped.
func SkipValue(b []byte, i int) (end int, ok bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		end, _, f := ScanString(b, i)
		return end, f == OK
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, _, f := ScanString(b, i)
				if f != OK {
					return end, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return i, false
	}
	j := i // a number or a literal: up to the next delimiter
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ':', ' ', '\t', '\n', '\r':
			return j, j > i
		}
		j++
	}
	return j, j > i
}
