package lethe

import (
	"fmt"
	"slices"
)

// SetAfterUniqueCheck makes fn run in every write to c's store once its
// unique key check passed, before the write is applied (nil: none).
func SetAfterUniqueCheck(c *Container, fn func()) {
	c.store.setTestHooks(func(h *testHooks) { h.afterUniqueCheck = fn })
}

// UniqueClaims returns how many unique values single writes to c have
// claimed and not yet made or given back.
func UniqueClaims(c *Container) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u := c.mu.indexes.unique; u != nil {
		return len(u.claims)
	}
	return 0
}

// CheckUniqueIndex returns an error when c's unique index is not the one
// made anew from its items (as recovery makes it), when claims are left in
// it, or, unless shared, when two items live now share the values of a
// unique key.
func CheckUniqueIndex(c *Container, shared bool) error {
	for i := range c.shards {
		c.shards[i].mu.RLock()
		defer c.shards[i].mu.RUnlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.mu.indexes.unique
	if u == nil {
		return nil
	}
	if len(u.claims) != 0 {
		return fmt.Errorf("%d claims are left", len(u.claims))
	}
	fresh := newUniqueIndex(c.props.UniqueKeyPolicy)
	for i := range c.shards {
		c.shards[i].items.all(func(rec record) bool {
			fresh.itemChanged("", rec)
			return true
		})
	}
	if len(fresh.held) != len(u.held) {
		return fmt.Errorf("the index holds %d entries, its items make %d", len(u.held), len(fresh.held))
	}
	now := c.store.clock.now()
	for e, recs := range fresh.held {
		got := slices.Clone(u.held[e])
		slices.Sort(got)
		slices.Sort(recs)
		if !slices.Equal(got, recs) {
			return fmt.Errorf("the entry %q holds %d versions, its items make %d", e, len(got), len(recs))
		}
		live := 0
		for _, r := range recs {
			if c.rule.live(r, now) {
				live++
			}
		}
		if live > 1 && !shared {
			return fmt.Errorf("%d live items share the entry %q", live, e)
		}
	}
	return nil
}
