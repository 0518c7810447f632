// Package vfstest holds the file systems that lethe's tests run durable
// stores on to prove them under faults: PowerFS, in memory, which keeps
// only what was synced and, at a simulated power cut, forgets the rest in
// the ways a real disk may; and ErrorFS, which makes the Nth operation of a
// kind fail with ENOSPC or EIO, or write short.
package vfstest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/lethedb/lethe/internal/dirlock"
	"github.com/lethedb/lethe/internal/vfs"
)

// ErrPowerCut is the error of every operation on a PowerFS whose power is
// off, and of the operation during which it went off.
var ErrPowerCut = errors.New("vfstest: the power is cut")

// SectorSize is the unit in which PowerFS tears a write: a torn write
// keeps whole sectors.
const SectorSize = 512

// PowerFS is a file system in memory that knows what is durable: a file's
// contents as of its last Sync, a directory's names as of its last
// SyncDir. At a power cut (Cut, or CutAtSync's sync) it computes the state
// that a disk could come back with, choosing with its random source, which
// a seed makes replayable:
//
//   - each file keeps what was synced, and of the writes since (and
//     truncations) all, none, or the first few in order; the first one it
//     does not keep whole may be torn at a sector boundary, the rest of its
//     range cut off or left as zeros (space the file system gave, never
//     written);
//   - each directory keeps the names it had when last synced, and of the
//     creations, removals and renames since, each is kept or undone (a
//     rename whole): all, none, or each by chance, replayed in order.
//
// From the cut on, every operation fails with ErrPowerCut, so the store
// that was running can only fail; Restart brings the power back with the
// state computed, for a new store to recover. A PowerFS is safe for
// concurrent use.
type PowerFS struct {
	mu    sync.Mutex
	rng   *rand.Rand
	root  *node
	gen   int   // bumped at every Restart: handles of before are dead
	off   bool  // the power is cut
	after *node // the state to restart into
	locks map[string]bool
	syncs int // sync operations so far (file and directory)
	cutAt int // cut at this sync (0: never)
	cuts  int
}

type node struct {
	isDir bool
	// A file: its contents, what was synced of them, and the writes and
	// truncations since, in order.
	data    []byte
	durable []byte
	pending []fileOp
	// A directory: its names, those last synced, and the changes since.
	entries  map[string]*node
	synced   map[string]*node
	dirtyOps []dirOp
}

type fileOp struct {
	off   int64
	data  []byte // a write; nil for a truncation
	trunc int64  // the size a truncation left
}

type dirOp struct {
	kind     byte // 'c' create (name now names n), 'r' remove, 'm' rename name to to
	name, to string
	n        *node
}

// NewPowerFS returns an empty PowerFS (only "/" exists) whose choices at a
// cut come from seed.
func NewPowerFS(seed uint64) *PowerFS {
	return &PowerFS{rng: rand.New(rand.NewPCG(seed, 0x706f776572)), root: newDir(), locks: map[string]bool{}}
}

func newDir() *node {
	return &node{isDir: true, entries: map[string]*node{}, synced: map[string]*node{}}
}

// CutAtSync arranges a power cut at the nth sync operation (file or
// directory) from now on; 0 cancels it. The cut comes, by chance, just
// before the sync takes effect or just after; either way the sync fails.
func (p *PowerFS) CutAtSync(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutAt = 0
	if n > 0 {
		p.cutAt = p.syncs + n
	}
}

// Syncs returns how many sync operations were made.
func (p *PowerFS) Syncs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.syncs
}

// Cut cuts the power now, if it is not already.
func (p *PowerFS) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutLocked()
}

// IsCut reports whether the power is cut.
func (p *PowerFS) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.off
}

// Cuts returns how many times the power was cut.
func (p *PowerFS) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// Restart brings the power back, with the state computed at the cut: the
// handles and locks of before are gone. Without a cut, it is one now.
func (p *PowerFS) Restart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutLocked()
	p.root, p.after = p.after, nil
	p.off = false
	p.gen++
	p.locks = map[string]bool{}
}

func (p *PowerFS) cutLocked() {
	if p.off {
		return
	}
	p.off, p.cutAt = true, 0
	p.cuts++
	p.after = p.crashDir(p.root, map[*node]*node{})
}

// crashDir returns what the directory d could come back as.
func (p *PowerFS) crashDir(d *node, seen map[*node]*node) *node {
	out := newDir()
	for name, n := range d.synced {
		out.entries[name] = n
	}
	keep := p.chance()
	for _, op := range d.dirtyOps {
		if p.rng.Float64() >= keep {
			continue
		}
		switch op.kind {
		case 'c':
			out.entries[op.name] = op.n
		case 'r':
			if out.entries[op.name] == op.n {
				delete(out.entries, op.name)
			}
		case 'm':
			if n, ok := out.entries[op.name]; ok && n == op.n {
				out.entries[op.to] = n
				delete(out.entries, op.name)
			}
		}
	}
	names := make([]string, 0, len(out.entries))
	for name := range out.entries {
		names = append(names, name)
	}
	slices.Sort(names) // the choices follow one order: a seed replays them
	for _, name := range names {
		n := out.entries[name]
		if c, ok := seen[n]; ok {
			out.entries[name] = c
			continue
		}
		var c *node
		if n.isDir {
			c = p.crashDir(n, seen)
		} else {
			c = p.crashFile(n)
		}
		seen[n] = c
		out.entries[name] = c
	}
	for name, n := range out.entries {
		out.synced[name] = n
	}
	return out
}

// chance returns the probability of keeping each unsynced change of one
// file or directory: none, all, or each by chance.
func (p *PowerFS) chance() float64 {
	switch p.rng.IntN(4) {
	case 0:
		return 0
	case 1:
		return 1
	}
	return p.rng.Float64()
}

// crashFile returns what the file f could come back as.
func (p *PowerFS) crashFile(f *node) *node {
	data := slices.Clone(f.durable)
	k := len(f.pending)
	switch p.rng.IntN(3) {
	case 0:
		k = 0
	case 1:
		k = p.rng.IntN(len(f.pending) + 1)
	}
	for _, op := range f.pending[:k] {
		data = applyOp(data, op)
	}
	if k < len(f.pending) && f.pending[k].data != nil && p.rng.IntN(2) == 0 {
		// The next write is torn at a sector boundary inside it.
		op := f.pending[k]
		end := op.off + int64(len(op.data))
		var cuts []int64
		for b := (op.off/SectorSize + 1) * SectorSize; b < end; b += SectorSize {
			cuts = append(cuts, b)
		}
		if len(cuts) > 0 {
			cut := cuts[p.rng.IntN(len(cuts))]
			torn := fileOp{off: op.off, data: op.data[:cut-op.off]}
			if p.rng.IntN(2) == 0 {
				// The file's new size reached the disk, its data did not.
				torn.data = append(slices.Clone(torn.data), make([]byte, end-cut)...)
			}
			data = applyOp(data, torn)
		}
	}
	return &node{data: data, durable: data[:len(data):len(data)]}
}

func applyOp(data []byte, op fileOp) []byte {
	if op.data == nil {
		if op.trunc <= int64(len(data)) {
			return data[:op.trunc]
		}
		return append(data, make([]byte, op.trunc-int64(len(data)))...)
	}
	end := op.off + int64(len(op.data))
	if end > int64(len(data)) {
		data = append(data, make([]byte, end-int64(len(data)))...)
	}
	copy(data[op.off:], op.data)
	return data
}

// sync is a sync point: it applies the sync unless the power is cut, and
// cuts it when the sync is the one CutAtSync chose.
func (p *PowerFS) syncPoint(apply func()) error {
	if p.off {
		return ErrPowerCut
	}
	p.syncs++
	if p.cutAt > 0 && p.syncs >= p.cutAt {
		if p.rng.IntN(2) == 0 {
			apply()
		}
		p.cutLocked()
		return ErrPowerCut
	}
	apply()
	return nil
}

// lookup finds the node at name, and the directory holding it.
func (p *PowerFS) lookup(name string) (parent *node, base string, n *node, err error) {
	parts := split(name)
	if len(parts) == 0 {
		return nil, "", p.root, nil
	}
	d := p.root
	for _, part := range parts[:len(parts)-1] {
		next, ok := d.entries[part]
		if !ok {
			return nil, "", nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		if !next.isDir {
			return nil, "", nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
		}
		d = next
	}
	base = parts[len(parts)-1]
	return d, base, d.entries[base], nil
}

func split(name string) []string {
	name = filepath.ToSlash(filepath.Clean(name))
	var parts []string
	for _, s := range strings.Split(name, "/") {
		if s != "" && s != "." {
			parts = append(parts, s)
		}
	}
	return parts
}

func (d *node) change(op dirOp) {
	switch op.kind {
	case 'c':
		d.entries[op.name] = op.n
	case 'r':
		delete(d.entries, op.name)
	case 'm':
		d.entries[op.to] = d.entries[op.name]
		delete(d.entries, op.name)
	}
	d.dirtyOps = append(d.dirtyOps, op)
}

// OpenFile opens a file for writing.
func (p *PowerFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return nil, ErrPowerCut
	}
	d, base, n, err := p.lookup(name)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case n != nil && n.isDir:
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	case n == nil:
		n = &node{}
		d.change(dirOp{kind: 'c', name: base, n: n})
	case flag&os.O_TRUNC != 0:
		n.write(fileOp{trunc: 0})
	}
	return &powerFile{p: p, n: n, gen: p.gen, name: name}, nil
}

// write applies a write or truncation to the file's contents.
func (n *node) write(op fileOp) {
	if len(n.durable) > 0 && (op.data == nil || op.off < int64(len(n.durable))) && sameArray(n.data, n.durable) {
		n.data = slices.Clone(n.data) // durable shares data's array
	}
	n.data = applyOp(n.data, op)
	n.pending = append(n.pending, op)
}

func sameArray(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:cap(a)][0] == &b[:cap(b)][0]
}

// Map returns a copy of a file's contents.
func (p *PowerFS) Map(name string) ([]byte, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, err := p.file(name)
	if err != nil {
		return nil, nil, err
	}
	return slices.Clone(n.data), func() {}, nil
}

// Size returns a file's size: the size of its contents now, synced or
// not, as Map returns them.
func (p *PowerFS) Size(name string) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, err := p.file(name)
	if err != nil {
		return 0, err
	}
	return int64(len(n.data)), nil
}

// file finds the file at name, for reading: not a directory. p.mu is held.
func (p *PowerFS) file(name string) (*node, error) {
	if p.off {
		return nil, ErrPowerCut
	}
	_, _, n, err := p.lookup(name)
	if err == nil && n == nil {
		err = &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if err == nil && n.isDir {
		err = &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	return n, err
}

// List returns the names in a directory, sorted.
func (p *PowerFS) List(dir string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return nil, ErrPowerCut
	}
	_, _, n, err := p.lookup(dir)
	if err == nil && (n == nil || !n.isDir) {
		err = &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(n.entries))
	for name := range n.entries {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// Rename renames a file within its directory.
func (p *PowerFS) Rename(oldname, newname string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return ErrPowerCut
	}
	d, base, n, err := p.lookup(oldname)
	if err == nil && n == nil {
		err = fs.ErrNotExist
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	d2, base2, old, err := p.lookup(newname)
	if err != nil || d2 != d {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: errors.New("vfstest: a rename stays in its directory")}
	}
	if old != nil && old.isDir && len(old.entries) > 0 {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: syscall.ENOTEMPTY}
	}
	d.change(dirOp{kind: 'm', name: base, to: base2, n: n})
	return nil
}

// Remove removes a file or an empty directory.
func (p *PowerFS) Remove(name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return ErrPowerCut
	}
	d, base, n, err := p.lookup(name)
	if err == nil && n == nil {
		err = fs.ErrNotExist
	}
	if err == nil && d == nil {
		err = syscall.EBUSY
	}
	if err == nil && n.isDir && len(n.entries) > 0 {
		err = syscall.ENOTEMPTY
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	d.change(dirOp{kind: 'r', name: base, n: n})
	return nil
}

// MkdirAll creates a directory and those above it that do not exist.
func (p *PowerFS) MkdirAll(dir string, perm fs.FileMode) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return ErrPowerCut
	}
	d := p.root
	for _, part := range split(dir) {
		next, ok := d.entries[part]
		if !ok {
			next = newDir()
			d.change(dirOp{kind: 'c', name: part, n: next})
		} else if !next.isDir {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		d = next
	}
	return nil
}

// SyncDir makes a directory's names durable.
func (p *PowerFS) SyncDir(dir string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return ErrPowerCut
	}
	_, _, n, err := p.lookup(dir)
	if err == nil && (n == nil || !n.isDir) {
		err = &fs.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	if err != nil {
		return err
	}
	return p.syncPoint(func() {
		clear(n.synced)
		for name, c := range n.entries {
			n.synced[name] = c
		}
		n.dirtyOps = nil
	})
}

// Lock takes a directory for one owner until the power is cut.
func (p *PowerFS) Lock(dir string) (io.Closer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return nil, ErrPowerCut
	}
	if _, _, n, err := p.lookup(dir); err != nil || n == nil || !n.isDir {
		return nil, &fs.PathError{Op: "lock", Path: dir, Err: fs.ErrNotExist}
	}
	key := filepath.Clean(dir)
	if p.locks[key] {
		return nil, dirlock.ErrLocked
	}
	p.locks[key] = true
	return &powerLock{p: p, key: key, gen: p.gen}, nil
}

type powerLock struct {
	p   *PowerFS
	key string
	gen int
}

func (l *powerLock) Close() error {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	if l.gen == l.p.gen {
		delete(l.p.locks, l.key)
	}
	return nil
}

// powerFile is a file of a PowerFS open for writing.
type powerFile struct {
	p      *PowerFS
	n      *node
	gen    int
	name   string
	pos    int64
	closed bool
}

func (f *powerFile) usable() error {
	switch {
	case f.closed:
		return &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrClosed}
	case f.p.off || f.gen != f.p.gen:
		return ErrPowerCut
	}
	return nil
}

func (f *powerFile) Write(b []byte) (int, error) {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	if err := f.usable(); err != nil {
		return 0, err
	}
	if len(b) == 0 {
		return 0, nil
	}
	f.n.write(fileOp{off: f.pos, data: slices.Clone(b)})
	f.pos += int64(len(b))
	return len(b), nil
}

func (f *powerFile) Sync() error {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	if err := f.usable(); err != nil {
		return err
	}
	n := f.n
	return f.p.syncPoint(func() {
		n.durable = n.data[:len(n.data):len(n.data)]
		n.pending = nil
	})
}

func (f *powerFile) Truncate(size int64) error {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	if err := f.usable(); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	}
	f.n.write(fileOp{trunc: size})
	return nil
}

// Gone reports whether the file's name now leads to another file, or to
// none.
func (f *powerFile) Gone() (bool, error) {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	if err := f.usable(); err != nil {
		return false, err
	}
	_, _, n, err := f.p.lookup(f.name)
	return err != nil || n != f.n, nil
}

func (f *powerFile) Close() error {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}

// String describes the file system's state, for failure messages.
func (p *PowerFS) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	var walk func(prefix string, d *node)
	walk = func(prefix string, d *node) {
		names := make([]string, 0, len(d.entries))
		for name := range d.entries {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			n := d.entries[name]
			if n.isDir {
				walk(prefix+name+"/", n)
				continue
			}
			fmt.Fprintf(&b, "%s%s %d bytes (%d synced)\n", prefix, name, len(n.data), len(n.durable))
		}
	}
	walk("/", p.root)
	return b.String()
}
