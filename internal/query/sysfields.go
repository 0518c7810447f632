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
// read the item's _rid (c._rid), and the text of q with the item itself in
// their place (c AS _rid): run instead of q, its results hold the item
// where q's hold its _rid, for the front to derive the _rid from. names is
// nil when q reads no _rid there.
func (q *Query) RIDFields() (names []string, text string) {
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
		items[i] = selectItem{x: m.x, alias: it.name, name: it.name}
		names = append(names, it.name)
	}
	if names == nil {
		return nil, ""
	}
	cp := *q
	cp.items = items
	return names, cp.String()
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
