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

// next returns the earliest expiry of any item under rule, or never.
func (x *expiryIndex) next(rule expiryRule) int64 {
	next := int64(never)
	if e, ok := x.own.Min(); ok && (rule.def != TTLOff || e.at <= rule.finalOwn) {
		next = e.at
	}
	if e, ok := x.inherit.Min(); ok {
		switch {
		case e.at <= rule.finalInherit:
			next = min(next, e.at) // expired for good: due now
		case rule.def > 0:
			next = min(next, addSeconds(e.at, rule.def))
		}
	}
	return next
}

// ascendExpired calls fn, oldest first, for the expired items of one tree
// at now under rule, with each one's expiry, until fn returns false.
func (x *expiryIndex) ascendExpired(t *btree.BTreeG[expiryEntry], rule expiryRule, now int64, fn func(rec record, at int64) bool) {
	// Everything at or before cutoff in the tree's order is expired.
	cutoff, shift := rule.finalOwn, int64(0)
	if t == x.own {
		if rule.def != TTLOff {
			cutoff = max(cutoff, now)
		}
	} else {
		cutoff = rule.finalInherit
		if rule.def > 0 {
			shift = addSeconds(0, rule.def)
			cutoff = max(cutoff, now-shift) // written + def <= now
		}
	}
	visit := func(e expiryEntry) bool { return fn(e.rec, e.at+shift) }
	if cutoff == never {
		t.Ascend(visit)
		return
	}
	t.AscendLessThan(expiryEntry{at: cutoff + 1, rec: firstRecord}, visit)
}

// firstRecord sorts before every record of the same instant: a pivot for
// range scans.
var firstRecord = record(make([]byte, recordHeader))

// expiredEntry is an expired item and its expiry instant.
type expiredEntry struct {
	rec record
	at  int64
}

// oldestExpired returns up to limit expired items at now under rule, oldest
// expiry first. It works in scratch (which it may grow), so that a caller
// that keeps one makes no garbage; give it a capacity of 3*limit.
func (x *expiryIndex) oldestExpired(rule expiryRule, now int64, limit int, scratch []expiredEntry) []expiredEntry {
	buf := scratch[:0]
	collect := func(t *btree.BTreeG[expiryEntry]) {
		start := len(buf)
		x.ascendExpired(t, rule, now, func(rec record, at int64) bool {
			buf = append(buf, expiredEntry{rec, at})
			return len(buf)-start < limit
		})
	}
	collect(x.inherit)
	na := len(buf)
	collect(x.own)
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

// expiredStats counts the expired items at now under rule, their bytes, and
// the expiry of the oldest.
func (x *expiryIndex) expiredStats(rule expiryRule, now int64) (items, bytes, oldest int64) {
	oldest = never
	count := func(rec record, at int64) bool {
		items++
		bytes += int64(rec.jsonLen())
		oldest = min(oldest, at)
		return true
	}
	x.ascendExpired(x.inherit, rule, now, count)
	x.ascendExpired(x.own, rule, now, count)
	return items, bytes, oldest
}
