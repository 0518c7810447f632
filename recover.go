package lethe

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	mathbits "math/bits"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/lethedb/lethe/internal/dirlock"
	"github.com/lethedb/lethe/internal/vfs"
)

// Recovery: how a durable store comes back (the format is in wal.go).
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

// ErrLocked is the error of Open when another open store, in this process
// or another, holds the directory.
var ErrLocked = dirlock.ErrLocked

// CorruptionError is the error of Open when a durable store's files are
// damaged beyond a torn end of the log.
type CorruptionError struct {
	File   string // the damaged file's path (the directory's, for damage no one file holds)
	Offset int64  // where in it the damage was found
	Reason string // what is wrong
}

// Error formats the error as "lethe: Open: file F offset N: reason".
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("lethe: Open: file %s offset %d: %s", e.File, e.Offset, e.Reason)
}

// RecoveryInfo is what a durable store's Open found and did.
type RecoveryInfo struct {
	Snapshot  string        // the snapshot loaded (a file name), "" if none
	Segments  int           // log segments replayed
	Frames    int64         // log frames replayed
	Items     int64         // live items recovered
	Expired   int64         // items not brought back because they had expired (counted as purged)
	TornFile  string        // the log segment whose torn end was cut off, "" if none
	TornBytes int64         // the bytes cut off it
	Duration  time.Duration // how long recovery took
	// Unfinished lists the files of snapshots that were being written
	// when the store stopped (.tmp), which recovery removed.
	Unfinished []string
}

// Recovery returns what the store's Open recovered; the zero value for an
// in-memory store.
func (s *Store) Recovery() RecoveryInfo { return s.recovery }

// openDir makes the store durable: it takes the directory, recovers its
// contents, and starts the log and the checkpointer.
func (s *Store) openDir() error {
	fsys, dir := s.opts.fs, s.opts.Dir
	if err := vfs.MkdirAllDurable(fsys, dir, 0o755); err != nil {
		return fmt.Errorf("lethe: Open: %w", err)
	}
	lock, err := fsys.Lock(dir)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return fmt.Errorf("lethe: Open: %w", err)
	}
	start := time.Now()
	m, err := readManifest(fsys, dir)
	var (
		r        *replayer
		next     uint64
		snapSize int64
	)
	if err == nil {
		s.storeID = newStoreID()
		if m != nil {
			s.storeID = m.id()
		}
		r, next, snapSize, err = s.recover(dir, m, false)
	}
	if err == nil {
		r.reading = recordArena{} // its blocks left over: a store that opens read-only keeps r
	}
	if err == nil {
		s.recovery.Duration = time.Since(start)
		s.checkpointer = newCheckpointer(s, snapSize)
		if r.readOnly == nil {
			s.wal, err = openWAL(fsys, dir, s.storeID, next, s.opts.Sync, s.checkpointer.grew, s.opts.Logger)
			if err == nil {
				// The new segment is durable: the manifest names it, seals
				// the segments recovered, and so says what the directory
				// must hold from now on. If it cannot be written, the
				// segment, still empty, goes.
				if err = s.writeManifest(r.manifest(next)); err != nil {
					s.wal.close()
					s.wal = nil
					fsys.Remove(filepath.Join(dir, segmentName(next)))
				}
			}
			if err != nil && cannotWrite(err) {
				r.readOnly, err = err, nil
			}
		}
		if r.readOnly != nil {
			// The disk is full (or read-only): the store serves what it
			// recovered, and refuses writes, rather than nothing at all,
			// until the disk takes writes again (wal.heal): then it does
			// what Open could not.
			resume := func(n uint64) (vfs.File, error) {
				if r.repair != nil {
					if err := r.repair(); err != nil {
						return nil, err
					}
					r.repair = nil
				}
				f, err := createLogFile(fsys, dir, s.storeID, n, vfs.File.Sync)
				if err != nil {
					return nil, err
				}
				if err := s.writeManifest(r.manifest(n)); err != nil {
					f.Close()
					fsys.Remove(filepath.Join(dir, segmentName(n)))
					return nil, err
				}
				return f, nil
			}
			resumed := func() { // as logRecovered, under the log's lock
				for c, found := range r.recovered {
					for _, e := range found {
						s.wal.appendExpireLocked(c.id, r.now, e.at, e.rec)
					}
				}
			}
			s.wal = readOnlyWAL(fsys, dir, s.storeID, next, s.opts.Sync, s.checkpointer.grew, s.opts.Logger, r.readOnly, resume, resumed)
		}
	}
	if err == nil && r.readOnly == nil {
		err = s.logRecovered(r.recovered, r.now)
		if err != nil {
			s.wal.close()
		}
	}
	if err != nil {
		lock.Close()
		var ce *CorruptionError
		if errors.As(err, &ce) {
			return err
		}
		return fmt.Errorf("lethe: Open: %w", err)
	}
	s.dirLock = lock
	s.logRecovery(r.readOnly)
	go s.checkpointer.run()
	return nil
}

// logRecovery tells Options.Logger what Open repaired or could not do.
func (s *Store) logRecovery(readOnly error) {
	l, ri := s.opts.Logger, s.recovery
	if l == nil {
		return
	}
	if ri.TornFile != "" {
		l.Warn("lethe: recovery cut a torn end off the log: the write under way when the store stopped, never acknowledged",
			"dir", s.opts.Dir, "file", ri.TornFile, "bytes", ri.TornBytes)
	}
	if readOnly != nil {
		l.Error("lethe: the store opened read-only: reads work, writes are refused",
			"dir", s.opts.Dir, "err", &readOnlyError{dir: s.opts.Dir, err: readOnly})
	}
}

// recover loads the directory's snapshot and replays its log (see above),
// checking them against the manifest m (nil: none, manifest.go). It
// returns the number of the segment to start, and the snapshot's size.
// With dry (Check), it changes nothing: what it would remove or repair is
// only reported in s.recovery.
func (s *Store) recover(dir string, m *manifest, dry bool) (r *replayer, next uint64, snapSize int64, err error) {
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
	fsys := s.opts.fs
	names, err := fsys.List(dir)
	if err != nil {
		return nil, 0, 0, err
	}
	var snaps, segs []uint64
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, ".tmp"):
			s.recovery.Unfinished = append(s.recovery.Unfinished, name)
			if dry {
				continue
			}
			if err := fsys.Remove(filepath.Join(dir, name)); err != nil {
				return nil, 0, 0, err
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
	from := uint64(0)
	if len(snaps) > 0 {
		from = snaps[len(snaps)-1]
	}
	segs = slices.DeleteFunc(segs, func(n uint64) bool { return n < from })
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
	for i, n := range segs {
		if i > 0 && n != segs[i-1]+1 {
			return nil, 0, 0, &CorruptionError{File: filepath.Join(dir, segmentName(segs[i-1]+1)), Reason: "this log segment is missing"}
		}
	}
	if from == 0 && len(segs) > 0 && segs[0] != 1 {
		return nil, 0, 0, &CorruptionError{File: filepath.Join(dir, snapshotName(segs[0])), Reason: "the snapshot that the log segments follow is missing"}
	}
	if from > 0 && (len(segs) == 0 || segs[0] != from) {
		return nil, 0, 0, &CorruptionError{File: filepath.Join(dir, segmentName(from)), Reason: "the log segment that follows the snapshot is missing"}
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

// manifest returns the manifest of the directory as recovered, for a store
// that has started the segment next: the snapshot loaded, the segments
// replayed sealed at their sizes, next, and the highest write sequence
// read.
func (r *replayer) manifest(next uint64) manifest {
	m := manifest{Snapshot: r.from, Log: next, Seq: r.maxSeq, Items: r.items}
	for _, n := range r.segs {
		m.Sealed = append(m.Sealed, sealed{N: n, Size: r.sizes[n]})
	}
	return m
}

// cannotWrite reports whether err says that the disk takes no writes: it
// is full (or over quota), or mounted read-only. A store that meets it at
// Open opens read-only.
func cannotWrite(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
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
	items   []itemCount
	touched uint32 // written by prefetch, so that its loads are not elided
	// changes counts the changes to the store's containers (made or
	// dropped), prefetched its count when prefetch found the containers
	// of the batch being replayed: while they are equal, they still are.
	changes, prefetched uint64
	repair              func() error // repairs the end of the log, once all is read

	m     *manifest        // the directory's manifest, nil if none
	from  uint64           // the snapshot loaded, 0 if none
	segs  []uint64         // the segments replayed
	sizes map[uint64]int64 // their sizes, as repaired
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

// frame is a frame of a file read by frames: its offset and payload, and
// for an item write ('P'), its container id and record, decoded and copied
// onto the heap by the goroutine that reads the frames.
type frame struct {
	off     int64
	payload []byte
	cid     []byte // of an item write
	rec     record // of an item write; "" if it is malformed
	same    bool   // an item write of the same container id as the item write before it
	// c is the container of an item write as prefetch found it, si and h
	// the index of the item's shard and its hash bits in it.
	c  *Container
	si int
	h  uint32
}

// framesPerBatch is how many frames go from the reading goroutine to the
// replaying one at a time.
const framesPerBatch = 256

// frames reads the frames of a file's contents after its header, calling fn
// with each, in order. With tornOK, a torn frame at the end is not an
// error: frames returns its offset as the end of the good frames.
//
// Recovery works on two cores: a goroutine reads the frames, checks their
// lengths and checksums, and decodes and copies the records of item
// writes, while the caller's replays them (fn). It stops at the first
// error of either, and returns once it has stopped.
func (r *replayer) frames(data []byte, tornOK bool, fn func(f *frame) error) (end int64, err error) {
	var (
		batches = make(chan []frame, 4)
		free    = make(chan []frame, 6)
		stop    = make(chan struct{})
		readEnd int64
		readErr error
	)
	go func() {
		defer close(batches)
		readEnd, readErr = r.readFrames(data, tornOK, batches, free, stop)
	}()
	defer func() {
		// Stop the reader, also when fn panics (a fault on a mapped
		// page), and wait for it: it leaves no goroutine behind.
		close(stop)
		for range batches {
		}
	}()
	for batch := range batches {
		r.prefetch(batch)
		for i := range batch {
			if err := fn(&batch[i]); err != nil {
				off := int(batch[i].off)
				var ce *CorruptionError
				if errors.As(err, &ce) {
					return int64(off), err
				}
				return r.damaged(data, off, tornOK, err.Error())
			}
		}
		select {
		case free <- batch[:0]:
		default:
		}
	}
	return readEnd, readErr
}

// prefetch finds the shard and hash of each item write of a batch, and
// loads its home slot, before the batch is replayed: the cache misses of
// reading the records (written by the other core) and of the id tables'
// slots (anywhere in 20 MB) overlap, instead of coming one after the
// other. The container found is looked up again when the write is
// replayed if a frame of the batch before it made or dropped one
// (replayer.changes). A run of writes to one container (frame.same) looks
// it up once.
func (r *replayer) prefetch(batch []frame) {
	var (
		c      *Container
		looked bool // c was looked up for the run of writes to one container that f is in
		sum    uint32
	)
	r.prefetched = r.changes
	for i := range batch {
		f := &batch[i]
		if f.rec == "" {
			continue
		}
		if !f.same || !looked {
			c, looked = r.s.containers[string(f.cid)], true
		}
		if c == nil {
			continue
		}
		f.c = c
		f.si, f.h = c.shardIndex(f.rec.pk(), f.rec.id())
	}
	// A loop of its own, a few instructions a slot, so that many loads
	// are under way at once.
	for i := range batch {
		if f := &batch[i]; f.c != nil {
			if t := &f.c.shards[f.si].items; len(t.slots) > 0 {
				sum += t.slots[t.home(f.h)].hash
			}
		}
	}
	r.touched += sum
}

// readFrames is the reading half of frames: it sends the frames of data
// on batches, framesPerBatch at a time, until the end, the first damage, or
// stop, and returns the end of the good frames (with tornOK, a torn frame
// at the end is not an error). A fault reading a mapped page (the file was
// cut short) is returned as an error.
func (r *replayer) readFrames(data []byte, tornOK bool, batches chan<- []frame, free <-chan []frame, stop <-chan struct{}) (end int64, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if _, fault := p.(interface{ Addr() uintptr }); !fault {
				panic(p)
			}
			end, err = 0, fmt.Errorf("lethe: reading %s: %v", r.file, p)
		}
	}()
	var (
		arena = &r.reading
		cid   []byte // of the last item write
	)
	batch := make([]frame, 0, framesPerBatch)
	send := func() bool {
		select {
		case batches <- batch:
		case <-stop:
			return false
		}
		select {
		case batch = <-free:
		default:
			batch = make([]frame, 0, framesPerBatch)
		}
		return true
	}
	off := headerSize(r.version)
	for off < len(data) {
		rest := data[off:]
		if len(rest) < frameHeader {
			if !tornOK {
				_, err = r.damaged(data, off, tornOK, "the file ends inside a frame header")
			}
			break
		}
		n := binary.LittleEndian.Uint32(rest)
		if ^n != binary.LittleEndian.Uint32(rest[4:]) {
			_, err = r.damaged(data, off, tornOK, "the frame's length is damaged")
			break
		}
		if n == 0 || n > maxFramePayload {
			_, err = r.damaged(data, off, tornOK, fmt.Sprintf("the frame's length %d is out of range", n))
			break
		}
		if int64(len(rest)) < frameHeader+int64(n) {
			if !tornOK {
				_, err = r.damaged(data, off, tornOK, "the file ends inside a frame")
			}
			break
		}
		payload := rest[frameHeader : frameHeader+n]
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(rest[8:]) {
			if !tornOK || len(rest) != frameHeader+int(n) {
				_, err = r.damaged(data, off, tornOK, "the frame's checksum does not match")
			}
			break
		}
		f := frame{off: int64(off), payload: payload}
		if payload[0] == framePut {
			d := decoder{b: payload[1:]}
			f.cid = d.str()
			if rec, ok := arena.record(r.version, d.b); ok && !d.bad {
				f.rec = rec
				f.same = cid != nil && bytes.Equal(f.cid, cid)
				cid = f.cid
			} else {
				cid = nil // prefetch skips a malformed put: the next is no run of it
			}
		}
		if batch = append(batch, f); len(batch) == framesPerBatch && !send() {
			return int64(off), nil // stopped: the caller has its error
		}
		off += frameHeader + int(n)
	}
	// The frames before the end (or the damage) are replayed first: an
	// error of theirs comes before it.
	if len(batch) > 0 {
		send()
	}
	return int64(off), err
}

// damaged returns the error of damage found at off in data, saying why;
// with tornOK, damage followed by zeros to the end is a write torn by a
// power cut: whole sectors of it reached the disk, then the space the file
// system gave it, zeros. frames ends there, without an error.
func (r *replayer) damaged(data []byte, off int, tornOK bool, why string) (int64, error) {
	if tornOK && zeroTail(data, off) {
		return int64(off), nil
	}
	return int64(off), &CorruptionError{File: r.file, Offset: int64(off), Reason: why}
}

// sectorSize is the smallest unit a disk writes whole.
const sectorSize = 512

// zeroTail reports whether data, after off, ends in zeros from a sector
// boundary on (or is zeros after off): what a write torn by a power cut
// leaves when the file's new size reached the disk and not all its data.
func zeroTail(data []byte, off int) bool {
	z := len(data)
	for z > off && data[z-1] == 0 {
		z--
	}
	return z <= off || (z+sectorSize-1)/sectorSize*sectorSize < len(data)
}

// afterMap, when set (by tests), is called with each file recovery has
// just mapped.
var afterMap func(path string)

// readFile reads a whole file (mapFile) and checks its header: of format
// 4, its store id must be the manifest's and its number n. The caller
// releases the contents when it is done with them.
func (r *replayer) readFile(path, magic string, n uint64, tornOK bool) (data []byte, release func(), err error) {
	r.file = path
	data, release, err = r.s.opts.fs.Map(path)
	if err != nil {
		return nil, nil, err
	}
	if afterMap != nil {
		afterMap(path)
	}
	if len(data) < fileHeader {
		if tornOK {
			return data, release, nil // created, then the store died before its header was synced
		}
		release()
		return nil, nil, &CorruptionError{File: path, Reason: "the file is shorter than its header"}
	}
	if string(data[:len(magic)]) != magic {
		release()
		return nil, nil, &CorruptionError{File: path, Reason: fmt.Sprintf("the file does not start with %q", magic)}
	}
	if v := data[len(magic)]; v < 1 || v > walVersion {
		release()
		return nil, nil, &CorruptionError{File: path, Offset: int64(len(magic)), Reason: fmt.Sprintf("unknown format version %d (this lethe reads 1 to %d)", v, walVersion)}
	}
	r.version = data[len(magic)]
	r.old = r.old || r.version < 3
	if r.version < 4 {
		return data, release, nil
	}
	if len(data) < fileHeaderV4 {
		if tornOK {
			return data, release, nil
		}
		release()
		return nil, nil, &CorruptionError{File: path, Reason: "the file is shorter than its header"}
	}
	if r.m == nil && tornOK && magic == walMagic && len(data) == fileHeaderV4 {
		// The last segment, empty, and no manifest: the store was cut
		// off between starting its first segment and writing its first
		// manifest. The store takes the segment's id.
		copy(r.s.storeID[:], data[fileHeader:])
	}
	if err := r.checkHeader(path, data[fileHeader:fileHeaderV4], n); err != nil {
		release()
		return nil, nil, err
	}
	return data, release, nil
}

// checkHeader checks the store id and the number in the header of a file
// of format 4: the id must be the manifest's, the number n.
func (r *replayer) checkHeader(path string, h []byte, n uint64) error {
	var id storeID
	copy(id[:], h)
	if r.m == nil && id != r.s.storeID {
		return &CorruptionError{File: filepath.Join(filepath.Dir(path), manifestName), Reason: fmt.Sprintf("the directory's MANIFEST is missing (%s names store %s)", filepath.Base(path), id)}
	}
	if id != r.s.storeID {
		return &CorruptionError{File: path, Offset: int64(fileHeader), Reason: fmt.Sprintf("the file belongs to another store (%s; this directory's is %s)", id, r.s.storeID)}
	}
	if got := binary.LittleEndian.Uint64(h[len(id):]); got != n {
		return &CorruptionError{File: path, Offset: int64(fileHeader + len(id)), Reason: fmt.Sprintf("the file's header names file number %d: it was renamed", got)}
	}
	return nil
}

// replaySegment replays one log segment; in the last one a torn end is cut
// off.
func (r *replayer) replaySegment(path string, n uint64, last bool) error {
	_, sealed := r.m.sealedSize(n)
	data, release, err := r.readFile(path, walMagic, n, last && !sealed)
	if err != nil {
		return err
	}
	defer release()
	if size, ok := r.m.sealedSize(n); ok && int64(len(data)) != size {
		return &CorruptionError{File: path, Offset: min(int64(len(data)), size), Reason: fmt.Sprintf("the log segment is %d bytes, MANIFEST records it sealed at %d: it was cut short or replaced", len(data), size)}
	}
	r.sizes[n] = int64(len(data))
	r.reserveAhead()
	if len(data) < fileHeader || len(data) < headerSize(r.version) {
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
		r.counts = countPuts(data[headerSize(r.version):])
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

// loadState makes a container from a snapshot's 'K' frame.
func (r *replayer) loadState(p []byte) error {
	d := decoder{b: p}
	created, settingsSeq := d.uvarint(), d.uvarint()
	text := d.str()
	rule := expiryRule{def: TTL(d.varint()), finalInherit: d.varint(), finalOwn: d.varint()}
	for n := d.uvarint(); n > 0 && !d.bad; n-- {
		rule.past = append(rule.past, pastDefault{cut: d.varint(), def: TTL(d.varint())})
	}
	var positions uint64
	if r.version >= 3 {
		positions = d.uvarint()
	}
	if d.bad || len(d.b) != 0 {
		return errors.New("the container state is malformed")
	}
	c, err := r.container(created, text)
	if err != nil {
		return err
	}
	if rule.def != c.props.DefaultTimeToLive {
		return errors.New("the container state's rule does not match its properties")
	}
	c.rule, c.settingsSeq = rule, settingsSeq
	c.positions.Store(positions)
	r.maxSeq = max(r.maxSeq, created, settingsSeq)
	return nil
}

// loadFeed restores a container's change feed from a snapshot's 'F'
// frame.
func (r *replayer) loadFeed(p []byte) error {
	d := decoder{b: p}
	cid := d.str()
	created, first, next, found := d.uvarint(), d.uvarint(), d.uvarint(), d.varint()
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) || first > next || next-first != n {
		return errors.New("the change feed state is malformed")
	}
	c := r.s.containers[string(cid)]
	if c == nil || c.created != created {
		return errors.New("the change feed state belongs to no container of the snapshot")
	}
	entries := make([]feedEntry, 0, n)
	for lsn := first; lsn < next; lsn++ {
		prev, at, kind, b := d.uvarint(), d.varint(), changeKind(d.byte()), d.str()
		rec, ok := r.record(b)
		if d.bad || kind < changeCreate || kind > changeExpire || !ok || prev >= lsn {
			return errors.New("a change of the change feed state is malformed")
		}
		entries = append(entries, feedEntry{lsn: lsn, prev: prev, at: at, kind: kind, rec: rec})
	}
	if len(d.b) != 0 {
		return errors.New("the change feed state is malformed")
	}
	r.foundUpTo(c, found)
	c.expiry.nextLSN = next
	if c.expiry.feed == nil {
		return nil
	}
	f := newChangeFeed(c.expiry.feed.policy, first)
	for _, e := range entries {
		f.relink(c.hashOf(e.rec), e.rec, "", e.lsn) // the snapshot's prev stays
		f.push(e)
	}
	f.next = next
	f.trim()
	c.expiry.feed = f
	return nil
}

// container makes a container from its logged properties, replacing one of
// the same id.
func (r *replayer) container(created uint64, text []byte) (*Container, error) {
	var props ContainerProperties
	if err := json.Unmarshal(text, &props); err != nil {
		return nil, fmt.Errorf("the container properties are not readable: %v", err)
	}
	props, pp, perr := normalizeProps(props)
	if perr != nil {
		return nil, fmt.Errorf("the container properties are invalid: %s", perr.Message)
	}
	c := newContainer(r.s, props, pp, r.now)
	c.created, c.settingsSeq = created, created
	r.s.containers[props.ID] = c
	r.changes++
	r.reserve(c)
	return c, nil
}

// reserve sizes c's tables for the items it is expected to hold: a
// snapshot's count of them (countPuts) while one loads, or else its
// manifest's, at most as many as the files can hold (onDisk), so that they
// do not grow again and again as they fill.
func (r *replayer) reserve(c *Container) {
	n, ok := r.counts[c.id]
	if !ok {
		n = int(min(int64(r.m.expectedItems(c.id, c.created)), r.onDisk/minRecordBytes))
	}
	if n <= 0 {
		return
	}
	// A shard's share is binomial: room for four standard deviations
	// above the mean keeps all but a few from growing.
	mean := float64(n) / shardCount
	per := int(mean + 4*math.Sqrt(mean) + 1)
	for i := range c.shards {
		c.shards[i].items.reserve(per)
	}
	set := r.set(c)
	for i := range set.shards {
		set.shards[i] = newEntryBuilder(per)
	}
}

// apply replays one logged change.
func (r *replayer) apply(f *frame) error {
	s := r.s
	p := f.payload
	d := decoder{b: p[1:]}
	switch p[0] {
	case frameContainer, frameSettings, frameDrop:
		seq, now, text := d.uvarint(), d.varint(), d.str()
		if d.bad || len(d.b) != 0 {
			return errors.New("the container change is malformed")
		}
		r.maxSeq = max(r.maxSeq, seq)
		switch p[0] {
		case frameContainer:
			var probe struct{ ID string }
			if err := json.Unmarshal(text, &probe); err != nil {
				return fmt.Errorf("the container properties are not readable: %v", err)
			}
			if c := s.containers[probe.ID]; c != nil && c.created == seq {
				return nil // the snapshot holds this container
			}
			c, err := r.container(seq, text)
			if err == nil {
				r.foundUpTo(c, now)
			}
			return err
		case frameDrop:
			if c := s.containers[string(text)]; c != nil && c.created == seq {
				delete(s.containers, c.id)
				r.changes++
			}
			return nil
		}
		var props ContainerProperties
		if err := json.Unmarshal(text, &props); err != nil {
			return fmt.Errorf("the container properties are not readable: %v", err)
		}
		c := s.containers[props.ID]
		if c == nil || seq <= c.settingsSeq {
			return nil
		}
		props, _, perr := normalizeProps(props)
		if perr != nil {
			return fmt.Errorf("the container properties are invalid: %s", perr.Message)
		}
		// The expiries due under the old rule were found, and logged,
		// before the change (findBeforeSettings): up to now under that
		// rule. Those the new rule brought about at once follow it, each
		// found through its entry only (loggedAt): a log cut short among
		// them leaves the rest for finish to find. A feed the change
		// turns on starts now, under the new rule.
		had := c.expiry.feed != nil
		if had {
			r.foundUpTo(c, now)
		}
		if props.DefaultTimeToLive != c.rule.def {
			c.rule = c.rule.changed(props.DefaultTimeToLive, now)
		}
		c.setFeedPolicyLocked(props.ChangeFeedPolicy, now)
		if !had {
			r.foundUpTo(c, now)
		}
		c.props, c.settingsSeq = props, seq
		replaceBudget(&c.own, props.Throughput, props.AutoscaleMaxThroughput, r.now)
		return nil
	case framePut:
		return r.applyPut(f)
	case frameRemove:
		cid := d.str()
		_ = d.byte() // the cause
		pk := d.str()
		if d.bad {
			return errors.New("the item removal is malformed")
		}
		c := s.containers[string(cid)]
		if c == nil {
			return nil
		}
		r.remove(c, string(pk), string(d.b))
		return nil
	case frameBatch:
		return r.applyBatch(&d)
	case framePutFeed, frameRemoveFeed, frameExpire:
		return r.applyFeed(p[0], &d)
	}
	return fmt.Errorf("unknown frame kind %q", p[0])
}

// applyPut replays an item write, decoded by frames.
func (r *replayer) applyPut(f *frame) error {
	if f.rec == "" {
		return errors.New("the item write is malformed")
	}
	c := f.c // as prefetch found it, if no container was made or dropped since
	if c == nil || r.changes != r.prefetched {
		if c = r.s.containers[string(f.cid)]; c == nil {
			return nil
		}
	}
	if tag := f.rec.etag(); tag > r.maxTag {
		r.maxTag = tag
	}
	if c == f.c {
		r.putIn(c, f.si, f.h, f.rec)
	} else {
		r.put(c, f.rec)
	}
	return nil
}

// sawSeqs folds the highest ETag of the item writes replayed into maxSeq.
func (r *replayer) sawSeqs() {
	if r.maxTag != "" {
		seq, _ := strconv.ParseUint(r.maxTag, 16, 64) // checked as it was read (wellFormed)
		r.maxSeq = max(r.maxSeq, seq)
	}
}

// applyFeed replays a change of a container with a change feed (after its
// kind byte): the item change, and the feed's entry.
func (r *replayer) applyFeed(kind byte, d *decoder) error {
	cid := d.str()
	var (
		what changeKind
		why  cause
		now  int64
		at   int64
	)
	switch kind {
	case framePutFeed:
		what = changeKind(d.byte())
	case frameRemoveFeed:
		why, now = cause(d.byte()), d.varint()
		what = changeDelete
	case frameExpire:
		now, at = d.varint(), d.varint()
		what = changeExpire
	}
	rec, ok := r.record(d.b)
	if d.bad || !ok || (kind == framePutFeed && what != changeCreate && what != changeReplace) {
		return errors.New("the change of a container with a change feed is malformed")
	}
	c := r.s.containers[string(cid)]
	if c == nil {
		return nil
	}
	switch kind {
	case framePutFeed:
		r.maxSeq = max(r.maxSeq, rec.seq())
		r.put(c, rec)
		if at = rec.written(); at < r.foundMax {
			r.owePassed(c, rec)
		}
	case frameRemoveFeed:
		r.remove(c, rec.pk(), rec.id())
		if why == causePurge {
			return nil
		}
		at = now
	case frameExpire:
		r.foundUpTo(c, now)
		r.foundThrough(c, rec)
		if len(r.owed) > 0 {
			r.paid(c, rec)
		}
	}
	if f := c.expiry.feed; f != nil {
		f.add(what, at, rec, "", c.hashOf(rec))
	}
	return nil
}

// owePassed notes the expiry of rec, a version just replayed to c, if the
// version lies behind the fronts up to which c's expiries had been found
// (foundUpTo, foundThrough): the store's expiry watch had looked past its
// place before it was written, and reported its expiry right after its write
// (reportPassedLocked), stamped no earlier than the watch's instant, which
// the log then holds next (logPassedLocked), or held and wrote first when
// it healed (wal.heal). Only a log that failed for good, or a store that
// stopped, before it was durable lacks it, and ends there: finish reports
// it then (reportOwed), where the feed had it, for the watch, resumed at
// that instant, never finds it.
//
// Its callers call it only for a version written before foundMax: one
// written after expires after it too, and owes nothing.
func (r *replayer) owePassed(c *Container, rec record) {
	found, ok := r.found[c]
	if !ok || c.expiry.feed == nil {
		return
	}
	e, own, ok := entryFor(rec)
	if !ok {
		return
	}
	front := found.inherit
	if own {
		front = found.own
	}
	if lessEntry(front, e) {
		return
	}
	if r.owed == nil {
		r.owed = make(map[*Container][]expiryNote)
	}
	at := max(c.rule.expiresAt(rec.ttl(), rec.written()), found.at)
	r.owed[c] = append(r.owed[c], expiryNote{rec: rec, at: at})
}

// paid notes that the log holds the expiry of rec, a version of c.
func (r *replayer) paid(c *Container, rec record) {
	r.owed[c] = slices.DeleteFunc(r.owed[c], func(e expiryNote) bool { return e.rec.seq() == rec.seq() })
}

// reportOwed reports to c's change feed the expiries that the log lacks
// (owePassed), of the versions still c's at the end of the log, for
// logRecovered to log. The caller holds c.expiry.mu.
func (r *replayer) reportOwed(c *Container) {
	for _, e := range r.owed[c] {
		i, h := c.shardIndex(e.rec.pk(), e.rec.id())
		if c.shards[i].items.get(e.rec.pk(), e.rec.id(), h) != e.rec {
			continue // changed since: the log holds the expiry before the change (wal.heal), or an older lethe's log never will
		}
		e.lsn = c.expiry.feed.add(changeExpire, e.at, e.rec, "", h)
		if r.recovered == nil {
			r.recovered = make(map[*Container][]expiryNote)
		}
		r.recovered[c] = append(r.recovered[c], e)
	}
}

// watchFound is how far a container's expiry watch had got, as the log
// tells: every expiry up to at had been found, and every entry of the
// expiry index at or before a front (expiryWatch's) reported.
type watchFound struct {
	at           int64
	inherit, own expiryEntry
}

// foundUpTo records that c's expiries up to now had been found, under c's
// rule as it stands, if now is later than the instant recorded: the fronts
// move to now's cutoffs. A frame of the same instant moves nothing
// (loggedAt: the frames of a look but its last carry the watch's instant).
func (r *replayer) foundUpTo(c *Container, now int64) {
	if r.found == nil {
		r.found = make(map[*Container]watchFound)
	}
	f, ok := r.found[c]
	if ok && now <= f.at {
		return
	}
	ci, co := cutoffs(&c.rule, now)
	if !ok {
		f.inherit, f.own = ci, co
	}
	f.at, f.inherit, f.own = now, maxEntry(f.inherit, ci), maxEntry(f.own, co)
	r.found[c] = f
	r.foundMax = max(r.foundMax, now)
}

// foundThrough records that c's expiry watch had reported the expiry of
// rec: its front in rec's tree stood at rec's entry at least. The caller
// has called foundUpTo for c.
func (r *replayer) foundThrough(c *Container, rec record) {
	e, own, ok := entryFor(rec)
	if !ok {
		return
	}
	f := r.found[c]
	if own {
		f.own = maxEntry(f.own, e)
	} else {
		f.inherit = maxEntry(f.inherit, e)
	}
	r.found[c] = f
	// A version written after e's instant has its entry after e (an
	// entry's instant is its last write, or later).
	if e.at < math.MaxInt64 {
		r.foundMax = max(r.foundMax, e.at+1)
	}
}

// maxEntry returns the later of two entries (lessEntry).
func maxEntry(a, b expiryEntry) expiryEntry {
	if lessEntry(a, b) {
		return b
	}
	return a
}

// applyBatch replays a transactional batch's frame (after its kind byte):
// every change is read and checked before any is made, so a batch is
// replayed whole or not at all.
func (r *replayer) applyBatch(d *decoder) error {
	cid := d.str()
	seq, n := d.uvarint(), d.uvarint()
	if d.bad || n > uint64(len(d.b)) {
		return errors.New("the transactional batch is malformed")
	}
	type change struct {
		rec     record // the item written, or "" for a removal of (pk, id)
		pk, id  string
		removed bool
		kind    changeKind // for a change feed: what the change was (0: none)
		at      int64      // and when
	}
	changes := make([]change, 0, n)
	for range n {
		switch d.byte() {
		case framePut:
			rec, ok := r.record(d.str())
			if d.bad || !ok {
				return errors.New("an item write in the transactional batch is malformed")
			}
			r.maxSeq = max(r.maxSeq, rec.seq())
			changes = append(changes, change{rec: rec})
		case frameRemove:
			_ = d.byte() // the cause
			pk, id := d.str(), d.str()
			if d.bad {
				return errors.New("an item removal in the transactional batch is malformed")
			}
			changes = append(changes, change{pk: string(pk), id: string(id), removed: true})
		case framePutFeed:
			kind := changeKind(d.byte())
			rec, ok := r.record(d.str())
			if d.bad || !ok || (kind != changeCreate && kind != changeReplace) {
				return errors.New("an item write in the transactional batch is malformed")
			}
			r.maxSeq = max(r.maxSeq, rec.seq())
			changes = append(changes, change{rec: rec, kind: kind, at: rec.written()})
		case frameRemoveFeed:
			why, now := cause(d.byte()), d.varint()
			old, ok := r.record(d.str())
			if d.bad || !ok {
				return errors.New("an item removal in the transactional batch is malformed")
			}
			ch := change{rec: old, pk: old.pk(), id: old.id(), removed: true, at: now}
			if why != causePurge {
				ch.kind = changeDelete
			}
			changes = append(changes, ch)
		default:
			return errors.New("the transactional batch holds a change of an unknown kind")
		}
	}
	if d.bad || len(d.b) != 0 {
		return errors.New("the transactional batch is malformed")
	}
	r.maxSeq = max(r.maxSeq, seq)
	c := r.s.containers[string(cid)]
	if c == nil {
		return nil
	}
	for _, ch := range changes {
		if f := c.expiry.feed; f != nil && ch.kind != 0 {
			f.add(ch.kind, ch.at, ch.rec, "", c.hashOf(ch.rec))
		}
		if ch.removed {
			r.remove(c, ch.pk, ch.id)
			continue
		}
		r.put(c, ch.rec)
		if ch.kind != 0 && ch.at < r.foundMax {
			r.owePassed(c, ch.rec)
		}
	}
	return nil
}

// put replays an item write: rec replaces the item's version in c, and
// c's positions go on after its.
func (r *replayer) put(c *Container, rec record) {
	i, h := c.shardIndex(rec.pk(), rec.id())
	r.putIn(c, i, h, rec)
}

// putIn is put in c's shard of index i, with the hash bits h of rec's
// item.
func (r *replayer) putIn(c *Container, i int, h uint32, rec record) {
	set := r.set(c)
	if old := c.shards[i].items.exchange(h, rec); old != "" {
		set.gone(old, i)
	}
	set.shards[i].add(rec)
	if p := rec.pos(); p > c.positions.Load() {
		c.positions.Store(p)
	} else if p == 0 {
		r.unplaced = true
	}
}

// remove replays an item's removal from c.
func (r *replayer) remove(c *Container, pk, id string) {
	i, h := c.shardIndex(pk, id)
	if old := c.shards[i].items.take(pk, id, h); old != "" {
		r.set(c).gone(old, i)
	}
}

// liveSet is what recovery gathers of a container's items for its expiry
// index as it replays: the entry of every record put, by shard (made
// while the record is in the cache, so that finish need not read the
// records again), and the records since replaced or removed, whose
// entries no longer count.
type liveSet struct {
	shards [shardCount]entryBuilder // their bytes count the records present
	stale  map[*byte]struct{}
}

// bytes returns the JSON size of the records present in a shard.
func (set *liveSet) bytes(shard int) int64 { return set.shards[shard].bytes }

// set returns c's liveSet.
func (r *replayer) set(c *Container) *liveSet {
	if r.last.c == c {
		return r.last.set
	}
	set := r.sets[c]
	if set == nil {
		if r.sets == nil {
			r.sets = make(map[*Container]*liveSet)
		}
		set = &liveSet{}
		r.sets[c] = set
	}
	r.last.c, r.last.set = c, set
	return set
}

// gone takes out a record put before in the shard of index shard,
// replaced or removed since.
func (set *liveSet) gone(old record, shard int) {
	set.shards[shard].bytes -= int64(old.jsonLen())
	if _, _, ok := entryFor(old); ok {
		if set.stale == nil {
			set.stale = make(map[*byte]struct{})
		}
		set.stale[unsafe.StringData(string(old))] = struct{}{}
	}
}

// sorted returns the entries of the records present, each shard's of each
// kind sorted.
func (set *liveSet) sorted() (es shardEntries) {
	isStale := func(e expiryEntry) bool {
		_, ok := set.stale[unsafe.StringData(string(e.rec))]
		return ok
	}
	for i := range set.shards {
		inherit, own := set.shards[i].kinds()
		if len(set.stale) > 0 {
			inherit, own = slices.DeleteFunc(inherit, isStale), slices.DeleteFunc(own, isStale)
		}
		es[i] = [2][]expiryEntry{inherit, own}
	}
	set.stale = nil
	// Half the shards on each core, each half through one buffer.
	sortHalf := func(first int) {
		var buf []expiryEntry
		for i := first; i < shardCount; i += 2 {
			buf = sortEntries(es[i][0], buf)
			buf = sortEntries(es[i][1], buf)
		}
	}
	n := es.count(0) + es.count(1)
	both(n/2, n/2, func() { sortHalf(0) }, func() { sortHalf(1) })
	return es
}

// both runs f and g, which share nothing, on two goroutines at once when
// they are large enough to pay for it: m and n say how large.
func both(m, n int, f, g func()) {
	if min(m, n) < 1<<12 {
		f()
		g()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	g()
	<-done
}

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

// finish builds the expiry indexes, drops the items that have expired, and
// lists the containers. Two items of a container that share a write
// sequence number and an instant, which the store never writes, would share
// one place in its expiry index: finish refuses them, naming dir, since no
// one file is at fault.
func (r *replayer) finish(dir string) error {
	s := r.s
	r.place()
	for _, c := range s.containers {
		set := r.sets[c]
		if set == nil {
			set = &liveSet{}
		}
		// The entries were made as the records were put: sorted, the
		// expired items' come first, so no record is read again but
		// theirs.
		es := set.sorted()
		var dups [2]record
		both(es.count(0), es.count(1), func() { dups[0] = firstDup(&es, 0) }, func() { dups[1] = firstDup(&es, 1) })
		for _, dup := range dups {
			if dup != "" {
				return dupError(dir, c, dup)
			}
		}
		if c.expiry.feed != nil {
			r.findExpiries(c, &es, set)
		}
		ci, co := cutoffs(&c.rule, r.now)
		for i := range es {
			es[i][0] = r.dropExpired(c, set, i, es[i][0], ci)
			es[i][1] = r.dropExpired(c, set, i, es[i][1], co)
		}
		items := tableItems(c)
		c.expiry.mu.Lock()
		c.resetExpiryIndex()
		c.addSortedEntries(&es, set.bytes)
		if c.expiry.watch.on {
			c.expiry.watch.due = c.nextUnreportedLocked()
			c.publishDueLocked()
		}
		c.expiry.mu.Unlock()
		s.recovery.Items += items
		r.items = append(r.items, itemCount{ID: c.id, Created: c.created, N: int(items)})
	}
	slices.SortFunc(r.items, func(a, b itemCount) int { return strings.Compare(a.ID, b.ID) })
	r.sets, r.last.c, r.last.set = nil, nil, nil
	s.relistLocked()
	s.seq.Store(r.maxSeq)
	return nil
}

// sortEntries sorts es (lessEntry) by a radix sort of their instants,
// ties by write sequence: recovery sorts a million entries this way in a
// fraction of the time a comparison sort takes. The sort works through
// buf, grown to len(es) if need be, and returns it for the next sort.
func sortEntries(es, buf []expiryEntry) []expiryEntry {
	const bits = 11 // a digit: its counts fit in the cache
	if len(es) < 1<<bits {
		slices.SortFunc(es, compareEntries)
		return buf
	}
	lo, hi := es[0].at, es[0].at
	for _, e := range es {
		lo, hi = min(lo, e.at), max(hi, e.at)
	}
	key := func(e *expiryEntry) uint64 { return uint64(e.at) - uint64(lo) }
	passes := (mathbits.Len64(uint64(hi)-uint64(lo)) + bits - 1) / bits
	counts := make([][1 << bits]int, passes)
	for i := range es {
		k := key(&es[i])
		for p := range counts {
			counts[p][k>>(p*bits)&(1<<bits-1)]++
		}
	}
	if cap(buf) < len(es) {
		buf = make([]expiryEntry, len(es))
	}
	src, dst := es, buf[:len(es)]
	for p := range counts {
		next := &counts[p]
		sum := 0
		for d, n := range next {
			next[d], sum = sum, sum+n
		}
		for i := range src {
			d := key(&src[i]) >> (p * bits) & (1<<bits - 1)
			dst[next[d]] = src[i]
			next[d]++
		}
		src, dst = dst, src
	}
	if passes%2 == 1 {
		copy(es, src)
	}
	for i := 0; i < len(es); {
		j := i + 1
		for j < len(es) && es[j].at == es[i].at {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(es[i:j], compareEntries)
		}
		i = j
	}
	return buf
}

func compareEntries(a, b expiryEntry) int {
	switch {
	case lessEntry(a, b):
		return -1
	case lessEntry(b, a):
		return 1
	}
	return 0
}

// firstDup returns a record of es's entries of one kind (each shard's
// sorted) that shares its entry with another, in its shard or any other,
// or "": the shards' trees must merge into one order (expiry.go). It
// merges the shards' lists (runMerge).
func firstDup(es *shardEntries, kind int) (dup record) {
	var runs [shardCount][]expiryEntry
	for i := range es {
		runs[i] = es[i][kind]
	}
	first := func(run []expiryEntry) mergeKey {
		if len(run) == 0 {
			return doneKey
		}
		return mergeKey(run[0])
	}
	var m runMerge
	m.start(shardCount, func(i int) mergeKey { return first(runs[i]) })
	var prev mergeKey
	for n := 0; ; n++ {
		r, key, ok := m.next()
		if !ok {
			return ""
		}
		if n > 0 && !prev.less(key) {
			return runs[r][0].rec
		}
		prev = key
		runs[r] = runs[r][1:]
		m.advance(first(runs[r]))
	}
}

// dropExpired removes from c's shard of index i the items whose entries,
// es sorted, are expired by cutoff (a prefix of es), and returns the rest
// of es.
func (r *replayer) dropExpired(c *Container, set *liveSet, i int, es []expiryEntry, cutoff expiryEntry) []expiryEntry {
	n, _ := slices.BinarySearchFunc(es, cutoff, func(e, cutoff expiryEntry) int {
		if lessEntry(e, cutoff) {
			return -1
		}
		return 1
	})
	for _, e := range es[:n] {
		_, h := c.shardIndex(e.rec.pk(), e.rec.id())
		c.shards[i].items.remove(e.rec.pk(), e.rec.id(), h)
		set.shards[i].bytes -= int64(e.rec.jsonLen())
	}
	c.purged.Add(int64(n))
	r.s.recovery.Expired += int64(n)
	return es[n:]
}

// tableItems returns the number of items c's tables hold.
func tableItems(c *Container) int64 {
	var n int64
	for i := range c.shards {
		n += int64(c.shards[i].items.n)
	}
	return n
}

// findExpiries resumes the expiry watch of a container with a change feed
// where it stood when the store stopped, and finds the expiries since, up
// to the instant of recovery, before the items that expired are dropped:
// no expiry is lost to a restart, and none is found twice. es are the
// entries of all its items, sorted; set gathered them.
func (r *replayer) findExpiries(c *Container, es *shardEntries, set *liveSet) {
	c.expiry.mu.Lock()
	defer c.expiry.mu.Unlock()
	r.reportOwed(c)
	c.addSortedEntries(es, set.bytes)
	w := &c.expiry.watch
	if f, ok := r.found[c]; ok {
		w.at, w.inherit, w.own = f.at, f.inherit, f.own
	} else {
		w.at = 0
		w.inherit, w.own = cutoffs(&c.rule, 0)
	}
	w.notify = true // collect what is found in w.found
	if c.findExpiriesLocked(r.now, true) > 0 {
		if r.recovered == nil {
			r.recovered = make(map[*Container][]expiryNote)
		}
		r.recovered[c] = append(r.recovered[c], w.found...)
	}
	w.notify, w.found = false, nil
}

// dupError is the error of two items of c that share a write sequence
// number and an instant.
func dupError(dir string, c *Container, dup record) error {
	return &CorruptionError{File: dir, Reason: fmt.Sprintf("the item %q and another of container %q share the write sequence number %d", dup.id(), c.id, dup.seq())}
}

// logRecovered logs the expiries that recovery found (finish), now that
// the log is open, so that the next recovery finds them in it.
func (s *Store) logRecovered(recovered map[*Container][]expiryNote, now int64) error {
	for c, found := range recovered {
		for _, e := range found {
			if _, err := s.wal.addExpire(c.id, now, e.at, e.rec); err != nil {
				return err
			}
		}
	}
	return nil
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
