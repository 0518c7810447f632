package lethe

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEntriesPrefixUnlimited: asked for every entry (limit math.MaxInt, as
// the expiry watch asks), entriesPrefix takes each shard's entries in one
// pass, not a few per shard per call (2*limit overflowed to a negative
// share, and each call took 4 entries of each shard).
func TestEntriesPrefixUnlimited(t *testing.T) {
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := Open(&Options{Clock: clock, Reaper: ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	defer s.Close()
	c, err := s.CreateContainer(context.Background(), ContainerProperties{ID: "c", DefaultTimeToLive: 10})
	require.NoError(t, err)
	const n = 2000
	for i := range n {
		_, err := c.CreateItem(context.Background(), NewPartitionKey(), fmt.Appendf(nil, `{"id":"%d"}`, i), nil)
		require.NoError(t, err)
	}
	es, _, more := c.entriesPrefix(false, beforeAll, upTo(math.MaxInt64), math.MaxInt, nil)
	require.False(t, more)
	require.Len(t, es, n)
}

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

// TestSelectFirstOnShardRuns: the reaper gives selectFirst the shards'
// sorted runs laid end to end, over the same instants; a pivot at a fixed
// place splits them badly every round (quadratic: 0.1 s for a batch of
// MaxReaperBatchSize, over a second when every instant is the same). The
// selection must finish in the rounds a random pivot needs, without the
// sort it falls back to.
func TestSelectFirstOnShardRuns(t *testing.T) {
	for _, sameInstant := range []bool{false, true} {
		const per = 2 * MaxReaperBatchSize / shardCount
		es := make([]expiredEntry, 0, per*shardCount)
		for sh := range shardCount {
			for i := range per {
				p := parsedItem{id: "x"}
				at := int64(i)
				if sameInstant {
					at = 7
				}
				seq := uint64(i*shardCount + sh + 1)
				es = append(es, expiredEntry{at: at, rec: buildRecord([]byte(`{}`), &p, "", 0, seq, 1)})
			}
		}
		want := slices.Clone(es)
		slices.SortFunc(want, compareExpired)
		rounds := selectFirst(es, MaxReaperBatchSize)
		require.Less(t, rounds, selectRounds, "same instant %v", sameInstant)
		require.Equal(t, want[MaxReaperBatchSize-1], es[MaxReaperBatchSize-1])
		first := es[:MaxReaperBatchSize]
		slices.SortFunc(first, compareExpired)
		require.Equal(t, want[:MaxReaperBatchSize], first)
	}
}

// TestSelectFirst: selectFirst puts the k first entries (by instant, then
// write sequence) before the rest, the k-th at k-1, for random lists with
// many equal instants, as the reaper's batches have.
func TestSelectFirst(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	for range 500 {
		n := 1 + rng.IntN(80)
		es := make([]expiredEntry, n)
		for i, seq := range rng.Perm(n) {
			p := parsedItem{id: "x"}
			es[i] = expiredEntry{at: int64(rng.IntN(5)), rec: buildRecord([]byte(`{}`), &p, "", 0, uint64(seq+1), 1)}
		}
		want := slices.Clone(es)
		slices.SortFunc(want, compareExpired)
		k := 1 + rng.IntN(n)
		selectFirst(es, k)
		require.Equal(t, want[k-1], es[k-1], "n %d k %d", n, k)
		first := slices.Clone(es[:k])
		slices.SortFunc(first, compareExpired)
		require.Equal(t, want[:k], first, "n %d k %d", n, k)
	}
}
