package lethe

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
