package query

import (
	"strings"
	"testing"
)

// TestDecodeRaw: stored JSON text reads as the item parser reads it
// (internal/jsontext): escapes decoded, a lone surrogate as U+FFFD, a number
// beyond a float64 undefined, one below as zero, invalid text undefined.
func TestDecodeRaw(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"a\"\\\/\b\f\n\r\tb"`, `"a\"\\/\u0008\u000c\n\r\tb"`},
		{`"\u00e9\ud83d\ude00"`, `"é😀"`},
		{`"\ud800x"`, `"\ufffdx"`},
		{`"\udc00\ud800\udc00"`, `"\ufffd𐀀"`},
		{`[1e-400, -0.5e1, 1e400, true, false, null]`, `[0,-5,true,false,null]`},
		{`{"a": {"b": ["c", 1.5]}}`, `{"a":{"b": ["c", 1.5]}}`}, // inner values keep their text
		{`"\'"`, `undefined`},
		{"\"a\nb\"", `undefined`},
		{"\"a\xffb\"", `undefined`},
		{`"\u12"`, `undefined`},
		{`01`, `undefined`},
		{`tru`, `undefined`},
		{`[1,]`, `undefined`},
	} {
		v := decodeRaw([]byte(tc.in))
		got := "undefined"
		if v.k != kUndef {
			v.raw = nil
			got = string(appendJSON(nil, v))
		}
		want := tc.want
		if strings.Contains(want, `\ufffd`) {
			want = strings.ReplaceAll(want, `\ufffd`, "\ufffd")
		}
		if got != want {
			t.Errorf("%q: %s, want %s", tc.in, got, want)
		}
	}
	if v, ok := lookupKey([]byte(`{"\u0061":1,"b":2}`), "a"); !ok || string(v) != "1" {
		t.Errorf("lookupKey of an escaped name: %q %v", v, ok)
	}
}
