package lethe_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// replicaPair makes a hub container and its replica in two stores on one
// manual clock, both with a change feed and the default TTL def.
func replicaPair(t *testing.T, def lethe.TTL) (hub, replica *lethe.Container, clock *lethe.ManualClock) {
	t.Helper()
	clock = lethe.NewManualClock(t0)
	props := lethe.ContainerProperties{ID: "c", DefaultTimeToLive: def, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}}
	o := &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}
	hub = mustContainer(t, openStore(t, o), props)
	replica = mustContainer(t, openStore(t, o), props)
	return hub, replica, clock
}

// ship applies to replica every change of hub after lsn, batch at a time,
// and returns the position it reached.
func ship(t *testing.T, hub, replica *lethe.Container, lsn uint64, batch int) uint64 {
	t.Helper()
	for {
		chs, last, err := hub.ReplicaChanges(lsn, batch)
		require.NoError(t, err)
		for _, ch := range chs {
			require.NoError(t, replica.ApplyReplicaChange(ctx, ch), "lsn %d", ch.LSN)
		}
		if len(chs) == 0 {
			return last
		}
		lsn = last
	}
}

// allVersions reads c's whole change feed in all-versions-and-deletes mode.
func allVersions(t *testing.T, c *lethe.Container) []change {
	t.Helper()
	items, _ := readAll(t, c, lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
	return decodeChanges(t, items)
}

var noPK = lethe.NewPartitionKey()

func TestReplicaChangesDescribeEveryChange(t *testing.T) {
	hub, _, clock := replicaPair(t, lethe.TTLNever)
	c1 := create(t, hub, `{"id":"a","n":1,"ttl":5}`)
	clock.Advance(1500 * time.Millisecond)
	r1 := upsert(t, hub, `{"id":"a","n":2,"ttl":1}`)
	clock.Advance(time.Second)
	allVersions(t, hub) // finds the expiry of a, at t0+2.5s
	c2 := create(t, hub, `{"id":"a","n":3}`)
	_, err := hub.DeleteItem(ctx, noPK, "a", nil)
	require.NoError(t, err)

	chs, last, err := hub.ReplicaChanges(0, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(5), last)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	want := []lethe.ReplicaChange{
		{LSN: 1, Kind: lethe.ReplicaWrite, Written: at(0), ETag: c1.ETag},
		{LSN: 2, Kind: lethe.ReplicaWrite, Written: at(1500 * time.Millisecond), ETag: r1.ETag, Replaces: c1.ETag},
		{LSN: 3, Kind: lethe.ReplicaExpiry, Written: at(2500 * time.Millisecond), ETag: r1.ETag, Replaces: r1.ETag},
		{LSN: 4, Kind: lethe.ReplicaWrite, Written: at(2500 * time.Millisecond), ETag: c2.ETag},
		{LSN: 5, Kind: lethe.ReplicaDelete, Written: at(2500 * time.Millisecond), ETag: c2.ETag, Replaces: c2.ETag},
	}
	require.Len(t, chs, len(want))
	for i, w := range want {
		got := chs[i]
		require.True(t, w.Written.Equal(got.Written), "change %d written %v, not %v", i, got.Written, w.Written)
		got.Written, w.Written = time.Time{}, time.Time{}
		require.Equal(t, "a", got.ID)
		require.Equal(t, noPK, got.PartitionKey)
		doc := got.Removed
		if got.Kind == lethe.ReplicaWrite {
			doc = got.Item
			require.Nil(t, got.Removed)
		} else {
			require.Nil(t, got.Item)
		}
		require.Contains(t, string(doc), `"_etag":"`+got.ETag+`"`)
		got.ID, got.PartitionKey, got.Item, got.Removed = "", lethe.PartitionKey{}, nil, nil
		require.Equal(t, w, got, "change %d", i)
	}

	// In batches: each resumes after the last change the one before saw.
	page, last, err := hub.ReplicaChanges(2, 2)
	require.NoError(t, err)
	require.Equal(t, uint64(4), last)
	require.Equal(t, []uint64{3, 4}, []uint64{page[0].LSN, page[1].LSN})
	page, last, err = hub.ReplicaChanges(5, 2)
	require.NoError(t, err)
	require.Empty(t, page)
	require.Equal(t, uint64(5), last)
	end, err := hub.LastReplicaLSN()
	require.NoError(t, err)
	require.Equal(t, uint64(5), end)
}

func TestReplicaChangesErrors(t *testing.T) {
	clock := lethe.NewManualClock(t0)
	s := openStore(t, &lethe.Options{Clock: clock})
	hub := mustContainer(t, s, lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 3}})
	for i := range 10 {
		create(t, hub, fmt.Sprintf(`{"id":"%d"}`, i))
	}
	_, last, err := hub.ReplicaChanges(2, 10)
	require.ErrorIs(t, err, lethe.ErrChangeFeedTrimmed)
	require.Equal(t, 400, status(err))
	require.Equal(t, uint64(2), last)
	chs, _, err := hub.ReplicaChanges(7, 10) // the change after 7 is kept
	require.NoError(t, err)
	require.Len(t, chs, 3)
	chs, _, err = hub.ReplicaChanges(0, 10) // from the oldest kept
	require.NoError(t, err)
	require.Equal(t, uint64(8), chs[0].LSN)
	_, _, err = hub.ReplicaChanges(11, 10)
	require.ErrorIs(t, err, lethe.ErrBadRequest)

	plain := mustContainer(t, s, lethe.ContainerProperties{ID: "plain"})
	_, _, err = plain.ReplicaChanges(0, 10)
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	require.ErrorContains(t, err, "ChangeFeedPolicy")
	_, err = plain.LastReplicaLSN()
	require.ErrorIs(t, err, lethe.ErrBadRequest)

	// The feed numbers on after what it forgot, and from before any change.
	end, err := hub.LastReplicaLSN()
	require.NoError(t, err)
	require.Equal(t, uint64(10), end)
	empty := mustContainer(t, s, lethe.ContainerProperties{ID: "empty", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
	end, err = empty.LastReplicaLSN()
	require.NoError(t, err)
	require.Zero(t, end)
}

// TestReplicaKeepsInstantsAndETags: whenever a change arrives, the
// replica's item has the origin's _ts, _etag and expiry, and expires at the
// same instant.
func TestReplicaKeepsInstantsAndETags(t *testing.T) {
	for _, lag := range []time.Duration{0, 3 * time.Second, 9999 * time.Millisecond} {
		t.Run(lag.String(), func(t *testing.T) {
			hub, replica, clock := replicaPair(t, 60)
			clock.Advance(1234567 * time.Nanosecond)
			w := create(t, hub, `{"id":"a","ttl":10}`)
			clock.Advance(lag)
			ship(t, hub, replica, 0, 10)
			got, err := replica.ReadItem(ctx, noPK, "a", nil)
			require.NoError(t, err)
			require.Equal(t, string(w.Value), string(got.Value))
			require.Equal(t, w.ETag, got.ETag)
			exp, ok, err := replica.ItemExpiry(ctx, noPK, "a")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, t0.Add(10*time.Second+1234567*time.Nanosecond), exp)

			clock.Set(exp.Add(-time.Nanosecond))
			_, err = replica.ReadItem(ctx, noPK, "a", nil)
			require.NoError(t, err)
			clock.Set(exp)
			_, err = replica.ReadItem(ctx, noPK, "a", nil)
			require.Equal(t, 404, status(err))
			_, err = hub.ReadItem(ctx, noPK, "a", nil)
			require.Equal(t, 404, status(err))

			// The replica's feed has the change at its instant, then the expiry.
			chs := allVersions(t, replica)
			require.Len(t, chs, 2)
			require.Equal(t, "create", chs[0].Metadata.OperationType)
			require.Equal(t, t0.Unix(), chs[0].Metadata.CRTS)
			require.True(t, chs[1].Metadata.TimeToLiveExpired)
		})
	}
}

// TestReplicaItemExpiredOnArrival: a write that arrives after its item
// expired is stored, never shown, and expires in the replica's feed; a
// later write of the item replaces it.
func TestReplicaItemExpiredOnArrival(t *testing.T) {
	hub, replica, clock := replicaPair(t, lethe.TTLNever)
	create(t, hub, `{"id":"a","ttl":2}`)
	clock.Advance(5 * time.Second)
	pos := ship(t, hub, replica, 0, 10)
	_, err := replica.ReadItem(ctx, noPK, "a", nil)
	require.Equal(t, 404, status(err))
	_, _, err = replica.ItemExpiry(ctx, noPK, "a")
	require.Equal(t, 404, status(err))
	for doc, err := range replica.QueryItems(ctx, "SELECT * FROM c", noPK, nil) {
		require.NoError(t, err)
		t.Fatalf("the query returns %s", doc)
	}
	chs := allVersions(t, replica)
	require.Len(t, chs, 2)
	require.Equal(t, "create", chs[0].Metadata.OperationType)
	require.Equal(t, "delete", chs[1].Metadata.OperationType)
	require.True(t, chs[1].Metadata.TimeToLiveExpired)
	require.Equal(t, t0.Unix()+2, chs[1].Metadata.CRTS)

	w := create(t, hub, `{"id":"a","n":2}`)
	ship(t, hub, replica, pos, 10)
	got, err := replica.ReadItem(ctx, noPK, "a", nil)
	require.NoError(t, err)
	require.Equal(t, string(w.Value), string(got.Value))
	chs = allVersions(t, replica)
	require.Len(t, chs, 3)
	require.Equal(t, "create", chs[2].Metadata.OperationType)
}

// TestReplicaApplyIsIdempotent: a change applied again, or an older
// version of an item after a newer one, changes nothing; so does a delete
// of a missing item or an expiry. Changes applied again in order leave the
// replica as it was.
func TestReplicaApplyIsIdempotent(t *testing.T) {
	hub, replica, clock := replicaPair(t, lethe.TTLNever)
	create(t, hub, `{"id":"a","n":1}`)
	clock.Advance(time.Second)
	upsert(t, hub, `{"id":"a","n":2}`)
	create(t, hub, `{"id":"b","ttl":1}`)
	_, err := hub.DeleteItem(ctx, noPK, "b", nil)
	require.NoError(t, err)
	chs, _, err := hub.ReplicaChanges(0, 0)
	require.NoError(t, err)
	require.Len(t, chs, 4)
	for _, ch := range chs {
		require.NoError(t, replica.ApplyReplicaChange(ctx, ch))
	}
	before, _, err := replica.ReplicaChanges(0, 0)
	require.NoError(t, err)
	want, err := replica.ReadItem(ctx, noPK, "a", nil)
	require.NoError(t, err)
	for _, ch := range []lethe.ReplicaChange{chs[1], chs[0], chs[3], chs[1]} {
		require.NoError(t, replica.ApplyReplicaChange(ctx, ch))
	}
	require.NoError(t, replica.ApplyReplicaChange(ctx, lethe.ReplicaChange{Kind: lethe.ReplicaExpiry, ID: "a", ETag: chs[1].ETag, Written: clock.Now()}))
	after, _, err := replica.ReplicaChanges(0, 0)
	require.NoError(t, err)
	require.Equal(t, before, after, "the replica's feed has no more changes")
	for _, ch := range chs { // all again: the feed's delete of b keeps b out
		require.NoError(t, replica.ApplyReplicaChange(ctx, ch))
	}
	after, _, err = replica.ReplicaChanges(0, 0)
	require.NoError(t, err)
	require.Equal(t, before, after, "the replica's feed has no more changes")
	got, err := replica.ReadItem(ctx, noPK, "a", nil)
	require.NoError(t, err)
	require.Equal(t, string(want.Value), string(got.Value))
	_, err = replica.ReadItem(ctx, noPK, "b", nil)
	require.Equal(t, 404, status(err))
}

func TestReplicaApplyRefusesBadInput(t *testing.T) {
	clock := lethe.NewManualClock(t0)
	s := openStore(t, &lethe.Options{Clock: clock})
	replica := mustContainer(t, s, lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{},
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	pk := lethe.NewPartitionKeyString("p")
	good := lethe.ReplicaChange{Kind: lethe.ReplicaWrite, PartitionKey: pk, ID: "a",
		Item: []byte(`{"id":"a","pk":"p"}`), Written: t0, ETag: "0000000000000010"}
	for _, tc := range []struct {
		name string
		edit func(ch *lethe.ReplicaChange)
		msg  string
	}{
		{"no kind", func(ch *lethe.ReplicaChange) { ch.Kind = 0 }, "kind"},
		{"unknown kind", func(ch *lethe.ReplicaChange) { ch.Kind = 9 }, "kind"},
		{"no id", func(ch *lethe.ReplicaChange) { ch.ID = "" }, "id"},
		{"another id", func(ch *lethe.ReplicaChange) { ch.ID = "b" }, `"a"`},
		{"bad JSON", func(ch *lethe.ReplicaChange) { ch.Item = []byte(`{"id":"a",`) }, ""},
		{"not an object", func(ch *lethe.ReplicaChange) { ch.Item = []byte(`[1]`) }, ""},
		{"another partition key", func(ch *lethe.ReplicaChange) { ch.PartitionKey = lethe.NewPartitionKeyString("q") }, "PartitionKey"},
		{"no partition key", func(ch *lethe.ReplicaChange) { ch.PartitionKey = noPK }, ""},
		{"no ETag", func(ch *lethe.ReplicaChange) { ch.ETag = "" }, "ETag"},
		{"ETag zero", func(ch *lethe.ReplicaChange) { ch.ETag = "0000000000000000" }, "ETag"},
		{"ETag in upper case", func(ch *lethe.ReplicaChange) { ch.ETag = "00000000000000AB" }, "ETag"},
		{"quoted ETag", func(ch *lethe.ReplicaChange) { ch.ETag = `"0000000000000010"` }, "ETag"},
		{"bad Replaces", func(ch *lethe.ReplicaChange) { ch.Replaces = "x" }, "Replaces"},
		{"no instant", func(ch *lethe.ReplicaChange) { ch.Written = time.Time{} }, "Written"},
		{"delete without ETag", func(ch *lethe.ReplicaChange) { ch.Kind, ch.Item, ch.ETag = lethe.ReplicaDelete, nil, "" }, "ETag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := good
			tc.edit(&ch)
			err := replica.ApplyReplicaChange(ctx, ch)
			var e *lethe.Error
			require.True(t, errors.As(err, &e), "%v", err)
			require.ErrorIs(t, err, lethe.ErrBadRequest)
			require.ErrorContains(t, err, tc.msg)
			chs, _, err := replica.ReplicaChanges(0, 0)
			require.NoError(t, err)
			require.Empty(t, chs, "nothing changed")
		})
	}
	require.NoError(t, replica.ApplyReplicaChange(ctx, good))
	got, err := replica.ReadItem(ctx, pk, "a", nil)
	require.NoError(t, err)
	require.Equal(t, "0000000000000010", got.ETag)
}

// TestReplicaApplyIsNeverThrottled: replica changes draw no request units,
// however many arrive at once.
func TestReplicaApplyIsNeverThrottled(t *testing.T) {
	clock := lethe.NewManualClock(t0)
	props := lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}}
	hub := mustContainer(t, openStore(t, &lethe.Options{Clock: clock}), props)
	props.Throughput = 400
	replica := mustContainer(t, openStore(t, &lethe.Options{Clock: clock}), props)
	for i := range 300 {
		create(t, hub, fmt.Sprintf(`{"id":"%d"}`, i))
	}
	ship(t, hub, replica, 0, 1000)
	_, err := replica.ReadItem(ctx, noPK, "299", nil)
	require.NoError(t, err)
	for i := 0; ; i++ { // the replica's budget is untouched, and a client's write is throttled
		if _, err := replica.CreateItem(ctx, noPK, fmt.Appendf(nil, `{"id":"x%d"}`, i), nil); err != nil {
			require.ErrorIs(t, err, lethe.ErrTooManyRequests)
			require.Greater(t, i, 50)
			break
		}
	}
}

// TestReplicaFailoverWritesAboveAppliedETags: after a failover, the
// replica's own writes get ETags above every one it applied, also once it
// restarts, and an If-Match with an ETag read in the old write region
// matches in the new one.
func TestReplicaFailoverWritesAboveAppliedETags(t *testing.T) {
	clock := lethe.NewManualClock(t0)
	props := lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{},
		UniqueKeyPolicy: &lethe.UniqueKeyPolicy{UniqueKeys: []lethe.UniqueKey{{Paths: []string{"/u"}}}}}
	hub := mustContainer(t, openStore(t, &lethe.Options{Clock: clock}), props)
	for i := range 100 {
		upsert(t, hub, fmt.Sprintf(`{"id":"%d","u":%d}`, i%7, i%7))
	}
	read, err := hub.ReadItem(ctx, noPK, "3", nil)
	require.NoError(t, err)
	last := upsert(t, hub, `{"id":"6","u":6}`)

	dir := filepath.Join(t.TempDir(), "replica")
	o := &lethe.Options{Dir: dir, Clock: clock}
	s, err := lethe.Open(o)
	require.NoError(t, err)
	replica := mustContainer(t, s, props)
	ship(t, hub, replica, 0, 10)

	check := func(replica *lethe.Container, id string) {
		w, err := replica.CreateItem(ctx, noPK, fmt.Appendf(nil, `{"id":%q,"u":%q}`, id, id), nil)
		require.NoError(t, err)
		require.Greater(t, w.ETag, last.ETag)
		_, err = replica.CreateItem(ctx, noPK, []byte(`{"id":"dup","u":6}`), nil)
		require.ErrorIs(t, err, lethe.ErrConflict, "the unique index holds the applied items")
	}
	check(replica, "new")
	r, err := replica.ReplaceItem(ctx, noPK, "3", []byte(`{"id":"3","u":3,"n":1}`), &lethe.ItemOptions{IfMatchEtag: read.ETag})
	require.NoError(t, err)
	require.Greater(t, r.ETag, last.ETag)
	require.NoError(t, s.Close())

	s, err = lethe.Open(o)
	require.NoError(t, err)
	defer s.Close()
	replica, err = s.Container("c")
	require.NoError(t, err)
	check(replica, "after restart")
}

// TestReplicaApplyConcurrently: a replica applies changes while its clock
// moves, its reaper purges, and readers read its items, its feed and its
// own changes; it ends as the hub is (run with -race).
func TestReplicaApplyConcurrently(t *testing.T) {
	clock := lethe.NewManualClock(t0)
	props := lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 5, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}}
	hub := mustContainer(t, openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}), props)
	replica := mustContainer(t, openStore(t, &lethe.Options{Clock: clock}), props)
	for i := range 2000 {
		upsert(t, hub, fmt.Sprintf(`{"id":"%d","ttl":%d}`, i%300, 1+i%20))
		if i%100 == 0 {
			clock.Advance(time.Second)
		}
	}
	chs, _, err := hub.ReplicaChanges(0, 4096)
	require.NoError(t, err)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, read := range []func(){
		func() { _, _ = replica.ReadItem(ctx, noPK, "7", nil) },
		func() { _, _, _ = replica.ReplicaChanges(0, 100) },
		func() {
			_, _ = replica.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
		},
		func() {
			for range replica.QueryItems(ctx, "SELECT VALUE COUNT(1) FROM c", noPK, nil) {
			} // (its time budget may run out, the clock moving meanwhile)
		},
		func() { clock.Advance(time.Millisecond) },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
					read()
				}
			}
		}()
	}
	for _, ch := range chs {
		require.NoError(t, replica.ApplyReplicaChange(ctx, ch))
	}
	close(done)
	wg.Wait()
	for i := range 300 {
		id := fmt.Sprint(i)
		h, herr := hub.ReadItem(ctx, noPK, id, nil)
		r, rerr := replica.ReadItem(ctx, noPK, id, nil)
		require.Equal(t, status(herr), status(rerr), id)
		require.Equal(t, string(h.Value), string(r.Value), id)
	}
}
