package query

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func init() { recoverPanics = false }

var testNow = time.Date(2026, 11, 21, 21, 56, 40, 123456700, time.UTC)

const andersen = `{
  "id": "AndersenFamily",
  "lastName": "Andersen",
  "parents": [
     { "firstName": "Thomas" },
     { "firstName": "Mary Kay"}
  ],
  "children": [
     {
         "firstName": "Henriette Thaulow",
         "gender": "female",
         "grade": 5,
         "pets": [{ "givenName": "Fluffy" }]
     }
  ],
  "address": { "state": "WA", "county": "King", "city": "Seattle" },
  "creationDate": 1431620472,
  "isRegistered": true
}`

const wakefield = `{
  "id": "WakefieldFamily",
  "parents": [
      { "familyName": "Wakefield", "givenName": "Robin" },
      { "familyName": "Miller", "givenName": "Ben" }
  ],
  "children": [
      {
        "familyName": "Merriam",
        "givenName": "Jesse",
        "gender": "female",
        "grade": 1,
        "pets": [
            { "givenName": "Goofy" },
            { "givenName": "Shadow" }
        ]
      },
      {
        "familyName": "Miller",
         "givenName": "Lisa",
         "gender": "female",
         "grade": 8 }
  ],
  "address": { "state": "NY", "county": "Manhattan", "city": "NY" },
  "creationDate": 1431620462,
  "isRegistered": false
}`

// families are the sample documents of the Cosmos DB query documentation,
// deliberately out of id order.
var families = []Doc{
	{ID: "WakefieldFamily", JSON: []byte(wakefield)},
	{ID: "AndersenFamily", JSON: []byte(andersen)},
}

// mixed are small documents with values of every type.
var mixed = []Doc{
	{ID: "d5", JSON: []byte(`{"id":"d5","v":"b","n":5,"tags":["x","y"],"o":{"a":1,"b":[1,2]}}`)},
	{ID: "d1", JSON: []byte(`{"id":"d1","v":1,"n":1,"tags":["x"],"o":{"b":[1,2],"a":1}}`)},
	{ID: "d3", JSON: []byte(`{"id":"d3","v":null,"n":3,"tags":[]}`)},
	{ID: "d2", JSON: []byte(`{"id":"d2","v":true,"n":2,"s":"hello"}`)},
	{ID: "d7", JSON: []byte(`{"id":"d7","v":[1],"n":7}`)},
	{ID: "d4", JSON: []byte(`{"id":"d4","v":"a","n":4,"tags":["y"]}`)},
	{ID: "d6", JSON: []byte(`{"id":"d6","n":6}`)},
	{ID: "d8", JSON: []byte(`{"id":"d8","v":{"k":1},"n":8}`)},
	{ID: "d0", JSON: []byte(`{"id":"d0","v":false,"n":0}`)},
	{ID: "d9", JSON: []byte(`{"id":"d9","v":0.5,"n":9}`)},
}

// run parses and executes text and returns the items as one JSON array.
func run(t testing.TB, text string, params map[string]any, docs []Doc) (string, error) {
	t.Helper()
	q, err := Parse(text)
	if err != nil {
		return "", err
	}
	r, err := Exec(context.Background(), q, params, docs, testNow)
	if err != nil {
		return "", err
	}
	parts := make([]string, len(r.Items))
	for i, it := range r.Items {
		if !json.Valid(it) {
			t.Fatalf("%s: invalid JSON result %q", text, it)
		}
		parts[i] = string(it)
	}
	return "[" + strings.Join(parts, ",") + "]", nil
}

// compact removes insignificant whitespace from JSON text.
func compact(t testing.TB, s string) string {
	t.Helper()
	var b strings.Builder
	inStr, esc := false, false
	for _, r := range s {
		switch {
		case inStr:
			b.WriteRune(r)
			if esc {
				esc = false
			} else if r == '\\' {
				esc = true
			} else if r == '"' {
				inStr = false
			}
		case r == '"':
			inStr = true
			b.WriteRune(r)
		case r == ' ' || r == '\n' || r == '\t' || r == '\r':
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// stopsAtDeadline checks that evaluating text on docs, work that takes far
// longer than 20 ms, stops with the context's error soon after its 20 ms
// deadline.
func stopsAtDeadline(t *testing.T, text string, docs []Doc) {
	t.Helper()
	q, err := Parse(text)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Exec(ctx, q, nil, docs, testNow)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second)
}

// checkKeys checks that the keys of res's results survive an encoding round
// trip and follow the order of the results, strictly.
func checkKeys(t *testing.T, q *Query, res *Result) {
	t.Helper()
	for i := range res.Items {
		k := res.Key(i)
		back, ok := ParseKey(k.AppendBinary(nil))
		require.True(t, ok)
		assert.Zero(t, q.compareKeys(k, back))
		if i > 0 {
			assert.Negative(t, q.compareKeys(res.Key(i-1), k), "keys follow the order of the results")
		}
	}
}
