package cosmosrest

// DocRIDIndexes returns how many containers of the database db have a
// document index by resource id (docRIDIndex).
func DocRIDIndexes(h *Handler, db string) int {
	d, ok := h.lookup(db)
	if !ok {
		return 0
	}
	d.docRIDs.mu.Lock()
	defer d.docRIDs.mu.Unlock()
	return len(d.docRIDs.m)
}
