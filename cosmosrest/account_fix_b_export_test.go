package cosmosrest

import (
	"context"
	"time"

	"github.com/lethedb/lethe"
)

// HoldDelivery takes every change on its way to region, as a delivery
// takes the changes due, and returns what applies them, as that delivery
// goes on to (later: after whatever the test makes happen in between).
func HoldDelivery(a *Account, region string) func() {
	n := a.byName[region]
	taken := a.sched.All(n.name)
	return func() {
		n.deliver.Lock()
		defer n.deliver.Unlock()
		n.apply(taken)
	}
}

// CreateInStore makes container coll, partitioned on /pk, in database db
// of h's stores alone, as no request does: regions made to differ.
func CreateInStore(h *Handler, db, coll string) error {
	d, ok := h.lookup(db)
	if !ok {
		return lethe.ErrNotFound
	}
	_, err := d.store.CreateContainer(context.Background(), lethe.ContainerProperties{ID: coll, PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	return err
}

// Start returns the instant h gives the containers it found on disk.
func Start(h *Handler) time.Time { return h.start }

// BeforeReplay makes a's account-wide changes call f before each region
// replays one, with the region's name, while the change is being made.
func BeforeReplay(a *Account, f func(region string)) { a.beforeReplay.Store(&f) }

// ItemsAdmitted reports whether an item request to a could be served now,
// rather than wait for the account-wide change under way (fanout).
func ItemsAdmitted(a *Account) bool {
	if !a.topo.TryRLock() {
		return false
	}
	a.topo.RUnlock()
	return true
}
