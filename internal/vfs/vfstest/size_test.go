package vfstest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/lethedb/lethe/internal/vfs"
)

// TestSize: every file system's Size is the length of what Map returns,
// without reading it; a missing file is fs.ErrNotExist, a directory
// EISDIR; ErrorFS fails it when told, and PowerFS once its power is cut.
func TestSize(t *testing.T) {
	tmp := t.TempDir()
	for _, tc := range []struct {
		name string
		fsys vfs.FS
		dir  string
	}{
		{"OS", vfs.OS, tmp},
		{"PowerFS", NewPowerFS(1), "/d"},
		{"ErrorFS over PowerFS", NewErrorFS(NewPowerFS(1)), "/d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fsys.MkdirAll(tc.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i, size := range []int{0, 1, 4*SectorSize + 3} {
				name := filepath.Join(tc.dir, "f"+string(rune('a'+i)))
				f, err := tc.fsys.OpenFile(name, os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Write(bytes.Repeat([]byte{'x'}, size)); err != nil {
					t.Fatal(err)
				}
				f.Close() // not synced
				data, release, err := tc.fsys.Map(name)
				if err != nil {
					t.Fatal(err)
				}
				release()
				if got, err := tc.fsys.Size(name); err != nil || got != int64(len(data)) || got != int64(size) {
					t.Errorf("Size(%s) = %d, %v; Map gives %d bytes, %d written", name, got, err, len(data), size)
				}
			}
			if _, err := tc.fsys.Size(filepath.Join(tc.dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Size of a missing file: %v", err)
			}
			if _, err := tc.fsys.Size(tc.dir); !errors.Is(err, syscall.EISDIR) {
				t.Errorf("Size of a directory: %v", err)
			}
		})
	}

	e := NewErrorFS(vfs.OS)
	e.Inject(Fault{Op: OpSize, N: 1, Err: syscall.EIO})
	if _, err := e.Size(filepath.Join(tmp, "fa")); !errors.Is(err, syscall.EIO) || e.Failed(OpSize) != 1 {
		t.Errorf("an injected fault: %v, %d failed", err, e.Failed(OpSize))
	}
	if got, err := e.Size(filepath.Join(tmp, "fb")); err != nil || got != 1 {
		t.Errorf("after the fault: %d, %v", got, err)
	}

	p := NewPowerFS(1)
	p.Cut()
	if _, err := p.Size("/"); !errors.Is(err, ErrPowerCut) {
		t.Errorf("Size after a cut: %v", err)
	}
}

// TestPowerFSSizeAfterCut: after a power cut, whatever a write left (the
// whole, none, torn, zeros), Size is the length of what Map returns.
func TestPowerFSSizeAfterCut(t *testing.T) {
	for seed := range uint64(100) {
		p := NewPowerFS(seed)
		writeFile(t, p, "/f", []byte("head"), true)
		p.SyncDir("/")
		f, _ := p.OpenFile("/f", os.O_WRONLY, 0)
		f.Write(bytes.Repeat([]byte{'y'}, 3*SectorSize+7))
		f.Close()
		p.Restart()
		got, _ := contents(p, "/f")
		if size, err := p.Size("/f"); err != nil || size != int64(len(got)) {
			t.Fatalf("seed %d: Size %d, %v; Map gives %d bytes", seed, size, err, len(got))
		}
	}
}
