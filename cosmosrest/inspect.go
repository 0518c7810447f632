package cosmosrest

import (
	"context"

	"github.com/lethedb/lethe"
)

// Store returns the lethe store that holds database id, and whether there
// is such a database. It is for tests and tools that look at what the
// front serves (lethetest reads items' stored JSON and expiries through
// it): the store belongs to the handler, which closes it; writes made
// through it bypass the front's bookkeeping of resources and sessions.
func (h *Handler) Store(id string) (*lethe.Store, bool) {
	db, ok := h.lookup(id)
	if !ok {
		return nil, false
	}
	return db.store, true
}

// DatabaseIDs returns the ids of the databases the handler serves, in
// order: with Store, what a tool that reports on them (cmd/lethe's
// metrics, its export) walks.
func (h *Handler) DatabaseIDs() []string {
	dbs := h.databases()
	ids := make([]string, len(dbs))
	for i, db := range dbs {
		ids[i] = db.id
	}
	return ids
}

// Purge deletes every expired item of every container of every database
// now, as the stores' reapers do in the background (lethe's
// Container.Purge), and returns how many it deleted. Under a manual clock
// it makes a move of the clock take full effect at once: the expiries are
// in the change feeds and the items gone from the stores' statistics.
func (h *Handler) Purge(ctx context.Context) (int, error) {
	total := 0
	for _, db := range h.databases() {
		for _, id := range db.store.ContainerIDs() {
			c, err := db.store.Container(id)
			if err != nil {
				continue // deleted meanwhile
			}
			n, err := c.Purge(ctx)
			total += n
			if err != nil && ctx.Err() != nil {
				return total, err
			}
		}
	}
	return total, nil
}
