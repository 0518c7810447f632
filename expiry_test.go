package lethe

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStatsCountsEachExpiryOnce: Stats keeps running counts, so a second
// call with nothing newly expired visits no entry, however many items are
// pending purge; the first one visits each newly expired item once.
func TestStatsCountsEachExpiryOnce(t *testing.T) {
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := Open(&Options{Clock: clock, Reaper: ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	defer s.Close()
	c, err := s.CreateContainer(context.Background(), ContainerProperties{ID: "c", DefaultTimeToLive: 10})
	require.NoError(t, err)
	for i := range 10_000 {
		_, err := c.CreateItem(context.Background(), NewPartitionKey(), fmt.Appendf(nil, `{"id":"%d"}`, i), nil)
		require.NoError(t, err)
	}
	clock.Advance(time.Minute)
	require.Equal(t, int64(10_000), c.Stats().ExpiredPending)
	now := s.clock.now()
	for i := range c.shards {
		sh := &c.shards[i]
		sh.x.Lock()
		done := sh.expiry.countExpired(&c.rule, now, 0)
		sh.x.Unlock()
		require.True(t, done, "a second count had entries left to visit in shard %d", i)
	}
	require.Equal(t, int64(10_000), c.Stats().ExpiredPending)
}
