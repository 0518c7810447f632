package lethe

import (
	"cmp"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/internal/fulltext"
	"github.com/lethedb/lethe/internal/vector"
	"github.com/lethedb/lethe/internal/vfs"
)

// This file exposes to the black-box tests (package lethe_test) the few
// internals they need, in the pattern of the standard library's
// export_test.go files. It is compiled only with the tests; everything else
// the tests use is the public API. Instants are time.Time, as the public API
// takes them.

func init() {
	// Every patch result that is not parsed again is checked against
	// parseItem, in every test.
	patchCrossCheck = true
}

// SetPatchCrossCheck turns the check of unparsed patch results on or off
// (benchmarks measure without it) and returns the previous setting.
func SetPatchCrossCheck(on bool) (was bool) {
	was, patchCrossCheck = patchCrossCheck, on
	return was
}

// CheckInvariants fails t if c's primary index and its expiry index
// disagree (see checkInvariants). where names the moment in the message.
func CheckInvariants(t testing.TB, c *Container, where string) {
	t.Helper()
	checkInvariants(t, c, where)
}

// Stored reports whether the item id of a container without partition
// keys is physically present in c, expired or not: what the reaper has not
// purged yet.
func Stored(c *Container, id string) bool {
	return StoredIn(c, NewPartitionKey(), id)
}

// StoredIn reports whether the item (pk, id) is physically present in c,
// expired or not.
func StoredIn(c *Container, pk PartitionKey, id string) bool {
	sh, h := c.shardFor(pk.enc, id)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.items.get(pk.enc, id, h) != ""
}

// LiveIDs returns the ids of c's items live at now, read from the shards
// rather than through the expiry index. Nothing may write to c meanwhile.
func LiveIDs(c *Container, now time.Time) map[string]bool {
	at := now.UnixNano()
	ids := map[string]bool{}
	for i := range c.shards {
		c.shards[i].items.all(func(rec record) bool {
			if c.rule.live(rec, at) {
				ids[rec.id()] = true
			}
			return true
		})
	}
	return ids
}

// DuringStats makes Stats of c's store's containers call during after it
// has summed each shard's counts (in shard order, holding the shards summed
// so far), until the function it returns is called.
func DuringStats(c *Container, during func()) (undo func()) {
	c.store.setTestHooks(func(h *testHooks) { h.afterStatsShard = during })
	return func() { c.store.setTestHooks(func(h *testHooks) { h.afterStatsShard = nil }) }
}

// ShardCount is how many shards a container has.
const ShardCount = shardCount

// ShardOf returns the index of the shard of c that holds the item (pk, id).
func ShardOf(c *Container, pk PartitionKey, id string) int {
	i, _ := c.shardIndex(pk.enc, id)
	return i
}

// ExpiryIndexItems returns how many items c's expiry index counts as
// present, live or expired.
func ExpiryIndexItems(c *Container) int64 {
	return int64(c.itemCount())
}

// Reap runs one batch of the reaper on c at now, with the store's reaper
// options, and returns how many items it purged. With spend each purge
// draws on the container's spare budget, as the reaper's purges do.
func Reap(c *Container, now time.Time, spend bool) (purged int) {
	purged, _ = c.reap(now.UnixNano(), c.store.opts.Reaper, spend, nil)
	return purged
}

// ReapScratch is the reaper's working memory, which it keeps from batch to
// batch.
type ReapScratch = reapScratch

// NewReapScratch returns working memory for ReapWith on s's containers.
func NewReapScratch(s *Store) *ReapScratch {
	scratch := newReapScratch(s.opts.Reaper.BatchSize)
	return &scratch
}

// ReapWith is Reap in working memory kept from one call to the next, as
// the reaper keeps it.
func ReapWith(c *Container, now time.Time, spend bool, scratch *ReapScratch) (purged int) {
	purged, _ = c.reap(now.UnixNano(), c.store.opts.Reaper, spend, scratch)
	return purged
}

// ReaperRound runs one round of a new reaper of s, driven by hand (open s
// with its own reaper disabled), at now, and returns when that reaper would
// next be needed: at or before now if more is waiting.
func ReaperRound(s *Store, now time.Time) (wakeAt time.Time) {
	at, _ := newReaper(s).round(now.UnixNano(), 0)
	return time.Unix(0, at)
}

// ReaperRounds returns how many rounds over the containers s's reaper has
// made so far.
func ReaperRounds(s *Store) int64 { return s.reaper.rounds.Load() }

// ReaperPacing returns how many stretches of work s's reaper has ended with
// more to purge, and after how many of them it rested.
func ReaperPacing(s *Store) (stretches, rests int64) {
	return s.reaper.stretches.Load(), s.reaper.rests.Load()
}

// ReaperStopped reports, without waiting, whether s's reaper goroutine has
// returned.
func ReaperStopped(s *Store) bool {
	select {
	case <-s.reaper.done:
		return true
	default:
		return false
	}
}

// Candidate is one item version the reaper chose to purge.
type Candidate = expiredEntry

// OldestExpired returns up to limit of c's items expired at now, oldest
// expiry first, as the reaper chooses a batch.
func OldestExpired(c *Container, now time.Time, limit int) []Candidate {
	c.mu.Lock()
	rule := c.rule
	c.mu.Unlock()
	batch, _ := c.oldestExpired(&rule, now.UnixNano(), limit, nil)
	return batch
}

// PurgeCandidate purges e as the reaper does, without spending budget,
// unless its item was rewritten since or is live at now; it reports whether
// it purged.
func PurgeCandidate(c *Container, e Candidate, now time.Time) bool {
	si, h := c.shardIndex(e.rec.pk(), e.rec.id())
	e.shard, e.h = uint8(si), h
	n, _, _ := c.purgeShard(&c.shards[si], []Candidate{e}, now.UnixNano(), nil)
	return n == 1
}

// ClockWatchers returns how many stores' reapers watch c.
func ClockWatchers(c *ManualClock) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watchers)
}

// ParseItem runs the write path's item parser on doc and returns its
// error, nil if doc is a valid item.
func ParseItem(doc []byte) *Error {
	_, err := parseItem(doc)
	return err
}

// StoreClock is the store's internal clock.
type StoreClock = storeClock

// NewStoreClock returns the store's internal clock over c (nil: the system
// clock).
func NewStoreClock(c Clock) StoreClock { return newStoreClock(c) }

// UnixNano returns the clock's current time in Unix nanoseconds.
func (c *StoreClock) UnixNano() int64 { return c.now() }

// SetLogSync replaces how a durable store's log syncs its files, so that
// tests can make fsync fail.
func SetLogSync(s *Store, sync func(vfs.File) error) {
	s.wal.ioMu.Lock()
	defer s.wal.ioMu.Unlock()
	s.wal.syncFile = sync
}

// CheckpointsTaken returns how many snapshots a durable store has written
// since it opened.
func CheckpointsTaken(s *Store) int64 { return s.checkpointer.taken.Load() }

// WithAfterMap sets, in opts, a function that the recovery of the store
// opened with them calls with each file it has just mapped, so that tests
// can change a file under it.
func WithAfterMap(opts *Options, fn func(path string)) *Options {
	opts.afterMap = fn
	return opts
}

// SetUseIndexes turns the use of secondary indexes by the queries of c's
// store on or off, and returns the previous setting.
func SetUseIndexes(c *Container, on bool) (was bool) {
	c.store.setTestHooks(func(h *testHooks) { was, h.noIndexes = !h.noIndexes, !on })
	return was
}

// IndexCount returns how many secondary indexes c has made.
func IndexCount(c *Container) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.indexes.secondary)
}

// CompositeCount returns how many composite indexes c has made.
func CompositeCount(c *Container) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.indexes.composite)
}

// SetAfterBuildShard sets a function that an index build of c's store
// calls after reading each shard, with no lock held (nil: none).
func SetAfterBuildShard(c *Container, fn func(shard int)) {
	c.store.setTestHooks(func(h *testHooks) { h.afterBuildShard = fn })
}

// SetCatchUpFew sets how few logged changes an index build of c's store
// replays under c.mu, and returns the previous setting.
func SetCatchUpFew(c *Container, n int) (was int) {
	c.store.setTestHooks(func(h *testHooks) {
		was = cmp.Or(h.catchUpFew, catchUpFew)
		h.catchUpFew = n
	})
	return was
}

// SetBeforeOrderedWalk sets a function that a query of c's store ordered
// through an index calls once it has chosen the index, holding the batch
// lock for reading alone (nil: none).
func SetBeforeOrderedWalk(c *Container, fn func()) {
	c.store.setTestHooks(func(h *testHooks) { h.beforeOrderedWalk = fn })
}

// KickCheckpoint asks a durable store's checkpointer for a background
// snapshot, as the log's growth does.
func KickCheckpoint(s *Store) { s.checkpointer.kick() }

// VectorIndexCount returns how many vector indexes c has made.
func VectorIndexCount(c *Container) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.indexes.vector)
}

// SetDiskRetry sets how often at most a durable store whose disk was full
// tries to write again (diskRetryEvery), counted from now.
func SetDiskRetry(s *Store, every time.Duration) {
	s.wal.mu.Lock()
	defer s.wal.mu.Unlock()
	s.wal.retryEvery, s.wal.retryAt = every, time.Now().Add(every)
}

// LogFailed reports whether a durable store's log has failed: it refuses
// writes.
func LogFailed(s *Store) bool {
	err := s.wal.failure()
	return err != nil && err != ErrClosed
}

// WaitVectorIndexes waits until c has made every vector index it is making,
// and linked every vector of its graphs.
func WaitVectorIndexes(c *Container) {
	for {
		c.mu.Lock()
		busy := false
		for k := range c.mu.indexes.building {
			busy = busy || strings.HasPrefix(k, "v:")
		}
		for _, vi := range c.mu.indexes.vector {
			busy = busy || vi.graph != nil && vi.graph.Len() < vi.store.Len()
		}
		c.mu.Unlock()
		if !busy {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// SetAfterGraphSearch sets a function called after each search of a
// vector index's graph in c's store with the number of items it found
// (nil: none).
func SetAfterGraphSearch(c *Container, fn func(found int)) {
	c.store.setTestHooks(func(h *testHooks) { h.afterGraphSearch = fn })
}

// VectorIndexSlots returns the slots of c's vector indexes that hold
// removed versions, and those that hold present items.
func VectorIndexSlots(c *Container) (removed, present int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, vi := range c.mu.indexes.vector {
		removed += vi.store.Removed()
		present += len(vi.slot)
	}
	return removed, present
}

// TextIndexCount returns how many full-text indexes c has made.
func TextIndexCount(c *Container) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.indexes.text)
}

// TextScores returns the BM25 score, by item id, that c's full-text index
// of path gives each item live now that holds a term of strs (all
// partitions), or nil if c has no such index made.
func TextScores(c *Container, path []string, strs []string) map[string]float64 {
	now := c.store.clock.now()
	c.mu.Lock()
	ti := c.mu.indexes.text[strings.Join(path, "/")]
	c.mu.Unlock()
	if ti == nil {
		return nil
	}
	terms := searchTerms(strs, ti.ix.Lang())
	c.mu.Lock()
	defer c.mu.Unlock()
	rule := c.rule
	st := c.textStatsLocked(ti, terms, &rule, now)
	idf, avg := fulltext.Weights(st.Docs, st.Terms, st.DF, len(terms))
	best, _ := ti.ix.TopK(terms, idf, avg, 1<<30, func(d int32) bool { return rule.live(ti.recs[d], now) })
	out := map[string]float64{}
	for _, b := range best {
		out[ti.recs[b.Doc].id()] = b.Score
	}
	return out
}

// SetPruneVectorScans turns the pruning of exact vector scans in c's store
// on or off and returns whether it was on.
func SetPruneVectorScans(c *Container, on bool) (was bool) {
	c.store.setTestHooks(func(h *testHooks) { was, h.noPruneScans = !h.noPruneScans, !on })
	return was
}

// SetAfterExactScan sets a function called after each exact scan of a
// vector index in c's store with the number of items it pruned (nil:
// none).
func SetAfterExactScan(c *Container, fn func(pruned int)) {
	c.store.setTestHooks(func(h *testHooks) { h.afterExactScan = fn })
}

// FastVectors reports whether exact vector scans can prune (vector.Fast).
func FastVectors() bool { return vector.Fast() }

// SetFeedChangeHooks sets the hooks that run in a change to a container
// of c's store with a change feed: between its decision and its
// numbering, before it is made or logged and (in memory) once the id
// tables have it; and (in memory) between its numbering and its change to
// the expiry index.
func SetFeedChangeHooks(c *Container, before, afterPut, afterNumber func()) {
	c.store.setTestHooks(func(h *testHooks) {
		h.beforeFeedChange, h.afterFeedPut, h.afterFeedNumber = before, afterPut, afterNumber
	})
}

// FeedVersion is a change feed entry as the feed keeps it: its lsn, item,
// kind (1 create, 2 replace, 3 delete, 4 expiry), instant, and when the
// version it holds expires (for an expiry, when the version removed did).
type FeedVersion struct {
	LSN         uint64
	ID          string
	Kind        int
	At, Expires time.Time
}

// FeedVersions returns c's retained change feed entries, oldest first.
func FeedVersions(c *Container) []FeedVersion {
	var out []FeedVersion
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.feed.history.scan(0, func(e *feedEntry) bool {
		out = append(out, FeedVersion{LSN: e.lsn, ID: e.rec.id(), Kind: int(e.kind), At: time.Unix(0, e.at),
			Expires: time.Unix(0, c.rule.expiresAt(e.rec.ttl(), e.rec.written()))})
		return true
	})
	return out
}

// FeedNext returns the lsn c's change feed gives its next change.
func FeedNext(c *Container) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.feed.history.next
}

// ETagGeneration returns the generation a version's ETag holds in a store
// of several write regions (Options.WriteRegions), and false if etag is
// not one of the store's ETags.
func ETagGeneration(etag string) (uint64, bool) {
	seq, ok := parseETag(etag)
	return seqGen(seq), ok
}

// NotifierIdle reports whether c's store's notifier sleeps until woken,
// no expiry of any container due.
func NotifierIdle(c *Container) bool {
	n := c.store.notifier.Load()
	return n != nil && n.sleepUntil.Load() == never
}
