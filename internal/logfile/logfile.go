// Package logfile is the framing of a durable store's files, the log's
// segments and the snapshots: their headers, the frames that follow, and
// what a crash or a power cut leaves at the end of one. It knows nothing
// of what the frames' payloads say (the store's package does: format.go),
// nor of paths: its errors name an offset and a reason, which the store
// turns into a *lethe.CorruptionError naming the file.
//
// Every file starts with an 8-byte magic (WALMagic, SnapMagic) and a
// version byte; from version 4 the header goes on with the store's id (16
// bytes) and the file's own number (uint64, little endian). Then come
// frames:
//
//	offset  size  field
//	0       4     n: the payload's length (uint32, little endian)
//	4       4     n again, every bit inverted (a damaged length is detected)
//	8       4     the CRC-32C (Castagnoli) of the payload
//	12      n     the payload
package logfile

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

const (
	// WALMagic starts every log segment.
	WALMagic = "LETHEWAL"
	// SnapMagic starts every snapshot.
	SnapMagic = "LETHESNP"
	// Version is the format version written; files of versions 1 to
	// Version are read.
	Version = 5
	// BaseHeaderSize is the size of the header of formats 1 to 3: the
	// magic and the version.
	BaseHeaderSize = len(WALMagic) + 1
	// HeaderSizeV4 is the size of the header from format 4: the store's id
	// (16 bytes) and the file's number (uint64, little endian) follow the
	// version.
	HeaderSizeV4 = BaseHeaderSize + 16 + 8
	// FrameHeaderSize is the size of a frame's header.
	FrameHeaderSize = 12
	// MaxPayload bounds a frame's payload: the largest transactional
	// batch, MaxBatchOperations item records of at most a 2 MB document,
	// its id and partition key each, with room to spare.
	MaxPayload = 256 << 20
	// SectorSize is the smallest unit a disk writes whole.
	SectorSize = 512
)

// Castagnoli is the CRC-32C table of the frames' checksums (and the
// manifest's).
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// HeaderSize returns the size of the header of a file of format version v.
func HeaderSize(v byte) int {
	if v >= 4 {
		return HeaderSizeV4
	}
	return BaseHeaderSize
}

// AppendHeader appends the header of a file of format Version: the magic,
// the version, the store's id and the file's number.
func AppendHeader(b []byte, magic string, id [16]byte, n uint64) []byte {
	b = append(b, magic...)
	b = append(b, Version)
	b = append(b, id[:]...)
	return binary.LittleEndian.AppendUint64(b, n)
}

// Header is what a file's header says.
type Header struct {
	Version byte
	ID      [16]byte // the store's id (from format 4)
	N       uint64   // the file's number (from format 4)
}

// Error is damage found in a file: at Offset (from the start of the file
// for a header, of the frame for a frame), Reason says what is wrong.
type Error struct {
	Offset int64
	Reason string
	// Torn says that the file ends inside the header or the frame, or that
	// the frame's checksum fails and it ends exactly at the end of the
	// file: what a store that died while writing it leaves.
	Torn bool
}

// Error returns "offset N: reason".
func (e *Error) Error() string { return fmt.Sprintf("offset %d: %s", e.Offset, e.Reason) }

// ReadHeader reads the header of a file of the kind magic from its start,
// data. A file shorter than its header has a Torn error; otherwise the
// magic must match and the version be known.
func ReadHeader(data []byte, magic string) (Header, *Error) {
	if len(data) < BaseHeaderSize {
		return Header{}, &Error{Reason: "the file is shorter than its header", Torn: true}
	}
	if string(data[:len(magic)]) != magic {
		return Header{}, &Error{Reason: fmt.Sprintf("the file does not start with %q", magic)}
	}
	h := Header{Version: data[len(magic)]}
	if h.Version < 1 || h.Version > Version {
		return Header{}, &Error{Offset: int64(len(magic)), Reason: fmt.Sprintf("unknown format version %d (this lethe reads 1 to %d)", h.Version, Version)}
	}
	if h.Version < 4 {
		return h, nil
	}
	if len(data) < HeaderSizeV4 {
		return h, &Error{Reason: "the file is shorter than its header", Torn: true}
	}
	copy(h.ID[:], data[BaseHeaderSize:])
	h.N = binary.LittleEndian.Uint64(data[BaseHeaderSize+len(h.ID):])
	return h, nil
}

// BeginFrame appends the room for a frame header to b and returns where
// the frame starts; EndFrame fills the header in once the payload is
// appended.
func BeginFrame(b []byte) ([]byte, int) {
	return append(b, make([]byte, FrameHeaderSize)...), len(b)
}

// EndFrame fills in the header of the frame that starts at start in b,
// whose payload is the rest of b, and returns b.
func EndFrame(b []byte, start int) []byte {
	payload := b[start+FrameHeaderSize:]
	PutFrameHeader(b[start:], len(payload), crc32.Checksum(payload, Castagnoli))
	return b
}

// PutFrameHeader puts in h the header of a frame whose payload is n bytes
// with the checksum crc (crc32.Update with Castagnoli): for a payload
// written after it in pieces, never whole in memory.
func PutFrameHeader(h []byte, n int, crc uint32) {
	binary.LittleEndian.PutUint32(h, uint32(n))
	binary.LittleEndian.PutUint32(h[4:], ^uint32(n))
	binary.LittleEndian.PutUint32(h[8:], crc)
}

// ReadFrame checks the frame at the start of b, the rest of a file, and
// returns its payload; the frame takes FrameHeaderSize+len(payload)
// bytes.
func ReadFrame(b []byte) ([]byte, *Error) {
	if len(b) < FrameHeaderSize {
		return nil, &Error{Reason: "the file ends inside a frame header", Torn: true}
	}
	n := binary.LittleEndian.Uint32(b)
	if ^n != binary.LittleEndian.Uint32(b[4:]) {
		return nil, &Error{Reason: "the frame's length is damaged"}
	}
	if n == 0 || n > MaxPayload {
		return nil, &Error{Reason: fmt.Sprintf("the frame's length %d is out of range", n)}
	}
	if int64(len(b)) < FrameHeaderSize+int64(n) {
		return nil, &Error{Reason: "the file ends inside a frame", Torn: true}
	}
	payload := b[FrameHeaderSize : FrameHeaderSize+n]
	if crc32.Checksum(payload, Castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return nil, &Error{Reason: "the frame's checksum does not match", Torn: len(b) == FrameHeaderSize+int(n)}
	}
	return payload, nil
}

// ZeroTail reports whether data, after off, ends in zeros from a sector
// boundary on (or is zeros after off): what a write torn by a power cut
// leaves when the file's new size reached the disk and not all its data.
func ZeroTail(data []byte, off int) bool {
	z := len(data)
	for z > off && data[z-1] == 0 {
		z--
	}
	return z <= off || (z+SectorSize-1)/SectorSize*SectorSize < len(data)
}
