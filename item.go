package lethe

import (
	"context"
	"encoding/binary"
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

// record is one stored version of an item, packed into a single immutable
// string so that a read touches one allocation: the map's key (the id) and
// the document sit side by side, after a fixed header.
//
//	offset  size  field
//	0       8     written: the last write, Unix ns at full clock precision
//	8       8     seq: the store-wide write sequence (unique; the ETag is its hex)
//	16      4     ttl: the item's own ttl; TTLOff when absent or null (inherit)
//	20      4     chargeSize: the size request charges use (the client's members without the ttl)
//	24      2     idLen: the length of the id
//	26            the id, then the document, which ends with "_ts":…,"_etag":"<ETag>"}
//
// The empty record means "no item". A write replaces the record; nothing
// ever changes one, so readers may use a record after letting go of locks.
type record string

const (
	recordHeader = 26
	etagLen      = 16
)

func (r record) written() int64  { return int64(le64(string(r), 0)) }
func (r record) seq() uint64     { return le64(string(r), 8) }
func (r record) ttl() TTL        { return TTL(int32(le32(string(r), 16))) }
func (r record) chargeSize() int { return int(le32(string(r), 20)) }
func (r record) idLen() int      { return int(r[24]) | int(r[25])<<8 }
func (r record) id() string      { return string(r[recordHeader : recordHeader+r.idLen()]) }
func (r record) json() string    { return string(r[recordHeader+r.idLen():]) }
func (r record) jsonLen() int    { return len(r) - recordHeader - r.idLen() }

// etag returns the item's ETag: the value of "_etag", inside the document.
func (r record) etag() string { return string(r[len(r)-etagLen-2 : len(r)-2]) }

func (r record) expiresAt(rule expiryRule) int64 { return rule.expiresAt(r.ttl(), r.written()) }

func le64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

func le32(s string, i int) uint32 {
	_ = s[i+3]
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

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

// buildRecord assembles the stored form of a parsed document: the header,
// the id, then the document's kept members followed by "_ts" and "_etag",
// in one allocation.
func buildRecord(doc []byte, p *parsedItem, written int64, seq uint64) record {
	const digits = "0123456789abcdef"
	var etag [etagLen]byte
	for i := range etag {
		etag[len(etag)-1-i] = digits[(seq>>(4*i))&0xf]
	}
	ts := written / 1e9
	if written < 0 && written%1e9 != 0 {
		ts-- // floor, for clocks before 1970
	}
	var tsBuf [20]byte
	tsText := strconv.AppendInt(tsBuf[:0], ts, 10)

	var h [recordHeader]byte
	binary.LittleEndian.PutUint64(h[0:], uint64(written))
	binary.LittleEndian.PutUint64(h[8:], seq)
	binary.LittleEndian.PutUint32(h[16:], uint32(p.ttl))
	binary.LittleEndian.PutUint32(h[20:], uint32(p.size-p.ttlSize))
	binary.LittleEndian.PutUint16(h[24:], uint16(len(p.id)))

	var b strings.Builder
	b.Grow(recordHeader + len(p.id) + 1 + p.size + len(`"_ts":,"_etag":""}`) + len(tsText) + etagLen)
	b.Write(h[:])
	b.WriteString(p.id)
	b.WriteByte('{')
	for _, m := range p.first[:p.nFirst] {
		b.Write(doc[m.start:m.end])
		b.WriteByte(',')
	}
	for _, m := range p.more {
		b.Write(doc[m.start:m.end])
		b.WriteByte(',')
	}
	b.WriteString(`"_ts":`)
	b.Write(tsText)
	b.WriteString(`,"_etag":"`)
	b.Write(etag[:])
	b.WriteString(`"}`)
	return record(b.String())
}

// ItemOptions are the options of one item operation. A nil *ItemOptions
// means none.
type ItemOptions struct {
	// IfMatchEtag, when set, makes a replace, delete, or an upsert that
	// replaces fail with ErrPreconditionFailed unless the item's _etag is
	// this. It is ignored by reads and by creates (including an upsert that
	// creates).
	IfMatchEtag string
	// NoContentResponseOnWrite leaves the item out of the response of a
	// create, replace or upsert (Value is nil; ETag is set), saving the copy:
	// for bulk loads. It is azcosmos's EnableContentResponseOnWrite = false.
	NoContentResponseOnWrite bool
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
	return c.read(ctx, "ReadItem", nil, id)
}

// ReadItemAppend is ReadItem that appends the item to dst and returns the
// extended slice as the response's Value. A caller that reuses its buffer
// (dst[:0]) reads without allocating, and the copy lands in memory the CPU
// has in cache rather than in a fresh allocation: see BenchmarkReadItem.
func (c *Container) ReadItemAppend(ctx context.Context, dst []byte, id string, o *ItemOptions) (ItemResponse, error) {
	return c.read(ctx, "ReadItemAppend", dst, id)
}

// read is the single read path: a live item's JSON is appended to dst.
func (c *Container) read(ctx context.Context, op string, dst []byte, id string) (ItemResponse, error) {
	if err := c.check(ctx, op, id); err != nil {
		return ItemResponse{}, err
	}
	sh, h := c.shardFor(id)
	sh.mu.RLock()
	rec := sh.items.get(id, h)
	if rec != "" {
		// Only an item that can expire costs a clock reading.
		if exp := rec.expiresAt(c.rule); exp != never && c.store.clock.now() >= exp {
			rec = ""
		}
	}
	sh.mu.RUnlock()
	if rec == "" {
		// Only a miss needs the id checked: every stored id is valid.
		if err := validateItemID(id); err != nil {
			return c.fail(op, id, err)
		}
		return c.fail(op, id, &Error{StatusCode: statusNotFound, Message: msgNotFound})
	}
	cost := charge(opRead, rec.chargeSize())
	if err := c.draw(op, id, cost); err != nil {
		return ItemResponse{StatusCode: statusTooManyRequests}, err
	}
	return ItemResponse{
		Value:         append(dst, rec.json()...),
		ETag:          rec.etag(),
		RequestCharge: ru(cost),
		StatusCode:    statusOK,
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

	sh, h := c.shardFor(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := c.store.clock.now()
	old := sh.items.get(id, h)
	live := old != "" && now < old.expiresAt(c.rule)

	var (
		status int
		cost   int64
	)
	switch {
	case kind == writeCreate && live:
		return c.fail(op, id, &Error{StatusCode: statusConflict, Message: msgConflict})
	case (kind == writeReplace || kind == writeDelete) && !live:
		return c.fail(op, id, &Error{StatusCode: statusNotFound, Message: msgNotFound})
	case live && kind != writeCreate && ifMatch != "" && ifMatch != old.etag():
		return c.fail(op, id, &Error{StatusCode: statusPreconditionFailed, Message: msgPrecondition})
	case kind == writeDelete:
		status, cost = statusNoContent, charge(opDelete, old.chargeSize())
	case live: // replace, or upsert of a live item
		status, cost = statusOK, charge(opReplace, p.size-p.ttlSize)
	default: // create, or upsert of a missing or expired item
		status, cost = statusCreated, charge(opCreate, p.size-p.ttlSize)
	}
	if err := c.drawAt(op, id, cost, now); err != nil {
		return ItemResponse{StatusCode: statusTooManyRequests}, err
	}

	var rec record
	if kind == writeDelete {
		sh.items.remove(id, h)
	} else {
		rec = buildRecord(doc, &p, now, c.store.seq.Add(1))
		sh.items.put(id, h, rec)
	}
	c.index.mu.Lock()
	if old != "" {
		c.index.remove(old)
	}
	if rec != "" {
		c.index.add(rec)
	}
	c.index.mu.Unlock()

	resp := ItemResponse{RequestCharge: ru(cost), StatusCode: status}
	if rec != "" {
		c.store.reaper.notify(rec.expiresAt(c.rule))
		resp.ETag = rec.etag()
		if o == nil || !o.NoContentResponseOnWrite {
			resp.Value = []byte(rec.json())
		}
	}
	return resp, nil
}

// fail returns a failed operation's response and error, charging the fixed
// failure charge.
func (c *Container) fail(op, id string, e *Error) (ItemResponse, error) {
	if err := c.draw(op, id, chargeFailure); err != nil {
		return ItemResponse{StatusCode: statusTooManyRequests}, err
	}
	return ItemResponse{RequestCharge: ru(chargeFailure), StatusCode: e.StatusCode}, withContext(e, op, c.id, id)
}

// draw takes cost milli-RU from the container's throughput, or returns the
// 429 that refuses the operation.
func (c *Container) draw(op, id string, cost int64) error {
	if c.throughput.Load() == 0 {
		return nil
	}
	return c.drawAt(op, id, cost, c.store.clock.now())
}

// drawAt is draw for a caller that has read the clock already.
func (c *Container) drawAt(op, id string, cost, now int64) error {
	if c.throughput.Load() == 0 {
		return nil
	}
	ok, wait := c.budget.take(cost, now)
	if ok {
		return nil
	}
	c.throttled.Add(1)
	return withContext(&Error{
		StatusCode: statusTooManyRequests,
		Message:    "Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later.",
		RetryAfter: wait,
	}, op, c.id, id)
}
