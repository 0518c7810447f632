package lethe

import (
	"fmt"
	mathbits "math/bits"
	"slices"
	"strings"
	"unsafe"

	"github.com/lethedb/lethe/internal/manifest"
)

// The end of recovery: the expiry indexes built from the entries gathered
// while replaying (liveSet), sorted on two cores, the expired items
// dropped.

// liveSet is what recovery gathers of a container's items for its expiry
// index as it replays: the entry of every record put, by shard (made
// while the record is in the cache, so that finish need not read the
// records again), and the records since replaced or removed, whose
// entries no longer count.
type liveSet struct {
	shards [shardCount]entryBuilder // their bytes count the records present
	stale  map[*byte]struct{}
}

// bytes returns the JSON size of the records present in a shard.
func (set *liveSet) bytes(shard int) int64 { return set.shards[shard].bytes }

// set returns c's liveSet.
func (r *replayer) set(c *Container) *liveSet {
	if r.last.c == c {
		return r.last.set
	}
	set := r.sets[c]
	if set == nil {
		if r.sets == nil {
			r.sets = make(map[*Container]*liveSet)
		}
		set = &liveSet{}
		r.sets[c] = set
	}
	r.last.c, r.last.set = c, set
	return set
}

// gone takes out a record put before in the shard of index shard,
// replaced or removed since.
func (set *liveSet) gone(old record, shard int) {
	set.shards[shard].bytes -= int64(old.jsonLen())
	if _, _, ok := entryFor(old); ok {
		if set.stale == nil {
			set.stale = make(map[*byte]struct{})
		}
		set.stale[unsafe.StringData(string(old))] = struct{}{}
	}
}

// sorted returns the entries of the records present, each shard's of each
// kind sorted.
func (set *liveSet) sorted() (es shardEntries) {
	isStale := func(e expiryEntry) bool {
		_, ok := set.stale[unsafe.StringData(string(e.rec))]
		return ok
	}
	for i := range set.shards {
		inherit, own := set.shards[i].kinds()
		if len(set.stale) > 0 {
			inherit, own = slices.DeleteFunc(inherit, isStale), slices.DeleteFunc(own, isStale)
		}
		es[i] = [2][]expiryEntry{inherit, own}
	}
	set.stale = nil
	// Half the shards on each core, each half through one buffer.
	sortHalf := func(first int) {
		var buf []expiryEntry
		for i := first; i < shardCount; i += 2 {
			buf = sortEntries(es[i][0], buf)
			buf = sortEntries(es[i][1], buf)
		}
	}
	n := es.count(0) + es.count(1)
	both(n/2, n/2, func() { sortHalf(0) }, func() { sortHalf(1) })
	return es
}

// both runs f and g, which share nothing, on two goroutines at once when
// they are large enough to pay for it: m and n say how large.
func both(m, n int, f, g func()) {
	if min(m, n) < 1<<12 {
		f()
		g()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	g()
	<-done
}

// finish builds the expiry indexes, drops the items that have expired, and
// lists the containers. Two items of a container that share a write
// sequence number and an instant, which the store never writes, would share
// one place in its expiry index: finish refuses them, naming dir, since no
// one file is at fault.
func (r *replayer) finish(dir string) error {
	s := r.s
	r.place()
	for _, c := range s.containers {
		set := r.sets[c]
		if set == nil {
			set = &liveSet{}
		}
		// The entries were made as the records were put: sorted, the
		// expired items' come first, so no record is read again but
		// theirs.
		es := set.sorted()
		var dups [2]record
		both(es.count(0), es.count(1), func() { dups[0] = firstDup(&es, 0) }, func() { dups[1] = firstDup(&es, 1) })
		for _, dup := range dups {
			if dup != "" {
				return dupError(dir, c, dup)
			}
		}
		if c.mu.feed.history != nil {
			r.findExpiries(c, &es, set)
		}
		ci, co := cutoffs(&c.rule, r.now)
		for i := range es {
			es[i][0] = r.dropExpired(c, set, i, es[i][0], ci)
			es[i][1] = r.dropExpired(c, set, i, es[i][1], co)
		}
		items := tableItems(c)
		c.mu.Lock()
		c.resetExpiryIndex()
		c.addSortedEntries(&es, set.bytes)
		c.rebuildUniqueLocked()
		if c.mu.watch.on {
			c.mu.watch.due = c.nextUnreportedLocked()
			c.publishDueLocked()
		}
		c.mu.Unlock()
		s.recovery.Items += items
		r.items = append(r.items, manifest.ItemCount{ID: c.id, Created: c.created, N: int(items)})
	}
	slices.SortFunc(r.items, func(a, b manifest.ItemCount) int { return strings.Compare(a.ID, b.ID) })
	r.sets, r.last.c, r.last.set = nil, nil, nil
	s.relistLocked()
	s.seq.Store(r.maxSeq)
	return nil
}

// sortEntries sorts es (lessEntry) by a radix sort of their instants,
// ties by write sequence: recovery sorts a million entries this way in a
// fraction of the time a comparison sort takes. The sort works through
// buf, grown to len(es) if need be, and returns it for the next sort.
func sortEntries(es, buf []expiryEntry) []expiryEntry {
	const bits = 11 // a digit: its counts fit in the cache
	if len(es) < 1<<bits {
		slices.SortFunc(es, compareEntries)
		return buf
	}
	lo, hi := es[0].at, es[0].at
	for _, e := range es {
		lo, hi = min(lo, e.at), max(hi, e.at)
	}
	key := func(e *expiryEntry) uint64 { return uint64(e.at) - uint64(lo) }
	passes := (mathbits.Len64(uint64(hi)-uint64(lo)) + bits - 1) / bits
	counts := make([][1 << bits]int, passes)
	for i := range es {
		k := key(&es[i])
		for p := range counts {
			counts[p][k>>(p*bits)&(1<<bits-1)]++
		}
	}
	if cap(buf) < len(es) {
		buf = make([]expiryEntry, len(es))
	}
	src, dst := es, buf[:len(es)]
	for p := range counts {
		next := &counts[p]
		sum := 0
		for d, n := range next {
			next[d], sum = sum, sum+n
		}
		for i := range src {
			d := key(&src[i]) >> (p * bits) & (1<<bits - 1)
			dst[next[d]] = src[i]
			next[d]++
		}
		src, dst = dst, src
	}
	if passes%2 == 1 {
		copy(es, src)
	}
	for i := 0; i < len(es); {
		j := i + 1
		for j < len(es) && es[j].at == es[i].at {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(es[i:j], compareEntries)
		}
		i = j
	}
	return buf
}

func compareEntries(a, b expiryEntry) int {
	switch {
	case lessEntry(a, b):
		return -1
	case lessEntry(b, a):
		return 1
	}
	return 0
}

// firstDup returns a record of es's entries of one kind (each shard's
// sorted) that shares its entry with another, in its shard or any other,
// or "": the shards' trees must merge into one order (expiry.go). It
// merges the shards' lists (runMerge).
func firstDup(es *shardEntries, kind int) (dup record) {
	var runs [shardCount][]expiryEntry
	for i := range es {
		runs[i] = es[i][kind]
	}
	first := func(run []expiryEntry) mergeKey {
		if len(run) == 0 {
			return doneKey
		}
		return mergeKey(run[0])
	}
	var m runMerge
	m.start(shardCount, func(i int) mergeKey { return first(runs[i]) })
	var prev mergeKey
	for n := 0; ; n++ {
		r, key, ok := m.next()
		if !ok {
			return ""
		}
		if n > 0 && !prev.less(key) {
			return runs[r][0].rec
		}
		prev = key
		runs[r] = runs[r][1:]
		m.advance(first(runs[r]))
	}
}

// dropExpired removes from c's shard of index i the items whose entries,
// es sorted, are expired by cutoff (a prefix of es), and returns the rest
// of es.
func (r *replayer) dropExpired(c *Container, set *liveSet, i int, es []expiryEntry, cutoff expiryEntry) []expiryEntry {
	n, _ := slices.BinarySearchFunc(es, cutoff, func(e, cutoff expiryEntry) int {
		if lessEntry(e, cutoff) {
			return -1
		}
		return 1
	})
	for _, e := range es[:n] {
		_, h := c.shardIndex(e.rec.pk(), e.rec.id())
		c.shards[i].items.remove(e.rec.pk(), e.rec.id(), h)
		if c.multiWrite() {
			c.shards[i].bury(e.rec)
		}
		set.shards[i].bytes -= int64(e.rec.jsonLen())
	}
	c.purged.Add(int64(n))
	r.s.recovery.Expired += int64(n)
	return es[n:]
}

// tableItems returns the number of items c's tables hold.
func tableItems(c *Container) int64 {
	var n int64
	for i := range c.shards {
		n += int64(c.shards[i].items.n)
	}
	return n
}

// dupError is the error of two items of c that share a write sequence
// number and an instant.
func dupError(dir string, c *Container, dup record) error {
	return &CorruptionError{File: dir, Reason: fmt.Sprintf("the item %q and another of container %q share the write sequence number %d", dup.id(), c.id, dup.seq())}
}
