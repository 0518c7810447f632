package lethe

import (
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"slices"
	"unsafe"
)

// record is one stored version of an item, packed into a single immutable
// string so that a read touches one allocation: the item's identity (its
// partition key value, encoded as PartitionKey does, and its id), its ETag
// and the document sit side by side, after a fixed header.
//
//	offset  size  field
//	0       8     written: the last write, Unix ns at full clock precision
//	8       4     ttl: the item's own ttl; TTLOff when absent or null (inherit)
//	12      4     chargeSize: the size request charges use (the client's members without the ttl)
//	16      2     pkLen: the length of the encoded partition key value (0: not partitioned)
//	18      2     idLen: the length of the id
//	20      8     position: the item's creation position in its container, big endian
//	28            the partition key value, the id, the ETag (16 hex digits of
//	              the store-wide write sequence number, which is unique), then
//	              the document without its system properties: a JSON object
//
// The position plays the part of Cosmos DB's "_rid": the container hands
// out the next one when an item is created (a create, or an upsert of a
// missing or expired item), and every later version of the item keeps it,
// so results without ORDER BY come in creation order. A deleted or expired
// item created again is a new item, with a new position. Positions start at
// 1 and are unique in their container; 0 is "not yet given" (records read
// from files of an older format, until recovery gives them theirs). Big
// endian, the position's bytes sort as it does.
//
// "_ts" and "_etag" are not stored in the document: they follow from the
// header and the ETag, and are written out (as its last members) whenever
// the document is (appendJSON), which saves some 40 bytes an item.
//
// The empty record means "no item". A write replaces the record; nothing
// ever changes one, so readers may use a record after letting go of locks.
type record string

const (
	recordHeader = 28
	etagLen      = 16
)

func (r record) written() int64  { return int64(le64(string(r), 0)) }
func (r record) ttl() TTL        { return TTL(int32(le32(string(r), 8))) }
func (r record) chargeSize() int { return int(le32(string(r), 12)) }
func (r record) pkLen() int      { return int(r[16]) | int(r[17])<<8 }
func (r record) idLen() int      { return int(r[18]) | int(r[19])<<8 }
func (r record) pos() uint64     { return be64(string(r), 20) }
func (r record) pk() string      { return string(r[recordHeader : recordHeader+r.pkLen()]) }
func (r record) id() string {
	return string(r[recordHeader+r.pkLen() : recordHeader+r.pkLen()+r.idLen()])
}

// is reports whether r is the record of the item (pk, id). It compares
// lengths first, and the partition key value's bytes only if it has any.
func (r record) is(pk, id string) bool {
	at := recordHeader + len(pk)
	return r.pkLen() == len(pk) && r.idLen() == len(id) &&
		string(r[at:at+len(id)]) == id && (pk == "" || string(r[recordHeader:at]) == pk)
}

// posKey returns the item's position as the 8 bytes that sort as it does:
// the identity the query engine orders results without ORDER BY by.
func (r record) posKey() string { return string(r[20:28]) }

// etag returns the item's ETag, the value of its "_etag".
func (r record) etag() string {
	at := recordHeader + r.pkLen() + r.idLen()
	return string(r[at : at+etagLen])
}

// seq returns the store-wide write sequence number of the version: its
// ETag, read as hexadecimal.
func (r record) seq() uint64 {
	at := recordHeader + r.pkLen() + r.idLen()
	var n uint64
	for i := at; i < at+etagLen; i++ {
		c := r[i]
		if c >= 'a' {
			c -= 'a' - 10
		} else {
			c -= '0'
		}
		n = n<<4 | uint64(c)
	}
	return n
}

// seqBefore reports whether r's write sequence number is below s's,
// without decoding either: an ETag is its number in 16 lowercase
// hexadecimal digits, whose bytes sort as the digits do, so two ETags read
// as big-endian words compare as their numbers. An index compares two
// versions of the same instant this way, which its every lookup of an
// entry does (the entry ties with itself).
func (r record) seqBefore(s record) bool {
	a, b := r.etag(), s.etag()
	if x, y := be64(a, 0), be64(b, 0); x != y {
		return x < y
	}
	return be64(a, 8) < be64(b, 8)
}

// body returns the stored document: a JSON object without "_ts" and
// "_etag".
func (r record) body() string { return string(r[recordHeader+r.pkLen()+r.idLen()+etagLen:]) }

// ts returns the item's "_ts": its last write in Unix seconds.
func (r record) ts() int64 { return floorSeconds(r.written()) }

// appendJSON appends the document as reads return it: the stored body with
// "_ts" and "_etag" as its last members. It grows dst once and writes the
// members it adds in place, each of fixed size but the digits of "_ts".
func (r record) appendJSON(dst []byte) []byte {
	const tsName, etagName = `"_ts":`, `,"_etag":"`
	at := recordHeader + r.pkLen() + r.idLen()
	open := r[at+etagLen : len(r)-1] // the body without its closing brace
	ts := r.ts()
	digits := decimalLen(ts)
	comma := 1
	if len(open) == 1 {
		comma = 0 // no comma before "_ts" in an empty object
	}
	n := len(dst)
	size := len(open) + comma + len(tsName) + digits + len(etagName) + etagLen + 2
	dst = slices.Grow(dst, size)[:n+size]
	b := dst[n:]
	k := copy(b, open)
	b[k] = ','
	t := b[k+comma:] // the tail, exactly as long as what follows
	copy(t[:len(tsName)], tsName)
	putDecimal(t[len(tsName):len(tsName)+digits], ts)
	e := (*[len(etagName) + etagLen + 2]byte)(t[len(tsName)+digits:])
	copy(e[:len(etagName)], etagName)
	copy(e[len(etagName):], r[at:at+etagLen])
	e[len(e)-2], e[len(e)-1] = '"', '}'
	return dst
}

// jsonLen returns the length of the document appendJSON writes.
func (r record) jsonLen() int {
	body := r.bodyLen()
	n := body + len(`"_ts":,"_etag":""`) + etagLen + decimalLen(r.ts())
	if body > 2 {
		n++ // the comma before "_ts"
	}
	return n
}

// jsonBytes returns the document as reads return it, in a new slice.
func (r record) jsonBytes() []byte { return r.appendJSON(make([]byte, 0, r.jsonLen())) }

func (r record) bodyLen() int { return len(r) - recordHeader - r.pkLen() - r.idLen() - etagLen }

// decimalLen returns the length of n in decimal, as strconv writes it.
func decimalLen(n int64) int {
	if n < 0 {
		return 1 + uintLen(-uint64(n))
	}
	return uintLen(uint64(n))
}

// uintLen returns the number of decimal digits of u.
func uintLen(u uint64) int {
	// log10(2) ≈ 1233/4096: t is the digits of 2^bits.Len64(u) less one,
	// which is u's count of digits or that less one (0 has one digit, as 1).
	u |= 1
	t := bits.Len64(u) * 1233 >> 12
	if u < pow10[t] {
		return t
	}
	return t + 1
}

// pow10[i] is 10^i.
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// putDecimal writes n in decimal, as strconv.AppendInt does, filling b,
// which is exactly decimalLen(n) long: in place, where AppendInt formats
// into a scratch array and copies, on every read's "_ts". Eight digits at a
// time where it can: a "_ts" of today is a pair and eight.
func putDecimal(b []byte, n int64) {
	u := uint64(n)
	if n < 0 {
		b[0] = '-'
		u = -u
	}
	i := len(b)
	if i == 10 && n > 0 { // every "_ts" from 2001 to 2286
		hi := u / 1e8
		b[0], b[1] = digitPairs[hi*2], digitPairs[hi*2+1]
		binary.LittleEndian.PutUint64(b[2:], eightDigits(uint32(u-hi*1e8)))
		return
	}
	for u >= 1e8 {
		q := u / 1e8
		i -= 8
		binary.LittleEndian.PutUint64(b[i:], eightDigits(uint32(u-q*1e8)))
		u = q
	}
	for u >= 100 {
		q := u / 100
		d := (u - q*100) * 2
		i -= 2
		b[i], b[i+1] = digitPairs[d], digitPairs[d+1]
		u = q
	}
	if u >= 10 {
		b[i-2], b[i-1] = digitPairs[u*2], digitPairs[u*2+1]
	} else {
		b[i-1] = byte('0' + u)
	}
}

// eightDigits returns x, less than 1e8, as eight decimal digits with
// leading zeros, the first in the lowest byte. It splits x into lanes of the
// word, then every lane in two, three times (four digits and four, two and
// two, one and one), with a multiplication and a shift in place of each
// division: x*5243>>19 is x/100 for x < 10000, x*103>>10 is x/10 for x < 100.
func eightDigits(x uint32) uint64 {
	hi := x / 10000
	v := uint64(hi) | uint64(x-hi*10000)<<32
	q := v * 5243 >> 19 & 0x0000007f_0000007f
	v = q | (v-q*100)<<16
	q = v * 103 >> 10 & 0x000f000f_000f000f
	v = q | (v-q*10)<<8
	return v + 0x30303030_30303030
}

const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

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

func le64(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func be64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i+7]) | uint64(s[i+6])<<8 | uint64(s[i+5])<<16 | uint64(s[i+4])<<24 |
		uint64(s[i+3])<<32 | uint64(s[i+2])<<40 | uint64(s[i+1])<<48 | uint64(s[i])<<56
}

// withPos returns a copy of r at position pos: recovery gives records of
// older formats their positions with it.
func (r record) withPos(pos uint64) record {
	b := []byte(r)
	binary.BigEndian.PutUint64(b[20:], pos)
	return record(b)
}

func le32(s string, i int) uint32 {
	_ = s[i+3]
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

// buildRecord assembles the stored form of a parsed document: the header
// (pos is the item's position), the partition key value pk (encoded), the
// id, the ETag, then the document's kept members (its runs of them), in
// one allocation.
func buildRecord(doc []byte, p *parsedItem, pk string, written int64, seq, pos uint64) record {
	var rb recordBuilder
	rb.begin(pk, p.id, p.ttl, p.size-p.ttlSize, p.size, written, seq, pos)
	for _, r := range p.first[:p.nFirst] {
		rb.member(doc[r.start:r.end])
	}
	for _, r := range p.more {
		rb.member(doc[r.start:r.end])
	}
	return rb.end()
}

// buildRecordFrom is buildRecord for a document already in stored form (a
// JSON object without _ts and _etag), as a patch leaves it; id, ttl and
// chargeSize are what parseItem would find.
func buildRecordFrom(doc []byte, id string, ttl TTL, chargeSize int, pk string, written int64, seq, pos uint64) record {
	var rb recordBuilder
	rb.begin(pk, id, ttl, chargeSize, len(doc), written, seq, pos)
	rb.b = append(rb.b, doc[1:len(doc)-1]...)
	return rb.end()
}

// recordBuilder writes a record in one allocation: begin writes the header,
// the partition key value, the id and the ETag and opens the document; the
// caller writes the document's members; end closes it. (A byte slice made
// to size, not a strings.Builder, whose every write checks that it was not
// copied: an insert writes seven times.)
type recordBuilder struct {
	b       []byte
	members int
}

// begin starts a record of an item at position pos written at written with
// the sequence number seq, whose members take about size bytes with their
// separators.
func (rb *recordBuilder) begin(pk, id string, ttl TTL, chargeSize, size int, written int64, seq, pos uint64) {
	b := make([]byte, recordHeader, recordHeader+len(pk)+len(id)+etagLen+size+2)
	binary.LittleEndian.PutUint64(b[0:], uint64(written))
	binary.LittleEndian.PutUint32(b[8:], uint32(ttl))
	binary.LittleEndian.PutUint32(b[12:], uint32(chargeSize))
	binary.LittleEndian.PutUint16(b[16:], uint16(len(pk)))
	binary.LittleEndian.PutUint16(b[18:], uint16(len(id)))
	binary.BigEndian.PutUint64(b[20:], pos)
	b = append(b, pk...)
	b = append(b, id...)
	var be [8]byte // the ETag: seq in lower-case hex, big endian
	binary.BigEndian.PutUint64(be[:], seq)
	n := len(b)
	b = b[:n+etagLen]
	hex.Encode(b[n:], be[:])
	rb.b = append(b, '{')
}

// member appends members of the document ("name":value, comma-separated).
func (rb *recordBuilder) member(m []byte) {
	if rb.members > 0 {
		rb.b = append(rb.b, ',')
	}
	rb.members++
	rb.b = append(rb.b, m...)
}

// end finishes the record. The builder's bytes become the record's, never
// to change.
func (rb *recordBuilder) end() record {
	rb.b = append(rb.b, '}')
	return record(unsafe.String(unsafe.SliceData(rb.b), len(rb.b)))
}
