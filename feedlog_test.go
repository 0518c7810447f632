package lethe

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/lethedb/lethe/internal/vfs"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
	"github.com/stretchr/testify/require"
)

// TestChangeFeedReusesChunks: a full feed, forgetting its oldest change at
// every write, reuses the chunk it emptied instead of allocating a new
// one, and keeps exactly the changes its policy allows, in order.
func TestChangeFeedReusesChunks(t *testing.T) {
	const keep = 100
	f := newChangeFeed(ChangeFeedPolicy{MaxChanges: keep, MaxBytes: 1 << 40}, 1)
	recs := make([]record, 16)
	for i := range recs {
		recs[i] = buildRecordFrom([]byte(`{}`), fmt.Sprint("i", i), TTLOff, 2, "", 1, uint64(i+1), uint64(i+1))
	}
	i := 0
	add := func() { f.add(changeReplace, int64(i), recs[i%len(recs)], "", uint32(i%len(recs))); i++ }
	for range 3 * feedChunk {
		add()
	}
	// Mallocs counts the whole process's allocations, a stray one of the
	// runtime's or of another test's goroutine among them: the fewest of a
	// few rounds is the feed's. A feed that allocates a chunk as it fills
	// does so in every round (3 to 6 times).
	least := uint64(math.MaxUint64)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 3 * feedChunk {
			add()
		}
		runtime.ReadMemStats(&after)
		least = min(least, after.Mallocs-before.Mallocs)
	}
	if least != 0 {
		t.Errorf("%d allocations in %d changes to a full feed, want 0", least, 3*feedChunk)
	}
	if f.retained() != keep || f.first != f.next-keep {
		t.Fatalf("the feed keeps %d changes from lsn %d to %d, want %d", f.retained(), f.first, f.next, keep)
	}
	want := f.first
	f.scan(0, func(e *feedEntry) bool {
		if e.lsn != want || e.rec != recs[(e.lsn-1)%uint64(len(recs))] {
			t.Fatalf("change %d holds lsn %d", want, e.lsn)
		}
		want++
		return true
	})
	if want != f.next {
		t.Fatalf("the scan stopped at %d, want %d", want, f.next)
	}
}

// TestChangeFeedLatestModel checks the feed's links between an item's
// changes (prev, and superseded, which the latest-version feed reads)
// against a model that keeps every change, on random changes to items. In
// every other round the items share a few hashes, so that most collide
// with others in the feed's table of latest changes. The feed keeps few
// changes, so that many
// links point to forgotten ones; in every other round the items' hashes
// are many, so that the table grows, and is rebuilt without the lsns the
// feed forgot.
func TestChangeFeedLatestModel(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for round := range 22 {
		items, keep, steps, every := 1+rng.IntN(200), 1+rng.IntN(100), 1000, 1
		if round >= 20 {
			// Over several chunks, so that trim drops whole chunks (and
			// their marks) and push reuses them; the marks checked every
			// so often.
			keep, steps, every = feedChunk+rng.IntN(feedChunk), 5*feedChunk, 97
		}
		f := newChangeFeed(ChangeFeedPolicy{MaxChanges: keep, MaxBytes: 1 << 40}, 1+uint64(rng.IntN(3)))
		hash := make([]uint32, items)
		for i := range hash {
			if round%2 == 0 {
				hash[i] = uint32(rng.IntN(4)) * 64 // a few hashes, and one home slot
			} else {
				hash[i] = rng.Uint32() // many: the table grows and drops forgotten lsns
			}
		}
		latest := make([]uint64, items) // the lsn of each item's latest change, in the model
		version := make([]record, items)
		itemOf := map[uint64]int{} // lsn → item
		for step := range steps {
			i := rng.IntN(items)
			rec := buildRecordFrom([]byte(`{}`), fmt.Sprint("item", i), TTLOff, 2, "", 1, uint64(step+1), uint64(step+1))
			old := version[i]
			if rng.IntN(2) == 0 {
				old = "" // a replayed change knows no old version
			}
			lsn := f.add(changeKind(1+rng.IntN(4)), int64(step), rec, old, hash[i])
			wantPrev := latest[i]
			latest[i], version[i], itemOf[lsn] = lsn, rec, i
			var got *feedEntry
			f.scan(lsn-1, func(e *feedEntry) bool { got = e; return false })
			if got == nil || got.lsn != lsn {
				t.Fatalf("round %d step %d: lsn %d not retained", round, step, lsn)
			}
			// The previous change counts if it was retained when this
			// one came: it is at most keep changes older.
			if wantPrev+uint64(keep) < lsn || wantPrev == 0 {
				wantPrev = 0
			}
			if got.prev != wantPrev {
				t.Fatalf("round %d step %d: item %d's change %d has prev %d, want %d", round, step, i, lsn, got.prev, wantPrev)
			}
			if step%every != 0 && step != steps-1 {
				continue
			}
			f.scan(0, func(e *feedEntry) bool {
				j := itemOf[e.lsn]
				if f.isSuperseded(e.lsn) != (latest[j] != e.lsn) {
					t.Fatalf("round %d step %d: change %d of item %d: superseded %v, its latest is %d", round, step, e.lsn, j, f.isSuperseded(e.lsn), latest[j])
				}
				return true
			})
		}
	}
}

// TestChangeFeedExpiryBeforeChange: a replace or a delete decided while the
// item was live, whose old version the expiry watch reports (for a feed
// reader) before the change is made, shows in the feed as what the
// item's state by then calls for: the expiry, then a create for the
// replace, nothing for the delete; never a change of an item the feed has
// already shown expired.
func TestChangeFeedExpiryBeforeChange(t *testing.T) {
	t.Parallel()
	inMemoryAndDurable(t, feedExpiryBeforeChange)
}

func feedExpiryBeforeChange(t *testing.T, durable bool) {
	ctx := context.Background()
	clock, o, s, c := openFeedStore(t, durable)
	defer func() { s.Close() }()
	var err error
	pk := NewPartitionKey()
	for _, doc := range []string{`{"id":"r","ttl":1}`, `{"id":"d","ttl":3}`} {
		_, err := c.UpsertItem(ctx, pk, []byte(doc), nil)
		require.NoError(t, err)
	}
	// Between each write's decision and its log, the clock passes the
	// item's expiry and a reader brings the feed up to date.
	hooksOf(c).beforeFeedChange = func() { catchUpAfter(t, c, clock, 2*time.Second) }
	defer func() { hooksOf(c).beforeFeedChange = nil }()
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"r","v":2}`), nil)
	require.NoError(t, err)
	require.Zero(t, c.Stats().Purged, "a replace that follows the expiry as a create purges nothing")
	_, err = c.DeleteItem(ctx, pk, "d", nil)
	require.NoError(t, err)
	hooksOf(c).beforeFeedChange = nil
	_, err = c.ReadItem(ctx, pk, "d", nil)
	require.ErrorIs(t, err, ErrNotFound)
	require.Equal(t, int64(1), c.Stats().Purged, "a delete the feed saw expire first counts as a purge (ContainerStats.Purged)")

	want := []string{
		feedLine(1, "r", changeCreate, 0),
		feedLine(2, "d", changeCreate, 0),
		feedLine(3, "r", changeExpire, 1),
		feedLine(4, "r", changeCreate, 3),
		feedLine(5, "d", changeExpire, 2),
	}
	require.Equal(t, want, feedEntries(c))
	if durable { // the log replays the same feed
		s, c = reopenFeedStore(t, s, o, want)
		_, err = c.ReadItem(ctx, pk, "d", nil)
		require.ErrorIs(t, err, ErrNotFound)
	}
}

// inMemoryAndDurable runs f as a subtest on an in-memory store, then on a
// durable one.
func inMemoryAndDurable(t *testing.T, f func(t *testing.T, durable bool)) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprint("durable=", durable), func(t *testing.T) { f(t, durable) })
	}
}

// openFeedStore opens a store on a manual clock with no reaper, durable
// (o says where) or in memory, with a container "c" that keeps a change
// feed.
func openFeedStore(t *testing.T, durable bool) (clock *ManualClock, o *Options, s *Store, c *Container) {
	clock = NewManualClock(time.Unix(1_700_000_000, 0))
	o = &Options{Clock: clock, Reaper: ReaperOptions{Disabled: true}}
	if durable {
		o.Dir, o.Sync = t.TempDir(), SyncNever
	}
	s, err := Open(o)
	require.NoError(t, err)
	c, err = s.CreateContainer(context.Background(), ContainerProperties{ID: "c", DefaultTimeToLive: TTLNever, ChangeFeedPolicy: &ChangeFeedPolicy{}})
	require.NoError(t, err)
	return clock, o, s, c
}

// openFaultyFeedStore is openFeedStore for a durable store (SyncAlways)
// on a file system that fails as the test says.
func openFaultyFeedStore(t *testing.T) (clock *ManualClock, o *Options, s *Store, c *Container, efs *vfstest.ErrorFS) {
	clock = NewManualClock(time.Unix(1_700_000_000, 0))
	efs = vfstest.NewErrorFS(vfs.OS)
	o = &Options{Dir: t.TempDir(), Clock: clock, Reaper: ReaperOptions{Disabled: true}}
	o.fs = efs
	s, err := Open(o)
	require.NoError(t, err)
	c, err = s.CreateContainer(context.Background(), ContainerProperties{ID: "c", DefaultTimeToLive: TTLNever, ChangeFeedPolicy: &ChangeFeedPolicy{}})
	require.NoError(t, err)
	return clock, o, s, c, efs
}

// catchUpAfter moves the clock on by d and reads c's feed, which brings it
// up to date (the expiry watch looks through the new instant).
func catchUpAfter(t *testing.T, c *Container, clock *ManualClock, d time.Duration) {
	clock.Advance(d)
	_, err := c.ReadChangeFeed(context.Background(), &ChangeFeedOptions{Mode: ChangeFeedModeAllVersionsAndDeletes})
	require.NoError(t, err)
}

// reopenFeedStore closes the durable store s, opens it again with o, and
// requires its container "c" to hold the feed want: the log replays it.
func reopenFeedStore(t *testing.T, s *Store, o *Options, want []string) (*Store, *Container) {
	require.NoError(t, s.Close())
	s, err := Open(o)
	require.NoError(t, err)
	c, err := s.Container("c")
	require.NoError(t, err)
	require.Equal(t, want, feedEntries(c))
	return s, c
}

// feedEntries lists c's retained changes: lsn, id, kind and prev.
func feedEntries(c *Container) []string {
	var out []string
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.feed.history.scan(0, func(e *feedEntry) bool {
		out = append(out, feedLine(e.lsn, e.rec.id(), e.kind, e.prev))
		return true
	})
	return out
}

// feedLine is a change as feedEntries shows it.
func feedLine(lsn uint64, id string, kind changeKind, prev uint64) string {
	return fmt.Sprintf("%d %s kind %d prev %d", lsn, id, kind, prev)
}

// TestChangeFeedExpiryOfLateWrite: a write decided before a feed reader
// brings the feed up to date past the new version's expiry, and made
// after, puts the version where the expiry watch has looked already: its
// expiry is reported all the same, after its write, to the feed (and the
// log, which replays it) and to expiry subscribers; never a version the
// feed shows created and never expired.
func TestChangeFeedExpiryOfLateWrite(t *testing.T) {
	t.Parallel()
	inMemoryAndDurable(t, feedExpiryOfLateWrite)
}

func feedExpiryOfLateWrite(t *testing.T, durable bool) {
	ctx := context.Background()
	clock, o, s, c := openFeedStore(t, durable)
	defer func() { s.Close() }()
	sub, err := c.SubscribeExpiries(nil)
	require.NoError(t, err)
	pk := NewPartitionKey()
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"o","ttl":1}`), nil)
	require.NoError(t, err)
	clock.Advance(100 * time.Millisecond)
	// Between x's decision and its numbering the clock passes its expiry
	// and a reader catches up: o's expiry moves the watch past x's.
	hooksOf(c).beforeFeedChange = func() {
		hooksOf(c).beforeFeedChange = nil
		catchUpAfter(t, c, clock, 2*time.Second)
	}
	defer func() { hooksOf(c).beforeFeedChange = nil }()
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"x","ttl":1}`), nil)
	require.NoError(t, err)
	catchUpAfter(t, c, clock, 5*time.Second)
	_, err = c.ReadItem(ctx, pk, "x", nil)
	require.ErrorIs(t, err, ErrNotFound)

	want := []string{
		feedLine(1, "o", changeCreate, 0),
		feedLine(2, "o", changeExpire, 1),
		feedLine(3, "x", changeCreate, 0),
		feedLine(4, "x", changeExpire, 3),
	}
	require.Equal(t, want, feedEntries(c))
	require.Equal(t, []string{"o 2", "x 4"}, expiryEvents(t, sub, 2))
	if durable { // the log replays the same feed
		s, _ = reopenFeedStore(t, s, o, want)
	}
}

// expiryEvents waits (10 s at most) for n expiry events from sub and lists
// each as its item's id and its lsn.
func expiryEvents(t *testing.T, sub *ExpirySubscription, n int) []string {
	var got []string
	for deadline := time.After(10 * time.Second); len(got) < n; {
		select {
		case ev := <-sub.Events():
			got = append(got, fmt.Sprintf("%s %d", ev.ID, ev.LSN))
		case <-deadline:
			t.Fatalf("expiry events: %v, want %d", got, n)
		}
	}
	return got
}

// TestChangeFeedExpiryBeforeNumbering: in memory, a replace or delete
// decided while its old version was live, and made in the id table, is
// numbered only after a feed reader has brought the feed up past that
// version's expiry: the old version is still in the expiry index (a
// numbered change leaves it only with its number), so the feed shows it
// expire, in order of the expiries, before the change (a replace becomes
// a create, a delete nothing), as a durable store's feed does: a replay
// never shows the old version after its expiry.
func TestChangeFeedExpiryBeforeNumbering(t *testing.T) {
	t.Parallel()
	for _, replace := range []bool{true, false} {
		t.Run(fmt.Sprint("replace=", replace), func(t *testing.T) {
			ctx := context.Background()
			clock, _, s, c := openFeedStore(t, false)
			defer s.Close()
			var err error
			pk := NewPartitionKey()
			_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"r","ttl":1}`), nil)
			require.NoError(t, err)
			clock.Advance(500 * time.Millisecond)
			_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"o","ttl":1}`), nil)
			require.NoError(t, err)
			clock.Advance(400 * time.Millisecond) // r is live for 100 ms more
			hooksOf(c).afterFeedPut = func() {
				hooksOf(c).afterFeedPut = nil
				catchUpAfter(t, c, clock, 2*time.Second) // past r's and o's expiry
			}
			defer func() { hooksOf(c).afterFeedPut = nil }()
			want := []string{
				feedLine(1, "r", changeCreate, 0),
				feedLine(2, "o", changeCreate, 0),
				feedLine(3, "r", changeExpire, 1),
				feedLine(4, "o", changeExpire, 2),
			}
			if replace {
				_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"r","v":2}`), nil)
				want = append(want, feedLine(5, "r", changeCreate, 3))
			} else {
				_, err = c.DeleteItem(ctx, pk, "r", nil)
			}
			require.NoError(t, err)
			require.Equal(t, want, feedEntries(c))
			_, err = c.ReadItem(ctx, pk, "r", nil)
			if replace {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrNotFound)
			}
		})
	}
}

// TestChangeFeedExpiryOfPendingVersion: in memory, a write's new version
// joins the expiry index after the write is numbered in the feed, outside
// c.mu (numberLocked). If a feed reader brings the feed up to date
// between the two, the expiry watch still sees the version: past its
// expiry, it reports it, after its write (to the feed and to
// subscribers); before it, it is due when the version expires, so that
// the next page has it.
func TestChangeFeedExpiryOfPendingVersion(t *testing.T) {
	t.Parallel()
	for _, past := range []bool{true, false} {
		t.Run(fmt.Sprint("past=", past), func(t *testing.T) {
			ctx := context.Background()
			clock, _, s, c := openFeedStore(t, false)
			defer s.Close()
			sub, err := c.SubscribeExpiries(nil)
			require.NoError(t, err)
			pk := NewPartitionKey()
			_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"o","ttl":1}`), nil)
			require.NoError(t, err)
			clock.Advance(100 * time.Millisecond)
			// x expires 3 s after its write; the reader's catch-up
			// between its numbering and its indexing finds o's expiry,
			// and, 5 s on, x's too.
			skip := 2 * time.Second
			if past {
				skip = 5 * time.Second
			}
			hooksOf(c).afterFeedNumber = func() {
				hooksOf(c).afterFeedNumber = nil
				catchUpAfter(t, c, clock, skip)
			}
			defer func() { hooksOf(c).afterFeedNumber = nil }()
			_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"x","ttl":3}`), nil)
			require.NoError(t, err)
			require.Nil(t, hooksOf(c).afterFeedNumber, "the write went through numberLocked")
			if !past {
				catchUpAfter(t, c, clock, 2*time.Second) // x has expired now
			}
			want := []string{
				feedLine(1, "o", changeCreate, 0),
				feedLine(2, "x", changeCreate, 0),
				feedLine(3, "o", changeExpire, 1),
				feedLine(4, "x", changeExpire, 2),
			}
			require.Equal(t, want, feedEntries(c))
			require.Equal(t, []string{"o 3", "x 4"}, expiryEvents(t, sub, 2))
			_, err = c.ReadItem(ctx, pk, "x", nil)
			require.ErrorIs(t, err, ErrNotFound)
			require.Equal(t, int64(2), c.Stats().ExpiredPending, "x is in the expiry index once")
			require.Equal(t, int64(0), c.Stats().Items, "x is in the expiry index once")
		})
	}
}

// TestChangeFeedChangeAheadOfWatch: in memory, a replace or delete
// decided while its old version was live, whose old version is still ahead
// of the expiry watch's front when the change is numbered (with "chunk",
// the watch has begun to look past it, finding only a chunk of a backlog),
// leaves the expiry index with its numbered change, which the watch makes
// before it looks: a reader catching up right after the numbering never
// sees the old version expire after the change, and Stats, there too,
// counts the item once or not at all.
func TestChangeFeedChangeAheadOfWatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		delete, chunk bool
		want          []string
		items         int64
	}{
		{false, true, []string{feedLine(1, "a", changeCreate, 0), feedLine(2, "r", changeCreate, 0),
			feedLine(3, "a", changeExpire, 1), feedLine(4, "r", changeReplace, 2)}, 1},
		{true, true, []string{feedLine(1, "a", changeCreate, 0), feedLine(2, "r", changeCreate, 0),
			feedLine(3, "a", changeExpire, 1), feedLine(4, "r", changeDelete, 2)}, 0},
		{false, false, []string{feedLine(1, "a", changeCreate, 0), feedLine(2, "r", changeCreate, 0),
			feedLine(3, "r", changeReplace, 2), feedLine(4, "a", changeExpire, 1)}, 1},
		{true, false, []string{feedLine(1, "a", changeCreate, 0), feedLine(2, "r", changeCreate, 0),
			feedLine(3, "r", changeDelete, 2), feedLine(4, "a", changeExpire, 1)}, 0},
	} {
		t.Run(fmt.Sprintf("delete=%v,chunk=%v", tc.delete, tc.chunk), func(t *testing.T) {
			ctx := context.Background()
			clock, _, s, c := openFeedStore(t, false)
			defer s.Close()
			pk := NewPartitionKey()
			for _, doc := range []string{`{"id":"a","ttl":1}`, `{"id":"r","ttl":2}`} {
				_, err := c.UpsertItem(ctx, pk, []byte(doc), nil)
				require.NoError(t, err)
			}
			clock.Advance(1900 * time.Millisecond) // r is live for 100 ms more
			if tc.chunk {
				hooksOf(c).beforeFeedChange = func() {
					hooksOf(c).beforeFeedChange = nil
					// The watch finds one expiry (a's) of those up to 3 s:
					// it has begun to look past r's, and not reached it.
					clock.Advance(1100 * time.Millisecond)
					c.mu.Lock()
					n, done := c.findSomeExpiriesLocked(c.store.clock.now(), true, 1)
					c.mu.Unlock()
					require.Equal(t, 1, n)
					require.False(t, done)
				}
			}
			var st ContainerStats
			hooksOf(c).afterFeedNumber = func() {
				hooksOf(c).afterFeedNumber = nil
				catchUpAfter(t, c, clock, time.Second)
				st = c.Stats()
			}
			defer func() { hooksOf(c).beforeFeedChange, hooksOf(c).afterFeedNumber = nil, nil }()
			var err error
			if tc.delete {
				_, err = c.DeleteItem(ctx, pk, "r", nil)
			} else {
				_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"r","v":2}`), nil)
			}
			require.NoError(t, err)
			require.Nil(t, hooksOf(c).afterFeedNumber, "the change was numbered")
			catchUpAfter(t, c, clock, time.Second)
			require.Equal(t, tc.want, feedEntries(c))
			require.Equal(t, tc.items, st.Items, "Stats at the numbering: r counted once or not at all")
			require.Equal(t, int64(1), st.ExpiredPending, "a, expired and not purged")
		})
	}
}

// TestChangeFeedReplaceAfterSkippedLook: in memory, a replace decided
// while its old version was live, and made in the id table; a reader that
// then brings the feed up to date (finding another expiry) and a second
// reader past the old version's expiry, both before the replace is
// numbered, leave the feed showing the old version expire before the
// replace, which follows it as a create: a replay at the second read never
// shows the old version after its expiry.
func TestChangeFeedReplaceAfterSkippedLook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, _, s, c := openFeedStore(t, false)
	defer s.Close()
	pk := NewPartitionKey()
	_, err := c.UpsertItem(ctx, pk, []byte(`{"id":"r","ttl":2}`), nil)
	require.NoError(t, err)
	clock.Advance(400 * time.Millisecond)
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"o","ttl":1}`), nil) // expires 0.6 s before r
	require.NoError(t, err)
	hooksOf(c).afterFeedPut = func() {
		hooksOf(c).afterFeedPut = nil
		catchUpAfter(t, c, clock, 1100*time.Millisecond) // past o's expiry, before r's
		catchUpAfter(t, c, clock, 1100*time.Millisecond) // past r's
	}
	defer func() { hooksOf(c).afterFeedPut = nil }()
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"r","v":2}`), nil)
	require.NoError(t, err)
	want := []string{
		feedLine(1, "r", changeCreate, 0),
		feedLine(2, "o", changeCreate, 0),
		feedLine(3, "o", changeExpire, 2),
		feedLine(4, "r", changeExpire, 1),
		feedLine(5, "r", changeCreate, 4),
	}
	require.Equal(t, want, feedEntries(c))
}

// TestChangeFeedDurableSkippedLook: on a durable store, a feed read with
// nothing due does not move the expiry watch past a write that is logged
// and not yet made (waiting for its sync, with another write logged
// behind it): the feed in memory stays the one the log replays, with the
// write's expiry after both writes. In "late", the read comes before the
// write is logged. In "late+due", an expiry is
// due then, so the read looks, past the write's expiry: the log holds
// that expiry right after the write (logPassedLocked), before the other
// write, and so does the feed.
func TestChangeFeedDurableSkippedLook(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"queued", "late", "late+due"} {
		late, due := mode != "queued", mode == "late+due"
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			clock, o, s, c, efs := openFaultyFeedStore(t)
			pk := NewPartitionKey()
			if due {
				_, err := c.UpsertItem(ctx, pk, []byte(`{"id":"o","ttl":1}`), nil)
				require.NoError(t, err)
			}
			vShard, _ := c.shardIndex(pk.enc, "v")
			wid := ""
			for i := 0; wid == ""; i++ { // w in another shard, so that it is logged while v waits
				if n, _ := c.shardIndex(pk.enc, fmt.Sprint("w", i)); n != vShard {
					wid = fmt.Sprint("w", i)
				}
			}
			if late {
				hooksOf(c).beforeFeedChange = func() {
					hooksOf(c).beforeFeedChange = nil
					catchUpAfter(t, c, clock, 5*time.Second)
				}
				defer func() { hooksOf(c).beforeFeedChange = nil }()
			}
			h := efs.Hold(vfstest.OpSync)
			v, w := make(chan error, 1), make(chan error, 1)
			go func() {
				_, err := c.UpsertItem(ctx, pk, []byte(`{"id":"v","ttl":1}`), nil)
				v <- err
			}()
			// A sync held: v's, or (late+due) that of o's expiry, logged
			// by the catch-up; then v logged and queued.
			<-h.Entered()
			require.Eventually(t, func() bool {
				c.mu.Lock()
				defer c.mu.Unlock()
				return len(c.mu.feed.pending) == 1
			}, 10*time.Second, time.Millisecond)
			go func() {
				_, err := c.UpsertItem(ctx, pk, fmt.Appendf(nil, `{"id":%q}`, wid), nil)
				w <- err
			}()
			require.Eventually(t, func() bool { // w logged and queued behind v
				c.mu.Lock()
				defer c.mu.Unlock()
				return len(c.mu.feed.pending) == 2
			}, 10*time.Second, time.Millisecond)
			if !late {
				catchUpAfter(t, c, clock, 5*time.Second) // nothing is due
			}
			h.Release()
			require.NoError(t, <-v)
			require.NoError(t, <-w)
			catchUpAfter(t, c, clock, time.Second)
			want := []string{
				feedLine(1, "v", changeCreate, 0),
				feedLine(2, wid, changeCreate, 0),
				feedLine(3, "v", changeExpire, 1),
			}
			if due {
				want = []string{
					feedLine(1, "o", changeCreate, 0),
					feedLine(2, "o", changeExpire, 1),
					feedLine(3, "v", changeCreate, 0),
					feedLine(4, "v", changeExpire, 3),
					feedLine(5, wid, changeCreate, 0),
				}
			}
			require.Equal(t, want, feedEntries(c))
			s, _ = reopenFeedStore(t, s, o, want)
			require.NoError(t, s.Close())
		})
	}
}

// TestChangeFeedStatsOneInstant: Stats, taken between a write's numbering
// in the change feed and its version's joining the expiry index, counts
// the item the feed already has.
func TestChangeFeedStatsOneInstant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, s, c := openFeedStore(t, false)
	defer s.Close()
	var st ContainerStats
	hooksOf(c).afterFeedNumber = func() {
		hooksOf(c).afterFeedNumber = nil
		st = c.Stats()
	}
	defer func() { hooksOf(c).afterFeedNumber = nil }()
	_, err := c.UpsertItem(ctx, NewPartitionKey(), []byte(`{"id":"x"}`), nil)
	require.NoError(t, err)
	require.Nil(t, hooksOf(c).afterFeedNumber, "the write went through numberLocked")
	require.Equal(t, 1, st.FeedChanges)
	require.Equal(t, int64(1), st.Items)
}

// BenchmarkFeedAddCold measures changeFeed.add alone for replaces of
// random items of 100k, the feed keeping 100k changes: the item's latest
// change is then far back, out of the cache, as it is for upserts to many
// items (bench/'s BenchmarkFloor/lethe+feed), where BenchmarkWriteFeed's
// 10k items keep it in the cache.
func BenchmarkFeedAddCold(b *testing.B) {
	const items = 100_000
	f := newChangeFeed(ChangeFeedPolicy{MaxChanges: items, MaxBytes: 1 << 40}, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	hash := make([]uint32, items)
	for i := range hash {
		hash[i] = rng.Uint32()
	}
	recs := make([]record, 4*items) // versions to write, round robin
	for i := range recs {
		recs[i] = buildRecordFrom([]byte(`{"a":"a value of some eighty bytes, as a small document's would be, give or take"}`), fmt.Sprint("item", i%items), TTLOff, 2, "", 1, uint64(i+1), uint64(i+1))
	}
	version := make([]record, items)
	for i := range items {
		version[i] = recs[i]
		f.add(changeCreate, 0, recs[i], "", hash[i])
	}
	n := items
	b.ReportAllocs()
	for b.Loop() {
		i := rng.IntN(items)
		rec := recs[n%len(recs)]
		n++
		f.add(changeReplace, 0, rec, version[i], hash[i])
		version[i] = rec
	}
}

// TestChangeFeedPassedExpiryOfRefusedWrite: a durable write decided before
// a feed reader's catch-up past its expiry, which the log then refuses
// (the disk fills as it is flushed), leaves no expiry of it in the log,
// even once the log heals: the feed replayed after a restart is the one
// in memory, without a change of a version that never was.
func TestChangeFeedPassedExpiryOfRefusedWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, o, s, c, efs := openFaultyFeedStore(t)
	w := c.store.wal
	w.retryEvery = 0 // the log heals at the next write
	pk := NewPartitionKey()
	_, err := c.UpsertItem(ctx, pk, []byte(`{"id":"o","ttl":1}`), nil)
	require.NoError(t, err)
	hooksOf(c).beforeFeedChange = func() { // a catch-up past v's expiry, its expiry logged; then the disk fills
		hooksOf(c).beforeFeedChange = nil
		catchUpAfter(t, c, clock, 5*time.Second)
		w.mu.Lock()
		end := w.appended
		w.mu.Unlock()
		require.NoError(t, w.wait(end))
		efs.SetFull(true)
	}
	hooksOf(c).afterLogItems = func() { // v's write refused as it is flushed; then there is room again
		hooksOf(c).afterLogItems = nil
		require.Eventually(t, func() bool { return w.failure() != nil }, 10*time.Second, time.Millisecond)
		efs.SetFull(false)
	}
	defer func() { hooksOf(c).beforeFeedChange, hooksOf(c).afterLogItems = nil, nil }()
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"v","ttl":1}`), nil)
	require.ErrorIs(t, err, ErrUnavailable)
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"x"}`), nil) // the log heals
	require.NoError(t, err)
	want := []string{
		feedLine(1, "o", changeCreate, 0),
		feedLine(2, "o", changeExpire, 1),
		feedLine(3, "x", changeCreate, 0),
	}
	require.Equal(t, want, feedEntries(c))
	s, _ = reopenFeedStore(t, s, o, want)
	require.NoError(t, s.Close())
}

// TestChangeFeedLastWriteAtModel checks lastWriteAt against a scan back
// over every change, on a feed of random kinds (long runs without a write
// among them) that forgets its oldest changes, across chunks.
func TestChangeFeedLastWriteAtModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	f := newChangeFeed(ChangeFeedPolicy{MaxChanges: 3 * feedChunk, MaxBytes: 1 << 40}, 1)
	rec := testRecord(1)
	var kinds []changeKind // every change's, lsn 1 first
	for round := range 40 {
		run, write := 1+rng.IntN(2*feedChunk), rng.IntN(3) == 0
		for range run {
			kind := []changeKind{changeExpire, changeDelete}[rng.IntN(2)]
			if write && rng.IntN(4) != 0 {
				kind = []changeKind{changeCreate, changeReplace}[rng.IntN(2)]
			}
			f.add(kind, 0, rec, "", uint32(len(kinds)))
			kinds = append(kinds, kind)
		}
		for range 200 {
			lsn := uint64(rng.Int64N(int64(f.next + 2)))
			var want uint64
			for l := min(lsn, f.next-1); l >= f.first && l != 0; l-- {
				if k := kinds[l-1]; k == changeCreate || k == changeReplace {
					want = l
					break
				}
			}
			var got uint64
			if e := f.lastWriteAt(lsn); e != nil {
				got = e.lsn
			}
			if got != want {
				t.Fatalf("round %d: the last write at %d (feed %d to %d) is %d, want %d", round, lsn, f.first, f.next, got, want)
			}
		}
	}
}
