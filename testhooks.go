package lethe

import "time"

// testHooks are the points where the package's tests step into a store's
// work, or change how it works, one store at a time so that tests run in
// parallel. A store's hooks (Store.hooks) are nil in production; tests set
// them through export_test.go, which replaces the whole (setTestHooks),
// or change the fields of those they gave the store where the change is
// ordered with the store's reads of them (hooksOf, in the package's own
// tests). Each field's zero value is production's behaviour. Recovery,
// which runs before a test can set a store's hooks, has its one hook in
// the store's Options (afterMap).
type testHooks struct {
	afterStatsShard func()          // runs after Stats has summed each shard's counts
	afterBuildShard func(shard int) // runs after a build has read each shard, with no lock held
	catchUpFew      int             // how few changes a build replays under c.mu (0: catchUpFew)

	// Run in applyItems for a change to a container with a change feed:
	// beforeFeedChange once it is decided, before it is made or logged;
	// afterLogItems (durable) once it is logged, before it waits for the
	// log; afterFeedPut (in memory) once the id tables have it, before it
	// is numbered; afterFeedNumber (in memory) between its numbering by
	// numberLocked and its change to the expiry index.
	beforeFeedChange, afterLogItems, afterFeedPut, afterFeedNumber func()

	noIndexes         bool                 // queries use no secondary index (to compare with a scan)
	beforeOrderedWalk func()               // runs once a query ordered through an index has chosen it
	noPruneScans      bool                 // exact vector scans do not prune (topK.prune)
	afterGraphSearch  func(found int)      // runs after each search of a vector graph
	afterExactScan    func(pruned int)     // runs after each exact vector scan
	afterReapFetch    func([]expiredEntry) // runs in reap between taking a batch and purging it
	reapNow           func() time.Time     // the clock reap times its batches by (nil: time.Now)
	afterUniqueCheck  func()               // runs once a write's unique key check passed, before it is applied
}

// testHooks returns s's test hooks, nil in production.
func (s *Store) testHooks() *testHooks { return s.hooks.Load() }

// useIndexes reports whether queries of s may use secondary indexes: always
// but where a test compares them with a scan.
func (s *Store) useIndexes() bool {
	h := s.hooks.Load()
	return h == nil || !h.noIndexes
}

// setTestHooks replaces s's test hooks by a copy of them that change made:
// the hooks a store's work loads are never changed under it.
func (s *Store) setTestHooks(change func(h *testHooks)) {
	var h testHooks
	if old := s.hooks.Load(); old != nil {
		h = *old
	}
	change(&h)
	s.hooks.Store(&h)
}
