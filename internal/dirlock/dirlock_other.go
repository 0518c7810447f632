//go:build !unix

package dirlock

import (
	"errors"
	"os"
	"path/filepath"
)

// Lock takes the directory dir for one owner. Without flock, the LOCK
// file is created exclusively and removed on Close: an owner that crashed
// leaves it behind, and it must then be removed by hand.
func Lock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, ErrLocked
	}
	return f, err
}

// Unlock lets go of a directory Lock took.
func Unlock(f *os.File) error {
	name := f.Name()
	err := f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	return err
}
