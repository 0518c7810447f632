package lethe_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// TestReviewResumeNeverStoredInstantOrder: a writer's instants are not in
// the order of its ETags: a write takes its instant under its item's shard
// lock, and its ETag later (after its unique key check), so a write to
// another shard may take a later instant and an earlier ETag meanwhile.
// ChangeFeedResumeLSN, for a version the replica never stored, reads on
// from that version's instant, and so passes over the version after it
// (a higher ETag) made at an earlier instant: a change after last lost.
func TestReviewResumeNeverStoredInstantOrder(t *testing.T) {
	clock := lethe.NewManualClock(t0)
	props := regionUniqueProps()
	o := &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}
	hub := mustContainer(t, openStore(t, o), props)
	replica := mustContainer(t, openStore(t, o), props)
	create(t, hub, `{"id":"a","email":"a","handle":"a"}`)
	late := ""
	for i := range 100 {
		if id := fmt.Sprint("late", i); !lethe.SameShard(hub, noPK, id, "b") {
			late = id
			break
		}
	}
	require.NotEmpty(t, late)

	// late takes its instant, then waits after its unique check while b
	// is written a second later; then it takes its ETag, after b's.
	var calls atomic.Int32
	checked, release := make(chan struct{}), make(chan struct{})
	lethe.SetAfterUniqueCheck(hub, func() {
		if calls.Add(1) == 1 {
			close(checked)
			<-release
		}
	})
	done := make(chan error, 1)
	go func() {
		_, err := hub.CreateItem(ctx, noPK, []byte(`{"id":"`+late+`","email":"l","handle":"l"}`), nil)
		done <- err
	}()
	select {
	case <-checked:
	case err := <-done:
		t.Fatalf("the write of %s ended before its unique check: %v", late, err)
	}
	clock.Advance(time.Second)
	b := create(t, hub, `{"id":"b","email":"b","handle":"b"}`)
	close(release)
	require.NoError(t, <-done)
	lethe.SetAfterUniqueCheck(hub, nil)

	// The reader is given a and b in the hub; the replica never stored b
	// (as ChangeFeedResumeLSN allows), and holds a and late.
	chs, _, err := hub.ReplicaChanges(0, 0)
	require.NoError(t, err)
	require.Len(t, chs, 3)
	require.Equal(t, b.ETag, chs[1].ETag, "b is the hub's second change")
	for _, ch := range []lethe.ReplicaChange{chs[0], chs[2]} {
		require.NoError(t, replica.ApplyReplicaChange(ctx, ch))
	}
	require.Equal(t, []string{"create " + late}, resumeIn(t, replica, lethe.ChangeFeedVersion{ETag: b.ETag, Written: t0.Add(time.Second)}, time.Time{}),
		"the change after b, of a higher ETag, is read on")
}
