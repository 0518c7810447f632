package lethe

import (
	"context"
	"slices"
	"strconv"
	"time"
)

// Reading on in another replica. Each replica of a container (each region
// of an account) numbers its own change feed: the versions replicated to
// it, in their writer's order, among its own expiries, which its own
// reaper finds. So an LSN of one replica means nothing in another, but a
// version does: it has the same ETag and instant in every replica.
// ChangeFeedResponse.LastWrite names the last version a reader has been
// given; ChangeFeedResumeLSN finds where it landed in another replica's
// feed, and ChangeFeedStartAfter reads on from there.

// ChangeFeedVersion names a version of an item, as every replica of the
// container holds it: by its ETag, and its instant (its "_ts" at full
// precision). The zero value names none.
type ChangeFeedVersion struct {
	ETag    string
	Written time.Time
}

// versionOf returns the version change e wrote (zero for nil).
func versionOf(e *feedEntry) ChangeFeedVersion {
	if e == nil {
		return ChangeFeedVersion{}
	}
	return ChangeFeedVersion{ETag: e.rec.etag(), Written: time.Unix(0, e.at)}
}

// ChangeFeedResumeLSN returns where a reader who has been given, in
// another replica of the container, every change up to the write of
// version last (ChangeFeedResponse.LastWrite) and every expiry at or
// before expiredThrough reads on in this one, with ChangeFeedStartAfter,
// missing none of the changes after those: the LSN where last landed
// here, or just before an earlier expiry after expiredThrough (a replica's
// expiries fall among its writes where its own reaper found them). Changes
// may be returned again (at least once, never lost).
//
// It holds for replicas fed by one writer, which every replica applies in
// its order (an account of one write region): so a version written after
// last has a higher ETag. When this replica has not received last yet
// (its latest write is older), ok is false: the reader is to wait, or read
// elsewhere. When it holds later versions but not last (a version it never
// stored), the reader reads on from last's instant, or from the first
// write of a higher ETag if that is earlier; when its feed no
// longer holds last nor any older version, changes after last may be
// forgotten, and the error wraps ErrChangeFeedTrimmed. A malformed ETag is
// a bad request. It reads the feed once, up to where last landed, holding
// the container's lock for a page's worth of changes at a time, and
// charges nothing.
func (c *Container) ChangeFeedResumeLSN(last ChangeFeedVersion, expiredThrough time.Time) (lsn uint64, ok bool, _ error) {
	const op = "ChangeFeedResumeLSN"
	if err := c.check(context.Background(), op, ""); err != nil {
		return 0, false, err
	}
	var want uint64
	if last.ETag != "" {
		var good bool
		if want, good = parseETag(last.ETag); !good {
			return 0, false, withContext(badRequest("the version %q has no ETag lethe writes", last.ETag), op, c.id, "")
		}
	}
	through := unixNanos(expiredThrough) // the zero time is before every instant
	written := unixNanos(last.Written)
	trimmed := func() error {
		return withContext(&Error{StatusCode: statusBadRequest, Err: ErrChangeFeedTrimmed,
			Message: "the change feed no longer holds the version " + strconv.Quote(last.ETag) + " nor any older one: changes after it may be forgotten; start again from the beginning"}, op, c.id, "")
	}
	c.mu.Lock()
	f := c.mu.feed.history
	if f == nil {
		c.mu.Unlock()
		return 0, false, c.noFeedError(op)
	}
	var arrived *feedEntry
	if want != 0 {
		arrived = f.lastWriteAt(f.next - 1)
	}
	switch {
	case want == 0 && f.first > 1, want != 0 && arrived == nil && f.first > 1:
		// Nothing written given, or nothing written here, and the
		// beginning forgotten.
		c.mu.Unlock()
		return 0, false, trimmed()
	case want == 0:
		c.mu.Unlock()
		return 0, true, nil // nothing written given: from the beginning
	case arrived == nil || arrived.rec.seq() < want:
		c.mu.Unlock()
		return 0, false, nil
	}
	// One pass (see scanSteps): where last landed, the first expiry after
	// expiredThrough before it, and (for the case last is not here) the
	// first change at or after its instant, the first write of a higher
	// ETag (a write's instant is taken before its ETag, so a later ETag may
	// have an earlier instant), and whether an older version is held.
	var landed, expiry, at, later uint64
	older := false
	f = c.scanSteps(f, func(e *feedEntry) bool {
		switch e.kind {
		case changeCreate, changeReplace:
			s := e.rec.seq()
			if s == want {
				landed = e.lsn
				return false
			}
			older = older || s < want
			if later == 0 && s > want {
				later = e.lsn
			}
		case changeExpire:
			if expiry == 0 && e.at > through {
				expiry = e.lsn
			}
		}
		if at == 0 && e.at >= written {
			at = e.lsn
		}
		return true
	})
	if f == nil {
		c.mu.Unlock()
		return 0, false, c.noFeedError(op)
	}
	next, first := f.next, f.first
	c.mu.Unlock()
	switch {
	case landed == 0 && !older && first > 1:
		return 0, false, trimmed()
	case landed == 0:
		landed = next - 1
		if at != 0 {
			landed = at - 1
		}
		if later != 0 {
			landed = min(landed, later-1)
		}
	}
	if expiry != 0 {
		landed = min(landed, expiry-1)
	}
	return landed, true, nil
}

// scanSteps calls fn on the changes of the container's feed f, from the
// oldest, until fn returns false or the feed ends: feedScanStep changes at
// a time under c.mu, which the caller holds and which it releases between
// steps (so that writers wait no longer than for a page; changes
// forgotten meanwhile are passed over). It returns the feed, c.mu held,
// or nil when the container no longer keeps one.
func (c *Container) scanSteps(f *changeFeed, fn func(e *feedEntry) bool) *changeFeed {
	var pos uint64
	for {
		n, more, stop := 0, false, false
		f.scan(pos, func(e *feedEntry) bool {
			if n == feedScanStep {
				more = true
				return false
			}
			n++
			pos = e.lsn
			stop = !fn(e)
			return !stop
		})
		if stop || !more {
			return f
		}
		c.mu.Unlock()
		c.mu.Lock()
		if f = c.mu.feed.history; f == nil {
			return nil
		}
	}
}

// ETagWriteRegion returns the write region (Options.WriteRegion) that
// wrote the version of ETag etag, in an account of writeRegions write
// regions (Options.WriteRegions, at least 2): its store hands out write
// sequence numbers of its own residue. ok is false for an ETag lethe does
// not write, or fewer than 2 write regions.
func ETagWriteRegion(etag string, writeRegions int) (region int, ok bool) {
	seq, good := parseETag(etag)
	if !good || writeRegions < 2 {
		return 0, false
	}
	return int(seq >> genBits % uint64(writeRegions)), true
}

// ChangeFeedResumeLSNByRegion is ChangeFeedResumeLSN for the replicas of
// a store of several write regions (Options.WriteRegions), whose feeds
// interleave the writes of every region, each region's in its order. A
// reader who has been given, in another replica, every write of write
// region i up to the version of ETag seen[i] ("": none), for each i,
// and every expiry at or before expiredThrough, reads on here after the
// LSN it returns: just before the first write of some region i with a
// higher ETag than seen[i], or with a lower one after seen[i]'s (a store
// numbers writes made at once in its feed in the order they reach it,
// not always their ETags'), or an earlier expiry after expiredThrough
// (the feed's end when there is none). Changes may be returned again
// (at least once, never lost), but for deletes, which carry no write of
// their own to place them by: it is for the latest-version feed.
//
// It does not know whether this replica has received the writes seen
// names (the caller keeps what each replica has received): those it has
// not are after the LSN when they come. When the feed has forgotten
// changes, and does not hold, for each write region, a write of it the
// reader was given before the first change it may lack (so that the
// region's writes forgotten are older), the error wraps
// ErrChangeFeedTrimmed. A malformed ETag, or seen of
// another length than the store's write regions, is a bad request. It
// reads the feed once, up to that change, holding the container's lock a
// page's worth of changes at a time, and charges nothing.
func (c *Container) ChangeFeedResumeLSNByRegion(seen []string, expiredThrough time.Time) (uint64, error) {
	const op = "ChangeFeedResumeLSNByRegion"
	if err := c.check(context.Background(), op, ""); err != nil {
		return 0, err
	}
	n := c.store.opts.WriteRegions
	if n < 2 || len(seen) != n {
		return 0, withContext(badRequest("%d versions seen, for a store of %d write regions (it needs at least 2)", len(seen), n), op, c.id, "")
	}
	want := make([]uint64, n)
	for i, etag := range seen {
		if etag == "" {
			continue
		}
		var good bool
		if want[i], good = parseETag(etag); !good {
			return 0, withContext(badRequest("the version %q has no ETag lethe writes", etag), op, c.id, "")
		}
	}
	through := unixNanos(expiredThrough)
	c.mu.Lock()
	f := c.mu.feed.history
	var lacks uint64         // the first change the reader may lack; 0: none
	held := make([]bool, n)  // a write of the region given, before lacks
	top := make([]uint64, n) // the highest ETag of the region's writes so far
	if f != nil {
		f = c.scanSteps(f, func(e *feedEntry) bool {
			switch e.kind {
			case changeCreate, changeReplace:
				s := e.rec.seq()
				r := s >> genBits % uint64(n)
				if s > want[r] || s < top[r] && top[r] == want[r] {
					lacks = e.lsn
				}
				held[r] = held[r] || s <= want[r]
				top[r] = max(top[r], s)
			case changeExpire:
				if e.at > through {
					lacks = e.lsn
				}
			}
			return lacks == 0
		})
	}
	if f == nil {
		c.mu.Unlock()
		return 0, c.noFeedError(op)
	}
	next, first := f.next, f.first
	c.mu.Unlock()
	switch {
	case first > 1 && slices.Contains(held, false):
		return 0, withContext(&Error{StatusCode: statusBadRequest, Err: ErrChangeFeedTrimmed,
			Message: "the change feed no longer holds the changes before the first one the reader may lack: changes may be forgotten; start again from the beginning"}, op, c.id, "")
	case lacks == 0:
		return next - 1, nil
	}
	return lacks - 1, nil
}
