// Package vfs is the file-system seam of lethe's durable layer: the few
// operations that the write-ahead log, snapshots, the manifest, recovery
// and the directory lock use, behind one interface; the REST front's data
// directory (cosmosrest: database directories, database.json, users.json)
// goes through it too. OS is the real file system,
// and every store uses it unless a test gives another: the file systems of
// the package vfstest keep only what was synced and forget the rest at a
// simulated power cut, or fail the Nth operation of a kind with ENOSPC or
// EIO.
//
// The seam is internal on purpose: it is a testing device, not a feature,
// and so not part of lethe's API (lethe.Options has no exported field for
// it; the tests set one through an internal hook).
package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/lethedb/lethe/internal/dirlock"
)

// File is a file opened for writing. Files are written from the start or
// appended to; they are read whole, through FS.Map.
type File interface {
	// Write writes p at the file's offset, which it advances. A short
	// write returns an error.
	Write(p []byte) (n int, err error)
	// Sync makes the file's contents durable (fsync); not its name, which
	// is its directory's (FS.SyncDir).
	Sync() error
	// Truncate changes the file's size; the offset does not move.
	Truncate(size int64) error
	// Close closes the file.
	Close() error
	// Gone reports whether the file no longer has the name it was opened
	// by: it was removed, or another file was renamed over it. What is
	// written to it then is lost with it.
	Gone() (bool, error)
}

// FS is a file system: the operations of the durable layer. Names are
// paths as the os package takes them.
type FS interface {
	// OpenFile opens a file for writing, with the flags of os.OpenFile
	// (O_WRONLY or O_RDWR, with O_CREATE, O_EXCL, O_TRUNC).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Map returns a file's whole contents, and a function that releases
	// them; nothing read from them may be kept after release. The real
	// file system maps the file where it can, so a page it cannot read
	// faults (the caller arranges to recover from that).
	Map(name string) (data []byte, release func(), err error)
	// Size returns a file's size in bytes, without reading it: what Map
	// would return, as long as no one writes the file meanwhile.
	Size(name string) (int64, error)
	// List returns the names in a directory, sorted.
	List(dir string) ([]string, error)
	// Rename renames a file; within one directory, it replaces the file
	// at newname atomically.
	Rename(oldname, newname string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// MkdirAll creates a directory and the directories above it that do
	// not exist.
	MkdirAll(dir string, perm fs.FileMode) error
	// SyncDir makes the names in a directory durable: the files created,
	// renamed and removed in it.
	SyncDir(dir string) error
	// Lock takes the directory for one owner (internal/dirlock), failing
	// with dirlock.ErrLocked when another has it; closing the result lets
	// it go.
	Lock(dir string) (io.Closer, error)
}

// OS is the operating system's file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // not a nil *os.File in a non-nil File
	}
	return osFile{f}, nil
}

type osFile struct{ *os.File }

// Gone looks at the file's link count: a removed file, or one another was
// renamed over, has none left (one fstat, no path lookup).
func (f osFile) Gone() (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Nlink == 0, nil
	}
	return false, nil
}

func (osFS) Map(name string) ([]byte, func(), error) { return mapFile(name) }

func (osFS) Size(name string) (int64, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return 0, err
	}
	if fi.IsDir() {
		return 0, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	return fi.Size(), nil
}

func (osFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	slices.Sort(names)
	return names, nil
}

func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) MkdirAll(dir string, perm fs.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (osFS) Lock(dir string) (io.Closer, error) {
	f, err := dirlock.Lock(dir)
	if err != nil {
		return nil, err
	}
	return osLock{f}, nil
}

type osLock struct{ f *os.File }

func (l osLock) Close() error { return dirlock.Unlock(l.f) }

// MkdirAllDurable creates dir and the directories above it that do not
// exist, as MkdirAll does, and syncs the parent of each directory it
// created, so that the new directories' names are durable: a file synced in
// a new directory is not found after a power cut if the directory's own
// name was lost.
func MkdirAllDurable(fsys FS, dir string, perm fs.FileMode) error {
	dir = filepath.Clean(dir)
	var missing []string // the directories to create, deepest first
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fsys.List(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := fsys.MkdirAll(dir, perm); err != nil {
		return err
	}
	for _, d := range slices.Backward(missing) {
		if err := fsys.SyncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// SetOptionsFS gives opts, a *lethe.Options, the file system fsys for the
// durable store it opens. Package lethe sets it when it is initialized; it
// is the one way to reach that unexported option, for lethe's tests and
// the packages of this module that open stores for their own tests.
var SetOptionsFS func(opts any, fsys FS)

// SetConfigFS gives cfg, a *cosmosrest.Config, the file system fsys for its
// data directory (and the stores in it). Package cosmosrest sets it when
// it is initialized, for its tests.
var SetConfigFS func(cfg any, fsys FS)

// WriteFile writes data to the file name (created, or truncated) and syncs
// it; not its name (SyncDir).
func WriteFile(fsys FS, name string, data []byte) error {
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFileAtomic replaces the file name with data, durably and all at
// once: it writes and syncs name.tmp, renames it over name and syncs the
// directory. After a crash name holds the old contents or the new, whole.
// A failure removes name.tmp and leaves name as it was.
func WriteFileAtomic(fsys FS, name string, data []byte) error {
	tmp := name + ".tmp"
	err := WriteFile(fsys, tmp, data)
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err != nil {
		fsys.Remove(tmp)
		return err
	}
	return fsys.SyncDir(filepath.Dir(name))
}

// ReadFile returns a copy of the whole contents of the file name.
func ReadFile(fsys FS, name string) ([]byte, error) {
	data, release, err := fsys.Map(name)
	if err != nil {
		return nil, err
	}
	defer release()
	return slices.Clone(data), nil
}

// RemoveAll removes name and, if it is a directory, everything in it. A
// name that does not exist is no error.
func RemoveAll(fsys FS, name string) error {
	if names, err := fsys.List(name); err == nil {
		for _, n := range names {
			if err := RemoveAll(fsys, filepath.Join(name, n)); err != nil {
				return err
			}
		}
	}
	if err := fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
