package lethe_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeleteAllItemsByPartitionKey: every item live in the partition is
// deleted, counted and charged as its delete is; expired items are not
// counted, other partitions are untouched, and a read or query of the
// partition finds nothing once the call returns.
func TestDeleteAllItemsByPartitionKey(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	a, b := lethe.NewPartitionKeyString("a"), lethe.NewPartitionKeyString("b")
	for i := range 30 {
		ttl := ""
		if i%10 == 0 {
			ttl = `,"ttl":5` // three of a's expire before the delete
		}
		_, err := c.CreateItem(ctx, a, fmt.Appendf(nil, `{"id":"%d","pk":"a"%s}`, i, ttl), nil)
		require.NoError(t, err)
		_, err = c.CreateItem(ctx, b, fmt.Appendf(nil, `{"id":"%d","pk":"b"}`, i), nil)
		require.NoError(t, err)
	}
	clock.Advance(6 * time.Second)
	one, err := c.DeleteItem(ctx, a, "1", nil)
	require.NoError(t, err)

	r, err := c.DeleteAllItemsByPartitionKey(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, 26, r.Deleted, "30, less three expired and one deleted before")
	assert.Greater(t, r.RequestCharge, 26*one.RequestCharge, "each delete, and the query for the ids")
	for i := range 30 {
		_, err := c.ReadItem(ctx, a, fmt.Sprint(i), nil)
		assert.ErrorIs(t, err, lethe.ErrNotFound, "a/%d", i)
		_, err = c.ReadItem(ctx, b, fmt.Sprint(i), nil)
		assert.NoError(t, err, "b/%d stays", i)
	}
	got, _ := queryAll(t, c, "SELECT VALUE COUNT(1) FROM c", nil, a)
	assert.Equal(t, []string{"0"}, got)
	got, _ = queryAll(t, c, "SELECT VALUE COUNT(1) FROM c", nil, lethe.NewPartitionKey())
	assert.Equal(t, []string{"30"}, got)

	// Again: nothing left to delete.
	r, err = c.DeleteAllItemsByPartitionKey(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, 0, r.Deleted)
}

// TestDeleteAllItemsByPartitionKeyRefusals: a key that is not a full key of
// the container's paths is a bad request and deletes nothing; a deleted
// container is not found.
func TestDeleteAllItemsByPartitionKeyRefusals(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "h",
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/t", "/u"}, Kind: lethe.PartitionKeyKindMultiHash}})
	full := lethe.NewPartitionKeyString("x").AppendString("y")
	_, err := c.CreateItem(ctx, full, []byte(`{"id":"1","t":"x","u":"y"}`), nil)
	require.NoError(t, err)
	for _, pk := range []lethe.PartitionKey{lethe.NewPartitionKeyString("x"), lethe.NewPartitionKey()} {
		r, err := c.DeleteAllItemsByPartitionKey(ctx, pk)
		require.ErrorIs(t, err, lethe.ErrBadRequest, "%v", pk)
		assert.Contains(t, err.Error(), "DeleteAllItemsByPartitionKey")
		assert.Equal(t, 0, r.Deleted)
	}
	_, err = c.ReadItem(ctx, full, "1", nil)
	require.NoError(t, err, "nothing deleted")
	require.NoError(t, s.DeleteContainer(ctx, "h"))
	_, err = c.DeleteAllItemsByPartitionKey(ctx, full)
	assert.ErrorIs(t, err, lethe.ErrNotFound)
}

// TestDeleteAllItemsByPartitionKeyThrottled: on a container whose budget
// runs out it fails with ErrTooManyRequests, keeping the deletes made; a
// call after the budget refills goes on, until the partition is empty.
func TestDeleteAllItemsByPartitionKeyThrottled(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "t", Throughput: 400,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	pk := lethe.NewPartitionKeyString("a")
	const n = 150
	for i := range n {
		clock.Advance(100 * time.Millisecond) // within the budget
		_, err := c.CreateItem(ctx, pk, fmt.Appendf(nil, `{"id":"%d","pk":"a"}`, i), nil)
		require.NoError(t, err)
	}
	clock.Advance(time.Second)
	deleted, calls := 0, 0
	for {
		calls++
		require.Less(t, calls, 50)
		r, err := c.DeleteAllItemsByPartitionKey(ctx, pk)
		deleted += r.Deleted
		if err == nil {
			break
		}
		var e *lethe.Error
		require.True(t, errors.As(err, &e) && errors.Is(err, lethe.ErrTooManyRequests), "%v", err)
		clock.Advance(time.Second)
	}
	assert.Greater(t, calls, 1, "400 RU/s do not delete 150 items at once")
	assert.Equal(t, n, deleted)
	got, _ := queryAll(t, c, "SELECT VALUE COUNT(1) FROM c", nil, pk)
	assert.Equal(t, []string{"0"}, got)
}

// TestDeleteAllItemsByPartitionKeyDurable: the deletes are logged as any
// delete: the partition stays empty after a reopen.
func TestDeleteAllItemsByPartitionKeyDurable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	for _, p := range []string{"a", "b"} {
		for i := range 5 {
			_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString(p), fmt.Appendf(nil, `{"id":"%d","pk":%q}`, i, p), nil)
			require.NoError(t, err)
		}
	}
	r, err := c.DeleteAllItemsByPartitionKey(ctx, lethe.NewPartitionKeyString("a"))
	require.NoError(t, err)
	require.Equal(t, 5, r.Deleted)
	require.NoError(t, s.Close())
	s = openDurable(t, dir, clock)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	c, err = s.Container("c")
	require.NoError(t, err)
	got, _ := queryAll(t, c, "SELECT VALUE c.pk FROM c", nil, lethe.NewPartitionKey())
	assert.Equal(t, []string{`"b"`, `"b"`, `"b"`, `"b"`, `"b"`}, got)
}
