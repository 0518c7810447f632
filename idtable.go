package lethe

import "unsafe"

// idTable is a shard's primary index: item identity (partition key value,
// id) → record. It is an open
// addressing hash table with linear probing and backward-shift deletion.
// Each slot holds 32 bits of the id's hash beside the record, so a lookup
// usually touches two cache lines (the slot and the record, whose header and
// id sit together), a probe past another id rarely touches its record, and
// growing never reads a record. A slot takes 16 bytes (the hash bits, and
// the record as a length and a pointer); Go's map would use 32 and a
// control byte, and an extra cache line per lookup.
//
// The zero value is an empty table. It is not safe for concurrent use: the
// shard's lock guards it.
type idTable struct {
	slots []idSlot // empty, or at least minTableSize long
	n     int      // records held

	touched uint32 // written by touch, so that its loads are not elided
}

type idSlot struct {
	hash uint32 // bits of the id's hash, which pick the slot's home (idTable.home)
	n    uint32 // the record's length; 0 when the slot is empty
	p    *byte  // the record's bytes
}

func makeSlot(h uint32, rec record) idSlot {
	return idSlot{hash: h, n: uint32(len(rec)), p: unsafe.StringData(string(rec))}
}

// rec returns the slot's record, "" when the slot is empty.
func (s *idSlot) rec() record { return record(unsafe.String(s.p, s.n)) }

// slotHash is the part of an id's 64-bit hash a slot keeps. The low bits of
// the hash pick the shard, so the table uses higher ones.
func slotHash(h uint64) uint32 { return uint32(h >> 8) }

// The table grows by half when it would be more than maxLoad full: its
// size need not be a power of two (a hash picks its home slot by
// multiplication, not masking), so that a million items do not find
// themselves in a table just doubled, less than half full.
const (
	maxLoadNum, maxLoadDen = 4, 5 // 0.8
	minTableSize           = 8
)

// home returns the slot where a probe for the hash bits h starts.
func (t *idTable) home(h uint32) int { return int(uint64(h) * uint64(len(t.slots)) >> 32) }

// next returns the slot after i, wrapping around.
func (t *idTable) next(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// find returns the index of the slot of the item (pk, id), or of the empty
// slot where it would go, and whether it is there.
func (t *idTable) find(pk, id string, h uint32) (int, bool) {
	for i := t.home(h); ; i = t.next(i) {
		s := &t.slots[i]
		if s.n == 0 {
			return i, false
		}
		if s.hash == h {
			if s.rec().is(pk, id) {
				return i, true
			}
		}
	}
}

// get returns the record of the item (pk, id), or "".
func (t *idTable) get(pk, id string, h uint32) record {
	if t.n == 0 {
		return ""
	}
	i, ok := t.find(pk, id, h)
	if !ok {
		return ""
	}
	return t.slots[i].rec()
}

// put stores rec, whose identity hashes to h, replacing any record of the
// same item.
func (t *idTable) put(h uint32, rec record) {
	t.exchange(h, rec)
}

// lookup is get for a write that will put the item's next record: it also
// returns the item's slot, or the empty slot where it would go, for putAt.
// slot is -1 when the table is empty.
func (t *idTable) lookup(pk, id string, h uint32) (rec record, slot int) {
	if t.n == 0 {
		return "", -1
	}
	i, ok := t.find(pk, id, h)
	if ok {
		rec = t.slots[i].rec()
	}
	return rec, i
}

// putAt is put with the slot lookup returned for rec's item, when the
// table has not changed since: an item's next record takes its slot
// without a second probe (a new item's too, unless the table must grow).
func (t *idTable) putAt(slot int, h uint32, rec record) {
	switch {
	case slot < 0:
		t.put(h, rec)
		return
	case t.slots[slot].n == 0:
		if (t.n+1)*maxLoadDen > len(t.slots)*maxLoadNum {
			t.put(h, rec)
			return
		}
		t.n++
	}
	t.slots[slot] = makeSlot(h, rec)
}

// exchange is put that returns the record rec replaced, "" if none:
// recovery, which builds the expiry index as it replays, learns which
// entries no longer count.
func (t *idTable) exchange(h uint32, rec record) (old record) {
	if (t.n+1)*maxLoadDen > len(t.slots)*maxLoadNum {
		t.grow()
	}
	i, ok := t.find(rec.pk(), rec.id(), h)
	if ok {
		old = t.slots[i].rec()
	} else {
		t.n++
	}
	t.slots[i] = makeSlot(h, rec)
	return old
}

// remove deletes the record of the item (pk, id), if any, shifting back the
// records after it that probed past its slot.
func (t *idTable) remove(pk, id string, h uint32) {
	t.take(pk, id, h)
}

// take is remove that returns the record removed, "" if none.
func (t *idTable) take(pk, id string, h uint32) (old record) {
	if t.n == 0 {
		return ""
	}
	i, ok := t.find(pk, id, h)
	if !ok {
		return ""
	}
	old = t.slots[i].rec()
	t.removeAt(i)
	return old
}

// findRecord returns the index of the slot that holds rec itself (the same
// stored record, not merely equal bytes), whose identity hashes to h, and
// whether it is there. It compares no ids: a record's slot is found
// without reading the record.
func (t *idTable) findRecord(h uint32, rec record) (int, bool) {
	if t.n == 0 {
		return 0, false
	}
	p := unsafe.StringData(string(rec))
	for i := t.home(h); ; i = t.next(i) {
		s := &t.slots[i]
		if s.n == 0 {
			return i, false
		}
		if s.p == p && s.hash == h && int(s.n) == len(rec) {
			return i, true
		}
	}
}

// holds reports whether rec, whose identity hashes to h, is its item's
// current record.
func (t *idTable) holds(h uint32, rec record) bool {
	_, ok := t.findRecord(h, rec)
	return ok
}

// removeRecord deletes rec, whose identity hashes to h, if it is its
// item's current record, and reports whether it was.
func (t *idTable) removeRecord(h uint32, rec record) bool {
	i, ok := t.findRecord(h, rec)
	if ok {
		t.removeAt(i)
	}
	return ok
}

// removeAt empties slot i, which holds a record, shifting back the records
// after it that probed past it.
func (t *idTable) removeAt(i int) {
	t.n--
	for j := t.next(i); t.slots[j].n != 0; j = t.next(j) {
		home := t.home(t.slots[j].hash)
		// The record at j stays if its home lies cyclically in (i, j].
		if (i < j && i < home && home <= j) || (j < i && (i < home || home <= j)) {
			continue
		}
		t.slots[i] = t.slots[j]
		i = j
	}
	t.slots[i] = idSlot{}
}

// reserve makes an empty table large enough for n records without growing,
// so that recovery, which knows about how many records a shard will hold,
// does not copy the table again and again as it fills.
func (t *idTable) reserve(n int) {
	if t.n != 0 || n <= 0 {
		return
	}
	t.slots = make([]idSlot, max(minTableSize, n*maxLoadDen/maxLoadNum+1))
}

// grow makes the table half as large again (at least minTableSize slots),
// rehoming every record by its kept hash bits.
func (t *idTable) grow() {
	old := t.slots
	t.slots = make([]idSlot, max(minTableSize, len(old)+len(old)/2))
	for _, s := range old {
		if s.n == 0 {
			continue
		}
		i := t.home(s.hash)
		for t.slots[i].n != 0 {
			i = t.next(i)
		}
		t.slots[i] = s
	}
}

// all calls fn for every record until fn returns false.
func (t *idTable) all(fn func(rec record) bool) {
	for i := range t.slots {
		if s := &t.slots[i]; s.n != 0 && !fn(s.rec()) {
			return
		}
	}
}

// touch loads the home slot of each of the entries' items, so that their
// cache misses overlap before the items are looked up one by one.
func (t *idTable) touch(es []expiredEntry) {
	if len(t.slots) == 0 {
		return
	}
	var sum uint32
	for i := range es {
		sum += t.slots[t.home(es[i].h)].hash
	}
	t.touched = sum
}
