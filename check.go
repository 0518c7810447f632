package lethe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/lethedb/lethe/internal/dirlock"
)

// Check verifies the durable store in dir as Open would recover it, and
// changes nothing: it reads the newest snapshot and every log segment
// after it, checking every frame's checksum and every record, and returns
// what Open would do (RecoveryInfo: the snapshot and segments it would
// replay, the items it would bring back and drop as expired by the
// system clock, a torn end of the log it would cut off, the unfinished
// snapshots it would remove). Damage Open would refuse is the
// *CorruptionError Open would fail with. A directory in use by an open
// store (one that has its LOCK file locked) fails with ErrLocked: what a
// running store is writing cannot be checked. Check holds the store's
// items in memory while it runs, as Open does, but not the room Open
// reserves ahead for their records: only what they take.
func Check(dir string) (RecoveryInfo, error) {
	if _, err := os.Stat(dir); err != nil {
		return RecoveryInfo{}, fmt.Errorf("lethe: Check: %w", err)
	}
	// The lock is taken only if it exists: Check creates no file.
	if _, err := os.Stat(filepath.Join(dir, "LOCK")); err == nil {
		lock, err := dirlock.Lock(dir)
		if err != nil {
			if errors.Is(err, ErrLocked) {
				return RecoveryInfo{}, fmt.Errorf("%w: %s", ErrLocked, dir)
			}
			return RecoveryInfo{}, fmt.Errorf("lethe: Check: %w", err)
		}
		defer dirlock.Unlock(lock)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return RecoveryInfo{}, fmt.Errorf("lethe: Check: %w", err)
	}
	o, err := Options{Dir: dir, Reaper: ReaperOptions{Disabled: true}}.withDefaults()
	if err != nil {
		return RecoveryInfo{}, err
	}
	s := &Store{clock: newStoreClock(nil), opts: o, containers: make(map[string]*Container)}
	start := time.Now()
	m, err := readManifest(o.fs, dir)
	if err == nil {
		if m != nil {
			s.storeID = m.ID()
		}
		_, _, _, err = s.recover(dir, m, true)
	}
	if err != nil {
		var ce *CorruptionError
		if errors.As(err, &ce) {
			return s.recovery, err
		}
		return s.recovery, fmt.Errorf("lethe: Check: %w", err)
	}
	s.recovery.Duration = time.Since(start)
	return s.recovery, nil
}
