package lethe

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lethedb/lethe/internal/logfile"
	"github.com/lethedb/lethe/internal/vfs"
)

// The on-disk format of a durable store: the directory's files, their
// headers and versions, the frames and the payload of each frame kind, the
// snapshots, the records and the MANIFEST are described in
// docs/file-format.md, the format's reference; change it with this file.
// Writing is in wal.go and snapshot.go, reading in recover.go, frames.go
// and replay.go; internal/logfile frames the payloads and reads the
// headers, internal/manifest encodes the MANIFEST.

// The framing, the files' headers and their sizes are internal/logfile's;
// the store's package names them so.
const (
	walMagic        = logfile.WALMagic
	snapMagic       = logfile.SnapMagic
	walVersion      = logfile.Version
	fileHeader      = logfile.BaseHeaderSize // the header of formats 1 to 3
	fileHeaderV4    = logfile.HeaderSizeV4   // the store's id and the file's number follow the version
	frameHeader     = logfile.FrameHeaderSize
	maxFramePayload = logfile.MaxPayload
)

// The kinds of frame payloads.
const (
	frameContainer = 'C'
	frameSettings  = 'S'
	frameDrop      = 'D'
	framePut       = 'P'
	frameRemove    = 'X'
	frameBatch     = 'B'
	frameState     = 'K'
	frameEnd       = 'E'

	framePutFeed    = 'Q'
	frameRemoveFeed = 'Y'
	frameExpire     = 'R'
	frameFeed       = 'F'

	frameTomb = 'T' // a snapshot's tombstone (tombstone.go)
)

// castagnoli is the CRC-32C table of the frames' and the manifest's
// checksums.
var castagnoli = logfile.Castagnoli

// beginFrame appends the room for a frame header to b and returns where the
// frame starts; endFrame fills the header in once the payload is appended
// (logfile.BeginFrame, logfile.EndFrame).
func beginFrame(b []byte) ([]byte, int) { return logfile.BeginFrame(b) }

func endFrame(b []byte, start int) []byte { return logfile.EndFrame(b, start) }

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func segmentName(n uint64) string  { return fmt.Sprintf("wal-%016x.log", n) }
func snapshotName(n uint64) string { return fmt.Sprintf("snap-%016x.db", n) }

// appendHeader appends the header of a file of format walVersion: the
// magic, the version, the store's id and the file's number.
func appendHeader(b []byte, magic string, id storeID, n uint64) []byte {
	return logfile.AppendHeader(b, magic, id, n)
}

// checkHeader checks the store id and the number in the header of a file
// of format 4 or later: the id must be the manifest's, the number n.
func (r *replayer) checkHeader(path string, h logfile.Header, n uint64) error {
	id := storeID(h.ID)
	if r.m == nil && id != r.s.storeID {
		return &CorruptionError{File: filepath.Join(filepath.Dir(path), manifestName), Reason: fmt.Sprintf("the directory's MANIFEST is missing (%s names store %s)", filepath.Base(path), id)}
	}
	if id != r.s.storeID {
		return &CorruptionError{File: path, Offset: int64(fileHeader), Reason: fmt.Sprintf("the file belongs to another store (%s; this directory's is %s)", id, r.s.storeID)}
	}
	if h.N != n {
		return &CorruptionError{File: path, Offset: int64(fileHeader + len(id)), Reason: fmt.Sprintf("the file's header names file number %d: it was renamed", h.N)}
	}
	return nil
}

// writeHeader replaces a file's contents with the header of the file n of
// the kind magic, synced: of format walVersion, or with legacy of format 3.
func writeHeader(fsys vfs.FS, path, magic string, id storeID, n uint64, legacy bool) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	h := appendHeader(nil, magic, id, n)
	if legacy {
		h = append([]byte(magic), 3)
	}
	if _, err = f.Write(h); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// decoder reads the fields of a payload; a field that runs past the end
// sets bad.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) str() []byte {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}
