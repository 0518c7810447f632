package lethe

import (
	"slices"
	"strings"

	"github.com/google/btree"

	"github.com/lethedb/lethe/internal/query"
)

// Composite indexes. An IndexingPolicy's CompositeIndexes list paths with a
// direction each, as in Cosmos DB. A query ordered by exactly those paths,
// in those directions or all of them reversed, with TOP or LIMIT or more
// results than a page, walks the composite index in order instead of
// sorting every item. A composite index
// is made the first time such a query runs, and kept up to date by every
// change after, as a single path's index is (index.go). A query ordered by
// several paths without a composite index is refused, as Cosmos DB refuses
// it, with QueryOptions.RequireCompositeIndexes (the REST front's default);
// without, it still runs (it sorts every item), and its IndexMetrics name
// the composite index that would serve it.

// CompositeIndexOrder is the direction of one path of a composite index.
type CompositeIndexOrder string

// The directions of a composite index's paths.
const (
	CompositeIndexAscending  CompositeIndexOrder = "ascending"
	CompositeIndexDescending CompositeIndexOrder = "descending"
)

// CompositeIndex is one path of a composite index: the path of a value
// ("/name", "/address/city"; no "/?" or "/*"), and its direction
// (ascending when empty).
type CompositeIndex struct {
	Path  string              `json:"path"`
	Order CompositeIndexOrder `json:"order,omitempty"`
}

// compositeSpec is a parsed composite index: its paths and directions.
type compositeSpec struct {
	paths [][]string
	desc  []bool
}

// parseComposite reads one composite index of a policy.
func parseComposite(ci []CompositeIndex) (compositeSpec, *Error) {
	var s compositeSpec
	if len(ci) < 2 {
		return s, badRequest("a composite index needs at least two paths, not %d", len(ci))
	}
	for _, p := range ci {
		if strings.HasSuffix(p.Path, "/?") || strings.HasSuffix(p.Path, "/*") {
			return s, badRequest(`the composite index path %q is invalid: it must name a value, without "/?" or "/*"`, p.Path)
		}
		r, err := parseIndexPath(p.Path + "/?")
		if err != nil {
			return s, badRequest("the composite index path %q is invalid: %s", p.Path, strings.TrimPrefix(err.Message, "the indexing policy path "))
		}
		var desc bool
		switch p.Order {
		case "", CompositeIndexAscending:
		case CompositeIndexDescending:
			desc = true
		default:
			return s, badRequest("the composite index path %q has the order %q: it must be %q or %q", p.Path, p.Order, CompositeIndexAscending, CompositeIndexDescending)
		}
		s.paths, s.desc = append(s.paths, r.names), append(s.desc, desc)
	}
	return s, nil
}

// key names the composite index in a container's map: its specs joined
// by ", ", "/a ASC, /b DESC".
func (s compositeSpec) key() string { return strings.Join(s.specs(), ", ") }

// specs names each path of the composite index as IndexMetrics' IndexSpecs
// do, as Cosmos DB's index metrics name them: "/a ASC", "/b DESC".
func (s compositeSpec) specs() []string {
	out := make([]string, len(s.paths))
	for i, p := range s.paths {
		dir := " ASC"
		if s.desc[i] {
			dir = " DESC"
		}
		out[i] = strings.TrimSuffix(indexSpec(p), "/?") + dir
	}
	return out
}

// serves reports whether a walk of the index in order, or backwards
// (reverse), gives the order of an ORDER BY of paths in directions desc.
func (s compositeSpec) serves(paths [][]string, desc []bool) (reverse, ok bool) {
	if len(paths) != len(s.paths) {
		return false, false
	}
	for i := range paths {
		if !slices.Equal(paths[i], s.paths[i]) {
			return false, false
		}
	}
	same, flipped := true, true
	for i := range desc {
		same = same && desc[i] == s.desc[i]
		flipped = flipped && desc[i] != s.desc[i]
	}
	return flipped, same || flipped
}

// compositeIndex is the index of a compositeSpec: every item, keyed by its
// values at the paths, in the spec's directions.
type compositeIndex struct {
	spec compositeSpec
	t    *btree.BTreeG[compositeEntry]
}

// compositeEntry is one item's values at the index's paths. As in a
// single path's index, equal values are told apart by the record's address.
type compositeEntry struct {
	keys []query.IndexKey
	rec  record
}

func newCompositeIndex(spec compositeSpec) *compositeIndex {
	return &compositeIndex{spec: spec, t: btree.NewG(btreeDegree, func(a, b compositeEntry) bool {
		return compareCompositeEntries(spec.desc, a, b) < 0
	})}
}

// compareCompositeEntries orders entries by their keys in the index's
// directions, then by their records' addresses. A pivot (pivot) may hold
// fewer keys than the index's paths: it comes before (or after) every entry
// that begins with them.
func compareCompositeEntries(desc []bool, a, b compositeEntry) int {
	for i := range min(len(a.keys), len(b.keys)) {
		if c := a.keys[i].Compare(b.keys[i]); c != 0 {
			if desc[i] {
				return -c
			}
			return c
		}
	}
	return compareRecAddrs(a.rec, b.rec)
}

// entry returns rec's entry in ix.
func (ix *compositeIndex) entry(rec record) compositeEntry {
	keys := make([]query.IndexKey, len(ix.spec.paths))
	for i, p := range ix.spec.paths {
		keys[i] = keyAt(rec, p)
	}
	return compositeEntry{keys, rec}
}

// composites are a container's composite indexes made so far, by key.
type composites map[string]*compositeIndex

// change makes ix follow one item change.
func (ix *compositeIndex) change(old, rec record) {
	if old != "" {
		ix.t.Delete(ix.entry(old))
	}
	if rec != "" {
		ix.t.ReplaceOrInsert(ix.entry(rec))
	}
}

// itemChanged makes the composite indexes follow one item change, as
// indexes.itemChanged does. The caller holds the container's mu.
func (cs composites) itemChanged(old, rec record) {
	for _, ix := range cs {
		ix.change(old, rec)
	}
}

// compositeFor returns the composite index of the policy that serves an
// ORDER BY of paths in directions desc, making it if need be, and whether
// to walk it backwards; potential is the index that would serve it when
// the policy has none (nil when it has one). The caller holds
// c.batchMu for reading and no other lock.
func (c *Container) compositeFor(paths [][]string, desc []bool) (ix *compositeIndex, reverse bool, potential *compositeSpec) {
	c.mu.Lock()
	// The indexes made so far are all declared by the policy (a policy
	// change drops the others): most queries find theirs without parsing it.
	for _, made := range c.mu.indexes.composite {
		if r, ok := made.spec.serves(paths, desc); ok {
			c.mu.Unlock()
			return made, r, nil
		}
	}
	policy := c.props.IndexingPolicy
	var spec compositeSpec
	found := false
	if policy != nil && policy.IndexingMode != IndexingModeNone {
		for _, ci := range policy.CompositeIndexes {
			s, err := parseComposite(ci)
			if err != nil {
				continue
			}
			if r, ok := s.serves(paths, desc); ok {
				spec, reverse, found = s, r, true
				break
			}
		}
	}
	if !found {
		c.mu.Unlock()
		if policy != nil && policy.IndexingMode == IndexingModeNone {
			return nil, false, nil
		}
		return nil, false, &compositeSpec{paths, desc}
	}
	key := spec.key()
	if ix = c.mu.indexes.composite[key]; ix != nil || c.indexCountLocked() >= maxIndexes {
		c.mu.Unlock()
		return ix, reverse, nil
	}
	c.mu.Unlock()
	return c.buildComposite(key, spec), reverse, nil
}

// buildComposite makes a composite index from the container's items while
// writes go on, as buildIndex does for one path.
func (c *Container) buildComposite(key string, spec compositeSpec) *compositeIndex {
	return buildOnce(c, "c:"+key, indexRecipe[*compositeIndex]{
		made: func() *compositeIndex { return c.mu.indexes.composite[key] },
		may:  func() bool { return true }, // compositeFor found it in the policy
		make: func(b *indexBuild, n int) *compositeIndex {
			ix := newCompositeIndex(spec)
			fill(c, b, n, ix.t, ix.entry, func(a, b compositeEntry) int { return compareCompositeEntries(spec.desc, a, b) }, ix.change)
			return ix
		},
		keep: func(ix *compositeIndex) bool {
			if !compositeDeclared(c.props.IndexingPolicy, key) || c.indexCountLocked() >= maxIndexes {
				return false
			}
			if c.mu.indexes.composite == nil {
				c.mu.indexes.composite = composites{}
			}
			c.mu.indexes.composite[key] = ix
			return true
		},
	})
}

// compositeDeclared reports whether the policy declares the composite
// index of key (and indexes at all).
func compositeDeclared(ip *IndexingPolicy, key string) bool {
	if ip == nil || ip.IndexingMode == IndexingModeNone {
		return false
	}
	for _, ci := range ip.CompositeIndexes {
		if s, err := parseComposite(ci); err == nil && s.key() == key {
			return true
		}
	}
	return false
}

// orderedComposite walks a composite index in order (or backwards) and
// returns the first want records, the keys of the last one taken, and
// whether the walk reached the end; with from (a query resuming after a
// result whose values were from), it starts at the first entry of those
// values. rule is the expiry rule of the same instant; current is false,
// and nothing else is returned, if a policy change has dropped the index
// meanwhile. The caller holds c.batchMu for reading.
func (c *Container) orderedComposite(ix *compositeIndex, reverse bool, want int, from []query.IndexKey) (recs []record, last []query.IndexKey, exhausted bool, rule expiryRule, current bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.indexes.composite[ix.spec.key()] != ix {
		return nil, nil, false, rule, false
	}
	rule = c.rule
	exhausted = true
	visit := func(e compositeEntry) bool {
		if len(recs) == want {
			exhausted = false
			return false
		}
		recs = append(recs, e.rec)
		last = e.keys
		return true
	}
	// Entries of a type alone (arrays, objects) are in the order of the
	// next paths, not of their own values: a walk resuming among them
	// starts at the first entry of that type.
	for i, k := range from {
		if k.TypeOnly() {
			from = from[:i+1]
			break
		}
	}
	switch {
	case reverse && from != nil:
		ix.t.DescendLessOrEqual(compositeEntry{from, pivot(true)}, visit)
	case reverse:
		ix.t.Descend(visit)
	case from != nil:
		ix.t.AscendGreaterOrEqual(compositeEntry{from, pivot(false)}, visit)
	default:
		ix.t.Ascend(visit)
	}
	return recs, last, exhausted, rule, true
}

// errNoCompositeIndex is Cosmos DB's message for a query ordered by several
// paths that no composite index serves.
const errNoCompositeIndex = "The order by query does not have a corresponding composite index that it can be served from."

// checkOrderByIndex refuses, as Cosmos DB does, a query ordered by several
// paths that no composite index of the container's policy serves (in its
// directions or all reversed; none does in the none indexing mode)
// (QueryOptions.RequireCompositeIndexes).
func (c *Container) checkOrderByIndex(q *query.Query) error {
	paths, desc, ok := q.OrderByPaths()
	if !ok || len(paths) < 2 {
		return nil
	}
	c.mu.Lock()
	policy := c.props.IndexingPolicy
	c.mu.Unlock()
	if policy != nil && policy.IndexingMode != IndexingModeNone {
		for _, ci := range policy.CompositeIndexes {
			if s, err := parseComposite(ci); err == nil {
				if _, ok := s.serves(paths, desc); ok {
					return nil
				}
			}
		}
	}
	return badRequest("%s", errNoCompositeIndex)
}
