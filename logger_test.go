package lethe_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// records is a slog.Handler that keeps what it is given, for tests.
type records struct {
	mu   sync.Mutex
	list []string // "LEVEL message key=value ..."
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", rec.Level, rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	r.list = append(r.list, b.String())
	r.mu.Unlock()
	return nil
}

func (r *records) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.list...)
}

// TestLoggerTornTail: recovery that cuts a torn end off the log says so
// at warn, naming the directory, the segment and the bytes cut; a clean
// open logs nothing.
func TestLoggerTornTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openDurable(t, dir, lethe.NewManualClock(t0))
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	require.NoError(t, putDoc(c, "a"))
	require.NoError(t, s.Close())

	var logs records
	opts := &lethe.Options{Dir: dir, Clock: lethe.NewManualClock(t0), Reaper: lethe.ReaperOptions{Disabled: true}, Logger: slog.New(&logs)}
	s, err := lethe.Open(opts)
	require.NoError(t, err)
	assert.Empty(t, logs.all(), "a clean recovery logs nothing")

	// A torn end is what a crash leaves (a segment the store closed is
	// sealed in its manifest): tear a copy taken while the store runs.
	dir = crashCopy(t, s, dir)
	opts.Dir = dir
	seg := lethetesting.LastSegment(t, dir)
	require.NoError(t, os.WriteFile(seg, append(mustRead(t, seg), 1, 2, 3), 0o644))
	s, err = lethe.Open(opts)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.Len(t, logs.all(), 1)
	line := logs.all()[0]
	assert.True(t, strings.HasPrefix(line, "WARN lethe: recovery cut a torn end off the log"), line)
	assert.Contains(t, line, "dir="+dir)
	assert.Contains(t, line, "file="+filepath.Base(seg))
	assert.Contains(t, line, "bytes=3")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// TestLoggerFailures: a log that fails is logged at error once, however
// many writes it refuses after; a store opened read-only on a full disk is
// logged at error; a background checkpoint that fails is logged at error.
func TestLoggerFailures(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T, dir string, efs *vfstest.ErrorFS, logs *records) *lethe.Store {
		opts := &lethe.Options{Dir: dir, Clock: lethe.NewManualClock(t0), Reaper: lethe.ReaperOptions{Disabled: true}, Logger: slog.New(logs)}
		vfs.SetOptionsFS(opts, efs)
		s, err := lethe.Open(opts)
		require.NoError(t, err)
		return s
	}
	t.Run("log write", func(t *testing.T) {
		var logs records
		dir, efs := t.TempDir(), vfstest.NewErrorFS(vfs.OS)
		s := open(t, dir, efs, &logs)
		defer s.Close()
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
		efs.Inject(vfstest.Fault{Op: vfstest.OpSync, N: 1, Err: syscall.EIO})
		require.Error(t, putDoc(c, "a"))
		require.Error(t, putDoc(c, "b"))
		require.Len(t, logs.all(), 1, "one line for the failure, none per refused write")
		assert.Contains(t, logs.all()[0], "ERROR lethe: the write-ahead log cannot be written")
		assert.Contains(t, logs.all()[0], "dir="+dir)
		assert.Contains(t, logs.all()[0], "input/output error")
	})
	t.Run("read-only", func(t *testing.T) {
		var logs records
		dir, efs := t.TempDir(), vfstest.NewErrorFS(vfs.OS)
		require.NoError(t, open(t, dir, efs, &logs).Close())
		efs.SetFull(true)
		s := open(t, dir, efs, &logs)
		defer s.Close()
		require.Len(t, logs.all(), 1)
		assert.Contains(t, logs.all()[0], "ERROR lethe: the store opened read-only")
		assert.Contains(t, logs.all()[0], "is full")
	})
	t.Run("checkpoint", func(t *testing.T) {
		var logs records
		dir, efs := t.TempDir(), vfstest.NewErrorFS(vfs.OS)
		s := open(t, dir, efs, &logs)
		defer s.Close()
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
		require.NoError(t, putDoc(c, "a"))
		efs.Inject(vfstest.Fault{Op: vfstest.OpRename, N: 1, Err: syscall.EIO})
		lethe.KickCheckpoint(s)
		for deadline := time.Now().Add(10 * time.Second); len(logs.all()) == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond) // waits for the background checkpoint; the assertion follows
		}
		require.Len(t, logs.all(), 1)
		assert.Contains(t, logs.all()[0], "ERROR lethe: a checkpoint failed")
		assert.Contains(t, logs.all()[0], "dir="+dir)
	})
}
