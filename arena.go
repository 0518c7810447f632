package lethe

import (
	"encoding/binary"
	"slices"
	"unsafe"
)

// The record arena: the records recovery reads, checked and copied into
// blocks.

// recordArena copies the records recovery reads into blocks of
// arenaBlock bytes, some 25 records of 300 bytes to an allocation, instead
// of one allocation each. A block stays in memory while any of its records
// does, so the memory of items replaced, deleted or expired after recovery
// comes back a block at a time, when the last of its records goes: blocks
// are small so that few items, kept long, keep little else (64 KiB blocks
// were no faster to recover with).
type recordArena struct {
	block []byte   // the block being filled, only appended to: its records never move
	free  [][]byte // empty blocks allocated ahead (reserve)
	made  int      // blocks allocated when none was free (for tests)
}

const arenaBlock = 8 << 10

// reserve allocates ahead the blocks for n more bytes of records.
func (a *recordArena) reserve(n int64) {
	k := int(n / arenaBlock)
	a.free = slices.Grow(a.free, k)
	for range k {
		a.free = append(a.free, make([]byte, 0, arenaBlock))
	}
}

// copy returns a copy of b as a record.
func (a *recordArena) copy(b []byte) record {
	if len(b) > arenaBlock/4 {
		return record(b) // a large record gets its own allocation
	}
	if cap(a.block)-len(a.block) < len(b) {
		if n := len(a.free); n > 0 {
			a.block, a.free = a.free[n-1], a.free[:n-1]
		} else {
			a.block = make([]byte, 0, arenaBlock)
			a.made++
		}
	}
	start := len(a.block)
	a.block = append(a.block, b...)
	return record(unsafe.String(&a.block[start], len(b)))
}

// wellFormed reports whether b, a record whose header is header bytes
// long, has lengths that fit, an ETag of 16 lowercase hex digits and a
// document that is an object.
func wellFormed(b []byte, header int) bool {
	if len(b) < header {
		return false
	}
	keyLen := int(binary.LittleEndian.Uint16(b[16:])) + int(binary.LittleEndian.Uint16(b[18:]))
	if header+keyLen+etagLen+2 > len(b) {
		return false
	}
	etag := b[header+keyLen : header+keyLen+etagLen]
	body := b[header+keyLen+etagLen:]
	return isLowerHex(etag) && body[0] == '{' && body[len(body)-1] == '}'
}

// isLowerHex reports whether b is all lowercase hexadecimal digits. It
// looks each byte up in a table, without a branch: recovery checks the
// ETag of every record, whose digits mispredict the branches of range
// comparisons.
func isLowerHex(b []byte) bool {
	var bad byte
	for _, c := range b {
		bad |= notLowerHex[c]
	}
	return bad == 0
}

// notLowerHex is 1 for a byte that is not a lowercase hexadecimal digit.
var notLowerHex = func() (t [256]byte) {
	for c := range t {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			t[c] = 1
		}
	}
	return t
}()
