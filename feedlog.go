package lethe

// changeFeed is the bounded history of a container's changes that its
// change feed is read from: every create, replace, delete and expiry, each
// with its log sequence number (lsn: 1, 2, 3, ... in commit order, with no
// gaps), oldest first. It lives under the container's expiry.mu, where
// applyItems appends the changes it makes and the expiry watch appends the
// expiries it finds, so its order is the order in which the container's
// state changed. When it holds more than its policy allows it forgets its
// oldest changes.
type changeFeed struct {
	policy  ChangeFeedPolicy // with its defaults filled in
	entries []feedEntry      // entries[head:] are retained, in lsn order
	head    int
	bytes   int64  // the records' size, retained entries only
	first   uint64 // the lsn of entries[head]; next when none is retained
	next    uint64 // the lsn the next change gets

	// latest maps an item's key (record.key) to the lsn of its latest
	// retained change: a change is the latest version of its item exactly
	// when latest says so.
	latest map[string]uint64
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
}

// feedEntrySize is what the feed charges a retained entry against
// MaxBytes beyond its record: the entry itself and its share of latest.
const feedEntrySize = 48 + 48

func newChangeFeed(p ChangeFeedPolicy, next uint64) *changeFeed {
	return &changeFeed{policy: p, first: next, next: next, latest: make(map[string]uint64)}
}

// add appends a change and returns its lsn.
func (f *changeFeed) add(kind changeKind, at int64, rec record) uint64 {
	key := rec.key()
	lsn := f.next
	f.next++
	f.entries = append(f.entries, feedEntry{lsn: lsn, prev: f.latest[key], at: at, kind: kind, rec: rec})
	f.latest[key] = lsn
	f.bytes += int64(len(rec)) + feedEntrySize
	f.trim()
	return lsn
}

// trim forgets the oldest changes while the feed holds more than its
// policy allows.
func (f *changeFeed) trim() {
	for f.retained() > 0 && (f.retained() > f.policy.MaxChanges || f.bytes > f.policy.MaxBytes) {
		e := &f.entries[f.head]
		if key := e.rec.key(); f.latest[key] == e.lsn {
			delete(f.latest, key)
		}
		f.bytes -= int64(len(e.rec)) + feedEntrySize
		*e = feedEntry{}
		f.head++
		f.first++
	}
	// Move the retained entries down once the forgotten ones fill half the
	// slice: each entry moves O(1) times on average.
	if f.head > 1024 && f.head > len(f.entries)/2 {
		n := copy(f.entries, f.entries[f.head:])
		clear(f.entries[n:])
		f.entries, f.head = f.entries[:n], 0
	}
}

// retained returns how many changes the feed holds.
func (f *changeFeed) retained() int { return len(f.entries) - f.head }

// after returns the retained entries with an lsn greater than lsn.
func (f *changeFeed) after(lsn uint64) []feedEntry {
	if lsn < f.first {
		return f.entries[f.head:]
	}
	i := f.head + int(lsn-f.first) + 1
	if i >= len(f.entries) {
		return nil
	}
	return f.entries[i:]
}

// firstAt returns the lsn of the first retained change made at or after
// the instant at (next if none).
func (f *changeFeed) firstAt(at int64) uint64 {
	for _, e := range f.entries[f.head:] {
		if e.at >= at {
			return e.lsn
		}
	}
	return f.next
}

// isLatest reports whether e is the latest retained change of its item.
func (f *changeFeed) isLatest(e *feedEntry) bool { return f.latest[e.rec.key()] == e.lsn }

// resize applies a new policy (the container's settings changed).
func (f *changeFeed) resize(p ChangeFeedPolicy) {
	f.policy = p
	f.trim()
}
