package lethe

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/lethedb/lethe/internal/jsontext"
)

// ChangeFeedPolicy turns a container's change feed on and bounds the
// history it keeps: the feed forgets its oldest changes once it holds more
// than MaxChanges changes or MaxBytes bytes of them. A zero field takes its
// default; a negative one is refused.
type ChangeFeedPolicy struct {
	// MaxChanges is the most changes the feed keeps; 0 means
	// DefaultChangeFeedMaxChanges.
	MaxChanges int `json:",omitempty"`
	// MaxBytes bounds the size of the changes kept: each counts its item
	// version's stored size (the document and its identity) and about 100
	// bytes of bookkeeping. 0 means DefaultChangeFeedMaxBytes.
	MaxBytes int64 `json:",omitempty"`
}

// The defaults of ChangeFeedPolicy.
const (
	DefaultChangeFeedMaxChanges = 1 << 20
	DefaultChangeFeedMaxBytes   = 256 << 20
)

// normalize fills in the defaults, or says what is wrong.
func (p *ChangeFeedPolicy) normalize() *Error {
	if p.MaxChanges < 0 || p.MaxBytes < 0 {
		return badRequest("the change feed policy's MaxChanges (%d) and MaxBytes (%d) cannot be negative", p.MaxChanges, p.MaxBytes)
	}
	if p.MaxChanges == 0 {
		p.MaxChanges = DefaultChangeFeedMaxChanges
	}
	if p.MaxBytes == 0 {
		p.MaxBytes = DefaultChangeFeedMaxBytes
	}
	return nil
}

// setFeedPolicyLocked turns the change feed on, off or resizes it, at now.
// The caller holds c.mu, and every shard lock unless the container is
// being made.
func (c *Container) setFeedPolicyLocked(p *ChangeFeedPolicy, now int64) {
	f := c.mu.feed.history
	switch {
	case p == nil && f != nil:
		c.mu.feed.nextLSN = f.next
		c.mu.feed.history = nil
		c.stopWatchLocked()
	case p != nil && f == nil:
		c.mu.feed.history = newChangeFeed(*p, c.mu.feed.nextLSN)
		c.startWatchLocked(now)
	case p != nil:
		f.resize(*p)
	}
	c.updateSharedLocked()
}

// ChangeFeedMode says what a change feed returns.
type ChangeFeedMode uint8

const (
	// ChangeFeedModeLatestVersion returns the items created or replaced
	// (upserts and patches included), each at its latest version, once,
	// in the order of their last change. Deleted and expired items do not
	// appear. Each item carries its change's log sequence number as "_lsn".
	ChangeFeedModeLatestVersion ChangeFeedMode = iota
	// ChangeFeedModeAllVersionsAndDeletes returns every change: each
	// version written and each delete, expiries included, in order, with
	// metadata (see NewChangeFeedPager).
	ChangeFeedModeAllVersionsAndDeletes
)

// ChangeFeedStartFrom says where a change feed without a continuation
// begins. Its zero value is ChangeFeedStartFromBeginning().
type ChangeFeedStartFrom struct {
	kind  uint8 // 0 beginning, 1 now, 2 at, 3 after
	at    time.Time
	after uint64
}

// ChangeFeedStartFromBeginning starts with the oldest change the feed
// keeps.
func ChangeFeedStartFromBeginning() ChangeFeedStartFrom { return ChangeFeedStartFrom{} }

// ChangeFeedStartFromNow starts with the changes made after the first
// page is read.
func ChangeFeedStartFromNow() ChangeFeedStartFrom { return ChangeFeedStartFrom{kind: 1} }

// ChangeFeedStartFromTime starts with the first change made at or after t
// (by the store's clock) that the feed still keeps.
func ChangeFeedStartFromTime(t time.Time) ChangeFeedStartFrom {
	return ChangeFeedStartFrom{kind: 2, at: t}
}

// ChangeFeedStartAfter starts with the change after the one numbered lsn
// (its LSN, as ChangeFeedResponse.LSN and "_lsn" give it), as a
// continuation at lsn would, without one: ChangeFeedResumeLSN gives such
// a position for a reader coming from another replica. A position the
// feed has forgotten fails with ErrChangeFeedTrimmed, one it has not
// reached yet as a continuation ahead of the feed does; 0 is the
// beginning.
func ChangeFeedStartAfter(lsn uint64) ChangeFeedStartFrom {
	return ChangeFeedStartFrom{kind: 3, after: lsn}
}

// ChangeFeedOptions are the options of a change feed read. A nil
// *ChangeFeedOptions means the defaults: latest version, every partition,
// from the beginning, DefaultPageSize changes a page.
type ChangeFeedOptions struct {
	Mode ChangeFeedMode
	// PartitionKey scopes the feed to one logical partition (or, on a
	// hierarchical key, to the partitions a prefix begins); nil: every one.
	PartitionKey *PartitionKey
	// FeedRange, when set, narrows the feed to the changes of items whose
	// effective partition key lies in it (feedrange.go). A continuation
	// is a position in the container's one feed: it resumes over any feed
	// range, as Cosmos DB's resume over the ranges a split makes.
	FeedRange *FeedRange
	// StartFrom is where the feed begins when there is no Continuation.
	StartFrom ChangeFeedStartFrom
	// MaxItemCount is the most changes a page holds; 0 (or less) means
	// DefaultPageSize.
	MaxItemCount int32
	// Continuation resumes after the page that returned it; it must come
	// from a feed of the same container, mode and partition key.
	Continuation string
}

// ChangeFeedResponse is one page of a change feed.
type ChangeFeedResponse struct {
	// Items are the page's changes, each a JSON document the caller owns.
	// None means there is nothing new (Cosmos DB answers 304 Not Modified).
	Items [][]byte
	// ContinuationToken resumes after this page, also when it is empty.
	ContinuationToken string
	// LSN is the log sequence number of the last change the page looked
	// at: the continuation's position.
	LSN uint64
	// LastWrite is the latest create or replace the feed holds at or
	// before LSN, on this page or before it (zero if it holds none): what
	// a reader who has read up to LSN has been given, in terms that hold
	// in every replica of the container (ChangeFeedResumeLSN).
	LastWrite ChangeFeedVersion
	// ExpiredThrough is the instant up to which the read found expiries:
	// when the page reaches the feed's end, every expiry at or before it
	// is on the page or before it. It is the read's instant, or earlier
	// while a settings change of the container waits for the log (the
	// read finds no expiry after the change's instant until it is made).
	ExpiredThrough time.Time
	RequestCharge  float64
}

// ErrChangeFeedTrimmed is wrapped by the *Error (400, as Cosmos DB) of a
// change feed read whose continuation points before the oldest change the
// feed still keeps: changes it should return have been forgotten (see
// ChangeFeedPolicy). Start again from the beginning, or from a query.
var ErrChangeFeedTrimmed = errors.New("lethe: the change feed no longer holds the changes after the continuation")

// A ChangeFeedPager reads a container's change feed page after page. Use
// it from one goroutine at a time. A change feed never ends: when NextPage
// returns an empty page, the reader has caught up, and a later NextPage
// returns what changed since.
type ChangeFeedPager struct {
	c       *Container
	opts    ChangeFeedOptions
	started bool
	lsn     uint64 // the last change looked at (0: before the first)
}

// NewChangeFeedPager returns a pager over the container's change feed,
// which the container keeps while it has a ChangeFeedPolicy. Errors (no
// feed, a bad continuation, one whose changes were forgotten) come from
// NextPage.
//
// # The change feed
//
// Every change to a container with a ChangeFeedPolicy is numbered with a
// log sequence number (lsn): 1, 2, 3, ... in the order the changes were
// made, with no gaps, across every partition. An item's expiry is a change
// too, dated (crts) at the instant the item expired by the store's clock,
// not when the reaper purges it, or, for an item that a shorter default
// TTL expired retroactively, at that settings change. It is numbered when
// the store finds it: at its instant when the container has expiry
// subscribers, else at the latest when the feed is next read, the item is
// written again or purged, or a snapshot is taken; so an expiry may follow
// writes made after it, but always precedes any later change of its own
// item. Each expiry is in the feed once, and an item written again or
// deleted before it expired has none.
//
// In latest-version mode a page holds documents as a read returns them,
// with "_lsn" added. In all-versions-and-deletes mode, a page holds one
// document per change, as Cosmos DB writes them:
//
//	{"current": {...the item, with "_lsn"...},
//	 "metadata": {"operationType": "create", "lsn": 7, "crts": 1700000000,
//	              "previousImageLSN": 3}}
//
// operationType is "create" or "replace" (upserts and patches say which
// they did) or "delete"; previousImageLSN is the lsn of the item's
// previous change, when the feed still holds it; crts is the change's
// instant in Unix seconds. A delete has an empty "current", the version
// removed as "previous", and in its metadata the item's "id", its
// "partitionKey" (an object of the key paths and their values) and
// "timeToLiveExpired": true when the item expired, false when it was
// deleted.
//
// Replaying the all-versions-and-deletes feed from the beginning
// reconstructs the container's live items as of the last page read, as
// long as the feed kept every change: the feed is brought up to the
// instant of each page read, expiries included, before the page is taken.
//
// The feed keeps what its policy allows. A continuation whose next change
// has been forgotten fails with ErrChangeFeedTrimmed. Starting from the
// beginning starts at the oldest change kept: in latest-version mode,
// items whose last change was forgotten are not returned (Cosmos DB's
// latest-version feed has no such limit; query the container instead).
// A durable store keeps the feed across restarts.
//
// Each page is charged like reads of the items it returns (at least 1 RU).
func (c *Container) NewChangeFeedPager(o *ChangeFeedOptions) *ChangeFeedPager {
	p := &ChangeFeedPager{c: c}
	if o != nil {
		p.opts = *o
	}
	return p
}

// ReadChangeFeed reads one page of the container's change feed, as
// azcosmos's ContainerClient.ReadChangeFeed does: pass the page's
// ContinuationToken in o.Continuation to read on.
func (c *Container) ReadChangeFeed(ctx context.Context, o *ChangeFeedOptions) (ChangeFeedResponse, error) {
	return c.NewChangeFeedPager(o).NextPage(ctx)
}

// feedScanStep is how many changes a page looks at under c.mu
// at a time, so that a feed read never holds writers for long.
const feedScanStep = 4096

// NextPage returns the next page of changes. A page that would overdraw the
// container's throughput fails with ErrTooManyRequests and may be retried:
// the pager stays where it was.
func (p *ChangeFeedPager) NextPage(ctx context.Context) (ChangeFeedResponse, error) {
	const op = "ReadChangeFeed"
	c := p.c
	if c == nil {
		return ChangeFeedResponse{}, notOpened()
	}
	if err := c.check(ctx, op, ""); err != nil {
		return ChangeFeedResponse{}, err
	}
	pk := ""
	if p.opts.PartitionKey != nil {
		if err := c.pkPaths.check(*p.opts.PartitionKey, true); err != nil {
			return ChangeFeedResponse{}, withContext(err, op, c.id, "")
		}
		pk = p.opts.PartitionKey.enc
	}
	scope, serr := c.scope(p.opts.FeedRange)
	if serr != nil {
		return ChangeFeedResponse{}, withContext(serr, op, c.id, "")
	}
	if !p.started && p.opts.Continuation != "" {
		lsn, err := c.decodeFeedToken(p.opts.Continuation, p.opts.Mode, pk)
		if err != nil {
			return ChangeFeedResponse{}, withContext(err, op, c.id, "")
		}
		p.lsn, p.started = lsn, true
	}
	size := int(p.opts.MaxItemCount)
	if size <= 0 {
		size = DefaultPageSize
	}
	latest := p.opts.Mode == ChangeFeedModeLatestVersion
	now := c.store.clock.now()
	lsn := p.lsn
	var page []feedEntry
	var last ChangeFeedVersion
	var through int64 // what the last look found expiries up to
	for {
		c.mu.Lock()
		f := c.mu.feed.history
		if f == nil {
			c.mu.Unlock()
			return ChangeFeedResponse{}, c.noFeedError(op)
		}
		found := c.findExpiriesLocked(now, false)
		through = c.foundUpToLocked(now)
		c.publishDueLocked()
		if !p.started {
			switch p.opts.StartFrom.kind {
			case 1:
				lsn = f.next - 1
			case 2:
				lsn = f.firstAt(unixNanos(p.opts.StartFrom.at)) - 1
			case 3:
				lsn = p.opts.StartFrom.after
			}
			p.started = true
		}
		if lsn >= f.next {
			c.mu.Unlock()
			c.wakeNotifier(found)
			return ChangeFeedResponse{}, withContext(badRequest("the change feed continuation is ahead of the feed (lsn %d; the next change is %d): the store lost changes it had not made durable", lsn, f.next), op, c.id, "")
		}
		if lsn != 0 && lsn+1 < f.first {
			first := f.first
			c.mu.Unlock()
			c.wakeNotifier(found)
			return ChangeFeedResponse{}, withContext(&Error{StatusCode: statusBadRequest, Err: ErrChangeFeedTrimmed,
				Message: "the change feed no longer holds the changes after lsn " + strconv.FormatUint(lsn, 10) +
					" (the oldest it holds is " + strconv.FormatUint(first, 10) + "); start again from the beginning"}, op, c.id, "")
		}
		n, more := 0, false
		f.scan(lsn, func(e *feedEntry) bool {
			if len(page) == size || n == feedScanStep {
				more = true
				return false
			}
			n++
			lsn = e.lsn
			if !strings.HasPrefix(e.rec.pk(), pk) || !scope.has(e.rec.pk()) {
				return true
			}
			if latest && (e.kind == changeDelete || e.kind == changeExpire || f.isSuperseded(e.lsn) || !c.rule.live(e.rec, now)) {
				return true
			}
			page = append(page, *e)
			return true
		})
		done := !more || len(page) == size
		if done {
			last = versionOf(f.lastWriteAt(lsn))
		}
		c.mu.Unlock()
		c.wakeNotifier(found)
		if done {
			break
		}
		if err := ctx.Err(); err != nil {
			return ChangeFeedResponse{}, err
		}
	}
	cost := int64(0)
	for i := range page {
		cost += charge(opRead, page[i].rec.chargeSize())
	}
	cost = max(cost, 1000)
	if err := c.drawAt(op, "", cost, now); err != nil {
		return ChangeFeedResponse{}, err
	}
	p.lsn = lsn
	resp := ChangeFeedResponse{
		Items:             make([][]byte, len(page)),
		ContinuationToken: c.feedToken(p.opts.Mode, pk, lsn),
		LSN:               lsn,
		LastWrite:         last,
		ExpiredThrough:    time.Unix(0, through).UTC(),
		RequestCharge:     ru(cost),
	}
	for i := range page {
		resp.Items[i] = c.renderChange(&page[i], latest)
	}
	return resp, nil
}

// noFeedError is the error of operation op on a container that keeps no
// change feed.
func (c *Container) noFeedError(op string) error {
	return withContext(badRequest("the container keeps no change feed: give it a ChangeFeedPolicy"), op, c.id, "")
}

// renderChange writes a change as its mode shows it.
func (c *Container) renderChange(e *feedEntry, latest bool) []byte {
	n := e.rec.jsonLen()
	withLSN := func(b []byte) []byte {
		b = e.rec.appendJSON(b)
		b = append(b[:len(b)-1], `,"_lsn":`...)
		b = strconv.AppendUint(b, e.lsn, 10)
		return append(b, '}')
	}
	if latest {
		return withLSN(make([]byte, 0, n+32))
	}
	b := make([]byte, 0, n+160)
	if e.kind == changeDelete || e.kind == changeExpire {
		b = append(b, `{"current":{},"previous":`...)
		b = e.rec.appendJSON(b)
	} else {
		b = append(b, `{"current":`...)
		b = withLSN(b)
	}
	b = append(b, `,"metadata":{"operationType":"`...)
	switch e.kind {
	case changeCreate:
		b = append(b, "create"...)
	case changeReplace:
		b = append(b, "replace"...)
	default:
		b = append(b, "delete"...)
	}
	b = append(b, `","lsn":`...)
	b = strconv.AppendUint(b, e.lsn, 10)
	b = append(b, `,"crts":`...)
	b = strconv.AppendInt(b, floorSeconds(e.at), 10)
	if e.prev != 0 {
		b = append(b, `,"previousImageLSN":`...)
		b = strconv.AppendUint(b, e.prev, 10)
	}
	if e.kind == changeDelete || e.kind == changeExpire {
		b = append(b, `,"timeToLiveExpired":`...)
		b = strconv.AppendBool(b, e.kind == changeExpire)
		b = append(b, `,"id":`...)
		b = jsontext.AppendString(b, e.rec.id())
		b = append(b, `,"partitionKey":{`...)
		enc := e.rec.pk()
		for i, segs := range c.pkPaths.segs {
			if enc == "" {
				break
			}
			if i > 0 {
				b = append(b, ',')
			}
			n := pkComponentLen(enc)
			b = jsontext.AppendString(b, segs[len(segs)-1])
			b = append(b, ':')
			b = appendPKComponent(b, enc[:n])
			enc = enc[n:]
		}
		b = append(b, '}')
	}
	return append(b, "}}"...)
}

// feedTokenVersion is the version of the change feed continuation format:
// a version byte, the container's id (a uvarint length, then its bytes),
// its creation's write sequence number (a uvarint: a container deleted and
// made again has another), the mode (a byte), the partition key (a uvarint
// length, then its encoding) and the lsn (a uvarint), in unpadded
// base64url.
const feedTokenVersion = 1

func (c *Container) feedToken(mode ChangeFeedMode, pk string, lsn uint64) string {
	b := make([]byte, 0, 32+len(c.id)+len(pk))
	b = append(b, feedTokenVersion)
	b = binary.AppendUvarint(b, uint64(len(c.id)))
	b = append(b, c.id...)
	b = binary.AppendUvarint(b, c.created)
	b = append(b, byte(mode))
	b = binary.AppendUvarint(b, uint64(len(pk)))
	b = append(b, pk...)
	b = binary.AppendUvarint(b, lsn)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeFeedToken reads a continuation feedToken wrote for this container,
// mode and partition key, and returns its lsn.
func (c *Container) decodeFeedToken(tok string, mode ChangeFeedMode, pk string) (uint64, *Error) {
	malformed := badRequest("the change feed continuation is malformed")
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) == 0 {
		return 0, malformed
	}
	if b[0] != feedTokenVersion {
		return 0, badRequest("the change feed continuation has version %d; this version of lethe reads version %d", b[0], feedTokenVersion)
	}
	d := decoder{b: b[1:]}
	id := d.str()
	created := d.uvarint()
	m := d.byte()
	key := d.str()
	lsn := d.uvarint()
	if d.bad || len(d.b) != 0 {
		return 0, malformed
	}
	if string(id) != c.id || created != c.created {
		return 0, badRequest("the change feed continuation belongs to another container")
	}
	if ChangeFeedMode(m) != mode || string(key) != pk {
		return 0, badRequest("the change feed continuation belongs to a feed of another mode or partition key")
	}
	return lsn, nil
}
