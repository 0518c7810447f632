package lethe_test

import (
	"strings"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The errors' messages, as the store words them.

// TestErrorMessages: long ids are clipped, a container is named once, and
// ReplaceItem calls an invalid id invalid rather than mismatched.
func TestErrorMessages(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "box"})
	require.NoError(t, err)

	long := strings.Repeat("é", 500) // 1000 bytes: a valid id
	_, err = c.ReadItem(ctx, lethe.NewPartitionKey(), long, nil)
	require.ErrorIs(t, err, lethe.ErrNotFound)
	assert.Less(t, len(err.Error()), 250, "a long id is clipped: %s", err)
	assert.Contains(t, err.Error(), "...")
	var e *lethe.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, long, e.ItemID, "the error's field keeps the whole id")

	_, err = s.Container("nope")
	require.ErrorIs(t, err, lethe.ErrNotFound)
	assert.NotContains(t, err.Error(), "Container container")
	assert.Contains(t, err.Error(), `Container "nope"`)
	err = s.DeleteContainer(ctx, "nope")
	assert.Contains(t, err.Error(), `DeleteContainer "nope"`)
	_, err = c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
	assert.Contains(t, err.Error(), `ReadItem container "box" item "a"`)

	_, err = c.ReplaceItem(ctx, lethe.NewPartitionKey(), "a\xffb", []byte(`{"id":"ab"}`), nil)
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	assert.Contains(t, err.Error(), "not valid UTF-8")
	_, err = c.ReplaceItem(ctx, lethe.NewPartitionKey(), strings.Repeat("x", 2000), []byte(`{"id":"ab"}`), nil)
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	assert.Contains(t, err.Error(), "over the limit")
	assert.Less(t, len(err.Error()), 400)
}
