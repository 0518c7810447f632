package query

import (
	bin "encoding/binary"
	"strings"
)

// Key places a result in the order of a query's results: its ORDER BY
// values, then the identity key (Doc.ID) of the item it was made from, then
// its position among the results that item produced (JOIN rows). A DISTINCT
// result has its canonical encoding in place of an item. A GROUP BY result
// has its group's values in place of ORDER BY values and their canonical
// encoding in place of an item, so that it keeps its place whatever other
// groups come and go. A result made from no item (an aggregate, a query
// without FROM) has neither. Results come in
// the order of their keys, and no two results of one evaluation have equal
// keys, so "the results after this key" is a place to resume that does not
// depend on what else has changed.
type Key struct {
	order []value
	item  string
	seq   int32
}

// Item returns the identity key of the item k's result was made from (""
// if none).
func (k Key) Item() string { return k.item }

// ItemEnd returns the key that sorts after every result made from the item
// whose identity key is id, and before those of the items after it, in a
// query without ORDER BY: where to resume after the whole item.
func ItemEnd(id string) Key { return Key{item: id, seq: 1<<31 - 1} }

// PastItem reports whether k is an ItemEnd: every result of its item
// comes before it.
func (k Key) PastItem() bool { return k.seq == 1<<31-1 }

// Key returns the key of res.Items[i].
func (res *Result) Key(i int) Key {
	r := res.rows[i]
	k := Key{order: r.keys}
	switch {
	case res.canon != nil:
		k.item = res.canon[i]
	case res.q.grouped:
		k.item = res.groups[r.doc]
	case res.q.from != nil && !res.q.aggregated:
		k.item, k.seq = res.docs[r.doc].ID, r.seq
	}
	return k
}

// Fits reports whether k can be the key of a result of q: it has as many
// ORDER BY (or GROUP BY) values as q's results. A key from a continuation
// token that does not fit is refused before anything is resumed from it.
func (q *Query) Fits(k Key) bool { return len(k.order) == q.keyLen() }

// compareOrder compares two rows' ORDER BY values, each direction applied,
// or for GROUP BY their groups' values, ascending. A missing value counts
// as undefined.
func (q *Query) compareOrder(a, b []value) int {
	for i := range q.keyLen() {
		desc := i < len(q.orderBy) && q.orderBy[i].desc
		var x, y value
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if c := compareTotal(x, y); c != 0 {
			if desc {
				return -c
			}
			return c
		}
	}
	return 0
}

// compareKeys compares two keys of results of q in the order of its results.
func (q *Query) compareKeys(a, b Key) int {
	if c := q.compareOrder(a.order, b.order); c != 0 {
		return c
	}
	if c := strings.Compare(a.item, b.item); c != 0 {
		return c
	}
	return cmpInt(int(a.seq), int(b.seq))
}

// AppendBinary appends the encoding of k that ParseKey reads: the count of
// ORDER BY values, each as a flag byte (0 undefined, 1 defined) and, when
// defined, its JSON with its length before it; the item and the position,
// all lengths and numbers as unsigned varints.
func (k Key) AppendBinary(dst []byte) []byte {
	dst = bin.AppendUvarint(dst, uint64(len(k.order)))
	var js []byte
	for _, v := range k.order {
		if v.k == kUndef {
			dst = append(dst, 0)
			continue
		}
		js = appendJSON(js[:0], v)
		dst = append(dst, 1)
		dst = bin.AppendUvarint(dst, uint64(len(js)))
		dst = append(dst, js...)
	}
	dst = bin.AppendUvarint(dst, uint64(len(k.item)))
	dst = append(dst, k.item...)
	return bin.AppendUvarint(dst, uint64(k.seq))
}

// ParseKey reads a key that AppendBinary wrote, the whole of b. The key may
// alias b.
func ParseKey(b []byte) (Key, bool) {
	var k Key
	next := func() (uint64, bool) {
		n, w := bin.Uvarint(b)
		if w <= 0 {
			return 0, false
		}
		b = b[w:]
		return n, true
	}
	n, ok := next()
	if !ok || n > uint64(len(b)) {
		return Key{}, false
	}
	if n > 0 {
		k.order = make([]value, n)
	}
	for i := range k.order {
		if len(b) == 0 {
			return Key{}, false
		}
		flag := b[0]
		b = b[1:]
		switch flag {
		case 0:
			continue
		case 1:
		default:
			return Key{}, false
		}
		l, ok := next()
		if !ok || l > uint64(len(b)) {
			return Key{}, false
		}
		v := decodeRaw(b[:l])
		if v.k == kUndef {
			return Key{}, false
		}
		k.order[i] = stripRaw(v)
		b = b[l:]
	}
	l, ok := next()
	if !ok || l > uint64(len(b)) {
		return Key{}, false
	}
	k.item = string(b[:l])
	b = b[l:]
	seq, ok := next()
	if !ok || seq > 1<<31-1 || len(b) != 0 {
		return Key{}, false
	}
	k.seq = int32(seq)
	return k, true
}
