package lethe_test

import (
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestItemExpiry: when a live item expires, by its own ttl or the
// container's default, none under -1 or with TTL off, and ErrNotFound once
// it has expired or for an item that never was.
func TestItemExpiry(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		def     lethe.TTL
		doc     string
		expires time.Duration // 0: never
	}{
		{"default", 60, `{"id":"a"}`, 60 * time.Second},
		{"own ttl", 60, `{"id":"a","ttl":5}`, 5 * time.Second},
		{"own -1", 60, `{"id":"a","ttl":-1}`, 0},
		{"default -1", lethe.TTLNever, `{"id":"a"}`, 0},
		{"default -1, own ttl", lethe.TTLNever, `{"id":"a","ttl":7}`, 7 * time.Second},
		{"ttl off", lethe.TTLOff, `{"id":"a","ttl":7}`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, clock := newContainer(t, tc.def)
			written := clock.Now()
			create(t, c, tc.doc)
			pk := lethe.NewPartitionKey()
			at, expires, err := c.ItemExpiry(ctx, pk, "a")
			require.NoError(t, err)
			assert.Equal(t, tc.expires != 0, expires)
			if tc.expires == 0 {
				assert.True(t, at.IsZero())
				return
			}
			assert.True(t, at.Equal(written.Add(tc.expires)), "expires at %v, want %v", at, written.Add(tc.expires))
			clock.Set(at.Add(-time.Nanosecond))
			_, _, err = c.ItemExpiry(ctx, pk, "a")
			require.NoError(t, err, "a nanosecond before its expiry")
			clock.Set(at)
			_, _, err = c.ItemExpiry(ctx, pk, "a")
			assert.ErrorIs(t, err, lethe.ErrNotFound)
		})
	}
	c, _ := newContainer(t, 60)
	_, _, err := c.ItemExpiry(ctx, lethe.NewPartitionKey(), "none")
	assert.ErrorIs(t, err, lethe.ErrNotFound)
}
