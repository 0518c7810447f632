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
