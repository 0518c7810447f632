package lethe

// indexSet holds a container's indexes beside the shards' expiry indexes:
// one field per kind, made as queries ask for them (or in the background),
// and the builds under way. It is guarded by the container's mu.
type indexSet struct {
	secondary indexes                // the secondary indexes made so far (index.go)
	composite composites             // the composite indexes made so far (composite.go)
	vector    vecIndexes             // the vector indexes made so far (vectorindex.go)
	text      textIndexes            // the full-text indexes made so far (textindex.go)
	position  *positionIndex         // the items in position order, once a query resumed a scan (itemorder.go)
	building  map[string]*indexBuild // the index builds under way (indexbuild.go)
	wanted    map[string]bool        // paths a filter asked for once, whose index is not made yet
}
