package lethe_test

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The manifest tests: a store's directory records what it must contain
// (manifest.go); a file missing, cut short or swapped for another store's
// fails Open with a *CorruptionError naming it, and a log segment removed
// or replaced while the store runs stops its writes at the next commit.

// writeSome writes n items named prefix0, prefix1, ... to c.
func writeSome(t *testing.T, c *lethe.Container, prefix string, n int) {
	t.Helper()
	for i := range n {
		_, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":"%s%d"}`, prefix, i), nil)
		require.NoError(t, err)
	}
}

// openErr opens dir and returns Open's *CorruptionError, failing t if
// Open succeeds or fails otherwise.
func openErr(t *testing.T, dir string) *lethe.CorruptionError {
	t.Helper()
	s, err := lethe.Open(&lethe.Options{Dir: dir, Clock: lethe.NewManualClock(t0), Reaper: lethe.ReaperOptions{Disabled: true}})
	if err == nil {
		s.Close()
		t.Fatalf("Open of %s succeeded", dir)
	}
	var ce *lethe.CorruptionError
	require.True(t, errors.As(err, &ce), "%v", err)
	return ce
}

// segments returns the paths of a directory's log segments, in order.
func segments(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range lethetesting.DirNames(t, dir) {
		if strings.HasPrefix(n, "wal-") {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

// TestManifestTruncated: a log segment cut short below what the manifest
// records as synced (a segment sealed when the store closed, or when it
// reopened after a crash) fails Open naming it; the tail of the segment a
// crashed store was writing is the torn end recovery cuts off.
func TestManifestTruncated(t *testing.T) {
	t.Parallel()
	// closed: Open, write, Close: the last segment is sealed at its size.
	closed := t.TempDir()
	s := openDurable(t, closed, lethe.NewManualClock(t0))
	writeSome(t, mustContainer(t, s, lethe.ContainerProperties{ID: "c"}), "a", 10)
	require.NoError(t, s.Close())

	// crashed: Open, write, Close, Open, write, and a copy taken while it
	// runs (a crash): the first run's segment is sealed, the second's not.
	crashed := t.TempDir()
	s = openDurable(t, crashed, lethe.NewManualClock(t0))
	writeSome(t, mustContainer(t, s, lethe.ContainerProperties{ID: "c"}), "a", 10)
	require.NoError(t, s.Close())
	s = openDurable(t, crashed, lethe.NewManualClock(t0))
	c, err := s.Container("c")
	require.NoError(t, err)
	writeSome(t, c, "b", 10)
	copied := t.TempDir()
	copyDir(t, crashed, copied)
	require.NoError(t, s.Close())

	cut := func(t *testing.T, path string, by int64) {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(path, fi.Size()-by))
	}
	for _, tc := range []struct {
		name string
		dir  string
		seg  int // which segment is cut
		ok   bool
	}{
		{"closed, last segment", closed, 0, false},
		{"crashed, sealed segment", copied, 0, false},
		{"crashed, running segment", copied, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			copyDir(t, tc.dir, work)
			seg := segments(t, work)[tc.seg]
			cut(t, seg, 5) // inside the last frame
			if tc.ok {
				s := openDurable(t, work, lethe.NewManualClock(t0))
				defer s.Close()
				assert.Equal(t, filepath.Base(seg), s.Recovery().TornFile)
				return
			}
			ce := openErr(t, work)
			assert.Equal(t, seg, ce.File)
			assert.Contains(t, ce.Reason, "sealed")
		})
	}
}

// TestManifestSwapped: a log segment, a snapshot or the manifest of
// another store, put in a store's directory under the right name, fails
// Open naming it; so does a segment renamed to another number, and files
// of format 4 without their manifest.
func TestManifestSwapped(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		s := openDurable(t, dir, lethe.NewManualClock(t0))
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
		writeSome(t, c, "x", 5)
		require.NoError(t, s.Checkpoint(ctx))
		writeSome(t, c, "y", 5)
		require.NoError(t, s.Close())
	}
	segA, segB := segments(t, a), segments(t, b)
	require.Equal(t, filepath.Base(segA[0]), filepath.Base(segB[0]))
	swap := func(t *testing.T, name string) string {
		work := t.TempDir()
		copyDir(t, a, work)
		data, err := os.ReadFile(filepath.Join(b, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(work, name), data, 0o644))
		return work
	}
	var snap string
	for _, n := range lethetesting.DirNames(t, a) {
		if strings.HasPrefix(n, "snap-") {
			snap = n
		}
	}
	require.NotEmpty(t, snap)

	t.Run("segment", func(t *testing.T) {
		work := swap(t, filepath.Base(segA[0]))
		ce := openErr(t, work)
		assert.Equal(t, filepath.Join(work, filepath.Base(segA[0])), ce.File)
		assert.Contains(t, ce.Reason, "another store")
	})
	t.Run("snapshot", func(t *testing.T) {
		work := swap(t, snap)
		ce := openErr(t, work)
		assert.Equal(t, filepath.Join(work, snap), ce.File)
		assert.Contains(t, ce.Reason, "another store")
	})
	t.Run("manifest", func(t *testing.T) {
		work := swap(t, "MANIFEST")
		ce := openErr(t, work)
		assert.Contains(t, ce.Reason, "another store")
	})
	t.Run("renamed", func(t *testing.T) {
		// A copy of the last segment as the next one: its header names
		// the number it was written as.
		work := t.TempDir()
		copyDir(t, a, work)
		segs := segments(t, work)
		last := segs[len(segs)-1]
		var n uint64
		_, err := fmt.Sscanf(filepath.Base(last), "wal-%016x.log", &n)
		require.NoError(t, err)
		data, err := os.ReadFile(last)
		require.NoError(t, err)
		next := filepath.Join(work, fmt.Sprintf("wal-%016x.log", n+1))
		require.NoError(t, os.WriteFile(next, data, 0o644))
		ce := openErr(t, work)
		assert.Equal(t, next, ce.File)
		assert.Contains(t, ce.Reason, "renamed")
	})
	t.Run("no manifest", func(t *testing.T) {
		work := t.TempDir()
		copyDir(t, a, work)
		require.NoError(t, os.Remove(filepath.Join(work, "MANIFEST")))
		ce := openErr(t, work)
		assert.Equal(t, filepath.Join(work, "MANIFEST"), ce.File)
	})
}

// TestManifestSequence: files that end before the write the manifest
// records as synced (here, the manifest's figure raised, its checksum
// made again) fail Open.
func TestManifestSequence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openDurable(t, dir, lethe.NewManualClock(t0))
	writeSome(t, mustContainer(t, s, lethe.ContainerProperties{ID: "c"}), "a", 3)
	require.NoError(t, s.Close())
	path := filepath.Join(dir, "MANIFEST")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	body, _, ok := strings.Cut(string(data), "\n")
	require.True(t, ok)
	body = regexp.MustCompile(`"seq":\d+`).ReplaceAllString(body, `"seq":99`)
	crc := crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli))
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, "%s\n%08x\n", body, crc), 0o644))
	ce := openErr(t, dir)
	assert.Equal(t, dir, ce.File)
	assert.Contains(t, ce.Reason, "99")
}

// TestLogRemovedWhileRunning: the log segment removed, or replaced by
// another store's, under a running store: the next write fails with
// ErrUnavailable naming the segment, and so does every write after it;
// reads go on; the reopen fails naming the file instead of coming up
// without the writes it held.
func TestLogRemovedWhileRunning(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"removed", "replaced"} {
		for _, fsys := range []string{"os", "power"} {
			t.Run(how+"/"+fsys, func(t *testing.T) {
				dir := t.TempDir()
				var fs vfs.FS = vfs.OS
				if fsys == "power" {
					fs, dir = vfstest.NewPowerFS(1), "/db"
				}
				open := func(dir string) (*lethe.Store, error) {
					opts := &lethe.Options{Dir: dir, Clock: lethe.NewManualClock(t0), Reaper: lethe.ReaperOptions{Disabled: true}}
					vfs.SetOptionsFS(opts, fs)
					return lethe.Open(opts)
				}
				s, err := open(dir)
				require.NoError(t, err)
				c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
				writeSome(t, c, "a", 5)
				names, err := fs.List(dir)
				require.NoError(t, err)
				var seg string
				for _, n := range names {
					if strings.HasPrefix(n, "wal-") {
						seg = filepath.Join(dir, n)
					}
				}
				if how == "removed" {
					require.NoError(t, fs.Remove(seg))
				} else {
					// Another store's segment renamed over it.
					other := filepath.Join(filepath.Dir(dir), "other"+fsys)
					o, err := open(other)
					require.NoError(t, err)
					writeSome(t, mustContainer(t, o, lethe.ContainerProperties{ID: "c"}), "o", 1)
					require.NoError(t, o.Close())
					data, err := vfs.ReadFile(fs, filepath.Join(other, filepath.Base(seg)))
					require.NoError(t, err)
					require.NoError(t, vfs.WriteFile(fs, seg+".new", data))
					require.NoError(t, fs.Rename(seg+".new", seg))
				}
				err = putDoc(c, "after")
				require.ErrorIs(t, err, lethe.ErrUnavailable)
				assert.Contains(t, err.Error(), seg)
				require.ErrorIs(t, putDoc(c, "later"), lethe.ErrUnavailable)
				assert.True(t, readable(t, c, lethe.NewPartitionKey(), "a0"), "reads go on")
				assert.False(t, readable(t, c, lethe.NewPartitionKey(), "after"), "the failed write is not visible")
				s.Close()

				_, err = open(dir)
				var ce *lethe.CorruptionError
				require.True(t, errors.As(err, &ce), "%v", err)
				assert.Equal(t, seg, ce.File)
			})
		}
	}
}

// TestManifestFirstOpenCut: a power cut between a new store's first log
// segment and its first manifest (the power-cut test found it) leaves an
// empty segment of format 4 and no manifest: Open takes the segment's id
// and goes on, twice.
func TestManifestFirstOpenCut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openDurable(t, dir, lethe.NewManualClock(t0))
	require.NoError(t, s.Close())
	require.NoError(t, os.Remove(filepath.Join(dir, "MANIFEST")))
	seg := segments(t, dir)[0]
	require.NoError(t, os.Truncate(seg, 33)) // the header alone
	for range 2 {
		s = openDurable(t, dir, lethe.NewManualClock(t0))
		require.NoError(t, s.Close())
	}
}
