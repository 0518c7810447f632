package query

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// texts are items for the full-text functions, in the spirit of the
// examples of the Cosmos DB documentation.
var texts = []Doc{
	{ID: "1", JSON: []byte(`{"id":"1","text":"A red bicycle for the mountain trails","title":"Azure Cosmos DB Full Text Search"}`)},
	{ID: "2", JSON: []byte(`{"id":"2","text":"Red skateboards, on sale","title":"Not related","a":{"b":{"c":"X rays"}}}`)},
	{ID: "3", JSON: []byte(`{"id":"3","text":"Mountain bicycles and their helmets","title":"Searching the docs"}`)},
	{ID: "4", JSON: []byte(`{"id":"4","text":"The search phrase keyword1, then keyword2 and KEYWORD3","de":"Die Fahrräder und Autos"}`)},
	{ID: "5", JSON: []byte(`{"id":"5","text":["red bicycle"],"title":42,"de":"Ein Fahrrad"}`)},
}

// ids runs text on texts with env and returns the ids of the results.
func ids(t *testing.T, text string, params map[string]any, env *Env) []string {
	t.Helper()
	q, err := Parse(text)
	require.NoError(t, err, text)
	res, err := ExecFrom(context.Background(), q, params, texts, testNow, nil, env)
	require.NoError(t, err, text)
	out := []string{}
	for _, it := range res.Items {
		out = append(out, strings.Trim(string(it), `"`))
	}
	return out
}

func TestFullTextFunctions(t *testing.T) {
	tests := []struct {
		where string
		want  []string
	}{
		// The documentation's examples.
		{`FullTextContains(c.text, "bicycle")`, []string{"1", "3"}},
		{`FullTextContainsAll(c.text, "red", "bicycle")`, []string{"1"}},
		{`FullTextContains(c.text, "red") AND FullTextContainsAny(c.text, "bicycle", "skateboard")`, []string{"1", "2"}},
		{`FullTextContains(c.text, "search phrase")`, []string{"4"}},
		{`FullTextContains(c.text, "keyword1") AND FullTextContains(c.text, "keyword2")`, []string{"4"}},
		{`FullTextContainsAll(c.text, "search phrase", "keyword")`, []string{}},
		{`FullTextContainsAll(c.text, "keyword1", "keyword2", "keyword3")`, []string{"4"}},
		{`FullTextContainsAny(c.text, "search phrase", "keyword")`, []string{"4"}},
		{`FullTextContainsAny(c.text, "keyword1", "nothing", "keyword9")`, []string{"4"}},
		// The azcosmos suite's query.
		{`FullTextContains(c.title, "search") OR FullTextContains(c.description, "search")`, []string{"1", "3"}},
		// Case folding and stemming, in the text and in the search.
		{`FullTextContains(c.text, "BICYCLES")`, []string{"1", "3"}},
		{`FullTextContains(c.text, "helmet")`, []string{"3"}},
		{`FullTextContains(c.title, "searched")`, []string{"1", "3"}},
		// A phrase's terms must follow one another (stop words aside).
		{`FullTextContains(c.text, "red bicycle")`, []string{"1"}},
		{`FullTextContains(c.text, "bicycle red")`, []string{}},
		{`FullTextContains(c.text, "bicycles for the mountain")`, []string{"1"}},
		// Only stop words, or nothing: found nowhere.
		{`FullTextContains(c.text, "the")`, []string{}},
		{`FullTextContains(c.text, "")`, []string{}},
		{`FullTextContainsAny(c.text, "the", "sale")`, []string{"2"}},
		// Text that is not a string, or missing, contains nothing: false,
		// which NOT turns into true.
		{`NOT FullTextContains(c.text, "red")`, []string{"3", "4", "5"}},
		{`NOT FullTextContains(c.title, "related")`, []string{"1", "3", "4", "5"}},
		{`FullTextContains(c.title, "not")`, []string{}},
		{`FullTextContains(c.nothing, "red") = false`, []string{"1", "2", "3", "4", "5"}},
		// A search string that is not a string: undefined.
		{`IS_DEFINED(FullTextContains(c.text, 1))`, []string{}},
		{`IS_DEFINED(FullTextContainsAny(c.text, "red", null))`, []string{}},
		{`IS_DEFINED(FullTextContainsAll(c.nothing, "red", ["red"]))`, []string{}},
		// Parameters, and any expression as the text.
		{`FullTextContains(c.text, @term)`, []string{"1", "3"}},
		{`FullTextContains(CONCAT(c.title, " ", c.text), "search")`, []string{"1", "3"}},
		{`EXISTS(SELECT VALUE t FROM t IN c.text WHERE FullTextContains(t, "bicycle"))`, []string{"5"}},
	}
	for _, tt := range tests {
		got := ids(t, `SELECT VALUE c.id FROM c WHERE `+tt.where, map[string]any{"@term": "bicycle"}, nil)
		assert.Equal(t, tt.want, got, tt.where)
	}
}

// TestFullTextLanguage: the text is analyzed in the language the
// environment gives for the path of the first argument, when it is a
// property path of the item; en-US otherwise.
func TestFullTextLanguage(t *testing.T) {
	var asked [][]string
	env := &Env{TextLanguage: func(path []string) string {
		asked = append(asked, slices.Clone(path))
		if slices.Equal(path, []string{"de"}) {
			return "de-DE"
		}
		return ""
	}}
	// German is not stemmed: "Fahrräder" is not "Fahrrad".
	assert.Equal(t, []string{"5"}, ids(t, `SELECT VALUE c.id FROM c WHERE FullTextContains(c.de, "FAHRRAD")`, nil, env))
	assert.Equal(t, []string{"4"}, ids(t, `SELECT VALUE c.id FROM c WHERE FullTextContains(c["de"], "fahrräder")`, nil, env))
	assert.Equal(t, []string{}, ids(t, `SELECT VALUE c.id FROM c WHERE FullTextContains(c.de, "auto")`, nil, env))
	assert.Equal(t, []string{"4"}, ids(t, `SELECT VALUE c.id FROM c WHERE FullTextContains(c.de, "auto")`, nil, nil), "English stems")
	// Nor are stop words removed: "die" is found.
	assert.Equal(t, []string{"4"}, ids(t, `SELECT VALUE c.id FROM c WHERE FullTextContains(c.de, "die")`, nil, env))
	assert.Equal(t, [][]string{{"de"}, {"de"}, {"de"}, {"de"}}, asked, "the language is asked once per call and evaluation")

	// English is stemmed; the path is the item's, nested or not.
	asked = nil
	assert.Equal(t, []string{"1", "3"}, ids(t, `SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, "bicycles")`, nil, env))
	assert.Equal(t, []string{"2"}, ids(t, `SELECT VALUE c.id FROM c WHERE FullTextContains(c.a["b"].c, "ray")`, nil, env))
	assert.Equal(t, [][]string{{"text"}, {"a", "b", "c"}}, asked)

	// Not a property path of the item: en-US, and the environment is not
	// asked.
	asked = nil
	ids(t, `SELECT VALUE c.id FROM c WHERE FullTextContains(LOWER(c.de), "x") OR FullTextContains(c.tags[0], "x")`, nil, env)
	ids(t, `SELECT VALUE c.id FROM c JOIN t IN c.text WHERE FullTextContains(t, "x")`, nil, env)
	assert.Empty(t, asked)
}

// TestFullTextArity: the functions take the documented arguments.
func TestFullTextArity(t *testing.T) {
	for _, q := range []string{
		`SELECT * FROM c WHERE FullTextContains(c.text)`,
		`SELECT * FROM c WHERE FullTextContains(c.text, "a", "b")`,
		`SELECT * FROM c WHERE FullTextContainsAll(c.text)`,
		`SELECT * FROM c WHERE FullTextContainsAny()`,
	} {
		_, err := Parse(q)
		var qe *Error
		require.ErrorAs(t, err, &qe, q)
		assert.Contains(t, err.Error(), "takes", q)
	}
}
