//go:build unix

package dirlock

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// Lock takes the directory dir for one owner: an exclusive flock on its
// LOCK file, which another open file (in this process or another) cannot
// take too. The lock goes with the process.
func Lock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, err
	}
	return f, nil
}

// Unlock lets go of a directory Lock took.
func Unlock(f *os.File) error {
	return f.Close() // closing the file releases its flock
}
