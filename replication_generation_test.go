package lethe_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// genOf returns the generation the ETag of a version holds.
func genOf(t testing.TB, etag string) uint64 {
	t.Helper()
	g, ok := lethe.ETagGeneration(etag)
	require.True(t, ok, "%q is no ETag of the store's", etag)
	return g
}

// TestReplicaRecreateAfterForgottenDelete: a region whose change feed no
// longer keeps an item's delete creates the item again after the delete
// all the same, and the other region, whose feed still keeps it, takes
// the new version: the regions converge.
func TestReplicaRecreateAfterForgottenDelete(t *testing.T) {
	clock := lethe.NewManualClock(t0)
	var a, b *lethe.Container
	for i, keep := range []int{2, 0} { // a's feed keeps 2 changes, b's the default
		s := openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}, WriteRegions: 2, WriteRegion: i})
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever,
			ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: keep}})
		if i == 0 {
			a = c
		} else {
			b = c
		}
	}
	var from uint64 // a's last change b holds
	shipAB := func() {
		t.Helper()
		for _, ch := range changesOf(t, a, from) {
			resolved(t, b, ch, lethe.ConflictRule{})
			from = ch.LSN
		}
	}
	create(t, a, `{"id":"x","n":1}`)
	shipAB()
	_, err := a.DeleteItem(ctx, noPK, "x", nil)
	require.NoError(t, err)
	shipAB()
	for _, id := range []string{"y1", "y2"} { // a's feed forgets x's delete
		create(t, a, `{"id":"`+id+`"}`)
		shipAB()
	}
	again := create(t, a, `{"id":"x","n":2}`)
	require.Equal(t, uint64(1), genOf(t, again.ETag), "created again after one delete")
	shipAB()
	require.Equal(t, readOrNil(t, a, "x"), readOrNil(t, b, "x"))
}

// TestTombstonesSurviveRestart: in a store of several write regions, an
// item removed (deleted, alone or in a batch; expired, purged or not) and
// created again after a restart, whose change feed has forgotten the
// removal or which keeps none, takes the generation after the removed
// version's, whether the removal came back from the log (a crash) or
// from a snapshot.
func TestTombstonesSurviveRestart(t *testing.T) {
	t.Parallel()
	removals := []struct {
		name   string
		remove func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock)
	}{
		{"delete", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) {
			_, err := c.DeleteItem(ctx, noPK, "x", nil)
			require.NoError(t, err)
		}},
		{"batch delete", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) {
			b := c.NewTransactionalBatch(noPK)
			b.DeleteItem("x", nil)
			_, err := c.ExecuteTransactionalBatch(ctx, b, nil)
			require.NoError(t, err)
		}},
		{"expiry", func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock) {
			upsert(t, c, `{"id":"x","ttl":1}`)
			clock.Advance(2 * time.Second)
		}},
		{"expiry purged", func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock) {
			upsert(t, c, `{"id":"x","ttl":1}`)
			clock.Advance(2 * time.Second)
			n, err := c.Purge(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, n)
		}},
	}
	feeds := []struct {
		name string
		feed *lethe.ChangeFeedPolicy
	}{{"no feed", nil}, {"a feed of one change", &lethe.ChangeFeedPolicy{MaxChanges: 1}}}
	for _, rm := range removals {
		for _, fd := range feeds {
			for _, snapshot := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s, %s, snapshot %v", rm.name, fd.name, snapshot), func(t *testing.T) {
					t.Parallel()
					dir, clock := t.TempDir(), lethe.NewManualClock(t0)
					o := &lethe.Options{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}, WriteRegions: 2, WriteRegion: 1}
					s, err := lethe.Open(o)
					require.NoError(t, err)
					c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever, ChangeFeedPolicy: fd.feed})
					create(t, c, `{"id":"x"}`)
					_, err = c.DeleteItem(ctx, noPK, "x", nil)
					require.NoError(t, err)
					require.Equal(t, uint64(1), genOf(t, create(t, c, `{"id":"x"}`).ETag))
					rm.remove(t, c, clock)
					create(t, c, `{"id":"y"}`) // the feed forgets the removal
					if snapshot {
						require.NoError(t, s.Checkpoint(ctx))
					}
					crashed := crashCopy(t, s, dir)

					o.Dir = crashed
					s = openStore(t, o)
					c, err = s.Container("c")
					require.NoError(t, err)
					require.Equal(t, uint64(2), genOf(t, create(t, c, `{"id":"x"}`).ETag), "created again after two removals")
					require.NoError(t, s.Checkpoint(ctx))
					_, err = c.DeleteItem(ctx, noPK, "y", nil)
					require.NoError(t, err)
					require.NoError(t, s.Checkpoint(ctx))

					// A store that is the only writer opens the directory,
					// and has no use for its tombstones.
					o.WriteRegions, o.WriteRegion = 0, 0
					require.NoError(t, s.Close())
					openStore(t, o)
				})
			}
		}
	}
}
