package lethe

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on items (SPEC §7).
const (
	// MaxItemSize is the largest item accepted, in bytes of JSON (2 MB, as Cosmos DB).
	MaxItemSize = 2 << 20
	// MaxDepth is the deepest nesting of objects and arrays an item may have.
	MaxDepth = 128
	// MaxIDLength is the longest item id, in bytes of UTF-8.
	MaxIDLength = 1023
	// MaxContainerIDLength is the longest container id, in characters.
	MaxContainerIDLength = 255
)

// record is one stored version of an item. It is immutable once stored: a
// write replaces the record, so readers may use one without a lock after
// finding it.
type record struct {
	id string
	// body is the JSON the store returns (with _ts and _etag) followed by the
	// item's ETag: body[:jsonLen] is the document, body[jsonLen:] the ETag.
	// One allocation holds both, and neither needs work on a read.
	body       string
	jsonLen    uint32
	chargeSize uint32 // the size that request charges use: the client's members without the ttl property
	ttl        TTL    // the item's own ttl; TTLOff when absent or null (inherit)
	written    int64  // last write, Unix nanoseconds at full clock precision
	seq        uint64 // store-wide write sequence: orders the expiry index and makes the ETag
}

func (r *record) json() string { return r.body[:r.jsonLen] }
func (r *record) etag() string { return r.body[r.jsonLen:] }

// validateItemID checks an item id against SPEC §7.
func validateItemID(id string) *Error {
	switch {
	case id == "":
		return badRequest("the item id is empty")
	case len(id) > MaxIDLength:
		return badRequest("the item id is %d bytes, over the limit of %d", len(id), MaxIDLength)
	case !utf8.ValidString(id):
		return badRequest("the item id is not valid UTF-8")
	}
	if i := strings.IndexAny(id, `/\?#`); i >= 0 {
		return badRequest("the item id %q contains the character %q, which ids may not contain", id, id[i])
	}
	return nil
}

// validateContainerID checks a container id against SPEC §7.
func validateContainerID(id string) *Error {
	switch n := utf8.RuneCountInString(id); {
	case id == "":
		return badRequest("the container id is empty")
	case n > MaxContainerIDLength:
		return badRequest("the container id is %d characters, over the limit of %d", n, MaxContainerIDLength)
	case !utf8.ValidString(id):
		return badRequest("the container id is not valid UTF-8")
	}
	if i := strings.IndexAny(id, `/\?#`); i >= 0 {
		return badRequest("the container id %q contains the character %q, which ids may not contain", id, id[i])
	}
	return nil
}

// buildRecord assembles the stored form of a parsed document: its kept
// members, then "_ts" and "_etag", then the ETag, in one allocation.
func buildRecord(doc []byte, p *parsedItem, written int64, seq uint64) *record {
	const digits = "0123456789abcdef"
	var hex [16]byte
	for i := range hex {
		hex[len(hex)-1-i] = digits[(seq>>(4*i))&0xf]
	}
	h := hex[:]
	ts := written / 1e9
	if written < 0 && written%1e9 != 0 {
		ts-- // floor, for clocks before 1970
	}
	var tsBuf [20]byte
	tsText := strconv.AppendInt(tsBuf[:0], ts, 10)

	var b strings.Builder
	b.Grow(1 + p.size + len(`"_ts":,"_etag":"\"\""}`) + len(tsText) + 2*len(h) + 2)
	b.WriteByte('{')
	for _, m := range p.members {
		b.Write(doc[m.start:m.end])
		b.WriteByte(',')
	}
	b.WriteString(`"_ts":`)
	b.Write(tsText)
	b.WriteString(`,"_etag":"\"`)
	b.Write(h)
	b.WriteString(`\""}`)
	jsonLen := b.Len()
	b.WriteByte('"')
	b.Write(h)
	b.WriteByte('"')
	return &record{
		id:         p.id,
		body:       b.String(),
		jsonLen:    uint32(jsonLen),
		chargeSize: uint32(p.size - p.ttlSize),
		ttl:        p.ttl,
		written:    written,
		seq:        seq,
	}
}

// ItemOptions are the options of one item operation. A nil *ItemOptions
// means none.
type ItemOptions struct {
	// IfMatchEtag, when set, makes a replace, delete, or an upsert that
	// replaces fail with ErrPreconditionFailed unless the item's _etag is
	// this. It is ignored by reads and by creates (including an upsert that
	// creates).
	IfMatchEtag string
}

// ItemResponse is the result of an item operation. On failure the request
// charge and status code are set as well.
type ItemResponse struct {
	Value         []byte  // the item as stored, with _ts and _etag (nil for a delete); the caller's own copy
	ETag          string  // the item's _etag
	RequestCharge float64 // request units this operation cost
	StatusCode    int     // 200 read/replace/upsert-replaced, 201 create/upsert-created, 204 delete
}

// writeKind is what a write does when the item exists, or not.
type writeKind uint8

const (
	writeCreate writeKind = iota
	writeReplace
	writeUpsert
	writeDelete
)

var writeOps = [...]string{"CreateItem", "ReplaceItem", "UpsertItem", "DeleteItem"}

// CreateItem stores a new item: a JSON object with a string "id". It fails
// with ErrConflict if a live item has that id; an expired one is replaced.
func (c *Container) CreateItem(ctx context.Context, item []byte, o *ItemOptions) (ItemResponse, error) {
	return c.write(ctx, writeCreate, "", item, o)
}

// ReplaceItem replaces the live item id with item, whose "id" must be id. It
// fails with ErrNotFound if there is no live item id.
func (c *Container) ReplaceItem(ctx context.Context, id string, item []byte, o *ItemOptions) (ItemResponse, error) {
	return c.write(ctx, writeReplace, id, item, o)
}

// UpsertItem replaces the live item with item's id (status 200), or creates
// it (status 201) when there is none or it has expired.
func (c *Container) UpsertItem(ctx context.Context, item []byte, o *ItemOptions) (ItemResponse, error) {
	return c.write(ctx, writeUpsert, "", item, o)
}

// DeleteItem deletes the live item id (status 204). It fails with
// ErrNotFound if there is none.
func (c *Container) DeleteItem(ctx context.Context, id string, o *ItemOptions) (ItemResponse, error) {
	return c.write(ctx, writeDelete, id, nil, o)
}

// ReadItem returns the live item id. It fails with ErrNotFound if the item
// does not exist or has expired. A read does no JSON work, and reads the clock
// only if the item can expire.
func (c *Container) ReadItem(ctx context.Context, id string, o *ItemOptions) (ItemResponse, error) {
	const op = "ReadItem"
	if err := c.check(ctx, op, id); err != nil {
		return ItemResponse{}, err
	}
	if err := validateItemID(id); err != nil {
		return c.fail(op, id, err)
	}
	sh := c.shardFor(id)
	sh.mu.RLock()
	rec := sh.items[id]
	if rec != nil && canExpire(c.props.DefaultTimeToLive, rec.ttl) &&
		c.store.clock.now() >= expiresAt(c.props.DefaultTimeToLive, rec.ttl, rec.written) {
		rec = nil
	}
	sh.mu.RUnlock()
	if rec == nil {
		return c.fail(op, id, &Error{StatusCode: http.StatusNotFound, Message: msgNotFound})
	}
	cost := charge(opRead, int(rec.chargeSize))
	if err := c.draw(op, id, cost); err != nil {
		return ItemResponse{StatusCode: http.StatusTooManyRequests}, err
	}
	return ItemResponse{
		Value:         []byte(rec.json()),
		ETag:          rec.etag(),
		RequestCharge: ru(cost),
		StatusCode:    http.StatusOK,
	}, nil
}

// write is the single write path: every change to an item goes through it.
// It parses the document outside any lock, then, under the item's shard
// lock, decides the outcome from the live state, draws the charge, builds the
// new record and updates the shard and the expiry index together.
func (c *Container) write(ctx context.Context, kind writeKind, id string, doc []byte, o *ItemOptions) (ItemResponse, error) {
	op := writeOps[kind]
	if err := c.check(ctx, op, id); err != nil {
		return ItemResponse{}, err
	}
	var p parsedItem
	if kind == writeDelete {
		if err := validateItemID(id); err != nil {
			return c.fail(op, id, err)
		}
	} else {
		var err *Error
		if p, err = parseItem(doc); err != nil {
			return c.fail(op, id, err)
		}
		if kind == writeReplace && p.id != id {
			return c.fail(op, id, badRequest("the item's id %q is not the id %q being replaced", p.id, id))
		}
		id = p.id
	}
	ifMatch := ""
	if o != nil {
		ifMatch = o.IfMatchEtag
	}

	sh := c.shardFor(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := c.store.clock.now()
	def := c.props.DefaultTimeToLive
	old := sh.items[id]
	live := old != nil && now < expiresAt(def, old.ttl, old.written)

	var (
		status int
		cost   int64
	)
	switch {
	case kind == writeCreate && live:
		return c.fail(op, id, &Error{StatusCode: http.StatusConflict, Message: msgConflict})
	case (kind == writeReplace || kind == writeDelete) && !live:
		return c.fail(op, id, &Error{StatusCode: http.StatusNotFound, Message: msgNotFound})
	case live && kind != writeCreate && ifMatch != "" && ifMatch != old.etag():
		return c.fail(op, id, &Error{StatusCode: http.StatusPreconditionFailed, Message: msgPrecondition})
	case kind == writeDelete:
		status, cost = http.StatusNoContent, charge(opDelete, int(old.chargeSize))
	case live: // replace, or upsert of a live item
		status, cost = http.StatusOK, charge(opReplace, p.size-p.ttlSize)
	default: // create, or upsert of a missing or expired item
		status, cost = http.StatusCreated, charge(opCreate, p.size-p.ttlSize)
	}
	if err := c.draw(op, id, cost); err != nil {
		return ItemResponse{StatusCode: http.StatusTooManyRequests}, err
	}

	var rec *record
	if kind == writeDelete {
		delete(sh.items, id)
	} else {
		rec = buildRecord(doc, &p, now, c.store.seq.Add(1))
		if old != nil {
			rec.id = old.id // the map keeps its key: share it
		}
		sh.items[rec.id] = rec
	}
	c.index.mu.Lock()
	if old != nil {
		c.index.remove(old)
	}
	if rec != nil {
		c.index.add(rec)
	}
	c.index.mu.Unlock()

	resp := ItemResponse{RequestCharge: ru(cost), StatusCode: status}
	if rec != nil {
		c.store.reaper.notify(expiresAt(def, rec.ttl, rec.written))
		resp.Value, resp.ETag = []byte(rec.json()), rec.etag()
	}
	return resp, nil
}

// fail returns a failed operation's response and error, charging the fixed
// failure charge.
func (c *Container) fail(op, id string, e *Error) (ItemResponse, error) {
	if err := c.draw(op, id, chargeFailure); err != nil {
		return ItemResponse{StatusCode: http.StatusTooManyRequests}, err
	}
	return ItemResponse{RequestCharge: ru(chargeFailure), StatusCode: e.StatusCode}, withContext(e, op, c.id, id)
}

// draw takes cost milli-RU from the container's throughput, or returns the
// 429 that refuses the operation.
func (c *Container) draw(op, id string, cost int64) error {
	if c.throughput.Load() == 0 {
		return nil
	}
	ok, wait := c.budget.take(cost, c.store.clock.now())
	if ok {
		return nil
	}
	c.throttled.Add(1)
	return withContext(&Error{
		StatusCode: http.StatusTooManyRequests,
		Message:    "Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later.",
		RetryAfter: wait,
	}, op, c.id, id)
}
