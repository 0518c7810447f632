package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decides reports whether one of the conditions an index can answer in
// q's WHERE clause decides the whole clause (Residual leaves none), and
// returns it.
func decides(q *Query, params map[string]any) (IndexRange, bool) {
	for _, r := range q.IndexRanges(params) {
		if !q.Residual(params, r).HasWhere() && !q.Joins() {
			return r, true
		}
	}
	return IndexRange{}, false
}

// TestResidualDecides: the WHERE clauses one index condition decides
// whole, and those it does not (another conjunct, an OR, a JOIN, a
// condition no index answers, two conditions that do not make one range).
func TestResidualDecides(t *testing.T) {
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
		{`STARTSWITH(c.a, "pa") AND STARTSWITH(c.a, "p")`, true},
		{`c.a = null`, true},
		{`c.a = true`, true},
		{`c.a = 5 AND c.a > 1`, true},       // the equality holds the range
		{`c.a IN (2, 3) AND c.a < 4`, true}, // so does the list

		{`c.a = 1 AND c.b = 2`, false},                 // two paths
		{`c.a = 1 AND c.a = 2`, false},                 // two points, disjoint
		{`c.a = 5 AND c.a < 1`, false},                 // a point outside the range
		{`c.a > 1 AND c.a < "x"`, false},               // two types: two ranges
		{`c.a = 1 OR c.a = 2`, false},                  // not a conjunction of ranges
		{`NOT (c.a = 1)`, false},                       // no range
		{`c.a != 1`, false},                            // no range
		{`c.a = 1 AND IS_STRING(c.b)`, false},          // another conjunct
		{`c.a = 1 AND true`, false},                    // a constant conjunct is still a conjunct
		{`STARTSWITH(c.a, "pa", true)`, false},         // case-insensitive
		{`STARTSWITH(c.a, "p") AND c.a < "q"`, false},  // a prefix and a range
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
		_, ok := decides(q, map[string]any{"@p": "v"})
		assert.Equal(t, tc.decided, ok, tc.where)
	}
	for _, text := range []string{
		`SELECT c FROM c JOIN t IN c.tags WHERE c.a = 1`, // a JOIN: several rows an item
		`SELECT * FROM x IN c.arr WHERE x.a = 1`,         // a FROM over a path
	} {
		q, err := Parse(text)
		require.NoError(t, err, text)
		_, ok := decides(q, nil)
		assert.False(t, ok, text)
	}
}

// TestResidualIsExact checks, on random documents and random WHERE
// clauses, that for each condition an index can answer (r), the query
// less the conditions r decides (Residual) gives, on every document whose
// value at r's path r contains (PathKey, as an index keeps it), what the
// whole query gives; and that a document r does not contain passes no
// query r decides whole. The values are of every type, missing, arrays
// and objects, numbers that are equal but written differently (-0 and 0,
// 1 and 1.0), strings with escapes and common prefixes.
func TestResidualIsExact(t *testing.T) {
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
	cond := func(path string) string {
		switch rng.IntN(8) {
		case 0:
			return fmt.Sprintf("%s %s %s", path, pick([]string{"=", "<", "<=", ">", ">="}), pick(consts))
		case 1:
			return fmt.Sprintf("%s %s %s", pick(consts), pick([]string{"=", "<", "<=", ">", ">="}), path)
		case 2:
			return fmt.Sprintf("%s BETWEEN %s AND %s", path, pick(consts), pick(consts))
		case 3:
			return fmt.Sprintf("%s IN (%s, %s)", path, pick(consts), pick(consts))
		case 4:
			return fmt.Sprintf("STARTSWITH(%s, %s)", path, pick([]string{`""`, `"a"`, `"ab"`, `"p"`, `"é"`}))
		case 5:
			return fmt.Sprintf("IS_NUMBER(%s)", path) // no index answers it
		}
		return fmt.Sprintf("%s = %s", path, pick(consts))
	}
	decided := 0
	for range 1500 {
		where := cond("c.v")
		for range rng.IntN(3) {
			where += " AND " + cond(pick([]string{"c.v", "c.v", "c.w"}))
		}
		q, err := Parse("SELECT VALUE c.id FROM c WHERE " + where)
		require.NoError(t, err, where)
		for _, r := range q.IndexRanges(nil) {
			res := q.Residual(nil, r)
			whole := !res.HasWhere()
			if whole {
				decided++
			}
			for i, v := range values {
				doc := fmt.Sprintf(`{"id":"d%d","v":%s,"w":%s}`, i, v, pick(values))
				if rng.IntN(8) == 0 {
					doc = fmt.Sprintf(`{"id":"d%d","w":%s}`, i, pick(values)) // v missing
				}
				docs := []Doc{{ID: "d", JSON: []byte(doc)}}
				want, err := Exec(context.Background(), q, nil, docs, testNow)
				require.NoError(t, err)
				if !r.Contains(PathKey([]byte(doc), r.Path)) {
					assert.Empty(t, want.Items, "WHERE %s on %s: passes, but the index of %v would not find it", where, doc, r.Path)
					continue
				}
				got, err := Exec(context.Background(), res, nil, docs, testNow)
				require.NoError(t, err)
				assert.Equal(t, len(want.Items), len(got.Items), "WHERE %s on %s, residual %v", where, doc, res.where != nil)
				if whole {
					assert.Len(t, want.Items, 1, "WHERE %s on %s: the index decides it, and it fails", where, doc)
				}
			}
		}
	}
	assert.Greater(t, decided, 300)
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
