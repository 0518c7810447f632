package lethe

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
	"github.com/stretchr/testify/require"
)

// The expiry watch (expirywatch.go) looks for a change feed's expiries in
// chunks (deliverChunk): what a look cut short, failed or restarted leaves
// in the feed.

// countExpires counts the expiries among a feed's entries (feedEntries).
func countExpires(lines []string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, fmt.Sprintf("kind %d ", changeExpire)) {
			n++
		}
	}
	return n
}

// expireBacklog writes to c an item x that expires first and more items
// than a chunk (deliverChunk) that expire after it, moves the clock past
// them all and writes x again: the write finds the expiries through x's
// (reportThroughLocked), a chunk, and leaves the rest for the next look.
// It returns how many items expired.
func expireBacklog(t *testing.T, c *Container, clock *ManualClock) int {
	t.Helper()
	ctx := context.Background()
	pk := NewPartitionKey()
	_, err := c.UpsertItem(ctx, pk, []byte(`{"id":"x","ttl":5}`), nil)
	require.NoError(t, err)
	const n = deliverChunk + 76
	for i := range n {
		_, err := c.UpsertItem(ctx, pk, []byte(fmt.Sprintf(`{"id":"i%d","ttl":10}`, i)), nil)
		require.NoError(t, err)
	}
	clock.Advance(20 * time.Second)
	_, err = c.UpsertItem(ctx, pk, []byte(`{"id":"x"}`), nil)
	require.NoError(t, err)
	require.Equal(t, deliverChunk, countExpires(feedEntries(c)), "the write found one chunk")
	return n + 1
}

// TestChangeFeedChunkedLookRestart: after a look that found a chunk of a
// backlog and stopped (its frames say the watch's instant, and recovery
// moves the fronts only past their entries: loggedAt), a restart finds
// the rest of the backlog, stamped as a reader read them; "closed": the
// store closed; "failed": the log failed for good after the chunk, and a
// reader read the rest, which the log refused.
func TestChangeFeedChunkedLookRestart(t *testing.T) {
	t.Parallel()
	for _, failed := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed", true: "failed"}[failed], func(t *testing.T) {
			clock, o, s, c, efs := openFaultyFeedStore(t)
			expired := expireBacklog(t, c, clock)
			var seen []string
			if failed {
				efs.Inject(vfstest.Fault{Op: vfstest.OpSync, Err: syscall.EIO, Sticky: true})
				_, err := c.UpsertItem(context.Background(), NewPartitionKey(), []byte(`{"id":"r"}`), nil)
				require.ErrorIs(t, err, ErrUnavailable)
				seen = readWholeFeed(t, c)
				require.Equal(t, expired, countExpires(feedEntries(c)))
				s.Close()
			} else {
				require.NoError(t, s.Close())
			}
			o2 := *o
			o2.fs = vfs.OS
			s, err := Open(&o2)
			require.NoError(t, err)
			defer s.Close()
			c, err = s.Container("c")
			require.NoError(t, err)
			require.Equal(t, expired, countExpires(feedEntries(c)), "every expiry is in the feed after a restart")
			if failed {
				require.Equal(t, seen, readWholeFeed(t, c), "the feed a reader read comes back after a restart")
			}
		})
	}
}

// TestChangeFeedSettingsLookFailedForGood: the expiries a settings change
// finds are in the feed after a restart, at the instants and lsns a reader
// read, when the log fails for good (a failed fsync, a full disk) around
// the change: those due under the old rule ("due": items with their own
// ttl, expired before the change) are logged before the change, and are
// durable with it (recovery takes the change as found up to its instant
// under the old rule); those the new rule brings about at once
// ("retroactive": a shorter default) are logged after the change, which
// recovery replays without them: the next Open finds them.
func TestChangeFeedSettingsLookFailedForGood(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		docs  []string
		fault vfstest.Fault
	}{
		{"due/fsync", []string{`{"id":"a","ttl":1}`, `{"id":"b","ttl":2}`}, vfstest.Fault{Op: vfstest.OpSync, N: 2, Err: syscall.EIO, Sticky: true}},
		{"due/full", []string{`{"id":"a","ttl":1}`, `{"id":"b","ttl":2}`}, vfstest.Fault{Op: vfstest.OpWrite, N: 2, Err: syscall.ENOSPC, Sticky: true}},
		{"retroactive/fsync", []string{`{"id":"a"}`, `{"id":"b"}`}, vfstest.Fault{Op: vfstest.OpSync, N: 2, Err: syscall.EIO, Sticky: true}},
		{"retroactive/full", []string{`{"id":"a"}`, `{"id":"b"}`}, vfstest.Fault{Op: vfstest.OpWrite, N: 2, Err: syscall.ENOSPC, Sticky: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock, o, s, c, efs := openFaultyFeedStore(t)
			pk := NewPartitionKey()
			for _, doc := range tc.docs {
				_, err := c.UpsertItem(ctx, pk, []byte(doc), nil)
				require.NoError(t, err)
			}
			clock.Advance(5 * time.Second)
			efs.Inject(tc.fault)
			props, err := c.Read(ctx)
			require.NoError(t, err)
			props.DefaultTimeToLive = 1
			if err := c.Replace(ctx, props); err != nil { // the change's flush may be the one that fails
				require.ErrorIs(t, err, ErrUnavailable)
			}
			_, _ = c.UpsertItem(ctx, pk, []byte(`{"id":"z"}`), nil) // refused, if the change's expiries were not
			waitFailed(t, s)
			seen := readWholeFeed(t, c)
			require.Equal(t, 2, countExpires(feedEntries(c)), "both expiries are in the feed: %v", feedEntries(c))
			s.Close()
			o2 := *o
			o2.fs = vfs.OS
			s, err = Open(&o2)
			require.NoError(t, err)
			defer s.Close()
			c, err = s.Container("c")
			require.NoError(t, err)
			require.Equal(t, seen, readWholeFeed(t, c), "the feed a reader read comes back after a restart")
		})
	}
}

// TestChangeFeedLookCutShort: a look's expiries are in the feed after a
// restart, once each and stamped as before, wherever the log ends among
// their frames (a crash with the rest unsynced, or a log another
// container's write made durable part of the way): each frame but the
// look's last says that the look had found its expiry only, and recovery
// finds the rest.
func TestChangeFeedLookCutShort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, o, s, c, _ := openFaultyFeedStore(t)
	defer s.Close()
	pk := NewPartitionKey()
	const n = 6
	for i := range n {
		_, err := c.UpsertItem(ctx, pk, []byte(fmt.Sprintf(`{"id":"i%d","ttl":%d}`, i, 1+i%3)), nil)
		require.NoError(t, err)
	}
	catchUpAfter(t, c, clock, 2*time.Second) // the watch stands at +2s
	catchUpAfter(t, c, clock, 8*time.Second) // one look finds the rest
	waitLogged(t, s.wal)
	ends := expiryFrameEnds(t, o.Dir)
	require.Len(t, ends, n)
	whole := reopenCut(t, o, -1)
	require.Equal(t, readWholeFeed(t, c), whole)
	for k, end := range ends {
		require.Equal(t, whole, reopenCut(t, o, end), "the log cut after expiry frame %d", k+1)
	}
}

// reopenCut opens a copy of the store of o with its last log segment cut
// at cut (whole if cut < 0), and returns the whole feed of its container
// "c".
func reopenCut(t *testing.T, o *Options, cut int64) []string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(o.Dir)))
	if cut >= 0 {
		require.NoError(t, os.Truncate(lethetesting.LastSegment(t, dir), cut))
	}
	o2 := *o
	o2.Dir, o2.fs = dir, vfs.OS
	s, err := Open(&o2)
	require.NoError(t, err)
	defer s.Close()
	c, err := s.Container("c")
	require.NoError(t, err)
	return readWholeFeed(t, c)
}

// expiryFrameEnds returns the offsets at which the expiry frames of the
// last log segment in dir end.
func expiryFrameEnds(t *testing.T, dir string) []int64 {
	t.Helper()
	b, err := os.ReadFile(lethetesting.LastSegment(t, dir))
	require.NoError(t, err)
	var ends []int64
	for off := fileHeaderV4; off+frameHeader <= len(b); {
		end := off + frameHeader + int(binary.LittleEndian.Uint32(b[off:]))
		require.LessOrEqual(t, end, len(b))
		if b[off+frameHeader] == frameExpire {
			ends = append(ends, int64(end))
		}
		off = end
	}
	return ends
}

// TestChangeFeedReadDuringSettings: a feed reader that looks while a
// settings change waits for its log (a look takes c.mu, which
// the change lets go of while it waits) finds the expiries due under the
// old rule up to the change's instant only: the retroactive ones the
// change brings about come first, and a version that expires after the
// change's instant after them, so that the log cut after any expiry frame
// replays the feed a reader read. (Before, the reader's look logged the
// later expiry as found up to its own instant, ahead of the retroactive
// ones, and a restart after it skipped them.)
func TestChangeFeedReadDuringSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, o, s, c, efs := openFaultyFeedStore(t)
	defer s.Close()
	pk := NewPartitionKey()
	for _, doc := range []string{`{"id":"a"}`, `{"id":"b"}`, `{"id":"c"}`, `{"id":"y","ttl":8}`} {
		_, err := c.UpsertItem(ctx, pk, []byte(doc), nil)
		require.NoError(t, err)
	}
	clock.Advance(5 * time.Second)
	props, err := c.Read(ctx)
	require.NoError(t, err)
	props.DefaultTimeToLive = 1 // a, b and c expire at once
	h := efs.Hold(vfstest.OpSync)
	replaced := make(chan error, 1)
	go func() { replaced <- c.Replace(ctx, props) }()
	<-h.Entered()
	clock.Advance(6 * time.Second) // past y's expiry
	read := make(chan error, 1)
	go func() {
		_, err := c.ReadChangeFeed(ctx, &ChangeFeedOptions{Mode: ChangeFeedModeAllVersionsAndDeletes})
		read <- err
	}()
	select {
	case err := <-read:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("a feed read waited for a settings change's log")
	}
	h.Release()
	require.NoError(t, <-replaced)
	catchUpAfter(t, c, clock, time.Second)
	waitLogged(t, s.wal)
	require.Equal(t, 4, countExpires(feedEntries(c)), "%v", feedEntries(c))
	ends := expiryFrameEnds(t, o.Dir)
	require.Len(t, ends, 4)
	whole := reopenCut(t, o, -1)
	require.Equal(t, readWholeFeed(t, c), whole)
	for k, end := range ends {
		require.Equal(t, whole, reopenCut(t, o, end), "the log cut after expiry frame %d", k+1)
	}
}

// TestChangeFeedExpiredThroughDuringSettings: a feed read while a
// settings change waits for its log finds expiries up to the change's
// instant only (expiryWatch.hold), and its page says so: ExpiredThrough
// is the change's instant, not the read's, so that a reader (an account's
// cover of a continuation) does not take an expiry after it as given.
// Once the change is made, a read reports its own instant again.
func TestChangeFeedExpiredThroughDuringSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, _, s, c, efs := openFaultyFeedStore(t)
	defer s.Close()
	_, err := c.UpsertItem(ctx, NewPartitionKey(), []byte(`{"id":"y","ttl":8}`), nil)
	require.NoError(t, err)
	read := func() ChangeFeedResponse {
		t.Helper()
		resp, err := c.ReadChangeFeed(ctx, &ChangeFeedOptions{Mode: ChangeFeedModeAllVersionsAndDeletes})
		require.NoError(t, err)
		return resp
	}
	clock.Advance(5 * time.Second)
	require.True(t, read().ExpiredThrough.Equal(clock.Now()), "a read with no change waiting finds expiries up to its instant")
	changed := clock.Now()
	props, err := c.Read(ctx)
	require.NoError(t, err)
	props.DefaultTimeToLive = 100
	h := efs.Hold(vfstest.OpSync)
	replaced := make(chan error, 1)
	go func() { replaced <- c.Replace(ctx, props) }()
	<-h.Entered()
	clock.Advance(6 * time.Second) // past y's expiry
	resp := read()
	h.Release()
	require.NoError(t, <-replaced)
	require.True(t, resp.ExpiredThrough.Equal(changed), "a read during the change found expiries up to %v, not %v", changed, resp.ExpiredThrough)
	require.Zero(t, countExpires(feedEntries(c)), "y's expiry, after the change's instant, is not found before the change is made")
	resp = read()
	require.True(t, resp.ExpiredThrough.Equal(clock.Now()), "once the change is made, a read finds expiries up to its instant: %v", resp.ExpiredThrough)
	require.Equal(t, 1, countExpires(feedEntries(c)))
}
