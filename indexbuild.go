package lethe

import (
	"slices"

	"github.com/google/btree"
)

// Making an index while writes go on. A build registers itself, under
// c.mu, before it reads any item; from then on applyItems appends
// every item change to the build's log as well. The build reads the items
// shard by shard, each under that shard's read lock alone, so a write waits
// at most for the reading of one shard. It then sorts the entries and makes
// the tree with no lock held. It replays the logged changes into the tree,
// in order, with no lock held either, round after round while a round has
// many, and at last, under c.mu, replays the few left and
// publishes the index.
//
// Why that is exact: a write holds its shard's write lock through both its
// id-table change and applyItems, so the reading of a shard sees each
// change to it either whole, or not at all. A change made before the build
// registered is in the items read. A change made after is in the log; if
// the reading saw it too, replaying it again is harmless, since removing an
// entry that is not there and inserting one that is both change nothing,
// and a version the reading saw that a later change replaced is removed by
// that change's replay.

// itemChange is one item change: the record before and after ("": none).
type itemChange struct{ old, rec record }

// indexBuild is a build under way: the changes made since it began.
type indexBuild struct{ changes []itemChange }

// startBuild registers a build of the index named key ("p:" and a path,
// or "c:" and a composite spec), and returns it with the number of items
// the container holds, or nil if a build of the same index is already
// under way. The caller holds c.mu.
func (c *Container) startBuildLocked(key string) (*indexBuild, int) {
	if c.mu.indexes.building[key] != nil {
		return nil, 0
	}
	if c.mu.indexes.building == nil {
		c.mu.indexes.building = map[string]*indexBuild{}
	}
	b := &indexBuild{}
	c.mu.indexes.building[key] = b
	c.shared.Store(true) // before the build's scan: see the locking note
	return b, c.itemCount()
}

// indexRecipe is what buildOnce needs to know of one kind of index. Each
// of its functions but make is called with c.mu held.
type indexRecipe[I comparable] struct {
	made func() I    // the index if the container has it already (the zero I if not)
	may  func() bool // whether the container may make it now (its policy, its count of indexes)
	// make makes the index of build b (n: about how many items there
	// are) from the container's items and replays the changes logged
	// meanwhile (fill, or scanForBuild and catchUp); it returns holding
	// c.mu.
	make func(b *indexBuild, n int) I
	// keep records the index made in the container, if the policy still
	// allows it, and reports whether it did.
	keep func(I) bool
}

// buildOnce returns the index of build key, as the container has it, or
// made while writes go on: the zero I when the container may not make it
// (r.may), when another query is making it (this one scans meanwhile), or
// when a policy change meanwhile cancelled the build or no longer allows
// the index (r.keep). The caller holds no container lock but, for a
// path's or a composite index, c.batchMu for reading.
func buildOnce[I comparable](c *Container, key string, r indexRecipe[I]) I {
	var none I
	c.mu.Lock()
	if ix := r.made(); ix != none {
		c.mu.Unlock()
		return ix // made meanwhile
	}
	if !r.may() {
		c.mu.Unlock()
		return none
	}
	b, n := c.startBuildLocked(key)
	c.mu.Unlock()
	if b == nil {
		return none
	}
	ix := r.make(b, n)
	defer c.mu.Unlock()
	if !c.finishBuildLocked(key, b) || !r.keep(ix) {
		return none
	}
	return ix
}

// fill makes the entries of build b's index (entry: a record's entry;
// compare: their order; n: about how many items there are) from the
// container's items, inserts them into t sorted, last first, and replays
// the changes logged meanwhile (change: one change made to the index). It
// returns holding c.mu.
//
// Last first, each entry goes to the front of the first leaf, and a leaf
// that fills splits into itself and a new node of its upper half, made to
// fit it: the tree's nodes end up full, in arrays of 32 entries. In
// order, the nodes left behind each kept the 64-entry array they grew to
// with 31 entries in it: an index took twice the memory
// (BenchmarkIndexMemory: 101.7 bytes an item then, 51.9 now), and the
// build was no faster.
func fill[E any](c *Container, b *indexBuild, n int, t *btree.BTreeG[E], entry func(record) E, compare func(a, b E) int, change func(old, rec record)) {
	es := make([]E, 0, n)
	c.scanForBuild(func(rec record) { es = append(es, entry(rec)) })
	slices.SortFunc(es, compare)
	for _, e := range slices.Backward(es) {
		t.ReplaceOrInsert(e)
	}
	c.catchUp(b, change)
}

// scanForBuild calls fn with every record of the container, shard by shard,
// each under the shard's read lock alone.
func (c *Container) scanForBuild(fn func(record)) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.RLock()
		sh.items.all(func(rec record) bool {
			fn(rec)
			return true
		})
		sh.mu.RUnlock()
		if h := c.store.testHooks(); h != nil && h.afterBuildShard != nil {
			h.afterBuildShard(i)
		}
	}
}

// finishBuildLocked ends build b of the index named key: it reports
// whether b is still the container's build of it (a policy change or a
// drop cancels every build) and forgets it. The caller holds
// c.mu, and has replayed every change logged for b (catchUp).
func (c *Container) finishBuildLocked(key string, b *indexBuild) (ok bool) {
	if c.mu.indexes.building[key] != b {
		return false
	}
	delete(c.mu.indexes.building, key)
	return true
}

// logForBuildsLocked appends an item change to every build under way. The
// caller holds c.mu.
func (c *Container) logForBuildsLocked(old, rec record) {
	for _, b := range c.mu.indexes.building {
		b.changes = append(b.changes, itemChange{old, rec})
	}
}

// catchUpRounds bounds the rounds of replay without the lock; catchUpFew
// is how few changes a round may leave to replay under it (tests set
// fewer: testHooks.catchUpFew).
const (
	catchUpRounds = 8
	catchUpFew    = 1024
)

// catchUp replays the changes logged for b into the index being made, by
// apply: round after round with c.mu let go while a round finds
// more than a few, then the rest with it held. It returns holding
// c.mu, every change made so far replayed.
func (c *Container) catchUp(b *indexBuild, apply func(old, rec record)) {
	few := catchUpFew
	if h := c.store.testHooks(); h != nil && h.catchUpFew > 0 {
		few = h.catchUpFew
	}
	for round := 0; ; round++ {
		c.mu.Lock()
		changes := b.changes
		b.changes = nil
		if len(changes) <= few || round == catchUpRounds {
			for _, ch := range changes {
				apply(ch.old, ch.rec)
			}
			return
		}
		c.mu.Unlock()
		for _, ch := range changes {
			apply(ch.old, ch.rec)
		}
	}
}
