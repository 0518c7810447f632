package lethe

import (
	"encoding/binary"
	"hash/crc32"
)

// changeFeed is the bounded history of a container's changes that its
// change feed is read from: every create, replace, delete and expiry, each
// with its log sequence number (lsn: 1, 2, 3, ... in commit order, with no
// gaps), oldest first. It lives under the container's expiry.mu, where
// applyItems appends the changes it makes and the expiry watch appends the
// expiries it finds, so its order is the order in which the container's
// state changed. When it holds more than its policy allows it forgets its
// oldest changes.
type changeFeed struct {
	policy ChangeFeedPolicy // with its defaults filled in
	// chunks hold the retained changes in lsn order, chunks[0][head:]
	// the oldest: fixed-size chunks, so that a growing feed never copies
	// what it holds.
	chunks [][]feedEntry
	spare  []feedEntry // the last chunk trim emptied, for push to reuse
	head   int
	n      int    // changes retained
	bytes  int64  // the records' size, retained entries only
	first  uint64 // the lsn of the oldest retained change; next when none is
	next   uint64 // the lsn the next change gets

	// latest maps an item's key (record.key) to the lsn of its latest
	// change: a change is the latest version of its item exactly when
	// latest says so. Entries older than first are stale (their changes
	// are forgotten) and are swept out in bulk, once they make up half the
	// map, rather than one by one. Each lsn has a place of its own, so that
	// a change to an item the map holds looks its key up once.
	latest map[string]*uint64
}

// feedChunk is the number of changes in a chunk of a feed.
const feedChunk = 4096

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
}

// feedEntrySize is what the feed charges a retained entry against
// MaxBytes beyond its record: the entry itself and its share of latest.
const feedEntrySize = 48 + 48

func newChangeFeed(p ChangeFeedPolicy, next uint64) *changeFeed {
	return &changeFeed{policy: p, first: next, next: next, latest: make(map[string]*uint64)}
}

// add appends a change and returns its lsn.
func (f *changeFeed) add(kind changeKind, at int64, rec record) uint64 {
	lsn := f.next
	key := rec.key()
	var prev uint64
	if p := f.latest[key]; p != nil {
		if *p >= f.first {
			prev = *p
		} // else forgotten
		*p = lsn
	} else {
		p = new(uint64)
		*p = lsn
		f.latest[key] = p
	}
	f.push(feedEntry{lsn: lsn, prev: prev, at: at, kind: kind, rec: rec})
	if f.n > f.policy.MaxChanges || f.bytes > f.policy.MaxBytes {
		f.trim()
	}
	if len(f.latest) > 2*f.n+1024 {
		f.sweep()
	}
	return lsn
}

// setLatest records lsn as the latest change of the item of key.
func (f *changeFeed) setLatest(key string, lsn uint64) {
	if p := f.latest[key]; p != nil {
		*p = lsn
		return
	}
	p := new(uint64)
	*p = lsn
	f.latest[key] = p
}

// push appends e, whose lsn is next, without trimming.
func (f *changeFeed) push(e feedEntry) {
	last := len(f.chunks) - 1
	if last < 0 || len(f.chunks[last]) == feedChunk {
		chunk := f.spare
		if chunk == nil {
			chunk = make([]feedEntry, 0, feedChunk)
		}
		f.chunks, f.spare = append(f.chunks, chunk), nil
		last++
	}
	f.chunks[last] = append(f.chunks[last], e)
	f.n++
	f.next = e.lsn + 1
	f.bytes += int64(len(e.rec)) + feedEntrySize
}

// trim forgets the oldest changes while the feed holds more than its
// policy allows.
func (f *changeFeed) trim() {
	for f.n > 0 && (f.n > f.policy.MaxChanges || f.bytes > f.policy.MaxBytes) {
		e := &f.chunks[0][f.head]
		f.bytes -= int64(len(e.rec)) + feedEntrySize
		*e = feedEntry{}
		f.n--
		f.first++
		if f.head++; f.head == feedChunk {
			f.spare = f.chunks[0][:0] // every entry zeroed
			// Moved down rather than resliced, so that push reuses the
			// slice's room.
			n := copy(f.chunks, f.chunks[1:])
			f.chunks[n] = nil
			f.chunks = f.chunks[:n]
			f.head = 0
		}
	}
}

// sweep drops the stale entries of latest.
func (f *changeFeed) sweep() {
	for key, lsn := range f.latest {
		if *lsn < f.first {
			delete(f.latest, key)
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
		chunk := f.chunks[c]
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

// all returns a copy of the retained changes.
func (f *changeFeed) all() []feedEntry {
	out := make([]feedEntry, 0, f.n)
	f.scan(0, func(e *feedEntry) bool {
		out = append(out, *e)
		return true
	})
	return out
}

// isLatest reports whether e is the latest retained change of its item.
func (f *changeFeed) isLatest(e *feedEntry) bool {
	p := f.latest[e.rec.key()]
	return p != nil && *p == e.lsn
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
	binary.LittleEndian.PutUint32(h[0:], uint32(n))
	binary.LittleEndian.PutUint32(h[4:], ^uint32(n))
	binary.LittleEndian.PutUint32(h[8:], crc)
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
		b = appendStr(b, string(e.rec))
	}
	return b, i
}
