package lethe

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lethedb/lethe/internal/logfile"
	"github.com/lethedb/lethe/internal/vfs"
)

// The on-disk format of a durable store.
//
// A durable store (Options.Dir) keeps its items in memory exactly as an
// in-memory store does, and appends every change to a log before it
// acknowledges it; snapshots (Store.Checkpoint) keep the log short. Its
// directory holds:
//
//	LOCK              held (flock) by the one store that has the directory open
//	MANIFEST          what the directory must hold: the store's id, its snapshot, its
//	                  log segments, the sizes of those written to their end (manifest.go)
//	wal-<n>.log       log segments, n in 16 hex digits, replayed in order of n
//	snap-<n>.db       a snapshot: with the segments n and after, the whole store
//	snap-<n>.db.tmp   a snapshot being written; removed when a store opens
//	MANIFEST.tmp      a manifest being written; removed when a store opens
//
// Every file starts with an 8-byte magic, "LETHEWAL" or "LETHESNP", and a
// version byte (walVersion); a reader refuses a version it does not know.
// From version 4 the header goes on with the store's id (16 bytes, as in
// its MANIFEST: manifest.go) and the file's own number (uint64, little
// endian), so that a file moved from another store, or renamed, is found
// out.
// Version 2 stores records (record.go) without "_ts" and "_etag" in the
// document; version 3 adds the item's position to the record's header and
// the container's last position to its snapshot state ('K'); version 4
// (the same records and frames) adds the store's id and the file's number
// to the header. A store reads the files of versions 1 to 3 too, converting their records and giving
// their items positions in a deterministic order (recover.go, place), and
// writes only version 4 (the repair of an older store's log, writeHeader
// with legacy set, keeps that log's version 3).
// Then come frames, each one change:
//
//	offset  size  field
//	0       4     n: the payload's length (uint32, little endian)
//	4       4     n again, every bit inverted (a damaged length is detected)
//	8       4     the CRC-32C (Castagnoli) of the payload
//	12      n     the payload: a kind byte, then its fields
//
// In the payloads, uvarint is Go's unsigned varint, varint its zig-zag
// signed one, and str a uvarint length followed by that many bytes:
//
//	'C' container created   uvarint seq, varint now, str properties (JSON)
//	'S' settings changed    uvarint seq, varint now, str properties (JSON)
//	'D' container deleted   uvarint seq of its creation, varint now, str id
//	'P' item written        str container id, then the record (record.go) to the end
//	'X' item removed        str container id, byte cause, str partition key (encoded), then the id to the end
//	'B' transactional batch str container id, uvarint the highest write sequence number the batch
//	                        used, uvarint n, then n item changes, each 'P' str record, or
//	                        'X' byte cause, str partition key (encoded), str id; in a container
//	                        with a change feed, 'Q' byte kind, str record, or 'Y' byte cause,
//	                        varint now, str record removed
//
// A container with a change feed (ChangeFeedPolicy) logs its item changes
// with what the feed needs, under the container's mu, so the log holds them in
// the feed's order, and its expiries as they are found:
//
//	'Q' item written        str container id, byte change kind (create, replace), then the record
//	'Y' item removed        str container id, byte cause, varint now, then the record removed
//	'R' item expired        str container id, varint when found, varint when it expired, then the record
//
// An expiry's "when found" is the instant up to which its look had found
// every expiry: the look's for its last expiry, the watch's instant before
// the look for the others (loggedAt), so that recovery resumes the watch
// past the expiries the log holds and no further, wherever the log ends
// and wherever a look stopped (a lethe before this wrote the look's
// instant on each). A settings change follows the expiries due under the
// rule it replaces (findBeforeSettings).
//
// (a purge, which the feed does not show, is an 'X' there too).
//
// A batch's frame holds the net change of each item the batch changed (an
// item created and then patched in one batch appears once, as it was at
// the end), and is replayed whole or, when torn at the end of the log, not
// at all: a batch is never half recovered.
//
// A snapshot holds, for each container, a 'K' frame and then a 'P' frame
// for each of its live items, and ends with an 'E' frame:
//
//	'K' container state     uvarint seq of its creation, uvarint seq of its last settings change,
//	                        str properties (JSON), then its expiry rule: varint def,
//	                        varint finalInherit, varint finalOwn, uvarint count of past
//	                        defaults, and for each varint cut, varint def; then (version 3)
//	                        uvarint the last position handed out
//	'F' change feed         str container id, uvarint seq of its creation, uvarint first lsn,
//	                        uvarint next lsn, varint the instant expiries were found up to,
//	                        uvarint n, then n changes, each uvarint previous lsn, varint
//	                        instant, byte kind, str record (after the container's items)
//	'E' end                 uvarint items written, uvarint the store's write sequence
//
// Writing is in wal.go and snapshot.go, reading in recover.go and
// frames.go; internal/logfile frames the payloads and reads the headers.

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
// of format 4: the id must be the manifest's, the number n.
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
// the kind magic, synced: of format 4, or with legacy of format 3.
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
