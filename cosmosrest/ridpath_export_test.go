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

// ForgetDocRIDs drops the document index by resource id of the container
// coll of the database db, as a delete of the container does.
func ForgetDocRIDs(h *Handler, db, coll string) {
	if d, ok := h.lookup(db); ok {
		d.docRIDs.forget(coll)
	}
}

// DocRIDScans returns how many scans the document index by resource id of
// the container coll of the database db has begun.
func DocRIDScans(h *Handler, db, coll string) int {
	d, ok := h.lookup(db)
	if !ok {
		return 0
	}
	d.docRIDs.mu.Lock()
	i := d.docRIDs.m[coll]
	d.docRIDs.mu.Unlock()
	if i == nil {
		return 0
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.scans
}
