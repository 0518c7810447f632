package cosmosrest

// HandledMarks returns how many changes region h holds handled in the
// conflicts feed of the container coll of the database db.
func HandledMarks(h *Handler, db, coll string) int {
	d, ok := h.lookup(db)
	if !ok {
		return 0
	}
	d.confl.mu.Lock()
	defer d.confl.mu.Unlock()
	if f := d.confl.feeds[coll]; f != nil {
		return len(f.handled)
	}
	return 0
}
