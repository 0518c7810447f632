package lethe_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replicaChanges returns every change c's feed keeps.
func replicaChanges(t *testing.T, c *lethe.Container) []lethe.ReplicaChange {
	t.Helper()
	chs, _, err := c.ReplicaChanges(0, 0)
	require.NoError(t, err)
	return chs
}

// TestSnapshotKeepsReplaces: a snapshot keeps the ETag each replace in the
// change feed replaced, also where the feed no longer holds the replaced
// version's change, so that ReplicaChanges reports the same Replaces
// after a restart from it (and from a snapshot taken after that restart)
// as before. Format 4 lost it; replicas then saw conflicts that were none.
func TestSnapshotKeepsReplaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 3}})
	a1 := create(t, c, `{"id":"a","v":1}`) // lsn 1
	b1 := create(t, c, `{"id":"b","v":1}`) // lsn 2
	create(t, c, `{"id":"c","v":1}`)       // lsn 3
	a2 := upsert(t, c, `{"id":"a","v":2}`) // lsn 4: replaces lsn 1, trimmed
	upsert(t, c, `{"id":"b","v":2}`)       // lsn 5: replaces lsn 2, trimmed
	upsert(t, c, `{"id":"a","v":3}`)       // lsn 6: replaces lsn 4, kept
	want := replicaChanges(t, c)
	require.Len(t, want, 3)
	for i, replaced := range []string{a1.ETag, b1.ETag, a2.ETag} {
		require.Equal(t, replaced, want[i].Replaces, "lsn %d", want[i].LSN)
	}
	for round := range 2 {
		require.NoError(t, s.Checkpoint(ctx))
		require.NoError(t, s.Close())
		s = openDurable(t, dir, clock)
		c, err := s.Container("c")
		require.NoError(t, err)
		assert.Equal(t, want, replicaChanges(t, c), "after restart %d", round+1)
	}
	require.NoError(t, s.Close())
}

// TestOpensFormat4FeedSnapshot: testdata/store-v4-feed was written by
// lethe at format 4 (before snapshots kept what a replace replaced; a
// temporary test at that commit wrote it): container "feed", change feed
// MaxChanges 3, upserts of a, b, c, a, b, a at lsn 1 to 6, a snapshot
// holding lsn 4 to 6, then in the log an upsert of c (lsn 7). It opens;
// the replace whose previous change the snapshot holds (lsn 6) and the one
// replayed from the log (lsn 7) report what they replaced, the one whose
// previous change was trimmed before the snapshot (lsn 5) cannot, as
// before. A snapshot taken then is of format 5, and keeps all that.
func TestOpensFormat4FeedSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyDir(t, "testdata/store-v4-feed", dir)
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c, err := s.Container("feed")
	require.NoError(t, err)
	chs := replicaChanges(t, c)
	got := func(chs []lethe.ReplicaChange) []string {
		var out []string
		for _, ch := range chs {
			out = append(out, ch.ID+" "+ch.ETag+" replaces "+ch.Replaces)
		}
		return out
	}
	want := []string{
		"b 0000000000000006 replaces ",
		"a 0000000000000007 replaces 0000000000000005",
		"c 0000000000000008 replaces 0000000000000004",
	}
	require.Equal(t, want, got(chs))
	require.NoError(t, s.Checkpoint(ctx))
	require.NoError(t, s.Close())
	names, err := filepath.Glob(filepath.Join(dir, "snap-*.db"))
	require.NoError(t, err)
	require.Len(t, names, 1)
	data, err := os.ReadFile(names[0])
	require.NoError(t, err)
	require.Equal(t, byte(5), data[len("LETHESNP")], "the new snapshot's format")
	s = openDurable(t, dir, clock)
	defer s.Close()
	c, err = s.Container("feed")
	require.NoError(t, err)
	require.Equal(t, chs, replicaChanges(t, c))
}

// TestReplicaFollowsAfterSnapshotRestart: a replica that holds an item's
// version applies the origin's replace of it, made before the origin
// restarted from a snapshot that no longer held the replaced version's
// change, as following from it, not as a conflict.
func TestReplicaFollowsAfterSnapshotRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	hub := openDurable(t, dir, clock)
	props := lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 1}}
	c := mustContainer(t, hub, props)
	replica := mustContainer(t, openStore(t, &lethe.Options{Clock: clock}), props)
	create(t, c, `{"id":"a","v":1}`)
	for _, ch := range replicaChanges(t, c) {
		require.Equal(t, lethe.ConflictOutcome{Applied: true}, resolved(t, replica, ch, lethe.ConflictRule{}))
	}
	clock.Advance(time.Second)
	upsert(t, c, `{"id":"a","v":2}`) // the feed forgets the create
	require.NoError(t, hub.Checkpoint(ctx))
	require.NoError(t, hub.Close())
	hub = openDurable(t, dir, clock)
	defer hub.Close()
	c, err := hub.Container("c")
	require.NoError(t, err)
	chs := replicaChanges(t, c)
	require.Len(t, chs, 1)
	assert.Equal(t, lethe.ConflictOutcome{Applied: true}, resolved(t, replica, chs[0], lethe.ConflictRule{}))
}
