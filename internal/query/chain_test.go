package query

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLongChainsBoundedStack: a chain of binary operators as long as the
// longest query allowed (a left-deep tree tens of thousands of links deep)
// is evaluated without a frame of eval per link: with the stack limited to
// 32 MB (a recursion would need some 250 MB, and the process would die of
// it), it gives the chain's value, for a strict operator and for the three
// that stop early.
func TestLongChainsBoundedStack(t *testing.T) {
	old := debug.SetMaxStack(32 << 20)
	defer debug.SetMaxStack(old)
	doc := []Doc{{ID: "a", JSON: []byte(`{"id":"a","n":1,"t":true,"f":false}`)}}
	const n = 60_000
	for _, tc := range []struct {
		text, want string
	}{
		{"SELECT VALUE c.n" + strings.Repeat(" + c.n", n) + " FROM c", "[60001]"},
		{"SELECT VALUE c.n" + strings.Repeat(" - c.n", n) + " FROM c", "[-59999]"},
		{"SELECT VALUE c.t" + strings.Repeat(" AND c.t", n/2) + " FROM c", "[true]"},
		{"SELECT VALUE c.f" + strings.Repeat(" OR c.f", n/2) + " OR c.t FROM c", "[true]"},
		{"SELECT VALUE c.x" + strings.Repeat(" ?? c.x", n/2) + " ?? 7 FROM c", "[7]"},
		{"SELECT VALUE 'a'" + strings.Repeat(" || 'a'", 1000) + " = '" + strings.Repeat("a", 1001) + "' FROM c", "[true]"},
	} {
		got, err := run(t, tc.text, nil, doc)
		require.NoError(t, err, tc.text[:40])
		assert.Equal(t, tc.want, got, tc.text[:40])
	}
}

// TestChainsAsRecursion: a chain gives what the same operators nested to
// the right of each other with parentheses would, where they associate
// (the evaluation order of a left-deep chain is the recursion's).
func TestChainsAsRecursion(t *testing.T) {
	t.Parallel()
	doc := []Doc{{ID: "a", JSON: []byte(`{"id":"a","n":6,"s":"x","u":null}`)}}
	for _, tc := range []struct{ text, want string }{
		{"SELECT VALUE c.n - 1 - 2 - 3 FROM c", "[0]"},
		{"SELECT VALUE c.n / 2 / 3 FROM c", "[1]"},
		{"SELECT VALUE 1 + 2 * 3 - c.n % 4 FROM c", "[5]"},
		{"SELECT VALUE c.n > 1 AND c.n < 10 AND c.s = 'x' FROM c", "[true]"},
		{"SELECT VALUE c.n > 10 OR c.missing OR c.s = 'x' FROM c", "[true]"},
		{"SELECT VALUE c.n > 10 OR c.missing FROM c", "[]"},
		{"SELECT VALUE c.missing ?? c.u ?? 3 FROM c", "[null]"},
		{"SELECT VALUE c.s || 'y' || 'z' FROM c", `["xyz"]`},
		{"SELECT VALUE c.s || 1 || 'z' FROM c", "[]"},
		{"SELECT VALUE c.n = 6 = true FROM c", "[true]"},
	} {
		got, err := run(t, tc.text, nil, doc)
		require.NoError(t, err, tc.text)
		assert.Equal(t, tc.want, got, tc.text)
	}
}
