package lethe

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
	"github.com/stretchr/testify/require"
)

// The feed-heal tests: a change feed's expiries that the log failed to
// keep (it refused them, or a failure dropped them before they were
// durable) are the feed's all the same, and readers may have read them, so
// the log writes them first when it heals, before any new write; a restart
// then replays the feed readers saw, lsn for lsn. A log that fails for
// good writes nothing more: the store's next Open finds those expiries
// again, where the feed had them, since the log holds no change after them.

// readWholeFeed reads c's change feed from the beginning, every change
// with its metadata, as a reader would.
func readWholeFeed(t *testing.T, c *Container) []string {
	t.Helper()
	p := c.NewChangeFeedPager(&ChangeFeedOptions{Mode: ChangeFeedModeAllVersionsAndDeletes, MaxItemCount: 1000})
	var out []string
	for _, it := range lethetesting.ReadAll(t, func() ([][]byte, error) {
		resp, err := p.NextPage(context.Background())
		return resp.Items, err
	}) {
		out = append(out, string(it))
	}
	return out
}

// reopenSameFeed closes s, opens it again with o (the disk healthy) and
// requires its container "c" to show readers the feed want, read whole,
// and the changes lines, as feedEntries lists them.
func reopenSameFeed(t *testing.T, s *Store, o *Options, efs *vfstest.ErrorFS, want, lines []string) {
	t.Helper()
	s.Close() // a log failed for good fails the Close too
	efs.SetFull(false)
	s, err := Open(o)
	require.NoError(t, err)
	defer s.Close()
	c, err := s.Container("c")
	require.NoError(t, err)
	require.Equal(t, lines, feedEntries(c))
	require.Equal(t, want, readWholeFeed(t, c))
}

// requireKeptFeed requires the change feed of s's container "c", read
// whole, to begin with seen, what a reader read before, and to hold the
// changes lines, and the same after a restart (reopenSameFeed).
func requireKeptFeed(t *testing.T, s *Store, o *Options, efs *vfstest.ErrorFS, seen, lines []string) {
	t.Helper()
	c, err := s.Container("c")
	require.NoError(t, err)
	all := readWholeFeed(t, c)
	require.GreaterOrEqual(t, len(all), len(seen))
	require.Equal(t, seen, all[:len(seen)], "the feed readers saw stays")
	require.Equal(t, lines, feedEntries(c))
	reopenSameFeed(t, s, o, efs, all, lines)
}

// feedReader reads a container's whole change feed again and again, as a
// reader from the beginning would, and requires each read to begin with
// the one before: no change it saw vanishes or moves.
type feedReader struct{ seen []string }

func (r *feedReader) read(t *testing.T, c *Container, where string) {
	t.Helper()
	got := readWholeFeed(t, c)
	require.GreaterOrEqual(t, len(got), len(r.seen), where)
	if len(r.seen) > 0 {
		require.Equal(t, r.seen, got[:len(r.seen)], "%s: the feed read before", where)
	}
	r.seen = got
}

// waitLogged waits until the log w holds durably what was appended to it
// so far.
func waitLogged(t *testing.T, w *wal) {
	t.Helper()
	w.mu.Lock()
	end := w.appended
	w.mu.Unlock()
	require.NoError(t, w.wait(end))
}

// waitFailed waits until s's log has failed.
func waitFailed(t *testing.T, s *Store) {
	t.Helper()
	require.Eventually(t, func() bool { return s.wal.failure() != nil }, 10*time.Second, time.Millisecond)
}

// TestChangeFeedHealKeepsExpiries: an item's expiry found while the disk is
// full, read by a feed reader, is in the feed after the disk heals and
// after a restart, at the lsn the reader saw, and so is every later change:
// "refused", the log had already failed when the expiry was found (it
// refused the expiry); "dropped", the expiry's own flush failed (the heal
// drops the frames past the log's durable end). A later expiry, logged
// after the heal, moves the watch's restart point past the first one, so
// that a restart cannot find it again.
func TestChangeFeedHealKeepsExpiries(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"refused", "dropped"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			clock, o, s, c, efs := openFaultyFeedStore(t)
			s.wal.retryEvery = 0 // the log heals at the next write
			pk := NewPartitionKey()
			for _, doc := range []string{`{"id":"o","ttl":1}`, `{"id":"q","ttl":10}`} {
				_, err := c.UpsertItem(ctx, pk, []byte(doc), nil)
				require.NoError(t, err)
			}
			efs.SetFull(true)
			if mode == "refused" {
				_, err := c.UpsertItem(ctx, pk, []byte(`{"id":"r"}`), nil)
				require.ErrorIs(t, err, ErrUnavailable)
			}
			clock.Advance(2 * time.Second)
			seen := readWholeFeed(t, c) // o's expiry: refused, or appended and its flush fails
			require.Len(t, seen, 3)
			require.Contains(t, seen[2], `"timeToLiveExpired":true,"id":"o"`)
			waitFailed(t, s)
			efs.SetFull(false)
			_, err := c.UpsertItem(ctx, pk, []byte(`{"id":"x"}`), nil) // the log heals
			require.NoError(t, err)
			clock.Advance(10 * time.Second)
			lines := []string{
				feedLine(1, "o", changeCreate, 0),
				feedLine(2, "q", changeCreate, 0),
				feedLine(3, "o", changeExpire, 1),
				feedLine(4, "x", changeCreate, 0),
				feedLine(5, "q", changeExpire, 2),
			}
			requireKeptFeed(t, s, o, efs, seen, lines)
		})
	}
}

// TestChangeFeedFailedForGood: a log that fails for good (its fsync
// fails) as an expiry is flushed, or before an expiry is found, writes
// neither; the feed shows them, and the store's next Open finds them again
// at the same lsns: the log holds no change after them.
func TestChangeFeedFailedForGood(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"refused", "dropped"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			clock, o, s, c, efs := openFaultyFeedStore(t)
			pk := NewPartitionKey()
			for _, doc := range []string{`{"id":"o","ttl":1}`, `{"id":"p","ttl":2}`, `{"id":"q","ttl":10}`} {
				_, err := c.UpsertItem(ctx, pk, []byte(doc), nil)
				require.NoError(t, err)
			}
			efs.Inject(vfstest.Fault{Op: vfstest.OpSync, Err: syscall.EIO, Sticky: true})
			if mode == "refused" {
				_, err := c.UpsertItem(ctx, pk, []byte(`{"id":"r"}`), nil)
				require.ErrorIs(t, err, ErrUnavailable)
			}
			clock.Advance(1500 * time.Millisecond)
			readWholeFeed(t, c) // o's expiry
			waitFailed(t, s)
			clock.Advance(time.Second)
			all := readWholeFeed(t, c) // and p's
			_, err := c.UpsertItem(ctx, pk, []byte(`{"id":"x"}`), nil)
			require.ErrorIs(t, err, ErrUnavailable)
			lines := []string{
				feedLine(1, "o", changeCreate, 0),
				feedLine(2, "p", changeCreate, 0),
				feedLine(3, "q", changeCreate, 0),
				feedLine(4, "o", changeExpire, 1),
				feedLine(5, "p", changeExpire, 2),
			}
			require.Equal(t, lines, feedEntries(c))
			reopenSameFeed(t, s, o, efs, all, lines)
		})
	}
}

// TestChangeFeedPassedExpiryDropped: a write decided before a feed
// reader's catch-up past its expiry is made, and its expiry, logged right
// after it (logPassedLocked), is dropped by the failure of its own flush;
// the feed shows it, after the write. "heal": the disk is full, and the
// heal writes the expiry first. "forgood": the fsync fails for good, and
// the log ends with the write, behind the instant up to which it had found
// expiries, where the watch, resumed, never looks: the next Open reports
// the expiry all the same, where the feed had it, with the same stamp
// (recover.go, owePassed).
func TestChangeFeedPassedExpiryDropped(t *testing.T) {
	t.Parallel()
	for _, forGood := range []bool{false, true} {
		t.Run(map[bool]string{false: "heal", true: "forgood"}[forGood], func(t *testing.T) {
			ctx := context.Background()
			clock, o, s, c, efs := openFaultyFeedStore(t)
			w := s.wal
			w.retryEvery = 0
			pk := NewPartitionKey()
			_, err := c.UpsertItem(ctx, pk, []byte(`{"id":"o","ttl":1}`), nil)
			require.NoError(t, err)
			_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"q","ttl":20}`), nil)
			require.NoError(t, err)
			hooksOf(c).beforeFeedChange = func() { // a catch-up past v's expiry, its expiry durable
				hooksOf(c).beforeFeedChange = nil
				catchUpAfter(t, c, clock, 5*time.Second)
				waitLogged(t, w)
			}
			hooksOf(c).afterLogItems = func() { // v's write durable; then v's expiry's flush fails
				hooksOf(c).afterLogItems = nil
				waitLogged(t, w)
				if forGood {
					efs.Inject(vfstest.Fault{Op: vfstest.OpSync, Err: syscall.EIO, Sticky: true})
				} else {
					efs.SetFull(true)
				}
			}
			defer func() { hooksOf(c).beforeFeedChange, hooksOf(c).afterLogItems = nil, nil }()
			_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"v","ttl":1}`), nil)
			require.NoError(t, err)
			waitFailed(t, s)
			seen := readWholeFeed(t, c)
			lines := []string{
				feedLine(1, "o", changeCreate, 0),
				feedLine(2, "q", changeCreate, 0),
				feedLine(3, "o", changeExpire, 1),
				feedLine(4, "v", changeCreate, 0),
				feedLine(5, "v", changeExpire, 4),
			}
			if forGood {
				require.Equal(t, lines, feedEntries(c))
				reopenSameFeed(t, s, o, efs, seen, lines)
				return
			}
			efs.SetFull(false)
			_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"x"}`), nil) // the log heals
			require.NoError(t, err)
			clock.Advance(20 * time.Second)
			lines = append(lines, feedLine(6, "x", changeCreate, 0), feedLine(7, "q", changeExpire, 2))
			requireKeptFeed(t, s, o, efs, seen, lines)
		})
	}
}

// TestChangeFeedHealDropsPassedExpiryOfDroppedWrite: a write decided
// before a feed reader's catch-up past its expiry, whose frame and whose
// expiry's (logged right after it) are both dropped by one failure: the
// write is refused, so the feed never shows it or its expiry, and the heal
// writes neither (keepExpiriesLocked keeps only the expiries the feed
// shows).
func TestChangeFeedHealDropsPassedExpiryOfDroppedWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, o, s, c, efs := openFaultyFeedStore(t)
	w := s.wal
	w.retryEvery = 0
	pk := NewPartitionKey()
	_, err := c.UpsertItem(ctx, pk, []byte(`{"id":"o","ttl":1}`), nil)
	require.NoError(t, err)
	var h *vfstest.Hold
	hooksOf(c).beforeFeedChange = func() { // a catch-up past v's expiry, its expiry durable
		hooksOf(c).beforeFeedChange = nil
		catchUpAfter(t, c, clock, 5*time.Second)
		waitLogged(t, w)
		h = efs.Hold(vfstest.OpWrite)
	}
	hooksOf(c).afterLogItems = func() { // v's write taken by the committer and held; its expiry appended behind it
		hooksOf(c).afterLogItems = nil
		<-h.Entered()
		go func() {
			require.Eventually(t, func() bool {
				w.mu.Lock()
				defer w.mu.Unlock()
				return len(w.afters) == 1
			}, 10*time.Second, time.Millisecond)
			efs.SetFull(true) // the held write fails, and the expiry's after it
			h.Release()
		}()
	}
	defer func() { hooksOf(c).beforeFeedChange, hooksOf(c).afterLogItems = nil, nil }()
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"v","ttl":1}`), nil)
	require.ErrorIs(t, err, ErrUnavailable)
	waitFailed(t, s)
	efs.SetFull(false)
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"x"}`), nil) // the log heals
	require.NoError(t, err)
	lines := []string{
		feedLine(1, "o", changeCreate, 0),
		feedLine(2, "o", changeExpire, 1),
		feedLine(3, "x", changeCreate, 0),
	}
	require.Equal(t, lines, feedEntries(c))
	reopenSameFeed(t, s, o, efs, readWholeFeed(t, c), lines)
}

// TestChangeFeedReadOnlyHealKeepsExpiries: a store opened read-only on a
// full disk logs, when it heals, the expiries its Open found, then those
// found while it was read-only, in that order, before any write.
func TestChangeFeedReadOnlyHealKeepsExpiries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, o, s, c, efs := openFaultyFeedStore(t)
	pk := NewPartitionKey()
	for _, doc := range []string{`{"id":"a","ttl":5}`, `{"id":"b","ttl":20}`, `{"id":"q","ttl":100}`} {
		_, err := c.UpsertItem(ctx, pk, []byte(doc), nil)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	clock.Advance(10 * time.Second) // a expires while the store is closed
	efs.SetFull(true)
	s, err := Open(o)
	require.NoError(t, err)
	c, err = s.Container("c")
	require.NoError(t, err)
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"r"}`), nil)
	require.ErrorIs(t, err, ErrUnavailable, "read-only")
	clock.Advance(20 * time.Second)
	seen := readWholeFeed(t, c) // b's expiry, refused
	SetDiskRetry(s, 0)
	efs.SetFull(false)
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"x"}`), nil) // the log heals
	require.NoError(t, err)
	clock.Advance(100 * time.Second)
	lines := []string{
		feedLine(1, "a", changeCreate, 0),
		feedLine(2, "b", changeCreate, 0),
		feedLine(3, "q", changeCreate, 0),
		feedLine(4, "a", changeExpire, 1),
		feedLine(5, "b", changeExpire, 2),
		feedLine(6, "x", changeCreate, 0),
		feedLine(7, "q", changeExpire, 3),
	}
	requireKeptFeed(t, s, o, efs, seen, lines)
}

// TestChangeFeedHealModel runs random writes of items with and without a
// ttl, deletes, feed reads, clock moves and checkpoints on a durable store
// with a change feed while the disk fills up, cuts writes short and frees up
// again at random, its fsync now and then fails for good, and the store is
// closed and reopened (read-only on a full disk). Every read of the whole
// feed begins with the one before it: no change a reader saw vanishes or
// moves, not across a heal, nor a restart; and the feed read right before
// a restart is the one read right after it. LETHE_FEEDHEAL_SOAK=n runs n
// seeds.
func TestChangeFeedHealModel(t *testing.T) {
	t.Parallel()
	seeds := 3
	if n, err := strconv.Atoi(os.Getenv("LETHE_FEEDHEAL_SOAK")); err == nil && n > 0 {
		seeds = n
	}
	base := uint64(time.Now().UnixNano())
	for i := range seeds {
		seed := base + uint64(i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("seed %d (replay: feedHealModel(t, %d))", seed, seed)
			feedHealModel(t, seed)
		})
	}
}

func feedHealModel(t *testing.T, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0))
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	efs := vfstest.NewErrorFS(vfs.OS)
	o := &Options{Dir: t.TempDir(), Clock: clock, Reaper: ReaperOptions{Disabled: true}}
	o.Sync = []SyncPolicy{SyncAlways, SyncEverySecond}[rng.IntN(2)]
	o.fs = efs
	s, err := Open(o)
	require.NoError(t, err)
	defer func() { s.Close() }()
	c, err := s.CreateContainer(ctx, ContainerProperties{ID: "c", DefaultTimeToLive: TTLNever, ChangeFeedPolicy: &ChangeFeedPolicy{}})
	require.NoError(t, err)
	SetDiskRetry(s, 0)
	var fr feedReader
	full, forGood, refused, heals, restarts := false, false, 0, 0, 0
	pk := NewPartitionKey()
	for step := range 300 {
		where := fmt.Sprint("step ", step)
		switch r := rng.IntN(100); {
		case r < 6:
			full = !full
			efs.SetFull(full)
			if !full {
				forGood = false // SetFull clears the faults
			}
		case r < 9:
			efs.Inject(vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC, Short: rng.IntN(2) == 0})
		case r < 10:
			efs.Inject(vfstest.Fault{Op: vfstest.OpSync, N: 1, Err: syscall.EIO, Sticky: true})
			forGood = true
		case r < 14:
			fr.read(t, c, where+", before the restart")
			before := fr.seen
			s.Close() // fails if the log has
			if forGood {
				efs.SetFull(false)
				full, forGood = false, false
			}
			s, err = Open(o)
			require.NoError(t, err, where)
			SetDiskRetry(s, 0)
			c, err = s.Container("c")
			require.NoError(t, err)
			fr.read(t, c, where+", restarted")
			require.Equal(t, before, fr.seen, "%s: the feed read right after a restart", where)
			restarts++
		case r < 16:
			if err := s.Checkpoint(ctx); err != nil {
				require.ErrorIs(t, err, ErrUnavailable, where)
			}
		case r < 45:
			clock.Advance(time.Duration(rng.IntN(2500)) * time.Millisecond)
		case r < 60:
			fr.read(t, c, where)
		default:
			id := fmt.Sprint("i", rng.IntN(8))
			failed := s.wal.failure() != nil
			if rng.IntN(4) == 0 {
				_, err = c.DeleteItem(ctx, pk, id, nil)
				if errors.Is(err, ErrNotFound) {
					err = nil
				}
			} else {
				ttl := []string{"", `,"ttl":1`, `,"ttl":2`, `,"ttl":4`}[rng.IntN(4)]
				_, err = c.UpsertItem(ctx, pk, fmt.Appendf(nil, `{"id":%q,"v":%d%s}`, id, step, ttl), nil)
			}
			if err != nil {
				require.ErrorIs(t, err, ErrUnavailable, where)
				refused++
			} else if failed {
				heals++
			}
		}
	}
	efs.SetFull(false)
	fr.read(t, c, "the end")
	before := fr.seen
	s.Close()
	s, err = Open(o)
	require.NoError(t, err)
	c, err = s.Container("c")
	require.NoError(t, err)
	fr.read(t, c, "reopened at the end")
	require.Equal(t, before, fr.seen, "the feed read right after the last restart")
	t.Logf("policy %v: %d changes, %d writes refused, %d heals, %d restarts", o.Sync, len(fr.seen), refused, heals, restarts)
}

// TestChangeFeedHealConcurrent: writers write items with a ttl of a second
// while a reader moves the clock and reads the whole feed, and the disk
// fills up, cuts writes short and frees up again, so that writes decided
// before a reader's catch-up past their expiry meet failures of the log:
// every read of the feed begins with the one before it, and the feed read
// at the end is the one a restart replays; in "forgood", the log's fsync
// fails for good at the end, before the last read.
func TestChangeFeedHealConcurrent(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"healed", "forgood"} {
		t.Run(end, func(t *testing.T) {
			ctx := context.Background()
			clock, o, s, c, efs := openFaultyFeedStore(t)
			SetDiskRetry(s, 0)
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			var fr feedReader
			// Now and then, between a write's decision and its logging, the
			// clock passes its expiry and a reader catches up: the log
			// holds the write's expiry right after it (logPassedLocked).
			hooksOf(c).beforeFeedChange = func() {
				if rand.IntN(4) == 0 {
					clock.Advance(1500 * time.Millisecond)
					_, err := c.ReadChangeFeed(ctx, &ChangeFeedOptions{StartFrom: ChangeFeedStartFromNow()})
					if err != nil {
						panic(err)
					}
				}
			}
			defer func() { hooksOf(c).beforeFeedChange = nil }()
			stop := make(chan struct{})
			errs := make(chan error, 3)
			var writes atomic.Int64
			for w := range 2 {
				go func() {
					pk := NewPartitionKey()
					for i := 0; ; i++ {
						select {
						case <-stop:
							errs <- nil
							return
						default:
						}
						_, err := c.UpsertItem(ctx, pk, fmt.Appendf(nil, `{"id":"w%d-%d","ttl":1}`, w, i%5), nil)
						writes.Add(1)
						if err != nil && !errors.Is(err, ErrUnavailable) {
							errs <- err
							return
						}
					}
				}()
			}
			go func() {
				rng := rand.New(rand.NewPCG(seed, 1))
				full := false
				for {
					select {
					case <-stop:
						errs <- nil
						return
					case <-time.After(time.Duration(rng.IntN(3000)) * time.Microsecond):
					}
					if rng.IntN(3) == 0 {
						efs.Inject(vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC, Short: rng.IntN(2) == 0})
						continue
					}
					full = !full
					efs.SetFull(full)
				}
			}()
			rng := rand.New(rand.NewPCG(seed, 2))
			for i := range 150 {
				for n := writes.Load(); writes.Load() < n+2; { // the writers' turn
					runtime.Gosched()
				}
				clock.Advance(time.Duration(200+rng.IntN(1000)) * time.Millisecond)
				fr.read(t, c, fmt.Sprint("read ", i))
			}
			close(stop)
			for range 3 {
				require.NoError(t, <-errs)
			}
			hooksOf(c).beforeFeedChange = nil
			efs.SetFull(false)
			if end == "forgood" {
				efs.Inject(vfstest.Fault{Op: vfstest.OpSync, Err: syscall.EIO, Sticky: true})
				_, err := c.UpsertItem(ctx, NewPartitionKey(), []byte(`{"id":"last","ttl":1}`), nil)
				require.ErrorIs(t, err, ErrUnavailable)
			} else {
				// A write appended while the flush of a reader's expiries
				// fails is refused with them; the next heals the log.
				require.Eventually(t, func() bool {
					_, err := c.UpsertItem(ctx, NewPartitionKey(), []byte(`{"id":"last","ttl":1}`), nil)
					return err == nil
				}, 10*time.Second, time.Millisecond, "the log heals")
			}
			clock.Advance(2 * time.Second)
			fr.read(t, c, "the end")
			t.Logf("%d changes", len(fr.seen))
			reopenSameFeed(t, s, o, efs, fr.seen, feedEntries(c))
		})
	}
}

// TestChangeFeedPowerCutPassedExpiry: as
// TestChangeFeedPassedExpiryDropped/forgood, but the power is cut once the
// write is synced, before its expiry, logged right after it, is: the feed
// readers saw comes back whole after the restart (recover.go, owePassed).
func TestChangeFeedPowerCutPassedExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	pfs := vfstest.NewPowerFS(1)
	o := &Options{Dir: "/db", Clock: clock, Reaper: ReaperOptions{Disabled: true}}
	o.fs = pfs
	s, err := Open(o)
	require.NoError(t, err)
	c, err := s.CreateContainer(ctx, ContainerProperties{ID: "c", DefaultTimeToLive: TTLNever, ChangeFeedPolicy: &ChangeFeedPolicy{}})
	require.NoError(t, err)
	w := s.wal
	pk := NewPartitionKey()
	for _, doc := range []string{`{"id":"o","ttl":1}`, `{"id":"q","ttl":20}`} {
		_, err = c.UpsertItem(ctx, pk, []byte(doc), nil)
		require.NoError(t, err)
	}
	hooksOf(c).beforeFeedChange = func() { // a catch-up past v's expiry, its expiry synced
		hooksOf(c).beforeFeedChange = nil
		catchUpAfter(t, c, clock, 5*time.Second)
		waitLogged(t, w)
	}
	hooksOf(c).afterLogItems = func() { // v's write synced; then the power goes
		hooksOf(c).afterLogItems = nil
		waitLogged(t, w)
		pfs.Cut()
	}
	defer func() { hooksOf(c).beforeFeedChange, hooksOf(c).afterLogItems = nil, nil }()
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"v","ttl":1}`), nil)
	require.NoError(t, err)
	waitFailed(t, s)
	lines := []string{
		feedLine(1, "o", changeCreate, 0),
		feedLine(2, "q", changeCreate, 0),
		feedLine(3, "o", changeExpire, 1),
		feedLine(4, "v", changeCreate, 0),
		feedLine(5, "v", changeExpire, 4),
	}
	require.Equal(t, lines, feedEntries(c))
	seen := readWholeFeed(t, c)
	s.Close()
	pfs.Restart()
	s, err = Open(o)
	require.NoError(t, err)
	defer s.Close()
	c, err = s.Container("c")
	require.NoError(t, err)
	require.Equal(t, lines, feedEntries(c))
	require.Equal(t, seen, readWholeFeed(t, c))
}
