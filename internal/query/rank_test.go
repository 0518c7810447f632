package query

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rankDocs are items with text and vectors for ORDER BY RANK.
var rankDocs = []Doc{
	{ID: "1", JSON: []byte(`{"id":"1","text":"The keyword appears frequently: keyword, keyword.","v":[0,1]}`)},
	{ID: "2", JSON: []byte(`{"id":"2","text":"Another document mentioning the keyword in a long sentence about distributed systems and databases","v":[1,0]}`)},
	{ID: "3", JSON: []byte(`{"id":"3","text":"Nothing to see here","v":[0.9,0.1]}`)},
	{ID: "4", JSON: []byte(`{"id":"4","text":"keyword1 and keyword2","v":[0.5,0.5]}`)},
	{ID: "5", JSON: []byte(`{"id":"5","v":[-1,0]}`)},
}

func TestOrderByRank(t *testing.T) {
	tests := []struct {
		query string
		want  []string
	}{
		// The documentation's examples.
		{`SELECT TOP 10 VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, "keyword")`, []string{"1", "2", "3", "4", "5"}},
		{`SELECT TOP 10 VALUE c.id FROM c WHERE FullTextContains(c.text, "keyword1") ORDER BY RANK FullTextScore(c.text, "keyword1", "keyword2")`, []string{"4"}},
		{`SELECT TOP 10 VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, "keyword"), VectorDistance(c.v, [1,0]))`, []string{"2", "1", "3", "4", "5"}},
		{`SELECT TOP 10 VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, "keyword"), VectorDistance(c.v, [1,0]), [1,3])`, []string{"2", "1", "3", "4", "5"}},
		{`SELECT TOP 10 VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, "keyword"), FullTextScore(c.text, "keyword1"))`, []string{"1", "4", "2", "3", "5"}},
		// The euclidean distance ranks the smallest first.
		{`SELECT VALUE c.id FROM c ORDER BY RANK RRF(VectorDistance(c.v, [1,0], false, {"distanceFunction": "euclidean"}), FullTextScore(c.text, "nothing"))`, []string{"3", "2", "4", "1", "5"}},
		// Parameters, OFFSET LIMIT, rank is a name elsewhere.
		{`SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, @t) OFFSET 1 LIMIT 1`, []string{"2"}},
		{`SELECT VALUE rank.id FROM rank ORDER BY rank.id DESC`, []string{"5", "4", "3", "2", "1"}},
		{`SELECT VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, "keyword"), VectorDistance(c.v, @v), @w)`, []string{"2", "1", "3", "4", "5"}},
	}
	params := map[string]any{"@t": "keyword", "@v": []float64{1, 0}, "@w": []float64{1, 3}}
	for _, tc := range tests {
		got := vecRun(t, tc.query, params, rankDocs, nil)
		want := []string{}
		for _, id := range tc.want {
			want = append(want, `"`+id+`"`)
		}
		assert.Equal(t, want, got, tc.query)
		q, err := Parse(tc.query)
		require.NoError(t, err)
		again, err := Parse(q.String())
		require.NoError(t, err, q.String())
		assert.Equal(t, q.String(), again.String())
	}
}

// TestFullTextScoreBM25: the scores, computed here by the formula, order
// the items; the statistics come from Env.TextStats when it is given.
func TestFullTextScoreBM25(t *testing.T) {
	docs := []Doc{
		{ID: "a", JSON: []byte(`{"t":"cat cat dog"}`)},
		{ID: "b", JSON: []byte(`{"t":"cat bird bird bird bird bird"}`)},
		{ID: "c", JSON: []byte(`{"t":"dog"}`)},
	}
	st := CorpusStats(docs, []string{"t"}, "en-US", []string{"cat", "dog"})
	assert.Equal(t, TextStats{Docs: 3, Terms: 10, DF: []int{2, 2}}, st)
	bm := func(tf, dl, df, n int, avg float64) float64 {
		idf := math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
		return idf * float64(tf) * 2.2 / (float64(tf) + 1.2*(0.25+0.75*float64(dl)/avg))
	}
	a := bm(2, 3, 2, 3, 10.0/3)
	b := bm(1, 6, 2, 3, 10.0/3)
	require.Greater(t, a, b)
	got := vecRun(t, `SELECT VALUE c.t FROM c ORDER BY RANK FullTextScore(c.t, "cats")`, nil, docs, nil)
	assert.Equal(t, []string{`"cat cat dog"`, `"cat bird bird bird bird bird"`, `"dog"`}, got)

	// Statistics of a larger corpus (the container's): "dog" is rare
	// there, "cat" common, so the short text of one dog comes first.
	env := &Env{TextStats: func(path []string, lang string, terms []string) TextStats {
		df := make([]int, len(terms))
		for i, term := range terms {
			df[i] = map[string]int{"cat": 900, "dog": 1}[term]
		}
		return TextStats{Docs: 1000, Terms: 4000, DF: df}
	}}
	got = vecRun(t, `SELECT VALUE c.t FROM c ORDER BY RANK FullTextScore(c.t, "cat", "dog")`, nil, docs, env)
	assert.Equal(t, []string{`"dog"`, `"cat cat dog"`, `"cat bird bird bird bird bird"`}, got)
	got = vecRun(t, `SELECT VALUE c.t FROM c ORDER BY RANK FullTextScore(c.t, "cat", "dog")`, nil, docs, nil)
	assert.Equal(t, []string{`"cat cat dog"`, `"dog"`, `"cat bird bird bird bird bird"`}, got)
}

func TestOrderByRankErrors(t *testing.T) {
	tests := []struct{ query, msg string }{
		{`SELECT FullTextScore(c.text, "a") AS s FROM c`, "The FullTextScore function is only allowed in the ORDER BY RANK clause."},
		{`SELECT VALUE c FROM c WHERE FullTextScore(c.text, "a") > 1`, "The FullTextScore function is only allowed in the ORDER BY RANK clause."},
		{`SELECT VALUE c FROM c ORDER BY FullTextScore(c.text, "a")`, "The FullTextScore function is only allowed in the ORDER BY RANK clause."},
		{`SELECT VALUE c FROM c ORDER BY RRF(FullTextScore(c.text, "a"), FullTextScore(c.text, "b"))`, "The RRF function is only allowed in the ORDER BY RANK clause."},
		{`SELECT VALUE c FROM c ORDER BY RANK RRF(RRF(FullTextScore(c.text, "a"), FullTextScore(c.text, "b")), FullTextScore(c.text, "c"))`, "'RRF' is not a recognized built-in function name."},
		{`SELECT VALUE c FROM c ORDER BY RANK FullTextScore(c.text, c.id)`, "The second through last arguments of the 'FullTextScore' function must be string literals."},
		{`SELECT VALUE c FROM c ORDER BY RANK c.id`, "ORDER BY RANK takes a scoring function"},
		{`SELECT VALUE c FROM c ORDER BY RANK LOWER(c.id)`, "ORDER BY RANK takes a scoring function"},
		{`SELECT VALUE c FROM c ORDER BY RANK RRF(FullTextScore(c.text, "a"), c.id)`, "the arguments of RRF must be scoring functions"},
		{`SELECT VALUE c FROM c ORDER BY RANK FullTextScore(c.text, "a"), c.id`, ""},
		{`SELECT VALUE c FROM c ORDER BY RANK RRF(FullTextScore(c.text, "a"), FullTextScore(c.text, "b"), [1])`, "the weights of RRF must be an array of 2 numbers"},
		{`SELECT VALUE c FROM c ORDER BY RANK RRF(FullTextScore(c.text, "a"), FullTextScore(c.text, "b"), [1, "x"])`, "the weights of RRF must be numbers"},
		{`SELECT VALUE c FROM c ORDER BY RANK FullTextScore(c.text, 3)`, "the search strings of FullTextScore must be strings, found 3"},
		{`SELECT VALUE c FROM c JOIN (SELECT VALUE x FROM x IN c.a ORDER BY RANK FullTextScore(x.t, "a")) y`, "ORDER BY RANK is not supported in a subquery"},
	}
	for _, tc := range tests {
		q, err := Parse(tc.query)
		if err == nil {
			_, err = Exec(context.Background(), q, nil, rankDocs, testNow)
		}
		if assert.Error(t, err, tc.query) {
			assert.Contains(t, err.Error(), tc.msg, tc.query)
		}
	}
}

// TestRRFTies: items with equal scores share a rank in RRF: a and b, equal
// for "fox", both rank first there, as c does for "bear"; all three have
// the same fused score and come in item order.
func TestRRFTies(t *testing.T) {
	docs := []Doc{
		{ID: "a", JSON: []byte(`{"id":"a","t":"fox"}`)},
		{ID: "b", JSON: []byte(`{"id":"b","t":"fox"}`)},
		{ID: "c", JSON: []byte(`{"id":"c","t":"bear cub"}`)},
	}
	got := vecRun(t, `SELECT VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.t, "fox"), FullTextScore(c.t, "bear"))`, nil, docs, nil)
	assert.Equal(t, []string{`"a"`, `"b"`, `"c"`}, got)
}
