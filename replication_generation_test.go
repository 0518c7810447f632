package lethe_test

import (
	"testing"

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
