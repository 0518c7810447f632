package lethe_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The smaller defects found in review, each pinned.

// TestIfMatchQuotedETag: azcosmos passes an azcore.ETag, which carries the
// quotes of an HTTP entity tag.
func TestIfMatchQuotedETag(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	r := create(t, c, `{"id":"a"}`)
	quoted := &lethe.ItemOptions{IfMatchEtag: `"` + r.ETag + `"`}
	r2, err := c.ReplaceItem(ctx, lethe.NewPartitionKey(), "a", []byte(`{"id":"a","v":1}`), quoted)
	require.NoError(t, err)
	_, err = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a","v":2}`), &lethe.ItemOptions{IfMatchEtag: `"` + r2.ETag + `"`})
	require.NoError(t, err)
	for _, bad := range []string{`"` + r.ETag + `"`, `"` + r.ETag, r.ETag + `"`, `""`, `"`} {
		_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "a", &lethe.ItemOptions{IfMatchEtag: bad})
		require.ErrorIs(t, err, lethe.ErrPreconditionFailed, bad)
	}
}

// TestIndexingModeAnyCase: azcosmos spells the modes "Consistent", "Lazy"
// and "None"; they are kept in their canonical lower case.
func TestIndexingModeAnyCase(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	for i, mode := range []string{"Consistent", "LAZY", "consistent"} {
		id := "c" + string(rune('0'+i))
		c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: id, DefaultTimeToLive: 10,
			IndexingPolicy: &lethe.IndexingPolicy{IndexingMode: lethe.IndexingMode(mode)}})
		require.NoError(t, err, mode)
		p, err := c.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, lethe.IndexingMode(strings.ToLower(mode)), p.IndexingPolicy.IndexingMode)
	}
	_, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "n", DefaultTimeToLive: 10,
		IndexingPolicy: &lethe.IndexingPolicy{IndexingMode: "None"}})
	require.ErrorIs(t, err, lethe.ErrBadRequest, "None in any case is none: no default TTL")
	_, err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "x",
		IndexingPolicy: &lethe.IndexingPolicy{IndexingMode: "sometimes"}})
	require.ErrorIs(t, err, lethe.ErrBadRequest)
}

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

func TestTTLFromDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want lethe.TTL
	}{
		{time.Second, 1},
		{time.Nanosecond, 1},
		{1200 * time.Millisecond, 2},
		{2 * time.Second, 2},
		{2*time.Second + 1, 3},
		{time.Hour, 3600},
		{0, 1},
		{-time.Hour, 1},
		{math.MinInt64, 1},
		{time.Duration(lethe.MaxTTL) * time.Second, lethe.MaxTTL},
		{time.Duration(lethe.MaxTTL)*time.Second + 1, lethe.MaxTTL},
		{math.MaxInt64, lethe.MaxTTL},
	} {
		got := lethe.TTLFromDuration(tc.d)
		assert.Equal(t, tc.want, got, "%v", tc.d)
		assert.Positive(t, got, "never off or never-expire")
		if tc.d > 0 && tc.d <= time.Duration(lethe.MaxTTL)*time.Second {
			assert.GreaterOrEqual(t, got.Duration(), tc.d, "rounds up")
			assert.Less(t, got.Duration()-tc.d, time.Second)
		}
	}
}
