package lethe_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// avad is the all-versions-and-deletes mode's options, starting from start.
func avad(start lethe.ChangeFeedStartFrom) *lethe.ChangeFeedOptions {
	return &lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, StartFrom: start}
}

// changeNames returns each change of an all-versions page as its
// operation and its item's id ("create a", "expire a").
func changeNames(t *testing.T, items [][]byte) []string {
	t.Helper()
	var out []string
	for _, ch := range decodeChanges(t, items) {
		op, id := ch.Metadata.OperationType, ch.Metadata.ID
		if ch.Metadata.TimeToLiveExpired {
			op = "expire"
		}
		if id == "" {
			id, _ = ch.Current["id"].(string)
		}
		out = append(out, op+" "+id)
	}
	return out
}

func TestChangeFeedStartAfter(t *testing.T) {
	c, _ := feedContainer(t, lethe.ContainerProperties{})
	create(t, c, `{"id":"a"}`)
	create(t, c, `{"id":"b"}`)
	create(t, c, `{"id":"c"}`)
	page, err := c.ReadChangeFeed(ctx, avad(lethe.ChangeFeedStartAfter(1)))
	require.NoError(t, err)
	require.Equal(t, []string{"create b", "create c"}, changeNames(t, page.Items))
	page, err = c.ReadChangeFeed(ctx, avad(lethe.ChangeFeedStartAfter(0)))
	require.NoError(t, err)
	require.Len(t, page.Items, 3, "0 is the beginning")
	_, err = c.ReadChangeFeed(ctx, avad(lethe.ChangeFeedStartAfter(9)))
	require.ErrorIs(t, err, lethe.ErrBadRequest, "ahead of the feed")

	small, _ := feedContainer(t, lethe.ContainerProperties{ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 2}})
	for _, id := range []string{"a", "b", "c", "d"} {
		create(t, small, `{"id":"`+id+`"}`)
	}
	_, err = small.ReadChangeFeed(ctx, avad(lethe.ChangeFeedStartAfter(1)))
	require.ErrorIs(t, err, lethe.ErrChangeFeedTrimmed)
}

func TestChangeFeedLastWrite(t *testing.T) {
	c, clock := feedContainer(t, lethe.ContainerProperties{DefaultTimeToLive: lethe.TTLNever})
	page, err := c.ReadChangeFeed(ctx, avad(lethe.ChangeFeedStartFromBeginning()))
	require.NoError(t, err)
	require.Equal(t, lethe.ChangeFeedVersion{}, page.LastWrite, "an empty feed")

	a := create(t, c, `{"id":"a","ttl":1}`)
	clock.Advance(time.Second)
	b := create(t, c, `{"id":"b"}`)
	_, err = c.DeleteItem(ctx, noPK, "b", nil)
	require.NoError(t, err)
	clock.Advance(time.Second) // a expires

	o := avad(lethe.ChangeFeedStartFromBeginning())
	o.MaxItemCount = 1
	page, err = c.ReadChangeFeed(ctx, o)
	require.NoError(t, err)
	require.Equal(t, a.ETag, page.LastWrite.ETag)
	require.True(t, t0.Equal(page.LastWrite.Written), "%v", page.LastWrite.Written)

	// A page of a delete and an expiry gives the write before them.
	o.Continuation, o.MaxItemCount = page.ContinuationToken, 0
	page, err = c.ReadChangeFeed(ctx, o)
	require.NoError(t, err)
	require.Equal(t, []string{"create b", "delete b", "expire a"}, changeNames(t, page.Items))
	require.Equal(t, b.ETag, page.LastWrite.ETag)
	require.True(t, t0.Add(time.Second).Equal(page.LastWrite.Written))

	// So does an empty page after them, and a start after the delete.
	o.Continuation = page.ContinuationToken
	page, err = c.ReadChangeFeed(ctx, o)
	require.NoError(t, err)
	require.Empty(t, page.Items)
	require.Equal(t, b.ETag, page.LastWrite.ETag)
	page, err = c.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, StartFrom: lethe.ChangeFeedStartAfter(3), MaxItemCount: 1})
	require.NoError(t, err)
	require.Equal(t, b.ETag, page.LastWrite.ETag, "before the page")
}

// resumeIn reads replica's feed from where ChangeFeedResumeLSN puts a
// reader who has been given last and the expiries through through.
func resumeIn(t *testing.T, replica *lethe.Container, last lethe.ChangeFeedVersion, through time.Time) []string {
	t.Helper()
	lsn, ok, err := replica.ChangeFeedResumeLSN(last, through)
	require.NoError(t, err)
	require.True(t, ok, "the replica holds the version")
	items, _ := readAll(t, replica, *avad(lethe.ChangeFeedStartAfter(lsn)))
	return changeNames(t, items)
}

func TestChangeFeedResumeLSN(t *testing.T) {
	t.Run("landed", func(t *testing.T) {
		hub, replica, clock := replicaPair(t, lethe.TTLNever)
		create(t, hub, `{"id":"a","ttl":5}`)
		pos := ship(t, hub, replica, 0, 100)
		create(t, hub, `{"id":"b"}`)
		clock.Advance(6 * time.Second)
		page, err := hub.ReadChangeFeed(ctx, avad(lethe.ChangeFeedStartFromBeginning()))
		require.NoError(t, err) // the hub's feed: create a, create b, expire a
		require.Equal(t, []string{"create a", "create b", "expire a"}, changeNames(t, page.Items))
		create(t, hub, `{"id":"c"}`)
		// The replica finds a's expiry before b arrives: create a,
		// expire a, create b, create c.
		allVersions(t, replica)
		ship(t, hub, replica, pos, 100)
		require.Equal(t, []string{"create c"}, resumeIn(t, replica, page.LastWrite, clock.Now()),
			"b and a's expiry given in the hub: on after b")
	})
	t.Run("an expiry the reader has not been given", func(t *testing.T) {
		hub, replica, clock := replicaPair(t, lethe.TTLNever)
		create(t, hub, `{"id":"a","ttl":5}`)
		pos := ship(t, hub, replica, 0, 100)
		clock.Advance(time.Second)
		create(t, hub, `{"id":"b"}`)
		page, err := hub.ReadChangeFeed(ctx, avad(lethe.ChangeFeedStartFromBeginning()))
		require.NoError(t, err)
		read := clock.Now() // every expiry through here is on the page
		clock.Advance(5 * time.Second)
		allVersions(t, replica) // the replica finds a's expiry before b
		ship(t, hub, replica, pos, 100)
		require.Equal(t, []string{"expire a", "create b"}, resumeIn(t, replica, page.LastWrite, read),
			"the expiry after the read, and b again")
	})
	t.Run("behind", func(t *testing.T) {
		hub, replica, _ := replicaPair(t, lethe.TTLNever)
		create(t, hub, `{"id":"a"}`)
		pos := ship(t, hub, replica, 0, 100)
		b := create(t, hub, `{"id":"b"}`)
		_, ok, err := replica.ChangeFeedResumeLSN(lethe.ChangeFeedVersion{ETag: b.ETag}, time.Time{})
		require.NoError(t, err)
		require.False(t, ok, "b has not arrived")
		empty, _, _ := replicaPair(t, lethe.TTLNever)
		_, ok, err = empty.ChangeFeedResumeLSN(lethe.ChangeFeedVersion{ETag: b.ETag}, time.Time{})
		require.NoError(t, err)
		require.False(t, ok, "nothing has arrived")
		ship(t, hub, replica, pos, 100)
		lsn, ok, err := replica.ChangeFeedResumeLSN(lethe.ChangeFeedVersion{ETag: b.ETag}, time.Time{})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, uint64(2), lsn)
	})
	t.Run("nothing written", func(t *testing.T) {
		_, replica, _ := replicaPair(t, lethe.TTLNever)
		create(t, replica, `{"id":"a"}`)
		require.Equal(t, []string{"create a"}, resumeIn(t, replica, lethe.ChangeFeedVersion{}, time.Time{}))
	})
	t.Run("a version never stored", func(t *testing.T) {
		hub, replica, clock := replicaPair(t, lethe.TTLNever)
		create(t, hub, `{"id":"a"}`)
		clock.Advance(time.Second)
		b := create(t, hub, `{"id":"b"}`)
		clock.Advance(time.Second)
		create(t, hub, `{"id":"c"}`)
		chs, _, err := hub.ReplicaChanges(0, 0)
		require.NoError(t, err)
		for _, ch := range []lethe.ReplicaChange{chs[0], chs[2]} {
			require.NoError(t, replica.ApplyReplicaChange(ctx, ch))
		}
		require.Equal(t, []string{"create c"}, resumeIn(t, replica, lethe.ChangeFeedVersion{ETag: b.ETag, Written: t0.Add(time.Second)}, time.Time{}),
			"on from b's instant")
	})
	t.Run("forgotten", func(t *testing.T) {
		clock := lethe.NewManualClock(t0)
		o := &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}
		hub := mustContainer(t, openStore(t, o), lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
		replica := mustContainer(t, openStore(t, o), lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 2}})
		a := create(t, hub, `{"id":"a"}`)
		for _, id := range []string{"b", "c", "d"} {
			create(t, hub, `{"id":"`+id+`"}`)
		}
		ship(t, hub, replica, 0, 100)
		_, _, err := replica.ChangeFeedResumeLSN(lethe.ChangeFeedVersion{ETag: a.ETag}, time.Time{})
		require.ErrorIs(t, err, lethe.ErrChangeFeedTrimmed)
		_, _, err = replica.ChangeFeedResumeLSN(lethe.ChangeFeedVersion{}, time.Time{})
		require.ErrorIs(t, err, lethe.ErrChangeFeedTrimmed, "nothing given, and the beginning forgotten")
	})
	t.Run("far into the feed", func(t *testing.T) {
		// Past several steps of the scan: 6000 writes, short (ttl 1 s),
		// its expiry, 3000 writes.
		_, replica, clock := replicaPair(t, lethe.TTLNever)
		applyWrites(t, replica, 6000)
		write := func(id, doc string, seq int) {
			require.NoError(t, replica.ApplyReplicaChange(ctx, lethe.ReplicaChange{Kind: lethe.ReplicaWrite, ID: id,
				Item: []byte(doc), Written: clock.Now(), ETag: fmt.Sprintf("%016x", seq)}))
		}
		clock.Set(t0.Add(time.Second))
		write("short", `{"id":"short","ttl":1}`, 6001) // lsn 6001
		clock.Advance(2 * time.Second)
		allVersions(t, replica) // its expiry, at t0+2s: lsn 6002
		for i := range 3000 {
			write(fmt.Sprint("late-", i), fmt.Sprintf(`{"id":"late-%d"}`, i), 6002+i) // lsn 6003+i
		}
		v := lethe.ChangeFeedVersion{ETag: fmt.Sprintf("%016x", 8000), Written: clock.Now()}
		for _, tc := range []struct {
			through time.Time
			want    uint64
		}{{t0.Add(5 * time.Second), 8001}, {t0.Add(time.Second), 6001}} {
			lsn, ok, err := replica.ChangeFeedResumeLSN(v, tc.through)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, tc.want, lsn, "expiries given through %v", tc.through)
		}
	})
	t.Run("bad ETag", func(t *testing.T) {
		_, replica, _ := replicaPair(t, lethe.TTLNever)
		_, _, err := replica.ChangeFeedResumeLSN(lethe.ChangeFeedVersion{ETag: "nope"}, time.Time{})
		require.ErrorIs(t, err, lethe.ErrBadRequest)
		var le *lethe.Error
		require.True(t, errors.As(err, &le))
	})
}

// applyWrites applies to replica n writes as a writer's, of 1000 items
// round robin (item-0 first), one nanosecond apart from t0, and returns
// their versions.
func applyWrites(t testing.TB, replica *lethe.Container, n int) []lethe.ChangeFeedVersion {
	t.Helper()
	out := make([]lethe.ChangeFeedVersion, n)
	for i := range n {
		ch := lethe.ReplicaChange{Kind: lethe.ReplicaWrite, ID: fmt.Sprint("item-", i%1000), Item: fmt.Appendf(nil, `{"id":"item-%d","n":%d}`, i%1000, i),
			Written: t0.Add(time.Duration(i)), ETag: fmt.Sprintf("%016x", i+1)}
		if err := replica.ApplyReplicaChange(ctx, ch); err != nil {
			t.Fatal(err)
		}
		out[i] = lethe.ChangeFeedVersion{ETag: ch.ETag, Written: ch.Written}
	}
	return out
}

// BenchmarkChangeFeedResumeLSN finds, in a replica's feed of n changes,
// where the version written in the middle of them landed: the first read
// of a continuation moved from another replica, one pass over the feed up
// to that point.
func BenchmarkChangeFeedResumeLSN(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			replica := mustContainer(b, openStore(b, &lethe.Options{Clock: lethe.NewManualClock(t0), Reaper: lethe.ReaperOptions{Disabled: true}}),
				lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
			mid := applyWrites(b, replica, n)[n/2]
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := replica.ChangeFeedResumeLSN(mid, t0); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

func TestChangeFeedResumeLSNByRegion(t *testing.T) {
	a, b, clock := twoRegions(t)
	lww := lethe.ConflictRule{}
	a1 := create(t, a, `{"id":"a1"}`)
	a2 := create(t, a, `{"id":"a2","ttl":1}`)
	b1 := create(t, b, `{"id":"b1"}`)
	for _, ch := range changesOf(t, a, 0) {
		resolved(t, b, ch, lww)
	}
	clock.Advance(2 * time.Second)
	allVersions(t, b) // b's feed: create b1, create a1, create a2, expire a2

	region := func(etag string) int {
		r, ok := lethe.ETagWriteRegion(etag, 2)
		require.True(t, ok)
		return r
	}
	require.Equal(t, []int{0, 0, 1}, []int{region(a1.ETag), region(a2.ETag), region(b1.ETag)})
	for _, tc := range []struct {
		name    string
		seen    []string
		through time.Time
		want    uint64
	}{
		{"nothing seen", []string{"", ""}, time.Time{}, 0},
		{"a's first, none of b's", []string{a1.ETag, ""}, time.Time{}, 0},
		{"a's first and b's", []string{a1.ETag, b1.ETag}, time.Time{}, 2},
		{"every write, not the expiry", []string{a2.ETag, b1.ETag}, time.Time{}, 3},
		{"everything", []string{a2.ETag, b1.ETag}, clock.Now(), 4},
		{"an expiry before an unseen write", []string{a1.ETag, b1.ETag}, t0, 2},
	} {
		lsn, err := b.ChangeFeedResumeLSNByRegion(tc.seen, tc.through)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, lsn, tc.name)
	}

	for _, seen := range [][]string{{"nope", ""}, {a1.ETag}, {"", "", ""}} {
		_, err := b.ChangeFeedResumeLSNByRegion(seen, time.Time{})
		require.ErrorIs(t, err, lethe.ErrBadRequest, "%q", seen)
	}
	one, _ := feedContainer(t, lethe.ContainerProperties{})
	_, err := one.ChangeFeedResumeLSNByRegion([]string{"", ""}, time.Time{})
	require.ErrorIs(t, err, lethe.ErrBadRequest, "one write region")
	for _, tc := range []struct {
		etag string
		n    int
	}{{"nope", 2}, {a1.ETag, 1}} {
		_, ok := lethe.ETagWriteRegion(tc.etag, tc.n)
		require.False(t, ok, "%q of %d", tc.etag, tc.n)
	}

	t.Run("a write numbered after a later one", func(t *testing.T) {
		// Two writes made at once in a: x's ETag below y's, numbered
		// after it in a's feed, and so replicated after it.
		a, b, _ := twoRegions(t)
		x := create(t, a, `{"id":"x"}`)
		y := create(t, a, `{"id":"y"}`)
		chs := changesOf(t, a, 0)
		resolved(t, b, chs[1], lww)
		resolved(t, b, chs[0], lww) // b's feed: y, x
		lsn, err := b.ChangeFeedResumeLSNByRegion([]string{y.ETag, ""}, time.Time{})
		require.NoError(t, err)
		require.Equal(t, uint64(1), lsn, "x, after y, may not have been given")
		lsn, err = b.ChangeFeedResumeLSNByRegion([]string{x.ETag, ""}, time.Time{})
		require.NoError(t, err)
		require.Equal(t, uint64(0), lsn, "y")
	})
	t.Run("forgotten", func(t *testing.T) {
		clock := lethe.NewManualClock(t0)
		var cs [2]*lethe.Container
		for i := range cs {
			s := openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}, WriteRegions: 2, WriteRegion: i})
			cs[i] = mustContainer(t, s, lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 3}})
		}
		x := create(t, cs[0], `{"id":"x"}`)
		w := create(t, cs[1], `{"id":"w"}`)
		resolved(t, cs[0], changesOf(t, cs[1], 0)[0], lww)
		y := create(t, cs[0], `{"id":"y"}`)
		create(t, cs[0], `{"id":"z"}`) // cs[0] keeps w, y, z
		lsn, err := cs[0].ChangeFeedResumeLSNByRegion([]string{y.ETag, w.ETag}, time.Time{})
		require.NoError(t, err, "a write of each region given is kept")
		require.Equal(t, uint64(3), lsn)
		for _, seen := range [][]string{{x.ETag, w.ETag}, {y.ETag, ""}, {"", ""}} {
			_, err = cs[0].ChangeFeedResumeLSNByRegion(seen, time.Time{})
			require.ErrorIs(t, err, lethe.ErrChangeFeedTrimmed, "%q: what a region wrote before may be forgotten", seen)
		}
		_, err = cs[1].ChangeFeedResumeLSNByRegion([]string{"", ""}, time.Time{})
		require.NoError(t, err, "a feed that forgot nothing")
	})
}
