//go:build unix

package cosmosrest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/lethedb/lethe"
)

// lockDir takes Config.Dir for one handler: an exclusive flock on its LOCK
// file. Each database's store locks its own directory too; this lock also
// covers creating databases, which another handler on the same directory
// would race with.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, lethe.ErrLocked
		}
		return nil, err
	}
	return f, nil
}

// unlockDir lets go of a directory lockDir took.
func unlockDir(f *os.File) error { return f.Close() }
