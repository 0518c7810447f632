package query

import "slices"

// The system properties the REST front keeps out of lethe's items (_rid,
// _self, _attachments) and derives from each item where a result holds it
// whole: SELECT * and SELECT VALUE c (ReturnsItems), and the service's
// rewritten queries, which select c._rid and return the item as their
// payload (ServicePlan).

// isItem reports whether e is the FROM alias of the container's items.
func (q *Query) isItem(e expr) bool {
	x, ok := e.(*ident)
	return ok && q.from != nil && q.from.path == nil && x.slot == q.base
}

// RIDFields returns the output names of the items of q's select list that
// read the item's _rid (c._rid), and the text of q with, in their place,
// an object of the item's id and of its values at keyPaths (the partition
// key paths' property names), shaped as the item: run instead of q, its
// results hold what the front derives the _rid from where q's hold the
// _rid. names is nil when q reads no _rid there.
func (q *Query) RIDFields(keyPaths [][]string) (names []string, text string) {
	if q.star || q.valueSel {
		return nil, ""
	}
	var items []selectItem
	for i, it := range q.items {
		m, ok := it.x.(*member)
		if !ok || m.name != "_rid" || !q.isItem(m.x) {
			continue
		}
		if items == nil {
			items = slices.Clone(q.items)
		}
		items[i] = selectItem{x: keyObject(m.x, append([][]string{{"id"}}, keyPaths...)), alias: it.name, name: it.name}
		names = append(names, it.name)
	}
	if names == nil {
		return nil, ""
	}
	cp := *q
	cp.items = items
	return names, cp.String()
}

// keyObject is an object literal of the values of base at paths, nested
// as they are in base: {"id": c.id, "a": {"b": c.a.b}} for id and a/b. A
// path that is a prefix of another takes the whole value.
func keyObject(base expr, paths [][]string) expr {
	o := &objectLit{}
	for _, p := range paths {
		if len(p) == 0 || slices.Contains(o.keys, p[0]) {
			continue
		}
		var rest [][]string
		leaf := false
		for _, r := range paths {
			if len(r) > 0 && r[0] == p[0] {
				leaf = leaf || len(r) == 1
				rest = append(rest, r[1:])
			}
		}
		m := &member{x: base, name: p[0]}
		o.keys = append(o.keys, p[0])
		if leaf {
			o.vals = append(o.vals, m)
		} else {
			o.vals = append(o.vals, keyObject(m, rest))
		}
	}
	return o
}

// ItemFields returns where q's results hold the item whole: the output
// name of each item of its select list that is the item (c AS payload),
// and the names of each that is an object holding it ({"payload": c} AS
// payload: "payload", "payload").
func (q *Query) ItemFields() [][]string {
	if q.star || q.valueSel {
		return nil
	}
	var fields [][]string
	for _, it := range q.items {
		if q.isItem(it.x) {
			fields = append(fields, []string{it.name})
			continue
		}
		if o, ok := it.x.(*objectLit); ok {
			for i, v := range o.vals {
				if q.isItem(v) {
					fields = append(fields, []string{it.name, o.keys[i]})
				}
			}
		}
	}
	return fields
}

// Selects reports whether an item of q's select list has the output name
// name (SELECT ... AS name).
func (q *Query) Selects(name string) bool {
	if q.star || q.valueSel {
		return false
	}
	for _, it := range q.items {
		if it.name == name {
			return true
		}
	}
	return false
}
