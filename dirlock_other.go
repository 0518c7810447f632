//go:build !unix

package lethe

import (
	"errors"
	"os"
	"path/filepath"
)

// lockDir takes the directory dir for one store. Without flock, the LOCK
// file is created exclusively and removed on Close: a store that crashed
// leaves it behind, and it must then be removed by hand.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, ErrLocked
	}
	return f, err
}

// unlockDir lets go of a directory lockDir took.
func unlockDir(f *os.File) error {
	name := f.Name()
	err := f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	return err
}
