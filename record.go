package lethe

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// record is one stored version of an item, packed into a single immutable
// string so that a read touches one allocation: the item's identity (its
// partition key value, encoded as PartitionKey does, and its id) and the
// document sit side by side, after a fixed header.
//
//	offset  size  field
//	0       8     written: the last write, Unix ns at full clock precision
//	8       8     seq: the store-wide write sequence (unique; the ETag is its hex)
//	16      4     ttl: the item's own ttl; TTLOff when absent or null (inherit)
//	20      4     chargeSize: the size request charges use (the client's members without the ttl)
//	24      2     pkLen: the length of the encoded partition key value (0: not partitioned)
//	26      2     idLen: the length of the id
//	28            the partition key value, the id, then the document, which
//	              ends with "_ts":…,"_etag":"<ETag>"}
//
// The empty record means "no item". A write replaces the record; nothing
// ever changes one, so readers may use a record after letting go of locks.
type record string

const (
	recordHeader = 28
	etagLen      = 16
)

func (r record) written() int64  { return int64(le64(string(r), 0)) }
func (r record) seq() uint64     { return le64(string(r), 8) }
func (r record) ttl() TTL        { return TTL(int32(le32(string(r), 16))) }
func (r record) chargeSize() int { return int(le32(string(r), 20)) }
func (r record) pkLen() int      { return int(r[24]) | int(r[25])<<8 }
func (r record) idLen() int      { return int(r[26]) | int(r[27])<<8 }
func (r record) pk() string      { return string(r[recordHeader : recordHeader+r.pkLen()]) }
func (r record) id() string {
	return string(r[recordHeader+r.pkLen() : recordHeader+r.pkLen()+r.idLen()])
}
func (r record) json() string { return string(r[recordHeader+r.pkLen()+r.idLen():]) }
func (r record) jsonLen() int { return len(r) - recordHeader - r.pkLen() - r.idLen() }

// key returns the item's identity, its partition key value and id, as one
// string: unique in its container, since the value's encoding delimits
// itself.
func (r record) key() string { return string(r[recordHeader : recordHeader+r.pkLen()+r.idLen()]) }

// etagMatches reports whether an If-Match value names etag: the same text,
// or the same text in double quotes.
func etagMatches(ifMatch, etag string) bool {
	if len(ifMatch) == len(etag)+2 && ifMatch[0] == '"' && ifMatch[len(ifMatch)-1] == '"' {
		ifMatch = ifMatch[1 : len(ifMatch)-1]
	}
	return ifMatch == etag
}

// etag returns the item's ETag: the value of "_etag", inside the document.
func (r record) etag() string { return string(r[len(r)-etagLen-2 : len(r)-2]) }

func le64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

func le32(s string, i int) uint32 {
	_ = s[i+3]
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

// buildRecord assembles the stored form of a parsed document: the header,
// the partition key value pk (encoded), the id, then the document's kept
// members followed by "_ts" and "_etag", in one allocation.
func buildRecord(doc []byte, p *parsedItem, pk string, written int64, seq uint64) record {
	var rb recordBuilder
	rb.begin(pk, p.id, p.ttl, p.size-p.ttlSize, p.size, written, seq)
	for _, m := range p.first[:p.nFirst] {
		rb.b.Write(doc[m.start:m.end])
		rb.b.WriteByte(',')
	}
	for _, m := range p.more {
		rb.b.Write(doc[m.start:m.end])
		rb.b.WriteByte(',')
	}
	return rb.end()
}

// buildRecordFrom is buildRecord for a document already in stored form
// without _ts and _etag ('{', its members separated by ',', '}'), as a
// patch leaves it; id, ttl and chargeSize are what parseItem would find.
func buildRecordFrom(doc []byte, id string, ttl TTL, chargeSize int, pk string, written int64, seq uint64) record {
	var rb recordBuilder
	members := doc[1 : len(doc)-1]
	rb.begin(pk, id, ttl, chargeSize, len(members)+1, written, seq)
	rb.b.Write(members)
	rb.b.WriteByte(',')
	return rb.end()
}

// recordBuilder writes a record in one allocation: begin writes the header,
// the partition key value and the id and opens the document; the caller
// writes the document's members, each followed by ','; end appends "_ts"
// and "_etag" and closes the document.
type recordBuilder struct {
	b     strings.Builder
	tsLen int // of the text of _ts in tsBuf (a slice of it would make the builder escape)
	tsBuf [20]byte
	etag  [etagLen]byte
}

// begin starts a record of an item written at written with the sequence
// number seq, whose members take size bytes with their separators.
func (rb *recordBuilder) begin(pk, id string, ttl TTL, chargeSize, size int, written int64, seq uint64) {
	const digits = "0123456789abcdef"
	for i := range rb.etag {
		rb.etag[len(rb.etag)-1-i] = digits[(seq>>(4*i))&0xf]
	}
	ts := written / 1e9
	if written < 0 && written%1e9 != 0 {
		ts-- // floor, for clocks before 1970
	}
	rb.tsLen = len(strconv.AppendInt(rb.tsBuf[:0], ts, 10))

	var h [recordHeader]byte
	binary.LittleEndian.PutUint64(h[0:], uint64(written))
	binary.LittleEndian.PutUint64(h[8:], seq)
	binary.LittleEndian.PutUint32(h[16:], uint32(ttl))
	binary.LittleEndian.PutUint32(h[20:], uint32(chargeSize))
	binary.LittleEndian.PutUint16(h[24:], uint16(len(pk)))
	binary.LittleEndian.PutUint16(h[26:], uint16(len(id)))

	rb.b.Grow(recordHeader + len(pk) + len(id) + 1 + size + len(`"_ts":,"_etag":""}`) + rb.tsLen + etagLen)
	rb.b.Write(h[:])
	rb.b.WriteString(pk)
	rb.b.WriteString(id)
	rb.b.WriteByte('{')
}

// end finishes the record.
func (rb *recordBuilder) end() record {
	rb.b.WriteString(`"_ts":`)
	rb.b.Write(rb.tsBuf[:rb.tsLen])
	rb.b.WriteString(`,"_etag":"`)
	rb.b.Write(rb.etag[:])
	rb.b.WriteString(`"}`)
	return record(rb.b.String())
}
