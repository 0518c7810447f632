package lethe

// SetAfterUniqueCheck makes fn run in every write to c's store once its
// unique key check passed, before the write is applied (nil: none).
func SetAfterUniqueCheck(c *Container, fn func()) {
	c.store.setTestHooks(func(h *testHooks) { h.afterUniqueCheck = fn })
}
