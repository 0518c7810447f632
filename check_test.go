package lethe_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapshotFiles returns every file of dir and its contents.
func snapshotFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		files[e.Name()] = string(mustRead(t, filepath.Join(dir, e.Name())))
	}
	return files
}

// TestCheck: Check reports what Open would recover and repair (the items,
// the expired ones, a torn end, an unfinished snapshot) and changes no
// file; damage is Open's *CorruptionError; a store in use is ErrLocked.
func TestCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(time.Now().Add(-time.Hour)) // Check reads the system clock
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 60})
	require.NoError(t, putDoc(c, "expired")) // written an hour ago, 60 s to live
	_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"live","ttl":-1}`), nil)
	require.NoError(t, err)
	require.NoError(t, s.Checkpoint(ctx))
	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"live2","ttl":-1}`), nil)
	require.NoError(t, err)

	_, err = lethe.Check(dir)
	require.ErrorIs(t, err, lethe.ErrLocked, "the store is open")
	// A torn end is what a crash leaves (a segment the store closed is
	// sealed in its manifest): check a copy taken while it runs.
	dir = crashCopy(t, s, dir)

	seg := lethetesting.LastSegment(t, dir)
	require.NoError(t, os.WriteFile(seg, append(mustRead(t, seg), 7, 7, 7), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "snap-00000000000000ff.db.tmp"), []byte("half"), 0o644))
	before := snapshotFiles(t, dir)

	ri, err := lethe.Check(dir)
	require.NoError(t, err)
	assert.NotEmpty(t, ri.Snapshot)
	assert.Equal(t, 1, ri.Segments)
	assert.Equal(t, int64(2), ri.Items)
	assert.Equal(t, int64(1), ri.Expired)
	assert.Equal(t, filepath.Base(seg), ri.TornFile)
	assert.Equal(t, int64(3), ri.TornBytes)
	assert.Equal(t, []string{"snap-00000000000000ff.db.tmp"}, ri.Unfinished)
	assert.Equal(t, before, snapshotFiles(t, dir), "Check changed nothing")

	// Open does what Check said.
	s = openDurable(t, dir, lethe.NewManualClock(time.Now()))
	got := s.Recovery()
	require.NoError(t, s.Close())
	assert.Equal(t, ri.Items, got.Items)
	assert.Equal(t, ri.TornBytes, got.TornBytes)
	assert.Equal(t, ri.Unfinished, got.Unfinished)
	_, err = os.Stat(filepath.Join(dir, "snap-00000000000000ff.db.tmp"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "Open removed it")

	// Damage in the middle of the log: Open's error.
	s = openDurable(t, dir, lethe.NewManualClock(time.Now()))
	c, err = s.Container("c")
	require.NoError(t, err)
	require.NoError(t, putDoc(c, "x"))
	require.NoError(t, putDoc(c, "y"))
	require.NoError(t, putDoc(c, "z"))
	require.NoError(t, s.Close())
	seg = lethetesting.LastSegment(t, dir)
	b := mustRead(t, seg)
	b[20] ^= 0xff // inside the first frame, others after it
	require.NoError(t, os.WriteFile(seg, b, 0o644))
	before = snapshotFiles(t, dir)
	_, err = lethe.Check(dir)
	var ce *lethe.CorruptionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, seg, ce.File)
	assert.Equal(t, before, snapshotFiles(t, dir))

	_, err = lethe.Check(filepath.Join(dir, "nothing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
