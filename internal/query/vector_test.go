package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vecDocs are items with vectors at /v (and /w for some).
var vecDocs = []Doc{
	{ID: "a", JSON: []byte(`{"id":"a","v":[1,0,0]}`)},
	{ID: "b", JSON: []byte(`{"id":"b","v":[0.9,0.1,0]}`)},
	{ID: "c", JSON: []byte(`{"id":"c","v":[0,1,0],"w":[1,2,3]}`)},
	{ID: "d", JSON: []byte(`{"id":"d","v":[-1,0,0]}`)},
	{ID: "e", JSON: []byte(`{"id":"e","v":[2,0,0]}`)},
	{ID: "f", JSON: []byte(`{"id":"f","v":[1,0]}`)},          // another length
	{ID: "g", JSON: []byte(`{"id":"g","v":"not a vector"}`)}, // not a vector
	{ID: "h", JSON: []byte(`{"id":"h"}`)},                    // none
	{ID: "i", JSON: []byte(`{"id":"i","v":[0,0,0]}`)},        // zero: no cosine
	{ID: "j", JSON: []byte(`{"id":"j","v":[1.5,0,-300]}`)},   // not an int8 vector
}

// vecRun runs text over docs with env and returns the results' JSON.
func vecRun(t *testing.T, text string, params map[string]any, docs []Doc, env *Env) []string {
	t.Helper()
	q, err := Parse(text)
	require.NoError(t, err, text)
	res, err := ExecFrom(context.Background(), q, params, docs, testNow, nil, env)
	require.NoError(t, err, text)
	out := []string{}
	for _, it := range res.Items {
		out = append(out, string(it))
	}
	return out
}

func TestVectorDistanceValues(t *testing.T) {
	policy := &Env{Vector: func(path []string) (string, string) {
		if slices.Equal(path, []string{"v"}) {
			return "euclidean", "float32"
		}
		return "", ""
	}}
	tests := []struct {
		expr string
		env  *Env
		want string // the results of SELECT VALUE expr over items a, b, c (undefined: left out)
	}{
		// Cosine by default: 1 for a vector and itself, 0 for orthogonal ones.
		{`VectorDistance(c.v, [1,0,0])`, nil, `[1,0.9938837,0]`},
		{`VectorDistance(c.v, [1,0,0], false)`, nil, `[1,0.9938837,0]`},
		{`VectorDistance(c.v, [1,0,0], true, {"distanceFunction": "dotproduct"})`, nil, `[1,0.9,0]`},
		{`VectorDistance(c.v, [1,0,0], true, {"distanceFunction": "Euclidean"})`, nil, `[0,0.14142138,1.4142135]`},
		// The policy's distance function for the path, the options' first.
		{`VectorDistance(c.v, [1,0,0])`, policy, `[0,0.14142138,1.4142135]`},
		{`VectorDistance([1,0,0], c.v)`, policy, `[0,0.14142138,1.4142135]`},
		{`VectorDistance(c.v, [1,0,0], false, {"distanceFunction": "cosine"})`, policy, `[1,0.9938837,0]`},
		// Element types: float32 rounds (0.9 and 0.1 are not float32 values).
		{`VectorDistance(c.v, [1,0,0], false, {"distanceFunction": "dotproduct", "dataType": "float32"})`, nil, `[1,0.9,0]`},
		{`VectorDistance(c.v, [1,0,0], false, {"distanceFunction": "dotproduct", "dataType": "float16"})`, nil, `[1,0.89990234,0]`},
		{`VectorDistance(c.v, [1,0,0], false, {"distanceFunction": "dotproduct", "dataType": "int8"})`, nil, `[1,0]`},
		{`VectorDistance(c.v, [1,0,0], false, {"distanceFunction": "dotproduct", "dataType": "uint8"})`, nil, `[1,0]`},
		// Not vectors of the same length: undefined.
		{`VectorDistance(c.v, [1,0])`, nil, `[]`},
		{`VectorDistance(c.v, [])`, nil, `[]`},
		{`VectorDistance(c.v, "x")`, nil, `[]`},
		{`VectorDistance(c.v, [1,0,"x"])`, nil, `[]`},
		{`VectorDistance(c.w, [1,2,3])`, nil, `[1]`},
		{`VectorDistance(c.v, c.v)`, nil, `[1,1,1]`},
		{`VectorDistance(c.v, [1,0,-200], false, {"dataType": "int8"})`, nil, `[]`},
		{`VectorDistance(c.v, [1,0,1e39])`, nil, `[]`},
	}
	for _, tc := range tests {
		got := vecRun(t, "SELECT VALUE "+tc.expr+" FROM c", nil, vecDocs[:3], tc.env)
		assert.Equal(t, tc.want, "["+strings.Join(got, ",")+"]", tc.expr)
	}
	// The undefined cases of the items: another length, not a vector, none,
	// a zero vector for cosine, elements that are not int8.
	got := vecRun(t, `SELECT VALUE c.id FROM c WHERE IS_DEFINED(VectorDistance(c.v, [1,0,0]))`, nil, vecDocs, nil)
	assert.Equal(t, []string{`"a"`, `"b"`, `"c"`, `"d"`, `"e"`, `"j"`}, got)
	got = vecRun(t, `SELECT VALUE c.id FROM c WHERE IS_DEFINED(VectorDistance(c.v, [1,0,0], false, {"dataType": "int8"}))`, nil, vecDocs, nil)
	assert.Equal(t, []string{`"a"`, `"c"`, `"d"`, `"e"`}, got)
	got = vecRun(t, `SELECT VALUE c.id FROM c WHERE IS_DEFINED(VectorDistance(c.v, [0,0,0], false, {"distanceFunction": "euclidean"}))`, nil, vecDocs, nil)
	assert.Equal(t, []string{`"a"`, `"b"`, `"c"`, `"d"`, `"e"`, `"i"`, `"j"`}, got)
}

func TestVectorDistanceOrder(t *testing.T) {
	tests := []struct {
		query string
		env   *Env
		want  []string
	}{
		// Most similar first: the highest cosine (ties by item), ...
		{`SELECT VALUE c.id FROM c ORDER BY VectorDistance(c.v, [1,0,0])`, nil, []string{"a", "e", "b", "j", "c", "d", "f", "g", "h", "i"}},
		// ... whatever the direction written, ...
		{`SELECT VALUE c.id FROM c ORDER BY VectorDistance(c.v, [1,0,0]) DESC`, nil, []string{"a", "e", "b", "j", "c", "d", "f", "g", "h", "i"}},
		{`SELECT VALUE c.id FROM c ORDER BY VectorDistance(c.v, [1,0,0]) ASC`, nil, []string{"a", "e", "b", "j", "c", "d", "f", "g", "h", "i"}},
		// ... the highest dot product, ...
		{`SELECT TOP 3 VALUE c.id FROM c ORDER BY VectorDistance(c.v, [1,0,0], false, {"distanceFunction": "dotproduct"})`, nil, []string{"e", "j", "a"}},
		// ... the smallest euclidean distance, the policy's function.
		{`SELECT TOP 3 VALUE c.id FROM c ORDER BY VectorDistance(c.v, [1,0,0], false, {"distanceFunction": "euclidean"})`, nil, []string{"a", "b", "e"}},
		{`SELECT TOP 3 VALUE c.id FROM c ORDER BY VectorDistance(c.v, [1,0,0])`, &Env{Vector: func([]string) (string, string) { return "euclidean", "float32" }}, []string{"a", "b", "e"}},
		// A parameter as the query vector, with a filter and OFFSET LIMIT.
		{`SELECT VALUE c.id FROM c WHERE c.id != "a" ORDER BY VectorDistance(c.v, @q) OFFSET 1 LIMIT 2`, nil, []string{"b", "j"}},
	}
	for _, tc := range tests {
		got := vecRun(t, tc.query, map[string]any{"@q": []float64{1, 0, 0}}, vecDocs, tc.env)
		want := []string{}
		for _, id := range tc.want {
			want = append(want, `"`+id+`"`)
		}
		assert.Equal(t, want, got, tc.query)
	}
	// The documentation's example: the score projected under an alias.
	got := vecRun(t, `SELECT TOP 2 c.id, VectorDistance(c.v, [1,0,0]) AS SimilarityScore FROM c ORDER BY VectorDistance(c.v, [1,0,0])`, nil, vecDocs, nil)
	assert.Equal(t, []string{`{"id":"a","SimilarityScore":1}`, `{"id":"e","SimilarityScore":1}`}, got)
}

func TestVectorDistanceErrors(t *testing.T) {
	tests := []struct{ query, msg string }{
		{`SELECT VALUE VectorDistance(c.v) FROM c`, "VectorDistance"},
		{`SELECT VALUE VectorDistance(c.v, [1], true, {}, 5) FROM c`, "VectorDistance"},
		{`SELECT VALUE VectorDistance(c.v, [1], c.b) FROM c`, "must be constants"},
		{`SELECT VALUE VectorDistance(c.v, [1], true, c.o) FROM c`, "must be constants"},
		{`SELECT VALUE VectorDistance(c.v, [1], 1) FROM c`, "must be a boolean, found 1"},
		{`SELECT VALUE VectorDistance(c.v, [1], true, 3) FROM c`, "must be an object, found 3"},
		{`SELECT VALUE VectorDistance(c.v, [1], true, {"distance": "cosine"}) FROM c`, `no option "distance"`},
		{`SELECT VALUE VectorDistance(c.v, [1], true, {"distanceFunction": "hamming"}) FROM c`, `distanceFunction option of VectorDistance is "hamming"`},
		{`SELECT VALUE VectorDistance(c.v, [1], true, {"dataType": "float64"}) FROM c`, `dataType option of VectorDistance is "float64"`},
		{`SELECT VALUE VectorDistance(c.v, [1], true, {"searchListSizeMultiplier": 0}) FROM c`, "searchListSizeMultiplier option of VectorDistance must be an integer from 1 to 100, found 0"},
		{`SELECT VALUE VectorDistance(c.v, [1], true, {"searchListSizeMultiplier": 101}) FROM c`, "from 1 to 100"},
		{`SELECT VALUE VectorDistance(c.v, [1], true, {"quantizedVectorListMultiplier": 2.5}) FROM c`, "quantizedVectorListMultiplier option of VectorDistance must be an integer"},
		{`SELECT VALUE VectorDistance(c.v, [1], true, {"filterPriority": 2}) FROM c`, "filterPriority option of VectorDistance must be a number from 0 to 1"},
	}
	for _, tc := range tests {
		q, err := Parse(tc.query)
		if err == nil {
			_, err = Exec(context.Background(), q, nil, vecDocs, testNow)
		}
		if assert.Error(t, err, tc.query) {
			assert.Contains(t, err.Error(), tc.msg, tc.query)
		}
	}
	// The documented options are accepted, in any case.
	got := vecRun(t, `SELECT VALUE VectorDistance(c.v, [1,0,0], true, {"searchListSizeMultiplier": 20, "QuantizedVectorListMultiplier": 5, "filterPriority": 0.5, "DISTANCEFUNCTION": "DotProduct", "dataType": "Float32"}) FROM c`, nil, vecDocs[:1], nil)
	assert.Equal(t, []string{"1"}, got)
}

// TestVectorTopKModel compares ORDER BY VectorDistance with TOP k against a
// brute force computed here, over random and clustered vectors with ties,
// for each distance function.
func TestVectorTopKModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 26))
	for round := range 30 {
		dims := 1 + rng.IntN(24)
		n := 1 + rng.IntN(300)
		vecs := make([][]float64, n)
		docs := make([]Doc, n)
		for i := range vecs {
			v := make([]float64, dims)
			for d := range v {
				switch round % 3 {
				case 0: // random
					v[d] = rng.NormFloat64()
				case 1: // clustered around a few centres, with exact duplicates (ties)
					v[d] = float64(i%4) + float64(rng.IntN(3))/2
				default: // small integers: many ties
					v[d] = float64(rng.IntN(3) - 1)
				}
			}
			vecs[i] = v
			js, _ := json.Marshal(map[string]any{"id": fmt.Sprint(i), "v": v})
			docs[i] = Doc{ID: fmt.Sprintf("%05d", i), JSON: js}
		}
		qv := make([]float64, dims)
		for d := range qv {
			qv[d] = rng.NormFloat64()
		}
		if round%3 == 2 {
			qv[0] = 1
		}
		k := 1 + rng.IntN(20)
		for _, fn := range []string{"cosine", "dotproduct", "euclidean"} {
			type scored struct {
				i  int
				s  float64
				ok bool
			}
			ref := make([]scored, n)
			for i, v := range vecs {
				ref[i] = scored{i: i}
				var dot, na, nb, sq float64
				for d := range v {
					x, y := float64(float32(v[d])), float64(float32(qv[d]))
					dot += x * y
					na += x * x
					nb += y * y
					sq += (x - y) * (x - y)
				}
				switch fn {
				case "cosine":
					ref[i].s, ref[i].ok = -dot/(math.Sqrt(na)*math.Sqrt(nb)), na != 0
				case "dotproduct":
					ref[i].s, ref[i].ok = -dot, true
				default:
					ref[i].s, ref[i].ok = math.Sqrt(sq), true
				}
			}
			for i := range ref {
				ref[i].s = float64(float32(ref[i].s))
			}
			slices.SortStableFunc(ref, func(a, b scored) int {
				if a.ok != b.ok {
					if a.ok {
						return -1
					}
					return 1
				}
				if a.s != b.s {
					if a.s < b.s {
						return -1
					}
					return 1
				}
				return a.i - b.i
			})
			want := []string{}
			for _, r := range ref[:min(k, n)] {
				want = append(want, fmt.Sprintf(`"%d"`, r.i))
			}
			q := fmt.Sprintf(`SELECT TOP %d VALUE c.id FROM c ORDER BY VectorDistance(c.v, @q, true, {"distanceFunction": %q})`, k, fn)
			got := vecRun(t, q, map[string]any{"@q": qv}, docs, nil)
			require.Equal(t, want, got, "round %d: %s", round, q)
		}
	}
}

// TestReadNumber: the fast reading of numbers gives what strconv gives,
// and refuses what JSON refuses.
func TestReadNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-1", "0.1", "-0.123456789", "123456789012345", "1234567890123456789", "1e22", "1e23", "1.5e-22",
		"1e-400", "1e308", "0.000001", "3.4028235e38", "1.17549435e-38", "5e-324", "12.5E+3", "-7e-1", "0.30000000000000004", "9007199254740993"} {
		want, _ := strconv.ParseFloat(s, 64)
		got, end, ok := readNumber([]byte(s+"]"), 0)
		if !ok || end != len(s) || got != want || math.Signbit(got) != math.Signbit(want) {
			t.Errorf("readNumber(%q) = %v, %d, %v; want %v", s, got, end, ok, want)
		}
	}
	for _, s := range []string{"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "--1", "x"} {
		if _, _, ok := readNumber([]byte(s), 0); ok {
			t.Errorf("readNumber(%q) accepted", s)
		}
	}
}
