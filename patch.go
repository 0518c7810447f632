package lethe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/lethedb/lethe/internal/jsontext"
	"github.com/lethedb/lethe/internal/query"
)

// Partial document update (patch), as Cosmos DB's Patch API: a list of
// operations applied in order to one item, all or none.
//
// The operations edit the stored JSON text in place: a path is found by
// scanning the document (only the members on the way are looked at), and
// the change is spliced in, so a patch never decodes the document into Go
// values. The result is then checked as any incoming document is
// (parseItem: size, nesting, names, ttl) and stored as a new version, a
// write like any other.

// MaxPatchOperations is the most operations one patch may hold, as in
// Cosmos DB.
const MaxPatchOperations = 10

type patchKind uint8

const (
	patchAdd patchKind = iota + 1
	patchSet
	patchReplace
	patchRemove
	patchIncrement
	patchMove
)

var patchKindNames = [...]string{"", "Add", "Set", "Replace", "Remove", "Increment", "Move"}

// patchOp is one patch operation as appended: its value already encoded as
// JSON, so that later changes to the caller's maps and slices never change
// the patch.
type patchOp struct {
	kind  patchKind
	path  string
	from  string // a move's source
	value []byte // the JSON value of add, set and replace, validated
	depth int    // how deep value nests (0: a scalar)
	// An increment's amount: an integer (incInt) unless incFloat is set.
	incInt   int64
	incFloat float64
	isFloat  bool
}

// PatchOperations is a partial update of one item, for Container.PatchItem
// and TransactionalBatch.PatchItem: up to MaxPatchOperations operations,
// applied in order, all or none, and optionally a condition. Its zero value
// is an empty patch, ready to use. It is a value: copying it gives an
// independent patch, and values are encoded as JSON when appended, so later
// changes to a map or slice appended never change the patch.
//
// Paths are JSON Pointers (RFC 6901) from the item's root: "/a/b/0" is
// element 0 of the array at member b of member a; "~1" stands for '/' and
// "~0" for '~' in a member name; "-" is the end of an array. What each
// operation does with a path that exists, one that does not, and an array
// index is described at its Append method; a patch whose operation cannot
// be applied fails with ErrBadRequest and changes nothing. The system
// properties (id, _ts, _etag, _rid, _self, _attachments) and the
// container's partition key paths cannot be patched (ErrBadRequest).
type PatchOperations struct {
	ops       [MaxPatchOperations]patchOp
	n         int // operations appended; only the first MaxPatchOperations are kept
	condition string
	hasCond   bool
	err       error // the first value that could not be encoded as JSON
}

func (p *PatchOperations) appendOp(op patchOp) {
	if p.n < len(p.ops) {
		p.ops[p.n] = op
	}
	p.n++
}

func (p *PatchOperations) appendValue(kind patchKind, path string, value any) {
	v, trusted, err := encodePatchValue(value)
	depth := 0
	if err == nil && !trusted {
		depth, err = checkPatchValue(v)
	}
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("the value of operation %d (%s %s) cannot be encoded as JSON: %w", p.n+1, patchKindNames[kind], clip(path), err)
	}
	p.appendOp(patchOp{kind: kind, path: path, value: v, depth: depth})
}

// checkPatchValue validates a value as an item's values are validated
// (parseItem: JSON, names, numbers, nesting) and returns how deep it nests.
func checkPatchValue(v []byte) (int, error) {
	s := scanner{b: v}
	i, err := s.value(skipSpace(v, 0), 0)
	if err != nil {
		return 0, err
	}
	if i = skipSpace(v, i); i != len(v) {
		return 0, fmt.Errorf("data after the value at offset %d", i)
	}
	return s.maxDepth, nil
}

// AppendAdd appends an add: when path names a member, it is created, or
// its value replaced if it exists; when it names an array index from 0 to
// the array's length, value is inserted there, shifting the elements at and
// after it (the length, or "-", appends). An index past the length is an
// error, as is a path whose parent does not exist: add never creates
// objects on the way.
func (p *PatchOperations) AppendAdd(path string, value any) {
	p.appendValue(patchAdd, path, value)
}

// AppendSet appends a set: as add for a member (created, or replaced);
// on an array, path must name an existing element, which is replaced (an
// index at or past the length, or "-", is an error).
func (p *PatchOperations) AppendSet(path string, value any) {
	p.appendValue(patchSet, path, value)
}

// AppendReplace appends a replace: the member or array element at path
// must exist (else the patch fails), and its value is replaced.
func (p *PatchOperations) AppendReplace(path string, value any) {
	p.appendValue(patchReplace, path, value)
}

// AppendRemove appends a remove: the member or array element at path must
// exist (else the patch fails), and is removed; the elements after a removed
// array element shift back by one.
func (p *PatchOperations) AppendRemove(path string) {
	p.appendOp(patchOp{kind: patchRemove, path: path})
}

// AppendIncrement appends an increment of the number at path by value
// (which may be negative). A missing member is created with value; a value
// that is not a number is an error; on an array, path must name an
// existing element. The sum of two integers is exact (beyond the int64
// range it is a double); a sum involving a fraction is a double, and one
// that is not finite is an error.
func (p *PatchOperations) AppendIncrement(path string, value int64) {
	p.appendOp(patchOp{kind: patchIncrement, path: path, incInt: value})
}

// AppendIncrementFloat is AppendIncrement by a double. A NaN or infinite
// value makes the patch fail with ErrBadRequest.
func (p *PatchOperations) AppendIncrementFloat(path string, value float64) {
	p.appendOp(patchOp{kind: patchIncrement, path: path, incFloat: value, isFloat: true})
}

// AppendMove appends a move of the value at from to path: the value at from
// must exist and is removed, then added at path as AppendAdd adds it (a
// member is created or replaced; at an array index it is inserted). path
// may not lie inside from.
func (p *PatchOperations) AppendMove(from, path string) {
	p.appendOp(patchOp{kind: patchMove, path: path, from: from})
}

// SetCondition makes the patch conditional: condition is a FROM clause and
// its WHERE, in the query language ("FROM c WHERE c.n > 3"), evaluated on
// the item as it is before the patch. When it does not hold, the patch
// fails with ErrPreconditionFailed (412) and changes nothing; a condition
// that is not a valid FROM clause is an ErrBadRequest.
func (p *PatchOperations) SetCondition(condition string) {
	p.condition, p.hasCond = condition, true
}

// systemPatchPaths are the top-level properties no patch may touch.
var systemPatchPaths = map[string]bool{"id": true, "_ts": true, "_etag": true, "_rid": true, "_self": true, "_attachments": true}

// preparePatch validates a patch for the container c: the count of its
// operations, their paths and values, and its condition. It returns the
// operations and the parsed condition (nil if none), kept apart so that
// the condition, which the query engine keeps, never makes the
// operations escape to the heap.
func (c *Container) preparePatch(p *PatchOperations) ([]patchOp, *query.Query, *Error) {
	switch {
	case p.n == 0:
		return nil, nil, badRequest("the patch has no operations")
	case p.n > MaxPatchOperations:
		return nil, nil, badRequest("the patch has %d operations, over the limit of %d", p.n, MaxPatchOperations)
	case p.err != nil:
		return nil, nil, badRequest("%v", p.err)
	}
	ops := p.ops[:p.n]
	for k := range ops {
		op := &ops[k]
		if err := c.checkPatchPath(k, op.kind, op.path); err != nil {
			return nil, nil, err
		}
		switch op.kind {
		case patchMove:
			if err := c.checkPatchPath(k, op.kind, op.from); err != nil {
				return nil, nil, err
			}
			if strings.HasPrefix(op.path, op.from+"/") {
				return nil, nil, opError(k, op.kind, "the path '%s' lies inside the source '%s': a value cannot be moved into itself", clip(op.path), clip(op.from))
			}
		case patchIncrement:
			if op.isFloat && (math.IsNaN(op.incFloat) || math.IsInf(op.incFloat, 0)) {
				return nil, nil, opError(k, op.kind, "the increment %v is not a finite number", op.incFloat)
			}
		}
	}
	if !p.hasCond {
		return ops, nil, nil
	}
	cond, err := parseCondition(p.condition)
	if err != nil {
		return nil, nil, err
	}
	return ops, cond, nil
}

// opError is the error of operation k (from 0) of a patch, numbered from 1
// in the message as Cosmos DB numbers them.
func opError(k int, kind patchKind, format string, args ...any) *Error {
	return badRequest("For Operation(%d): %s Operation: %s", k+1, patchKindNames[kind], fmt.Sprintf(format, args...))
}

// checkPatchPath validates the path of operation k: a JSON Pointer to
// something below the root, not a system property, not on a partition key
// path.
func (c *Container) checkPatchPath(k int, kind patchKind, path string) *Error {
	switch {
	case path == "" || path[0] != '/':
		return opError(k, kind, "the path '%s' is not a JSON Pointer: it must start with '/'", clip(path))
	case !utf8.ValidString(path):
		return opError(k, kind, "the path '%s' is not valid UTF-8", clip(path))
	}
	for i := 0; i < len(path); i++ {
		if path[i] == '~' && (i+1 == len(path) || (path[i+1] != '0' && path[i+1] != '1')) {
			return opError(k, kind, "the path '%s' has a '~' that is not '~0' or '~1'", clip(path))
		}
	}
	first, _ := nextSegment(path)
	if systemPatchPaths[first] {
		return opError(k, kind, "'%s' is a system property and cannot be patched", clip(first))
	}
	for _, segs := range c.pkPaths.segs {
		// The path may neither be a partition key path, nor lie on the way
		// to one, nor below one: one of the two is a prefix of the other.
		rest, prefix := path, true
		for i := 0; i < len(segs) && rest != "" && prefix; i++ {
			var seg string
			seg, rest = nextSegment(rest)
			prefix = seg == segs[i]
		}
		if prefix {
			return opError(k, kind, "the path '%s' is on the partition key path /%s, which cannot be patched", clip(path), clip(strings.Join(segs, "/")))
		}
	}
	return nil
}

// nextSegment returns the first segment of the JSON Pointer rest (which
// starts with '/'), unescaped, and the rest of the pointer after it.
func nextSegment(rest string) (seg, after string) {
	rest = rest[1:]
	seg = rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		seg, after = rest[:i], rest[i:]
	}
	if strings.IndexByte(seg, '~') >= 0 {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
	}
	return seg, after
}

// conditionPrefix turns a patch condition, a FROM clause, into a query.
// It stands on a line of its own, so that positions in error messages
// count lines of the condition from 2.
const conditionPrefix = "SELECT VALUE true\n"

// parseCondition parses a patch condition ("FROM c WHERE ...").
func parseCondition(cond string) (*query.Query, *Error) {
	trimmed := strings.TrimLeft(cond, " \t\r\n")
	if len(trimmed) < 5 || !strings.EqualFold(trimmed[:4], "FROM") || !isSpaceByte(trimmed[4]) {
		return nil, badRequest("the patch condition %q must be a FROM clause, such as \"FROM c WHERE c.n > 3\"", clip(cond))
	}
	q, err := query.Parse(conditionPrefix + cond)
	if err != nil {
		if qe, ok := err.(*query.Error); ok && qe.Line > 1 {
			return nil, badRequest("the patch condition is not valid: %d:%d: %s", qe.Line-1, qe.Col, qe.Msg)
		}
		return nil, badRequest("the patch condition is not valid: %v", err)
	}
	return q, nil
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// conditionHolds reports whether a patch's condition (nil: none) holds
// for the item's version rec at now. A condition that fails to evaluate is
// a 400.
func conditionHolds(ctx context.Context, cond *query.Query, rec record, now int64) (bool, error) {
	if cond == nil {
		return true, nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	docs := [1]query.Doc{rec.queryDoc()}
	res, err := query.Exec(ctx, cond, nil, docs[:], time.Unix(0, now).UTC())
	if err != nil {
		if qe, ok := err.(*query.Error); ok {
			return false, badRequest("the patch condition cannot be evaluated: %s", qe.Msg)
		}
		return false, err
	}
	return len(res.Items) > 0, nil
}

// patchBuffers hold the documents a patch builds, two per patch, reused.
var patchBuffers = sync.Pool{New: func() any { return new(patchBuf) }}

type patchBuf struct{ a, b []byte }

// maxPooledPatchBuf is the largest buffer a patch puts back in the pool.
const maxPooledPatchBuf = 64 << 10

func (pb *patchBuf) release() {
	if cap(pb.a) > maxPooledPatchBuf {
		pb.a = nil
	}
	if cap(pb.b) > maxPooledPatchBuf {
		pb.b = nil
	}
	patchBuffers.Put(pb)
}

// patched is a patched item, ready to be stored: its document in stored
// form without _ts and _etag, and what buildRecordFrom needs.
type patched struct {
	doc        []byte
	id         string
	ttl        TTL
	chargeSize int
}

// record builds the patched item's record, at the item's position pos.
func (r *patched) record(pk string, written int64, seq, pos uint64) record {
	return buildRecordFrom(r.doc, r.id, r.ttl, r.chargeSize, pk, written, seq, pos)
}

// patchDoc applies a prepared patch, its operations ops and its condition
// cond, to the stored document of old, for the item (pk, id) at now: it
// checks the condition, applies the operations in order and validates the
// result as an incoming document. The result's document is in one of pb's
// buffers. A condition that does not hold is a 412; an operation that
// cannot be applied a 400; a result over the limits a 400 or 413. (The
// operations and the condition come apart so that the condition, which
// the query engine keeps, never makes the operations escape to the heap.)
//
// The operations edit the stored document, which has no _ts and _etag.
// When no operation moves a value or touches the top-level ttl, the result
// is not parsed again: the stored document was valid,
// every value spliced in was validated when appended (and its nesting is
// checked at its place here), names are added only where absent, and the
// id, ttl and partition key cannot have changed, so only the size is left
// to check. Tests check every such result against parseItem
// (patchCrossCheck).
func (c *Container) patchDoc(ctx context.Context, ops []patchOp, cond *query.Query, old record, pk string, now int64, pb *patchBuf) (patched, error) {
	ok, err := conditionHolds(ctx, cond, old, now)
	if err != nil {
		return patched{}, err
	}
	if !ok {
		return patched{}, &Error{StatusCode: statusPreconditionFailed, Message: "the patch condition does not hold: " + msgPrecondition}
	}
	parse := false
	cur := append(pb.b[:0], old.body()...)
	pb.b = cur
	for k := range ops {
		op := &ops[k]
		out, e := applyPatchOp(pb.a[:0], cur, k, op)
		if e != nil {
			return patched{}, e
		}
		pb.a, pb.b = pb.b, out
		cur = out
		if op.kind == patchMove || isTTLPath(op.path) {
			parse = true
		} else if op.value != nil && strings.Count(op.path, "/")+op.depth > MaxDepth {
			return patched{}, badRequest("the patched item is invalid: the item is nested deeper than %d levels", MaxDepth)
		}
	}
	if parse {
		p, e := parseItem(cur)
		if e != nil {
			e.Message = "the patched item is invalid: " + e.Message
			return patched{}, e
		}
		if len(c.pkPaths.segs) > 0 {
			same, e := c.pkPaths.matches(cur, &p, pk)
			if e != nil {
				return patched{}, e
			}
			if !same {
				return patched{}, badRequest("the patch would change the item's partition key value")
			}
		}
		return patched{doc: cur, id: p.id, ttl: p.ttl, chargeSize: p.size - p.ttlSize}, nil
	}
	if len(cur) > MaxItemSize {
		return patched{}, &Error{StatusCode: statusRequestEntityTooLarge,
			Message: fmt.Sprintf("the patched item is invalid: the item is %d bytes, over the limit of %d", len(cur), MaxItemSize)}
	}
	// The members' size, less the unchanged ttl member's share of the old one.
	ttlSize := old.bodyLen() - 1 - old.chargeSize()
	r := patched{doc: cur, id: old.id(), ttl: old.ttl(), chargeSize: len(cur) - 1 - ttlSize}
	if patchCrossCheck {
		crossCheckPatch(&r)
	}
	return r, nil
}

// isTTLPath reports whether a patch path is the item's ttl or inside it.
func isTTLPath(path string) bool {
	return path == "/ttl" || strings.HasPrefix(path, "/ttl/")
}

// patchCrossCheck makes patchDoc check each result it did not parse
// against parseItem; tests turn it on (export_test.go).
var patchCrossCheck = false

// crossCheckPatch panics if parseItem disagrees with the patched item r.
func crossCheckPatch(r *patched) {
	p, err := parseItem(r.doc)
	switch {
	case err != nil:
		panic(fmt.Sprintf("lethe: a patch left an invalid item %s: %v", clip(r.doc), err.Message))
	case p.id != r.id || p.ttl != r.ttl || p.size-p.ttlSize != r.chargeSize || p.size != len(r.doc)-1:
		panic(fmt.Sprintf("lethe: a patch left %s: parseItem finds id %q ttl %v charge size %d size %d, the patch id %q ttl %v charge size %d",
			clip(r.doc), p.id, p.ttl, p.size-p.ttlSize, p.size, r.id, r.ttl, r.chargeSize))
	}
}

// target is what a patch path names in a document: the container it is in
// (its parent) and, if it exists, the member or element itself.
type target struct {
	array       bool
	open, close int // offsets of the parent's brackets
	count       int // members or elements of the parent (up to the one found, if found)
	found       bool
	start       int // the member's name, or the element
	vstart      int // the value
	vend        int
	sepBefore   int    // offset of the ',' before it; -1 if it comes first
	sepAfter    int    // offset of the ',' after it; -1 if it comes last
	name        string // the last segment, unescaped
	index       int    // in an array: the index the segment names; -1 if none, -2 for "-"
}

// locate finds the path in doc (a valid JSON object). Every segment but the
// last must name an existing member or element; the last one is looked up
// in its parent. A missing parent, or one that is no object or array, is
// operation k's 400.
func locate(doc []byte, path string, k int, kind patchKind) (target, *Error) {
	cur := jsontext.SkipSpace(doc, 0)
	rest := path
	walked := ""
	for {
		var seg string
		seg, rest = nextSegment(rest)
		if doc[cur] != '{' && doc[cur] != '[' {
			return target{}, opError(k, kind, "the path '%s' runs through '%s', which is neither an object nor an array", clip(path), clip(walked))
		}
		t := child(doc, cur, seg)
		if rest == "" {
			return t, nil
		}
		if !t.found {
			return target{}, opError(k, kind, "it can only create a child of an existing node (array or object) and cannot create a path recursively: no path found beyond '%s'", clip(walked+"/"+escapeSegment(seg)))
		}
		walked += "/" + escapeSegment(seg)
		cur = t.vstart
	}
}

// escapeSegment escapes a segment for a JSON Pointer, for messages.
func escapeSegment(s string) string {
	if strings.ContainsAny(s, "~/") {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	return s
}

// child looks up seg in the object or array at doc[at].
func child(doc []byte, at int, seg string) target {
	t := target{array: doc[at] == '[', open: at, sepBefore: -1, sepAfter: -1, name: seg, index: -1}
	if t.array {
		t.index = arrayIndex(seg)
	}
	i := jsontext.SkipSpace(doc, at+1)
	sep := -1
	for doc[i] != '}' && doc[i] != ']' {
		start := i
		match := false
		if t.array {
			match = t.count == t.index
		} else {
			end, fl, _ := jsontext.ScanString(doc, i)
			match = nameIs(doc[i+1:end-1], fl, seg)
			i = jsontext.SkipSpace(doc, end)
			i = jsontext.SkipSpace(doc, i+1) // past the ':'
		}
		vstart := i
		vend, _ := jsontext.SkipValue(doc, i) // doc is a stored, valid item
		i = jsontext.SkipSpace(doc, vend)
		after := -1
		if doc[i] == ',' {
			after = i
			i = jsontext.SkipSpace(doc, i+1)
		}
		if match {
			t.found, t.start, t.vstart, t.vend, t.sepBefore, t.sepAfter = true, start, vstart, vend, sep, after
			return t
		}
		sep = after
		t.count++
	}
	t.close = i
	return t
}

// nameIs reports whether the raw contents of a member name decode to name.
func nameIs(raw []byte, fl jsontext.Flags, name string) bool {
	if fl&jsontext.Escaped != 0 {
		return decodeString(raw) == name
	}
	return string(raw) == name
}

// arrayIndex reads an array index segment: decimal digits without leading
// zeros; -2 for "-", -1 for anything else (or an index too large to be one).
func arrayIndex(seg string) int {
	if seg == "-" {
		return -2
	}
	if seg == "" || len(seg) > 9 || (seg[0] == '0' && len(seg) > 1) {
		return -1
	}
	n := 0
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return -1
		}
		n = n*10 + int(seg[i]-'0')
	}
	return n
}

// applyPatchOp applies operation k to doc and appends the result to dst.
func applyPatchOp(dst, doc []byte, k int, op *patchOp) ([]byte, *Error) {
	switch op.kind {
	case patchMove:
		from, err := locate(doc, op.from, k, op.kind)
		if err != nil {
			return nil, err
		}
		if !from.found {
			return nil, opError(k, op.kind, "the source '%s' does not exist", clip(op.from))
		}
		// doc stays as it is until the operation is done: the value is a
		// view of it. The add reads removed (in dst) and writes to a
		// buffer of its own.
		value := doc[from.vstart:from.vend]
		removed := removeAt(dst, doc, &from)
		t, err := locate(removed, op.path, k, op.kind)
		if err != nil {
			return nil, err
		}
		return addAt(nil, removed, &t, value, k, op)
	}
	t, err := locate(doc, op.path, k, op.kind)
	if err != nil {
		return nil, err
	}
	switch op.kind {
	case patchAdd:
		return addAt(dst, doc, &t, op.value, k, op)
	case patchSet:
		if t.array && !t.found {
			return nil, opError(k, op.kind, "the path '%s' names no element of its array: set replaces an existing element (use add to insert)", clip(op.path))
		}
		return addAt(dst, doc, &t, op.value, k, op)
	case patchReplace:
		if !t.found {
			return nil, opError(k, op.kind, "the path '%s' does not exist", clip(op.path))
		}
		return splice(dst, doc, t.vstart, t.vend, nil, op.value, nil), nil
	case patchRemove:
		if !t.found {
			return nil, opError(k, op.kind, "the path '%s' does not exist", clip(op.path))
		}
		return removeAt(dst, doc, &t), nil
	case patchIncrement:
		if !t.found {
			if t.array {
				return nil, opError(k, op.kind, "the path '%s' names no element of its array", clip(op.path))
			}
			var num [32]byte
			return addAt(dst, doc, &t, op.appendAmount(num[:0]), k, op)
		}
		old := doc[t.vstart:t.vend]
		if c := old[0]; c != '-' && (c < '0' || c > '9') {
			return nil, opError(k, op.kind, "the value at '%s' is %s, not a number", clip(op.path), clip(old))
		}
		var num [40]byte
		sum, ok := op.addTo(num[:0], old)
		if !ok {
			return nil, opError(k, op.kind, "the sum of %s and the increment is not a finite number", clip(old))
		}
		return splice(dst, doc, t.vstart, t.vend, nil, sum, nil), nil
	}
	return nil, opError(k, op.kind, "unknown operation")
}

// addAt adds value at t as add does: it replaces a member that exists,
// creates one that does not, and inserts into an array at an index from 0
// to its length ("-" appends).
func addAt(dst, doc []byte, t *target, value []byte, k int, op *patchOp) ([]byte, *Error) {
	if !t.array {
		if t.found {
			return splice(dst, doc, t.vstart, t.vend, nil, value, nil), nil
		}
		var name [64]byte
		quoted := jsontext.AppendString(name[:0], t.name)
		if t.count == 0 {
			return insertMember(dst, doc, t.open+1, false, quoted, value), nil
		}
		return insertMember(dst, doc, t.close, true, quoted, value), nil
	}
	if op.kind == patchSet || op.kind == patchIncrement {
		return splice(dst, doc, t.vstart, t.vend, nil, value, nil), nil // found: the caller checked
	}
	switch {
	case t.found: // insert before the element
		return splice(dst, doc, t.start, t.start, nil, value, comma), nil
	case t.index == -2 || t.index == t.count: // append
		if t.count == 0 {
			return splice(dst, doc, t.open+1, t.open+1, nil, value, nil), nil
		}
		return splice(dst, doc, t.close, t.close, comma, value, nil), nil
	case t.index == -1:
		return nil, opError(k, op.kind, "'%s' is not an array index (digits without leading zeros, or '-')", clip(t.name))
	default:
		return nil, opError(k, op.kind, "the index %d is past the end of the array, whose length is %d", t.index, t.count)
	}
}

var comma = []byte{','}

// splice appends to dst doc with doc[start:end] replaced by before, value
// and after.
func splice(dst, doc []byte, start, end int, before, value, after []byte) []byte {
	dst = append(dst, doc[:start]...)
	dst = append(dst, before...)
	dst = append(dst, value...)
	dst = append(dst, after...)
	return append(dst, doc[end:]...)
}

// insertMember appends to dst doc with a new member, its quoted name, ':'
// and value, inserted at offset at, after a ',' if sep (the object has
// other members before at).
func insertMember(dst, doc []byte, at int, sep bool, name, value []byte) []byte {
	dst = append(dst, doc[:at]...)
	if sep {
		dst = append(dst, ',')
	}
	dst = append(dst, name...)
	dst = append(dst, ':')
	dst = append(dst, value...)
	return append(dst, doc[at:]...)
}

// removeAt appends to dst doc without the member or element t and one
// separator next to it.
func removeAt(dst, doc []byte, t *target) []byte {
	switch {
	case t.sepAfter >= 0:
		return splice(dst, doc, t.start, t.sepAfter+1, nil, nil, nil)
	case t.sepBefore >= 0:
		return splice(dst, doc, t.sepBefore, t.vend, nil, nil, nil)
	default:
		return splice(dst, doc, t.start, t.vend, nil, nil, nil)
	}
}

// appendAmount appends the increment as a JSON number.
func (op *patchOp) appendAmount(b []byte) []byte {
	if op.isFloat {
		return jsontext.AppendNumber(b, op.incFloat)
	}
	return strconv.AppendInt(b, op.incInt, 10)
}

// addTo appends the sum of the valid JSON number num and the increment.
// ok is false if the sum is not finite.
func (op *patchOp) addTo(b, num []byte) ([]byte, bool) {
	text := unsafe.String(unsafe.SliceData(num), len(num))
	if !op.isFloat && !strings.ContainsAny(text, ".eE") {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			if s := n + op.incInt; (s > n) == (op.incInt > 0) || op.incInt == 0 {
				return strconv.AppendInt(b, s, 10), true
			}
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && f != 0 { // underflow reads as 0
		return nil, false
	}
	inc := op.incFloat
	if !op.isFloat {
		inc = float64(op.incInt)
	}
	s := f + inc
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return nil, false
	}
	return jsontext.AppendNumber(b, s), true
}

// encodePatchValue encodes a patch value as JSON: the common kinds
// directly (trusted: valid scalars by construction), json.RawMessage as
// given, anything else with encoding/json; what is not trusted is for
// the caller to validate.
func encodePatchValue(v any) (enc []byte, trusted bool, err error) {
	switch x := v.(type) {
	case nil:
		return []byte("null"), true, nil
	case bool:
		return strconv.AppendBool(nil, x), true, nil
	case string:
		return jsontext.AppendString(make([]byte, 0, len(x)+2), x), true, nil
	case int:
		return strconv.AppendInt(nil, int64(x), 10), true, nil
	case int8:
		return strconv.AppendInt(nil, int64(x), 10), true, nil
	case int16:
		return strconv.AppendInt(nil, int64(x), 10), true, nil
	case int32:
		return strconv.AppendInt(nil, int64(x), 10), true, nil
	case int64:
		return strconv.AppendInt(nil, x, 10), true, nil
	case uint:
		return strconv.AppendUint(nil, uint64(x), 10), true, nil
	case uint8:
		return strconv.AppendUint(nil, uint64(x), 10), true, nil
	case uint16:
		return strconv.AppendUint(nil, uint64(x), 10), true, nil
	case uint32:
		return strconv.AppendUint(nil, uint64(x), 10), true, nil
	case uint64:
		return strconv.AppendUint(nil, x, 10), true, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false, fmt.Errorf("unsupported value: %v", x)
		}
		return jsontext.AppendNumber(nil, x), true, nil
	case json.RawMessage:
		if x == nil {
			return []byte("null"), true, nil // as encoding/json marshals it
		}
		return bytes.Clone(bytes.TrimSpace(x)), false, nil
	}
	enc, err = json.Marshal(v)
	return enc, false, err
}

// PatchItem applies the patch ops to the live item (pk, id), in order, all
// or none, and returns the item as stored afterwards (status 200). A patch
// is a write: _ts and _etag change and the item's time to live restarts
// from now, so a patch of any property "touches" an item (sliding expiry);
// patching "/ttl" sets the item's own time to live (validated as any ttl),
// and removing it makes the item inherit the container's default again.
//
// It fails with ErrNotFound if there is no live item (pk, id) (an expired
// one included), with ErrPreconditionFailed if o.IfMatchEtag does not match
// or the patch's condition does not hold, with ErrBadRequest if the patch
// is empty, has more than MaxPatchOperations operations, names a system
// property or partition key path, has an operation that cannot be applied,
// or leaves an invalid item (nested too deep, an invalid ttl), and with
// ErrRequestTooLarge if the item would be over MaxItemSize. A failed patch
// changes nothing. It is charged as a replace of the patched item.
func (c *Container) PatchItem(ctx context.Context, pk PartitionKey, id string, ops PatchOperations, o *ItemOptions) (ItemResponse, error) {
	const op = "PatchItem"
	if err := c.check(ctx, op, id); err != nil {
		return ItemResponse{}, err
	}
	if err := c.pkPaths.check(pk, false); err != nil {
		return c.fail(op, id, err)
	}
	if err := validateItemID(id); err != nil {
		return c.fail(op, id, err)
	}
	patch, cond, perr := c.preparePatch(&ops)
	if perr != nil {
		return c.fail(op, id, perr)
	}
	return c.commitPatch(ctx, op, pk, id, patch, cond, o)
}

// commitPatch decides and applies a prepared patch under the item's shard
// lock, as commit does for the other writes.
func (c *Container) commitPatch(ctx context.Context, op string, pk PartitionKey, id string, ops []patchOp, cond *query.Query, o *ItemOptions) (ItemResponse, error) {
	fail := func(err error) (ItemResponse, error) {
		e, ok := err.(*Error)
		if !ok {
			return ItemResponse{}, err // the context's
		}
		resp, ferr := c.fail(op, id, e)
		return resp, ferr
	}
	ifMatch := ""
	if o != nil {
		ifMatch = o.IfMatchEtag
	}
	pb := patchBuffers.Get().(*patchBuf)
	defer pb.release()

	if mu := c.uniqueMu; mu != nil {
		mu.RLock()
		defer mu.RUnlock()
	}
	sh, h := c.shardFor(pk.enc, id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if c.deleted.Load() {
		return fail(&Error{StatusCode: statusNotFound, Message: msgNotFound})
	}
	now := c.store.clock.now()
	old := sh.items.get(pk.enc, id, h)
	switch {
	case old == "" || !c.rule.live(old, now):
		return fail(&Error{StatusCode: statusNotFound, Message: msgNotFound})
	case ifMatch != "" && !etagMatches(ifMatch, old.etag()):
		return fail(&Error{StatusCode: statusPreconditionFailed, Message: msgPrecondition})
	}
	r, err := c.patchDoc(ctx, ops, cond, old, pk.enc, now, pb)
	if err != nil {
		return fail(err)
	}
	claimed := c.uniqueMu != nil
	if claimed && c.claimUnique(pk.enc, id, r.doc, r.ttl, now) {
		return fail(&Error{StatusCode: statusConflict, Message: msgUniqueViolation})
	}
	cost := charge(opReplace, r.chargeSize)
	if err := c.drawAt(op, id, cost, now); err != nil {
		if claimed {
			c.releaseUnique(pk.enc, id, r.doc)
		}
		return ItemResponse{StatusCode: statusTooManyRequests}, err
	}
	m := mutation{cause: causeReplace, now: now, sh: sh, h: h, old: old, rec: r.record(pk.enc, now, c.store.nextVersionSeq(c.newGen(sh, old, true, "", "")), old.pos())}
	next, aerr := c.apply(&m)
	if aerr != nil {
		if claimed {
			c.releaseUnique(pk.enc, id, r.doc)
		}
		return ItemResponse{StatusCode: statusServiceUnavailable}, storageError(aerr, op, c.id, id)
	}
	c.store.reaper.notify(next)
	resp := ItemResponse{ETag: m.rec.etag(), RequestCharge: ru(cost), StatusCode: statusOK}
	if o == nil || !o.NoContentResponseOnWrite {
		resp.Value = m.rec.jsonBytes()
	}
	return resp, nil
}
