package lethe_test

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fault tests: a durable store on a vfstest.ErrorFS over the real file
// system, which fails the Nth operation of a kind. Every failure surfaces
// as a typed error (an *Error 503, ErrUnavailable, wrapping the errno),
// never a panic or a hang; a failed write or fsync of the log is never
// retried as if nothing happened: the store refuses writes until it is
// reopened, and the reopened store has every acknowledged write.

// openFaulty opens a durable store in dir on an ErrorFS over the OS.
func openFaulty(t *testing.T, dir string) (*lethe.Store, *vfstest.ErrorFS) {
	t.Helper()
	efs := vfstest.NewErrorFS(vfs.OS)
	opts := &lethe.Options{Dir: dir, Clock: lethe.NewManualClock(t0), Reaper: lethe.ReaperOptions{Disabled: true}}
	vfs.SetOptionsFS(opts, efs)
	s, err := lethe.Open(opts)
	require.NoError(t, err)
	return s, efs
}

func putDoc(c *lethe.Container, id string) error {
	_, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"`+id+`"}`), nil)
	return err
}

// TestFaultLog: a failed write, short write or fsync of the log fails the
// write in flight with 503 and the errno, and every write after it, without
// another attempt at the disk; reads go on; reopened, the store has what
// was acknowledged and not the rest, a short write's torn frame cut off.
func TestFaultLog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault vfstest.Fault
		want  error
		torn  bool // the failure leaves a partial frame in the log
	}{
		{"write EIO", vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.EIO}, syscall.EIO, false},
		{"write ENOSPC", vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC}, syscall.ENOSPC, false},
		{"short write", vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC, Short: true}, syscall.ENOSPC, true},
		{"fsync EIO", vfstest.Fault{Op: vfstest.OpSync, N: 1, Err: syscall.EIO}, syscall.EIO, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, efs := openFaulty(t, dir)
			lethe.SetDiskRetry(s, time.Hour) // no heal (TestDiskHeal*)
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
			require.NoError(t, putDoc(c, "kept"))
			efs.Inject(tc.fault)
			err := putDoc(c, "failed")
			require.ErrorIs(t, err, lethe.ErrUnavailable)
			require.ErrorIs(t, err, tc.want)
			var le *lethe.Error
			require.ErrorAs(t, err, &le)
			assert.Equal(t, 503, le.StatusCode)

			writes, syncs := efs.Count(vfstest.OpWrite), efs.Count(vfstest.OpSync)
			require.ErrorIs(t, putDoc(c, "later"), lethe.ErrUnavailable, "no write after a failure")
			_, err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "d"})
			require.ErrorIs(t, err, lethe.ErrUnavailable)
			require.ErrorIs(t, s.Checkpoint(ctx), lethe.ErrUnavailable)
			_, err = c.Purge(ctx)
			require.ErrorIs(t, err, lethe.ErrUnavailable)
			assert.Equal(t, writes, efs.Count(vfstest.OpWrite), "the log is not written again")
			assert.Equal(t, syncs, efs.Count(vfstest.OpSync), "the fsync is not retried")
			assert.True(t, readable(t, c, lethe.NewPartitionKey(), "kept"), "reads go on")
			s.Close() // reports the failure; it must return

			s = openDurable(t, dir, lethe.NewManualClock(t0))
			defer s.Close()
			c, err = s.Container("c")
			require.NoError(t, err)
			assert.True(t, readable(t, c, lethe.NewPartitionKey(), "kept"))
			assert.False(t, readable(t, c, lethe.NewPartitionKey(), "later"))
			if tc.torn {
				assert.Zero(t, s.Recovery().TornBytes, "the short write's partial frame was cut off when it failed")
			}
			require.NoError(t, putDoc(c, "after"), "reopened, the store writes again")
		})
	}
}

// TestFaultCheckpoint: a snapshot that fails (its file's write or fsync,
// its rename, the directory's fsync) fails Checkpoint with 503 and the
// errno, and leaves the log as it was: writes go on, and the store
// recovers whole. A failure of the log's own fsync, or to start the next
// log segment, fails the log.
func TestFaultCheckpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		fault     vfstest.Fault
		logFailed bool
	}{
		{"snapshot write", vfstest.Fault{Op: vfstest.OpWrite, N: 2, Err: syscall.ENOSPC}, false},
		{"snapshot fsync", vfstest.Fault{Op: vfstest.OpSync, N: 3, Err: syscall.EIO}, false},
		{"rename", vfstest.Fault{Op: vfstest.OpRename, N: 1, Err: syscall.EIO}, false},
		{"directory fsync", vfstest.Fault{Op: vfstest.OpSyncDir, N: 2, Err: syscall.EIO}, false},
		{"new segment", vfstest.Fault{Op: vfstest.OpCreate, N: 1, Err: syscall.ENOSPC}, true},
		{"log fsync at the rotation", vfstest.Fault{Op: vfstest.OpSync, N: 1, Err: syscall.EIO}, true},
		{"new segment's fsync", vfstest.Fault{Op: vfstest.OpSync, N: 2, Err: syscall.EIO}, true},
		{"log fsync after the snapshot", vfstest.Fault{Op: vfstest.OpSync, N: 4, Err: syscall.EIO}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, efs := openFaulty(t, dir)
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
			require.NoError(t, putDoc(c, "before"))
			efs.Inject(tc.fault)
			err := s.Checkpoint(ctx)
			require.ErrorIs(t, err, lethe.ErrUnavailable)
			require.ErrorIs(t, err, tc.fault.Err)
			require.Equal(t, 1, efs.Failed(tc.fault.Op), "the fault was met")
			err = putDoc(c, "after")
			if tc.logFailed {
				require.ErrorIs(t, err, lethe.ErrUnavailable)
			} else {
				require.NoError(t, err, "the log goes on")
				require.NoError(t, s.Checkpoint(ctx), "the next snapshot starts afresh")
			}
			s.Close()
			s = openDurable(t, dir, lethe.NewManualClock(t0))
			defer s.Close()
			c, err = s.Container("c")
			require.NoError(t, err)
			assert.True(t, readable(t, c, lethe.NewPartitionKey(), "before"))
			assert.Equal(t, !tc.logFailed, readable(t, c, lethe.NewPartitionKey(), "after"))
		})
	}
}

// TestFaultOpenFullDisk: Open on a full disk, where it cannot start a log
// segment, opens the store read-only: reads, queries and the change feed
// work; every write fails with 503 and a message naming the disk; Close
// succeeds. Once there is room, the store opens for writing, whole.
func TestFaultOpenFullDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, efs := openFaulty(t, dir)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
	require.NoError(t, putDoc(c, "a"))
	require.NoError(t, putDoc(c, "b"))
	require.NoError(t, s.Close())

	efs.SetFull(true)
	opts := &lethe.Options{Dir: dir, Clock: lethe.NewManualClock(t0), Reaper: lethe.ReaperOptions{Disabled: true}}
	vfs.SetOptionsFS(opts, efs)
	s, err := lethe.Open(opts)
	require.NoError(t, err, "a full disk opens read-only")
	c, err = s.Container("c")
	require.NoError(t, err)
	assert.True(t, readable(t, c, lethe.NewPartitionKey(), "a"))
	n := 0
	for _, err := range c.QueryItems(ctx, "SELECT * FROM c", lethe.NewPartitionKey(), nil) {
		require.NoError(t, err)
		n++
	}
	assert.Equal(t, 2, n, "queries work")
	feed, err := c.ReadChangeFeed(ctx, nil)
	require.NoError(t, err)
	assert.Len(t, feed.Items, 2, "the change feed works")

	err = putDoc(c, "c")
	require.ErrorIs(t, err, lethe.ErrUnavailable)
	require.ErrorIs(t, err, syscall.ENOSPC)
	var le *lethe.Error
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 503, le.StatusCode)
	assert.Contains(t, le.Message, "the disk holding "+dir+" is full")
	assert.Contains(t, le.Message, "read-only")
	_, err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "d"})
	require.ErrorIs(t, err, lethe.ErrUnavailable)
	require.ErrorIs(t, s.DeleteContainer(ctx, "c"), lethe.ErrUnavailable)
	require.ErrorIs(t, c.Replace(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 5}), lethe.ErrUnavailable)
	require.ErrorIs(t, s.Checkpoint(ctx), lethe.ErrUnavailable)
	require.NoError(t, s.Close(), "nothing was lost")

	efs.SetFull(false)
	s, err = lethe.Open(opts)
	require.NoError(t, err)
	defer s.Close()
	c, err = s.Container("c")
	require.NoError(t, err)
	require.NoError(t, putDoc(c, "c"), "with room, the store writes again")
	assert.True(t, readable(t, c, lethe.NewPartitionKey(), "b"))
}

// TestFaultOpenRead: a file that cannot be read, or whose size cannot be
// (recovery sizes what it reserves from the files'), fails Open with the
// errno; nothing panics, and the directory is left as it was.
func TestFaultOpenRead(t *testing.T) {
	t.Parallel()
	for _, op := range []vfstest.Op{vfstest.OpMap, vfstest.OpSize} {
		t.Run(op.String(), func(t *testing.T) {
			dir := t.TempDir()
			s, efs := openFaulty(t, dir)
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
			require.NoError(t, putDoc(c, "a"))
			require.NoError(t, s.Close())
			efs.Inject(vfstest.Fault{Op: op, N: 1, Err: syscall.EIO})
			opts := &lethe.Options{Dir: dir}
			vfs.SetOptionsFS(opts, efs)
			_, err := lethe.Open(opts)
			require.ErrorIs(t, err, syscall.EIO)
			require.False(t, errors.Is(err, lethe.ErrLocked))
			s = openDurable(t, dir, lethe.NewManualClock(t0))
			defer s.Close()
			c, err = s.Container("c")
			require.NoError(t, err)
			assert.True(t, readable(t, c, lethe.NewPartitionKey(), "a"))
		})
	}
}

// TestFaultFailedWriteStaysGone: a write that failed (its log write or
// fsync did) is not brought back by a reopen, under every sync policy,
// whatever the failure left in the segment: the frame whole in the page
// cache (a failed fsync), the whole frames of other writers in the half
// of a group's write that got through (a short write), nothing (a write
// that failed whole).
func TestFaultFailedWriteStaysGone(t *testing.T) {
	t.Parallel()
	for _, policy := range []lethe.SyncPolicy{lethe.SyncAlways, lethe.SyncEverySecond, lethe.SyncNever} {
		for _, tc := range []struct {
			name  string
			fault vfstest.Fault
		}{
			{"fsync EIO", vfstest.Fault{Op: vfstest.OpSync, N: 1, Err: syscall.EIO}},
			{"fsync ENOSPC", vfstest.Fault{Op: vfstest.OpSync, N: 1, Err: syscall.ENOSPC}},
			{"write EIO", vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.EIO}},
			{"short write", vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC, Short: true}},
		} {
			if policy != lethe.SyncAlways && tc.fault.Op == vfstest.OpSync {
				continue // a write does not wait for an fsync: none fails it
			}
			t.Run(policy.String()+"/"+tc.name, func(t *testing.T) {
				dir := t.TempDir()
				efs := vfstest.NewErrorFS(vfs.OS)
				opts := &lethe.Options{Dir: dir, Sync: policy, Clock: lethe.NewManualClock(t0), Reaper: lethe.ReaperOptions{Disabled: true}}
				vfs.SetOptionsFS(opts, efs)
				s, err := lethe.Open(opts)
				require.NoError(t, err)
				c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
				require.NoError(t, putDoc(c, "kept"))

				// The group: a write held in the log's write, and four
				// more appended meanwhile, which the next write carries
				// together, and which the fault fails.
				hold := efs.Hold(vfstest.OpWrite)
				first := make(chan error, 1)
				go func() { first <- putDoc(c, "first") }()
				<-hold.Entered()
				var wg sync.WaitGroup
				errs := make([]error, 4)
				for i := range errs {
					wg.Go(func() { errs[i] = putDoc(c, fmt.Sprintf("failed%d", i)) })
				}
				time.Sleep(20 * time.Millisecond) // they append behind the held write
				efs.Inject(tc.fault)
				hold.Release()
				wg.Wait()
				firstErr := <-first
				failed := map[string]bool{}
				for i, err := range errs {
					if err != nil {
						require.ErrorIs(t, err, lethe.ErrUnavailable)
						failed[fmt.Sprintf("failed%d", i)] = true
					}
				}
				if firstErr != nil {
					failed["first"] = true
				}
				require.NotEmpty(t, failed, "the fault failed writes")
				s.Close()

				s = openDurable(t, dir, lethe.NewManualClock(t0))
				defer s.Close()
				c, err = s.Container("c")
				require.NoError(t, err)
				assert.True(t, readable(t, c, lethe.NewPartitionKey(), "kept"))
				for id := range failed {
					assert.False(t, readable(t, c, lethe.NewPartitionKey(), id), "the failed write %s came back", id)
				}
			})
		}
	}
}
