package lethe

import (
	"context"
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
// stored), the reader reads on from last's instant; when its feed no
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
	noFeed := withContext(badRequest("the container keeps no change feed: give it a ChangeFeedPolicy"), op, c.id, "")
	trimmed := withContext(&Error{StatusCode: statusBadRequest, Err: ErrChangeFeedTrimmed,
		Message: "the change feed no longer holds the version " + strconv.Quote(last.ETag) + " nor any older one: changes after it may be forgotten; start again from the beginning"}, op, c.id, "")
	c.mu.Lock()
	f := c.mu.feed.history
	if f == nil {
		c.mu.Unlock()
		return 0, false, noFeed
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
		return 0, false, trimmed
	case want == 0:
		c.mu.Unlock()
		return 0, true, nil // nothing written given: from the beginning
	case arrived == nil || arrived.rec.seq() < want:
		c.mu.Unlock()
		return 0, false, nil
	}
	// One pass, feedScanStep changes at a time under c.mu (so that writers
	// wait no longer than for a page): where last landed, the first expiry
	// after expiredThrough before it, and (for the case last is not here)
	// the first change at or after its instant, and whether an older
	// version is held. Changes forgotten between steps are passed over.
	var landed, expiry, at, pos uint64
	older := false
	for {
		n, more := 0, false
		f.scan(pos, func(e *feedEntry) bool {
			if n == feedScanStep {
				more = true
				return false
			}
			n++
			pos = e.lsn
			switch e.kind {
			case changeCreate, changeReplace:
				s := e.rec.seq()
				if s == want {
					landed = e.lsn
					return false
				}
				older = older || s < want
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
		if landed != 0 || !more {
			break
		}
		c.mu.Unlock()
		c.mu.Lock()
		if f = c.mu.feed.history; f == nil {
			c.mu.Unlock()
			return 0, false, noFeed
		}
	}
	next, first := f.next, f.first
	c.mu.Unlock()
	switch {
	case landed == 0 && !older && first > 1:
		return 0, false, trimmed
	case landed == 0:
		landed = next - 1
		if at != 0 {
			landed = at - 1
		}
	}
	if expiry != 0 {
		landed = min(landed, expiry-1)
	}
	return landed, true, nil
}
