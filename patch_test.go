package lethe_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// canonical decodes a stored item and encodes it again without _ts and
// _etag, with its members sorted: two items with the same content compare
// equal.
func canonical(t testing.TB, item []byte) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(item, &m), "%s", item)
	delete(m, "_ts")
	delete(m, "_etag")
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

// canon is canonical for a literal document.
func canon(t testing.TB, doc string) string { return canonical(t, []byte(doc)) }

// patchBase is the item most patch cases start from.
const patchBase = `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`

// patchCase is one patch of an item: the patch, and either the item it
// leaves (want) or the status it fails with.
type patchCase struct {
	name   string
	doc    string // the item before ("" for patchBase)
	ops    func(p *lethe.PatchOperations)
	want   string
	status int
}

// runPatchCases runs each case on a fresh item and checks the result; a
// failed patch must leave the item as it was, ETag included.
func runPatchCases(t *testing.T, cases []patchCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newContainer(t, lethe.TTLOff)
			doc := tc.doc
			if doc == "" {
				doc = patchBase
			}
			before := create(t, c, doc)
			var ops lethe.PatchOperations
			tc.ops(&ops)
			resp, err := c.PatchItem(ctx, lethe.NewPartitionKey(), "x", ops, nil)
			after, rerr := c.ReadItem(ctx, lethe.NewPartitionKey(), "x", nil)
			require.NoError(t, rerr)
			if tc.status != 0 {
				require.Error(t, err)
				assert.Equal(t, tc.status, status(err), "%v", err)
				assert.Equal(t, string(before.Value), string(after.Value), "a failed patch changed the item")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, http200, resp.StatusCode)
			assert.Equal(t, canon(t, tc.want), canonical(t, resp.Value))
			assert.Equal(t, string(resp.Value), string(after.Value))
			assert.NotEqual(t, before.ETag, resp.ETag)
			assert.Equal(t, resp.ETag, after.ETag)
		})
	}
}

const http200 = 200

func TestPatchAdd(t *testing.T) {
	t.Parallel()
	runPatchCases(t, []patchCase{
		{name: "new member", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/b", "v") },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null,"b":"v"}`},
		{name: "existing member replaced", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/a", []int{7}) },
			want: `{"id":"x","a":[7],"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "nested member", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/o/p/r", 2) },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true,"r":2}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "into empty object", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/eo/k", map[string]any{"z": nil}) },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{"k":{"z":null}},"n":null}`},
		{name: "insert at 0", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/arr/0", 9) },
			want: `{"id":"x","a":1,"arr":[9,1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "insert in the middle", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/arr/2", 9) },
			want: `{"id":"x","a":1,"arr":[1,2,9,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "index equal to length appends", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/arr/3", 9) },
			want: `{"id":"x","a":1,"arr":[1,2,3,9],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "dash appends", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/arr/-", 9) },
			want: `{"id":"x","a":1,"arr":[1,2,3,9],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "dash on empty array", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/e/-", "v") },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":["v"],"eo":{},"n":null}`},
		{name: "index 0 of empty array", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/e/0", "v") },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":["v"],"eo":{},"n":null}`},
		{name: "member of an object in an array", doc: `{"id":"x","l":[{"a":1},{"b":2}]}`,
			ops:  func(p *lethe.PatchOperations) { p.AppendAdd("/l/1/c", 3) },
			want: `{"id":"x","l":[{"a":1},{"b":2,"c":3}]}`},
		{name: "over null", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/n", 1) },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":1}`},
		{name: "index past the length", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/arr/4", 9) }, status: 400},
		{name: "leading zero index", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/arr/01", 9) }, status: 400},
		{name: "non-numeric index", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/arr/x", 9) }, status: 400},
		{name: "negative index", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/arr/-1", 9) }, status: 400},
		{name: "missing parent", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/nope/child", 1) }, status: 400},
		{name: "missing grandparent", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/o/nope/child", 1) }, status: 400},
		{name: "parent is a string", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/s/child", 1) }, status: 400},
		{name: "parent is a number element", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/arr/1/x", 1) }, status: 400},
		{name: "parent is null", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/n/x", 1) }, status: 400},
		{name: "through a missing element", ops: func(p *lethe.PatchOperations) { p.AppendAdd("/arr/5/x", 1) }, status: 400},
	})
}

func TestPatchSet(t *testing.T) {
	t.Parallel()
	runPatchCases(t, []patchCase{
		{name: "new member", ops: func(p *lethe.PatchOperations) { p.AppendSet("/b", true) },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null,"b":true}`},
		{name: "existing member", ops: func(p *lethe.PatchOperations) { p.AppendSet("/s", "new") },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"new","e":[],"eo":{},"n":null}`},
		{name: "array element replaced, not inserted", ops: func(p *lethe.PatchOperations) { p.AppendSet("/arr/1", 9) },
			want: `{"id":"x","a":1,"arr":[1,9,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "last element", ops: func(p *lethe.PatchOperations) { p.AppendSet("/arr/2", nil) },
			want: `{"id":"x","a":1,"arr":[1,2,null],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "whole array", ops: func(p *lethe.PatchOperations) { p.AppendSet("/arr", []string{}) },
			want: `{"id":"x","a":1,"arr":[],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "index equal to length", ops: func(p *lethe.PatchOperations) { p.AppendSet("/arr/3", 9) }, status: 400},
		{name: "dash", ops: func(p *lethe.PatchOperations) { p.AppendSet("/arr/-", 9) }, status: 400},
		{name: "empty array", ops: func(p *lethe.PatchOperations) { p.AppendSet("/e/0", 9) }, status: 400},
		{name: "missing parent", ops: func(p *lethe.PatchOperations) { p.AppendSet("/nope/x", 9) }, status: 400},
	})
}

func TestPatchReplace(t *testing.T) {
	t.Parallel()
	runPatchCases(t, []patchCase{
		{name: "member", ops: func(p *lethe.PatchOperations) { p.AppendReplace("/a", 2.5) },
			want: `{"id":"x","a":2.5,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "object by scalar", ops: func(p *lethe.PatchOperations) { p.AppendReplace("/o/p", "flat") },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":"flat"},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "array element", ops: func(p *lethe.PatchOperations) { p.AppendReplace("/arr/0", "z") },
			want: `{"id":"x","a":1,"arr":["z",2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "null value", ops: func(p *lethe.PatchOperations) { p.AppendReplace("/n", false) },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":false}`},
		{name: "missing member", ops: func(p *lethe.PatchOperations) { p.AppendReplace("/b", 1) }, status: 400},
		{name: "missing nested member", ops: func(p *lethe.PatchOperations) { p.AppendReplace("/o/p/r", 1) }, status: 400},
		{name: "index at length", ops: func(p *lethe.PatchOperations) { p.AppendReplace("/arr/3", 1) }, status: 400},
		{name: "dash", ops: func(p *lethe.PatchOperations) { p.AppendReplace("/arr/-", 1) }, status: 400},
		{name: "missing parent", ops: func(p *lethe.PatchOperations) { p.AppendReplace("/nope/x", 1) }, status: 400},
	})
}

func TestPatchRemove(t *testing.T) {
	t.Parallel()
	runPatchCases(t, []patchCase{
		{name: "member", ops: func(p *lethe.PatchOperations) { p.AppendRemove("/a") },
			want: `{"id":"x","arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "last member", ops: func(p *lethe.PatchOperations) { p.AppendRemove("/n") },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{}}`},
		{name: "only member of nested object", ops: func(p *lethe.PatchOperations) { p.AppendRemove("/o/p/q") },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "first element shifts the rest", ops: func(p *lethe.PatchOperations) { p.AppendRemove("/arr/0") },
			want: `{"id":"x","a":1,"arr":[2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "middle element", ops: func(p *lethe.PatchOperations) { p.AppendRemove("/arr/1") },
			want: `{"id":"x","a":1,"arr":[1,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "last element", ops: func(p *lethe.PatchOperations) { p.AppendRemove("/arr/2") },
			want: `{"id":"x","a":1,"arr":[1,2],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "only element", doc: `{"id":"x","l":[ {"a" : 1} ]}`, ops: func(p *lethe.PatchOperations) { p.AppendRemove("/l/0") },
			want: `{"id":"x","l":[]}`},
		{name: "missing member", ops: func(p *lethe.PatchOperations) { p.AppendRemove("/b") }, status: 400},
		{name: "index at length", ops: func(p *lethe.PatchOperations) { p.AppendRemove("/arr/3") }, status: 400},
		{name: "dash", ops: func(p *lethe.PatchOperations) { p.AppendRemove("/arr/-") }, status: 400},
		{name: "empty object", ops: func(p *lethe.PatchOperations) { p.AppendRemove("/eo/x") }, status: 400},
		{name: "missing parent", ops: func(p *lethe.PatchOperations) { p.AppendRemove("/nope/x") }, status: 400},
	})
}

func TestPatchIncrement(t *testing.T) {
	t.Parallel()
	runPatchCases(t, []patchCase{
		{name: "integer", ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/a", 41) },
			want: `{"id":"x","a":42,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "negative", ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/a", -3) },
			want: `{"id":"x","a":-2,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "missing member created", ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/o/count", 5) },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true},"count":5},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "array element", ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/arr/2", 10) },
			want: `{"id":"x","a":1,"arr":[1,2,13],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "float", ops: func(p *lethe.PatchOperations) { p.AppendIncrementFloat("/a", 0.5) },
			want: `{"id":"x","a":1.5,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "integer to a fraction", doc: `{"id":"x","f":2.25}`, ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/f", 1) },
			want: `{"id":"x","f":3.25}`},
		{name: "exponent spelling", doc: `{"id":"x","f":1e2}`, ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/f", 1) },
			want: `{"id":"x","f":101}`},
		{name: "beyond int64 becomes a double", doc: `{"id":"x","f":9223372036854775807}`, ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/f", 1) },
			want: `{"id":"x","f":9223372036854775808}`},
		{name: "string", ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/s", 1) }, status: 400},
		{name: "null", ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/n", 1) }, status: 400},
		{name: "object", ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/o", 1) }, status: 400},
		{name: "boolean", ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/o/p/q", 1) }, status: 400},
		{name: "missing element", ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/arr/3", 1) }, status: 400},
		{name: "dash", ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/arr/-", 1) }, status: 400},
		{name: "infinite sum", doc: `{"id":"x","f":1.7e308}`, ops: func(p *lethe.PatchOperations) { p.AppendIncrementFloat("/f", 1.7e308) }, status: 400},
		{name: "NaN amount", ops: func(p *lethe.PatchOperations) { p.AppendIncrementFloat("/a", math.NaN()) }, status: 400},
	})
}

func TestPatchMove(t *testing.T) {
	t.Parallel()
	runPatchCases(t, []patchCase{
		{name: "rename", ops: func(p *lethe.PatchOperations) { p.AppendMove("/a", "/b") },
			want: `{"id":"x","b":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "onto an existing member", ops: func(p *lethe.PatchOperations) { p.AppendMove("/s", "/o/p/q") },
			want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":"str"}},"e":[],"eo":{},"n":null}`},
		{name: "object into another", ops: func(p *lethe.PatchOperations) { p.AppendMove("/o", "/eo/moved") },
			want: `{"id":"x","a":1,"arr":[1,2,3],"s":"str","e":[],"eo":{"moved":{"p":{"q":true}}},"n":null}`},
		{name: "element to the end", ops: func(p *lethe.PatchOperations) { p.AppendMove("/arr/0", "/arr/-") },
			want: `{"id":"x","a":1,"arr":[2,3,1],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "element by index, after the removal", ops: func(p *lethe.PatchOperations) { p.AppendMove("/arr/0", "/arr/2") },
			want: `{"id":"x","a":1,"arr":[2,3,1],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "element into another array", ops: func(p *lethe.PatchOperations) { p.AppendMove("/arr/1", "/e/0") },
			want: `{"id":"x","a":1,"arr":[1,3],"o":{"p":{"q":true}},"s":"str","e":[2],"eo":{},"n":null}`},
		{name: "onto itself", ops: func(p *lethe.PatchOperations) { p.AppendMove("/a", "/a") },
			want: patchBase},
		{name: "missing source", ops: func(p *lethe.PatchOperations) { p.AppendMove("/nope", "/b") }, status: 400},
		{name: "missing element", ops: func(p *lethe.PatchOperations) { p.AppendMove("/arr/3", "/b") }, status: 400},
		{name: "dash source", ops: func(p *lethe.PatchOperations) { p.AppendMove("/arr/-", "/b") }, status: 400},
		{name: "into itself", ops: func(p *lethe.PatchOperations) { p.AppendMove("/o", "/o/p/moved") }, status: 400},
		{name: "missing target parent", ops: func(p *lethe.PatchOperations) { p.AppendMove("/a", "/nope/b") }, status: 400},
		{name: "target index past the end after the removal", ops: func(p *lethe.PatchOperations) { p.AppendMove("/arr/0", "/arr/3") }, status: 400},
	})
}

func TestPatchPaths(t *testing.T) {
	t.Parallel()
	const doc = `{"id":"x","a/b":1,"m~n":2,"~1":3,"\u0063d":4,"":5,"ünï":6,"o":{"":{"x":1}}}`
	runPatchCases(t, []patchCase{
		{name: "~1 is a slash", doc: doc, ops: func(p *lethe.PatchOperations) { p.AppendReplace("/a~1b", 10) },
			want: `{"id":"x","a/b":10,"m~n":2,"~1":3,"cd":4,"":5,"ünï":6,"o":{"":{"x":1}}}`},
		{name: "~0 is a tilde", doc: doc, ops: func(p *lethe.PatchOperations) { p.AppendReplace("/m~0n", 20) },
			want: `{"id":"x","a/b":1,"m~n":20,"~1":3,"cd":4,"":5,"ünï":6,"o":{"":{"x":1}}}`},
		{name: "~01 is a tilde and a one", doc: doc, ops: func(p *lethe.PatchOperations) { p.AppendRemove("/~01") },
			want: `{"id":"x","a/b":1,"m~n":2,"cd":4,"":5,"ünï":6,"o":{"":{"x":1}}}`},
		{name: "new member with escapes", doc: doc, ops: func(p *lethe.PatchOperations) { p.AppendAdd("/c~1d~0e", `"quoted"`) },
			want: `{"id":"x","a/b":1,"m~n":2,"~1":3,"cd":4,"":5,"ünï":6,"o":{"":{"x":1}},"c/d~e":"\"quoted\""}`},
		{name: "name escaped in the item", doc: doc, ops: func(p *lethe.PatchOperations) { p.AppendIncrement("/cd", 1) },
			want: `{"id":"x","a/b":1,"m~n":2,"~1":3,"cd":5,"":5,"ünï":6,"o":{"":{"x":1}}}`},
		{name: "empty name", doc: doc, ops: func(p *lethe.PatchOperations) { p.AppendRemove("/") },
			want: `{"id":"x","a/b":1,"m~n":2,"~1":3,"cd":4,"ünï":6,"o":{"":{"x":1}}}`},
		{name: "empty names on the way", doc: doc, ops: func(p *lethe.PatchOperations) { p.AppendSet("/o//x", 2) },
			want: `{"id":"x","a/b":1,"m~n":2,"~1":3,"cd":4,"":5,"ünï":6,"o":{"":{"x":2}}}`},
		{name: "unicode name", doc: doc, ops: func(p *lethe.PatchOperations) { p.AppendReplace("/ünï", "é\n\x01\"\\") },
			want: `{"id":"x","a/b":1,"m~n":2,"~1":3,"cd":4,"":5,"ünï":"é\n\u0001\"\\","o":{"":{"x":1}}}`},
		{name: "the unescaped name is no match", doc: doc, ops: func(p *lethe.PatchOperations) { p.AppendReplace("/a/b", 1) }, status: 400},
		{name: "no leading slash", ops: func(p *lethe.PatchOperations) { p.AppendSet("a", 1) }, status: 400},
		{name: "empty path", ops: func(p *lethe.PatchOperations) { p.AppendSet("", 1) }, status: 400},
		{name: "bad escape", ops: func(p *lethe.PatchOperations) { p.AppendSet("/a~2", 1) }, status: 400},
		{name: "trailing tilde", ops: func(p *lethe.PatchOperations) { p.AppendSet("/a~", 1) }, status: 400},
		{name: "not UTF-8", ops: func(p *lethe.PatchOperations) { p.AppendSet("/a\xff", 1) }, status: 400},
		{name: "bad move source", ops: func(p *lethe.PatchOperations) { p.AppendMove("a", "/b") }, status: 400},
	})
}

func TestPatchValues(t *testing.T) {
	t.Parallel()
	type point struct {
		X, Y int
		Tag  string `json:"tag,omitempty"`
	}
	runPatchCases(t, []patchCase{
		{name: "kinds", ops: func(p *lethe.PatchOperations) {
			p.AppendSet("/i8", int8(-8))
			p.AppendSet("/u64", uint64(math.MaxUint64))
			p.AppendSet("/f32", float32(0.5))
			p.AppendSet("/tiny", 1e-9)
			p.AppendSet("/struct", point{X: 1, Y: 2})
			p.AppendSet("/raw", json.RawMessage(` {"k": [1, 2]} `))
			p.AppendSet("/map", map[string]any{"b": []any{true, nil, "s"}})
			p.AppendSet("/bytes", []byte("hi"))
		}, want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null,` +
			`"i8":-8,"u64":18446744073709551615,"f32":0.5,"tiny":1e-9,"struct":{"X":1,"Y":2},"raw":{"k":[1,2]},"map":{"b":[true,null,"s"]},"bytes":"aGk="}`},
		{name: "invalid raw JSON", ops: func(p *lethe.PatchOperations) { p.AppendSet("/b", json.RawMessage(`{`)) }, status: 400},
		{name: "duplicate names in raw JSON", ops: func(p *lethe.PatchOperations) { p.AppendSet("/b", json.RawMessage(`{"k":1,"k":2}`)) }, status: 400},
		{name: "NaN", ops: func(p *lethe.PatchOperations) { p.AppendSet("/b", math.Inf(1)) }, status: 400},
		{name: "not encodable", ops: func(p *lethe.PatchOperations) { p.AppendSet("/b", make(chan int)) }, status: 400},
		{name: "too deep", ops: func(p *lethe.PatchOperations) {
			p.AppendSet("/b", json.RawMessage(strings.Repeat("[", lethe.MaxDepth)+strings.Repeat("]", lethe.MaxDepth)))
		}, status: 400},
		{name: "deep enough", ops: func(p *lethe.PatchOperations) {
			p.AppendSet("/b", json.RawMessage(strings.Repeat("[", lethe.MaxDepth-1)+strings.Repeat("]", lethe.MaxDepth-1)))
		}, want: `{"id":"x","a":1,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null,"b":` +
			strings.Repeat("[", lethe.MaxDepth-1) + strings.Repeat("]", lethe.MaxDepth-1) + `}`},
		{name: "deep by its place", ops: func(p *lethe.PatchOperations) {
			p.AppendSet("/o/p/q", json.RawMessage(strings.Repeat("[", lethe.MaxDepth-2)+strings.Repeat("]", lethe.MaxDepth-2)))
		}, status: 400},
		{name: "over 2 MB", ops: func(p *lethe.PatchOperations) { p.AppendSet("/big", strings.Repeat("x", lethe.MaxItemSize)) }, status: 413},
	})
}

// TestPatchSequence: the operations apply in order, each to the result of
// the one before, and the first that fails undoes them all.
func TestPatchSequence(t *testing.T) {
	t.Parallel()
	runPatchCases(t, []patchCase{
		{name: "later operations see earlier ones", ops: func(p *lethe.PatchOperations) {
			p.AppendAdd("/counter", 1)
			p.AppendIncrement("/counter", 2)
			p.AppendMove("/counter", "/arr/0")
			p.AppendRemove("/arr/3")
			p.AppendAdd("/o/p/list", []int{})
			p.AppendAdd("/o/p/list/-", "a")
			p.AppendAdd("/o/p/list/0", "b")
			p.AppendReplace("/o/p/list/1", "c")
		}, want: `{"id":"x","a":1,"arr":[3,1,2],"o":{"p":{"q":true,"list":["b","c"]}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "all or none", ops: func(p *lethe.PatchOperations) {
			p.AppendSet("/a", 100)
			p.AppendRemove("/s")
			p.AppendReplace("/missing", 1)
		}, status: 400},
		{name: "ten operations", ops: func(p *lethe.PatchOperations) {
			for range lethe.MaxPatchOperations {
				p.AppendIncrement("/a", 1)
			}
		}, want: `{"id":"x","a":11,"arr":[1,2,3],"o":{"p":{"q":true}},"s":"str","e":[],"eo":{},"n":null}`},
		{name: "eleven operations", ops: func(p *lethe.PatchOperations) {
			for range lethe.MaxPatchOperations + 1 {
				p.AppendIncrement("/a", 1)
			}
		}, status: 400},
		{name: "no operations", ops: func(p *lethe.PatchOperations) {}, status: 400},
	})
}

// TestPatchCopies: a PatchOperations is a value, and values are encoded
// when appended.
func TestPatchCopies(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	create(t, c, `{"id":"x"}`)
	m := map[string]any{"k": 1}
	var p lethe.PatchOperations
	p.AppendSet("/m", m)
	q := p
	q.AppendSet("/other", 1)
	m["k"] = 2
	r, err := c.PatchItem(ctx, lethe.NewPartitionKey(), "x", p, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"id":"x","m":{"k":1}}`, canonical(t, r.Value))
}

func TestPatchSystemProperties(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/id", "/_ts", "/_etag", "/_rid", "/_self", "/_attachments", "/id/x"} {
		for name, op := range map[string]func(p *lethe.PatchOperations){
			"add":       func(p *lethe.PatchOperations) { p.AppendAdd(path, "v") },
			"set":       func(p *lethe.PatchOperations) { p.AppendSet(path, "v") },
			"replace":   func(p *lethe.PatchOperations) { p.AppendReplace(path, "v") },
			"remove":    func(p *lethe.PatchOperations) { p.AppendRemove(path) },
			"increment": func(p *lethe.PatchOperations) { p.AppendIncrement(path, 1) },
			"move from": func(p *lethe.PatchOperations) { p.AppendMove(path, "/b") },
			"move to":   func(p *lethe.PatchOperations) { p.AppendMove("/a", path) },
		} {
			runPatchCases(t, []patchCase{{name: name + " " + path, ops: op, status: 400}})
		}
	}
	// The same names below the top level are ordinary.
	runPatchCases(t, []patchCase{{name: "nested id", doc: `{"id":"x","o":{"id":1,"_ts":2}}`,
		ops:  func(p *lethe.PatchOperations) { p.AppendSet("/o/id", 2); p.AppendRemove("/o/_ts") },
		want: `{"id":"x","o":{"id":2}}`}})
}

func TestPatchPartitionKeyPaths(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c",
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/tenant", "/a/b"}}})
	pk := lethe.NewPartitionKeyString("t1").AppendString("v")
	_, err := c.CreateItem(ctx, pk, []byte(`{"id":"x","tenant":"t1","a":{"b":"v","c":1}}`), nil)
	require.NoError(t, err)
	for _, path := range []string{"/tenant", "/a", "/a/b", "/a/b/c", "/tenant/x"} {
		var p lethe.PatchOperations
		p.AppendSet(path, "other")
		_, err := c.PatchItem(ctx, pk, "x", p, nil)
		assert.Equal(t, 400, status(err), "%s: %v", path, err)
		var m lethe.PatchOperations
		m.AppendMove(path, "/moved")
		_, err = c.PatchItem(ctx, pk, "x", m, nil)
		assert.Equal(t, 400, status(err), "move from %s: %v", path, err)
	}
	var p lethe.PatchOperations
	p.AppendIncrement("/a/c", 1)
	p.AppendSet("/ab", 1)
	p.AppendSet("/tenants", 1)
	r, err := c.PatchItem(ctx, pk, "x", p, nil)
	require.NoError(t, err)
	assert.Equal(t, canon(t, `{"id":"x","tenant":"t1","a":{"b":"v","c":2},"ab":1,"tenants":1}`), canonical(t, r.Value))

	// The wrong partition, or a bad key, is a miss or a 400.
	_, err = c.PatchItem(ctx, lethe.NewPartitionKeyString("t2").AppendString("v"), "x", p, nil)
	assert.Equal(t, 404, status(err))
	_, err = c.PatchItem(ctx, lethe.NewPartitionKeyString("t1"), "x", p, nil)
	assert.Equal(t, 400, status(err))
}

func TestPatchCondition(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	before := create(t, c, `{"id":"x","n":3,"tags":["a"]}`)
	patch := func(cond string) (lethe.ItemResponse, error) {
		var p lethe.PatchOperations
		p.AppendIncrement("/n", 1)
		p.SetCondition(cond)
		return c.PatchItem(ctx, lethe.NewPartitionKey(), "x", p, nil)
	}
	for _, cond := range []string{"FROM c WHERE c.n > 3", "from c where c.missing = 1", "FROM c WHERE c.n = '3'", "FROM c JOIN t IN c.tags WHERE t = 'b'"} {
		_, err := patch(cond)
		assert.ErrorIs(t, err, lethe.ErrPreconditionFailed, cond)
	}
	for _, cond := range []string{"SELECT * FROM c", "WHERE c.n = 3", "FROM c WHERE", "FROM c WHERE c.n = @n", "FROM c WHERE c.n = 3 ORDER BY"} {
		_, err := patch(cond)
		assert.ErrorIs(t, err, lethe.ErrBadRequest, cond)
	}
	r, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "x", nil)
	require.NoError(t, err)
	assert.Equal(t, before.ETag, r.ETag, "failed conditions changed the item")

	// The condition is evaluated on the item before the patch.
	r, err = patch("FROM c WHERE c.n = 3 AND ARRAY_CONTAINS(c.tags, 'a')")
	require.NoError(t, err)
	assert.Equal(t, `{"id":"x","n":4,"tags":["a"]}`, canonical(t, r.Value))
	r, err = patch("  FROM root r WHERE r.n >= 4")
	require.NoError(t, err)
	assert.Equal(t, `{"id":"x","n":5,"tags":["a"]}`, canonical(t, r.Value))
	_, err = patch("FROM c WHERE c.n = 4")
	assert.ErrorIs(t, err, lethe.ErrPreconditionFailed)

	// A bad condition names its place in the condition itself.
	_, err = patch("FROM c WHER c.n = 4")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1:8")
}

func TestPatchIfMatch(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	first := create(t, c, `{"id":"x","n":1}`)
	var p lethe.PatchOperations
	p.AppendIncrement("/n", 1)
	_, err := c.PatchItem(ctx, lethe.NewPartitionKey(), "x", p, &lethe.ItemOptions{IfMatchEtag: "0000000000000000"})
	assert.ErrorIs(t, err, lethe.ErrPreconditionFailed)
	r, err := c.PatchItem(ctx, lethe.NewPartitionKey(), "x", p, &lethe.ItemOptions{IfMatchEtag: `"` + first.ETag + `"`})
	require.NoError(t, err)
	_, err = c.PatchItem(ctx, lethe.NewPartitionKey(), "x", p, &lethe.ItemOptions{IfMatchEtag: first.ETag})
	assert.ErrorIs(t, err, lethe.ErrPreconditionFailed, "the old ETag no longer matches")
	r2, err := c.PatchItem(ctx, lethe.NewPartitionKey(), "x", p, &lethe.ItemOptions{IfMatchEtag: r.ETag, NoContentResponseOnWrite: true})
	require.NoError(t, err)
	assert.Nil(t, r2.Value)
	assert.NotEmpty(t, r2.ETag)
	got, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "x", nil)
	require.NoError(t, err)
	assert.Equal(t, `{"id":"x","n":3}`, canonical(t, got.Value))
	assert.Equal(t, r2.ETag, got.ETag)
}

// TestPatchTTL: a patch is a write: it restarts the countdown, sets or
// removes the item's own ttl (validated as any ttl), and never revives an
// expired item.
func TestPatchTTL(t *testing.T) {
	t.Parallel()
	c, clock := newContainer(t, 100)
	pk := lethe.NewPartitionKey()
	create(t, c, `{"id":"x","n":0}`)
	touch := func() error {
		var p lethe.PatchOperations
		p.AppendIncrement("/n", 1)
		_, err := c.PatchItem(ctx, pk, "x", p, nil)
		return err
	}

	// Any patch restarts the countdown from now, and _ts follows.
	clock.Advance(90 * time.Second)
	require.NoError(t, touch())
	clock.Advance(90 * time.Second)
	assert.True(t, exists(t, c, "x"), "the patch restarted the countdown")
	r, err := c.ReadItem(ctx, pk, "x", nil)
	require.NoError(t, err)
	var ts struct{ Ts int64 }
	require.NoError(t, jsonField(string(r.Value), "_ts", &ts.Ts))
	assert.Equal(t, t0.Add(90*time.Second).Unix(), ts.Ts)

	// Its own ttl, patched in.
	var p lethe.PatchOperations
	p.AppendSet("/ttl", 10)
	_, err = c.PatchItem(ctx, pk, "x", p, nil)
	require.NoError(t, err)
	clock.Advance(10*time.Second - time.Nanosecond)
	assert.True(t, exists(t, c, "x"))
	clock.Advance(time.Nanosecond)
	assert.False(t, exists(t, c, "x"), "expired 10 s after the patch")
	assert.ErrorIs(t, touch(), lethe.ErrNotFound, "an expired item cannot be patched")
	assert.False(t, exists(t, c, "x"))

	// Invalid ttls are refused and change nothing.
	before := create(t, c, `{"id":"x","ttl":5}`)
	for _, v := range []any{0, -2, 1.5, "10", int64(math.MaxInt32) + 1, true} {
		var p lethe.PatchOperations
		p.AppendReplace("/ttl", v)
		_, err := c.PatchItem(ctx, pk, "x", p, nil)
		assert.ErrorIs(t, err, lethe.ErrBadRequest, "ttl %v", v)
	}
	r, err = c.ReadItem(ctx, pk, "x", nil)
	require.NoError(t, err)
	assert.Equal(t, before.ETag, r.ETag)

	// ttl removed: the item inherits the default (100 s) from the patch on.
	var rm lethe.PatchOperations
	rm.AppendRemove("/ttl")
	_, err = c.PatchItem(ctx, pk, "x", rm, nil)
	require.NoError(t, err)
	clock.Advance(99 * time.Second)
	assert.True(t, exists(t, c, "x"))
	clock.Advance(time.Second)
	assert.False(t, exists(t, c, "x"))

	// -1, and null (inherit).
	create(t, c, `{"id":"y"}`)
	var never lethe.PatchOperations
	never.AppendAdd("/ttl", -1)
	_, err = c.PatchItem(ctx, pk, "y", never, nil)
	require.NoError(t, err)
	clock.Advance(1000 * time.Second)
	assert.True(t, exists(t, c, "y"))
	var null lethe.PatchOperations
	null.AppendSet("/ttl", nil)
	_, err = c.PatchItem(ctx, pk, "y", null, nil)
	require.NoError(t, err)
	clock.Advance(100 * time.Second)
	assert.False(t, exists(t, c, "y"))

	// A missing item is a 404 too.
	_, err = c.PatchItem(ctx, pk, "nobody", rm, nil)
	assert.ErrorIs(t, err, lethe.ErrNotFound)
	lethe.CheckInvariants(t, c, "after the patches")
}

func TestPatchCharge(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", Throughput: 20})
	create(t, c, `{"id":"x","s":"`+strings.Repeat("a", 3000)+`"}`) // 5.5 + 1 = 6.5 RU
	var p lethe.PatchOperations
	p.AppendSet("/t", 1)
	r, err := c.PatchItem(ctx, lethe.NewPartitionKey(), "x", p, nil)
	require.NoError(t, err)
	assert.Equal(t, 13.0, r.RequestCharge, "a replace of 3 KB")
	// 20 - 6.5 - 13 = 0.5 RU left: the next patch is throttled and changes nothing.
	_, err = c.PatchItem(ctx, lethe.NewPartitionKey(), "x", p, nil)
	assert.ErrorIs(t, err, lethe.ErrTooManyRequests)
	clock.Advance(time.Second)
	got, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "x", nil)
	assert.NoError(t, err)
	assert.Equal(t, r.ETag, got.ETag)
	_, err = c.PatchItem(ctx, lethe.NewPartitionKey(), "x", p, nil)
	assert.NoError(t, err)
}

func TestPatchClosedAndDeleted(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	create(t, c, `{"id":"x"}`)
	var p lethe.PatchOperations
	p.AppendSet("/a", 1)
	_, err := c.PatchItem(ctx, lethe.NewPartitionKey(), "bad\xffid", p, nil)
	assert.ErrorIs(t, err, lethe.ErrBadRequest)
	require.NoError(t, s.DeleteContainer(ctx, "c"))
	_, err = c.PatchItem(ctx, lethe.NewPartitionKey(), "x", p, nil)
	assert.ErrorIs(t, err, lethe.ErrNotFound)
}

// TestPatchDurable: a patch is logged as the write it is, and comes back
// after a reopen with its ttl.
func TestPatchDurable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})
	create(t, c, `{"id":"x","n":1}`)
	var p lethe.PatchOperations
	p.AppendIncrement("/n", 1)
	p.AppendSet("/ttl", 60)
	r, err := c.PatchItem(ctx, lethe.NewPartitionKey(), "x", p, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = openDurable(t, dir, clock)
	c, err = s.Container("c")
	require.NoError(t, err)
	got, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "x", nil)
	require.NoError(t, err)
	assert.Equal(t, string(r.Value), string(got.Value))
	require.NoError(t, s.Close())
	clock.Advance(time.Minute)
	s = openDurable(t, dir, clock)
	assert.Equal(t, int64(1), s.Recovery().Expired, "the patched ttl came back")
	require.NoError(t, s.Close())
}
