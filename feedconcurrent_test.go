package lethe_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// TestChangeFeedConcurrentModel: writers upsert and delete a small set of
// items from several goroutines, a clock goroutine lets short-lived items
// expire, and a reader pages the all-versions-and-deletes feed the whole
// time. Every page goes on from the last lsn seen with the next one (no
// gap, no reordering: a reader never sees lsn n before every lsn below
// it), every acknowledged upsert is in the feed exactly once and every
// acknowledged delete once (as a delete, or as the expiry of the version
// it deleted, when that expired before the delete was numbered: a reader
// catches up between some changes' decisions and their numbering), a write acknowledged before another began has
// the lower lsn (commit order), each change names its item's previous
// change as previousImageLSN, and replaying the feed gives the container's
// live items (the same as a serial replay). Interleavings differ from run
// to run: LETHE_FEED_SOAK=n runs n seeds of each instead of 1, e.g.
//
//	LETHE_FEED_SOAK=50 go test -race -run TestChangeFeedConcurrentModel .
func TestChangeFeedConcurrentModel(t *testing.T) {
	t.Parallel()
	seeds := uint64(1)
	if n, err := strconv.Atoi(os.Getenv("LETHE_FEED_SOAK")); err == nil && n > 0 {
		seeds = uint64(n)
	}
	for _, durable := range []bool{false, true} {
		for seed := range seeds {
			t.Run(fmt.Sprintf("durable=%v/%d", durable, seed), func(t *testing.T) { feedConcurrentModel(t, seed, durable) })
		}
	}
}

// feedWrite is an acknowledged write of the concurrent model: the logical
// instants (of one counter) at which it began and was acknowledged.
type feedWrite struct {
	id           string
	tag          string // an upsert's "tag"; "" for a delete
	begin, acked int64
}

func feedConcurrentModel(t *testing.T, seed uint64, durable bool) {
	const writers, writes, ids = 4, 300, 10
	t.Logf("seed %d", seed)
	clock := lethe.NewManualClock(t0)
	o := &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}}
	if durable {
		o.Dir, o.Sync = t.TempDir(), lethe.SyncNever
	}
	s, err := lethe.Open(o)
	require.NoError(t, err)
	defer s.Close()
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever,
		ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 1 << 20}})

	// Every 7th change, between its decision and its numbering (and, in
	// memory, again once the id tables have it, and between its numbering
	// and its change to the expiry index), the clock moves on past some
	// expiries and a reader brings the feed up to date: the change's old
	// version may expire meanwhile (the change then follows the expiry: a
	// replace becomes a create, a delete leaves nothing), its new one be
	// written where the watch has looked already, and the watch make a
	// numbered change in the index before the writer does.
	var hooks atomic.Int64
	var marksMu sync.Mutex
	var marks []feedMark
	// caughtUp reads the feed and records that it had looked past every
	// expiry up to the clock's instant before the read.
	caughtUp := func(o *lethe.ChangeFeedOptions) (lethe.ChangeFeedResponse, error) {
		at := clock.Now()
		page, err := c.ReadChangeFeed(ctx, o)
		if err == nil {
			marksMu.Lock()
			marks = append(marks, feedMark{lsn: lethe.FeedNext(c), at: at})
			marksMu.Unlock()
		}
		return page, err
	}
	catchUp := func() {
		n := hooks.Add(1)
		if n%7 != 0 {
			return
		}
		clock.Advance([]time.Duration{500 * time.Millisecond, 1100 * time.Millisecond}[n/7%2])
		if _, err := caughtUp(&lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, MaxItemCount: 1}); err != nil {
			t.Error(err)
		}
	}
	lethe.SetFeedChangeHooks(c, catchUp, catchUp, catchUp)
	defer lethe.SetFeedChangeHooks(c, nil, nil, nil)

	var instant atomic.Int64 // orders begins and acknowledgements
	acked := make([][]feedWrite, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for n := range writes {
				id := fmt.Sprintf("i%d", r.IntN(ids))
				write := feedWrite{id: id, begin: instant.Add(1)}
				if r.IntN(5) == 0 {
					_, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), id, nil)
					if errors.Is(err, lethe.ErrNotFound) {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
				} else {
					write.tag = fmt.Sprintf("w%d.%d", w, n)
					ttl := []string{"", `,"ttl":1`}[r.IntN(2)]
					doc := fmt.Sprintf(`{"id":%q,"tag":%q%s}`, id, write.tag, ttl)
					if _, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(doc), nil); err != nil {
						t.Error(err)
						return
					}
				}
				write.acked = instant.Add(1)
				acked[w] = append(acked[w], write)
			}
		})
	}
	stop := make(chan struct{})
	var side sync.WaitGroup
	side.Go(func() { // lets the items of ttl 1 expire meanwhile
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				clock.Advance(300 * time.Millisecond)
			}
		}
	})
	var seen []change
	tok := ""
	// read reads a page on from tok into seen, and returns how many
	// changes it had.
	read := func(r *rand.Rand) (int, error) {
		o := lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, Continuation: tok, MaxItemCount: int32(1 + r.IntN(7))}
		page, err := caughtUp(&o)
		if err != nil {
			return 0, err
		}
		tok = page.ContinuationToken
		for _, b := range page.Items {
			var x change
			if err := json.Unmarshal(b, &x); err != nil {
				return 0, err
			}
			if want := uint64(len(seen) + 1); x.Metadata.LSN != want {
				return 0, fmt.Errorf("a gap or a reordering: lsn %d where %d was next", x.Metadata.LSN, want)
			}
			seen = append(seen, x)
		}
		return len(page.Items), nil
	}
	side.Go(func() { // the reader, paging while the writers write
		r := rand.New(rand.NewPCG(seed, 99))
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := read(r); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	wg.Wait()
	close(stop)
	side.Wait()
	if t.Failed() {
		return
	}
	for r := rand.New(rand.NewPCG(seed, 100)); ; {
		n, err := read(r)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}

	// Every acknowledged write exactly once, in commit order.
	lsnOf := map[string]uint64{} // an upsert's tag -> its lsn
	deletes := map[string]int{}  // id -> deletes (not expiries) in the feed
	expiries := map[string]int{} // id -> expiries in the feed
	for _, x := range seen {
		switch {
		case x.Metadata.OperationType != "delete":
			tag := x.Current["tag"].(string)
			_, dup := lsnOf[tag]
			require.False(t, dup, "upsert %s twice in the feed", tag)
			lsnOf[tag] = x.Metadata.LSN
		case x.Metadata.TimeToLiveExpired:
			expiries[x.Metadata.ID]++
		default:
			deletes[x.Metadata.ID]++
		}
	}
	var all []feedWrite
	wantDeletes := map[string]int{}
	for _, ws := range acked {
		all = append(all, ws...)
	}
	for _, w := range all {
		if w.tag == "" {
			wantDeletes[w.id]++
			continue
		}
		_, ok := lsnOf[w.tag]
		require.True(t, ok, "acknowledged upsert %s not in the feed", w.tag)
	}
	require.Equal(t, len(lsnOf), len(all)-countDeletes(all), "the feed has upserts nobody made")
	// An acknowledged delete shows as a delete, or, if the version it
	// deleted expired before the delete was numbered, as that expiry.
	for id, n := range wantDeletes {
		require.LessOrEqual(t, deletes[id], n, "deletes of %s in the feed", id)
		require.LessOrEqual(t, n, deletes[id]+expiries[id], "acknowledged deletes of %s: a delete or an expiry each", id)
	}
	for id, n := range deletes {
		require.LessOrEqual(t, n, wantDeletes[id], "the feed deletes %s more often than anybody did", id)
	}
	for _, a := range all {
		for _, b := range all {
			if a.tag != "" && b.tag != "" && a.acked < b.begin {
				require.Less(t, lsnOf[a.tag], lsnOf[b.tag], "%s was acknowledged before %s began", a.tag, b.tag)
			}
		}
	}

	// A serial replay: each change's previous image, each kind, and the
	// live items at the end.
	last := map[string]uint64{} // id -> lsn of its latest change
	live := map[string]string{} // id -> tag
	for _, x := range seen {
		id := x.Metadata.ID
		if x.Metadata.OperationType != "delete" {
			id = x.Current["id"].(string)
		}
		require.Equal(t, last[id], x.Metadata.PreviousImageLSN, "lsn %d: previousImageLSN of %s", x.Metadata.LSN, id)
		last[id] = x.Metadata.LSN
		_, exists := live[id]
		switch x.Metadata.OperationType {
		case "create":
			require.False(t, exists, "lsn %d: create of %s, which exists", x.Metadata.LSN, id)
			live[id] = x.Current["tag"].(string)
		case "replace":
			require.True(t, exists, "lsn %d: replace of %s, which does not exist", x.Metadata.LSN, id)
			live[id] = x.Current["tag"].(string)
		default:
			require.True(t, exists, "lsn %d: delete of %s, which does not exist", x.Metadata.LSN, id)
			require.Equal(t, live[id], x.Previous["tag"], "lsn %d: the version deleted", x.Metadata.LSN)
			delete(live, id)
		}
	}
	// No change of a version whose expiry the feed has looked past: an
	// expiry at T in the feed, or a read at T that left the feed's next
	// lsn at n, means that every version that expired by T has been
	// reported before it (before lsn n), so a replace or delete after it
	// changes a version that expires later (one that expired first is
	// reported first, and its change made a create, or nothing).
	slices.SortFunc(marks, func(a, b feedMark) int { return cmp.Compare(a.lsn, b.lsn) })
	var looked time.Time              // where the feed has looked so far
	expires := map[string]time.Time{} // id -> when its live version expires
	for _, v := range lethe.FeedVersions(c) {
		for len(marks) > 0 && marks[0].lsn <= v.LSN {
			if marks[0].at.After(looked) {
				looked = marks[0].at
			}
			marks = marks[1:]
		}
		if v.Kind == 2 || v.Kind == 3 { // a replace or a delete
			require.True(t, expires[v.ID].After(looked), "lsn %d: a change of %s, whose version expired at %v, after the feed's expiries up to %v",
				v.LSN, v.ID, expires[v.ID], looked)
		}
		if v.Kind == 4 && v.At.After(looked) {
			looked = v.At
		}
		if v.Kind <= 2 {
			expires[v.ID] = v.Expires
		} else {
			delete(expires, v.ID)
		}
	}

	want := map[string]string{}
	for doc, err := range c.QueryItems(ctx, "SELECT c.id, c.tag FROM c", lethe.NewPartitionKey(), nil) {
		require.NoError(t, err)
		var m map[string]string
		require.NoError(t, json.Unmarshal(doc, &m))
		want[m["id"]] = m["tag"]
	}
	require.Equal(t, want, live)
}

// feedMark is a read of the concurrent model's feed: the clock's instant
// before it, and the feed's next lsn after it.
type feedMark struct {
	lsn uint64
	at  time.Time
}

func countDeletes(ws []feedWrite) int {
	n := 0
	for _, w := range ws {
		if w.tag == "" {
			n++
		}
	}
	return n
}
