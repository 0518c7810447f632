package lethe

import (
	"github.com/google/btree"
)

// expiryIndex orders a container's items that can expire, so that the next
// item due, and every item already expired, is found without a scan.
//
// It holds two trees. Items that inherit the container's default are ordered
// by last write alone: their expiry is last write + default, so changing the
// default reorders nothing. Items with their own positive ttl are ordered by
// last write + ttl. Items with ttl -1 are in neither. The next item due is the
// earlier of the two minimums. Both trees are kept whatever the container's
// setting, so turning TTL on or off needs no rebuild.
//
// It also counts the items and bytes present (live or expired). The
// container's index.mu guards all of it.
type expiryIndex struct {
	inherit *btree.BTreeG[expiryEntry] // ordered by last write
	own     *btree.BTreeG[expiryEntry] // ordered by last write + own ttl
	items   int64                      // items present, live or expired
	bytes   int64                      // their JSON size
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

func newExpiryIndex() expiryIndex {
	return expiryIndex{
		inherit: btree.NewG(btreeDegree, lessEntry),
		own:     btree.NewG(btreeDegree, lessEntry),
	}
}

// treeFor returns the tree that holds rec and its entry, or nil for an
// item with ttl -1.
func (x *expiryIndex) treeFor(rec record) (*btree.BTreeG[expiryEntry], expiryEntry) {
	switch ttl := rec.ttl(); {
	case ttl == TTLOff:
		return x.inherit, expiryEntry{rec.written(), rec}
	case ttl > 0:
		return x.own, expiryEntry{addSeconds(rec.written(), ttl), rec}
	default:
		return nil, expiryEntry{}
	}
}

func (x *expiryIndex) add(rec record) {
	x.items++
	x.bytes += int64(rec.jsonLen())
	if t, e := x.treeFor(rec); t != nil {
		t.ReplaceOrInsert(e)
	}
}

func (x *expiryIndex) remove(rec record) {
	x.items--
	x.bytes -= int64(rec.jsonLen())
	if t, e := x.treeFor(rec); t != nil {
		t.Delete(e)
	}
}

// next returns the earliest expiry of any item under the default def, or
// never.
func (x *expiryIndex) next(def TTL) int64 {
	if def == TTLOff {
		return never
	}
	next := int64(never)
	if e, ok := x.own.Min(); ok {
		next = e.at
	}
	if e, ok := x.inherit.Min(); ok && def > 0 {
		next = min(next, addSeconds(e.at, def))
	}
	return next
}

// ascendExpired calls fn, oldest expiry first, for the expired items of one
// tree at now under the default def, with each one's expiry, until fn returns
// false.
func (x *expiryIndex) ascendExpired(t *btree.BTreeG[expiryEntry], def TTL, now int64, fn func(rec record, at int64) bool) {
	if def == TTLOff {
		return
	}
	if t == x.own {
		if now == never {
			t.Ascend(func(e expiryEntry) bool { return fn(e.rec, e.at) })
			return
		}
		t.AscendLessThan(expiryEntry{at: now + 1, rec: firstRecord}, func(e expiryEntry) bool { return fn(e.rec, e.at) })
		return
	}
	if def < 0 {
		return // inheriting items never expire
	}
	// Expired: written + def <= now, that is written <= now - def.
	d := addSeconds(0, def)
	t.AscendLessThan(expiryEntry{at: now - d + 1, rec: firstRecord}, func(e expiryEntry) bool { return fn(e.rec, e.at+d) })
}

// firstRecord sorts before every record of the same instant: a pivot for
// range scans.
var firstRecord = record(make([]byte, recordHeader))

// expiredEntry is an expired item and its expiry instant.
type expiredEntry struct {
	rec record
	at  int64
}

// oldestExpired returns up to limit expired items at now under the default
// def, oldest expiry first.
func (x *expiryIndex) oldestExpired(def TTL, now int64, limit int) []expiredEntry {
	collect := func(t *btree.BTreeG[expiryEntry]) []expiredEntry {
		var out []expiredEntry
		x.ascendExpired(t, def, now, func(rec record, at int64) bool {
			out = append(out, expiredEntry{rec, at})
			return len(out) < limit
		})
		return out
	}
	a, b := collect(x.inherit), collect(x.own)
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	merged := make([]expiredEntry, 0, min(limit, len(a)+len(b)))
	for len(merged) < limit && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || (len(a) > 0 && a[0].at <= b[0].at) {
			merged, a = append(merged, a[0]), a[1:]
		} else {
			merged, b = append(merged, b[0]), b[1:]
		}
	}
	return merged
}

// expiredStats counts the expired items at now under the default def, their
// bytes, and the expiry of the oldest.
func (x *expiryIndex) expiredStats(def TTL, now int64) (items, bytes, oldest int64) {
	oldest = never
	count := func(rec record, at int64) bool {
		items++
		bytes += int64(rec.jsonLen())
		oldest = min(oldest, at)
		return true
	}
	x.ascendExpired(x.inherit, def, now, count)
	x.ascendExpired(x.own, def, now, count)
	return items, bytes, oldest
}
