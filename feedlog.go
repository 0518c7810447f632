package lethe

import (
	"encoding/binary"
	"hash/crc32"
	"sync/atomic"
	"unsafe"

	"github.com/lethedb/lethe/internal/logfile"
)

// changeFeed is the bounded history of a container's changes that its
// change feed is read from: every create, replace, delete and expiry, each
// with its log sequence number (lsn: 1, 2, 3, ... in commit order, with no
// gaps), oldest first. It lives under the container's mu, where
// applyItems appends the changes it makes and the expiry watch appends the
// expiries it finds, so its order is the order in which the container's
// state changed. When it holds more than its policy allows it forgets its
// oldest changes.
type changeFeed struct {
	policy ChangeFeedPolicy // with its defaults filled in
	// chunks hold the retained changes in lsn order,
	// chunks[0].entries[head:] the oldest: fixed-size chunks, so that a
	// growing feed never copies what it holds.
	chunks []*changeChunk
	spare  *changeChunk // the last chunk trim emptied, for push to reuse
	head   int
	n      int    // changes retained
	bytes  int64  // the records' size, retained entries only
	first  uint64 // the lsn of the oldest retained change; next when none is
	next   uint64 // the lsn the next change gets

	// latest finds the latest change of an item: the one a new change
	// names as its prev, and marks superseded.
	latest latestTable
}

// feedChunk is the number of changes in a chunk of a feed.
const feedChunk = 4096

// changeChunk is a chunk of a feed: up to feedChunk changes, and a bit for
// each, set when a later change of the entry's item is retained (the
// entry is not the item's latest version). The bits are apart from the
// entries, so that marking an item's previous change, usually far back in
// the feed, writes a few hot bytes rather than the entry's cold line.
type changeChunk struct {
	entries    []feedEntry
	superseded [feedChunk / 64]uint64
	// lastWrite is the lsn of the chunk's latest create or replace (0 if
	// none): lastWriteAt passes over a chunk by it.
	lastWrite uint64
}

// changeKind is what a change did.
type changeKind uint8

const (
	changeCreate  changeKind = iota + 1 // the item did not exist (or had expired)
	changeReplace                       // the item existed and was written again
	changeDelete                        // DeleteItem (or a batch's delete)
	changeExpire                        // the item expired (its time to live ran out)
)

// feedEntry is one change.
type feedEntry struct {
	lsn  uint64
	prev uint64 // the lsn of the item's previous change, 0 if not retained
	at   int64  // the instant of the change: the write's, or the expiry
	kind changeKind
	rec  record // the version written; for a delete or an expiry, the version removed
	// replaced is, for a replace, the write sequence number (the ETag) of
	// the version it replaced: what a replica checks a change against
	// (ReplicaChange.Replaces). 0 for other changes, and for a replace
	// restored from a snapshot of format 4 or older that no longer held its
	// previous change (format 5 keeps it).
	replaced uint64
}

// feedEntrySize is what the feed charges a retained entry against
// MaxBytes beyond its record: the entry itself and its share of latest
// (whose table is smaller than that; the charge is older than the table,
// and kept so that a policy keeps as many changes as it did).
const feedEntrySize = 48 + 48

func newChangeFeed(p ChangeFeedPolicy, next uint64) *changeFeed {
	return &changeFeed{policy: p, first: next, next: next}
}

// add appends a change to the item of hash h (its slot hash, as
// Container.shardIndex gives it) and returns its lsn. rec is the version
// written, or for a removal the version removed; old is the version the
// change replaces or removes, "" if none or unknown (it only saves reading
// the item's previous change's record, and gives a replace its replaced).
func (f *changeFeed) add(kind changeKind, at int64, rec, old record, h uint32) uint64 {
	lsn := f.next
	prev := f.relink(h, rec, old, lsn)
	e := feedEntry{lsn: lsn, prev: prev, at: at, kind: kind, rec: rec}
	if kind == changeReplace && old != "" {
		e.replaced = old.seq()
	}
	f.push(e)
	if f.n > f.policy.MaxChanges || f.bytes > f.policy.MaxBytes {
		f.trim()
	}
	return lsn
}

// hashOf returns the hash bits the change feed knows rec's item by: its
// id table's (mutation.h).
func (c *Container) hashOf(rec record) uint32 {
	_, h := c.shardIndex(rec.pk(), rec.id())
	return h
}

// relink makes lsn, the change of rec (of hash h) about to be pushed, its
// item's latest change. It returns the lsn of the item's previous change if
// the feed still holds it (0 if not), which it marks superseded.
func (f *changeFeed) relink(h uint32, rec, old record, lsn uint64) uint64 {
	t := &f.latest
	if 4*(t.used+1) > 3*len(t.slots) {
		t.rebuild(f.first)
	}
	s := t.slot(h)
	prev, prevAddr := s.lsn.Load(), s.rec
	if prev == 0 {
		t.used++
	}
	s.hash, s.rec = h, recordAddr(rec)
	s.lsn.Store(lsn)
	if prev < f.first {
		// The latest change of every item of hash h is forgotten (the
		// table's lsn is the latest of them all), or there is none.
		return 0
	}
	if prevAddr != recordAddr(old) && prevAddr != recordAddr(rec) {
		// The usual case, the item's own latest change, holds the
		// version this change replaces or removes: compared by address,
		// without reading the change. Else the change is read.
		if e := f.entry(prev); e.rec.key() != rec.key() {
			// Another item of the same hash: it moves to others, and
			// this item's latest change, if it was there, comes out.
			if t.others == nil {
				t.others = make(map[string]uint64)
			}
			t.others[e.rec.key()] = prev
			key := rec.key()
			prev = t.others[key]
			delete(t.others, key)
			if prev < f.first {
				return 0
			}
		}
	}
	f.markSuperseded(prev)
	return prev
}

// recordAddr returns the address of rec's bytes as a number (0 for ""): a
// record the feed retains is alive, so no other record has its address.
func recordAddr(rec record) uintptr {
	if rec == "" {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.StringData(string(rec))))
}

// itemChanges calls fn with the retained changes of the item of slot hash
// h and key (record.key), latest first, until fn returns false.
func (f *changeFeed) itemChanges(h uint32, key string, fn func(e *feedEntry) bool) {
	t := &f.latest
	if len(t.slots) == 0 {
		return
	}
	lsn := t.slot(h).lsn.Load()
	if lsn >= f.first && lsn != 0 && f.entry(lsn).rec.key() != key {
		lsn = t.others[key]
	}
	for lsn >= f.first && lsn != 0 {
		e := f.entry(lsn)
		if !fn(e) {
			return
		}
		lsn = e.prev
	}
}

// markSuperseded marks the retained change lsn as not its item's latest.
func (f *changeFeed) markSuperseded(lsn uint64) {
	i := uint64(f.head) + lsn - f.first
	f.chunks[i/feedChunk].superseded[i%feedChunk/64] |= 1 << (i % 64)
}

// isSuperseded reports whether a later change of the item of the retained
// change lsn is retained.
func (f *changeFeed) isSuperseded(lsn uint64) bool {
	i := uint64(f.head) + lsn - f.first
	return f.chunks[i/feedChunk].superseded[i%feedChunk/64]&(1<<(i%64)) != 0
}

// entry returns the retained change lsn.
func (f *changeFeed) entry(lsn uint64) *feedEntry {
	i := uint64(f.head) + lsn - f.first
	return &f.chunks[i/feedChunk].entries[i%feedChunk]
}

// push appends e, whose lsn is next, without trimming.
func (f *changeFeed) push(e feedEntry) {
	last := len(f.chunks) - 1
	if last < 0 || len(f.chunks[last].entries) == feedChunk {
		chunk := f.spare
		if chunk == nil {
			chunk = &changeChunk{entries: make([]feedEntry, 0, feedChunk)}
		}
		f.chunks, f.spare = append(f.chunks, chunk), nil
		last++
	}
	chunk := f.chunks[last]
	chunk.entries = append(chunk.entries, e)
	f.n++
	f.next = e.lsn + 1
	if e.kind == changeCreate || e.kind == changeReplace {
		chunk.lastWrite = e.lsn
	}
	f.bytes += int64(len(e.rec)) + feedEntrySize
}

// trim forgets the oldest changes while the feed holds more than its
// policy allows.
func (f *changeFeed) trim() {
	for f.n > 0 && (f.n > f.policy.MaxChanges || f.bytes > f.policy.MaxBytes) {
		e := &f.chunks[0].entries[f.head]
		f.bytes -= int64(len(e.rec)) + feedEntrySize
		*e = feedEntry{}
		f.n--
		f.first++
		if f.head++; f.head == feedChunk {
			spare := f.chunks[0]
			spare.entries = spare.entries[:0] // every entry zeroed
			spare.superseded = [feedChunk / 64]uint64{}
			spare.lastWrite = 0
			f.spare = spare
			// Moved down rather than resliced, so that push reuses the
			// slice's room.
			n := copy(f.chunks, f.chunks[1:])
			f.chunks[n] = nil
			f.chunks = f.chunks[:n]
			f.head = 0
		}
	}
}

// retained returns how many changes the feed holds.
func (f *changeFeed) retained() int { return f.n }

// scan calls fn with the retained changes after lsn, in order, until fn
// returns false.
func (f *changeFeed) scan(lsn uint64, fn func(e *feedEntry) bool) {
	skip := 0
	if lsn >= f.first {
		skip = int(min(lsn-f.first+1, uint64(f.n)))
	}
	i := f.head + skip // position in the chunks
	for c := i / feedChunk; c < len(f.chunks); c++ {
		chunk := f.chunks[c].entries
		for j := i - c*feedChunk; j < len(chunk); j++ {
			if !fn(&chunk[j]) {
				return
			}
		}
		i = (c + 1) * feedChunk
	}
}

// firstAt returns the lsn of the first retained change made at or after
// the instant at (next if none).
func (f *changeFeed) firstAt(at int64) uint64 {
	lsn := f.next
	f.scan(0, func(e *feedEntry) bool {
		if e.at >= at {
			lsn = e.lsn
			return false
		}
		return true
	})
	return lsn
}

// lastWriteAt returns the latest retained create or replace at or before
// lsn, nil if there is none. It looks at most at the changes of lsn's
// chunk before it, and passes over the chunks before by their lastWrite.
func (f *changeFeed) lastWriteAt(lsn uint64) *feedEntry {
	if f.n == 0 || lsn < f.first {
		return nil
	}
	i := f.head + int(min(lsn, f.next-1)-f.first) // position in the chunks
	c := i / feedChunk
	chunk := f.chunks[c]
	if last := chunk.lastWrite; last != 0 && last <= lsn {
		if last < f.first {
			return nil // forgotten, as is every write before it
		}
		return f.entry(last)
	}
	for j := i - c*feedChunk; j >= 0; j-- {
		if e := &chunk.entries[j]; e.kind == changeCreate || e.kind == changeReplace {
			if e.lsn < f.first {
				return nil
			}
			return e
		}
	}
	for c--; c >= 0; c-- {
		if last := f.chunks[c].lastWrite; last != 0 {
			if last < f.first {
				return nil
			}
			return f.entry(last)
		}
	}
	return nil
}

// all returns a copy of the retained changes.
func (f *changeFeed) all() []feedEntry {
	out := make([]feedEntry, 0, f.n)
	f.scan(0, func(e *feedEntry) bool {
		out = append(out, *e)
		return true
	})
	return out
}

// resize applies a new policy (the container's settings changed).
func (f *changeFeed) resize(p ChangeFeedPolicy) {
	f.policy = p
	f.trim()
}

// writeFrame writes the snapshot's 'F' frame of a container to out, using
// buf (returned, perhaps grown) for pieces of it. It never holds the frame
// whole, which would double the feed's retained versions in memory for a
// moment: a first pass over the entries works out the frame's length and
// checksum, a second writes them, both some 64 KiB at a time.
func (st *feedState) writeFrame(out *pacedWriter, buf []byte) []byte {
	head := append(make([]byte, 0, 64), frameFeed)
	head = appendStr(head, st.c.id)
	head = binary.AppendUvarint(head, st.c.created)
	head = binary.AppendUvarint(head, st.first)
	head = binary.AppendUvarint(head, st.next)
	head = binary.AppendVarint(head, st.found)
	head = binary.AppendUvarint(head, uint64(len(st.entries)))
	n, crc := len(head), crc32.Update(0, castagnoli, head)
	for i := 0; i < len(st.entries); {
		buf, i = st.appendEntries(buf[:0], i)
		n += len(buf)
		crc = crc32.Update(crc, castagnoli, buf)
	}
	var h [frameHeader]byte
	logfile.PutFrameHeader(h[:], n, crc)
	out.write(h[:])
	out.write(head)
	for i := 0; i < len(st.entries); {
		buf, i = st.appendEntries(buf[:0], i)
		out.write(buf)
	}
	return buf
}

// appendEntries appends the entries from the i-th on, as a snapshot's feed
// frame holds them, until b holds 64 KiB or they end, and returns b and
// the index of the first entry left out.
func (st *feedState) appendEntries(b []byte, i int) ([]byte, int) {
	for ; i < len(st.entries) && len(b) < 64<<10; i++ {
		e := &st.entries[i]
		b = binary.AppendUvarint(b, e.prev)
		b = binary.AppendVarint(b, e.at)
		b = append(b, byte(e.kind))
		b = binary.AppendUvarint(b, e.replaced)
		b = appendStr(b, string(e.rec))
	}
	return b, i
}

// latestTable maps a slot hash (32 bits of an item's hash) to the lsn of
// the latest change of the items of that hash, and so, usually, of the one
// item of that hash. An open addressing table with linear probing, of
// pointer-free slots: a write looks its item up with the hash it already
// has, in a probe or two, and the collector never scans the table. The
// slot's record address tells whether the change is the item's own
// (relink), or else the entry at the lsn does; when two retained items
// share a hash, the one whose change is not the
// latest is found by its key in others.
type latestTable struct {
	slots []latestSlot // a power of two long, or empty
	// shown is slots, published for touch.
	shown atomic.Pointer[[]latestSlot]
	used  int // slots not empty
	// others holds, by key, the latest change of items whose slot an item
	// of the same hash took over with a later change.
	others map[string]uint64
}

type latestSlot struct {
	hash uint32
	lsn  atomic.Uint64 // 0: the slot is empty; atomic for touch
	// rec is the address of the record of the change lsn (recordAddr),
	// which tells, without reading the change, whether it is the change
	// of the item a new change replaces: not a pointer, so that the
	// collector never scans the table; the feed keeps the record alive
	// while it retains the change.
	rec uintptr
}

// touch reads the slot where the item of hash h most likely is, without
// the container's mu, which the table is under: a writer about to take it
// reads it first, so that the cache miss of the cold slot (the table is
// as large as the feed's items) is not taken while it holds the lock. It
// changes nothing.
func (t *latestTable) touch(h uint32) {
	if p := t.shown.Load(); p != nil {
		slots := *p
		slots[h&uint32(len(slots)-1)].lsn.Load()
	}
}

// slot returns the slot of hash h, or the empty slot where it goes. The
// table has an empty slot.
func (t *latestTable) slot(h uint32) *latestSlot {
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		if s := &t.slots[i]; s.lsn.Load() == 0 || s.hash == h {
			return s
		}
	}
}

// rebuild makes the table anew, at least half empty, with the slots of
// lsns from first on (the feed's oldest), leaving out the rest; others
// too. A table grows when more than three quarters full, and a slot whose
// lsn the feed has forgotten stays until then: every change of every item
// of its hash is forgotten too.
func (t *latestTable) rebuild(first uint64) {
	old, live := t.slots, 0
	for i := range old {
		if old[i].lsn.Load() >= first {
			live++
		}
	}
	n := 64
	for n < 2*(live+1) {
		n *= 2
	}
	t.slots, t.used = make([]latestSlot, n), live
	for i := range old {
		s := &old[i]
		if lsn := s.lsn.Load(); lsn >= first {
			to := t.slot(s.hash)
			to.hash, to.rec = s.hash, s.rec
			to.lsn.Store(lsn)
		}
	}
	slots := t.slots
	t.shown.Store(&slots)
	for key, lsn := range t.others {
		if lsn < first {
			delete(t.others, key)
		}
	}
}
