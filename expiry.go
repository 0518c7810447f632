package lethe

import (
	"slices"
	"unsafe"

	"github.com/google/btree"
)

// expiryIndex orders a container's items that can expire, so that the next
// item due, and every item already expired, is found without a scan, and
// counts them as they expire, so that Stats costs no scan either.
//
// It holds two trees. Items that inherit the container's default are ordered
// by last write alone: their expiry is last write + default, so changing the
// default reorders nothing. Items with their own positive ttl are ordered by
// last write + ttl. Items with ttl -1 are in neither. The expiryRule says
// which prefix of each tree is expired at an instant (inheritCutoff,
// ownCutoff). Both trees are kept whatever the container's setting, so
// turning TTL on or off needs no rebuild.
//
// It also counts the items and bytes present (live or expired).
//
// Each shard of a container keeps its own index of its own items, guarded
// by the shard's expiryMu (see the container's locking note), so that writers
// to different shards never meet on it. Every tree of every shard orders
// its entries the same way (lessEntry, whose write sequence numbers are
// unique across the store), so the container's trees are the merge of its
// shards': the Container methods below (entriesBetween, firstAfter,
// nextExpiry, oldestExpired) read them merged (runMerge), shard by shard.
type expiryIndex struct {
	inherit expiryTree // ordered by last write
	own     expiryTree // ordered by last write + own ttl
	items   int64      // items present, live or expired
	bytes   int64      // their JSON size

	// numbered is a change that the shard's writer has numbered in the
	// change feed, in memory, and not yet made in the index
	// (numberLocked): set under c.mu by the writer, which holds the
	// shard's lock, and made (addNumbered) under x, by the writer or by
	// the expiry watch, which holds c.mu too. The zero value: none.
	numbered numberedChange
}

// numberedChange is the expiry index's part of a change the feed has
// numbered: the version it replaces or removes leaves the index, the
// version it writes enters it ("": none).
type numberedChange struct {
	old, rec record
}

// expiryTree is one tree of the index with a running count of its prefix:
// the entries at or before front, which Stats moves to the tree's cutoff.
// Every entry crosses the front once as time passes, so counting the
// expired items costs each item O(1) once, not every Stats call a scan.
type expiryTree struct {
	t     *btree.BTreeG[expiryEntry]
	front expiryEntry // entries at or before it (lessEntry) are counted
	n     int64       // entries at or before front
	bytes int64       // their JSON size
}

type expiryEntry struct {
	at  int64 // last write (inherit) or expiry (own), Unix ns
	rec record
}

// lessEntry orders entries by instant, then by write sequence (unique).
func lessEntry(a, b expiryEntry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.rec.seqBefore(b.rec)
}

const btreeDegree = 32

// firstRecord and lastRecord sort before and after every record of the
// same instant: pivots for range scans.
var (
	firstRecord = sentinelRecord(0)
	lastRecord  = sentinelRecord(1<<64 - 1)
)

// sentinelRecord returns a record with the write sequence number seq and
// nothing else.
func sentinelRecord(seq uint64) record {
	var rb recordBuilder
	rb.begin("", "", 0, 0, 0, 0, seq, 0)
	return rb.end()
}

// upTo returns the pivot after every entry at or before the instant at.
func upTo(at int64) expiryEntry { return expiryEntry{at: at, rec: lastRecord} }

func newExpiryIndex() expiryIndex {
	newTree := func() expiryTree {
		return expiryTree{t: btree.NewG(btreeDegree, lessEntry), front: expiryEntry{at: expiredForGood, rec: firstRecord}}
	}
	return expiryIndex{inherit: newTree(), own: newTree()}
}

// treeFor returns the tree that holds rec and its entry, or nil for an
// item with ttl -1.
func (x *expiryIndex) treeFor(rec record) (*expiryTree, expiryEntry) {
	switch e, own, ok := entryFor(rec); {
	case !ok:
		return nil, expiryEntry{}
	case own:
		return &x.own, e
	default:
		return &x.inherit, e
	}
}

// entryFor returns rec's entry, and whether it belongs in the own tree;
// ok is false for an item with ttl -1, which is in neither.
func entryFor(rec record) (e expiryEntry, own, ok bool) {
	switch ttl := rec.ttl(); {
	case ttl == TTLOff:
		return expiryEntry{rec.written(), rec}, false, true
	case ttl > 0:
		return expiryEntry{addSeconds(rec.written(), ttl), rec}, true, true
	}
	return expiryEntry{}, false, false
}

func (x *expiryIndex) add(rec record) {
	x.items++
	x.bytes += int64(rec.jsonLen())
	if t, e := x.treeFor(rec); t != nil {
		t.t.ReplaceOrInsert(e)
		t.count(e, 1)
	}
}

// addNumbered makes the numbered change in the index, if there is one.
func (x *expiryIndex) addNumbered() {
	if n := x.numbered; n != (numberedChange{}) {
		if n.old != "" {
			x.remove(n.old, false)
		}
		if n.rec != "" {
			x.add(n.rec)
		}
		x.numbered = numberedChange{}
	}
}

// entryBuilder collects the entries of the records of one shard for
// addSortedEntries, reading each record once: recovery builds them as it
// replays, while each record's header is in the cache.
type entryBuilder struct {
	es    []expiryEntry // in one allocation: inheriting entries from the front, own entries from the back
	i, j  int           // es[:i] inherit, es[j:] own
	bytes int64         // the JSON size of the records added
}

// newEntryBuilder returns a builder with room for n records (it grows
// beyond).
func newEntryBuilder(n int) entryBuilder {
	return entryBuilder{es: make([]expiryEntry, n), j: n}
}

// add adds rec's entry, if it has one, and counts its bytes.
func (b *entryBuilder) add(rec record) {
	b.bytes += int64(rec.jsonLen())
	e, own, ok := entryFor(rec)
	if !ok {
		return
	}
	if b.i == b.j {
		b.grow()
	}
	if own {
		b.j--
		b.es[b.j] = e
	} else {
		b.es[b.i] = e
		b.i++
	}
}

// grow doubles the builder's room.
func (b *entryBuilder) grow() {
	es := make([]expiryEntry, max(64, 2*len(b.es)))
	copy(es, b.es[:b.i])
	j := len(es) - (len(b.es) - b.j)
	copy(es[j:], b.es[b.j:])
	b.es, b.j = es, j
}

// kinds returns the inheriting entries and the own ones collected.
func (b *entryBuilder) kinds() (inherit, own []expiryEntry) {
	return b.es[:b.i], b.es[b.j:]
}

// shardEntries are the entries of each shard's records, of each kind
// (inheriting, own), sorted (lessEntry).
type shardEntries [shardCount][2][]expiryEntry

// count returns how many entries es holds of one kind (0: inheriting, 1:
// own).
func (es *shardEntries) count(kind int) (n int) {
	for i := range es {
		n += len(es[i][kind])
	}
	return n
}

// addSortedEntries adds to the shards' indexes, empty, the entries of the
// records their id tables hold, sorted without duplicates, and counts
// those records and their bytes (bytes by shard, with those of records
// that have no entry). Each tree is built by inserts in order; half the
// shards are built on each of two cores (a shard's share of the entries
// is about even, where the two kinds' shares are whatever the items'
// ttls make them). The caller is alone with the container.
func (c *Container) addSortedEntries(es *shardEntries, bytes func(shard int) int64) {
	for i := range c.shards {
		x := &c.shards[i].expiry
		x.items += int64(c.shards[i].items.n)
		x.bytes += bytes(i)
	}
	build := func(first int) {
		for i := first; i < shardCount; i += 2 {
			x := &c.shards[i].expiry
			for kind, t := range [2]*expiryTree{&x.inherit, &x.own} {
				for _, e := range es[i][kind] {
					t.t.ReplaceOrInsert(e)
					t.count(e, 1)
				}
			}
		}
	}
	n := es.count(0) + es.count(1)
	both(n/2, n/2, func() { build(0) }, func() { build(1) })
}

// resetExpiryIndex empties every shard's index, under each shard's expiryMu
// in turn. The caller holds c.mu, or is alone with the container.
func (c *Container) resetExpiryIndex() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.expiryMu.Lock()
		sh.expiry = newExpiryIndex()
		sh.expiryMu.Unlock()
	}
}

// remove takes rec out of the index; oldest says that it is likely the
// oldest entry of its tree, as the reaper's are.
func (x *expiryIndex) remove(rec record, oldest bool) {
	x.items--
	x.bytes -= int64(rec.jsonLen())
	if t, e := x.treeFor(rec); t != nil {
		// The reaper removes the oldest entries, in order: the tree's
		// first is found without comparing entries.
		if !oldest || !t.deleteFirstIf(rec) {
			t.t.Delete(e)
		}
		t.count(e, -1)
	}
}

// deleteFirstIf deletes the tree's first entry if it is rec's, and reports
// whether it did.
func (t *expiryTree) deleteFirstIf(rec record) bool {
	if first, ok := t.t.Min(); ok && sameRecord(first.rec, rec) {
		t.t.DeleteMin()
		return true
	}
	return false
}

// sameRecord reports whether a and b are the same stored record (not
// merely equal bytes).
func sameRecord(a, b record) bool {
	return len(a) == len(b) && unsafe.StringData(string(a)) == unsafe.StringData(string(b))
}

// count adds sign times e to the running count if e is at or before front.
func (t *expiryTree) count(e expiryEntry, sign int64) {
	if !lessEntry(t.front, e) {
		t.n += sign
		t.bytes += sign * int64(e.rec.jsonLen())
	}
}

// advance moves the front to target, counting the entries it passes, and
// reports whether it got there: going forward it visits at most limit
// entries, so a caller can let go of the lock between calls. Going back
// (only a clock set backwards does that) it goes all the way.
func (t *expiryTree) advance(target expiryEntry, limit int) bool {
	if lessEntry(target, t.front) {
		t.t.DescendLessOrEqual(t.front, func(e expiryEntry) bool {
			if !lessEntry(target, e) {
				return false
			}
			t.n--
			t.bytes -= int64(e.rec.jsonLen())
			return true
		})
		t.front = target
		return true
	}
	done := true
	t.t.AscendGreaterOrEqual(t.front, func(e expiryEntry) bool {
		if !lessEntry(t.front, e) {
			return true // the front itself, counted already
		}
		if lessEntry(target, e) {
			return false
		}
		if limit == 0 {
			done = false
			return false
		}
		limit--
		t.n++
		t.bytes += int64(e.rec.jsonLen())
		t.front = e
		return true
	})
	if done {
		t.front = target
	}
	return done
}

// cutoffs returns the pivots that end the expired prefix of each tree at
// now under rule.
func cutoffs(rule *expiryRule, now int64) (inherit, own expiryEntry) {
	return upTo(rule.inheritCutoff(now)), upTo(rule.ownCutoff(now))
}

// countExpired moves both fronts to the cutoffs of now, visiting at most
// limit entries in each tree, and reports whether they got there. Once they
// have, expired returns the counts.
func (x *expiryIndex) countExpired(rule *expiryRule, now int64, limit int) bool {
	ci, co := cutoffs(rule, now)
	return x.inherit.advance(ci, limit) && x.own.advance(co, limit)
}

// expired returns the expired items and their bytes as of the last
// countExpired that got there.
func (x *expiryIndex) expired() (items, bytes int64) {
	return x.inherit.n + x.own.n, x.inherit.bytes + x.own.bytes
}

// oldestExpiry returns when the earliest-expired of the items expired at now
// under rule expired (expiryRule.expiredAt), or never if none is expired.
// It costs a tree lookup for each earlier default that expired items for
// good, and two more.
func (x *expiryIndex) oldestExpiry(rule *expiryRule, now int64) int64 {
	oldest := int64(never)
	ci, co := cutoffs(rule, now)
	if e, ok := x.own.t.Min(); ok && !lessEntry(co, e) {
		oldest = e.at
	}
	// The inheriting items expired for good under each earlier default,
	// then those expired under the current one: the first of each range.
	from := int64(expiredForGood)
	ranges := append(rule.past[:len(rule.past):len(rule.past)], pastDefault{cut: ci.at, def: rule.def})
	for _, r := range ranges {
		x.inherit.t.AscendGreaterOrEqual(expiryEntry{at: from, rec: firstRecord}, func(e expiryEntry) bool {
			if e.at <= r.cut {
				oldest = min(oldest, addSeconds(e.at, r.def))
			}
			return false
		})
		if r.cut == never {
			break
		}
		from = r.cut + 1
	}
	return oldest
}

// next returns the earliest expiry of any item under rule: never if none
// expires, expiredForGood if one expired under an earlier default.
func (x *expiryIndex) next(rule *expiryRule) int64 {
	next := int64(never)
	if e, ok := x.own.t.Min(); ok {
		next = rule.ownExpiry(e.at)
	}
	if e, ok := x.inherit.t.Min(); ok {
		next = min(next, rule.inheritExpiry(e.at))
	}
	return next
}

// expiredEntry is an expired item and when it expired.
type expiredEntry struct {
	rec   record
	at    int64
	h     uint32 // the item's hash bits in its shard's id table (set by reap)
	shard uint8  // the item's shard (set by entriesPrefix, and by reap)
}

// beforeAll sorts before every entry: the start of a walk from the first.
var beforeAll = expiryEntry{at: expiredForGood, rec: firstRecord}

// entriesBetween appends to buf the entries e of the own (or the
// inheriting) trees of every shard with after < e < before (lessEntry),
// each as an expiredEntry holding its entry's instant and its shard: the
// first limit of them, in order, and reports whether there are more.
func (c *Container) entriesBetween(own bool, after, before expiryEntry, limit int, buf []expiredEntry) (_ []expiredEntry, more bool) {
	start := len(buf)
	for {
		buf, after, more = c.entriesPrefix(own, after, before, limit-(len(buf)-start), buf)
		if !more || len(buf)-start == limit {
			return buf, more
		}
	}
}

// entriesPrefix is entriesBetween that may return fewer than limit entries
// (at least one) while there are more: an exact prefix of them, which ends
// at through. It reads each shard's tree under the shard's expiryMu in turn,
// taking a few entries from each (a run, in order), and merges the runs
// (mergeExpired): a shard that had more than it gave ends the merge where
// its run ends, since its next entry could come before the other runs'
// rest. The entries come in order (lessEntry).
func (c *Container) entriesPrefix(own bool, after, before expiryEntry, limit int, buf []expiredEntry) (_ []expiredEntry, through expiryEntry, more bool) {
	start := len(buf)
	// Entries taken from each shard (limit may be math.MaxInt): twice a
	// shard's share, and at least 8, so that a small batch (the reaper's
	// sized to MaxHold: 75 or so) is mostly found in one call, not two or
	// three that each walk every shard's tree.
	per := min(limit, max(limit/shardCount*2, 8))
	var bound mergeKey // the least last entry taken from a shard that had more
	bounded := false
	// The walk compares each entry with after, before and the bound as
	// keys (mergeKey reads a write sequence only when instants tie).
	afterKey, beforeKey := mergeKey(after), mergeKey(before)
	var runs [shardCount][]expiredEntry
	var cut [shardCount]bool
	for i := range c.shards {
		from := len(buf)
		sh := &c.shards[i]
		t := &sh.expiry.inherit
		if own {
			t = &sh.expiry.own
		}
		n := 0
		var last expiryEntry
		sh.expiryMu.Lock()
		t.t.AscendGreaterOrEqual(after, func(e expiryEntry) bool {
			k := mergeKey(e)
			switch {
			case !afterKey.less(k):
				return true // after itself
			case !k.less(beforeKey):
				return false
			case bounded && bound.less(k):
				more = true // past the prefix already: the merge stops before it
				return false
			case n == per:
				cut[i] = true
				return false
			}
			buf = append(buf, expiredEntry{rec: e.rec, at: e.at, shard: uint8(i)})
			n++
			last = e
			return true
		})
		sh.expiryMu.Unlock()
		if cut[i] {
			if k := mergeKey(last); !bounded || k.less(bound) {
				bound, bounded = k, true
			}
		}
		runs[i] = buf[from:len(buf):len(buf)]
	}
	// Merge in buf's spare room (grown to hold every entry taken, so that
	// a caller that keeps buf grows it once), then move the merged entries
	// down.
	buf = slices.Grow(buf, len(buf)-start)
	end := len(buf)
	merged, left := mergeExpired(buf[end:end], runs[:], cut[:], limit)
	buf = buf[:start+copy(buf[start:], merged)]
	if !more && !left {
		return buf, expiryEntry{}, false
	}
	last := buf[len(buf)-1]
	return buf, expiryEntry{at: last.at, rec: last.rec}, true
}

// mergeKey is what merges order entries by: their instant, then their
// record's write sequence number (unique across the store), as lessEntry
// and compareExpired do. The sequence is read from the record (its ETag's
// 16 hex digits, a cache miss in a cold record) only when two instants tie.
// Its fields are expiryEntry's, so an entry converts to its key.
type mergeKey struct {
	at  int64
	rec record
}

func (a mergeKey) less(b mergeKey) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	// The same record ties with itself: most often doneKey, whose
	// sequence every emptied run's place in a merge would read again.
	return !sameRecord(a.rec, b.rec) && a.rec.seqBefore(b.rec)
}

// doneKey is the key of a run with nothing left: after every entry's (no
// record has the largest sequence number, lastRecord's).
var doneKey = mergeKey{at: 1<<63 - 1, rec: lastRecord}

// maxMergeRuns is the most runs a runMerge merges: one per shard.
const maxMergeRuns = shardCount

// runMerge is the one k-way merge of sorted runs (the shards' runs of
// expiry entries, or the two kinds of expired items): a loser tree over the
// keys of the runs' first entries, so that taking an entry costs log2 of
// the number of runs in comparisons of keys held here, without reading an
// entry again. The caller keeps the runs: next says which run's first
// entry comes next, and the caller takes it and gives advance that run's
// next key.
type runMerge struct {
	leaves int                    // a power of two, at least the number of runs
	keys   [maxMergeRuns]mergeKey // each run's first entry's key; doneKey once it is empty
	tree   [maxMergeRuns]uint8    // tree[0] the run whose entry is next, tree[i] the loser at node i
}

// start begins a merge of n runs (at most maxMergeRuns), first(i) giving
// run i's first key (doneKey if it is empty).
func (m *runMerge) start(n int, first func(run int) mergeKey) {
	m.leaves = 1
	for m.leaves < n {
		m.leaves *= 2
	}
	for i := range m.leaves {
		m.keys[i] = doneKey
		if i < n {
			m.keys[i] = first(i)
		}
	}
	// Play the tournament from the leaves up: win[j] is the winner at
	// node j (leaf i is node leaves+i).
	var win [2 * maxMergeRuns]uint8
	for i := range m.leaves {
		win[m.leaves+i] = uint8(i)
	}
	for j := m.leaves - 1; j >= 1; j-- {
		a, b := win[2*j], win[2*j+1]
		if m.keys[b].less(m.keys[a]) {
			a, b = b, a
		}
		win[j], m.tree[j] = a, b
	}
	m.tree[0] = win[1]
	if m.leaves == 1 {
		m.tree[0] = 0
	}
}

// next returns the run whose first entry comes next, and its key; ok is
// false when every run is empty.
func (m *runMerge) next() (run int, key mergeKey, ok bool) {
	run = int(m.tree[0])
	key = m.keys[run]
	return run, key, key != doneKey
}

// advance gives the run next returned the key of its new first entry
// (doneKey: it is empty), and plays that run's way up the tree.
func (m *runMerge) advance(key mergeKey) {
	w := m.tree[0]
	m.keys[w] = key
	for j := (m.leaves + int(w)) / 2; j >= 1; j /= 2 {
		if l := m.tree[j]; m.keys[l].less(m.keys[w]) {
			m.tree[j], w = w, l
		}
	}
	m.tree[0] = w
}

// expiredKey is e's merge key.
func expiredKey(e *expiredEntry) mergeKey { return mergeKey{e.at, e.rec} }

// mergeExpired appends to dst the first limit entries of runs, each sorted
// (compareExpired), in that order, and reports whether entries are left
// out. A run marked cut was cut short (its source holds entries after it,
// not taken): the merge ends when it runs out, since the source's next
// entry could come before any other run's rest.
func mergeExpired(dst []expiredEntry, runs [][]expiredEntry, cut []bool, limit int) (_ []expiredEntry, left bool) {
	for i := range runs {
		if cut[i] && len(runs[i]) == 0 {
			return dst, true
		}
	}
	var m runMerge
	m.start(len(runs), func(i int) mergeKey {
		if len(runs[i]) == 0 {
			return doneKey
		}
		return expiredKey(&runs[i][0])
	})
	for n := 0; ; n++ {
		r, _, ok := m.next()
		if !ok {
			return dst, false
		}
		if n == limit {
			return dst, true
		}
		dst = append(dst, runs[r][0])
		runs[r] = runs[r][1:]
		if len(runs[r]) == 0 {
			if cut[r] {
				return dst, true
			}
			m.advance(doneKey)
			continue
		}
		m.advance(expiredKey(&runs[r][0]))
	}
}

// firstAfter returns the first entry after after (lessEntry) of the own
// (or the inheriting) trees of every shard, if there is one.
func (c *Container) firstAfter(own bool, after expiryEntry) (first expiryEntry, ok bool) {
	for i := range c.shards {
		sh := &c.shards[i]
		t := &sh.expiry.inherit
		if own {
			t = &sh.expiry.own
		}
		sh.expiryMu.Lock()
		t.t.AscendGreaterOrEqual(after, func(e expiryEntry) bool {
			if !lessEntry(after, e) {
				return true
			}
			if !ok || lessEntry(e, first) {
				first, ok = e, true
			}
			return false
		})
		sh.expiryMu.Unlock()
	}
	return first, ok
}

// nextExpiry returns the earliest expiry of any item of the container under
// rule, as expiryIndex.next does for one shard.
func (c *Container) nextExpiry(rule *expiryRule) int64 {
	next := int64(never)
	for i := range c.shards {
		sh := &c.shards[i]
		sh.expiryMu.Lock()
		next = min(next, sh.expiry.next(rule))
		sh.expiryMu.Unlock()
	}
	return next
}

// itemCount returns about how many items the container holds, live or
// expired (exactly, when no write is under way): a size to allocate for.
func (c *Container) itemCount() int {
	n := int64(0)
	for i := range c.shards {
		sh := &c.shards[i]
		sh.expiryMu.Lock()
		n += sh.expiry.items
		sh.expiryMu.Unlock()
	}
	return int(n)
}

// oldestExpired returns up to limit items expired at now under rule, in
// the order of their expiry, ties by write sequence (compareExpired),
// across every shard and both kinds (inheriting, with their own ttl), and
// whether there are more. The inheriting tree, in order of last write, is
// in order of expiry within each range of last writes that one default
// expired (each of rule.past's, then the current default's), but not
// across them after a default was shortened: an item written later under
// the shorter one can have expired before one written earlier. So each
// range is a run of its own, and the runs are merged (mergeExpired) with
// the items that have their own ttl. It works in *scratch (may be nil),
// which it grows as it needs and leaves grown, so that a caller that keeps
// one makes no garbage; give it a capacity of 5*limit+8*shardCount.
func (c *Container) oldestExpired(rule *expiryRule, now int64, limit int, scratch *[]expiredEntry) (_ []expiredEntry, more bool) {
	if scratch == nil {
		scratch = new([]expiredEntry)
	}
	ci, co := cutoffs(rule, now)
	var ends [maxMergeRuns]int // where each run ends in buf
	var cuts [maxMergeRuns]bool
	runEnds, runCut := ends[:0], cuts[:0]
	buf := (*scratch)[:0]
	defer func() {
		if cap(buf) > cap(*scratch) {
			*scratch = buf[:0] // grown: kept for the next batch
		}
	}()
	after := beforeAll
	for _, p := range rule.past {
		var more bool
		buf, more = c.entriesBetween(false, after, upTo(p.cut), limit, buf)
		runEnds, runCut = append(runEnds, len(buf)), append(runCut, more)
		after = upTo(p.cut)
	}
	if lessEntry(after, ci) {
		var more bool
		buf, more = c.entriesBetween(false, after, ci, limit, buf)
		runEnds, runCut = append(runEnds, len(buf)), append(runCut, more)
	}
	inheritedExpiries(rule, buf)
	buf, moreO := c.entriesBetween(true, beforeAll, co, limit, buf)
	runEnds, runCut = append(runEnds, len(buf)), append(runCut, moreO)

	var runsArr [maxMergeRuns][]expiredEntry
	runs := runsArr[:0]
	from, last := 0, -1 // last: the one run with entries, -1 none, -2 several
	for i, end := range runEnds {
		runs = append(runs, buf[from:end])
		switch {
		case end == from:
		case last == -1:
			last = i
		default:
			last = -2
		}
		from = end
	}
	switch {
	case last == -1:
		return buf[:0], false
	case last >= 0: // one run has entries: no merge (an empty run is never cut short)
		return runs[last], runCut[last]
	}
	for len(runs) > maxMergeRuns {
		// More defaults expired items than one merge takes runs (rare: a
		// default shortened over and over while items waited): merge the
		// first runs into one, the first limit of them, cut if they were.
		merged, left := mergeExpired(nil, runs[:maxMergeRuns], runCut[:maxMergeRuns], limit)
		runs = append(runs[:1], runs[maxMergeRuns:]...)
		runCut = append(runCut[:1], runCut[maxMergeRuns:]...)
		runs[0], runCut[0] = merged, left
	}
	buf = slices.Grow(buf, min(limit, len(buf))) // room for the merge after the runs
	return mergeExpired(buf[len(buf):], runs, runCut, limit)
}

// inheritedExpiries replaces the instants of es, inheriting entries, by
// when each expired under rule (expiryRule.expiredAt).
func inheritedExpiries(rule *expiryRule, es []expiredEntry) {
	for i := range es {
		es[i].at = rule.expiredAt(TTLOff, es[i].at)
	}
}
