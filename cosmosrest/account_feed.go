package cosmosrest

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
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
// of several origins, whose ETags are not in one order: a continuation
// carries no cover and reads on only in its region (400 elsewhere).

// feedCover is what a continuation's client has been given of its
// container's changes, in terms that hold in every region.
type feedCover struct {
	gen     uint64                  // the container's incarnation (Account.gens)
	last    lethe.ChangeFeedVersion // the last write given or passed over
	through time.Time               // every expiry at or before it given; zero: none known
}

// feedCoverVersion is the version of the cover's format: a version byte,
// gen (a uvarint), the ETag (a uvarint length, then its bytes), the
// write's instant and through (each a byte, 0 for the zero time, else 1
// and the Unix nanoseconds as a varint), in unpadded base64url.
const feedCoverVersion = 1

func (c *feedCover) encode() string {
	b := []byte{feedCoverVersion}
	b = binary.AppendUvarint(b, c.gen)
	b = binary.AppendUvarint(b, uint64(len(c.last.ETag)))
	b = append(b, c.last.ETag...)
	for _, t := range []time.Time{c.last.Written, c.through} {
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
	if err != nil || len(b) == 0 || b[0] != feedCoverVersion {
		return c, false
	}
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
	if ok[1] = ok[1] && n <= uint64(len(b)); ok[1] {
		c.last.ETag, b = string(b[:n]), b[n:]
	}
	c.last.Written, ok[2] = instant()
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
		if !ok {
			return fc, "the change feed continuation is malformed: its cover (what it has been given, in terms every region shares) is garbled"
		}
		fc.cover = &c
	}
	if fc.from != n && fc.cover == nil {
		why := "it has no cover of what it has been given, which another region could read on from (a continuation of an older lethe)"
		if n.acct.multi {
			why = "with several write regions, each region's feed interleaves the writes of each in its own order"
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
}

// newFeedRead returns the reading of container k that q makes, starting
// now, with no expiry known to be given.
func (q *request) newFeedRead(k collKey) *feedRead {
	r := &feedRead{k: k, started: q.h.now()}
	if n := q.h.region; n != nil && len(n.acct.regions) > 1 && !n.acct.multi {
		r.n = n
		n.acct.mu.Lock()
		r.cover.gen = n.acct.gens[k]
		n.acct.mu.Unlock()
	}
	return r
}

// resume sets o to read on after continuation fc (from readFeedToken)
// in container c, and reports false when it answered q (400: fc is of
// another incarnation of the container; a change feed forgotten) instead.
func (r *feedRead) resume(q *request, c *lethe.Container, fc feedContinuation, inm string, o *lethe.ChangeFeedOptions) bool {
	if fc.cover != nil {
		r.cover.through = fc.cover.through
	}
	if fc.from == nil || fc.from == r.n || r.n == nil {
		o.Continuation = fc.tok
		return true
	}
	if fc.cover.gen != r.cover.gen {
		q.answerError(http.StatusBadRequest, "the change feed continuation belongs to another container: one of this name deleted since")
		return false
	}
	lsn, ok, err := c.ChangeFeedResumeLSN(fc.cover.last, fc.cover.through)
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
	if len(resp.Items) < int(o.MaxItemCount) {
		// The page reached the feed's end: every expiry up to the read's
		// instant is in it or before it.
		r.cover.through = r.started
	}
	return q.h.feedToken(resp.ContinuationToken, &r.cover)
}
