package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecidedRange: the WHERE clauses one index condition decides exactly,
// and those it does not (another conjunct, an OR, a JOIN, a condition no
// index answers, two conditions that do not make one range).
func TestDecidedRange(t *testing.T) {
	for _, tc := range []struct {
		where   string
		decided bool
	}{
		{`c.a = 1`, true},
		{`1 = c.a`, true},
		{`c.a.b = "x"`, true},
		{`c["a"] = @p`, true},
		{`c.a > 1 AND c.a <= 5`, true},
		{`c.a >= "m" AND c.a < "n" AND c.a > "ma"`, true},
		{`c.a BETWEEN 1 AND 4`, true},
		{`c.a IN (1, 2, "x", null)`, true},
		{`STARTSWITH(c.a, "pa")`, true},
		{`STARTSWITH(c.a, "pa", false)`, true},
		{`c.a = null`, true},
		{`c.a = true`, true},

		{`c.a = 1 AND c.b = 2`, false},                 // two paths
		{`c.a = 1 AND c.a = 2`, false},                 // two points: not merged
		{`c.a > 1 AND c.a < "x"`, false},               // two types: two ranges
		{`c.a = 1 OR c.a = 2`, false},                  // not a conjunction of ranges
		{`NOT (c.a = 1)`, false},                       // no range
		{`c.a != 1`, false},                            // no range
		{`c.a = 1 AND IS_STRING(c.b)`, false},          // another conjunct
		{`c.a = 1 AND true`, false},                    // a constant conjunct is still a conjunct
		{`STARTSWITH(c.a, "pa", true)`, false},         // case-insensitive
		{`c.a = [1]`, false},                           // an array: no index key
		{`c.a IN (1, [1])`, false},                     // an array in the list
		{`c.a NOT IN (1, 2)`, false},                   // no range
		{`c.a NOT BETWEEN 1 AND 4`, false},             // no range
		{`c.a = @missing`, false},                      // the parameter does not bind
		{`c.a + 1 = 2`, false},                         // not a path
		{`LOWER(c.a) = "x"`, false},                    // not a path
		{`c.a = c.b`, false},                           // not a constant
		{`c.a BETWEEN 1 AND "x"`, false},               // two types
		{`c.a = 1 AND (c.a = 1 OR c.b = 2)`, false},    // an OR conjunct
		{`c.a = 1 AND EXISTS(SELECT 1 FROM c)`, false}, // a subquery conjunct
	} {
		q, err := Parse("SELECT * FROM c WHERE " + tc.where)
		require.NoError(t, err, tc.where)
		r, ok := q.DecidedRange(map[string]any{"@p": "v"})
		assert.Equal(t, tc.decided, ok, tc.where)
		if ok {
			assert.NotEmpty(t, r.Path, tc.where)
		}
	}
	for _, text := range []string{
		`SELECT c FROM c JOIN t IN c.tags WHERE c.a = 1`, // a JOIN: several rows an item
		`SELECT * FROM x IN c.arr WHERE x.a = 1`,         // a FROM over a path
		`SELECT * FROM c`,                                // no WHERE
	} {
		q, err := Parse(text)
		require.NoError(t, err, text)
		_, ok := q.DecidedRange(nil)
		assert.False(t, ok, text)
	}
}

// TestDecidedRangeIsExact checks, on random documents and random WHERE
// clauses that DecidedRange accepts, that an item passes WHERE exactly
// when its value at the path is one the range contains (PathKey, as an
// index keeps it): values of every type, missing ones, arrays and objects,
// numbers that are equal but written differently (-0 and 0, 1 and 1.0),
// strings with escapes and common prefixes.
func TestDecidedRangeIsExact(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	values := []string{
		`null`, `true`, `false`, `0`, `-0`, `1`, `1.0`, `1e0`, `2`, `-3.5`, `10`, `1e300`,
		`""`, `"a"`, `"ab"`, `"abc"`, `"b"`, `"a\u0062"`, `"A"`, `"pa"`, `"pab"`, `"\u00e9"`, `"é"`,
		`[]`, `[1]`, `{}`, `{"b":1}`,
	}
	consts := []string{
		`null`, `true`, `false`, `0`, `-0`, `1`, `2`, `-3.5`, `10`,
		`""`, `"a"`, `"ab"`, `"b"`, `"pa"`, `"é"`,
	}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	cond := func() string {
		switch rng.IntN(7) {
		case 0:
			return fmt.Sprintf("c.v %s %s", pick([]string{"=", "<", "<=", ">", ">="}), pick(consts))
		case 1:
			return fmt.Sprintf("%s %s c.v", pick(consts), pick([]string{"=", "<", "<=", ">", ">="}))
		case 2:
			return fmt.Sprintf("c.v BETWEEN %s AND %s", pick(consts), pick(consts))
		case 3:
			return fmt.Sprintf("c.v IN (%s, %s)", pick(consts), pick(consts))
		case 4:
			return fmt.Sprintf("STARTSWITH(c.v, %s)", pick([]string{`""`, `"a"`, `"ab"`, `"p"`, `"é"`}))
		case 5:
			lo, hi := pick(consts), pick(consts)
			return fmt.Sprintf("c.v %s %s AND c.v %s %s", pick([]string{">", ">="}), lo, pick([]string{"<", "<="}), hi)
		}
		return fmt.Sprintf("c.v = %s", pick(consts))
	}
	checked := 0
	for range 2000 {
		where := cond()
		q, err := Parse("SELECT VALUE c.id FROM c WHERE " + where)
		require.NoError(t, err, where)
		r, ok := q.DecidedRange(nil)
		if !ok {
			continue // e.g. bounds of two types
		}
		checked++
		for i, v := range values {
			doc := fmt.Sprintf(`{"id":"d%d","v":%s}`, i, v)
			if rng.IntN(8) == 0 {
				doc = fmt.Sprintf(`{"id":"d%d"}`, i) // missing
			}
			res, err := Exec(context.Background(), q, nil, []Doc{{ID: "d", JSON: []byte(doc)}}, testNow)
			require.NoError(t, err)
			assert.Equal(t, len(res.Items) == 1, r.Contains(PathKey([]byte(doc), r.Path)), "WHERE %s on %s", where, doc)
		}
	}
	assert.Greater(t, checked, 1000)
}

// TestCountsRows: the queries whose result is a count of the rows WHERE
// passes, and CountResult gives what Exec gives.
func TestCountsRows(t *testing.T) {
	docs := []Doc{
		{ID: "1", JSON: []byte(`{"id":"a","n":1}`)},
		{ID: "2", JSON: []byte(`{"id":"b","n":2}`)},
		{ID: "3", JSON: []byte(`{"id":"c"}`)},
	}
	for _, tc := range []struct {
		text   string
		counts bool
	}{
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n > 0`, true},
		{`SELECT COUNT(1) FROM c WHERE c.n > 0`, true},
		{`SELECT COUNT(1) AS k FROM c WHERE c.n > 0`, true},
		{`SELECT COUNT(1) AS k, COUNT("x") AS j FROM c WHERE c.n > 0`, true},
		{`SELECT VALUE COUNT(null) FROM c WHERE c.n > 0`, true},

		{`SELECT VALUE COUNT(c.n) FROM c WHERE c.n > 0`, false},   // counts defined values
		{`SELECT VALUE COUNT(c) FROM c WHERE c.n > 0`, false},     // a path
		{`SELECT VALUE SUM(1) FROM c WHERE c.n > 0`, false},       // not COUNT
		{`SELECT VALUE COUNT(1) + 1 FROM c WHERE c.n > 0`, false}, // not the count alone
		{`SELECT COUNT(1) AS k, 1 AS j FROM c WHERE c.n > 0`, false},
		{`SELECT VALUE COUNT(@p) FROM c WHERE c.n > 0`, false}, // a parameter may be anything
		{`SELECT DISTINCT VALUE COUNT(1) FROM c WHERE c.n > 0`, false},
		{`SELECT TOP 1 VALUE COUNT(1) FROM c WHERE c.n > 0`, false},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n > 0 OFFSET 1 LIMIT 1`, false},
		{`SELECT c.n, COUNT(1) AS k FROM c WHERE c.n > 0 GROUP BY c.n`, false},
		{`SELECT * FROM c WHERE c.n > 0`, false},
		{`SELECT VALUE COUNT(1)`, false},
	} {
		q, err := Parse(tc.text)
		require.NoError(t, err, tc.text)
		require.Equal(t, tc.counts, q.CountsRows(), tc.text)
		if !tc.counts {
			continue
		}
		want, err := Exec(context.Background(), q, nil, docs, testNow)
		require.NoError(t, err)
		got := CountResult(q, want.Matched)
		assert.Equal(t, itemTexts(want.Items), itemTexts(got.Items), tc.text)
		assert.Equal(t, want.Sources, got.Sources, tc.text)
		assert.Equal(t, want.Key(0), got.Key(0), tc.text)
	}
}
