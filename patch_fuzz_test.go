package lethe_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// The patch model: the documented rules of each operation, applied to a
// plain map[string]any. FuzzPatchModel checks that the store, which edits
// the stored JSON text, never diverges from it.

// modelOp is one patch operation as the model sees it.
type modelOp struct {
	kind     string // add, set, replace, remove, incr, move
	path     string
	from     string
	value    any // decoded JSON (float64 numbers)
	incr     float64
	incFloat bool
}

// append adds the operation to p.
func (op modelOp) append(p *lethe.PatchOperations) {
	switch op.kind {
	case "add":
		p.AppendAdd(op.path, op.value)
	case "set":
		p.AppendSet(op.path, op.value)
	case "replace":
		p.AppendReplace(op.path, op.value)
	case "remove":
		p.AppendRemove(op.path)
	case "incr":
		if op.incFloat {
			p.AppendIncrementFloat(op.path, op.incr)
		} else {
			p.AppendIncrement(op.path, int64(op.incr))
		}
	case "move":
		p.AppendMove(op.from, op.path)
	}
}

func (op modelOp) String() string {
	switch op.kind {
	case "remove":
		return fmt.Sprintf("remove %s", op.path)
	case "move":
		return fmt.Sprintf("move %s -> %s", op.from, op.path)
	case "incr":
		return fmt.Sprintf("incr %s %v", op.path, op.incr)
	}
	v, _ := json.Marshal(op.value)
	return fmt.Sprintf("%s %s %s", op.kind, op.path, v)
}

// modelSystem are the top-level names no patch may touch.
var modelSystem = map[string]bool{"id": true, "_ts": true, "_etag": true, "_rid": true, "_self": true, "_attachments": true}

// modelPatch applies ops to doc (which it may change) and reports whether
// the patch succeeds; a patch that fails must leave the item as it was.
func modelPatch(doc map[string]any, ops []modelOp) (map[string]any, bool) {
	if len(ops) == 0 || len(ops) > lethe.MaxPatchOperations {
		return nil, false
	}
	for _, op := range ops {
		paths := []string{op.path}
		if op.kind == "move" {
			paths = append(paths, op.from)
			if strings.HasPrefix(op.path, op.from+"/") {
				return nil, false
			}
		}
		for _, p := range paths {
			segs, ok := modelSegments(p)
			if !ok || modelSystem[segs[0]] {
				return nil, false
			}
		}
	}
	var root any = doc
	for _, op := range ops {
		var ok bool
		if root, ok = modelApply(root, op); !ok {
			return nil, false
		}
	}
	return root.(map[string]any), true
}

// modelSegments splits and unescapes a JSON Pointer.
func modelSegments(path string) ([]string, bool) {
	if !strings.HasPrefix(path, "/") {
		return nil, false
	}
	segs := strings.Split(path[1:], "/")
	for i, s := range segs {
		for j := 0; j < len(s); j++ {
			if s[j] == '~' && (j+1 == len(s) || (s[j+1] != '0' && s[j+1] != '1')) {
				return nil, false
			}
		}
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs, true
}

// modelIndex reads an array index: RFC 6901 digits; -1 if it is none.
func modelIndex(s string) int {
	if s == "" || (len(s) > 1 && s[0] == '0') || len(s) > 6 {
		return -1
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// modelEdit follows segs[:len-1] from node and calls f with the container
// found and the last segment; it returns node with the container f
// returned in its place.
func modelEdit(node any, segs []string, f func(container any, seg string) (any, bool)) (any, bool) {
	if len(segs) == 1 {
		switch node.(type) {
		case map[string]any, []any:
			return f(node, segs[0])
		}
		return nil, false
	}
	switch n := node.(type) {
	case map[string]any:
		child, ok := n[segs[0]]
		if !ok {
			return nil, false
		}
		nc, ok := modelEdit(child, segs[1:], f)
		if !ok {
			return nil, false
		}
		n[segs[0]] = nc
		return n, true
	case []any:
		i := modelIndex(segs[0])
		if i < 0 || i >= len(n) {
			return nil, false
		}
		nc, ok := modelEdit(n[i], segs[1:], f)
		if !ok {
			return nil, false
		}
		n[i] = nc
		return n, true
	}
	return nil, false
}

// modelAdd is add: create or replace a member; insert into an array at an
// index up to its length, or at "-".
func modelAdd(root any, segs []string, v any) (any, bool) {
	return modelEdit(root, segs, func(cont any, seg string) (any, bool) {
		switch c := cont.(type) {
		case map[string]any:
			c[seg] = v
			return c, true
		case []any:
			i := len(c)
			if seg != "-" {
				i = modelIndex(seg)
			}
			if i < 0 || i > len(c) {
				return nil, false
			}
			return slices.Insert(c, i, v), true
		}
		return nil, false
	})
}

// modelApply applies one operation to root.
func modelApply(root any, op modelOp) (any, bool) {
	segs, _ := modelSegments(op.path)
	switch op.kind {
	case "add":
		return modelAdd(root, segs, op.value)
	case "move":
		from, _ := modelSegments(op.from)
		var moved any
		root, ok := modelEdit(root, from, func(cont any, seg string) (any, bool) {
			switch c := cont.(type) {
			case map[string]any:
				v, ok := c[seg]
				if !ok {
					return nil, false
				}
				moved = v
				delete(c, seg)
				return c, true
			case []any:
				i := modelIndex(seg)
				if i < 0 || i >= len(c) {
					return nil, false
				}
				moved = c[i]
				return slices.Delete(c, i, i+1), true
			}
			return nil, false
		})
		if !ok {
			return nil, false
		}
		return modelAdd(root, segs, moved)
	}
	return modelEdit(root, segs, func(cont any, seg string) (any, bool) {
		switch c := cont.(type) {
		case map[string]any:
			old, exists := c[seg]
			switch op.kind {
			case "set":
				c[seg] = op.value
			case "replace":
				if !exists {
					return nil, false
				}
				c[seg] = op.value
			case "remove":
				if !exists {
					return nil, false
				}
				delete(c, seg)
			case "incr":
				if !exists {
					c[seg] = op.incr
					break
				}
				n, ok := old.(float64)
				if !ok {
					return nil, false
				}
				c[seg] = n + op.incr
			}
			return c, true
		case []any:
			i := modelIndex(seg)
			if i < 0 || i >= len(c) {
				return nil, false
			}
			switch op.kind {
			case "set", "replace":
				c[i] = op.value
			case "remove":
				return slices.Delete(c, i, i+1), true
			case "incr":
				n, ok := c[i].(float64)
				if !ok {
					return nil, false
				}
				c[i] = n + op.incr
			}
			return c, true
		}
		return nil, false
	})
}

// fuzzBytes hands out the fuzzer's bytes, then zeros.
type fuzzBytes struct{ b []byte }

func (r *fuzzBytes) next() int {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return int(c)
}

func (r *fuzzBytes) pick(n int) int { return r.next() % n }

// The vocabulary the fuzzer builds paths and values from: names the base
// item has (escaped ones among them), names it lacks, array indexes valid
// and not, and system properties.
var (
	fuzzSegments = []string{"a", "b", "arr", "o", "p", "q", "a/b", "m~n", "e", "eo", "n", "f", "z", "", "0", "1", "2", "3", "-", "01", "x"}
	fuzzValues   = []string{`0`, `1`, `-1`, `2.5`, `"s"`, `"a\"b\u00e9"`, `true`, `null`, `[]`, `[1,"x"]`, `{}`, `{"k":1,"a/b":[2]}`}
	fuzzBase     = `{"id":"x","a":1,"b":"s","arr":[1,2,[3]],"o":{"p":{"q":1},"a/b":2,"m~n":[]},"e":[],"eo":{},"n":null,"f":1.5}`
)

// fuzzPath builds a path of one to three segments, now and then a system
// property or a malformed pointer.
func fuzzPath(r *fuzzBytes) string {
	switch r.pick(32) {
	case 0:
		return "/" + []string{"id", "_ts", "_etag", "_rid", "_self"}[r.pick(5)]
	case 1:
		return []string{"", "a", "/a~2", "/o~"}[r.pick(4)]
	}
	var b strings.Builder
	for range 1 + r.pick(3) {
		seg := fuzzSegments[r.pick(len(fuzzSegments))]
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(seg, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func fuzzOp(r *fuzzBytes) modelOp {
	op := modelOp{kind: []string{"add", "set", "replace", "remove", "incr", "move"}[r.pick(6)], path: fuzzPath(r)}
	switch op.kind {
	case "incr":
		op.incr = float64(r.pick(7) - 3)
		if r.pick(4) == 0 {
			op.incr += 0.5
			op.incFloat = true
		}
	case "move":
		op.from = fuzzPath(r)
	case "remove":
	default:
		if err := json.Unmarshal([]byte(fuzzValues[r.pick(len(fuzzValues))]), &op.value); err != nil {
			panic(err)
		}
	}
	return op
}

// FuzzPatchModel applies random patches to an item and to the model: they
// agree on success or failure and on the item after each patch, and a
// failed patch changes nothing.
func FuzzPatchModel(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte("patches of arrays and objects, moved around"))
	f.Add([]byte{1, 5, 17, 2, 4, 200, 9, 33, 77, 1, 1, 1, 5, 5, 5, 250, 128, 64, 32, 16, 8, 4, 2, 1})
	f.Add([]byte{2, 0, 4, 12, 3, 0, 6, 0, 2, 9, 9, 0, 5, 5, 4, 13, 1, 0, 3, 4, 7, 0, 1, 18, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _ := newContainer(t, lethe.TTLOff)
		pk := lethe.NewPartitionKey()
		cur := create(t, c, fuzzBase)
		var model map[string]any
		require.NoError(t, json.Unmarshal([]byte(fuzzBase), &model))
		r := &fuzzBytes{b: data}
		for patch := 0; patch < 12 && (patch == 0 || len(r.b) > 0); patch++ {
			n := 1 + r.pick(4)
			if r.pick(16) == 0 {
				n = lethe.MaxPatchOperations + r.pick(2)
			}
			ops := make([]modelOp, n)
			var p lethe.PatchOperations
			for i := range ops {
				ops[i] = fuzzOp(r)
				ops[i].append(&p)
			}
			var copied map[string]any
			raw, err := json.Marshal(model)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &copied))
			want, ok := modelPatch(copied, ops)

			resp, err := c.PatchItem(ctx, pk, "x", p, nil)
			if !ok {
				require.Error(t, err, "the model refuses %v", ops)
				require.Equal(t, 400, status(err), "%v: %v", ops, err)
				after, err := c.ReadItem(ctx, pk, "x", nil)
				require.NoError(t, err)
				require.Equal(t, cur.ETag, after.ETag, "a failed patch changed the item: %v", ops)
				continue
			}
			require.NoError(t, err, "the model accepts %v", ops)
			wantJSON, err := json.Marshal(want)
			require.NoError(t, err)
			require.Equal(t, string(wantJSON), canonical(t, resp.Value), "after %v", ops)
			model, cur = want, resp
		}
	})
}
