package jsontext

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendString appends s to dst as a JSON string: '"' and '\' escaped,
// control characters as \n, \r, \t or \u00XX, everything else as it is.
// Bytes that are not UTF-8 become U+FFFD.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += n
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendNumber appends f to dst as JavaScript's Number.prototype.toString
// writes it (and so Cosmos DB): the shortest text that reads back as f,
// plain notation from 1e-6 up to 1e21 and exponent notation outside
// (1e+21, 1e-7), negative zero as 0. f must be finite: JSON has no NaN
// or infinity.
func AppendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if abs := math.Abs(f); abs < 1e21 && abs >= 1e-6 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
	// Go writes e-07 and e+07; JavaScript e-7 and e+7.
	if m := len(dst); m-n >= 4 && dst[m-4] == 'e' && dst[m-2] == '0' {
		dst[m-2] = dst[m-1]
		dst = dst[:m-1]
	}
	return dst
}
