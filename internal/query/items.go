package query

// ReturnsItems reports whether each result of q is a whole item, as
// stored: SELECT * or SELECT VALUE of the FROM alias, over a FROM without a
// path, without JOIN, aggregates or GROUP BY. The REST front adds Cosmos
// DB's system properties to such results, as the service returns them.
func (q *Query) ReturnsItems() bool {
	if q.from == nil || q.from.path != nil || len(q.joins) > 0 || q.aggregated || q.grouped {
		return false
	}
	if q.star {
		return true
	}
	if !q.valueSel || len(q.items) != 1 {
		return false
	}
	id, ok := q.items[0].x.(*ident)
	return ok && id.slot == q.fromSlot()
}
