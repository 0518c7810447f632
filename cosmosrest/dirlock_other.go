//go:build !unix

package cosmosrest

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/lethedb/lethe"
)

// lockDir takes Config.Dir for one handler. Without flock, the LOCK file is
// created exclusively and removed on Close: a handler that crashed leaves
// it behind, and it must then be removed by hand.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, lethe.ErrLocked
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
