package resid

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want string // "" when valid
	}{
		{"db", ""},
		{"a b", ""},
		{" leading", ""},
		{"é" + strings.Repeat("x", 254), ""},
		{"\u202eevil", ""}, // a format character: nothing documented against it
		{"tab\u00a0nbsp", ""},
		{"", "is empty"},
		{strings.Repeat("x", 256), "over the limit of 255"},
		{"trailing ", "ends with a space"},
		{"a/b", `character '/'`},
		{`a\b`, `character '\\'`},
		{"a?b", `character '?'`},
		{"a#b", `character '#'`},
		{"nul\x00", "control character U+0000"},
		{"tab\t", "control character U+0009"},
		{"line\nfeed", "control character U+000A"},
		{"del\x7f", "control character U+007F"},
		{"\xff", "not valid UTF-8"},
	} {
		err := Check("container", tc.id)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want valid", tc.id, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error with %q", tc.id, err, tc.want)
		}
	}
}
