package lethe

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSnapshotReplacedMalformed: a snapshot's change feed entry that says
// a create replaced a version fails Open with a *CorruptionError naming
// the snapshot, as any other malformed entry does.
func TestSnapshotReplacedMalformed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(&Options{Dir: dir, Sync: SyncNever, Reaper: ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	c, err := s.CreateContainer(ctx, ContainerProperties{ID: "c", ChangeFeedPolicy: &ChangeFeedPolicy{}})
	require.NoError(t, err)
	for _, doc := range []string{`{"id":"a"}`, `{"id":"a","v":2}`} {
		_, err := c.UpsertItem(ctx, NewPartitionKey(), []byte(doc), nil)
		require.NoError(t, err)
	}
	c.mu.Lock()
	f := c.mu.feed.history
	require.Equal(t, f.entry(1).rec.seq(), f.entry(2).replaced, "the replace's")
	f.entry(1).replaced = 1 // the create's
	c.mu.Unlock()
	require.NoError(t, s.Checkpoint(ctx))
	require.NoError(t, s.Close())

	_, err = Open(&Options{Dir: dir, Sync: SyncNever, Reaper: ReaperOptions{Disabled: true}})
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, filepath.Join(dir, snapshotName(2)), ce.File)
	require.Equal(t, "a change of the change feed state is malformed", ce.Reason)
}
