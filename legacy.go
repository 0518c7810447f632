package lethe

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
)

// Files of formats 1 to 3: their records converted to the current layout,
// and their items given positions (place).

// place gives the items that have no position yet (their records were read
// from files of format 1 or 2) theirs, after every other of their
// container's, in the order of their partition key values and ids (the
// order results without ORDER BY came in before positions): a deterministic
// order, so that every recovery of the same old files gives the same
// positions. Recovery places them once it has read the last file of an old
// format, before it replays one of the current format (whose writes were
// made after the same placement), and at its end; when no record without
// a position was put since, it reads no table.
func (r *replayer) place() {
	r.old = false
	if !r.unplaced {
		return
	}
	r.unplaced = false
	for _, c := range r.s.containers {
		var unplaced []record
		for i := range c.shards {
			c.shards[i].items.all(func(rec record) bool {
				if rec.pos() == 0 {
					unplaced = append(unplaced, rec)
				}
				return true
			})
		}
		slices.SortFunc(unplaced, func(a, b record) int { return strings.Compare(a.key(), b.key()) })
		for _, rec := range unplaced {
			r.put(c, rec.withPos(c.positions.Add(1)))
		}
	}
}

// record reads a record (record.go) written in the current file's format,
// copying it onto the heap, and reports whether it could: its lengths fit,
// its ETag is 16 lowercase hex digits and its document is an object.
// Format 1 stored the write sequence number in the header and "_ts" and
// "_etag" at the end of the document, format 2 had no position (its header
// ended at offset 20): such a record is converted, at position 0, and given
// its position by place.
func (r *replayer) record(b []byte) (record, bool) {
	return r.arena.record(r.version, b)
}

// record is replayer.record for files of format version, copying into a.
func (a *recordArena) record(version byte, b []byte) (record, bool) {
	switch version {
	case 1:
		return recordV1(b)
	case 2:
		const headerV2 = 20
		if !wellFormed(b, headerV2) {
			return "", false
		}
		var zero [8]byte
		return record(slices.Concat(b[:headerV2], zero[:], b[headerV2:])), true
	}
	if !wellFormed(b, recordHeader) {
		return "", false
	}
	return a.copy(b), true
}

// recordV1 converts a record of format 1: a 28-byte header (last write,
// sequence number, ttl, charge size, key lengths), the key, and the
// document ending with "_ts":…,"_etag":"<16 hex digits>"}.
func recordV1(b []byte) (record, bool) {
	const header = 28
	const minDoc = len(`{"_ts":0,"_etag":"0123456789abcdef"}`)
	if len(b) < header {
		return "", false
	}
	keyLen := int(binary.LittleEndian.Uint16(b[24:])) + int(binary.LittleEndian.Uint16(b[26:]))
	if header+keyLen+minDoc > len(b) {
		return "", false
	}
	doc := b[header+keyLen:]
	cut := bytes.LastIndex(doc, []byte(`"_ts":`))
	if doc[0] != '{' || !bytes.HasSuffix(doc, []byte(`"}`)) || doc[len(doc)-etagLen-3] != '"' || cut < 1 {
		return "", false
	}
	members := doc[1:cut]
	if len(members) > 0 {
		members = members[:len(members)-1] // the comma before "_ts"
	}
	var rb recordBuilder
	rb.begin(string(b[header:header+int(binary.LittleEndian.Uint16(b[24:]))]), string(b[header+int(binary.LittleEndian.Uint16(b[24:])):header+keyLen]),
		TTL(int32(binary.LittleEndian.Uint32(b[16:]))), int(binary.LittleEndian.Uint32(b[20:])), len(members),
		int64(binary.LittleEndian.Uint64(b[0:])), binary.LittleEndian.Uint64(b[8:]), 0)
	rb.b = append(rb.b, members...)
	return rb.end(), true
}
