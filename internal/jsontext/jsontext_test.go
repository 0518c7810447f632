package jsontext

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func TestScanString(t *testing.T) {
	for _, tc := range []struct {
		in    string
		end   int // for a fault, its offset
		flags Flags
		fault Fault
	}{
		{`""`, 2, 0, OK},
		{`"abc" `, 5, 0, OK},
		{`"a long plain string, more than eight bytes"x`, 44, 0, OK},
		{`"é😀"`, 8, 0, OK},
		{`"a\"b"`, 6, Escaped, OK},
		{`"\\\/\b\f\n\r\t"`, 16, Escaped, OK},
		{`"\u00e9"`, 8, Escaped, OK},
		{`"\ud83d\ude00"`, 14, Escaped, OK},
		{`"\ud800"`, 8, Escaped | LoneSurrogate, OK},
		{`"\udc00"`, 8, Escaped | LoneSurrogate, OK},
		{`"\udbff\u0041"`, 14, Escaped | LoneSurrogate, OK},
		{`"\ud800\ud800\udc00"`, 20, Escaped | LoneSurrogate, OK},
		{`"\ude00\ud83d"`, 14, Escaped | LoneSurrogate, OK},
		{`"abc`, 4, 0, Unterminated},
		{`"abcdefghijklmnop`, 17, 0, Unterminated},
		{`"a\`, 2, Escaped, BadEscape},
		{`"a\x"`, 2, Escaped, BadEscape},
		{`"a\'"`, 2, Escaped, BadEscape},
		{`"a\u12"`, 2, Escaped, BadUnicodeEscape},
		{`"a\u12g4"`, 2, Escaped, BadUnicodeEscape},
		{`"\ud800\u12"`, 7, Escaped | LoneSurrogate, BadUnicodeEscape},
		{"\"ab\ncd\"", 3, 0, ControlChar},
		{"\"abcdefghij\x7f\x00\"", 12, 0, ControlChar},
		{"\"a\xff\"", 2, 0, InvalidUTF8},
		{"\"a\xed\xa0\x80\"", 2, 0, InvalidUTF8}, // a surrogate in UTF-8
	} {
		end, fl, f := ScanString([]byte(tc.in), 0)
		if end != tc.end || fl != tc.flags || f != tc.fault {
			t.Errorf("%q: got %d %b %v, want %d %b %v", tc.in, end, fl, f, tc.end, tc.flags, tc.fault)
		}
	}
}

func TestScanNumber(t *testing.T) {
	for _, tc := range []struct {
		in    string
		end   int
		fault Fault
	}{
		{"0", 1, OK}, {"-0", 2, OK}, {"01", 1, OK}, {"12.5e+3,", 7, OK}, {"1E-5]", 4, OK},
		{"-", 0, BadNumber}, {"1.", 0, BadNumber}, {"1.e5", 0, BadNumber}, {"1e", 0, BadNumber}, {"1e+", 0, BadNumber},
		{".5", 0, BadNumber}, {"+1", 0, BadNumber},
		{"1e308", 5, OK}, {"1.7976931348623157e308", 22, OK}, {"-1.7976931348623157e308", 23, OK},
		{"17976931348623157" + strings.Repeat("0", 292), 309, OK}, {"17976931348623159" + strings.Repeat("0", 292), 309, OutOfRange},
		{"1e309", 5, OutOfRange}, {"1e400", 5, OutOfRange}, {"-1e400", 6, OutOfRange}, {"1.8e308", 7, OutOfRange},
		{"1" + strings.Repeat("0", 400), 401, OutOfRange}, {"1" + strings.Repeat("0", 400) + "e-100", 406, OK},
		{"1e99999999999999999999999", 25, OutOfRange}, {"0e99999999999999999999999", 25, OK},
		{"0." + strings.Repeat("0", 500) + "1e810", 507, OutOfRange}, {"0." + strings.Repeat("0", 500) + "1e800", 507, OK},
		{"1e-400", 6, OK}, {"1e-99999999999999999999999", 26, OK}, {"-1e-400", 7, OK},
	} {
		end, f := ScanNumber([]byte(tc.in), 0)
		if end != tc.end || f != tc.fault {
			t.Errorf("%.40q: got %d %v, want %d %v", tc.in, end, f, tc.end, tc.fault)
		}
	}
}

func TestScanLiteral(t *testing.T) {
	for _, tc := range []struct {
		in  string
		end int
		ok  bool
	}{
		{"true", 4, true}, {"false,", 5, true}, {"null]", 4, true}, {"nul", 0, false}, {"tru", 0, false},
		{"fals", 0, false}, {"x", 0, false}, {"", 0, false}, {"nulL", 0, false},
	} {
		end, ok := ScanLiteral([]byte(tc.in), 0)
		if end != tc.end || ok != tc.ok {
			t.Errorf("%q: got %d %v", tc.in, end, ok)
		}
	}
}

func TestSkipSpace(t *testing.T) {
	if got := SkipSpace([]byte(" \t\r\n x"), 0); got != 5 {
		t.Fatal(got)
	}
	if got := SkipSpace([]byte("  \v"), 1); got != 2 {
		t.Fatal(got)
	}
	if got := SkipSpace([]byte("  "), 0); got != 2 {
		t.Fatal(got)
	}
}

func TestEqualDecoded(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		eq   bool
	}{
		{``, ``, true}, {`a`, `a`, true}, {`a`, `b`, false}, {`a`, `ab`, false},
		{`a`, `\u0061`, true}, {`\u0061`, `\u0041`, false}, {`é`, `\u00e9`, true}, {`é`, `\u00E9`, true},
		{`😀x`, `\ud83d\ude00x`, true}, {`😀`, `\ud83d\ude01`, false}, {`a\/b`, `a/b`, true},
		{`\n`, "\\u000a", true}, {`\"`, `"`, true}, {`\\`, `\u005c`, true},
		{`é`, `è`, false}, {`\u00e9`, `e`, false},
	} {
		if got := EqualDecoded([]byte(tc.a), []byte(tc.b)); got != tc.eq {
			t.Errorf("%q %q: %v", tc.a, tc.b, got)
		}
		if got := EqualDecoded([]byte(tc.b), []byte(tc.a)); got != tc.eq {
			t.Errorf("%q %q: %v", tc.b, tc.a, got)
		}
	}
}

func TestLoneSurrogateAt(t *testing.T) {
	for _, tc := range []struct {
		in string
		at int
	}{
		{`abc`, -1}, {`\ud83d\ude00`, -1}, {`\ufffd`, -1}, {`\ud800`, 0}, {`ab\udc00`, 2},
		{`\n\ud800\u0041`, 2}, {`\ud83d\ude00\ude00`, 12}, {`\ud800\ud800\udc00`, 0},
	} {
		if got := LoneSurrogateAt([]byte(tc.in)); got != tc.at {
			t.Errorf("%q: %d, want %d", tc.in, got, tc.at)
		}
	}
}

// TestSpecial checks the eight-at-a-time test against the byte table: the
// lowest byte it marks is the first special byte of the word, for every
// byte value at every position, after plain bytes and before any bytes.
func TestSpecial(t *testing.T) {
	for c := range 256 {
		for pos := range 8 {
			for _, after := range []byte{'a', 0, '"', '\\', 0x1f, 0x20, 0x7f, 0x80, 0xff, 0x01} {
				var w [8]byte
				for i := range w {
					w[i] = 'a'
					if i > pos {
						w[i] = after
					}
				}
				w[pos] = byte(c)
				m := special(binary.LittleEndian.Uint64(w[:]))
				first := 8
				for i := range w {
					if !plain[w[i]] {
						first = i
						break
					}
				}
				if got := bits.TrailingZeros64(m) >> 3; got != first {
					t.Fatalf("%q: first special byte %d, marked %d", w, first, got)
				}
			}
		}
	}
}

// FuzzString checks ScanString and Unquote against encoding/json: the same
// strings are valid (UTF-8 aside: encoding/json accepts bytes that are not
// UTF-8), they decode to the same text, LoneSurrogate is set exactly when
// the \u escapes hold an unpaired surrogate, and EqualDecoded agrees with
// comparing decoded strings.
func FuzzString(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"a\"\\\/\b\f\n\r\t"`, "\"\xff\"", `"\ud800\ud800\udc00"`, `"abcdefghijkl"`, `"abc","x":1`, `"abcdefg"xy`, `"abcdefgh"x`, `"ab\n"xxxxx`, `""xxxxxxxx`} {
		f.Add([]byte(s), []byte(`"a"`))
	}
	f.Fuzz(func(t *testing.T, doc, other []byte) {
		end, fl, fault := ScanString(doc, 0)
		if len(doc) == 0 || doc[0] != '"' {
			return
		}
		// ShortString reads a string ScanString reads plain, the same way.
		if send, w := ShortString(doc, 0); send >= 0 {
			var want uint64
			for k := send - 2; k >= 1; k-- {
				want = want<<8 | uint64(doc[k])
			}
			if fault != OK || fl != 0 || send != end || send > 9 || w != want {
				t.Fatalf("%q: ShortString %d %#x; ScanString %d %b %v", doc, send, w, end, fl, fault)
			}
		} else if fault == OK && fl == 0 && end <= 9 && len(doc) >= 9 && utf8.ValidString(string(doc[1:end-1])) &&
			!strings.ContainsFunc(string(doc[1:end-1]), func(r rune) bool { return r >= utf8.RuneSelf }) {
			t.Fatalf("%q: ShortString refuses the short plain string ScanString reads to %d", doc, end)
		}
		var want string
		err := json.Unmarshal(doc, &want)
		if fault == OK && end == len(doc) {
			if err != nil {
				t.Fatalf("%q: accepted, encoding/json says %v", doc, err)
			}
			got, ok := Unquote(doc[1 : end-1])
			if !ok || got != want {
				t.Fatalf("%q: Unquote %q %v, encoding/json %q", doc, got, ok, want)
			}
			if lone := hasLone(doc[1 : end-1]); lone != (fl&LoneSurrogate != 0) {
				t.Fatalf("%q: flags %b, lone surrogate %v", doc, fl, lone)
			}
			if (LoneSurrogateAt(doc[1:end-1]) >= 0) != (fl&LoneSurrogate != 0) {
				t.Fatalf("%q: LoneSurrogateAt %d, flags %b", doc, LoneSurrogateAt(doc[1:end-1]), fl)
			}
			if oend, _, ofault := ScanString(other, 0); len(other) > 0 && other[0] == '"' && ofault == OK {
				o, _ := Unquote(other[1 : oend-1])
				if EqualDecoded(doc[1:end-1], other[1:oend-1]) != (o == got) {
					t.Fatalf("EqualDecoded(%q, %q) != (%q == %q)", doc, other, got, o)
				}
			}
			return
		}
		if fault == OK {
			return // a valid string followed by more text
		}
		if err == nil && fault != InvalidUTF8 {
			t.Fatalf("%q: %v at %d, encoding/json accepts it", doc, fault, end)
		}
	})
}

// hasLone reports whether the \u escapes of raw, decoded to UTF-16 code
// units, hold a surrogate utf16.Decode cannot pair.
func hasLone(raw []byte) bool {
	var units []uint16
	for i := 0; i < len(raw); {
		switch {
		case raw[i] == '\\' && raw[i+1] == 'u':
			u, _ := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
			units = append(units, uint16(u))
			i += 6
		case raw[i] == '\\':
			units = append(units, uint16(raw[i+1]))
			i += 2
		default:
			r, n := utf8.DecodeRune(raw[i:])
			units = utf16.AppendRune(units, r)
			i += n
		}
	}
	in := 0
	for _, u := range units {
		if u == 0xfffd {
			in++
		}
	}
	out := 0
	for _, r := range utf16.Decode(units) {
		if r == 0xfffd {
			out++
		}
	}
	return out > in
}

// FuzzNumber checks ScanNumber against strconv: it accepts JSON number
// syntax, and OutOfRange exactly when strconv.ParseFloat gives an infinity.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"0", "-1.5e3", "1e400", "1e-400", "1.7976931348623157e308", "1.7976931348623159e308", "01", "1.", "-"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, num []byte) {
		end, fault := ScanNumber(num, 0)
		if fault == BadNumber {
			if end != 0 {
				t.Fatalf("%q: BadNumber at %d", num, end)
			}
			if json.Valid(num) && len(num) > 0 && (num[0] == '-' || '0' <= num[0] && num[0] <= '9') {
				t.Fatalf("%q: BadNumber, encoding/json accepts it", num)
			}
			return
		}
		text := num[:end]
		if !json.Valid(text) {
			t.Fatalf("%q: read %q, not JSON", num, text)
		}
		f, _ := strconv.ParseFloat(string(text), 64)
		if math.IsInf(f, 0) != (fault == OutOfRange) {
			t.Fatalf("%q: %v, strconv gives %v", text, fault, f)
		}
	})
}

func TestSkipValue(t *testing.T) {
	for _, tc := range []struct {
		in  string
		end int
		ok  bool
	}{
		{`"a\"b",1`, 6, true},
		{`{"a":[1,{"b":"}"}]} x`, 19, true},
		{`[1,2]`, 5, true},
		{`123,`, 3, true},
		{`true}`, 4, true},
		{`-1.5e3]`, 6, true},
		{`{"a":1`, 6, false},
		{`"abc`, 4, false},
		{`["\x"]`, 2, false},
		{`,`, 0, false},
		{``, 0, false},
	} {
		end, ok := SkipValue([]byte(tc.in), 0)
		if end != tc.end || ok != tc.ok {
			t.Errorf("SkipValue(%q) = %d, %v; want %d, %v", tc.in, end, ok, tc.end, tc.ok)
		}
	}
}
