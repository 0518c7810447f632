package cosmosrest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lethedb/lethe/internal/logfile"
	"github.com/lethedb/lethe/internal/vfs"
)

// The conflicts log. A durable database keeps its containers' conflicts
// feeds in conflictLogFile, an append-only log: each change of a feed (a
// conflict recorded, one deleted, a handled mark, a feed dropped) is one
// frame appended and synced before it is answered, so the cost of
// recording a conflict does not grow with the feeds. When the frames
// appended since the log was last written whole reach as many as it then
// held (and at least minConflictLog), it is written whole again
// (compacted: synced, then renamed into place), from the feeds in memory,
// without the deleted conflicts and the handled marks no longer needed
// (conflictFeed.prunable). The first change after a start writes it whole
// too, so a log is appended to only by the process that wrote it.
//
// The file is a header, conflictLogMagic and a version byte, then frames
// as the store's logs frame theirs (internal/logfile: a length, the
// length inverted, a CRC-32C), each holding a conflictRecord in JSON. At a
// start a torn frame at the end, or zeros to the end (a power cut during
// an append), is cut off, as the store's last log segment's is; any other
// damage is an error naming the file. A directory with conflictsFile and
// no log (written before the log was) is read from conflictsFile, which
// the first compaction removes.

// conflictLogFile is the log of a durable database's conflicts feeds.
const conflictLogFile = "conflicts.log"

// conflictLogMagic starts conflictLogFile; conflictLogVersion follows it.
const (
	conflictLogMagic   = "LETHECFL"
	conflictLogVersion = 1
)

// minConflictLog is the fewest appended frames that make a compaction.
const minConflictLog = 64

// conflictRecord is one frame of conflictLogFile: a savedConflict, whose
// fields it uses as conflictsFile did, with what the log adds.
type conflictRecord struct {
	// Op is what the frame records: "feed" (a feed as a compaction writes
	// it: Num its last number, Through), "add" (a conflict, with Ends),
	// "delete" (the conflict numbered Num), "mark" (Key handled, with
	// Ends) or "drop" (the feed is gone).
	Op string `json:"op"`
	savedConflict
	Ends    []uint64 `json:"ends,omitempty"`
	Through []uint64 `json:"through,omitempty"`
}

// appendConflictLocked appends recs to the database's conflicts log, and
// syncs it, or writes the log whole when it is due (or none is open: the
// first change since the start, or since a failed append); db.confl.mu
// is held, and the feeds in memory already hold the change. Nothing for
// a database in memory. After a failure nothing more is appended: the
// next change writes the log whole.
func (db *database) appendConflictLocked(recs ...conflictRecord) error {
	if db.path == "" {
		return nil
	}
	l := &db.confl
	if l.log == nil || l.appended+len(recs) > max(l.written, minConflictLog) {
		return db.compactConflictsLocked()
	}
	var b []byte
	for _, r := range recs {
		var err error
		if b, err = appendConflictFrame(b, r); err != nil {
			return err
		}
	}
	_, err := l.log.Write(b)
	if err == nil {
		err = l.log.Sync()
	}
	if err != nil {
		db.closeConflictLogLocked()
		return err
	}
	l.appended += len(recs)
	return nil
}

// appendConflictFrame appends record r, framed, to b.
func appendConflictFrame(b []byte, r conflictRecord) ([]byte, error) {
	b, start := logfile.BeginFrame(b)
	p, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return logfile.EndFrame(append(b, p...), start), nil
}

// compactConflictsLocked writes the conflicts log whole from the feeds in
// memory (synced, renamed into place), keeps it open for the next
// appends, and removes conflictsFile, read at the start, if it is there;
// db.confl.mu is held.
func (db *database) compactConflictsLocked() error {
	db.closeConflictLogLocked()
	l := &db.confl
	b := append([]byte(conflictLogMagic), conflictLogVersion)
	frames := 0
	for coll, f := range l.feeds {
		f.prune()
		recs := []conflictRecord{{Op: "feed", savedConflict: savedConflict{Coll: coll, Num: f.next}, Through: f.through}}
		live := make(map[string]bool, len(f.conflicts))
		for _, c := range f.conflicts {
			live[c.key] = true
			recs = append(recs, conflictRecord{Op: "add", savedConflict: savedConflict{Coll: coll, Num: c.num, PK: c.pk.String(), ID: c.idValue, ETag: c.etag, Resource: c.json, Key: c.key}, Ends: c.ends})
		}
		for key, ends := range f.handled {
			if !live[key] {
				recs = append(recs, conflictRecord{Op: "mark", savedConflict: savedConflict{Coll: coll, Key: key}, Ends: ends})
			}
		}
		for _, r := range recs {
			var err error
			if b, err = appendConflictFrame(b, r); err != nil {
				return err
			}
		}
		frames += len(recs)
	}
	path := filepath.Join(db.path, conflictLogFile)
	tmp := path + ".tmp"
	f, err := db.fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = db.fs.Rename(tmp, path)
	}
	if err == nil {
		err = db.fs.SyncDir(db.path)
	}
	if err != nil {
		_ = f.Close()
		_ = db.fs.Remove(tmp)
		return err
	}
	l.log, l.written, l.appended = f, frames, 0
	if l.legacy {
		// The log holds what conflictsFile did: it goes (a failure leaves
		// it, never read again while the log is there).
		if db.fs.Remove(filepath.Join(db.path, conflictsFile)) == nil {
			l.legacy = db.fs.SyncDir(db.path) != nil
		}
	}
	return nil
}

// closeConflictLogLocked closes the conflicts log, if one is open;
// db.confl.mu is held.
func (db *database) closeConflictLogLocked() {
	if db.confl.log != nil {
		_ = db.confl.log.Close()
		db.confl.log = nil
	}
}

// closeConflictLog closes the database's conflicts log: the database is
// closed, or dropped.
func (db *database) closeConflictLog() {
	db.confl.mu.Lock()
	defer db.confl.mu.Unlock()
	db.closeConflictLogLocked()
}

// readConflictLog reads the conflicts feeds of the log at path; ok is
// false when there is no log.
func readConflictLog(fsys vfs.FS, path string) (feeds map[string]*conflictFeed, ok bool, err error) {
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	damaged := func(off int, why string) error {
		return fmt.Errorf("%s is damaged at offset %d: %s", path, off, why)
	}
	head := len(conflictLogMagic) + 1
	if len(data) < head || string(data[:len(conflictLogMagic)]) != conflictLogMagic || data[head-1] != conflictLogVersion {
		return nil, false, damaged(0, "it does not start with the conflicts log's header")
	}
	feeds = map[string]*conflictFeed{}
	for off := head; off < len(data); {
		payload, ferr := logfile.ReadFrame(data[off:])
		if ferr != nil {
			if ferr.Torn || logfile.ZeroTail(data, off) {
				break // an append cut short: it was never acknowledged
			}
			return nil, false, damaged(off, ferr.Reason)
		}
		var r conflictRecord
		if err := json.Unmarshal(payload, &r); err != nil {
			return nil, false, damaged(off, err.Error())
		}
		if err := replayConflictRecord(feeds, r); err != nil {
			return nil, false, damaged(off, err.Error())
		}
		off += logfile.FrameHeaderSize + len(payload)
	}
	return feeds, true, nil
}

// replayConflictRecord applies record r to feeds, as it was applied when
// it was written.
func replayConflictRecord(feeds map[string]*conflictFeed, r conflictRecord) error {
	f := feeds[r.Coll]
	if f == nil && r.Op != "drop" {
		f = newConflictFeed()
		feeds[r.Coll] = f
	}
	switch r.Op {
	case "feed":
		f.next, f.through = max(f.next, r.Num), r.Through
	case "add":
		pk, err := parsePKHeader(r.PK)
		if err != nil || !json.Valid(r.Resource) || r.ID == "" {
			return fmt.Errorf("the conflict %q of the container %q", clip(r.ID), clip(r.Coll))
		}
		f.add(&conflictRes{num: r.Num, pk: pk, json: r.Resource, idValue: r.ID, etag: r.ETag, key: r.Key, ends: r.Ends})
	case "delete":
		if c := f.byNum(r.Num); c != nil {
			f.remove(c)
		}
	case "mark":
		f.handled[r.Key] = r.Ends
	case "drop":
		delete(feeds, r.Coll)
	default:
		return fmt.Errorf("an unknown record %q", clip(r.Op))
	}
	return nil
}
