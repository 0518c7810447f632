package lethe_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// TestConcurrent runs writers, readers, clock advances, container changes,
// purges and the reaper together (run it with -race). Readers check that no
// item is ever seen after its expiry: each writer records, per ETag, the
// latest instant the item can expire; a reader that read the clock before
// its read at or past that instant must not get the item.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{BatchSize: 7}})
	require.NoError(t, err)
	defer s.Close()
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})

	var latestExpiry sync.Map // ETag -> int64: the item is surely expired from then on
	var stop atomic.Bool
	var reads, hidden atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	worker := func(f func(rng *rand.Rand) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
			for !stop.Load() {
				if err := f(rng); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 3 {
		worker(func(rng *rand.Rand) error { // writer
			id := rng.IntN(500)
			ttl := 1 + rng.IntN(5)
			doc := fmt.Sprintf(`{"id":"%d","ttl":%d}`, id, ttl)
			if rng.IntN(4) == 0 {
				doc = fmt.Sprintf(`{"id":"%d","ttl":-1}`, id)
				ttl = -1
			}
			var r lethe.ItemResponse
			var err error
			switch rng.IntN(3) {
			case 0:
				_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), fmt.Sprint(id), nil)
				return ignore(err, lethe.ErrNotFound)
			case 1:
				r, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(doc), nil)
				if err != nil {
					return ignore(err, lethe.ErrConflict)
				}
			default:
				if r, err = c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(doc), nil); err != nil {
					return err
				}
			}
			if ttl > 0 {
				// Written no later than now: expired surely from now + ttl.
				latestExpiry.Store(r.ETag, clock.Now().UnixNano()+int64(ttl)*int64(time.Second))
			}
			return nil
		})
	}
	for range 3 {
		worker(func(rng *rand.Rand) error { // reader
			before := clock.Now().UnixNano()
			r, err := c.ReadItem(ctx, lethe.NewPartitionKey(), fmt.Sprint(rng.IntN(500)), nil)
			reads.Add(1)
			if err != nil {
				hidden.Add(1)
				return ignore(err, lethe.ErrNotFound)
			}
			var doc struct {
				TTL int `json:"ttl"`
			}
			if err := json.Unmarshal(r.Value, &doc); err != nil {
				return err
			}
			if exp, ok := latestExpiry.Load(r.ETag); ok && before >= exp.(int64) {
				return fmt.Errorf("read an item %v past its expiry: %s", time.Duration(before-exp.(int64)), r.Value)
			}
			return nil
		})
	}
	worker(func(rng *rand.Rand) error { // time
		clock.Advance(time.Duration(rng.IntN(50)) * time.Millisecond)
		time.Sleep(100 * time.Microsecond)
		return nil
	})
	worker(func(rng *rand.Rand) error { // settings and purges
		def := []lethe.TTL{lethe.TTLNever, 2, 10}[rng.IntN(3)]
		if err := c.Replace(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: def, Throughput: 0}); err != nil {
			return err
		}
		_ = c.Stats()
		if _, err := c.Purge(ctx); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
		return nil
	})
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	lethe.CheckInvariants(t, c, "after the concurrent run")
	t.Logf("%d reads, %d not found; %+v", reads.Load(), hidden.Load(), c.Stats())
	require.Positive(t, c.Stats().Purged)
}

// ignore returns err unless it is nil or an *lethe.Error (itself, not
// wrapped) that matches allowed.
func ignore(err, allowed error) error {
	if e, ok := err.(*lethe.Error); err == nil || ok && e.Is(allowed) {
		return nil
	}
	return err
}

// TestStatsOneInstant: each shard counts its own items, but Stats sums
// them as of one instant. In the middle of each Stats, once it has summed
// the first shard, a writer is handed a move of an item between shards: it
// deletes an item of the first shard, then creates one in the last. At no
// instant does the container hold more than base items, so a Stats that
// let the writer in between two shards would count the deleted item (its
// shard summed before) and the new one (its shard summed after), base+1,
// every time. Stats waits for the writer until it has finished or waits
// on a lock, which only Stats can hold.
func TestStatsOneInstant(t *testing.T) {
	t.Parallel()
	s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	defer s.Close()
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c"})
	require.NoError(t, err)
	pk := lethe.NewPartitionKey()
	const base, rounds = 50, 20
	// from are items of the first shard, to ids of the last.
	var from, to []string
	for i := 0; len(from) < rounds || len(to) < rounds; i++ {
		id := fmt.Sprintf("i%d", i)
		switch lethe.ShardOf(c, pk, id) {
		case 0:
			from = append(from, id)
		case lethe.ShardCount - 1:
			to = append(to, id)
		}
	}
	from, to = from[:rounds], to[:rounds]
	for i := range base {
		id := fmt.Sprintf("base-%d", i)
		if i < rounds {
			id = from[i]
		}
		_, err := c.CreateItem(ctx, pk, fmt.Appendf(nil, `{"id":%q}`, id), nil)
		require.NoError(t, err)
	}
	for round := range rounds {
		calls := 0
		moved := make(chan error, 1)
		undo := lethe.DuringStats(c, func() {
			if calls++; calls > 1 {
				return // only after the first shard
			}
			go moveItem(c, pk, from[round], to[round], moved)
			waitDoneOrLocked(t, moved)
		})
		st := c.Stats()
		undo()
		require.NoError(t, <-moved)
		if st.Items < base-1 || st.Items > base {
			t.Fatalf("round %d: Stats counts %d items: at no instant were there fewer than %d or more than %d", round, st.Items, base-1, base)
		}
	}
	require.Equal(t, int64(base), c.Stats().Items)
	require.Equal(t, int64(base), lethe.ExpiryIndexItems(c))
	lethe.CheckInvariants(t, c, "after the moves")
}

// moveItem deletes the item (pk, from), then creates the item (pk, to),
// and sends the first error, or nil, to done.
func moveItem(c *lethe.Container, pk lethe.PartitionKey, from, to string, done chan<- error) {
	if _, err := c.DeleteItem(ctx, pk, from, nil); err != nil {
		done <- err
		return
	}
	_, err := c.CreateItem(ctx, pk, fmt.Appendf(nil, `{"id":%q}`, to), nil)
	done <- err
}

// waitDoneOrLocked waits until moveItem has sent to done (and puts what it
// sent back) or its goroutine waits on a lock.
func waitDoneOrLocked(t *testing.T, done chan error) {
	deadline := time.Now().Add(time.Minute)
	buf := make([]byte, 1<<20)
	for {
		select {
		case err := <-done:
			done <- err
			return
		default:
		}
		buf = buf[:runtime.Stack(buf[:cap(buf)], true)]
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, "lethe_test.moveItem(") {
				head, _, _ := strings.Cut(g, "\n")
				if strings.Contains(head, "[sync.") || strings.Contains(head, "[semacquire") {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("the writer neither finished nor waited on a lock in a minute:\n%s", buf)
			return
		}
		time.Sleep(20 * time.Microsecond) // a poll, not a wait for correctness
	}
}
