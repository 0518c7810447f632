package cosmosrest

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lethedb/lethe"
)

// Change feed continuations in an account of several regions. Each
// region numbers its own change feed (the versions replicated to it among
// its own expiries, which its own reaper finds), so a position in one is
// none in another. A continuation the account hands out is
//
//	<region's slug>:<the region's token>:<cover>
//
// In its region, the region's token reads on, as in a one-region front.
// In another, the cover, what the client has been given in terms every
// region shares, finds where to read on there
// (lethe.Container.ChangeFeedResumeLSN): after the last write the client
// was given (a version has the same ETag in every region), or before an
// expiry it may not have been given, if that is earlier. So a change feed
// read moved to another region (the SDKs move one when its region goes
// down) misses nothing, and may return some changes again. A region that
// has not received that write yet answers 304, nothing new, with the
// continuation as it came: the client reads on there once it has.
//
// With several write regions each region's feed interleaves the writes
// of every write region, whose ETags are not in one order; but each
// region's writes reach every other in the order it made them (one queue
// a destination, its own changes sent before any region can pass them
// on), so a region's feed holds each write region's writes in their
// order. A latest-version continuation's cover then says, for each write
// region, the last write of it the client was given (or, at the feed's
// end, every one the answering region had received: regionNode.recv), and
// another region reads on before the first write of any region after
// that (lethe.Container.ChangeFeedResumeLSNByRegion); one that has not
// received them all answers 304 as above. An all-versions-and-deletes
// continuation carries no cover and reads on only in its region (400
// elsewhere): its deletes carry no write of their own to place them by.

// feedCover is what a continuation's client has been given of its
// container's changes, in terms that hold in every region.
type feedCover struct {
	gen     uint64                  // the container's incarnation (Account.gens)
	last    lethe.ChangeFeedVersion // the last write given or passed over
	through time.Time               // every expiry at or before it given; zero: none known
	// seen is, with several write regions, for each region (by its index),
	// the write sequence number (ETag) of the last of its writes given;
	// 0: none. Nil with one write region.
	seen []uint64
}

// feedCoverVersion is the version of the cover's format: a version byte,
// gen (a uvarint), the ETag (a uvarint length, then its bytes), the
// write's instant and through (each a byte, 0 for the zero time, else 1
// and the Unix nanoseconds as a varint), in unpadded base64url.
// feedCoverSeenVersion is that of a cover with seen (several write
// regions): the version byte, gen, the number of regions and each one's
// sequence number (uvarints), and through.
const (
	feedCoverVersion     = 1
	feedCoverSeenVersion = 2
)

func (c *feedCover) encode() string {
	b := []byte{feedCoverVersion}
	b = binary.AppendUvarint(b, c.gen)
	times := []time.Time{c.last.Written, c.through}
	if c.seen != nil {
		b[0] = feedCoverSeenVersion
		b = binary.AppendUvarint(b, uint64(len(c.seen)))
		for _, s := range c.seen {
			b = binary.AppendUvarint(b, s)
		}
		times = times[1:]
	} else {
		b = binary.AppendUvarint(b, uint64(len(c.last.ETag)))
		b = append(b, c.last.ETag...)
	}
	for _, t := range times {
		if t.IsZero() {
			b = append(b, 0)
			continue
		}
		b = binary.AppendVarint(append(b, 1), t.UnixNano())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeFeedCover reads a cover encode wrote, and reports whether it could.
func decodeFeedCover(s string) (feedCover, bool) {
	var c feedCover
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 || b[0] != feedCoverVersion && b[0] != feedCoverSeenVersion {
		return c, false
	}
	version := b[0]
	b = b[1:]
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		b = b[max(n, 0):]
		return v, n > 0
	}
	instant := func() (time.Time, bool) {
		if len(b) == 0 || b[0] > 1 {
			return time.Time{}, false
		}
		set := b[0] == 1
		b = b[1:]
		if !set {
			return time.Time{}, true
		}
		v, n := binary.Varint(b)
		b = b[max(n, 0):]
		return time.Unix(0, v), n > 0
	}
	var ok [5]bool
	var n uint64
	c.gen, ok[0] = uvarint()
	n, ok[1] = uvarint()
	switch {
	case version == feedCoverSeenVersion:
		// Each sequence number is a byte at least.
		if ok[1] = ok[1] && n <= uint64(len(b)); ok[1] {
			c.seen = make([]uint64, n)
			for i := range c.seen {
				var good bool
				c.seen[i], good = uvarint()
				ok[1] = ok[1] && good
			}
		}
		ok[2] = true
	case ok[1] && n <= uint64(len(b)):
		c.last.ETag, b = string(b[:n]), b[n:]
		c.last.Written, ok[2] = instant()
	default:
		ok[1] = false
	}
	c.through, ok[3] = instant()
	ok[4] = len(b) == 0
	return c, ok == [5]bool{true, true, true, true, true}
}

// feedContinuation is a change feed continuation as a region reads it.
type feedContinuation struct {
	tok   string      // the token of the region that handed it out
	from  *regionNode // that region; nil outside an account of several
	cover *feedCover  // nil when it has none
}

// feedToken returns the continuation h answers for its container's
// token tok and cover (nil for none): tok itself outside an account of
// several regions.
func (h *Handler) feedToken(tok string, cover *feedCover) string {
	n := h.region
	if n == nil || len(n.acct.regions) < 2 || tok == "" {
		return tok
	}
	tok = RegionSlug(n.name) + ":" + tok
	if cover != nil {
		tok += ":" + cover.encode()
	}
	return tok
}

// readFeedToken reads continuation v, as feedToken made it, or says why
// it cannot: it names no region of the account, is garbled, or comes
// from another region without a cover.
func (h *Handler) readFeedToken(v string) (feedContinuation, string) {
	n := h.region
	if n == nil || len(n.acct.regions) < 2 {
		return feedContinuation{tok: v}, ""
	}
	slug, rest, _ := strings.Cut(v, ":")
	tok, enc, hasCover := strings.Cut(rest, ":")
	fc := feedContinuation{tok: tok}
	for _, o := range n.acct.regions {
		if slug == RegionSlug(o.name) {
			fc.from = o
		}
	}
	if fc.from == nil || tok == "" {
		return fc, fmt.Sprintf("the change feed continuation was read in no region of the account (%s): it is garbled, or from another account", strings.Join(n.acct.Regions(), ", "))
	}
	if hasCover {
		c, ok := decodeFeedCover(enc)
		regions := 0 // how many c.seen must have
		if n.acct.multi {
			regions = len(n.acct.regions)
		}
		if ok && (n.acct.multi != (c.seen != nil) || len(c.seen) != regions) {
			ok = false // of another account
		}
		if !ok {
			return fc, "the change feed continuation is malformed: its cover (what it has been given, in terms every region shares) is garbled"
		}
		fc.cover = &c
	}
	if fc.from != n && fc.cover == nil {
		why := "it has no cover of what it has been given, which another region could read on from (a continuation of an older lethe)"
		if n.acct.multi {
			why = "with several write regions, an all-versions-and-deletes continuation has no cover: its deletes carry no write of their own to place them by in another region's feed"
		}
		return fc, fmt.Sprintf("the change feed continuation was read in the region %s, not in %s: %s, so it reads on only in its region; start again here from a point in time (If-Modified-Since)", fc.from.name, n.name, why)
	}
	return fc, ""
}

// feedRead is a change feed read of a container in a region of an
// account: where it starts, and the cover of its continuation.
type feedRead struct {
	n       *regionNode // nil outside an account of several regions
	k       collKey
	started time.Time // the instant before the read
	cover   feedCover
	// behind is the continuation the read came with, when it came from
	// another region that this one has not caught up with: it is answered
	// 304 and that continuation.
	behind string
	// recv is, with several write regions, what region n had received of
	// each write region's writes of the container before the read (its
	// recv): at the feed's end, every one of them is given.
	recv []uint64
}

// newFeedRead returns the reading of container k in mode m that q makes,
// starting now, with no expiry known to be given. With several write
// regions, only a latest-version read has a cover.
func (q *request) newFeedRead(k collKey, m lethe.ChangeFeedMode) *feedRead {
	r := &feedRead{k: k, started: q.h.now()}
	n := q.h.region
	if n == nil || len(n.acct.regions) < 2 || n.acct.multi && m != lethe.ChangeFeedModeLatestVersion {
		return r
	}
	r.n = n
	n.acct.mu.Lock()
	defer n.acct.mu.Unlock()
	r.cover.gen = n.acct.gens[k]
	if n.acct.multi {
		r.cover.seen = make([]uint64, len(n.acct.regions))
		r.recv = make([]uint64, len(n.acct.regions))
		for _, w := range n.acct.regions {
			r.recv[w.idx] = n.recv[srcKey{w.idx, k}]
		}
	}
	return r
}

// resume sets o to read on after continuation fc (from readFeedToken)
// in container c, and reports false when it answered q (400: fc is of
// another incarnation of the container; a change feed forgotten) instead.
func (r *feedRead) resume(q *request, c *lethe.Container, fc feedContinuation, inm string, o *lethe.ChangeFeedOptions) bool {
	if fc.cover != nil {
		r.cover.through = fc.cover.through
		if r.cover.seen != nil && fc.cover.seen != nil {
			r.cover.seen = slices.Clone(fc.cover.seen)
		}
	}
	if fc.from == nil || fc.from == r.n || r.n == nil {
		o.Continuation = fc.tok
		return true
	}
	if fc.cover.gen != r.cover.gen {
		q.answerError(http.StatusBadRequest, "the change feed continuation belongs to another container: one of this name deleted since")
		return false
	}
	var lsn uint64
	var ok bool
	var err error
	if fc.cover.seen != nil {
		lsn, ok, err = r.resumeByRegion(c, fc.cover)
	} else {
		lsn, ok, err = c.ChangeFeedResumeLSN(fc.cover.last, fc.cover.through)
	}
	switch {
	case err != nil:
		q.fail(err, 0, 0)
		return false
	case !ok:
		r.behind = inm
		o.StartFrom = lethe.ChangeFeedStartFromNow()
	default:
		o.StartFrom = lethe.ChangeFeedStartAfter(lsn)
	}
	return true
}

// resumeByRegion is ChangeFeedResumeLSN for a cover of several write
// regions: ok is false when region r.n has not received, of some other
// write region, every write cover says was given (its recv is behind).
func (r *feedRead) resumeByRegion(c *lethe.Container, cover *feedCover) (lsn uint64, ok bool, _ error) {
	seen := make([]string, len(cover.seen))
	for i, s := range cover.seen {
		if i != r.n.idx && r.recv[i] < s {
			return 0, false, nil
		}
		if s != 0 {
			seen[i] = fmt.Sprintf("%016x", s)
		}
	}
	lsn, err := c.ChangeFeedResumeLSNByRegion(seen, cover.through)
	return lsn, err == nil, err
}

// etagRegion returns the write region (its index of n) that wrote the
// version of ETag etag, as lethe writes them, and its write sequence
// number.
func etagRegion(etag string, n int) (region int, seq uint64, ok bool) {
	region, ok = lethe.ETagWriteRegion(etag, n)
	seq, err := strconv.ParseUint(etag, 16, 64)
	return region, seq, ok && err == nil
}

// token returns the continuation of page resp, read with options o.
func (r *feedRead) token(q *request, o *lethe.ChangeFeedOptions, resp *lethe.ChangeFeedResponse) string {
	if r.behind != "" {
		resp.Items = nil
		return r.behind
	}
	if r.n == nil {
		return q.h.feedToken(resp.ContinuationToken, nil)
	}
	r.cover.last = resp.LastWrite
	end := len(resp.Items) < int(o.MaxItemCount)
	if end {
		// The page reached the feed's end: every expiry up to the instant
		// the read found them through is in it or before it (earlier
		// than the read's while a settings change waits for the log).
		r.cover.through = resp.ExpiredThrough
	}
	if seen := r.cover.seen; seen != nil {
		r.cover.last = lethe.ChangeFeedVersion{}
		for _, it := range resp.Items {
			etag, _ := stringMember(it, "_etag")
			if w, s, ok := etagRegion(strings.Trim(etag, `"`), len(seen)); ok {
				seen[w] = max(seen[w], s)
			}
		}
		for i, s := range r.recv {
			if end && i != r.n.idx {
				// What the region had received before the read is in
				// its feed before the end, or never landed (older than
				// a version it held, or a conflict's loser).
				seen[i] = max(seen[i], s)
			}
		}
	}
	return q.h.feedToken(resp.ContinuationToken, &r.cover)
}
