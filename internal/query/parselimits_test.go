package query

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestParseLimitsEdges: the limits take what they allow and refuse one more.
func TestParseLimitsEdges(t *testing.T) {
	joins := func(n int) string {
		var b strings.Builder
		b.WriteString("SELECT 1 FROM c")
		for i := range n {
			fmt.Fprintf(&b, " JOIN a%d IN c.a", i)
		}
		return b.String()
	}
	text := func(n int, pad string) string { // a query of n characters
		return "SELECT '" + strings.Repeat(pad, n-len("SELECT ''")) + "'"
	}
	for _, tc := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"5 JOINs", joins(MaxJoins), true},
		{"6 JOINs", joins(MaxJoins + 1), false},
		{"512 KB characters of ASCII", text(MaxQueryLen, "x"), true},
		{"one more", text(MaxQueryLen+1, "x"), false},
		{"512 KB characters of two bytes each", text(MaxQueryLen, "é"), true},
		{"one more of two bytes", text(MaxQueryLen+1, "é"), false},
		{"512 KB characters of four bytes each", text(MaxQueryLen, "😀"), true},
	} {
		_, err := Parse(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// parseShapes are query texts of about n bytes in the shapes that make the
// parser build most: long lists, long operator chains, deep nesting, many
// keys, subqueries.
func parseShapes(n int) map[string]string {
	rep := strings.Repeat
	keys := func(format string) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, format, i)
		}
		return b.String()
	}
	return map[string]string{
		"operators":   "SELECT VALUE 1" + rep("+1", n/2),
		"ors":         "SELECT * FROM c WHERE c.a=1" + rep(" OR c.a=1", n/9),
		"in list":     "SELECT * FROM c WHERE c.a IN (1" + rep(",1", n/2) + ")",
		"array":       "SELECT VALUE [1" + rep(",1", n/2) + "]",
		"object keys": "SELECT VALUE {" + keys("a%d:1, ") + "z:1}",
		"select list": "SELECT " + keys("c.a AS x%d, ") + "1 FROM c",
		"group by":    "SELECT " + rep("c.a+c.b, ", n/20) + "1 FROM c GROUP BY c.a, c.b" + rep(", c.a+c.b", n/20),
		"order by":    "SELECT * FROM c ORDER BY c.a" + rep(", c.a", n/6),
		"nesting":     "SELECT VALUE " + rep("(", 120) + "1" + rep(")", 120) + rep("+1", n/2),
		"subqueries":  "SELECT VALUE " + rep("(SELECT VALUE ", 60) + "1" + rep(")", 60) + rep("+1", n/2),
		"exists":      "SELECT * FROM c WHERE " + rep("EXISTS(SELECT VALUE 1) AND ", n/27) + "true",
		"paths":       "SELECT VALUE c" + rep("[0].a", n/5) + " FROM c",
		"calls":       "SELECT VALUE " + rep("ABS(", 120) + "1" + rep(")", 120) + rep("+ABS(1)", n/7),
		"late error":  "SELECT VALUE 1" + rep("\n+1", n/3) + " ))",
	}
}

// TestParseMemory: a query text at the length limit, of any of the shapes
// that make the parser build most, parses with under 64 MB allocated, in
// time linear in its length.
func TestParseMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("parses 14 texts of 512 KB")
	}
	const budget = 64 << 20
	for name, text := range parseShapes(MaxQueryLen - 2000) {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := Parse(text)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%-12s %d bytes: %.1f MB allocated, %v (%v)", name, len(text), float64(alloc)/(1<<20), took.Round(time.Millisecond), err)
		if alloc > budget {
			t.Errorf("%s: parsing %d bytes allocated %d MB, over %d MB", name, len(text), alloc>>20, budget>>20)
		}
		if took > 5*slowdown*time.Second {
			t.Errorf("%s: parsing %d bytes took %v", name, len(text), took)
		}
	}
}
