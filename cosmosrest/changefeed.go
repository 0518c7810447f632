package cosmosrest

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lethedb/lethe"
)

// The change feed request headers, as the SDKs send them.
const (
	aimLatestVersion      = "Incremental Feed"   // A-IM of the latest-version feed
	aimAllVersions        = "Full-Fidelity Feed" // A-IM of the all-versions-and-deletes feed
	changeFeedStartNow    = "*"                  // If-None-Match: start from now
	maxChangeFeedPageSize = 1000                 // a page when x-ms-max-item-count is -1
)

// msgAllVersionsFromBeginning is the service's answer (400) to an
// all-versions-and-deletes feed read from the beginning.
const msgAllVersionsFromBeginning = "Reading the change feed in all versions and deletes mode from the beginning is not supported. " +
	"You must read the change feed from within the retention period. Start from now, from a point in time, or from a continuation."

// changeFeed answers GET on a container's documents with an A-IM header:
// a page of the container's change feed, as Cosmos DB serves it.
//
// A-IM chooses the mode ("Incremental Feed": latest version; "Full-Fidelity
// Feed": all versions and deletes, whose documents have the 2021-09-15 wire
// format, {"current", "previous", "metadata"}). If-None-Match is the
// continuation, the etag of the previous page; "*" starts from now, and
// without it the feed starts from the beginning, or from If-Modified-Since
// when the request has one; the all-versions-and-deletes feed never starts
// from the beginning (400, msgAllVersionsFromBeginning, as the service's:
// it keeps versions and deletes for a retention period only).
// x-ms-documentdb-partitionkey scopes the feed to one partition key value,
// x-ms-documentdb-partitionkeyrangeid to one partition key range, and
// x-ms-start-epk with x-ms-end-epk to a part of one (pkranges.go); the
// response names its range. A page with changes is 200 with the documents;
// one without is 304 Not Modified. Both carry the continuation in etag.
func (q *request) changeFeed() {
	db, c, p, ok := q.documentContainer()
	if !ok {
		return
	}
	var o lethe.ChangeFeedOptions
	switch aim := q.r.Header.Get("A-IM"); {
	case strings.EqualFold(aim, aimLatestVersion):
		o.Mode = lethe.ChangeFeedModeLatestVersion
	case strings.EqualFold(aim, aimAllVersions):
		o.Mode = lethe.ChangeFeedModeAllVersionsAndDeletes
	default:
		q.answerError(http.StatusBadRequest, "A-IM must be \""+aimLatestVersion+"\" (latest version) or \""+aimAllVersions+"\" (all versions and deletes), not "+strconv.Quote(clip(aim)))
		return
	}
	pk, ok := q.partitionKey(p, true)
	if !ok {
		return
	}
	if pk != lethe.NewPartitionKey() {
		o.PartitionKey = &pk
	}
	l := q.layout(db, c, p)
	rangeID, feedRange, ok := q.requestRange(l, pk)
	if !ok {
		return
	}
	o.FeedRange = feedRange
	limit, ok := q.maxItemCount()
	if !ok {
		return
	}
	switch {
	case limit == 0:
		o.MaxItemCount = defaultPageSize
	case limit < 0:
		o.MaxItemCount = maxChangeFeedPageSize
	default:
		o.MaxItemCount = int32(min(limit, maxChangeFeedPageSize))
	}
	read := q.newFeedRead(collKey{db.id, c.ID()}, o.Mode)
	switch inm := strings.Trim(strings.TrimSpace(q.r.Header.Get("If-None-Match")), `"`); {
	case inm == changeFeedStartNow:
		o.StartFrom = lethe.ChangeFeedStartFromNow()
		read.cover.through = read.started // the expiries before are not asked for
	case inm != "":
		fc, why := q.h.readFeedToken(inm)
		if why != "" {
			q.answerError(http.StatusBadRequest, why)
			return
		}
		if !read.resume(q, c, fc, inm, &o) {
			return
		}
	default:
		v := q.r.Header.Get("If-Modified-Since")
		if v == "" && o.Mode == lethe.ChangeFeedModeAllVersionsAndDeletes {
			q.answerError(http.StatusBadRequest, msgAllVersionsFromBeginning)
			return
		}
		if v != "" {
			t, err := parseHTTPDate(v)
			if err != nil {
				q.answerError(http.StatusBadRequest, "If-Modified-Since must be an HTTP date, such as \"Mon, 02 Jan 2006 15:04:05 GMT\", not "+strconv.Quote(clip(v)))
				return
			}
			o.StartFrom = lethe.ChangeFeedStartFromTime(t)
			read.cover.through = t.Add(-time.Nanosecond) // nor those before t
		}
	}
	resp, err := c.ReadChangeFeed(q.ctx(), &o)
	if err != nil {
		q.fail(err, resp.RequestCharge, 0)
		return
	}
	tok := read.token(q, &o, &resp)
	hdr := q.w.Header()
	setHeader(hdr, "etag", quoteETag(tok))
	setHeader(hdr, "lsn", strconv.FormatUint(resp.LSN, 10))
	q.rangeHeaders(l, rangeID, false)
	setHeader(hdr, "x-ms-alt-content-path", "dbs/"+db.id+"/colls/"+c.ID())
	setHeader(hdr, "x-ms-content-path", ridString(containerRID(db.id, c.ID())))
	if len(resp.Items) == 0 {
		setHeader(hdr, "x-ms-item-count", "0")
		q.reply(http.StatusNotModified, nil, resp.RequestCharge)
		return
	}
	paths := p.PartitionKeyDefinition.Paths
	for i, it := range resp.Items {
		if o.Mode == lethe.ChangeFeedModeAllVersionsAndDeletes {
			resp.Items[i] = db.changeWithSelf(c.ID(), paths, it)
		} else {
			resp.Items[i] = db.withSelf(c.ID(), paths, it)
		}
	}
	q.replyFeed(ridString(containerRID(db.id, c.ID())), "Documents", resp.Items, "", resp.RequestCharge)
}

// feedPolicy is the change feed policy of the containers the front creates.
func (h *Handler) feedPolicy() *lethe.ChangeFeedPolicy {
	if h.cfg.NoChangeFeed {
		return nil
	}
	if h.cfg.ChangeFeed != nil {
		p := *h.cfg.ChangeFeed
		return &p
	}
	return &lethe.ChangeFeedPolicy{}
}

// parseHTTPDate reads an HTTP date, or an RFC 1123 date in another zone:
// azcosmos writes If-Modified-Since with "UTC" where HTTP says "GMT".
func parseHTTPDate(v string) (time.Time, error) {
	if t, err := http.ParseTime(v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC1123, v); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC1123Z, v)
}

// changeWithSelf returns a change of the all-versions feed,
// {"current", "previous", "metadata"}, with the system properties added to
// its versions of the document (not to the empty "current" of a delete).
func (db *database) changeWithSelf(coll string, paths []string, change []byte) []byte {
	ms, ok := topMembers(change)
	if !ok {
		return change
	}
	out := make([]byte, 0, len(change)+256)
	out = append(out, '{')
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, change[m.nameStart:m.valEnd]...)
		name, _ := memberName(change, m)
		if v := change[m.valStart:m.valEnd]; name == "current" || name == "previous" {
			if inner, ok := topMembers(v); ok && len(inner) > 0 {
				out = append(out[:len(out)-len(v)], db.withSelf(coll, paths, v)...)
			}
		}
	}
	return append(out, '}')
}
