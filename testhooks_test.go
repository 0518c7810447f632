package lethe

// hooksOf returns the test hooks of c's store, giving it hooks of its own
// first if it has none. The package's internal tests change their fields
// as they once changed package variables: where the store's work reading
// a field is ordered with the change (before it starts, in a hook it
// runs), which setTestHooks, replacing the whole, does not need.
func hooksOf(c *Container) *testHooks {
	if h := c.store.hooks.Load(); h != nil {
		return h
	}
	c.store.hooks.CompareAndSwap(nil, new(testHooks))
	return c.store.hooks.Load()
}
