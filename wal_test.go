package lethe

import (
	"syscall"
	"testing"

	"github.com/lethedb/lethe/internal/vfs"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWALLostTickets: the tickets of the writes a full disk refused stay
// refused once the log heals and its end passes them, for a waiter that
// wakes late (wait) and for a container's queue of pending changes
// (durable, lostIn): a heal never turns a refused write into a durable
// one.
func TestWALLostTickets(t *testing.T) {
	efs := vfstest.NewErrorFS(vfs.OS)
	w, err := openWAL(efs, t.TempDir(), newStoreID(), 1, SyncAlways, nil, nil)
	require.NoError(t, err)
	defer w.close()
	w.retryEvery = 0
	add := func() (uint64, error) { return w.addContainer(frameSettings, 1, 0, []byte("{}")) }

	kept, err := add()
	require.NoError(t, err)
	require.NoError(t, w.wait(kept))
	efs.SetFull(true)
	refused, err := add()
	require.NoError(t, err, "appended: the write fails at the disk")
	require.ErrorIs(t, w.wait(refused), syscall.ENOSPC)
	_, err = add()
	require.Error(t, err, "still full: the retry fails")

	efs.SetFull(false)
	healed, err := add()
	require.NoError(t, err, "with room, the log heals")
	require.NoError(t, w.wait(healed))
	require.Greater(t, healed, refused)

	assert.Error(t, w.wait(refused), "a refused write stays refused")
	end, lost, failed := w.durable()
	require.NoError(t, failed)
	assert.GreaterOrEqual(t, end, refused)
	assert.Error(t, lostIn(lost, refused))
	assert.NoError(t, lostIn(lost, kept))
	assert.NoError(t, lostIn(lost, healed))
}
