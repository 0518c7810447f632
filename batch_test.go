package lethe_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statuses lists the status codes of a batch's results.
func statuses(r lethe.TransactionalBatchResponse) []int {
	var out []int
	for _, res := range r.OperationResults {
		out = append(out, res.StatusCode)
	}
	return out
}

// contents returns every item of c by id, without _ts and _etag, as a
// query sees them.
func contents(t testing.TB, c *lethe.Container, pk lethe.PartitionKey) map[string]string {
	t.Helper()
	out := map[string]string{}
	for item, err := range c.QueryItems(ctx, "SELECT * FROM c", pk, nil) {
		require.NoError(t, err)
		var id string
		require.NoError(t, jsonField(string(item), "id", &id))
		out[id] = canonical(t, item)
	}
	return out
}

func TestBatchOperations(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	pk := lethe.NewPartitionKey()
	old := create(t, c, `{"id":"old","v":1}`)
	create(t, c, `{"id":"gone"}`)

	b := c.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"a","v":1}`), nil)
	b.ReadItem("a", nil) // sees the create
	var p lethe.PatchOperations
	p.AppendIncrement("/v", 1)
	b.PatchItem("a", p, nil)
	b.ReplaceItem("old", []byte(`{"id":"old","v":2}`), &lethe.TransactionalBatchItemOptions{IfMatchEtag: old.ETag})
	b.UpsertItem([]byte(`{"id":"new","v":3}`), nil)
	b.UpsertItem([]byte(`{"id":"new","v":4}`), nil)
	b.DeleteItem("gone", nil)
	b.ReadItem("new", nil)
	resp, err := c.ExecuteTransactionalBatch(ctx, b, nil)
	require.NoError(t, err)
	require.True(t, resp.Success)
	assert.Equal(t, []int{201, 200, 200, 200, 201, 200, 204, 200}, statuses(resp))

	// Reads have a body, writes none by default; every write an ETag.
	assert.Equal(t, `{"id":"a","v":1}`, canonical(t, resp.OperationResults[1].ResourceBody))
	assert.Equal(t, `{"id":"new","v":4}`, canonical(t, resp.OperationResults[7].ResourceBody))
	for i, r := range resp.OperationResults {
		if i != 1 && i != 7 {
			assert.Nil(t, r.ResourceBody, "operation %d", i)
		}
		if i != 6 {
			assert.Len(t, r.ETag, 16, "operation %d", i)
		}
		assert.NoError(t, r.Err)
	}
	assert.Equal(t, resp.OperationResults[0].ETag, resp.OperationResults[1].ETag, "the read sees the create")
	assert.Equal(t, resp.OperationResults[5].ETag, resp.OperationResults[7].ETag)

	// The charge is the sum of the operations'.
	var sum float64
	for _, r := range resp.OperationResults {
		assert.Positive(t, r.RequestCharge)
		sum += r.RequestCharge
	}
	assert.InDelta(t, sum, resp.RequestCharge, 1e-9)
	assert.InDelta(t, 5.5+1+11+11+5.5+11+5.5+1, resp.RequestCharge, 1e-9)

	assert.Equal(t, map[string]string{
		"a":   `{"id":"a","v":2}`,
		"old": `{"id":"old","v":2}`,
		"new": `{"id":"new","v":4}`,
	}, contents(t, c, pk))
	got, err := c.ReadItem(ctx, pk, "a", nil)
	require.NoError(t, err)
	assert.Equal(t, resp.OperationResults[2].ETag, got.ETag)
	lethe.CheckInvariants(t, c, "after the batch")

	// With EnableContentResponseOnWrite, writes carry the item.
	b = c.NewTransactionalBatch(pk)
	b.UpsertItem([]byte(`{"id":"a","v":9}`), nil)
	b.DeleteItem("old", nil)
	resp, err = c.ExecuteTransactionalBatch(ctx, b, &lethe.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
	require.NoError(t, err)
	require.True(t, resp.Success)
	assert.Equal(t, `{"id":"a","v":9}`, canonical(t, resp.OperationResults[0].ResourceBody))
	assert.Nil(t, resp.OperationResults[1].ResourceBody)
}

// TestBatchFailure: when one operation fails, nothing is applied, the
// error is nil, the failing operation has its status and every other 424.
func TestBatchFailure(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	pk := lethe.NewPartitionKey()
	exists := create(t, c, `{"id":"exists","v":1}`)
	create(t, c, `{"id":"big","s":"`+strings.Repeat("x", lethe.MaxItemSize*3/4)+`"}`)
	before := contents(t, c, pk)

	var bad lethe.PatchOperations
	bad.AppendReplace("/missing", 1)
	var cond lethe.PatchOperations
	cond.AppendSet("/v", 2)
	cond.SetCondition("FROM c WHERE c.v = 5")
	cases := []struct {
		name   string
		build  func(b *lethe.TransactionalBatch)
		failed int
		status int
	}{
		{"conflict", func(b *lethe.TransactionalBatch) {
			b.CreateItem([]byte(`{"id":"a"}`), nil)
			b.CreateItem([]byte(`{"id":"exists"}`), nil)
			b.DeleteItem("exists", nil)
		}, 1, 409},
		{"created twice", func(b *lethe.TransactionalBatch) {
			b.CreateItem([]byte(`{"id":"a"}`), nil)
			b.CreateItem([]byte(`{"id":"a"}`), nil)
		}, 1, 409},
		{"read after delete", func(b *lethe.TransactionalBatch) {
			b.DeleteItem("exists", nil)
			b.ReadItem("exists", nil)
		}, 1, 404},
		{"replace missing", func(b *lethe.TransactionalBatch) {
			b.UpsertItem([]byte(`{"id":"a"}`), nil)
			b.ReplaceItem("b", []byte(`{"id":"b"}`), nil)
		}, 1, 404},
		{"stale etag", func(b *lethe.TransactionalBatch) {
			b.ReplaceItem("exists", []byte(`{"id":"exists","v":2}`), nil)
			b.DeleteItem("exists", &lethe.TransactionalBatchItemOptions{IfMatchEtag: exists.ETag})
		}, 1, 412},
		{"invalid json after valid operations", func(b *lethe.TransactionalBatch) {
			b.CreateItem([]byte(`{"id":"a"}`), nil)
			b.UpsertItem([]byte(`{"id":"b"}`), nil)
			b.UpsertItem([]byte(`{"id":`), nil)
			b.CreateItem([]byte(`{"id":"c"}`), nil)
		}, 2, 400},
		{"invalid first", func(b *lethe.TransactionalBatch) {
			b.ReadItem("bad\xffid", nil)
			b.CreateItem([]byte(`{"id":"c"}`), nil)
		}, 0, 400},
		{"replace of another id", func(b *lethe.TransactionalBatch) {
			b.ReplaceItem("exists", []byte(`{"id":"other"}`), nil)
		}, 0, 400},
		{"bad patch", func(b *lethe.TransactionalBatch) {
			b.CreateItem([]byte(`{"id":"a"}`), nil)
			b.PatchItem("exists", bad, nil)
		}, 1, 400},
		{"patch condition", func(b *lethe.TransactionalBatch) {
			b.PatchItem("exists", cond, nil)
			b.CreateItem([]byte(`{"id":"a"}`), nil)
		}, 0, 412},
		{"invalid ttl", func(b *lethe.TransactionalBatch) {
			b.CreateItem([]byte(`{"id":"a"}`), nil)
			b.CreateItem([]byte(`{"id":"b","ttl":0}`), nil)
		}, 1, 400},
		{"too large", func(b *lethe.TransactionalBatch) {
			var grow lethe.PatchOperations
			grow.AppendSet("/t", strings.Repeat("y", lethe.MaxItemSize/3))
			b.PatchItem("exists", grow, nil)
			b.PatchItem("big", grow, nil)
		}, 1, 413},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := c.NewTransactionalBatch(pk)
			tc.build(&b)
			resp, err := c.ExecuteTransactionalBatch(ctx, b, nil)
			require.NoError(t, err, "a failed batch is no error")
			assert.False(t, resp.Success)
			require.Len(t, resp.OperationResults, len(statuses(resp)))
			for i, r := range resp.OperationResults {
				if i == tc.failed {
					assert.Equal(t, tc.status, r.StatusCode)
					assert.Equal(t, tc.status, status(r.Err), "%v", r.Err)
					assert.Contains(t, r.Err.Error(), fmt.Sprintf("operation %d", i))
					if tc.status == 409 {
						assert.Contains(t, r.Err.Error(), "Entity with the specified id already exists in the system.")
					}
					continue
				}
				assert.Equal(t, 424, r.StatusCode, "operation %d", i)
				assert.NoError(t, r.Err)
				assert.Nil(t, r.ResourceBody)
				assert.Zero(t, r.RequestCharge)
			}
			assert.Equal(t, 1.24, resp.RequestCharge)
			assert.Equal(t, before, contents(t, c, pk), "nothing applied")
			got, err := c.ReadItem(ctx, pk, "exists", nil)
			require.NoError(t, err)
			assert.Equal(t, exists.ETag, got.ETag)
			lethe.CheckInvariants(t, c, tc.name)
		})
	}
}

// TestBatchRefused: a batch refused as a whole is an error, and changes
// nothing.
func TestBatchRefused(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/t"}}})
	pk := lethe.NewPartitionKeyString("t1")
	item := func(i int) []byte { return fmt.Appendf(nil, `{"id":"i%d","t":"t1"}`, i) }

	full := c.NewTransactionalBatch(pk)
	for i := range lethe.MaxBatchOperations {
		full.CreateItem(item(i), nil)
	}
	over := full
	over.CreateItem(item(lethe.MaxBatchOperations), nil)
	_, err := c.ExecuteTransactionalBatch(ctx, over, nil)
	assert.ErrorIs(t, err, lethe.ErrBadRequest, "101 operations")
	assert.Empty(t, contents(t, c, pk))
	resp, err := c.ExecuteTransactionalBatch(ctx, full, nil)
	require.NoError(t, err)
	assert.True(t, resp.Success)
	assert.Len(t, contents(t, c, pk), lethe.MaxBatchOperations)

	_, err = c.ExecuteTransactionalBatch(ctx, c.NewTransactionalBatch(pk), nil)
	assert.ErrorIs(t, err, lethe.ErrBadRequest, "no operations")

	for _, bad := range []lethe.PartitionKey{lethe.NewPartitionKey(), pk.AppendString("x")} {
		b := c.NewTransactionalBatch(bad)
		b.CreateItem(item(500), nil)
		_, err = c.ExecuteTransactionalBatch(ctx, b, nil)
		assert.ErrorIs(t, err, lethe.ErrBadRequest, "partition key %v", bad)
	}

	big := c.NewTransactionalBatch(pk)
	for i := range 3 {
		big.UpsertItem(fmt.Appendf(nil, `{"id":"b%d","t":"t1","s":"%s"}`, i, strings.Repeat("x", lethe.MaxItemSize/3)), nil)
	}
	_, err = c.ExecuteTransactionalBatch(ctx, big, nil)
	assert.ErrorIs(t, err, lethe.ErrRequestTooLarge, "more than 2 MB in all")

	// A document of another partition fails its operation.
	b := c.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"z","t":"t1"}`), nil)
	b.CreateItem([]byte(`{"id":"y","t":"t2"}`), nil)
	resp, err = c.ExecuteTransactionalBatch(ctx, b, nil)
	require.NoError(t, err)
	assert.Equal(t, []int{424, 400}, statuses(resp))
	assert.Len(t, contents(t, c, pk), lethe.MaxBatchOperations)

	require.NoError(t, s.DeleteContainer(ctx, "c"))
	_, err = c.ExecuteTransactionalBatch(ctx, full, nil)
	assert.ErrorIs(t, err, lethe.ErrNotFound)
	require.NoError(t, s.Close())
	_, err = c.ExecuteTransactionalBatch(ctx, full, nil)
	assert.ErrorIs(t, err, lethe.ErrClosed)
}

// TestBatchResponseLimit: a batch whose response would hold more than
// 4 MB of items fails whole with 413 before anything is applied; at the
// limit it runs.
func TestBatchResponseLimit(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/t"}}})
	pk := lethe.NewPartitionKeyString("t1")
	const big = 1 << 20 // four reads of it fit in 4 MB with room for system properties, five do not
	_, err := c.CreateItem(ctx, pk, fmt.Appendf(nil, `{"id":"big","t":"t1","s":"%s"}`, strings.Repeat("x", big-200)), nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		reads   int
		patches int
		ok      bool
	}{
		{"4 reads", 4, 0, true},
		{"5 reads", 5, 0, false},
		{"3 reads and 2 patches with content", 3, 2, false},
		{"3 reads and 1 patch with content", 3, 1, true},
	} {
		b := c.NewTransactionalBatch(pk)
		b.CreateItem([]byte(`{"id":"new","t":"t1"}`), nil)
		for range tc.reads {
			b.ReadItem("big", nil)
		}
		for range tc.patches {
			var ops lethe.PatchOperations
			ops.AppendIncrement("/n", 1)
			b.PatchItem("big", ops, nil)
		}
		resp, err := c.ExecuteTransactionalBatch(ctx, b, &lethe.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
		if tc.ok {
			require.NoError(t, err, tc.name)
			assert.True(t, resp.Success, tc.name)
			_, err = c.DeleteItem(ctx, pk, "new", nil)
			require.NoError(t, err)
			continue
		}
		assert.ErrorIs(t, err, lethe.ErrRequestTooLarge, tc.name)
		assert.ErrorContains(t, err, "response", tc.name)
		assert.Len(t, contents(t, c, pk), 1, "%s: nothing applied", tc.name)
	}
}

// TestBatchExpiry: expired items behave in a batch as outside one.
func TestBatchExpiry(t *testing.T) {
	t.Parallel()
	c, clock := newContainer(t, 10)
	pk := lethe.NewPartitionKey()
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		create(t, c, `{"id":"`+id+`"}`)
	}
	clock.Advance(10 * time.Second)
	run := func(build func(b *lethe.TransactionalBatch)) lethe.TransactionalBatchResponse {
		b := c.NewTransactionalBatch(pk)
		build(&b)
		resp, err := c.ExecuteTransactionalBatch(ctx, b, nil)
		require.NoError(t, err)
		return resp
	}
	for name, build := range map[string]func(b *lethe.TransactionalBatch){
		"read":    func(b *lethe.TransactionalBatch) { b.ReadItem("a", nil) },
		"replace": func(b *lethe.TransactionalBatch) { b.ReplaceItem("a", []byte(`{"id":"a"}`), nil) },
		"delete":  func(b *lethe.TransactionalBatch) { b.DeleteItem("a", nil) },
		"patch": func(b *lethe.TransactionalBatch) {
			var p lethe.PatchOperations
			p.AppendSet("/x", 1)
			b.PatchItem("a", p, nil)
		},
	} {
		assert.Equal(t, []int{404}, statuses(run(build)), name)
	}
	resp := run(func(b *lethe.TransactionalBatch) {
		b.CreateItem([]byte(`{"id":"a","v":1}`), nil)
		b.UpsertItem([]byte(`{"id":"b","v":1}`), &lethe.TransactionalBatchItemOptions{IfMatchEtag: "ignored when creating"})
		b.CreateItem([]byte(`{"id":"c","v":1}`), nil)
		b.DeleteItem("c", nil)
	})
	require.True(t, resp.Success)
	assert.Equal(t, []int{201, 201, 201, 204}, statuses(resp))
	assert.Equal(t, map[string]string{"a": `{"id":"a","v":1}`, "b": `{"id":"b","v":1}`}, contents(t, c, pk))
	assert.True(t, lethe.Stored(c, "d"), "untouched expired items wait for the reaper")
	assert.False(t, lethe.Stored(c, "c"), "an expired item created and deleted by the batch is gone")
	clock.Advance(9 * time.Second)
	assert.Len(t, contents(t, c, pk), 2, "the batch's writes restarted the countdown")
	clock.Advance(time.Second)
	assert.Empty(t, contents(t, c, pk))
	lethe.CheckInvariants(t, c, "after the expiries")
}

// TestBatchThrottled: a batch whose charge the budget cannot cover is
// refused whole with 429, and nothing is applied.
func TestBatchThrottled(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", Throughput: 100})
	pk := lethe.NewPartitionKey()
	for i := range 9 { // 49.5 RU of the 100
		create(t, c, fmt.Sprintf(`{"id":"s%d"}`, i))
	}
	b := c.NewTransactionalBatch(pk)
	for i := range 10 { // 10 creates of 1 KB: 55 RU
		b.CreateItem(fmt.Appendf(nil, `{"id":"i%d"}`, i), nil)
	}
	resp, err := c.ExecuteTransactionalBatch(ctx, b, nil)
	assert.ErrorIs(t, err, lethe.ErrTooManyRequests)
	var e *lethe.Error
	require.ErrorAs(t, err, &e)
	assert.Positive(t, e.RetryAfter)
	assert.False(t, resp.Success)
	assert.Equal(t, int64(1), c.Stats().Throttled)
	assert.Equal(t, int64(9), c.Stats().Items, "nothing applied")

	clock.Advance(e.RetryAfter)
	resp, err = c.ExecuteTransactionalBatch(ctx, b, nil)
	require.NoError(t, err)
	assert.True(t, resp.Success)
	assert.Equal(t, 55.0, resp.RequestCharge)
	assert.Equal(t, int64(19), c.Stats().Items)
	clock.Advance(time.Second)
	var p lethe.PatchOperations
	p.AppendSet("/x", 1)
	patch := c.NewTransactionalBatch(pk)
	patch.PatchItem("i0", p, nil)
	resp, err = c.ExecuteTransactionalBatch(ctx, patch, nil)
	require.NoError(t, err)
	assert.Equal(t, 11.0, resp.RequestCharge)
}

// TestBatchPartitions: a batch works in its own partition only.
func TestBatchPartitions(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/t"}}})
	a, b := lethe.NewPartitionKeyString("a"), lethe.NewPartitionKeyString("b")
	_, err := c.CreateItem(ctx, b, []byte(`{"id":"x","t":"b"}`), nil)
	require.NoError(t, err)
	batch := c.NewTransactionalBatch(a)
	batch.CreateItem([]byte(`{"id":"x","t":"a"}`), nil) // same id, another partition
	batch.ReadItem("x", nil)
	resp, err := c.ExecuteTransactionalBatch(ctx, batch, nil)
	require.NoError(t, err)
	require.True(t, resp.Success)
	var tval string
	require.NoError(t, jsonField(string(resp.OperationResults[1].ResourceBody), "t", &tval))
	assert.Equal(t, "a", tval)
}

// TestBatchAtomicQueries: queries and point reads running while batches
// replace one round of items by the next see either all of a batch or none
// of it.
func TestBatchAtomicQueries(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/t"}}})
	pk := lethe.NewPartitionKeyString("t")
	const k = 40 // items per round, spread over the shards
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	items := func(b *lethe.TransactionalBatch, round int) {
		for i := range k {
			b.CreateItem(fmt.Appendf(nil, `{"id":"r%d-%d","t":"t","round":%d}`, round, i, round), nil)
		}
	}
	// Items of another partition make each scan long enough for batches
	// to land in the middle of it.
	filler := lethe.NewPartitionKeyString("filler")
	for i := range 3000 {
		_, err := c.CreateItem(ctx, filler, fmt.Appendf(nil, `{"id":"f%d","t":"filler"}`, i), &lethe.ItemOptions{NoContentResponseOnWrite: true})
		require.NoError(t, err)
	}
	first := c.NewTransactionalBatch(pk)
	items(&first, 0)
	_, err := c.ExecuteTransactionalBatch(ctx, first, nil)
	require.NoError(t, err)

	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for range 2 {
		wg.Go(func() {
			for !done.Load() {
				counts := map[float64]int{}
				for v, err := range c.QueryItems(ctx, "SELECT VALUE c.round FROM c", lethe.NewPartitionKey(), nil) {
					if err != nil {
						report(err)
						return
					}
					var r float64
					fmt.Sscan(string(v), &r)
					counts[r]++
				}
				if len(counts) != 1 {
					report(fmt.Errorf("a query saw the rounds %v", counts))
					return
				}
				for r, n := range counts {
					if n != k {
						report(fmt.Errorf("a query saw %d items of round %v, not %d", n, r, k))
						return
					}
				}
			}
		})
	}
	wg.Go(func() { // point reads of one round's first and last items agree
		for !done.Load() {
			_, errFirst := c.ReadItem(ctx, pk, "r1-0", nil)
			_, errLast := c.ReadItem(ctx, pk, fmt.Sprintf("r1-%d", k-1), nil)
			if errFirst == nil && errLast != nil {
				// The last was read after the first: only a later batch
				// can have deleted it, and it deletes the first too.
				if _, err := c.ReadItem(ctx, pk, "r1-0", nil); err == nil {
					report(fmt.Errorf("round 1 is half there"))
					return
				}
			}
		}
	})
	for round := 1; round <= rounds; round++ {
		b := c.NewTransactionalBatch(pk)
		items(&b, round)
		for i := range k {
			b.DeleteItem(fmt.Sprintf("r%d-%d", round-1, i), nil)
		}
		resp, err := c.ExecuteTransactionalBatch(ctx, b, nil)
		require.NoError(t, err)
		require.True(t, resp.Success, "%v", statuses(resp))
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, int64(k+3000), c.Stats().Items)
	lethe.CheckInvariants(t, c, "after the rounds")
}

// TestBatchDurable: a batch on a durable store comes back whole after a
// reopen, and a batch whose frame is torn at the end of the log does not
// come back at all.
func TestBatchDurable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 3600})
	pk := lethe.NewPartitionKey()
	create(t, c, `{"id":"keep","v":1}`)
	create(t, c, `{"id":"drop"}`)

	b := c.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"a","v":1}`), nil)
	var p lethe.PatchOperations
	p.AppendIncrement("/v", 10)
	b.PatchItem("a", p, nil)
	b.PatchItem("keep", p, nil)
	b.DeleteItem("drop", nil)
	b.CreateItem([]byte(`{"id":"tmp"}`), nil)
	b.DeleteItem("tmp", nil)
	resp, err := c.ExecuteTransactionalBatch(ctx, b, nil)
	require.NoError(t, err)
	require.True(t, resp.Success)
	want := dump(t, s)
	wantItems := contents(t, c, pk)
	require.Equal(t, map[string]string{"a": `{"id":"a","v":11}`, "keep": `{"id":"keep","v":11}`}, wantItems)
	require.NoError(t, s.Close())

	s = openDurable(t, dir, clock)
	assert.Equal(t, want, dump(t, s))
	c, err = s.Container("c")
	require.NoError(t, err)
	lethe.CheckInvariants(t, c, "after the reopen")
	// ETags are not reused: a new write gets one past every ETag the batch
	// handed out (tmp's included).
	r := create(t, c, `{"id":"later"}`)
	for _, res := range resp.OperationResults {
		assert.Greater(t, r.ETag, res.ETag)
	}

	// A second batch, then its frame torn anywhere: none of it comes back.
	b = c.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"x1"}`), nil)
	b.PatchItem("a", p, nil)
	b.DeleteItem("keep", nil)
	b.CreateItem([]byte(`{"id":"x2"}`), nil)
	resp, err = c.ExecuteTransactionalBatch(ctx, b, nil)
	require.NoError(t, err)
	require.True(t, resp.Success)
	crashed := crashCopy(t, s, dir) // a torn end is what a crash leaves

	seg := lethetesting.LastSegment(t, crashed)
	full, err := os.ReadFile(seg)
	require.NoError(t, err)
	frameLen := len(full) - withoutLast(t, full)
	step := 1
	if testing.Short() {
		step = 7
	}
	for cut := 1; cut <= frameLen; cut += step {
		work := t.TempDir()
		copyDir(t, crashed, work)
		require.NoError(t, os.WriteFile(filepath.Join(work, filepath.Base(seg)), full[:len(full)-cut], 0o644))
		s := openDurable(t, work, clock)
		c, err := s.Container("c")
		require.NoError(t, err)
		got := contents(t, c, pk)
		assert.Equal(t, map[string]string{"a": `{"id":"a","v":11}`, "keep": `{"id":"keep","v":11}`, "later": `{"id":"later"}`}, got, "cut %d", cut)
		assert.Equal(t, int64(frameLen-cut), s.Recovery().TornBytes, "cut %d", cut)
		require.NoError(t, s.Close())
	}

	// Whole, it comes back whole, after a checkpoint too.
	s = openDurable(t, dir, clock)
	c, err = s.Container("c")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": `{"id":"a","v":21}`, "x1": `{"id":"x1"}`, "x2": `{"id":"x2"}`, "later": `{"id":"later"}`}, contents(t, c, pk))
	require.NoError(t, s.Checkpoint(ctx))
	want = dump(t, s)
	require.NoError(t, s.Close())
	s = openDurable(t, dir, clock)
	assert.Equal(t, want, dump(t, s))
	require.NoError(t, s.Close())
}
