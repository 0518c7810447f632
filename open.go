package lethe

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lethedb/lethe/internal/dirlock"
	"github.com/lethedb/lethe/internal/vfs"
)

// Opening a durable store's directory: openDir takes it, recovers its
// contents (recover.go) and starts the log, or, on a disk that takes no
// writes, a read-only store that resumes once it does.

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
	readOnly, err := s.startDir()
	if err != nil {
		lock.Close()
		var ce *CorruptionError
		if errors.As(err, &ce) {
			return err
		}
		return fmt.Errorf("lethe: Open: %w", err)
	}
	s.dirLock = lock
	s.logRecovery(readOnly)
	go s.checkpointer.run()
	return nil
}

// startDir recovers the contents of the directory, held, and starts the
// log: on a disk that takes no writes (cannotWrite), one that refuses
// them until it does, and returns why.
func (s *Store) startDir() (readOnly, err error) {
	start := time.Now()
	m, err := readManifest(s.opts.fs, s.opts.Dir)
	if err != nil {
		return nil, err
	}
	s.storeID = newStoreID()
	if m != nil {
		s.storeID = m.ID()
	}
	r, next, snapSize, err := s.recover(s.opts.Dir, m, false)
	if err != nil {
		return nil, err
	}
	r.reading = recordArena{} // its blocks left over: a store that opens read-only keeps r
	s.recovery.Duration = time.Since(start)
	s.checkpointer = newCheckpointer(s, snapSize)
	if r.readOnly == nil {
		if err := s.startLog(r, next); err != nil {
			if !cannotWrite(err) {
				return nil, err
			}
			r.readOnly = err
		}
	}
	if r.readOnly != nil {
		// The disk is full (or read-only): the store serves what it
		// recovered, and refuses writes, rather than nothing at all,
		// until the disk takes writes again (wal.heal): then it does
		// what Open could not.
		s.wal = s.newLog(next).startReadOnly(r.readOnly, &readOnlyOpen{s: s, r: r})
		return r.readOnly, nil
	}
	if err := s.logRecovered(r.recovered, r.now); err != nil {
		s.wal.close()
		return nil, err
	}
	return nil, nil
}

// newLog makes the store's log, to start with the segment seg.
func (s *Store) newLog(seg uint64) *wal {
	return newWAL(s.opts.fs, s.opts.Dir, s.storeID, seg, s.opts.Sync, s.checkpointer.grew, s.opts.Logger)
}

// startLog starts the store's log in the new segment next, and writes the
// manifest of the directory recovered (r) that names it. If the manifest
// cannot be written, the segment, still empty, goes, and the store has no
// log.
func (s *Store) startLog(r *replayer, next uint64) error {
	w, err := openWAL(s.opts.fs, s.opts.Dir, s.storeID, next, s.opts.Sync, s.checkpointer.grew, s.opts.Logger)
	if err != nil {
		return err
	}
	s.wal = w
	// The new segment is durable: the manifest names it, seals the
	// segments recovered, and so says what the directory must hold from
	// now on.
	if err := s.writeManifest(r.manifest(next)); err != nil {
		w.close()
		s.wal = nil
		s.opts.fs.Remove(filepath.Join(s.opts.Dir, segmentName(next)))
		return err
	}
	return nil
}

// readOnlyOpen finishes the Open of a store that opened read-only (r is
// what it recovered), once its disk takes writes: it is the log's resumer.
type readOnlyOpen struct {
	s *Store
	r *replayer
}

// resume repairs the end of the log that recovery could not, creates the
// segment n and writes the manifest that names it.
func (o *readOnlyOpen) resume(n uint64) (vfs.File, error) {
	s, r := o.s, o.r
	if r.repair != nil {
		if err := r.repair(); err != nil {
			return nil, err
		}
		r.repair = nil
	}
	f, err := createLogFile(s.opts.fs, s.opts.Dir, s.storeID, n, vfs.File.Sync)
	if err != nil {
		return nil, err
	}
	if err := s.writeManifest(r.manifest(n)); err != nil {
		f.Close()
		s.opts.fs.Remove(filepath.Join(s.opts.Dir, segmentName(n)))
		return nil, err
	}
	return f, nil
}

// resumed logs the expiries recovery found (as logRecovered does), under
// the log's lock.
func (o *readOnlyOpen) resumed() {
	for c, found := range o.r.recovered {
		for _, e := range found {
			o.s.wal.appendExpireLocked(c.id, o.r.now, e.at, e.rec)
		}
	}
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

// cannotWrite reports whether err says that the disk takes no writes: it
// is full (or over quota), or mounted read-only. A store that meets it at
// Open opens read-only.
func cannotWrite(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
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
