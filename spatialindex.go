package lethe

import (
	"unsafe"

	"github.com/google/btree"
	"github.com/lethedb/lethe/internal/geo"
	"github.com/lethedb/lethe/internal/query"
)

// Spatial indexes. For a path that a spatial index of the IndexingPolicy
// covers, a container keeps the S2 cells of every item's valid GeoJSON
// shape at the path (geo.Cells: a point's leaf cell, a few cells for other
// shapes), in a B-tree ordered by cell: made the first time a query asks,
// as the other indexes are (indexbuild.go), and kept up to date by every
// change after (indexItemsLocked, under the container's mu). Like the expiry
// index, it holds expired items until the reaper purges them; queries
// leave them out (liveOf).
//
// A filter ST_DISTANCE(c.path, shape) < r (or <=), ST_WITHIN or
// ST_INTERSECTS of c.path and a constant shape (query.SpatialFilter) takes
// as candidates the items with a cell that meets one of the filter's cells
// (geo.QueryCells: at most 12 that cover every shape that can satisfy it):
// for each of those, the cells in its span and its ancestors. The query
// then decides on them, so its results are a scan's. In a Geometry
// container, shapes not entirely inside the index's bounding box are
// candidates of every filter.

// spatialIndex is the spatial index of one path.
type spatialIndex struct {
	key     string // the path, "/"-joined: its name in the container's map
	path    []string
	model   geo.Model
	box     geo.Box
	tree    *btree.BTreeG[spatialEntry]
	cells   map[*byte][]geo.CellID // each record's cells, by the address of its bytes
	outside map[*byte]record       // Geometry: the records whose shape leaves the box
}

// spatialEntry is one cell of one record's shape.
type spatialEntry struct {
	cell geo.CellID
	addr uintptr // the record's address: entries of one cell in some order
	rec  record
}

// lessSpatialEntry orders entries by cell.
func lessSpatialEntry(a, b spatialEntry) bool {
	if a.cell != b.cell {
		return a.cell < b.cell
	}
	return a.addr < b.addr
}

// spatialIndexes are a container's spatial indexes, by path ("/"-joined).
type spatialIndexes map[string]*spatialIndex

// change makes si follow one item change: old ("" if none) goes, rec (""
// if none) comes. Replaying a change changes nothing (indexbuild.go).
func (si *spatialIndex) change(old, rec record) {
	if old != "" {
		a := recAddr(old)
		for _, c := range si.cells[a] {
			si.tree.Delete(spatialEntry{cell: c, addr: uintptr(unsafe.Pointer(a))})
		}
		delete(si.cells, a)
		delete(si.outside, a)
	}
	if rec == "" {
		return
	}
	a := recAddr(rec)
	if _, ok := si.cells[a]; ok {
		return
	}
	if _, ok := si.outside[a]; ok {
		return
	}
	body := rec.body()
	s, ok := query.ShapeAt(unsafe.Slice(unsafe.StringData(body), len(body)), si.path, si.model)
	if !ok {
		return
	}
	cells, inside := geo.Cells(s, si.model, si.box)
	if !inside {
		si.outside[a] = rec
		return
	}
	for _, c := range cells {
		si.tree.ReplaceOrInsert(spatialEntry{cell: c, addr: uintptr(unsafe.Pointer(a)), rec: rec})
	}
	si.cells[a] = cells
}

// itemChanged makes the spatial indexes follow one item change. The
// caller holds the container's mu.
func (ss spatialIndexes) itemChanged(old, rec record) {
	for _, si := range ss {
		si.change(old, rec)
	}
}

// candidates returns the records of si whose shape may satisfy f, each
// once. The caller holds the container's mu.
func (si *spatialIndex) candidates(f query.SpatialFilter) []record {
	seen := map[uintptr]bool{}
	var out []record
	add := func(e spatialEntry) {
		if !seen[e.addr] {
			seen[e.addr] = true
			out = append(out, e.rec)
		}
	}
	for _, q := range geo.QueryCells(f.Shape, f.Within, si.model, si.box) {
		lo, hi := q.Span()
		si.tree.AscendGreaterOrEqual(spatialEntry{cell: lo}, func(e spatialEntry) bool {
			if e.cell > hi {
				return false
			}
			add(e)
			return true
		})
		for _, a := range q.Ancestors() {
			si.tree.AscendGreaterOrEqual(spatialEntry{cell: a}, func(e spatialEntry) bool {
				if e.cell != a {
					return false
				}
				add(e)
				return true
			})
		}
	}
	for _, rec := range si.outside {
		out = append(out, rec)
	}
	return out
}

// spatialSettings returns the model and bounding box of the spatial index
// of path when props has one that covers it; ok is false otherwise.
func spatialSettings(props *ContainerProperties, path []string) (m geo.Model, box geo.Box, ok bool) {
	ip := props.IndexingPolicy
	if ip == nil || ip.IndexingMode == IndexingModeNone {
		return m, box, false
	}
	best := -1
	var found SpatialIndex
	for _, x := range ip.SpatialIndexes {
		r, err := parseIndexPath(x.Path)
		if err != nil {
			continue
		}
		if spec, covers := r.covers(path); covers && spec > best {
			best, found = spec, x
		}
	}
	if best < 0 {
		return m, box, false
	}
	m = props.geoModel()
	if bb := found.BoundingBox; m == geo.Geometry && bb != nil {
		box = geo.Box{Xmin: bb.Xmin, Ymin: bb.Ymin, Xmax: bb.Xmax, Ymax: bb.Ymax}
	}
	return m, box, true
}

// sameSettings reports whether props declares si as it was made.
func (si *spatialIndex) sameSettings(props *ContainerProperties) bool {
	m, box, ok := spatialSettings(props, si.path)
	return ok && m == si.model && box == si.box
}

// dropSpatialsLocked forgets the spatial indexes that props no longer
// declares as they were made. The caller holds the container's mu.
func (c *Container) dropSpatialsLocked(props *ContainerProperties) {
	for k, si := range c.mu.indexes.spatial {
		if !si.sameSettings(props) {
			delete(c.mu.indexes.spatial, k)
		}
	}
}

// spatialIndexFor returns the spatial index of path, making it if the
// container's policy declares one; nil if it does not, or if another
// query is making it (this one scans meanwhile). The caller holds
// c.batchMu for reading and no other lock.
func (c *Container) spatialIndexFor(path []string) *spatialIndex {
	key, ok := policyKey(path)
	if !ok {
		return nil
	}
	var model geo.Model // the settings as the policy says when the build starts
	var box geo.Box
	return buildOnce(c, "g:"+key, indexRecipe[*spatialIndex]{
		made: func() *spatialIndex { return c.mu.indexes.spatial[key] },
		may: func() bool {
			var declared bool
			model, box, declared = spatialSettings(&c.props, path)
			return declared
		},
		make: func(b *indexBuild, n int) *spatialIndex {
			n += n/8 + 16 // room for the writes made meanwhile and soon after
			si := &spatialIndex{key: key, path: path, model: model, box: box, tree: btree.NewG(btreeDegree, lessSpatialEntry),
				cells: make(map[*byte][]geo.CellID, n), outside: map[*byte]record{}}
			c.scanForBuild(func(rec record) { si.change("", rec) })
			c.catchUp(b, si.change)
			return si
		},
		keep: func(si *spatialIndex) bool {
			if !si.sameSettings(&c.props) {
				return false
			}
			if c.mu.indexes.spatial == nil {
				c.mu.indexes.spatial = spatialIndexes{}
			}
			c.mu.indexes.spatial[key] = si
			return true
		},
	})
}

// spatialDocs is docs through a spatial index, when r's WHERE clause has
// a spatial filter (query.SpatialFilter) on a path the container's policy
// indexes: the live items whose shape may satisfy it. It holds the batch
// lock for reading, as liveDocs does.
func (r *queryRun) spatialDocs() ([]query.Doc, []record, bool) {
	model := geo.Geography
	if r.env.Geometry {
		model = geo.Geometry
	}
	filters := r.q.SpatialFilters(r.params, model)
	if len(filters) == 0 {
		return nil, nil, false
	}
	c := r.c
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	for _, f := range filters {
		si := c.spatialIndexFor(f.Path)
		if si == nil || si.model != model {
			continue // none, or the query began under another policy
		}
		c.mu.Lock()
		if c.mu.indexes.spatial[si.key] != si {
			c.mu.Unlock()
			continue // dropped meanwhile by a policy change
		}
		rule := c.rule
		recs := si.candidates(f)
		c.mu.Unlock()
		r.plan.used = indexSpec(f.Path)
		qdocs, live := liveOf(recs, rule, r.now, r.pk)
		return qdocs, live, true
	}
	return nil, nil, false
}
