package lethe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	mathbits "math/bits"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/lethedb/lethe/internal/logfile"
	"github.com/lethedb/lethe/internal/manifest"
	"github.com/lethedb/lethe/internal/vfs"
)

// Recovery: how a durable store comes back (the format is in format.go; Open's side, openDir, in open.go).
//
//  1. Load the newest snapshot, snap-<n>.db, if there is one: it must be
//     whole (end with its 'E' frame) and undamaged.
//  2. Replay the log segments numbered n and after (every segment, without
//     a snapshot), in order; they must follow each other without a gap. A
//     snapshot is written after the log has moved on to segment n, and
//     while writes go on, so it may already hold some of the changes that
//     segment n replays: replaying them again changes nothing, because a
//     container's creation is skipped if the snapshot holds that very
//     container (the same creation sequence number), a settings change if
//     the snapshot holds it or a later one, and item writes and removals
//     are replayed in the order they were made and so end in the same
//     state. A change to a container that no longer exists (its deletion
//     came later, and the snapshot was taken after it) is skipped.
//  3. Drop every item that has expired by the store's clock now: it is not
//     brought back, and is counted as purged. Settings changes are replayed
//     with the instants they were made at, so the items earlier defaults
//     expired for good stay expired.
//  4. Continue the write sequence after the highest one recovered, so _etag
//     values are never reused, and start a new log segment.
//
// A torn frame at the very end of the last segment (the store died while
// appending it: the file ends inside the frame, or the frame's checksum
// fails and it ends exactly at the end of the file; or the power was cut
// while it was written: the frame is damaged and the file ends in zeros
// from a sector boundary after its start) is cut off, and
// reported in RecoveryInfo.TornFile and TornBytes; that write was never
// acknowledged. A last segment shorter than its header (the store died
// while creating it) holds nothing, and is given its header, so that the
// segments started after it can follow it. These repairs are made once
// everything has been read. Any other damage is a *CorruptionError naming
// the file and offset, and Open fails without changing anything.

// recover loads the directory's snapshot and replays its log (see above),
// checking them against the manifest m (nil: none, manifest.go). It
// returns the number of the segment to start, and the snapshot's size.
// With dry (Check), it changes nothing: what it would remove or repair is
// only reported in s.recovery.
func (s *Store) recover(dir string, m *manifest.Manifest, dry bool) (r *replayer, next uint64, snapSize int64, err error) {
	r = &replayer{s: s, now: s.clock.now(), m: m, sizes: map[uint64]int64{}}
	// The files are mapped (mapFile): a page that cannot be read (a disk
	// error, or a file cut short by a process that ignored the lock) would
	// fault, and kill the process. Open fails with the error instead.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if _, fault := p.(interface{ Addr() uintptr }); !fault {
				panic(p)
			}
			r, next, snapSize, err = nil, 0, 0, fmt.Errorf("lethe: reading %s: %v", r.file, p)
		}
	}()
	from, segs, err := s.listDir(dir, dry)
	if err != nil {
		return nil, 0, 0, err
	}
	if err := r.sizeFiles(dir, from, segs, dry); err != nil {
		return nil, 0, 0, err
	}
	if from > 0 {
		name := snapshotName(from)
		path := filepath.Join(dir, name)
		if snapSize, err = r.loadSnapshot(path, from); err != nil {
			return nil, 0, 0, err
		}
		s.recovery.Snapshot = name
	}
	if err := checkSequence(dir, from, segs); err != nil {
		return nil, 0, 0, err
	}
	for i, n := range segs {
		if err := r.replaySegment(filepath.Join(dir, segmentName(n)), n, i == len(segs)-1); err != nil {
			return nil, 0, 0, err
		}
		s.recovery.Segments++
	}
	r.from, r.segs = from, segs
	r.sawSeqs()
	if err := r.checkManifest(dir, m, from, segs); err != nil {
		return nil, 0, 0, err
	}
	if err := r.finish(dir); err != nil {
		return nil, 0, 0, err
	}
	if r.repair != nil && !dry {
		if err := r.repair(); err != nil {
			if !cannotWrite(err) {
				return nil, 0, 0, err
			}
			r.readOnly = err // the store reads what is there, writes nothing
		}
	}
	next = 1
	if len(segs) > 0 {
		next = segs[len(segs)-1] + 1
	} else if from > 0 {
		next = from
	}
	return r, next, snapSize, nil
}

// listDir lists the files of dir that recovery reads: the newest snapshot
// (from, 0 if none) and the log segments numbered from on, in order. It
// removes the files left unfinished (.tmp), and lists them in
// s.recovery.Unfinished; with dry (Check), it only lists them.
func (s *Store) listDir(dir string, dry bool) (from uint64, segs []uint64, err error) {
	fsys := s.opts.fs
	names, err := fsys.List(dir)
	if err != nil {
		return 0, nil, err
	}
	var snaps []uint64
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, ".tmp"):
			s.recovery.Unfinished = append(s.recovery.Unfinished, name)
			if dry {
				continue
			}
			if err := fsys.Remove(filepath.Join(dir, name)); err != nil {
				return 0, nil, err
			}
		case name == manifestName:
		case strings.HasPrefix(name, "snap-") && strings.HasSuffix(name, ".db"):
			if n, ok := fileNumber(name, "snap-", ".db"); ok {
				snaps = append(snaps, n)
			}
		case strings.HasPrefix(name, "wal-") && strings.HasSuffix(name, ".log"):
			if n, ok := fileNumber(name, "wal-", ".log"); ok {
				segs = append(segs, n)
			}
		}
	}
	slices.Sort(snaps)
	slices.Sort(segs)
	if len(snaps) > 0 {
		from = snaps[len(snaps)-1]
	}
	return from, slices.DeleteFunc(segs, func(n uint64) bool { return n < from }), nil
}

// checkSequence checks that the log segments segs follow the snapshot
// from (0: none; then the first segment is 1) and each other without a
// gap.
func checkSequence(dir string, from uint64, segs []uint64) error {
	for i, n := range segs {
		if i > 0 && n != segs[i-1]+1 {
			return &CorruptionError{File: filepath.Join(dir, segmentName(segs[i-1]+1)), Reason: "this log segment is missing"}
		}
	}
	if from == 0 && len(segs) > 0 && segs[0] != 1 {
		return &CorruptionError{File: filepath.Join(dir, snapshotName(segs[0])), Reason: "the snapshot that the log segments follow is missing"}
	}
	if from > 0 && (len(segs) == 0 || segs[0] != from) {
		return &CorruptionError{File: filepath.Join(dir, segmentName(from)), Reason: "the log segment that follows the snapshot is missing"}
	}
	return nil
}

// manifest returns the manifest of the directory as recovered, for a store
// that has started the segment next: the snapshot loaded, the segments
// replayed sealed at their sizes, next, and the highest write sequence
// read.
func (r *replayer) manifest(next uint64) manifest.Manifest {
	m := manifest.Manifest{Snapshot: r.from, Log: next, Seq: r.maxSeq, Items: r.items}
	for _, n := range r.segs {
		m.Sealed = append(m.Sealed, manifest.Sealed{N: n, Size: r.sizes[n]})
	}
	return m
}

// fileNumber reads the hexadecimal number in a file name.
func fileNumber(name, prefix, suffix string) (uint64, bool) {
	hex := strings.TrimSuffix(strings.TrimPrefix(name, prefix), suffix)
	if len(hex) != 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(hex, 16, 64)
	return n, err == nil
}

// replayer rebuilds a store from its files.
type replayer struct {
	s      *Store
	now    int64  // the store's clock when recovery began
	maxSeq uint64 // the highest write sequence number seen
	// maxTag is the highest ETag of the item writes replayed (applyPut),
	// which are 16 lowercase hex digits: compared as strings, they
	// compare as the numbers they are, without parsing each (sawSeqs
	// folds it into maxSeq).
	maxTag  string
	file    string // the file being read, for errors
	version byte   // its format version
	old     bool   // a file of an older format was read, and its items not placed yet (place)
	// unplaced says that a record put since the last place has no
	// position: one read from a file of an older format.
	unplaced bool
	arena    recordArena // holds the records the replaying goroutine reads
	// reading holds the records that the reading goroutine of frames
	// copies: it is that goroutine's while frames runs.
	reading recordArena
	// onDisk is the size of the files recovery reads, together, as the
	// file system gives it (sizeFiles); ahead is the room reserveAhead
	// allocates once the first is read: as much, at most maxReserve, or
	// none for Check.
	onDisk, ahead int64
	// sets holds, for each container, the expiry entries of the records
	// put, for finish; last is the one used last.
	sets map[*Container]*liveSet
	last struct {
		c   *Container
		set *liveSet
	}
	// counts is, while a snapshot loads whose manifest has no item
	// counts (an older store's), the number of items it holds of each
	// container (countPuts).
	counts map[string]int
	// items is how many items each container holds once recovered, for
	// the manifest.
	items   []manifest.ItemCount
	touched uint32 // written by prefetch, so that its loads are not elided
	// changes counts the changes to the store's containers (made or
	// dropped), prefetched its count when prefetch found the containers
	// of the batch being replayed: while they are equal, they still are.
	changes, prefetched uint64
	repair              func() error // repairs the end of the log, once all is read

	m     *manifest.Manifest // the directory's manifest, nil if none
	from  uint64             // the snapshot loaded, 0 if none
	segs  []uint64           // the segments replayed
	sizes map[uint64]int64   // their sizes, as repaired
	// readOnly is why the store cannot write (the disk is full), nil if it
	// can: it then opens read-only.
	readOnly error

	// found is, for each container, how far its expiry watch had got (the
	// change feed's 'R' frames, settings changes, snapshots); finish
	// resumes the watch there.
	found map[*Container]watchFound
	// foundMax is past every instant and front in found: a version
	// written at or after it owes nothing (owePassed), which most are.
	foundMax int64
	// recovered lists, for each container with a change feed, the
	// expiries finish found, which the store logs once its log is open.
	recovered map[*Container][]expiryNote
	// owed lists, for each container with a change feed, the expiries of
	// the versions replayed behind the instant found (owePassed) that the
	// log has not replayed yet.
	owed map[*Container][]expiryNote
}

// readFile reads a whole file (mapFile) and checks its header: of format
// 4, its store id must be the manifest's and its number n. The caller
// releases the contents when it is done with them.
func (r *replayer) readFile(path, magic string, n uint64, tornOK bool) (data []byte, release func(), err error) {
	r.file = path
	data, release, err = r.s.opts.fs.Map(path)
	if err != nil {
		return nil, nil, err
	}
	if r.s.opts.afterMap != nil {
		r.s.opts.afterMap(path)
	}
	h, herr := logfile.ReadHeader(data, magic)
	if h.Version != 0 {
		r.version = h.Version
		r.old = r.old || r.version < 3
	}
	if herr != nil {
		if herr.Torn && tornOK {
			return data, release, nil // created, then the store died before its header was synced
		}
		release()
		return nil, nil, &CorruptionError{File: path, Offset: herr.Offset, Reason: herr.Reason}
	}
	if r.version < 4 {
		return data, release, nil
	}
	if r.m == nil && tornOK && magic == walMagic && len(data) == fileHeaderV4 {
		// The last segment, empty, and no manifest: the store was cut
		// off between starting its first segment and writing its first
		// manifest. The store takes the segment's id.
		r.s.storeID = h.ID
	}
	if err := r.checkHeader(path, h, n); err != nil {
		release()
		return nil, nil, err
	}
	return data, release, nil
}

// replaySegment replays one log segment; in the last one a torn end is cut
// off.
func (r *replayer) replaySegment(path string, n uint64, last bool) error {
	_, sealed := r.m.SealedSize(n)
	data, release, err := r.readFile(path, walMagic, n, last && !sealed)
	if err != nil {
		return err
	}
	defer release()
	if size, ok := r.m.SealedSize(n); ok && int64(len(data)) != size {
		return &CorruptionError{File: path, Offset: min(int64(len(data)), size), Reason: fmt.Sprintf("the log segment is %d bytes, MANIFEST records it sealed at %d: it was cut short or replaced", len(data), size)}
	}
	r.sizes[n] = int64(len(data))
	r.reserveAhead()
	if len(data) < fileHeader || len(data) < logfile.HeaderSize(r.version) {
		// The store died between creating this segment and writing its
		// header: nothing was logged to it. It gets its header, so that
		// it reads as the empty segment it is once others follow it.
		// A directory without a manifest is an older store's: its
		// segment gets the older header, which needs none.
		id, legacy := r.s.storeID, r.m == nil
		r.repair = func() error { return writeHeader(r.s.opts.fs, path, walMagic, id, n, legacy) }
		r.sizes[n] = int64(fileHeaderV4)
		if legacy {
			r.sizes[n] = int64(fileHeader)
		}
		if len(data) > 0 {
			r.s.recovery.TornFile, r.s.recovery.TornBytes = filepath.Base(path), int64(len(data))
		}
		return nil
	}
	if r.version >= 3 && r.old {
		r.place()
	}
	end, err := r.frames(data, last, func(f *frame) error {
		r.s.recovery.Frames++
		return r.apply(f)
	})
	if err != nil {
		return err
	}
	if torn := int64(len(data)) - end; torn > 0 {
		r.repair = func() error { return truncateSynced(r.s.opts.fs, path, end) }
		r.sizes[n] = end
		r.s.recovery.TornFile, r.s.recovery.TornBytes = filepath.Base(path), torn
	}
	return nil
}

// truncateSynced cuts a file to size, synced: a cut that a power loss
// undid would bring a torn end back in a segment that others follow, where
// it reads as damage.
func truncateSynced(fsys vfs.FS, path string, size int64) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err = f.Truncate(size); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// sizeFiles finds the size of the files recovery is to read, the snapshot
// from (0: none) and the segments segs, together (onDisk), from the file
// system rather than from the manifest, whose sizes may be wrong (its
// checksum right, its numbers not: a bug, a hand edit, another store's
// file): what recovery sizes ahead from them, the records' blocks and the
// containers' tables, is then at most what the files can hold, and a
// manifest that lies costs nothing before the size check that fails it
// (replaySegment). Open reserves that room (ahead, at most maxReserve);
// Check, which keeps nothing, none: its blocks are made as its records
// come.
func (r *replayer) sizeFiles(dir string, from uint64, segs []uint64, dry bool) error {
	names := make([]string, 0, len(segs)+1)
	if from > 0 {
		names = append(names, snapshotName(from))
	}
	for _, n := range segs {
		names = append(names, segmentName(n))
	}
	for _, name := range names {
		size, err := r.s.opts.fs.Size(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		r.onDisk += size
	}
	if !dry {
		r.ahead = min(r.onDisk, maxReserve)
	}
	return nil
}

// minRecordBytes is the fewest bytes an item's record takes in a file of
// any format (format 2's: a 20-byte header, an ETag and "{}"): files of n
// bytes hold at most n/minRecordBytes items.
const minRecordBytes = 20 + etagLen + 2

// maxReserve bounds the room recovery allocates ahead for records: 4 GiB,
// some 14M items of 300 bytes, and an eighth of the address space on a
// 32-bit build (512 MiB); the records past it get their blocks as they are
// read.
const maxReserve = min(4<<30, 1<<(mathbits.UintSize-3))

// reserveAhead allocates the reading arena's blocks for the records of
// every file recovery reads (ahead), once the first of them is read and
// its header checked (and, a segment, its size against the manifest's):
// so the records' blocks, which the garbage collector does not scan, are
// on the heap before the tables and entries that point at them. The
// collector, whose cycles come as the heap doubles, then runs them while
// the heap is nearly all blocks, rather than over the tables as they
// fill: a million items' recovery went from seven cycles and about 0.3 s
// of their marking to cycles that take 5-50 ms in all. Blocks left unused (the
// bytes of frames that are not records, and of records over
// arenaBlock/4, which get their own allocations) are not written, so not
// resident when fresh from the system, and are garbage once Open returns.
func (r *replayer) reserveAhead() {
	r.reading.reserve(r.ahead)
	r.ahead = 0
}

// loadSnapshot loads a snapshot and returns its size.
func (r *replayer) loadSnapshot(path string, n uint64) (int64, error) {
	data, release, err := r.readFile(path, snapMagic, n, false)
	if err != nil {
		return 0, err
	}
	defer release()
	r.reserveAhead()
	if r.m == nil || r.m.Items == nil {
		r.counts = countPuts(data[logfile.HeaderSize(r.version):])
		defer func() { r.counts = nil }()
	}
	ended := false
	var items uint64
	_, err = r.frames(data, false, func(f *frame) error {
		if ended {
			return errors.New("a frame follows the snapshot's end")
		}
		p := f.payload
		switch p[0] {
		case frameState:
			return r.loadState(p[1:])
		case framePut:
			items++
			return r.applyPut(f)
		case frameFeed:
			return r.loadFeed(p[1:])
		case frameTomb:
			return r.loadTomb(p[1:])
		case frameEnd:
			d := decoder{b: p[1:]}
			n, seq := d.uvarint(), d.uvarint()
			if d.bad || n != items {
				return fmt.Errorf("the snapshot's end counts %d items, it holds %d", n, items)
			}
			r.maxSeq = max(r.maxSeq, seq)
			ended = true
			return nil
		}
		return fmt.Errorf("a snapshot has no frames of kind %q", p[0])
	})
	if err != nil {
		return 0, err
	}
	if !ended {
		return 0, &CorruptionError{File: path, Offset: int64(len(data)), Reason: "the snapshot is incomplete: it has no end frame"}
	}
	return int64(len(data)), nil
}

// countPuts counts the item frames ('P') of each container in a snapshot's
// frames, reading only their lengths and container ids, so that loadState
// can size the container's tables before its items arrive. It checks
// nothing, and stops at anything unexpected: the frames are checked as
// they are loaded.
func countPuts(data []byte) map[string]int {
	counts := map[string]int{}
	var (
		cid []byte // the container whose run of frames is being counted
		n   int
	)
	for len(data) >= frameHeader {
		size := binary.LittleEndian.Uint32(data)
		if size == 0 || size > maxFramePayload || uint64(len(data)-frameHeader) < uint64(size) {
			break
		}
		payload := data[frameHeader : frameHeader+size]
		data = data[frameHeader+size:]
		if payload[0] != framePut {
			continue
		}
		d := decoder{b: payload[1:]}
		id := d.str()
		if d.bad {
			break
		}
		// A snapshot's items come grouped by container.
		if !bytes.Equal(id, cid) {
			if n > 0 {
				counts[string(cid)] += n
			}
			cid, n = id, 0
		}
		n++
	}
	if n > 0 {
		counts[string(cid)] += n
	}
	return counts
}
