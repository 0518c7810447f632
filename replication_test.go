package lethe_test

import (
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// replicaPair makes a hub container and its replica in two stores on one
// manual clock, both with a change feed and the default TTL def.
func replicaPair(t *testing.T, def lethe.TTL) (hub, replica *lethe.Container, clock *lethe.ManualClock) {
	t.Helper()
	clock = lethe.NewManualClock(t0)
	props := lethe.ContainerProperties{ID: "c", DefaultTimeToLive: def, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}}
	o := &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}
	hub = mustContainer(t, openStore(t, o), props)
	replica = mustContainer(t, openStore(t, o), props)
	return hub, replica, clock
}

// ship applies to replica every change of hub after lsn, and returns the
// position it reached.
func ship(t *testing.T, hub, replica *lethe.Container, lsn uint64, batch int) uint64 {
	t.Helper()
	for {
		chs, last, err := hub.ReplicaChanges(lsn, batch)
		require.NoError(t, err)
		for _, ch := range chs {
			require.NoError(t, replica.ApplyReplicaChange(ctx, ch), "lsn %d", ch.LSN)
		}
		if len(chs) == 0 {
			return last
		}
		lsn = last
	}
}

func TestReplicaApplySmoke(t *testing.T) {
	hub, replica, clock := replicaPair(t, lethe.TTLOff)
	create(t, hub, `{"id":"a","n":1}`)
	clock.Advance(1500 * time.Millisecond)
	upsert(t, hub, `{"id":"a","n":2}`)
	create(t, hub, `{"id":"b"}`)
	_, err := hub.DeleteItem(ctx, lethe.NewPartitionKey(), "b", nil)
	require.NoError(t, err)
	clock.Advance(time.Second)
	ship(t, hub, replica, 0, 2)
	h, err := hub.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.NoError(t, err)
	r, err := replica.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	require.NoError(t, err)
	require.Equal(t, string(h.Value), string(r.Value))
	_, err = replica.ReadItem(ctx, lethe.NewPartitionKey(), "b", nil)
	require.Equal(t, 404, status(err))
}
