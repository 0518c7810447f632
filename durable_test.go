package lethe_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openDurable opens a durable store in dir on clock, reaper disabled.
func openDurable(t testing.TB, dir string, clock *lethe.ManualClock) *lethe.Store {
	t.Helper()
	s, err := lethe.Open(&lethe.Options{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	return s
}

// dump returns every live item of every container of s, with the
// container's properties: what a reopened store must show again.
func dump(t testing.TB, s *lethe.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, id := range s.ContainerIDs() {
		c, err := s.Container(id)
		require.NoError(t, err)
		props, err := c.Read(ctx)
		require.NoError(t, err)
		out[id] = fmt.Sprintf("%+v", props)
		for item, err := range c.QueryItems(ctx, "SELECT * FROM c", lethe.NewPartitionKey(), nil) {
			require.NoError(t, err)
			var key string
			require.NoError(t, jsonField(string(item), "id", &key))
			out[id+"/"+key+"/"+string(item)] = string(item)
		}
	}
	return out
}

func TestDurableRoundTrip(t *testing.T) {
	t.Parallel()
	for _, checkpoint := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint=%v", checkpoint), func(t *testing.T) {
			dir := t.TempDir()
			clock := lethe.NewManualClock(t0)
			s := openDurable(t, dir, clock)
			plain := mustContainer(t, s, lethe.ContainerProperties{ID: "plain", DefaultTimeToLive: lethe.TTLNever, Throughput: 10000})
			part := partitioned(t, s, "part", 3600, "/tenant", "/user")
			var lastETag string
			for i := range 50 {
				r, err := plain.UpsertItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":"p%d","n":%d,"ttl":%d}`, i%20, i, 100+i), nil)
				require.NoError(t, err)
				lastETag = r.ETag
				pk := pkS(fmt.Sprint("t", i%3)).AppendString(fmt.Sprint("u", i%5))
				_, err = part.UpsertItem(ctx, pk, fmt.Appendf(nil, `{"id":"x%d","tenant":"t%d","user":"u%d","n":%d}`, i%7, i%3, i%5, i), nil)
				require.NoError(t, err)
				if i == 25 && checkpoint {
					require.NoError(t, s.Checkpoint(ctx))
				}
			}
			_, err := plain.DeleteItem(ctx, lethe.NewPartitionKey(), "p3", nil)
			require.NoError(t, err)
			require.NoError(t, plain.Replace(ctx, lethe.ContainerProperties{ID: "plain", DefaultTimeToLive: 500, Throughput: 20000}))
			want := dump(t, s)
			require.NoError(t, s.Close())

			s = openDurable(t, dir, clock)
			defer s.Close()
			assert.Equal(t, want, dump(t, s))
			rec := s.Recovery()
			assert.Zero(t, rec.Expired)
			items := 0
			for k := range want {
				if strings.Contains(k, "/") {
					items++
				}
			}
			assert.Equal(t, int64(items), rec.Items)
			plain, err = s.Container("plain")
			require.NoError(t, err)
			_, err = plain.ReadItem(ctx, lethe.NewPartitionKey(), "p3", nil)
			require.ErrorIs(t, err, lethe.ErrNotFound, "a delete survives the restart")
			r, err := plain.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"new"}`), nil)
			require.NoError(t, err)
			assert.Greater(t, r.ETag, lastETag, "the write sequence continues after a restart: no _etag is reused")
			if checkpoint {
				assert.NotEmpty(t, rec.Snapshot)
			}
		})
	}
}

// TestDurableExpiryWhileClosed: items whose expiry passes while the store
// is closed are not brought back, and are counted as purged.
func TestDurableExpiryWhileClosed(t *testing.T) {
	t.Parallel()
	for _, checkpoint := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint=%v", checkpoint), func(t *testing.T) {
			dir := t.TempDir()
			clock := lethe.NewManualClock(t0)
			s := openDurable(t, dir, clock)
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 10})
			for i := range 30 {
				ttl := []string{"", `,"ttl":5`, `,"ttl":-1`}[i%3]
				_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":"i%d"%s}`, i, ttl), nil)
				require.NoError(t, err)
			}
			if checkpoint {
				require.NoError(t, s.Checkpoint(ctx))
			}
			require.NoError(t, s.Close())

			clock.Advance(5 * time.Second) // the ttl 5 items expire
			s = openDurable(t, dir, clock)
			c, err := s.Container("c")
			require.NoError(t, err)
			assert.Equal(t, int64(10), s.Recovery().Expired)
			assert.Equal(t, int64(20), s.Recovery().Items)
			st := c.Stats()
			assert.Equal(t, int64(20), st.Items)
			assert.Equal(t, int64(10), st.Purged, "dropped at recovery counts as purged")
			assert.Zero(t, st.ExpiredPending)
			lethe.CheckInvariants(t, c, "after recovery")
			require.NoError(t, s.Close())

			clock.Advance(5 * time.Second) // the inheriting items expire too
			s = openDurable(t, dir, clock)
			defer s.Close()
			c, err = s.Container("c")
			require.NoError(t, err)
			assert.Equal(t, int64(10), c.Stats().Items, "only the ttl -1 items are left")
			for i := range 30 {
				_, err := c.ReadItem(ctx, lethe.NewPartitionKey(), fmt.Sprint("i", i), nil)
				if i%3 == 2 {
					assert.NoError(t, err)
				} else {
					assert.ErrorIs(t, err, lethe.ErrNotFound)
				}
			}
		})
	}
}

// TestDurableExpiryIsFinal: an item expired under an earlier default stays
// expired after the default is raised, across restarts and snapshots.
func TestDurableExpiryIsFinal(t *testing.T) {
	t.Parallel()
	for _, checkpoint := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint=%v", checkpoint), func(t *testing.T) {
			dir := t.TempDir()
			clock := lethe.NewManualClock(t0)
			s := openDurable(t, dir, clock)
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1})
			_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"old"}`), nil)
			require.NoError(t, err)
			clock.Advance(2 * time.Second)
			require.NoError(t, c.Replace(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 100}))
			_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"new"}`), nil)
			require.NoError(t, err)
			assert.False(t, readable(t, c, lethe.NewPartitionKey(), "old"), "expired for good before the restart")
			if checkpoint {
				require.NoError(t, s.Checkpoint(ctx))
			}
			require.NoError(t, s.Close())

			s = openDurable(t, dir, clock)
			defer s.Close()
			c, err = s.Container("c")
			require.NoError(t, err)
			assert.False(t, readable(t, c, lethe.NewPartitionKey(), "old"), "expired for good after the restart")
			assert.True(t, readable(t, c, lethe.NewPartitionKey(), "new"))
			props, err := c.Read(ctx)
			require.NoError(t, err)
			assert.Equal(t, lethe.TTL(100), props.DefaultTimeToLive)
		})
	}
}

// TestDurableCheckpointTrimsLog: a checkpoint leaves one snapshot and the
// log after it.
func TestDurableCheckpointTrimsLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	for round := range 3 {
		for i := range 100 {
			_, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":"i%d","round":%d}`, i, round), nil)
			require.NoError(t, err)
		}
		require.NoError(t, s.Checkpoint(ctx))
	}
	names := lethetesting.DirNames(t, dir)
	var snaps, segs int
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "snap-"):
			snaps++
		case strings.HasPrefix(n, "wal-"):
			segs++
		}
	}
	assert.Equal(t, 1, snaps, "one snapshot: %v", names)
	assert.Equal(t, 1, segs, "only the segment after it: %v", names)
	assert.Equal(t, int64(3), lethe.CheckpointsTaken(s))
	want := dump(t, s)
	require.NoError(t, s.Close())
	s = openDurable(t, dir, clock)
	defer s.Close()
	assert.Equal(t, want, dump(t, s))
	assert.Zero(t, s.Recovery().Frames, "nothing written after the last snapshot")
}

// TestDurableDirectoryLocked: a second Open of a directory in use fails at
// once and touches nothing.
func TestDurableDirectoryLocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openDurable(t, dir, lethe.NewManualClock(t0))
	defer s.Close()
	mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	before := lethetesting.DirNames(t, dir)
	_, err := lethe.Open(&lethe.Options{Dir: dir})
	require.ErrorIs(t, err, lethe.ErrLocked)
	assert.Contains(t, err.Error(), dir)
	assert.Equal(t, before, lethetesting.DirNames(t, dir))
	require.NoError(t, s.Close())
	s2, err := lethe.Open(&lethe.Options{Dir: dir})
	require.NoError(t, err, "free again once the first store closed")
	require.NoError(t, s2.Close())
}

// TestDurableSyncFailure: a failed fsync fails the write, and the store
// refuses writes from then on while reads go on; after a reopen only
// acknowledged writes are there.
func TestDurableSyncFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"kept"}`), nil)
	require.NoError(t, err)
	lethe.SetLogSync(s, func(vfs.File) error { return syscall.EIO })
	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"failed"}`), nil)
	require.ErrorIs(t, err, lethe.ErrUnavailable)
	require.ErrorIs(t, err, syscall.EIO)
	lethe.SetLogSync(s, vfs.File.Sync)
	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"later"}`), nil)
	require.ErrorIs(t, err, lethe.ErrUnavailable, "the store stays read-only")
	_, err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "d"})
	require.ErrorIs(t, err, lethe.ErrUnavailable)
	require.ErrorIs(t, c.Replace(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 5}), lethe.ErrUnavailable)
	require.ErrorIs(t, s.DeleteContainer(ctx, "c"), lethe.ErrUnavailable)
	assert.True(t, readable(t, c, lethe.NewPartitionKey(), "kept"), "reads go on")
	s.Close()

	s = openDurable(t, dir, clock)
	defer s.Close()
	c, err = s.Container("c")
	require.NoError(t, err)
	assert.True(t, readable(t, c, lethe.NewPartitionKey(), "kept"))
	assert.False(t, readable(t, c, lethe.NewPartitionKey(), "later"))
	_, err = s.Container("d")
	require.ErrorIs(t, err, lethe.ErrNotFound)
}

// TestDurableDeleteContainer: a deleted container does not come back, on
// disk either, and one created again with its id starts empty.
func TestDurableDeleteContainer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 60})
	secret := strings.Repeat("s3cr3t", 10)
	for i := range 20 {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":"i%d","v":%q}`, i, secret), nil)
		require.NoError(t, err)
	}
	require.NoError(t, s.DeleteContainer(ctx, "c"))
	c2 := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	_, err := c2.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"only"}`), nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = openDurable(t, dir, clock)
	c, err = s.Container("c")
	require.NoError(t, err)
	assert.Equal(t, int64(1), c.Stats().Items)
	props, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, lethe.TTLOff, props.DefaultTimeToLive, "the new container's settings")

	// The deleted items leave the disk with the next snapshot, which the
	// deletion asked for.
	require.NoError(t, s.DeleteContainer(ctx, "c"))
	require.Eventually(t, func() bool { return lethe.CheckpointsTaken(s) > 0 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, s.Checkpoint(ctx))
	require.NoError(t, s.Close())
	for _, name := range lethetesting.DirNames(t, dir) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.NotContains(t, string(data), secret, name)
	}
}

// TestDurableTornTail: cutting the log anywhere inside its last frame loses
// that write alone, and the recovery reports it.
func TestDurableTornTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	for i := range 3 {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":"i%d"}`, i), nil)
		require.NoError(t, err)
	}
	dir = crashCopy(t, s, dir)
	seg := lethetesting.LastSegment(t, dir)
	full, err := os.ReadFile(seg)
	require.NoError(t, err)
	// The last frame is i2's write: find where it starts by writing it alone.
	frameLen := len(full) - withoutLast(t, full)
	for cut := 1; cut <= frameLen; cut++ {
		work := t.TempDir()
		copyDir(t, dir, work)
		require.NoError(t, os.WriteFile(filepath.Join(work, filepath.Base(seg)), full[:len(full)-cut], 0o644))
		s := openDurable(t, work, clock)
		c, err := s.Container("c")
		require.NoError(t, err)
		assert.True(t, readable(t, c, lethe.NewPartitionKey(), "i1"), "cut %d", cut)
		assert.False(t, readable(t, c, lethe.NewPartitionKey(), "i2"), "cut %d", cut)
		rec := s.Recovery()
		assert.Equal(t, int64(frameLen-cut), rec.TornBytes, "cut %d", cut)
		if cut < frameLen {
			assert.Equal(t, filepath.Base(seg), rec.TornFile, "cut %d", cut)
		} else {
			assert.Empty(t, rec.TornFile, "the whole frame cut off: nothing torn")
		}
		require.NoError(t, s.Close())
		// The torn end is gone for good: the next open finds nothing torn.
		s = openDurable(t, work, clock)
		assert.Zero(t, s.Recovery().TornBytes)
		require.NoError(t, s.Close())
	}
}

// TestDurableTornZeroTail: a power cut while the last writes were on their
// way may leave whole sectors of them and then zeros up to the size the
// file had reached (the file system gave the space, the data never came):
// the frames cut are torn, not damage, wherever the cut falls in them. A
// damaged frame followed by data is still damage.
func TestDurableTornZeroTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	big := strings.Repeat("b", 700)
	for i := range 4 {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":"i%d","b":%q}`, i, big), nil)
		require.NoError(t, err)
	}
	dir = crashCopy(t, s, dir)
	seg := lethetesting.LastSegment(t, dir)
	full, err := os.ReadFile(seg)
	require.NoError(t, err)
	for sector := 512; sector < len(full); sector += 512 {
		work := t.TempDir()
		copyDir(t, dir, work)
		torn := slices.Clone(full)
		clear(torn[sector:])
		require.NoError(t, os.WriteFile(filepath.Join(work, filepath.Base(seg)), torn, 0o644))
		s, err := lethe.Open(&lethe.Options{Dir: work, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
		require.NoError(t, err, "zeros from %d", sector)
		assert.NotZero(t, s.Recovery().TornBytes, "zeros from %d", sector)
		require.NoError(t, s.Close())
	}
	// Zeros in the middle, data after them: damage.
	work := t.TempDir()
	copyDir(t, dir, work)
	damaged := slices.Clone(full)
	clear(damaged[512:1024])
	require.NoError(t, os.WriteFile(filepath.Join(work, filepath.Base(seg)), damaged, 0o644))
	_, err = lethe.Open(&lethe.Options{Dir: work, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	var ce *lethe.CorruptionError
	require.ErrorAs(t, err, &ce)
}

// TestDurablePurgeLogFailed: Purge on a store whose log has failed returns
// ErrUnavailable, as writes do; it does not spin on the items it cannot
// purge.
func TestDurablePurgeLogFailed(t *testing.T) {
	t.Parallel()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, t.TempDir(), clock)
	defer s.Close()
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1})
	_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"x"}`), nil)
	require.NoError(t, err)
	lethe.SetLogSync(s, func(vfs.File) error { return syscall.EIO })
	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"y"}`), nil)
	require.ErrorIs(t, err, syscall.EIO)
	clock.Advance(2 * time.Second)
	done := make(chan error, 1)
	go func() { _, err := c.Purge(ctx); done <- err }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, lethe.ErrUnavailable)
		require.ErrorIs(t, err, syscall.EIO)
	case <-time.After(10 * time.Second):
		t.Fatal("Purge did not return on a failed log")
	}
}

// TestDurableHeaderlessSegment: a last segment that the store created but
// died before writing its header to holds nothing; it is not an error, at
// the first Open or at any later one, once newer segments follow it.
func TestDurableHeaderlessSegment(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 1, 8} {
		t.Run(fmt.Sprint("size=", size), func(t *testing.T) {
			dir := t.TempDir()
			clock := lethe.NewManualClock(t0)
			s := openDurable(t, dir, clock)
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
			create(t, c, `{"id":"before"}`)
			require.NoError(t, s.Close())
			next := filepath.Join(dir, "wal-0000000000000002.log")
			require.NoFileExists(t, next)
			require.NoError(t, os.WriteFile(next, []byte("LETHEWAL\x01")[:size], 0o644))

			for open := range 3 {
				s = openDurable(t, dir, clock)
				rec := s.Recovery()
				if open == 0 {
					assert.Equal(t, int64(size), rec.TornBytes)
				} else {
					assert.Zero(t, rec.TornBytes, "open %d", open)
				}
				c, err := s.Container("c")
				require.NoError(t, err)
				assert.True(t, readable(t, c, lethe.NewPartitionKey(), "before"), "open %d", open)
				create(t, c, fmt.Sprintf(`{"id":"after%d"}`, open))
				require.NoError(t, s.Close())
			}
			s = openDurable(t, dir, clock)
			defer s.Close()
			c, err := s.Container("c")
			require.NoError(t, err)
			assert.Equal(t, int64(4), c.Stats().Items)
		})
	}
}

// TestDurableCorruption: damage before the end of the log, or anywhere in a
// snapshot, is an error naming the file and offset.
func TestDurableCorruption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	for i := range 5 {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":"i%d"}`, i), nil)
		require.NoError(t, err)
	}
	require.NoError(t, s.Checkpoint(ctx))
	for i := range 5 {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":"j%d"}`, i), nil)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	for _, name := range lethetesting.DirNames(t, dir) {
		if name == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		limit := len(data)
		if strings.HasPrefix(name, "wal-") {
			limit = withoutLast(t, data) // damage in the last frame reads as a torn end
		}
		for off := 0; off < limit; off++ {
			work := t.TempDir()
			copyDir(t, dir, work)
			bad := slices.Clone(data)
			bad[off] ^= 0x40
			require.NoError(t, os.WriteFile(filepath.Join(work, name), bad, 0o644))
			s, err := lethe.Open(&lethe.Options{Dir: work, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
			if err == nil {
				s.Close()
				t.Fatalf("%s: a flipped byte at %d was not detected", name, off)
			}
			var ce *lethe.CorruptionError
			require.True(t, errors.As(err, &ce), "%s at %d: %v", name, off, err)
			assert.Equal(t, filepath.Join(work, name), ce.File)
		}
	}
}

// withoutLast returns the offset of the last frame of a log file, reading
// the frames' length fields.
func withoutLast(t testing.TB, data []byte) int {
	t.Helper()
	off := headerLen(data)
	last := off
	for off < len(data) {
		n := int(data[off]) | int(data[off+1])<<8 | int(data[off+2])<<16 | int(data[off+3])<<24
		last, off = off, off+12+n
	}
	require.Equal(t, len(data), off)
	return last
}

// crashCopy returns a copy of the directory of the running store s, as a
// crash would leave it (every write acknowledged under SyncAlways is in
// it), and closes s. A torn end is what a crash leaves: the segment a store
// closed is sealed in its manifest, and one cut short is damage.
func crashCopy(t testing.TB, s *lethe.Store, dir string) string {
	t.Helper()
	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	require.NoError(t, s.Close())
	return crashed
}

func copyDir(t testing.TB, from, to string) {
	t.Helper()
	for _, n := range lethetesting.DirNames(t, from) {
		if n == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, n))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, n), data, 0o644))
	}
}

// TestDurableMissingFiles: a snapshot, log segment or manifest that is
// missing is an error naming it, not a silently smaller store.
func TestDurableMissingFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	for round := range 2 {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":"i%d"}`, round), nil)
		require.NoError(t, err)
		require.NoError(t, s.Checkpoint(ctx))
	}
	_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"last"}`), nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s = openDurable(t, dir, clock) // starts another segment
	require.NoError(t, s.Close())
	for _, name := range lethetesting.DirNames(t, dir) {
		if name == "LOCK" {
			continue
		}
		work := t.TempDir()
		copyDir(t, dir, work)
		require.NoError(t, os.Remove(filepath.Join(work, name)))
		_, err := lethe.Open(&lethe.Options{Dir: work, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
		// Even the newest segment, which holds nothing: the manifest
		// records it, and a missing file is never taken for an empty one.
		var ce *lethe.CorruptionError
		require.True(t, errors.As(err, &ce), "without %s: %v", name, err)
		assert.Equal(t, filepath.Join(work, name), ce.File, "the error names the file")
	}
}

// TestDurableGroupCommit: under SyncAlways, concurrent writers share
// fsyncs, and none is acknowledged before the fsync that covers it.
func TestDurableGroupCommit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openDurable(t, dir, lethe.NewManualClock(t0))
	defer s.Close()
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	var (
		mu     sync.Mutex
		syncs  int
		synced = map[string]bool{} // ids on stable storage, by the fake fsync
		tried  = map[string]bool{}
	)
	lethe.SetLogSync(s, func(f vfs.File) error {
		mu.Lock()
		pending := maps.Clone(tried)
		mu.Unlock()
		time.Sleep(2 * time.Millisecond) // a disk's flush
		err := f.Sync()
		mu.Lock()
		syncs++
		for id := range pending {
			synced[id] = true
		}
		mu.Unlock()
		return err
	})
	const writers, each = 32, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				mu.Lock()
				tried[id] = true
				mu.Unlock()
				_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":%q}`, id), nil)
				assert.NoError(t, err)
				mu.Lock()
				ok := synced[id]
				mu.Unlock()
				assert.True(t, ok, "%s acknowledged before an fsync began after its attempt ended", id)
			}
		})
	}
	wg.Wait()
	t.Logf("%d writes, %d fsyncs", writers*each, syncs)
	assert.Less(t, syncs, writers*each/4, "concurrent writers share fsyncs")
}

// TestDurableFileCutWhileMapped: recovery maps its files (on Linux); a file
// cut short under it (a process that ignored the lock, or a page the disk
// cannot read) makes Open fail with an error, not kill the process.
func TestDurableFileCutWhileMapped(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("recovery maps its files on Linux only")
	}
	dir := t.TempDir()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	s := openDurable(t, dir, clock)
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c"})
	require.NoError(t, err)
	for i := range 2000 {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(fmt.Sprintf(`{"id":"item-%d","pad":"%s"}`, i, strings.Repeat("x", 100))), nil)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	cut := 0
	opts := lethe.WithAfterMap(&lethe.Options{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}, func(path string) {
		if strings.HasPrefix(path, dir) && cut == 0 {
			cut++
			require.NoError(t, os.Truncate(path, 4096))
		}
	})
	_, err = lethe.Open(opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading "+dir)
	assert.Equal(t, 1, cut)
}
