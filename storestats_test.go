package lethe_test

import (
	"syscall"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoreStats: a durable store counts the bytes its log wrote, its
// fsyncs (one per acknowledged write under SyncAlways, when writes come
// one at a time) and its snapshots, and says when its log failed; a store
// in memory reports zeros.
func TestStoreStats(t *testing.T) {
	t.Parallel()
	mem, _ := newStore(t)
	mustContainer(t, mem, lethe.ContainerProperties{ID: "c"})
	assert.Equal(t, lethe.StoreStats{}, mem.Stats())

	s, efs := openFaulty(t, t.TempDir())
	defer s.Close()
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	before := s.Stats()
	require.NoError(t, putDoc(c, "a"))
	after := s.Stats()
	assert.Greater(t, after.LogBytes, before.LogBytes, "the write's frame")
	assert.Equal(t, before.LogSyncs+1, after.LogSyncs, "one fsync for the write")
	assert.GreaterOrEqual(t, int64(efs.Count(vfstest.OpSync)), after.LogSyncs, "no fsync counted that was not made")
	require.NoError(t, s.Checkpoint(ctx))
	assert.Equal(t, after.Checkpoints+1, s.Stats().Checkpoints)
	assert.False(t, s.Stats().LogFailed)

	efs.Inject(vfstest.Fault{Op: vfstest.OpSync, N: 1, Err: syscall.EIO})
	require.Error(t, putDoc(c, "b"))
	assert.True(t, s.Stats().LogFailed)
}
