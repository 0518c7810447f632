package lethe_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The disk-heal tests: a durable store whose disk fills up refuses writes
// with 503 naming the disk, serves reads, queries and the change feed, and
// takes writes again once there is room, without a restart, as etcd does
// once its space alarm is disarmed; a store opened on a full disk opens
// read-only and heals the same way. Nothing acknowledged is lost and
// nothing refused comes back, then or after a reopen. A failed fsync is not
// healed: the store refuses writes until it is reopened.

// openHealing opens a durable store in dir on efs that retries a full disk
// at every write.
func openHealing(t *testing.T, dir string, efs *vfstest.ErrorFS, policy lethe.SyncPolicy) *lethe.Store {
	t.Helper()
	opts := &lethe.Options{Dir: dir, Sync: policy, Clock: lethe.NewManualClock(t0), Reaper: lethe.ReaperOptions{Disabled: true}}
	vfs.SetOptionsFS(opts, efs)
	s, err := lethe.Open(opts)
	require.NoError(t, err)
	lethe.SetDiskRetry(s, 0)
	return s
}

func putValue(c *lethe.Container, id string, v int) error {
	_, err := c.UpsertItem(ctx, lethe.NewPartitionKeyString("p"), []byte(`{"id":"`+id+`","pk":"p","v":`+strconv.Itoa(v)+`}`), nil)
	return err
}

// requireFull checks that err is a full disk's refusal: 503, ENOSPC, a
// message naming the disk.
func requireFull(t *testing.T, err error, dir string) {
	t.Helper()
	require.ErrorIs(t, err, lethe.ErrUnavailable)
	require.ErrorIs(t, err, syscall.ENOSPC)
	var le *lethe.Error
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 503, le.StatusCode)
	assert.Contains(t, le.Message, "the disk holding "+dir+" is full")
}

// readsWork checks that reads, a query and the change feed of c work and
// show want (id → v) exactly.
func readsWork(t *testing.T, c *lethe.Container, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for item, err := range c.QueryItems(ctx, "SELECT c.id, c.v FROM c", lethe.NewPartitionKeyString("p"), nil) {
		require.NoError(t, err)
		var id string
		var v int
		require.NoError(t, jsonField(string(item), "id", &id))
		require.NoError(t, jsonField(string(item), "v", &v))
		got[id] = v
	}
	assert.Equal(t, want, got, "the query")
	for id, v := range want {
		resp, err := c.ReadItem(ctx, lethe.NewPartitionKeyString("p"), id, nil)
		require.NoError(t, err)
		var rv int
		require.NoError(t, jsonField(string(resp.Value), "v", &rv))
		assert.Equal(t, v, rv, "the read of %s", id)
	}
	if props, err := c.Read(ctx); err == nil && props.ChangeFeedPolicy != nil {
		feed, err := c.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{PartitionKey: ptr(lethe.NewPartitionKeyString("p"))})
		require.NoError(t, err)
		assert.Len(t, feed.Items, len(want), "the change feed's latest versions")
	}
}

func ptr[T any](v T) *T { return &v }

// TestDiskHealWrite: a full disk refuses a write (whole, or cut short
// part way, in a container with a change feed and one without) with 503
// and a message naming the disk; reads, queries and the change feed go
// on; once there is room the next write heals the store, and a reopen has
// exactly the writes acknowledged.
func TestDiskHealWrite(t *testing.T) {
	t.Parallel()
	for _, policy := range []lethe.SyncPolicy{lethe.SyncAlways, lethe.SyncEverySecond} {
		for _, short := range []bool{false, true} {
			for _, feed := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/short=%v/feed=%v", policy, short, feed), func(t *testing.T) {
					dir := t.TempDir()
					efs := vfstest.NewErrorFS(vfs.OS)
					s := openHealing(t, dir, efs, policy)
					props := lethe.ContainerProperties{ID: "c", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}}
					if feed {
						props.ChangeFeedPolicy = &lethe.ChangeFeedPolicy{}
					}
					c := mustContainer(t, s, props)
					require.NoError(t, putValue(c, "a", 1))
					before := s.Stats().LogBytes
					require.NoError(t, putValue(c, "b", 1))
					one := s.Stats().LogBytes - before // the bytes of one such write

					if short {
						efs.Inject(vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC, Short: true, Sticky: true})
					} else {
						efs.SetFull(true)
					}
					requireFull(t, putValue(c, "a", 2), dir)
					requireFull(t, putValue(c, "c", 2), dir)
					_, err := c.DeleteItem(ctx, lethe.NewPartitionKeyString("p"), "b", nil)
					requireFull(t, err, dir)
					_, err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "d"})
					requireFull(t, err, dir)
					readsWork(t, c, map[string]int{"a": 1, "b": 1})
					assert.True(t, s.Stats().LogFailed)
					bytes := s.Stats().LogBytes

					efs.SetFull(false)
					require.NoError(t, putValue(c, "a", 3), "with room again, the store writes")
					assert.False(t, s.Stats().LogFailed, "healed")
					assert.Less(t, s.Stats().LogBytes-bytes, one*3/2, "the refused writes' bytes are not counted")
					require.NoError(t, putValue(c, "c", 3))
					readsWork(t, c, map[string]int{"a": 3, "b": 1, "c": 3})
					require.NoError(t, s.Checkpoint(ctx))
					require.NoError(t, putValue(c, "b", 4))
					require.NoError(t, s.Close())

					s = openDurable(t, dir, lethe.NewManualClock(t0))
					defer s.Close()
					c, err = s.Container("c")
					require.NoError(t, err)
					readsWork(t, c, map[string]int{"a": 3, "b": 4, "c": 3})
					_, err = s.Container("d")
					require.ErrorIs(t, err, lethe.ErrNotFound, "the refused container creation stays refused")
				})
			}
		}
	}
}

// TestDiskHealFsyncForGood: a failed fsync is not healed, however often
// writes come: the store refuses them without touching the disk again
// until it is reopened.
func TestDiskHealFsyncForGood(t *testing.T) {
	t.Parallel()
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC} {
		t.Run(errno.Error(), func(t *testing.T) {
			dir := t.TempDir()
			efs := vfstest.NewErrorFS(vfs.OS)
			s := openHealing(t, dir, efs, lethe.SyncAlways)
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}})
			require.NoError(t, putValue(c, "a", 1))
			efs.Inject(vfstest.Fault{Op: vfstest.OpSync, N: 1, Err: errno})
			require.ErrorIs(t, putValue(c, "a", 2), errno)
			creates, writes := efs.Count(vfstest.OpCreate), efs.Count(vfstest.OpWrite)
			for range 5 {
				err := putValue(c, "b", 1)
				require.ErrorIs(t, err, lethe.ErrUnavailable)
				assert.Contains(t, err.Error(), "until it is reopened")
			}
			assert.Equal(t, creates, efs.Count(vfstest.OpCreate), "no new segment")
			assert.Equal(t, writes, efs.Count(vfstest.OpWrite), "no write")
			readsWork(t, c, map[string]int{"a": 1})
			s.Close()
			s = openDurable(t, dir, lethe.NewManualClock(t0))
			defer s.Close()
			c, err := s.Container("c")
			require.NoError(t, err)
			readsWork(t, c, map[string]int{"a": 1})
		})
	}
}

// TestDiskHealOpen: Open on a full disk opens the store read-only, even
// when recovery has a repair to make that needs room (here the last
// segment, empty, must be given its header); once there is room the next
// write makes the repair, starts the log and writes, and a reopen finds
// everything.
func TestDiskHealOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	efs := vfstest.NewErrorFS(vfs.OS)
	s := openHealing(t, dir, efs, lethe.SyncAlways)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
	require.NoError(t, putValue(c, "a", 1))
	s.Close()
	// A store that died right after creating its next segment: empty.
	names := lethetesting.DirNames(t, dir)
	last := ""
	for _, n := range names {
		if filepath.Ext(n) == ".log" {
			last = n
		}
	}
	require.NotEmpty(t, last)
	var n uint64
	_, err := fmt.Sscanf(last, "wal-%x.log", &n)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("wal-%016x.log", n+1)), nil, 0o644))

	efs.SetFull(true)
	s = openHealing(t, dir, efs, lethe.SyncAlways)
	c, err = s.Container("c")
	require.NoError(t, err)
	readsWork(t, c, map[string]int{"a": 1})
	err = putValue(c, "b", 1)
	requireFull(t, err, dir)
	assert.Contains(t, err.Error(), "read-only")
	require.ErrorIs(t, s.Checkpoint(ctx), lethe.ErrUnavailable)

	efs.SetFull(false)
	require.NoError(t, putValue(c, "b", 2), "with room, the store opened read-only writes")
	require.NoError(t, putValue(c, "a", 2))
	readsWork(t, c, map[string]int{"a": 2, "b": 2})
	require.NoError(t, s.Close())

	s = openDurable(t, dir, lethe.NewManualClock(t0))
	defer s.Close()
	c, err = s.Container("c")
	require.NoError(t, err)
	readsWork(t, c, map[string]int{"a": 2, "b": 2})
}

// TestDiskHealModel runs random writes (upserts, deletes, batches,
// checkpoints, container creations) while the disk fills up, cuts writes
// short and frees up again at random, and the store is closed and
// reopened now and then, full or not (read-only then). After every call
// the store shows exactly what a model of the acknowledged writes holds,
// and so does the store reopened at the end. LETHE_DISKHEAL_SOAK=n runs n
// seeds.
func TestDiskHealModel(t *testing.T) {
	t.Parallel()
	seeds := 4
	if n, err := strconv.Atoi(os.Getenv("LETHE_DISKHEAL_SOAK")); err == nil && n > 0 {
		seeds = n
	}
	base := uint64(time.Now().UnixNano())
	for i := range seeds {
		seed := base + uint64(i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("seed %d (replay: diskHealModel(t, %d))", seed, seed)
			diskHealModel(t, seed)
		})
	}
}

func diskHealModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	efs := vfstest.NewErrorFS(vfs.OS)
	policy := []lethe.SyncPolicy{lethe.SyncAlways, lethe.SyncEverySecond}[rng.IntN(2)]
	s := openHealing(t, dir, efs, policy)
	defer func() { s.Close() }()
	model := map[string]map[string]int{} // container → id → v
	pkDef := lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}
	for _, props := range []lethe.ContainerProperties{{ID: "plain", PartitionKeyDefinition: pkDef}, {ID: "feed", PartitionKeyDefinition: pkDef, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}}} {
		mustContainer(t, s, props)
		model[props.ID] = map[string]int{}
	}
	check := func(where string) {
		t.Helper()
		for cid, want := range model {
			c, err := s.Container(cid)
			require.NoError(t, err, where)
			readsWork(t, c, want)
		}
		assert.Len(t, s.ContainerIDs(), len(model), where)
	}
	full, refused, healed := false, 0, 0
	for step := range 300 {
		switch r := rng.IntN(100); {
		case r < 8:
			full = !full
			efs.SetFull(full)
		case r < 12:
			efs.Inject(vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC, Short: rng.IntN(2) == 0})
		case r < 14:
			s.Close() // may fail: the disk was full
			s = openHealing(t, dir, efs, policy)
			check(fmt.Sprintf("step %d, reopened", step))
			continue
		case r < 17:
			if err := s.Checkpoint(ctx); err != nil {
				require.ErrorIs(t, err, lethe.ErrUnavailable)
			}
			continue
		case r < 19:
			id := fmt.Sprintf("k%d", step)
			_, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: id, PartitionKeyDefinition: pkDef})
			if err == nil {
				model[id] = map[string]int{}
			} else {
				require.ErrorIs(t, err, lethe.ErrUnavailable)
			}
			continue
		}
		cids := []string{"plain", "feed"}
		cid := cids[rng.IntN(2)]
		c, err := s.Container(cid)
		require.NoError(t, err)
		m := model[cid]
		id := fmt.Sprintf("i%d", rng.IntN(8))
		wasFailed := lethe.LogFailed(s)
		switch rng.IntN(4) {
		case 0, 1:
			err = putValue(c, id, step)
			if err == nil {
				m[id] = step
			}
		case 2:
			_, err = c.DeleteItem(ctx, lethe.NewPartitionKeyString("p"), id, nil)
			if errors.Is(err, lethe.ErrNotFound) {
				_, ok := m[id]
				require.False(t, ok, "step %d: %s deleted, not found", step, id)
				err = nil
			} else if err == nil {
				delete(m, id)
			}
		case 3:
			id2 := fmt.Sprintf("i%d", rng.IntN(8))
			b := c.NewTransactionalBatch(lethe.NewPartitionKeyString("p"))
			b.UpsertItem([]byte(`{"id":"`+id+`","pk":"p","v":`+strconv.Itoa(step)+`}`), nil)
			b.UpsertItem([]byte(`{"id":"`+id2+`","pk":"p","v":`+strconv.Itoa(-step)+`}`), nil)
			var resp lethe.TransactionalBatchResponse
			resp, err = c.ExecuteTransactionalBatch(ctx, b, nil)
			if err == nil {
				require.True(t, resp.Success)
				m[id], m[id2] = step, -step
			}
		}
		if err != nil {
			require.ErrorIs(t, err, lethe.ErrUnavailable, "step %d", step)
			refused++
		} else if wasFailed {
			healed++
		}
		check(fmt.Sprintf("step %d", step))
	}
	efs.SetFull(false)
	c, err := s.Container("plain")
	require.NoError(t, err)
	require.NoError(t, putValue(c, "last", 1), "with room, the store heals")
	model["plain"]["last"] = 1
	s.Close()
	s = openDurable(t, dir, lethe.NewManualClock(t0))
	check("reopened at the end")
	t.Logf("policy %v: %d writes refused, %d heals", policy, refused, healed)
}

// TestDiskHealConcurrent: writers write their own items while the disk
// fills up and frees again, the store healing at every write that finds
// room: every write is acknowledged or refused, and the store then and
// reopened holds each item at its last acknowledged value; a write that
// was refused is never seen, though the log's end passes its place (group
// commit: a failed group's writers may be slow to wake).
func TestDiskHealConcurrent(t *testing.T) {
	t.Parallel()
	for _, feed := range []bool{false, true} {
		t.Run(fmt.Sprintf("feed=%v", feed), func(t *testing.T) {
			dir := t.TempDir()
			efs := vfstest.NewErrorFS(vfs.OS)
			s := openHealing(t, dir, efs, lethe.SyncAlways)
			props := lethe.ContainerProperties{ID: "c", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}}
			if feed {
				props.ChangeFeedPolicy = &lethe.ChangeFeedPolicy{}
			}
			c := mustContainer(t, s, props)
			const writers, writes = 8, 150
			acked := make([]int, writers) // the last value acknowledged, 0: none
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := range 60 {
					efs.SetFull(i%2 == 0)
					time.Sleep(time.Millisecond)
				}
				efs.SetFull(false)
			}()
			errs := make(chan error, writers)
			for w := range writers {
				go func() {
					id := fmt.Sprintf("w%d", w)
					for v := 1; v <= writes; v++ {
						err := putValue(c, id, v)
						if err == nil {
							acked[w] = v
						} else if !errors.Is(err, lethe.ErrUnavailable) {
							errs <- err
							return
						}
						resp, err := c.ReadItem(ctx, lethe.NewPartitionKeyString("p"), id, nil)
						var got int
						if err == nil {
							err = jsonField(string(resp.Value), "v", &got)
						} else if errors.Is(err, lethe.ErrNotFound) && acked[w] == 0 {
							err = nil
						}
						if err == nil && got != acked[w] {
							err = fmt.Errorf("%s reads %d, its last acknowledged write %d", id, got, acked[w])
						}
						if err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for range writers {
				require.NoError(t, <-errs)
			}
			<-done
			require.NoError(t, putValue(c, "end", 1), "with room, the store heals")
			require.NoError(t, s.Close())
			s = openDurable(t, dir, lethe.NewManualClock(t0))
			defer s.Close()
			c, err := s.Container("c")
			require.NoError(t, err)
			want := map[string]int{"end": 1}
			for w, v := range acked {
				if v > 0 {
					want[fmt.Sprintf("w%d", w)] = v
				}
			}
			readsWork(t, c, want)
		})
	}
}

// TestDiskHealOpenExpiries: the expiries that recovery found in a store
// opened read-only on a full disk are logged when it heals, before any
// write, so that a reopen's change feed shows them where the running
// store's did (without them, the next recovery finds them again, after the
// writes made since).
func TestDiskHealOpenExpiries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	efs := vfstest.NewErrorFS(vfs.OS)
	clock := lethe.NewManualClock(t0)
	open := func() *lethe.Store {
		opts := &lethe.Options{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}
		vfs.SetOptionsFS(opts, efs)
		s, err := lethe.Open(opts)
		require.NoError(t, err)
		lethe.SetDiskRetry(s, 0)
		return s
	}
	feed := func(s *lethe.Store) []string {
		c, err := s.Container("c")
		require.NoError(t, err)
		items, _ := readAll(t, c, lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
		var out []string
		for _, ch := range items {
			out = append(out, string(ch))
		}
		return out
	}
	s := open()
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 10, PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
	require.NoError(t, putValue(c, "x", 1))
	require.NoError(t, s.Close())

	clock.Advance(20 * time.Second) // x expires while the store is closed
	efs.SetFull(true)
	s = open()
	c, err := s.Container("c")
	require.NoError(t, err)
	requireFull(t, putValue(c, "y", 1), dir)
	clock.Advance(time.Second)
	efs.SetFull(false)
	require.NoError(t, putValue(c, "y", 2), "healed")
	want := feed(s)
	require.Len(t, want, 3, "x created, x expired, y created")
	require.NoError(t, s.Close())

	clock.Advance(time.Second)
	s = open()
	defer s.Close()
	assert.Equal(t, want, feed(s), "the reopened store's change feed")
}

// TestDiskHealCutFails: when the disk refuses even the cut of a failed
// write off the log (its truncation fails), the store cannot be sure
// that the write stays out of a reopen: it does not heal, however often
// writes come and however much room there is, it logs at error why, and
// it reopens whole.
func TestDiskHealCutFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	efs := vfstest.NewErrorFS(vfs.OS)
	var logs records
	opts := &lethe.Options{Dir: dir, Clock: lethe.NewManualClock(t0), Reaper: lethe.ReaperOptions{Disabled: true}, Logger: slog.New(&logs)}
	vfs.SetOptionsFS(opts, efs)
	s, err := lethe.Open(opts)
	require.NoError(t, err)
	lethe.SetDiskRetry(s, 0)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	require.NoError(t, putValue(c, "a", 1))
	efs.Inject(vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC, Short: true})
	efs.Inject(vfstest.Fault{Op: vfstest.OpTruncate, N: 1, Err: syscall.EIO})
	require.ErrorIs(t, putValue(c, "a", 2), syscall.ENOSPC)
	creates := efs.Count(vfstest.OpCreate)
	for range 3 {
		err := putValue(c, "b", 1)
		require.ErrorIs(t, err, lethe.ErrUnavailable)
		assert.Contains(t, err.Error(), "until it is reopened")
	}
	assert.Equal(t, creates, efs.Count(vfstest.OpCreate), "no heal")
	assert.Contains(t, strings.Join(logs.all(), "\n"), "could not be cut off")
	s.Close()
	s = openDurable(t, dir, lethe.NewManualClock(t0))
	defer s.Close()
	c, err = s.Container("c")
	require.NoError(t, err)
	readsWork(t, c, map[string]int{"a": 1})
}
