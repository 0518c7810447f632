package lethe_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// feedContainer opens a store on a manual clock (reaper off) with one
// container that keeps a change feed.
func feedContainer(t *testing.T, props lethe.ContainerProperties) (*lethe.Container, *lethe.ManualClock) {
	t.Helper()
	s, clock := newStore(t)
	if props.ID == "" {
		props.ID = "c"
	}
	if props.ChangeFeedPolicy == nil {
		props.ChangeFeedPolicy = &lethe.ChangeFeedPolicy{}
	}
	return mustContainer(t, s, props), clock
}

// change is one all-versions-and-deletes change, decoded.
type change struct {
	Current  map[string]any `json:"current"`
	Previous map[string]any `json:"previous"`
	Metadata struct {
		OperationType     string         `json:"operationType"`
		LSN               uint64         `json:"lsn"`
		CRTS              int64          `json:"crts"`
		PreviousImageLSN  uint64         `json:"previousImageLSN"`
		TimeToLiveExpired bool           `json:"timeToLiveExpired"`
		ID                string         `json:"id"`
		PartitionKey      map[string]any `json:"partitionKey"`
	} `json:"metadata"`
}

// readAll reads the feed from o until a page comes back empty, and
// returns the changes and the last continuation.
func readAll(t *testing.T, c *lethe.Container, o lethe.ChangeFeedOptions) ([][]byte, string) {
	t.Helper()
	out := lethetesting.ReadAll(t, func() ([][]byte, error) {
		page, err := c.ReadChangeFeed(ctx, &o)
		require.NoError(t, err)
		require.NotEmpty(t, page.ContinuationToken)
		o.Continuation = page.ContinuationToken
		return page.Items, nil
	})
	return out, o.Continuation
}

func decodeChanges(t *testing.T, items [][]byte) []change {
	t.Helper()
	out := make([]change, len(items))
	for i, b := range items {
		require.NoError(t, json.Unmarshal(b, &out[i]), "%s", b)
	}
	return out
}

func ids(t *testing.T, items [][]byte) []string {
	t.Helper()
	var out []string
	for _, b := range items {
		var d struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(b, &d))
		out = append(out, d.ID)
	}
	return out
}

func TestChangeFeedLatestVersion(t *testing.T) {
	t.Parallel()
	c, _ := feedContainer(t, lethe.ContainerProperties{})
	upsert(t, c, `{"id":"a","v":1}`)
	upsert(t, c, `{"id":"b","v":1}`)
	upsert(t, c, `{"id":"c","v":1}`)
	upsert(t, c, `{"id":"a","v":2}`)
	_, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), "b", nil)
	require.NoError(t, err)

	items, tok := readAll(t, c, lethe.ChangeFeedOptions{MaxItemCount: 1})
	assert.Equal(t, []string{"c", "a"}, ids(t, items), "each live item once, at its latest version, in the order of its last change")
	var a map[string]any
	require.NoError(t, json.Unmarshal(items[1], &a))
	assert.Equal(t, 2.0, a["v"])
	assert.Equal(t, 4.0, a["_lsn"])

	// Resuming returns only what changed since, in order.
	upsert(t, c, `{"id":"d"}`)
	upsert(t, c, `{"id":"c","v":2}`)
	items, _ = readAll(t, c, lethe.ChangeFeedOptions{Continuation: tok})
	assert.Equal(t, []string{"d", "c"}, ids(t, items))

	// Starting from now skips everything before the first page.
	p := c.NewChangeFeedPager(&lethe.ChangeFeedOptions{StartFrom: lethe.ChangeFeedStartFromNow()})
	page, err := p.NextPage(ctx)
	require.NoError(t, err)
	assert.Empty(t, page.Items)
	upsert(t, c, `{"id":"e"}`)
	page, err = p.NextPage(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"e"}, ids(t, page.Items))
	assert.GreaterOrEqual(t, page.RequestCharge, 1.0)
}

func TestChangeFeedStartFromTime(t *testing.T) {
	t.Parallel()
	c, clock := feedContainer(t, lethe.ContainerProperties{})
	upsert(t, c, `{"id":"old"}`)
	mid := clock.Advance(time.Minute)
	upsert(t, c, `{"id":"new"}`)
	items, _ := readAll(t, c, lethe.ChangeFeedOptions{StartFrom: lethe.ChangeFeedStartFromTime(mid)})
	assert.Equal(t, []string{"new"}, ids(t, items))

	// Times past what Unix nanoseconds hold saturate, never wrap around.
	for _, tc := range []struct {
		at   time.Time
		want []string
	}{
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), nil},
		{time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC), nil},
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), []string{"old", "new"}},
		{time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), []string{"old", "new"}},
	} {
		items, _ := readAll(t, c, lethe.ChangeFeedOptions{StartFrom: lethe.ChangeFeedStartFromTime(tc.at)})
		if tc.want == nil {
			assert.Empty(t, items, "from %v", tc.at)
		} else {
			assert.Equal(t, tc.want, ids(t, items), "from %v", tc.at)
		}
	}
}

func TestChangeFeedAllVersionsAndDeletes(t *testing.T) {
	t.Parallel()
	c, clock := feedContainer(t, lethe.ContainerProperties{
		DefaultTimeToLive:      lethe.TTLNever,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}},
	})
	pk := lethe.NewPartitionKeyString("p")
	write := func(doc string) {
		t.Helper()
		_, err := c.UpsertItem(ctx, pk, []byte(doc), nil)
		require.NoError(t, err)
	}
	write(`{"id":"a","pk":"p","ttl":10}`) // 1 create
	write(`{"id":"a","pk":"p","ttl":10}`) // 2 replace
	write(`{"id":"b","pk":"p"}`)          // 3 create
	_, err := c.DeleteItem(ctx, pk, "b", nil)
	require.NoError(t, err) // 4 delete
	clock.Advance(10 * time.Second)
	expiredAt := clock.Now()

	items, _ := readAll(t, c, lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
	ch := decodeChanges(t, items)
	require.Len(t, ch, 5)
	ops := make([]string, len(ch))
	for i, x := range ch {
		ops[i] = x.Metadata.OperationType
		assert.Equal(t, uint64(i+1), x.Metadata.LSN)
	}
	assert.Equal(t, []string{"create", "replace", "create", "delete", "delete"}, ops)
	assert.Equal(t, uint64(1), ch[1].Metadata.PreviousImageLSN)
	assert.Equal(t, 2.0, ch[1].Current["_lsn"])
	assert.Equal(t, t0.Unix(), ch[0].Metadata.CRTS)

	del := ch[3]
	assert.False(t, del.Metadata.TimeToLiveExpired)
	assert.Equal(t, "b", del.Metadata.ID)
	assert.Equal(t, map[string]any{"pk": "p"}, del.Metadata.PartitionKey)
	assert.Empty(t, del.Current)
	assert.Equal(t, "b", del.Previous["id"])
	assert.Equal(t, uint64(3), del.Metadata.PreviousImageLSN)

	exp := ch[4]
	assert.True(t, exp.Metadata.TimeToLiveExpired, "an expiry is a delete marked timeToLiveExpired")
	assert.Equal(t, "a", exp.Metadata.ID)
	assert.Equal(t, expiredAt.Unix(), exp.Metadata.CRTS, "at the instant it expired, not when it is purged")
	assert.Equal(t, uint64(2), exp.Metadata.PreviousImageLSN)
	assert.NotEmpty(t, exp.Previous["_etag"])
}

// TestChangeFeedExpiryOrder: an item that expired and is then written again
// has its expiry before its new life in the feed, even when the write is
// what finds it; a purge adds nothing.
func TestChangeFeedExpiryOrder(t *testing.T) {
	t.Parallel()
	c, clock := feedContainer(t, lethe.ContainerProperties{DefaultTimeToLive: 5})
	upsert(t, c, `{"id":"a"}`)
	clock.Advance(6 * time.Second)
	upsert(t, c, `{"id":"a","v":2}`)
	upsert(t, c, `{"id":"x"}`)
	clock.Advance(6 * time.Second)
	n, err := c.Purge(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)

	items, _ := readAll(t, c, lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
	ch := decodeChanges(t, items)
	var got []string
	for _, x := range ch {
		id := x.Metadata.ID
		if id == "" {
			id, _ = x.Current["id"].(string)
		}
		got = append(got, x.Metadata.OperationType+" "+id)
	}
	assert.Equal(t, []string{"create a", "delete a", "create a", "create x", "delete a", "delete x"}, got)
	assert.Equal(t, t0.Unix()+5, ch[1].Metadata.CRTS)
}

func TestChangeFeedPartitionScope(t *testing.T) {
	t.Parallel()
	c, _ := feedContainer(t, lethe.ContainerProperties{
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/t", "/u"}},
	})
	for _, d := range []string{`{"id":"1","t":"x","u":"a"}`, `{"id":"2","t":"y","u":"a"}`, `{"id":"3","t":"x","u":"b"}`} {
		var doc struct{ T, U string }
		require.NoError(t, json.Unmarshal([]byte(d), &doc))
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString(doc.T).AppendString(doc.U), []byte(d), nil)
		require.NoError(t, err)
	}
	x := lethe.NewPartitionKeyString("x")
	items, _ := readAll(t, c, lethe.ChangeFeedOptions{PartitionKey: &x})
	assert.Equal(t, []string{"1", "3"}, ids(t, items), "a prefix of a hierarchical key scopes to the partitions it begins")
	xb := x.AppendString("b")
	items, tok := readAll(t, c, lethe.ChangeFeedOptions{PartitionKey: &xb})
	assert.Equal(t, []string{"3"}, ids(t, items))

	// A continuation is bound to its partition key and mode.
	_, err := c.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{PartitionKey: &x, Continuation: tok})
	assert.ErrorIs(t, err, lethe.ErrBadRequest)
	_, err = c.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, PartitionKey: &xb, Continuation: tok})
	assert.ErrorIs(t, err, lethe.ErrBadRequest)
}

func TestChangeFeedErrors(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	plain := mustContainer(t, s, lethe.ContainerProperties{ID: "plain"})
	_, err := plain.ReadChangeFeed(ctx, nil)
	assert.ErrorIs(t, err, lethe.ErrBadRequest, "no feed without a policy")

	_, err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "neg", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: -1}})
	assert.ErrorIs(t, err, lethe.ErrBadRequest)
	assert.Equal(t, []string{"plain"}, s.ContainerIDs())

	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 3}})
	other := mustContainer(t, s, lethe.ContainerProperties{ID: "other", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
	upsert(t, c, `{"id":"a"}`)
	first, err := c.ReadChangeFeed(ctx, nil)
	require.NoError(t, err)
	for _, tok := range []string{"", "!!", "AQ", first.ContinuationToken + "A"} {
		if tok == "" {
			continue
		}
		_, err := c.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{Continuation: tok})
		assert.ErrorIs(t, err, lethe.ErrBadRequest, "token %q", tok)
	}
	_, err = other.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{Continuation: first.ContinuationToken})
	assert.ErrorIs(t, err, lethe.ErrBadRequest, "a token of another container")

	// Retention: the feed keeps 3 changes; a continuation that needs a
	// forgotten one fails, and says so.
	for i := range 4 {
		upsert(t, c, fmt.Sprintf(`{"id":"b%d"}`, i))
	}
	st := c.Stats()
	assert.Equal(t, 3, st.FeedChanges)
	_, err = c.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{Continuation: first.ContinuationToken})
	require.ErrorIs(t, err, lethe.ErrChangeFeedTrimmed)
	assert.ErrorIs(t, err, lethe.ErrBadRequest)
	// From the beginning starts at the oldest change kept.
	items, _ := readAll(t, c, lethe.ChangeFeedOptions{})
	assert.Equal(t, []string{"b1", "b2", "b3"}, ids(t, items))
}

// TestChangeFeedPolicyChange: a feed can be turned on, resized and off
// with Replace; turned on again, its lsns go on from where they stopped.
func TestChangeFeedPolicyChange(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	upsert(t, c, `{"id":"before"}`)
	p, err := c.Read(ctx)
	require.NoError(t, err)
	p.ChangeFeedPolicy = &lethe.ChangeFeedPolicy{MaxChanges: 10}
	require.NoError(t, c.Replace(ctx, p))
	upsert(t, c, `{"id":"after"}`)
	page, err := c.ReadChangeFeed(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"after"}, ids(t, page.Items))
	assert.Equal(t, uint64(1), page.LSN)
	got, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, &lethe.ChangeFeedPolicy{MaxChanges: 10, MaxBytes: lethe.DefaultChangeFeedMaxBytes}, got.ChangeFeedPolicy)

	p.ChangeFeedPolicy = nil
	require.NoError(t, c.Replace(ctx, p))
	upsert(t, c, `{"id":"off"}`)
	_, err = c.ReadChangeFeed(ctx, nil)
	assert.ErrorIs(t, err, lethe.ErrBadRequest)
	p.ChangeFeedPolicy = &lethe.ChangeFeedPolicy{}
	require.NoError(t, c.Replace(ctx, p))
	upsert(t, c, `{"id":"again"}`)
	page, err = c.ReadChangeFeed(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"again"}, ids(t, page.Items))
	assert.Equal(t, uint64(2), page.LSN)
}

// nextEvent waits (in a synctest bubble: virtual time) for an event.
func nextEvents(t *testing.T, sub *lethe.ExpirySubscription) []lethe.ExpiryEvent {
	t.Helper()
	synctest.Wait()
	var out []lethe.ExpiryEvent
	for {
		select {
		case ev := <-sub.Events():
			out = append(out, ev)
		default:
			return out
		}
	}
}

func eventIDs(evs []lethe.ExpiryEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestExpiryEvents: each expiry is reported once, in expiry order, at the
// instant it happens (virtual time: synctest), whatever the reaper does;
// rewrites and deletes before the expiry report nothing.
func TestExpiryEvents(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
		require.NoError(t, err)
		defer s.Close()
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 30})
		sub, err := c.SubscribeExpiries(nil)
		require.NoError(t, err)
		start := time.Now()
		upsert(t, c, `{"id":"late"}`)           // 30 s
		upsert(t, c, `{"id":"early","ttl":10}`) // 10 s
		upsert(t, c, `{"id":"rewritten","ttl":5}`)
		upsert(t, c, `{"id":"deleted","ttl":5}`)
		upsert(t, c, `{"id":"never","ttl":-1}`)
		time.Sleep(4 * time.Second)
		upsert(t, c, `{"id":"rewritten","ttl":20}`) // now 24 s
		_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "deleted", nil)
		require.NoError(t, err)

		time.Sleep(10*time.Second - 4*time.Second - time.Nanosecond)
		assert.Empty(t, nextEvents(t, sub), "nothing before the first expiry")
		time.Sleep(time.Nanosecond)
		evs := nextEvents(t, sub)
		require.Equal(t, []string{"early"}, eventIDs(evs), "reported at its instant")
		assert.Equal(t, start.Add(10*time.Second).UTC(), evs[0].ExpiredAt)
		assert.Equal(t, lethe.NewPartitionKey(), evs[0].PartitionKey)
		assert.NotEmpty(t, evs[0].ETag)
		assert.JSONEq(t, fmt.Sprintf(`{"id":"early","ttl":10,"_ts":%d,"_etag":%q}`, start.Unix(), evs[0].ETag), string(evs[0].Item()))

		time.Sleep(time.Minute)
		evs = nextEvents(t, sub)
		assert.Equal(t, []string{"rewritten", "late"}, eventIDs(evs), "in expiry order, each once")
		assert.Equal(t, start.Add(24*time.Second).UTC(), evs[0].ExpiredAt)
		assert.Equal(t, start.Add(30*time.Second).UTC(), evs[1].ExpiredAt)
		assert.Equal(t, int64(3), c.Stats().ExpiredPending, "events do not wait for the purge, nor make it")
		time.Sleep(time.Hour)
		assert.Empty(t, nextEvents(t, sub))

		sub.Close()
		sub.Close()
		_, open := <-sub.Events()
		assert.False(t, open)
	})
}

// TestExpiryEventsSettingsChange: a shorter default expires items at once:
// they are reported at the change. Turning TTL off stops expiry, and what
// expired stays expired (and reported once).
func TestExpiryEventsSettingsChange(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, err := lethe.Open(nil)
		require.NoError(t, err)
		defer s.Close()
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 100, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
		sub, err := c.SubscribeExpiries(nil)
		require.NoError(t, err)
		upsert(t, c, `{"id":"old"}`)
		time.Sleep(50 * time.Second)
		upsert(t, c, `{"id":"young"}`)
		upsert(t, c, `{"id":"own","ttl":70}`)
		time.Sleep(5 * time.Second)
		change := time.Now()
		setDefault(t, c, 10) // old (written 55 s ago) expires now; young in 5 s
		evs := nextEvents(t, sub)
		require.Equal(t, []string{"old"}, eventIDs(evs))
		assert.Equal(t, change.UTC(), evs[0].ExpiredAt, "a retroactive expiry happens at the change")
		assert.NotZero(t, evs[0].LSN)

		time.Sleep(5 * time.Second)
		evs = nextEvents(t, sub)
		require.Equal(t, []string{"young"}, eventIDs(evs))

		setDefault(t, c, lethe.TTLOff)
		time.Sleep(time.Hour)
		assert.Empty(t, nextEvents(t, sub), "TTL off: nothing expires any more")
		// On again: "own" (ttl 70, written at 50 s) is past its expiry, so
		// it expires at the change; "old" and "young" stay expired, and are
		// not reported again.
		on := time.Now()
		setDefault(t, c, lethe.TTLNever)
		evs = nextEvents(t, sub)
		require.Equal(t, []string{"own"}, eventIDs(evs))
		assert.Equal(t, on.UTC(), evs[0].ExpiredAt)
		time.Sleep(time.Hour)
		assert.Empty(t, nextEvents(t, sub))

		// The feed has the same expiries, with the same lsns.
		items, _ := readAll(t, c, lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
		var expired []string
		for _, x := range decodeChanges(t, items) {
			if x.Metadata.TimeToLiveExpired {
				expired = append(expired, x.Metadata.ID)
			}
		}
		assert.Equal(t, []string{"old", "young", "own"}, expired)
	})
}

// TestExpiryEventsSlowSubscriber: a subscriber that does not read never
// blocks the store; what does not fit its queue is dropped and counted, and
// the feed still has every expiry.
func TestExpiryEventsSlowSubscriber(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, err := lethe.Open(nil)
		require.NoError(t, err)
		defer s.Close()
		c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
		slow, err := c.SubscribeExpiries(&lethe.ExpirySubscriptionOptions{QueueSize: 2})
		require.NoError(t, err)
		fast, err := c.SubscribeExpiries(nil)
		require.NoError(t, err)
		_, err = c.SubscribeExpiries(&lethe.ExpirySubscriptionOptions{QueueSize: -1})
		assert.ErrorIs(t, err, lethe.ErrBadRequest)
		for i := range 10 {
			upsert(t, c, fmt.Sprintf(`{"id":"%d"}`, i))
		}
		time.Sleep(2 * time.Second)
		upsert(t, c, `{"id":"after"}`) // writes go on
		assert.Len(t, nextEvents(t, fast), 10)
		assert.Len(t, nextEvents(t, slow), 2)
		assert.Equal(t, int64(8), slow.Dropped())
		assert.Equal(t, int64(8), c.Stats().ExpiryEventsDropped)
		items, _ := readAll(t, c, lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, StartFrom: lethe.ChangeFeedStartFromBeginning()})
		n := 0
		for _, x := range decodeChanges(t, items) {
			if x.Metadata.TimeToLiveExpired {
				n++
			}
		}
		assert.Equal(t, 10, n)
	})
}

// TestExpirySubscriptionsEndOnClose: Close and DeleteContainer close the
// subscriptions' channels and stop the notifier (synctest fails the test
// if a goroutine outlives its bubble).
func TestExpirySubscriptionsEndOnClose(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, err := lethe.Open(nil)
		require.NoError(t, err)
		a := mustContainer(t, s, lethe.ContainerProperties{ID: "a", DefaultTimeToLive: 5})
		b := mustContainer(t, s, lethe.ContainerProperties{ID: "b", DefaultTimeToLive: 5})
		sa, err := a.SubscribeExpiries(nil)
		require.NoError(t, err)
		sb, err := b.SubscribeExpiries(nil)
		require.NoError(t, err)
		upsert(t, a, `{"id":"x"}`)
		require.NoError(t, s.DeleteContainer(ctx, "b"))
		_, open := <-sb.Events()
		assert.False(t, open)
		require.NoError(t, s.Close())
		_, open = <-sa.Events()
		assert.False(t, open)
		_, err = a.SubscribeExpiries(nil)
		assert.ErrorIs(t, err, lethe.ErrClosed)
	})
}

// TestChangeFeedModel: random writes, batches, deletes, clock moves, TTL
// changes and purges; after each step, replaying the
// all-versions-and-deletes feed (read on from the last continuation) gives
// exactly the container's live items, and the latest-version feed from the
// beginning lists exactly them too. The durable variant also takes
// checkpoints and restarts the store at random, and reads on with the same
// continuation. They run the first feedModelRaceSeeds of their 20 and 12
// seeds; the others are TestChangeFeedModelWithoutRace's and
// TestChangeFeedModelDurableWithoutRace's (withoutrace_test.go).
func TestChangeFeedModel(t *testing.T) {
	t.Parallel()
	feedModelSeeds(t, 0, feedModelRaceSeeds, false)
}

func TestChangeFeedModelDurable(t *testing.T) {
	t.Parallel()
	feedModelSeeds(t, 0, feedModelRaceSeeds, true)
}

// feedModelRaceSeeds is how many of the change feed model tests' seeds
// run under the race detector too.
const feedModelRaceSeeds = 4

// feedModelSeeds runs feedModel with the seeds first to end-1, each in a
// subtest named by its seed.
func feedModelSeeds(t *testing.T, first, end uint64, durable bool) {
	for seed := first; seed < end; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { feedModel(t, seed, durable) })
	}
}

func feedModel(t *testing.T, seed uint64, durable bool) {
	r := rand.New(rand.NewPCG(seed, 1))
	clock := lethe.NewManualClock(t0)
	dir := t.TempDir()
	open := func() (*lethe.Store, *lethe.Container) {
		o := &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}
		if durable {
			o.Dir = dir
			o.Sync = lethe.SyncNever
		}
		s, err := lethe.Open(o)
		require.NoError(t, err)
		c, err := s.Container("c")
		if errors.Is(err, lethe.ErrNotFound) {
			c = mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 20, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
		}
		return s, c
	}
	s, c := open()
	defer func() { s.Close() }()
	replica := map[string]string{} // id -> _etag
	tok := ""
	for step := range 300 {
		id := fmt.Sprintf("i%d", r.IntN(12))
		ttl := []string{"", `,"ttl":5`, `,"ttl":-1`, `,"ttl":30`}[r.IntN(4)]
		switch op := r.IntN(13); {
		case op < 4:
			upsert(t, c, fmt.Sprintf(`{"id":%q,"step":%d%s}`, id, step, ttl))
		case op < 5:
			_, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), id, nil)
			if err != nil {
				require.ErrorIs(t, err, lethe.ErrNotFound)
			}
		case op < 6:
			b := c.NewTransactionalBatch(lethe.NewPartitionKey())
			b.UpsertItem([]byte(fmt.Sprintf(`{"id":%q,"step":%d,"batch":1%s}`, id, step, ttl)), nil)
			b.UpsertItem([]byte(fmt.Sprintf(`{"id":"b%d","step":%d}`, r.IntN(3), step)), nil)
			b.DeleteItem(fmt.Sprintf("i%d", r.IntN(12)), nil)
			_, err := c.ExecuteTransactionalBatch(ctx, b, nil)
			require.NoError(t, err)
		case op < 9:
			clock.Advance(time.Duration(r.IntN(8000)) * time.Millisecond)
		case op < 10:
			setDefault(t, c, []lethe.TTL{lethe.TTLNever, 3, 20, 60}[r.IntN(4)])
		case op < 11:
			_, err := c.Purge(ctx)
			require.NoError(t, err)
		case durable && op < 12:
			require.NoError(t, s.Checkpoint(ctx))
		case durable:
			require.NoError(t, s.Close())
			s, c = open()
		}
		items, next := readAll(t, c, lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, Continuation: tok, MaxItemCount: int32(1 + r.IntN(5))})
		tok = next
		for _, x := range decodeChanges(t, items) {
			if x.Metadata.OperationType == "delete" {
				_, ok := replica[x.Metadata.ID]
				require.True(t, ok, "step %d: a delete of an item the replay does not have", step)
				delete(replica, x.Metadata.ID)
				continue
			}
			replica[x.Current["id"].(string)] = x.Current["_etag"].(string)
		}
		live := map[string]string{}
		for doc, err := range c.QueryItems(ctx, "SELECT c.id, c._etag FROM c", lethe.NewPartitionKey(), nil) {
			require.NoError(t, err)
			var m map[string]string
			require.NoError(t, json.Unmarshal(doc, &m))
			live[m["id"]] = m["_etag"]
		}
		require.Equal(t, live, replica, "step %d", step)
		if step%25 == 0 {
			lv, _ := readAll(t, c, lethe.ChangeFeedOptions{})
			got := ids(t, lv)
			slices.Sort(got)
			var want []string
			for id := range live {
				want = append(want, id)
			}
			slices.Sort(want)
			require.Equal(t, want, got, "step %d: latest version", step)
		}
	}
}

// TestChangeFeedDurableExpiryWhileClosed: an item that expires while the
// store is closed is in the feed once it reopens, at its instant, once,
// however many times it reopens; the lsns go on.
func TestChangeFeedDurableExpiryWhileClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 5, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
	upsert(t, c, `{"id":"a"}`)
	require.NoError(t, s.Close())
	clock.Advance(time.Minute)

	var want []change
	for i := range 3 {
		s = openDurable(t, dir, clock)
		c, err := s.Container("c")
		require.NoError(t, err)
		items, _ := readAll(t, c, lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
		got := decodeChanges(t, items)
		require.Len(t, got, 2, "open %d", i)
		assert.True(t, got[1].Metadata.TimeToLiveExpired)
		assert.Equal(t, t0.Unix()+5, got[1].Metadata.CRTS)
		if want != nil {
			assert.Equal(t, want, got, "open %d: the same feed", i)
		}
		want = got
		if i == 1 {
			require.NoError(t, s.Checkpoint(ctx))
		}
		require.NoError(t, s.Close())
	}
	s = openDurable(t, dir, clock)
	defer s.Close()
	c, err := s.Container("c")
	require.NoError(t, err)
	upsert(t, c, `{"id":"b"}`)
	page, err := c.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{StartFrom: lethe.ChangeFeedStartFromBeginning()})
	require.NoError(t, err)
	assert.Equal(t, uint64(3), page.LSN)
}

// TestChangeFeedWriteAllocs: on a durable store, a write to a container
// with a change feed allocates no more than one to a container without
// (the pending change it queues for the log is recycled, the full feed
// reuses its chunks, its table of latest changes stays its size). It
// counts over thousands of writes, once the feed is full, so that an
// allocation every few hundred writes fails it. It counts only what is
// allocated on the writes' own stacks, with every allocation profiled: the
// log's committer allocates as often as the clock tells it to check its
// file, so a slower write would see more of its allocations.
func TestChangeFeedWriteAllocs(t *testing.T) {
	rate := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = rate }()
	s, err := lethe.Open(&lethe.Options{Dir: t.TempDir(), Sync: lethe.SyncNever, Reaper: lethe.ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	defer s.Close()
	const n = 5000
	docs := make([][]byte, 64)
	for i := range docs {
		docs[i] = []byte(fmt.Sprintf(`{"id":"i%d","v":%d}`, i, i))
	}
	o := &lethe.ItemOptions{NoContentResponseOnWrite: true}
	write := func(c *lethe.Container, i int) {
		if _, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), docs[i%len(docs)], o); err != nil {
			t.Fatal(err)
		}
	}
	// measured makes the writes that are counted: its name in a stack
	// says so.
	measured := func(c *lethe.Container) {
		for i := range n {
			write(c, i)
		}
	}
	name := runtime.FuncForPC(reflect.ValueOf(measured).Pointer()).Name()
	counted := func() (objects int64) {
		runtime.GC() // the profile is as of the last collection but one
		runtime.GC()
		var recs []runtime.MemProfileRecord
		n, _ := runtime.MemProfile(nil, true)
		for {
			recs = make([]runtime.MemProfileRecord, n+100)
			var ok bool
			if n, ok = runtime.MemProfile(recs, true); ok {
				break
			}
		}
		for _, r := range recs[:n] {
			frames := runtime.CallersFrames(r.Stack())
			for {
				f, more := frames.Next()
				if f.Function == name {
					objects += r.AllocObjects
					break
				}
				if !more {
					break
				}
			}
		}
		return objects
	}
	allocs := func(props lethe.ContainerProperties) float64 {
		c := mustContainer(t, s, props)
		for i := range 3 * n { // the feed fills, and reaches its steady state
			write(c, i)
		}
		before := counted()
		measured(c)
		return float64(counted()-before) / n
	}
	plain := allocs(lethe.ContainerProperties{ID: "plain"})
	feed := allocs(lethe.ContainerProperties{ID: "feed", ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 1000}})
	t.Logf("allocations per write: %.4f with a feed, %.4f without", feed, plain)
	assert.LessOrEqual(t, feed, plain+0.001, "allocations per write: %.4f with a feed, %.4f without", feed, plain)
}
