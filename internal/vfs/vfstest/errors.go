package vfstest

import (
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/lethedb/lethe/internal/vfs"
)

// Op is a kind of file-system operation that ErrorFS counts and fails.
type Op int

// The kinds of operation.
const (
	OpCreate   Op = iota // OpenFile with O_CREATE
	OpWrite              // File.Write
	OpSync               // File.Sync
	OpTruncate           // File.Truncate
	OpSyncDir            // FS.SyncDir
	OpRename             // FS.Rename
	OpRemove             // FS.Remove
	OpMap                // FS.Map
	OpSize               // FS.Size
	opCount
)

var opNames = [opCount]string{"create", "write", "sync", "truncate", "syncdir", "rename", "remove", "map", "size"}

// String returns the operation's name, such as "sync".
func (o Op) String() string {
	if o >= 0 && o < opCount {
		return opNames[o]
	}
	return "op?"
}

// Fault makes an operation fail.
type Fault struct {
	Op Op
	// N is which operation of the kind fails, counted from when the fault
	// is injected: 1 the next one.
	N int
	// Err is the error it fails with, such as syscall.ENOSPC or
	// syscall.EIO.
	Err error
	// Short makes a failing write write half its bytes first.
	Short bool
	// Sticky makes every operation of the kind after the Nth fail too.
	Sticky bool
}

// ErrorFS is a file system that fails the operations its faults name and
// passes the others to the file system it wraps. It is safe for concurrent
// use.
type ErrorFS struct {
	inner vfs.FS

	mu     sync.Mutex
	faults []*armed
	counts [opCount]int
	full   bool
	failed [opCount]int
	holds  []*Hold
}

// Hold is an operation held up (ErrorFS.Hold): it does not start until
// Release.
type Hold struct {
	op       Op
	at       int
	entered  chan struct{}
	released chan struct{}
	once     sync.Once
}

// Entered is closed once the held operation has been called and is
// waiting.
func (h *Hold) Entered() <-chan struct{} { return h.entered }

// Release lets the held operation go on (and is a no-op after the first
// call).
func (h *Hold) Release() { h.once.Do(func() { close(h.released) }) }

type armed struct {
	Fault
	at int // the count of its kind at which it fires
}

// NewErrorFS returns an ErrorFS over inner, with no faults.
func NewErrorFS(inner vfs.FS) *ErrorFS { return &ErrorFS{inner: inner} }

// Inject adds a fault.
func (e *ErrorFS) Inject(f Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = append(e.faults, &armed{Fault: f, at: e.counts[f.Op] + max(f.N, 1)})
}

// Hold holds up the next operation of the kind: it waits, before it
// starts, until the returned Hold is released. A test looks at the store
// meanwhile (a write waiting for its fsync, say).
func (e *ErrorFS) Hold(op Op) *Hold {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := &Hold{op: op, at: e.counts[op] + 1, entered: make(chan struct{}), released: make(chan struct{})}
	e.holds = append(e.holds, h)
	return h
}

// SetFull makes the disk full (every write and every creation fails with
// ENOSPC) or frees it; it clears the injected faults.
func (e *ErrorFS) SetFull(full bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.full, e.faults = full, nil
}

// Count returns how many operations of the kind were made (failed ones
// included).
func (e *ErrorFS) Count(op Op) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[op]
}

// Failed returns how many operations of the kind it failed.
func (e *ErrorFS) Failed(op Op) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failed[op]
}

// fault counts an operation and returns the fault that fails it, if one
// does.
func (e *ErrorFS) fault(op Op) *Fault {
	e.mu.Lock()
	e.counts[op]++
	for i, h := range e.holds {
		if h.op == op && h.at == e.counts[op] {
			e.holds = append(e.holds[:i:i], e.holds[i+1:]...)
			e.mu.Unlock()
			close(h.entered)
			<-h.released
			e.mu.Lock()
			break
		}
	}
	defer e.mu.Unlock()
	if e.full && (op == OpCreate || op == OpWrite) {
		e.failed[op]++
		return &Fault{Op: op, Err: syscall.ENOSPC}
	}
	for _, f := range e.faults {
		if f.Op == op && (e.counts[op] == f.at || f.Sticky && e.counts[op] > f.at) {
			e.failed[op]++
			return &f.Fault
		}
	}
	return nil
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// OpenFile opens a file; a creation may fail.
func (e *ErrorFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if flag&os.O_CREATE != 0 {
		if f := e.fault(OpCreate); f != nil {
			return nil, pathErr("open", name, f.Err)
		}
	}
	file, err := e.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &errorFile{e: e, f: file, name: name}, nil
}

// Map reads a file whole, or fails.
func (e *ErrorFS) Map(name string) ([]byte, func(), error) {
	if f := e.fault(OpMap); f != nil {
		return nil, nil, pathErr("read", name, f.Err)
	}
	return e.inner.Map(name)
}

// Size returns a file's size, or fails.
func (e *ErrorFS) Size(name string) (int64, error) {
	if f := e.fault(OpSize); f != nil {
		return 0, pathErr("stat", name, f.Err)
	}
	return e.inner.Size(name)
}

// List lists a directory.
func (e *ErrorFS) List(dir string) ([]string, error) { return e.inner.List(dir) }

// Rename renames a file, or fails.
func (e *ErrorFS) Rename(oldname, newname string) error {
	if f := e.fault(OpRename); f != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: f.Err}
	}
	return e.inner.Rename(oldname, newname)
}

// Remove removes a file, or fails.
func (e *ErrorFS) Remove(name string) error {
	if f := e.fault(OpRemove); f != nil {
		return pathErr("remove", name, f.Err)
	}
	return e.inner.Remove(name)
}

// MkdirAll creates directories.
func (e *ErrorFS) MkdirAll(dir string, perm fs.FileMode) error { return e.inner.MkdirAll(dir, perm) }

// SyncDir syncs a directory, or fails.
func (e *ErrorFS) SyncDir(dir string) error {
	if f := e.fault(OpSyncDir); f != nil {
		return pathErr("sync", dir, f.Err)
	}
	return e.inner.SyncDir(dir)
}

// Lock takes a directory.
func (e *ErrorFS) Lock(dir string) (io.Closer, error) { return e.inner.Lock(dir) }

type errorFile struct {
	e    *ErrorFS
	f    vfs.File
	name string
}

func (f *errorFile) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	ft := f.e.fault(OpWrite)
	if ft == nil {
		return f.f.Write(b)
	}
	n := 0
	if ft.Short {
		n, _ = f.f.Write(b[:len(b)/2])
	}
	return n, pathErr("write", f.name, ft.Err)
}

func (f *errorFile) Sync() error {
	if ft := f.e.fault(OpSync); ft != nil {
		return pathErr("sync", f.name, ft.Err)
	}
	return f.f.Sync()
}

func (f *errorFile) Truncate(size int64) error {
	if ft := f.e.fault(OpTruncate); ft != nil {
		return pathErr("truncate", f.name, ft.Err)
	}
	return f.f.Truncate(size)
}

func (f *errorFile) Close() error { return f.f.Close() }

func (f *errorFile) Gone() (bool, error) { return f.f.Gone() }
