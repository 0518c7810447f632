package lethe_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The no-dirty-read tests: a write that returns an error is never visible,
// and under SyncAlways a write is visible only once its log record is
// synced. Each runs every kind of write, on a container with a change feed
// and on one without (their logging differs: mutation.go).

// dirtyWrites are the writes of the tests, each over the items a1 (v 1)
// and a2 (v 1) that seed puts in, on the partition key "p".
var dirtyWrites = []struct {
	name  string
	write func(c *lethe.Container) error
}{
	{"create", func(c *lethe.Container) error {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString("p"), []byte(`{"id":"n","pk":"p","v":2}`), nil)
		return err
	}},
	{"upsert", func(c *lethe.Container) error {
		_, err := c.UpsertItem(ctx, lethe.NewPartitionKeyString("p"), []byte(`{"id":"a1","pk":"p","v":2}`), nil)
		return err
	}},
	{"replace", func(c *lethe.Container) error {
		_, err := c.ReplaceItem(ctx, lethe.NewPartitionKeyString("p"), "a1", []byte(`{"id":"a1","pk":"p","v":2}`), nil)
		return err
	}},
	{"delete", func(c *lethe.Container) error {
		_, err := c.DeleteItem(ctx, lethe.NewPartitionKeyString("p"), "a1", nil)
		return err
	}},
	{"patch", func(c *lethe.Container) error {
		var ops lethe.PatchOperations
		ops.AppendSet("/v", 2)
		_, err := c.PatchItem(ctx, lethe.NewPartitionKeyString("p"), "a1", ops, nil)
		return err
	}},
	{"batch", func(c *lethe.Container) error {
		b := c.NewTransactionalBatch(lethe.NewPartitionKeyString("p"))
		b.UpsertItem([]byte(`{"id":"a1","pk":"p","v":2}`), nil)
		b.DeleteItem("a2", nil)
		b.CreateItem([]byte(`{"id":"n","pk":"p","v":2}`), nil)
		resp, err := c.ExecuteTransactionalBatch(ctx, b, nil)
		if err == nil && !resp.Success {
			err = fmt.Errorf("batch failed")
		}
		return err
	}},
}

// dirtyProps are the containers the tests write to: without and with a
// change feed.
var dirtyProps = []lethe.ContainerProperties{
	{ID: "plain", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}},
	{ID: "feed", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}},
}

// seed writes the items the writes start from.
func seed(t *testing.T, c *lethe.Container) {
	t.Helper()
	for _, id := range []string{"a1", "a2"} {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString("p"), []byte(`{"id":"`+id+`","pk":"p","v":1}`), nil)
		require.NoError(t, err)
	}
}

// view is what readers see of a container: each item's v by point read,
// a query's rows, the change feed from the beginning (where there is one)
// and the item count.
func view(t *testing.T, c *lethe.Container) string {
	t.Helper()
	var b strings.Builder
	pk := lethe.NewPartitionKeyString("p")
	for _, id := range []string{"a1", "a2", "n"} {
		r, err := c.ReadItem(ctx, pk, id, nil)
		if err != nil {
			require.ErrorIs(t, err, lethe.ErrNotFound)
			fmt.Fprintf(&b, "%s:- ", id)
			continue
		}
		var d struct{ V int }
		require.NoError(t, json.Unmarshal(r.Value, &d))
		fmt.Fprintf(&b, "%s:%d ", id, d.V)
	}
	var rows []string
	for row, err := range c.QueryItems(ctx, "SELECT c.id, c.v FROM c", lethe.PartitionKey{}, nil) {
		require.NoError(t, err)
		rows = append(rows, string(row))
	}
	slices.Sort(rows)
	fmt.Fprintf(&b, "query:%v ", rows)
	if p, _ := c.Read(ctx); p.ChangeFeedPolicy != nil {
		page, err := c.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, MaxItemCount: 100})
		require.NoError(t, err)
		fmt.Fprintf(&b, "feed:%d lsn:%d ", len(page.Items), page.LSN)
	}
	fmt.Fprintf(&b, "items:%d", c.Stats().Items)
	return b.String()
}

// TestNoDirtyReadFailedWrite: a write whose log write or fsync fails
// returns 503 and readers never see it: point reads, queries, the change
// feed and the counts show the container as it was; a restart does not
// bring it either when the failure kept it off the disk.
func TestNoDirtyReadFailedWrite(t *testing.T) {
	t.Parallel()
	faults := []struct {
		name  string
		fault vfstest.Fault
	}{
		{"write EIO", vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.EIO}},
		{"fsync EIO", vfstest.Fault{Op: vfstest.OpSync, N: 1, Err: syscall.EIO}},
	}
	for _, props := range dirtyProps {
		for _, w := range dirtyWrites {
			for _, f := range faults {
				t.Run(props.ID+"/"+w.name+"/"+f.name, func(t *testing.T) {
					dir := t.TempDir()
					s, efs := openFaulty(t, dir)
					c := mustContainer(t, s, props)
					seed(t, c)
					before := view(t, c)
					efs.Inject(f.fault)
					err := w.write(c)
					require.ErrorIs(t, err, lethe.ErrUnavailable)
					assert.Equal(t, before, view(t, c), "a failed write is visible")
					s.Close()
					if f.fault.Op == vfstest.OpWrite {
						s = openDurable(t, dir, lethe.NewManualClock(t0))
						defer s.Close()
						c, err := s.Container(props.ID)
						require.NoError(t, err)
						assert.Equal(t, before, view(t, c), "a write that never reached the disk is back")
					}
				})
			}
		}
	}
}

// TestNoReadBeforeDurable: under SyncAlways, while a write's fsync is held
// up, no reader sees it: not a point read or a query (they wait for the
// shard the write holds, or see the old state), not the change feed, not
// the counts; once the fsync returns, all see it. Each reader records
// whether the fsync had returned when it got its answer, so a reader that
// saw the write early fails the test whatever the timing.
func TestNoReadBeforeDurable(t *testing.T) {
	t.Parallel()
	for _, props := range dirtyProps {
		for _, w := range dirtyWrites {
			t.Run(props.ID+"/"+w.name, func(t *testing.T) {
				s, efs := openFaulty(t, t.TempDir())
				defer s.Close()
				c := mustContainer(t, s, props)
				seed(t, c)
				before := view(t, c)

				h := efs.Hold(vfstest.OpSync)
				var synced sync.WaitGroup
				var released bool
				var mu sync.Mutex
				done := make(chan error, 1)
				go func() { done <- w.write(c) }()
				<-h.Entered()

				type seen struct {
					view     string
					released bool
				}
				views := make(chan seen, 4)
				for range 4 {
					synced.Add(1)
					go func() {
						defer synced.Done()
						v := view(t, c)
						mu.Lock()
						views <- seen{v, released}
						mu.Unlock()
					}()
				}
				// Readers that do not wait for the write's shard answer
				// now; give the others a moment to show a dirty read.
				time.Sleep(20 * time.Millisecond)
				mu.Lock()
				released = true
				h.Release()
				mu.Unlock()
				require.NoError(t, <-done)
				synced.Wait()
				close(views)
				after := view(t, c)
				require.NotEqual(t, before, after)
				for v := range views {
					if !v.released {
						assert.Equal(t, before, v.view, "a reader saw the write before its fsync returned")
					}
				}
			})
		}
	}
}

// TestNoReadBeforeDurableGroup: writes in flight together (one group
// commit, its fsync held up) are none visible until the fsync returns.
func TestNoReadBeforeDurableGroup(t *testing.T) {
	t.Parallel()
	for _, props := range dirtyProps {
		t.Run(props.ID, func(t *testing.T) {
			s, efs := openFaulty(t, t.TempDir())
			defer s.Close()
			c := mustContainer(t, s, props)
			h := efs.Hold(vfstest.OpSync)
			const n = 16
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Go(func() {
					_, err := c.UpsertItem(ctx, lethe.NewPartitionKeyString("p"), fmt.Appendf(nil, `{"id":"g%d","pk":"p"}`, i), nil)
					errs <- err
				})
			}
			<-h.Entered()
			time.Sleep(20 * time.Millisecond) // the writers log and queue up behind the held fsync
			assert.Zero(t, c.Stats().Items, "writes visible before their fsync returned")
			h.Release()
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			assert.EqualValues(t, n, c.Stats().Items)
		})
	}
}

// TestFailedWriteAfterHeldSync: writes waiting behind an fsync that then
// fails are none visible (the queue of a change feed's container drops
// them), and the container reads as it was.
func TestFailedWriteAfterHeldSync(t *testing.T) {
	t.Parallel()
	for _, props := range dirtyProps {
		t.Run(props.ID, func(t *testing.T) {
			s, efs := openFaulty(t, t.TempDir())
			defer s.Close()
			c := mustContainer(t, s, props)
			seed(t, c)
			before := view(t, c)
			h := efs.Hold(vfstest.OpSync)
			efs.Inject(vfstest.Fault{Op: vfstest.OpSync, N: 1, Err: syscall.EIO})
			const n = 8
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Go(func() {
					_, err := c.UpsertItem(ctx, lethe.NewPartitionKeyString("p"), fmt.Appendf(nil, `{"id":"a%d","pk":"p","v":9}`, i%3), nil)
					errs <- err
				})
			}
			<-h.Entered()
			time.Sleep(20 * time.Millisecond)
			h.Release()
			wg.Wait()
			close(errs)
			for err := range errs {
				require.ErrorIs(t, err, lethe.ErrUnavailable)
			}
			assert.Equal(t, before, view(t, c))
		})
	}
}
