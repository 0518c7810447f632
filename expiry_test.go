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

// manualContainer opens a store on a manual clock with the reaper disabled
// (closed when t ends) and makes a container with a default ttl of 10 s.
func manualContainer(t *testing.T) (*Container, *ManualClock) {
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := Open(&Options{Clock: clock, Reaper: ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	c, err := s.CreateContainer(context.Background(), ContainerProperties{ID: "c", DefaultTimeToLive: 10})
	require.NoError(t, err)
	return c, clock
}

// TestEntriesPrefixUnlimited: asked for every entry (limit math.MaxInt, as
// the expiry watch asks), entriesPrefix takes each shard's entries in one
// pass, not a few per shard per call (2*limit overflowed to a negative
// share, and each call took 4 entries of each shard).
func TestEntriesPrefixUnlimited(t *testing.T) {
	t.Parallel()
	c, _ := manualContainer(t)
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
	t.Parallel()
	c, clock := manualContainer(t)
	for i := range 10_000 {
		_, err := c.CreateItem(context.Background(), NewPartitionKey(), fmt.Appendf(nil, `{"id":"%d"}`, i), nil)
		require.NoError(t, err)
	}
	clock.Advance(time.Minute)
	require.Equal(t, int64(10_000), c.Stats().ExpiredPending)
	now := c.store.clock.now()
	for i := range c.shards {
		sh := &c.shards[i]
		sh.expiryMu.Lock()
		done := sh.expiry.countExpired(&c.rule, now, 0)
		sh.expiryMu.Unlock()
		require.True(t, done, "a second count had entries left to visit in shard %d", i)
	}
	require.Equal(t, int64(10_000), c.Stats().ExpiredPending)
}

// testRecord returns a record with the write sequence number seq.
func testRecord(seq uint64) record {
	p := parsedItem{id: "x"}
	return buildRecord([]byte(`{}`), &p, "", 0, seq, 1)
}

// TestMergeExpiredOnShardRuns: the reaper merges the shards' sorted runs,
// up to MaxReaperBatchSize entries of twice as many, over few instants or
// one (ties broken by write sequence throughout): the merge gives exactly
// the first entries of all, in order. (selectFirst, which this merge
// replaced, went quadratic on this input with a fixed pivot.)
func TestMergeExpiredOnShardRuns(t *testing.T) {
	t.Parallel()
	for _, sameInstant := range []bool{false, true} {
		const per = 2 * MaxReaperBatchSize / shardCount
		var runs [shardCount][]expiredEntry
		var all []expiredEntry
		for sh := range shardCount {
			for i := range per {
				at := int64(i / 8)
				if sameInstant {
					at = 7
				}
				seq := uint64(i*shardCount + (sh*7)%shardCount + 1)
				runs[sh] = append(runs[sh], expiredEntry{at: at, rec: testRecord(seq)})
			}
			all = append(all, runs[sh]...)
		}
		slices.SortFunc(all, compareExpired)
		var cut [shardCount]bool
		got, left := mergeExpired(nil, runs[:], cut[:], MaxReaperBatchSize)
		require.True(t, left)
		require.Equal(t, all[:MaxReaperBatchSize], got, "same instant %v", sameInstant)
	}
}

// TestMergeExpired: mergeExpired against a sort, for random runs (1 to
// maxMergeRuns of them, some empty, instants with many ties, some runs cut
// short) and limits: it gives the sorted entries up to the limit, or up to
// where a cut run runs out, and says whether it left any out.
func TestMergeExpired(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	for round := range 2000 {
		k := 1 + rng.IntN(maxMergeRuns)
		runs := make([][]expiredEntry, k)
		cut := make([]bool, k)
		var all []expiredEntry
		run := map[uint64]int{} // seq: its run
		seq := uint64(1)
		for i := range runs {
			cut[i] = rng.IntN(4) == 0
			for range rng.IntN(12) {
				seq += 1 + uint64(rng.IntN(3))
				e := expiredEntry{at: int64(rng.IntN(5)), rec: testRecord(seq)}
				runs[i] = append(runs[i], e)
				all = append(all, e)
				run[seq] = i
			}
			slices.SortFunc(runs[i], compareExpired)
		}
		slices.SortFunc(all, compareExpired)
		limit := 1 + rng.IntN(len(all)+2)
		// The reference: the sorted entries, up to the limit or the last
		// entry of a cut run.
		var want []expiredEntry
		wantLeft := false
		left := make([]int, k)
		for i := range runs {
			left[i] = len(runs[i])
			if cut[i] && left[i] == 0 {
				wantLeft = true
			}
		}
		for _, e := range all {
			if wantLeft {
				break
			}
			if len(want) == limit {
				wantLeft = true
				break
			}
			want = append(want, e)
			r := run[e.rec.seq()]
			if left[r]--; left[r] == 0 && cut[r] {
				wantLeft = true
			}
		}
		got, gotLeft := mergeExpired(nil, slices.Clone(runs), cut, limit)
		require.Equal(t, want, got, "round %d: %d runs, limit %d", round, k, limit)
		require.Equal(t, wantLeft, gotLeft, "round %d: %d runs, limit %d", round, k, limit)
	}
}

// TestOldestExpiredInOrder: the reaper's batch fetch gives, for any limit,
// exactly the first items expired in the order of their expiry, ties by
// write sequence, across shards and both kinds (many items share an
// instant, an inheriting item and one with its own ttl among them), and
// says whether there are more.
func TestOldestExpiredInOrder(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 6))
	c, clock := manualContainer(t)
	const n = 3000
	for i := range n {
		clock.Advance(time.Duration(rng.IntN(2)) * time.Second)
		ttl := []string{"", `,"ttl":-1`, fmt.Sprintf(`,"ttl":%d`, 8+rng.IntN(5))}[rng.IntN(3)]
		_, err := c.CreateItem(context.Background(), NewPartitionKey(), fmt.Appendf(nil, `{"id":"%d"%s}`, i, ttl), nil)
		require.NoError(t, err)
	}
	clock.Advance(10 * time.Second)
	requireOldestExpired(t, c, MaxReaperBatchSize/64, 1, 2, 31, 256, 1000)
}

// requireOldestExpired checks oldestExpired at the container's clock, with
// each of limits and with every expired item's count and one less, against
// a sort of every expired item (compareExpired, instants from
// expiryRule.expiredAt): the first limit of them, whether there are more.
// At least least items must be expired.
func requireOldestExpired(t *testing.T, c *Container, least int, limits ...int) {
	t.Helper()
	now := c.store.clock.now()
	var all []expiredEntry
	for i := range c.shards {
		c.shards[i].items.all(func(rec record) bool {
			if !c.rule.live(rec, now) {
				all = append(all, expiredEntry{rec: rec, at: c.rule.expiredAt(rec.ttl(), rec.written())})
			}
			return true
		})
	}
	slices.SortFunc(all, compareExpired)
	require.Greater(t, len(all), least)
	for _, limit := range append(limits, len(all)-1, len(all), MaxReaperBatchSize) {
		got, more := c.oldestExpired(&c.rule, now, limit, nil)
		require.Equal(t, min(limit, len(all)), len(got), "limit %d", limit)
		for i := range got {
			require.True(t, sameRecord(all[i].rec, got[i].rec), "limit %d: entry %d is %s (expired %d), not %s (expired %d)",
				limit, i, got[i].rec.id(), got[i].at, all[i].rec.id(), all[i].at)
			require.Equal(t, all[i].at, got[i].at, "limit %d: entry %d", limit, i)
		}
		require.Equal(t, limit < len(all), more, "limit %d of %d", limit, len(all))
	}
}

// TestOldestExpiredAfterShorterDefault: once the default is shortened, an
// item written later can have expired before one written earlier (the
// earlier default's range and the new one's interleave), so the batch is a
// merge of the ranges, not a prefix of the tree sorted afterwards: the
// batches are the first items by expiry at every limit, through two
// shortenings, with items of their own ttl among them.
func TestOldestExpiredAfterShorterDefault(t *testing.T) {
	t.Parallel()
	c, clock := manualContainer(t)
	ctx := context.Background()
	write := func(n int, prefix string) {
		for i := range n {
			clock.Advance(time.Second)
			ttl := ""
			if i%7 == 0 {
				ttl = `,"ttl":15`
			}
			_, err := c.UpsertItem(ctx, NewPartitionKey(), fmt.Appendf(nil, `{"id":"%s%d"%s}`, prefix, i, ttl), nil)
			require.NoError(t, err)
		}
	}
	setDefault := func(def TTL) {
		props, err := c.Read(ctx)
		require.NoError(t, err)
		props.DefaultTimeToLive = def
		require.NoError(t, c.Replace(ctx, props))
	}
	setDefault(1000)
	write(1500, "a")
	setDefault(300) // items written in the last 300 s expire 300 s after their write
	write(400, "b")
	setDefault(20)
	clock.Advance(5 * time.Second)
	require.Len(t, c.rule.past, 3) // manualContainer's 10 s, then 1000 s and 300 s
	requireOldestExpired(t, c, 1000, 1, 31, 256, 700)
}

// shortenDefaults sets c's default to def, less step at each of steps
// changes, and after each change writes n items, the clock moving every
// apart between them; it returns the default a next change would set
// (the last less step).
func shortenDefaults(t *testing.T, c *Container, clock *ManualClock, steps, n int, every time.Duration, def, step TTL) TTL {
	ctx := context.Background()
	for k := range steps {
		props, err := c.Read(ctx)
		require.NoError(t, err)
		props.DefaultTimeToLive = def
		require.NoError(t, c.Replace(ctx, props))
		for i := range n {
			clock.Advance(every)
			_, err := c.UpsertItem(ctx, NewPartitionKey(), fmt.Appendf(nil, `{"id":"%d-%d"}`, k, i), nil)
			require.NoError(t, err)
		}
		def -= step
	}
	return def
}

// TestOldestExpiredManyDefaults: with more ranges of expired items than
// one merge takes runs (a default shortened 60 times while items waited),
// the batches are still the first items by expiry.
func TestOldestExpiredManyDefaults(t *testing.T) {
	t.Parallel()
	c, clock := manualContainer(t)
	def := shortenDefaults(t, c, clock, 60, 5, 200*time.Second, 10_000, 150)
	clock.Advance(time.Duration(def) * time.Second)
	require.Greater(t, len(c.rule.past), maxMergeRuns+10)
	requireOldestExpired(t, c, 200, 1, 7, 50, 150)
}

// TestReapReturnsUnspentUnits: the reaper pays for a part's purges before
// it makes them, so the units drawn for items rewritten between the batch's
// fetch and their purge go back to the spare budget: it ends down by the
// charges of the purges made, no more (the one place that charges request
// units).
func TestReapReturnsUnspentUnits(t *testing.T) {
	t.Parallel()
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := Open(&Options{Clock: clock, Reaper: ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	c, err := s.CreateContainer(ctx, ContainerProperties{ID: "c", DefaultTimeToLive: 10, Throughput: 10_000})
	require.NoError(t, err)
	for i := range 20 {
		_, err := c.CreateItem(ctx, NewPartitionKey(), fmt.Appendf(nil, `{"id":"%d"}`, i), nil)
		require.NoError(t, err)
	}
	clock.Advance(time.Minute) // every item expired, and the spare bucket full
	b := c.budget()
	var before, want int64
	hooksOf(c).afterReapFetch = func(batch []expiredEntry) {
		require.Len(t, batch, 20)
		for i, e := range batch {
			if i%4 == 0 { // rewritten: its purge will not happen
				_, err := c.UpsertItem(ctx, NewPartitionKey(), fmt.Appendf(nil, `{"id":%q}`, e.rec.id()), nil)
				require.NoError(t, err)
				continue
			}
			want += charge(opDelete, e.rec.chargeSize())
		}
		b.mu.Lock()
		before = b.spare
		b.mu.Unlock()
	}
	t.Cleanup(func() { hooksOf(c).afterReapFetch = nil })
	o := s.opts.Reaper
	o.MaxHold = uncut
	purged, _ := c.reap(s.clock.now(), o, true, nil)
	require.Equal(t, 15, purged)
	require.Positive(t, want)
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Equal(t, before-want, b.spare, "the spare budget paid for the 15 purges made, not for the 5 rewritten items")
}

// TestExpiryTreeFrontEntryRemoved: a count that stops at its visit limit
// leaves the front on a real entry, which is counted; removing that very
// entry's item must take it off the count, or the expired count stays one
// too high for good once the front moves on.
func TestExpiryTreeFrontEntryRemoved(t *testing.T) {
	t.Parallel()
	x := newExpiryIndex()
	var recs []record
	for i := range 5 {
		p := parsedItem{id: fmt.Sprint(i)}
		rec := buildRecord([]byte(`{}`), &p, "", int64(i+1), uint64(i+1), uint64(i+1))
		recs = append(recs, rec)
		x.add(rec)
	}
	require.Equal(t, 5, x.inherit.t.Len(), "the records inherit the default ttl")
	require.False(t, x.inherit.advance(upTo(10), 2), "a count of two of five entries")
	require.True(t, sameRecord(recs[1], x.inherit.front.rec), "the front is on the second entry")
	require.Equal(t, int64(2), x.inherit.n)
	x.remove(recs[1], false)
	require.Equal(t, int64(1), x.inherit.n, "the front's own entry left the count")
	require.True(t, x.inherit.advance(upTo(10), 100))
	require.Equal(t, int64(4), x.inherit.n)
	require.Equal(t, 4*int64(recs[0].jsonLen()), x.inherit.bytes)
}
