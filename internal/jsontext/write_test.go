package jsontext

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"abc", `"abc"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"\n\r\t\x00\x1f\x7f", `"\n\r\t\u0000\u001f` + "\x7f\""},
		{"é😀", `"é😀"`},
		{"a\xffb", "\"a\ufffdb\""},
		{"\xed\xa0\x80", "\"\ufffd\ufffd\ufffd\""}, // an encoded surrogate is not UTF-8
		{"</script>&", `"</script>&"`},
	} {
		if got := string(AppendString([]byte("x"), tc.in)); got != "x"+tc.want {
			t.Errorf("AppendString(%q) = %s, want %s", tc.in, got[1:], tc.want)
		}
	}
}

func TestAppendNumber(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-2.5, "-2.5"},
		{1e6, "1000000"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1.5e300, "1.5e+300"},
		{1e-6, "0.000001"},
		{1e-7, "1e-7"},
		{-1.25e-9, "-1.25e-9"},
		{5e-324, "5e-324"},
		{0.30000000000000004, "0.30000000000000004"},
		{9007199254740993, "9007199254740992"},
	} {
		if got := string(AppendNumber(nil, tc.in)); got != tc.want {
			t.Errorf("AppendNumber(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// FuzzAppend checks that what AppendString and AppendNumber write is JSON
// that encoding/json reads back as the same string (non-UTF-8 bytes aside,
// which become U+FFFD as encoding/json's own decoder makes them) and the
// same number.
func FuzzAppend(f *testing.F) {
	f.Add("a\"\\\n\x01\xff😀", 1.5)
	f.Add("", 1e-7)
	f.Fuzz(func(t *testing.T, s string, x float64) {
		var gotS string
		if err := json.Unmarshal(AppendString(nil, s), &gotS); err != nil {
			t.Fatalf("AppendString(%q) = %s: %v", s, AppendString(nil, s), err)
		}
		if want := strings.ToValidUTF8(s, "\ufffd"); gotS != want && utf8.ValidString(s) {
			t.Fatalf("AppendString(%q) reads back as %q", s, gotS)
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		var gotX float64
		if err := json.Unmarshal(AppendNumber(nil, x), &gotX); err != nil || gotX != x {
			t.Fatalf("AppendNumber(%v) = %s reads back as %v, %v", x, AppendNumber(nil, x), gotX, err)
		}
	})
}
