package lethe_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// t0 is the instant every test clock starts at.
var t0 = time.Unix(1_700_000_000, 0)

var ctx = context.Background()

// newStore opens a store on a manual clock with the reaper disabled, so
// that tests decide when time passes and when purges happen.
func newStore(t testing.TB) (*lethe.Store, *lethe.ManualClock) {
	t.Helper()
	clock := lethe.NewManualClock(t0)
	return openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}), clock
}

// openStore opens a store with o, and closes it when the test ends: the
// one place the tests that keep a store to the end open it.
func openStore(t testing.TB, o *lethe.Options) *lethe.Store {
	t.Helper()
	s, err := lethe.Open(o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// newContainer opens a store and creates one container in it with the
// default TTL def.
func newContainer(t testing.TB, def lethe.TTL) (*lethe.Container, *lethe.ManualClock) {
	t.Helper()
	s, clock := newStore(t)
	return mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: def}), clock
}

// mustContainer creates a container in s.
func mustContainer(t testing.TB, s *lethe.Store, props lethe.ContainerProperties) *lethe.Container {
	t.Helper()
	c, err := s.CreateContainer(ctx, props)
	require.NoError(t, err)
	return c
}

// create creates the item doc in c.
func create(t testing.TB, c *lethe.Container, doc string) lethe.ItemResponse {
	t.Helper()
	r, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(doc), nil)
	require.NoError(t, err)
	return r
}

// upsert upserts the item doc in c.
func upsert(t testing.TB, c *lethe.Container, doc string) lethe.ItemResponse {
	t.Helper()
	r, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(doc), nil)
	require.NoError(t, err, "%.80q", doc)
	return r
}

// status returns the status code of err, 0 for nil, -1 for an error that is
// not an *lethe.Error.
func status(err error) int {
	if err == nil {
		return 0
	}
	var e *lethe.Error
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return -1
}

// exists reports whether id can be read.
func exists(t testing.TB, c *lethe.Container, id string) bool {
	t.Helper()
	_, err := c.ReadItem(ctx, lethe.NewPartitionKey(), id, nil)
	if err != nil {
		require.ErrorIs(t, err, lethe.ErrNotFound)
		return false
	}
	return true
}

// setDefault changes the container's default TTL.
func setDefault(t testing.TB, c *lethe.Container, def lethe.TTL) {
	t.Helper()
	p, err := c.Read(ctx)
	require.NoError(t, err)
	p.DefaultTimeToLive = def
	require.NoError(t, c.Replace(ctx, p))
}

// writeWhileBuilding sets the hook the index builds call after each shard
// so that, after every fourth shard, 20 writes land in c's partition "a"
// among its n items (made by doc): upserts, deletes, new items and items
// given a ttl of 1 second. The writes are serialized by mu, since several
// indexes may be built at once. The hook is cleared at cleanup. The
// function returned tells how many rounds of writes have landed.
func writeWhileBuilding(t *testing.T, c *lethe.Container, n int, doc func(id string, i int, ttl string) []byte) (rounds func() int) {
	t.Helper()
	var mu sync.Mutex
	n0 := 0
	lethe.SetAfterBuildShard(c, func(shard int) {
		if shard%4 != 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		n0++
		for j := range 20 {
			i := (n0*97 + j*53) % n
			var err error
			switch j % 4 {
			case 0:
				_, err = c.UpsertItem(ctx, lethe.NewPartitionKeyString("a"), doc(fmt.Sprintf("i%d", i), i+n0, ""), nil)
			case 1:
				_, err = c.DeleteItem(ctx, lethe.NewPartitionKeyString("a"), fmt.Sprintf("i%d", i), nil)
				if errors.Is(err, lethe.ErrNotFound) {
					err = nil
				}
			case 2:
				_, err = c.UpsertItem(ctx, lethe.NewPartitionKeyString("a"), doc(fmt.Sprintf("new%d-%d", n0, j), j, ""), nil)
			case 3:
				_, err = c.UpsertItem(ctx, lethe.NewPartitionKeyString("a"), doc(fmt.Sprintf("i%d", i), i, `,"ttl":1`), nil)
			}
			require.NoError(t, err)
		}
	})
	t.Cleanup(func() { lethe.SetAfterBuildShard(c, nil) })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n0
	}
}
