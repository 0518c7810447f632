package lethe

// indexSet holds a container's indexes beside the shards' expiry indexes:
// one field per kind, each made as queries ask for it (or in the
// background), the builds under way and the paths asked for once. It is
// guarded by the container's mu. A kind of index joins the set with a
// field here, a place in kinds and a term of any; it then follows every
// item change from the one write path (indexItemsLocked).
type indexSet struct {
	secondary indexes                // the secondary indexes made so far (index.go)
	composite composites             // the composite indexes made so far (composite.go)
	vector    vecIndexes             // the vector indexes made so far (vectorindex.go)
	text      textIndexes            // the full-text indexes made so far (textindex.go)
	spatial   spatialIndexes         // the spatial indexes made so far (spatialindex.go)
	position  *positionIndex         // the items in position order, once a query resumed a scan (itemorder.go)
	unique    *uniqueIndex           // the unique key policy's, made with the container (uniquekey.go)
	building  map[string]*indexBuild // the index builds under way (indexbuild.go)
	wanted    map[string]bool        // paths a filter asked for once, whose index is not made yet
}

// itemIndex is a kind of index that follows item changes: itemChanged
// makes every index of the kind follow one, old ("" if none) going and rec
// ("" if none) coming. The caller holds the container's mu.
type itemIndex interface {
	itemChanged(old, rec record)
}

// kinds returns the set's kinds of index, in the order a change is made
// in them. An empty kind (a nil map or position index) ignores changes.
func (s *indexSet) kinds() [7]itemIndex {
	return [...]itemIndex{s.secondary, s.composite, s.vector, s.text, s.spatial, s.position, s.unique}
}

// any reports whether the set holds an index or a build, which a write
// must keep beside the expiry index.
func (s *indexSet) any() bool {
	return len(s.secondary) > 0 || len(s.composite) > 0 || len(s.vector) > 0 || len(s.text) > 0 ||
		len(s.spatial) > 0 || s.position != nil || s.unique != nil || len(s.building) > 0
}
