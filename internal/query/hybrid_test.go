package query

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hybridDocs are documents for the functions of the rewritten hybrid queries.
var hybridDocs = []Doc{
	{ID: "t1", JSON: []byte(`{"id":"t1","text":"swimming in the lake","ok":true,"v":[1,0]}`)},
	{ID: "t2", JSON: []byte(`{"id":"t2","text":"run and swim and run","ok":false,"v":[0,1]}`)},
	{ID: "t3", JSON: []byte(`{"id":"t3","text":"a long walk home","ok":true,"v":[1,1]}`)},
	{ID: "t4", JSON: []byte(`{"id":"t4","ok":"yes"}`)},
}

func TestHybridFunctions(t *testing.T) {
	for _, tc := range []struct{ name, query, want string }{
		{"COUNTIF counts true only", `SELECT VALUE COUNTIF(c.ok) FROM c`, `[2]`},
		{"COUNTIF of a condition", `SELECT VALUE COUNTIF(FullTextContains(c.text, "swim")) FROM c`, `[2]`},
		{"COUNTIF in a rewritten aggregate", `SELECT VALUE [{"item": COUNTIF(c.ok)}] FROM c`, `[[{"item":2}]]`},
		{"COUNTIF grouped", `SELECT c.ok AS k, COUNTIF(IS_STRING(c.text)) AS n FROM c GROUP BY c.ok`,
			`[{"k":false,"n":1},{"k":true,"n":2},{"k":"yes","n":0}]`},
		{"word count", `SELECT VALUE _FullTextWordCount(c.text) FROM c`, `[2,3,3]`},
		{"word count of no text", `SELECT VALUE _FullTextWordCount(c.v) FROM c`, `[]`},
		{"global statistics", `SELECT COUNT(1) AS documentCount, [{"totalWordCount": SUM(_FullTextWordCount(c.text)), "hitCounts": [COUNTIF(FullTextContains(c.text, "swim")), COUNTIF(FullTextContains(c.text, "run"))]}] AS fullTextStatistics FROM c`,
			`[{"documentCount":4,"fullTextStatistics":[{"totalWordCount":8,"hitCounts":[2,1]}]}]`},
		{"score of no text is 0", `SELECT VALUE _FullTextScore(c.ok, ["swim"], 4, 13, [2]) FROM c WHERE c.id = "t1"`, `[0]`},
		{"score with bad statistics is undefined", `SELECT VALUE _FullTextScore(c.text, ["swim"], 4, 13, [2, 3]) FROM c`, `[]`},
		{"vector score orders most similar first", `SELECT VALUE c.id FROM c WHERE IS_ARRAY(c.v) ORDER BY _VectorScore(c.v, [1, 0.1])`, `["t1","t3","t2"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := run(t, tc.query, nil, hybridDocs)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, got)
		})
	}
}

// TestGivenScoreIsFullTextScore: _FullTextScore with the statistics of the
// documents scores as FullTextScore does over them.
func TestGivenScoreIsFullTextScore(t *testing.T) {
	want, err := run(t, `SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, "swim", "run")`, nil, hybridDocs[:3])
	require.NoError(t, err)
	got, err := run(t, `SELECT VALUE c.id FROM c ORDER BY _FullTextScore(c.text, ["swim", "run"], 3, 8, [2, 1]) DESC`, nil, hybridDocs[:3])
	require.NoError(t, err)
	assert.Equal(t, want, got)
	scores, err := run(t, `SELECT VALUE _FullTextScore(c.text, ["swim", "run"], 3, 8, [2, 1]) > 0 FROM c`, nil, hybridDocs[:3])
	require.NoError(t, err)
	assert.Equal(t, `[true,true,false]`, scores)
}
