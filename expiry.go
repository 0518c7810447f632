package lethe

import (
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
// It also counts the items and bytes present (live or expired). The
// container's expiry.mu guards all of it.
type expiryIndex struct {
	inherit expiryTree // ordered by last write
	own     expiryTree // ordered by last write + own ttl
	items   int64      // items present, live or expired
	bytes   int64      // their JSON size
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
	return a.rec.seq() < b.rec.seq()
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

// entryBuilder collects the entries of records for addSorted, reading
// each record once: recovery builds them as it replays, while each
// record's header is in the cache.
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

// add adds rec's entry, if it has one, and counts it.
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

// addSorted adds the entries of records the index does not hold, each
// kind sorted (lessEntry) without duplicates, and counts the items and
// bytes of those records (with those of records that have no entry). The
// two trees are built at once, on two cores.
func (x *expiryIndex) addSorted(inherit, own []expiryEntry, items, bytes int64) {
	x.items += items
	x.bytes += bytes
	both(len(inherit), len(own), func() { x.inherit.addSorted(inherit) }, func() { x.own.addSorted(own) })
}

// addSorted adds entries the tree does not hold, sorted.
func (t *expiryTree) addSorted(es []expiryEntry) {
	for _, e := range es {
		t.t.ReplaceOrInsert(e)
		t.count(e, 1)
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
	shard uint8  // the item's shard (set by reap)
}

// oldestExpired returns up to limit expired items at now under rule,
// roughly oldest expiry first (each tree in order, merged). It works in
// scratch (which it may grow), so that a caller that keeps one makes no
// garbage; give it a capacity of 3*limit.
func (x *expiryIndex) oldestExpired(rule *expiryRule, now int64, limit int, scratch []expiredEntry) []expiredEntry {
	buf := scratch[:0]
	ci, co := cutoffs(rule, now)
	collect := func(t *expiryTree, cutoff expiryEntry, own bool) {
		start := len(buf)
		t.t.AscendLessThan(cutoff, func(e expiryEntry) bool {
			at := e.at
			if !own {
				at = rule.expiredAt(TTLOff, e.at)
			}
			buf = append(buf, expiredEntry{rec: e.rec, at: at})
			return len(buf)-start < limit
		})
	}
	collect(&x.inherit, ci, false)
	na := len(buf)
	collect(&x.own, co, true)
	a, b := buf[:na], buf[na:]
	if len(a) == 0 || len(b) == 0 {
		return buf
	}
	merged := buf[len(buf):]
	for len(merged) < limit && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || (len(a) > 0 && a[0].at <= b[0].at) {
			merged, a = append(merged, a[0]), a[1:]
		} else {
			merged, b = append(merged, b[0]), b[1:]
		}
	}
	return merged
}
