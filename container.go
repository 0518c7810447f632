package lethe

import (
	"context"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ContainerProperties define a container.
type ContainerProperties struct {
	// ID names the container, unique in its store: 1 to 255 characters,
	// without '/', '\', '?' or '#'.
	ID string
	// DefaultTimeToLive is TTLOff (the zero value) for no expiry at all,
	// TTLNever (-1) for expiry only of items with their own positive "ttl",
	// or n > 0 for expiry n seconds after each item's last write unless the
	// item says otherwise.
	DefaultTimeToLive TTL
	// PartitionKeyDefinition gives the paths of the items' partition key
	// value; without paths the container is not partitioned. It is
	// validated on create (kind and version filled in) and cannot change.
	PartitionKeyDefinition PartitionKeyDefinition
	// IndexingPolicy is nil for the default, consistent indexing.
	IndexingPolicy *IndexingPolicy
	// Throughput is the container's budget in request units per second; 0
	// is none: the container draws on its store's shared throughput
	// (Options.Throughput), or is unlimited when the store has none.
	// Operations that would overdraw the budget fail with
	// ErrTooManyRequests.
	Throughput int32
	// AutoscaleMaxThroughput, instead of Throughput, gives the container
	// autoscale throughput: it scales, at once, between a tenth of this
	// maximum and the maximum with what its users draw, so operations are
	// refused only past the maximum; ScaledThroughput tells where it stands.
	// Never set with Throughput.
	AutoscaleMaxThroughput int32 `json:",omitempty"`
	// ChangeFeedPolicy turns the container's change feed on and bounds how
	// much of its history it keeps; nil: the container keeps no change feed.
	// It may be changed with Container.Replace.
	ChangeFeedPolicy *ChangeFeedPolicy `json:",omitempty"`
	// VectorEmbeddingPolicy declares the paths that hold vectors (see
	// VectorEmbedding); IndexingPolicy.VectorIndexes index them.
	VectorEmbeddingPolicy *VectorEmbeddingPolicy `json:",omitempty"`
	// FullTextPolicy declares the paths that hold text to search, and its
	// language; IndexingPolicy.FullTextIndexes index them.
	FullTextPolicy *FullTextPolicy `json:",omitempty"`
	// GeospatialConfig says how the container reads GeoJSON: nil or
	// Geography on the earth, Geometry in the plane (spatialpolicy.go);
	// IndexingPolicy.SpatialIndexes index it.
	GeospatialConfig *GeospatialConfig `json:",omitempty"`
	// UniqueKeyPolicy makes values unique in each logical partition
	// (uniquekey.go); nil or without keys: none. Fixed at creation.
	UniqueKeyPolicy *UniqueKeyPolicy `json:",omitempty"`
}

// IndexingPolicy says how a container keeps its indexes: its mode, and
// which paths of the items may be indexed. Without IncludedPaths every path
// may be ("/*", as in Cosmos DB); ExcludedPaths take paths out, the most
// specific path that covers a value deciding. lethe makes the index of a
// path the second time a query filters on it (or the first time one orders
// by it), and keeps it from then on (see the package
// documentation, "Indexes"); the system properties are not indexed.
type IndexingPolicy struct {
	IndexingMode  IndexingMode
	IncludedPaths []IndexPath `json:",omitempty"`
	ExcludedPaths []IndexPath `json:",omitempty"`
	// CompositeIndexes serve queries ordered by several paths (see
	// CompositeIndex); each lists at least two.
	CompositeIndexes [][]CompositeIndex `json:",omitempty"`
	// VectorIndexes index paths of the container's VectorEmbeddingPolicy
	// (queries ordered by VectorDistance search them: vectorindex.go),
	// FullTextIndexes paths of its FullTextPolicy (full-text predicates and
	// ranking use them); see searchpolicy.go's types.
	VectorIndexes   []VectorIndex   `json:",omitempty"`
	FullTextIndexes []FullTextIndex `json:",omitempty"`
	// SpatialIndexes index GeoJSON shapes for the spatial filters of
	// queries (spatialpolicy.go, spatialindex.go).
	SpatialIndexes []SpatialIndex `json:",omitempty"`
}

// IndexingMode is consistent, lazy or none. A container whose mode is none
// keeps no indexes, so it cannot have a default TTL (Cosmos DB refuses it
// too).
type IndexingMode string

// The indexing modes.
const (
	IndexingModeConsistent IndexingMode = "consistent"
	IndexingModeLazy       IndexingMode = "lazy"
	IndexingModeNone       IndexingMode = "none"
)

// shardCount is how many parts a container's items are split into, each
// under its own lock, so that readers, writers and the reaper rarely meet.
const shardCount = 32

// A Container holds JSON items. Its methods are safe for concurrent use by
// any number of goroutines; reads run in parallel with each other and with
// writes to items in other shards.
//
// Locking. A container's locks, in the order they are taken (a lock is
// never taken while one after it is held):
//
//  1. batchMu makes transactional batches atomic for queries: a batch
//     decides and applies holding it for writing, and a query's scan holds
//     it for reading, so a scan sees all of a batch or none of it.
//     uniqueMu, after it, exists only in a container with a unique key
//     policy: every write but the reaper's purges decides and applies
//     holding it, so that a write's check of the unique index (which holds
//     a partition's items from every shard: shardFor hashes the partition
//     key and the id) still holds when it is made. A batch holds it for
//     writing; a single write (commit, commitPatch) for reading, and
//     claims its values in the index when it checks them (claimUnique),
//     so that single writes to other shards check theirs against it, and
//     share a durable log's syncs, while it waits for the log. Purges need
//     not: they remove expired items, which hold no unique value.
//  2. shards[i].mu, each shard's RWMutex, guards the shard's items (its id
//     table); who takes several takes them in ascending order, as lockAll
//     does.
//  3. mu guards the state the shards share, grouped by what it serves:
//     mu.feed (the change feed's history, the lsn it starts at again, the
//     durable writes queued for it), mu.watch (the expiry watch) and
//     mu.indexes (the secondary, composite, vector, full-text and
//     position indexes, their builds: indexset.go). The three share one
//     lock because a write numbers its change, adds it to the feed, makes
//     it in the indexes and in the watch's sight in one hold of it, so
//     that whoever reads one of them sees the others agree.
//  4. shards[i].expiryMu, the last, guards the shard's expiry index and
//     counts (expiry.go): a writer takes it, for an instant, while it
//     holds its shard's lock, and the reaper, Stats and the expiry watch
//     take it to read the index, shard after shard (the watch, and Stats,
//     also to make a change a writer has numbered in the feed and not yet
//     made in the index: numberLocked).
//
// A write takes mu only while the container has some of that shared state
// (shared), so that writers to different shards of a plain container never
// meet. shared rises under mu: with every shard lock held too (a feed, a
// watch), or before a scan that takes every shard lock (an index build),
// so that a writer, which reads it once while it holds its shard's lock,
// cannot miss it. props and rule are written only with every shard lock
// and mu held, so holding any one of them is enough to read them.
type Container struct {
	store *Store
	id    string
	seed  maphash.Seed

	batchMu sync.RWMutex
	// batches counts the batches applied (under batchMu, held for
	// writing): a query page read in steps ends early when it changes
	// between two steps, so that no page sees part of a batch.
	batches atomic.Uint64
	// uniqueMu is nil without a unique key policy (see the locking note).
	uniqueMu *sync.RWMutex
	shards   [shardCount]shard // shards[i].no is i

	// shared says that item writes must take mu: the container has a
	// change feed, an expiry watch, or indexes made or being made (see the
	// locking note, and updateSharedLocked).
	shared atomic.Bool
	// mu guards the state the shards share: the change feed's, the expiry
	// watch's and the indexes' (see the locking note).
	mu struct {
		sync.Mutex
		feed struct {
			history *changeFeed      // the change feed's history; nil without a ChangeFeedPolicy (feedlog.go)
			nextLSN uint64           // the lsn a change feed turned on again starts at
			pending []*pendingChange // logged, not made yet: with a feed, on a durable store (mutation.go)
			spare   []*pendingChange // out of pending, for newPendingChangeLocked to reuse
		}
		watch   expiryWatch   // finds expiries as they happen (expirywatch.go)
		indexes indexSet      // the indexes beside the expiry index, and their builds (indexset.go)
		holds   []*expiryHold // the holds of HoldExpiries in force (hold.go)
	}
	// held is the instant of the earliest hold in mu.holds, 0 if none: a
	// hold is placed under mu and every shard lock, so that a purge, made
	// under a shard lock, sees it (hold.go).
	held atomic.Int64
	// watchDue is mu.watch.due while the watch is on, never while it is
	// off: the write path looks at it without the lock.
	watchDue atomic.Int64
	subs     subscriptions // the expiry subscribers (expiryevents.go)
	fit      batchFit      // the size of the reaper's batches while users are served (reaper.go)

	pkPaths pkPaths                // the parsed partition key paths; never change
	props   ContainerProperties    // see the locking note above
	rule    expiryRule             // decides expiry; guarded like props
	own     atomic.Pointer[budget] // the budget of props' own throughput; nil: none (ru.go)

	// created and settingsSeq are the write sequence numbers of the
	// container's creation and of its last settings change: they tell a
	// durable store's recovery which logged changes a snapshot already
	// holds.
	created     uint64
	settingsSeq uint64

	// positions is the creation position last handed out (record.go): a
	// created item takes the next. Every create adds to it, so it has a
	// cache line of its own, apart from deleted, which every operation
	// loads.
	_         [64]byte
	positions atomic.Uint64
	_         [64]byte

	deleted      atomic.Bool
	purged       atomic.Int64
	throttled    atomic.Int64
	reaperCharge atomic.Int64 // milli-RU
}

type shard struct {
	mu       sync.RWMutex
	items    idTable
	expiryMu sync.Mutex  // guards expiry; taken last (see the locking note)
	expiry   expiryIndex // the shard's items that can expire, and its counts
	// tombs are, in a store of several write regions, the tombstones of
	// the items removed from the shard (tombstone.go); guarded by mu.
	tombs map[string]uint16
	no    uint8    // its index in its container's shards
	_     [64]byte // keep neighbouring shards' hot words on separate cache lines
}

func newContainer(s *Store, props ContainerProperties, pp pkPaths, now int64) *Container {
	c := &Container{store: s, id: props.ID, seed: maphash.MakeSeed(), pkPaths: pp, props: props, rule: newExpiryRule(props.DefaultTimeToLive)}
	for i := range c.shards {
		c.shards[i].expiry = newExpiryIndex()
		c.shards[i].no = uint8(i)
	}
	c.mu.feed.nextLSN = 1
	if props.UniqueKeyPolicy != nil {
		c.uniqueMu = new(sync.RWMutex)
		c.mu.indexes.unique = newUniqueIndex(props.UniqueKeyPolicy)
		c.updateSharedLocked()
	}
	c.watchDue.Store(never)
	c.setFeedPolicyLocked(props.ChangeFeedPolicy, now)
	c.publishDueLocked()
	replaceBudget(&c.own, props.Throughput, props.AutoscaleMaxThroughput, now)
	return c
}

// shardFor returns the shard of the item (pk, id), pk encoded, and the hash
// bits its table uses. The partition key value is part of the hash, so the
// items of one logical partition spread over every shard, as ids do.
func (c *Container) shardFor(pk, id string) (*shard, uint32) {
	i, h := c.shardIndex(pk, id)
	return &c.shards[i], h
}

// shardIndex is shardFor that gives the shard's index.
func (c *Container) shardIndex(pk, id string) (int, uint32) {
	h := maphash.String(c.seed, id)
	if pk != "" {
		h ^= maphash.String(c.seed, pk) * 0x9e3779b97f4a7c15
	}
	return int(h % shardCount), slotHash(h)
}

// position returns the position of an item's new version: that of its
// current version old when it is live (a replace keeps its place), else a
// new one, after every other (a created item goes at the end).
func (c *Container) position(old record, live bool) uint64 {
	if live {
		return old.pos()
	}
	return c.positions.Add(1)
}

// ID returns the container's id.
func (c *Container) ID() string { return c.id }

// check fails when the store is closed, the container deleted or ctx done.
// Every user operation on a container calls it, and it marks the store as
// in use, for the reaper's pacing.
func (c *Container) check(ctx context.Context, op, item string) error {
	if c.store == nil {
		return notOpened()
	}
	if c.store.closed.Load() {
		return ErrClosed
	}
	if !c.store.users.Load() {
		c.store.users.Store(true) // the reaper paces itself (reaper.go)
	}
	if c.deleted.Load() {
		return withContext(&Error{StatusCode: statusNotFound, Message: msgNotFound}, op, c.id, item)
	}
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Read returns the container's properties.
func (c *Container) Read(ctx context.Context) (ContainerProperties, error) {
	if err := c.check(ctx, "ReadContainer", ""); err != nil {
		return ContainerProperties{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return cloneProps(c.props), nil
}

// Replace changes the container's DefaultTimeToLive, IndexingPolicy,
// Throughput, AutoscaleMaxThroughput (a budget whose setting changes
// starts full), ChangeFeedPolicy, VectorEmbeddingPolicy, FullTextPolicy and
// GeospatialConfig;
// props.ID, props.PartitionKeyDefinition and props.UniqueKeyPolicy must be
// the container's (after filling in defaults), and a vector embedding or vector index the container
// has keeps its settings (paths may be added and removed). A change of
// DefaultTimeToLive applies at once to every item, computed from each item's
// last write. Expiry is final: items already expired stay gone, whatever the
// new setting. The change takes every lock of the container only for an
// instant: it touches no item.
func (c *Container) Replace(ctx context.Context, props ContainerProperties) error {
	return c.replace(ctx, props, nil)
}

// ReplaceAt is Replace made at the instant at rather than at the store's
// now: what a DefaultTimeToLive change finds expired for good under the
// old default, what the new one expires at once, and the instant the
// change feed reports those expiries at, are as of at. A copy of one
// change made in several stores at slightly different moments (a replica
// replaying it) thus expires the same items at the same instants as the
// original. So an item the old default expired between at and now, which
// a read there found gone, is judged by the new default, as in the
// original; but at is never earlier than the expiries the container has
// already reported (its change feed or expiry subscribers), nor later
// than the store's now: it is moved to the nearest of those instants. The
// zero time is refused (400): it is no instant a change was made at.
func (c *Container) ReplaceAt(ctx context.Context, props ContainerProperties, at time.Time) error {
	if at.IsZero() {
		return withContext(badRequest("the instant of the change is the zero time"), "ReplaceContainer", c.id, "")
	}
	return c.replace(ctx, props, &at)
}

// replace is Replace at the instant at, or at the store's now when at is
// nil.
func (c *Container) replace(ctx context.Context, props ContainerProperties, at *time.Time) error {
	const op = "ReplaceContainer"
	if err := c.check(ctx, op, ""); err != nil {
		return err
	}
	if props.ID != c.id {
		return withContext(badRequest("the id %q of the new properties is not the container's id", props.ID), op, c.id, "")
	}
	given := props
	props, _, err := normalizeProps(props)
	if err != nil {
		c.mu.Lock()
		if cerr := vectorIndexTypeChange(c.props, given); cerr != nil {
			err = cerr
		}
		c.mu.Unlock()
		return withContext(err, op, c.id, "")
	}
	if hasVectorIndexes(props) {
		c.store.sharedMu.Lock()
		defer c.store.sharedMu.Unlock()
	}
	c.lockAll()
	if c.deleted.Load() { // deleted while this call waited for the locks
		c.unlockAll()
		return withContext(&Error{StatusCode: statusNotFound, Message: msgNotFound}, op, c.id, "")
	}
	if old := c.props.PartitionKeyDefinition; !slices.Equal(props.PartitionKeyDefinition.Paths, old.Paths) ||
		props.PartitionKeyDefinition.Kind != old.Kind || props.PartitionKeyDefinition.Version != old.Version {
		c.unlockAll()
		return withContext(badRequest("the partition key definition of a container cannot be changed"), op, c.id, "")
	}
	if err := searchPolicyChange(c.props, props); err != nil {
		c.unlockAll()
		return withContext(err, op, c.id, "")
	}
	if err := uniquePolicyChange(c.props, props); err != nil {
		c.unlockAll()
		return withContext(err, op, c.id, "")
	}
	if err := vectorIndexesOnShared(c.store, props); err != nil {
		c.unlockAll()
		return withContext(err, op, c.id, "")
	}
	now := c.store.clock.now()
	if at != nil {
		now = c.settingsInstant(unixNanos(*at), now)
	}
	c.raiseHolds(now)
	m := mutation{cause: causeSettings, now: now, props: &props, seq: c.store.nextSeq()}
	next, aerr := c.apply(&m)
	c.unlockAll()
	if aerr != nil {
		return storageError(aerr, op, c.id, "")
	}
	c.store.reaper.notify(next)
	return nil
}

// settingsInstant returns the instant of a settings change asked for at
// at, now being the store's now: at, but no earlier than where the expiry
// watch has looked (what it reported stays reported) and no later than
// now. The caller holds every shard lock.
func (c *Container) settingsInstant(at, now int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := &c.mu.watch; w.on {
		at = max(at, w.at, w.scan)
	}
	return min(at, now) // a clock set back: as Replace, now
}

// ScaledThroughput returns the request units per second the container's
// own throughput provides now: its Throughput, or for autoscale the figure
// it has scaled to, which is what its users drew in the current whole second
// of the store's clock or in the one before, whichever is more, rounded up,
// and at least a tenth of AutoscaleMaxThroughput (the budget always allows
// the maximum: the service scales at once). 0 without throughput of its own.
func (c *Container) ScaledThroughput() int32 {
	if c.store == nil {
		return 0
	}
	b := c.own.Load()
	if b == nil {
		return 0
	}
	return b.scaled(c.store.clock.now())
}

// ContainerStats describe a container's contents. Items and Bytes count live
// items only: an expired item never counts, purged or not.
type ContainerStats struct {
	Items          int64         // live items
	Bytes          int64         // their JSON size, with _ts and _etag
	ExpiredPending int64         // expired, not yet purged
	Purged         int64         // expired items removed since the store opened: by the reaper, Purge, a batch that replaced one and deleted it, or a delete decided while the item was live that a change feed saw expire first
	PurgeLag       time.Duration // now minus the expiry of the oldest pending expired item; 0 if none
	ReaperCharge   float64       // request units the reaper has spent
	Throttled      int64         // user operations refused with 429

	// ExpiryEventsDropped counts the expiry events dropped, over every
	// subscription, because a subscriber's queue was full.
	ExpiryEventsDropped int64
	// FeedChanges and FeedBytes are what the change feed holds, as its
	// ChangeFeedPolicy counts them; zero without a feed.
	FeedChanges int
	FeedBytes   int64
}

// Stats returns the container's statistics, as of one instant. It scans
// nothing: the expiry index keeps running counts of the expired items,
// which each item joins once, when it expires (the first Stats after many
// items expired together counts them, letting go of the index lock every
// few thousand). On a deleted container it returns the zero ContainerStats
// (its items are gone); after Store.Close it still reports the container's
// contents, which stay in memory until the store is dropped, so a program can
// log its final figures.
func (c *Container) Stats() ContainerStats {
	if c.store == nil || c.deleted.Load() {
		return ContainerStats{}
	}
	now := c.store.clock.now()
	c.mu.Lock()
	rule := c.rule
	c.mu.Unlock()
	// Count the newly expired items shard by shard, letting go of each
	// shard's index every few thousand; then, holding every index at once
	// (and c.mu, which a batch holds across its shards), sum them:
	// counts as of one instant.
	for i := range c.shards {
		sh := &c.shards[i]
		sh.expiryMu.Lock()
		for !sh.expiry.countExpired(&rule, now, statsCountStep) {
			sh.expiryMu.Unlock()
			sh.expiryMu.Lock()
		}
		sh.expiryMu.Unlock()
	}
	var st ContainerStats
	c.mu.Lock()
	c.addNumberedLocked() // so that the counts have every change the feed has
	rule = c.rule         // the same, unless a settings change came meanwhile
	oldest := int64(never)
	for i := range c.shards {
		sh := &c.shards[i]
		sh.expiryMu.Lock()
		sh.expiry.countExpired(&rule, now, math.MaxInt)
		expired, expiredBytes := sh.expiry.expired()
		st.Items += sh.expiry.items - expired
		st.Bytes += sh.expiry.bytes - expiredBytes
		st.ExpiredPending += expired
		if expired > 0 {
			oldest = min(oldest, sh.expiry.oldestExpiry(&rule, now))
		}
		if h := c.store.testHooks(); h != nil && h.afterStatsShard != nil {
			h.afterStatsShard()
		}
	}
	for i := range c.shards {
		c.shards[i].expiryMu.Unlock()
	}
	if st.ExpiredPending > 0 {
		st.PurgeLag = time.Duration(now - oldest)
	}
	if f := c.mu.feed.history; f != nil {
		st.FeedChanges, st.FeedBytes = f.retained(), f.bytes
	}
	c.mu.Unlock()
	st.ExpiryEventsDropped = c.subs.dropped.Load()
	st.Purged = c.purged.Load()
	st.ReaperCharge = ru(c.reaperCharge.Load())
	st.Throttled = c.throttled.Load()
	return st
}

// statsCountStep is how many newly expired items Stats counts per hold of
// the index lock.
const statsCountStep = 4096

// cloneProps returns a copy of p that shares no memory with it.
func cloneProps(p ContainerProperties) ContainerProperties {
	if p.IndexingPolicy != nil {
		ip := *p.IndexingPolicy
		ip.IncludedPaths = slices.Clone(ip.IncludedPaths)
		ip.ExcludedPaths = slices.Clone(ip.ExcludedPaths)
		ip.CompositeIndexes = slices.Clone(ip.CompositeIndexes)
		for i, ci := range ip.CompositeIndexes {
			ip.CompositeIndexes[i] = slices.Clone(ci)
		}
		p.IndexingPolicy = &ip
	}
	cloneSearchPolicies(&p)
	cloneSpatialPolicy(&p)
	cloneUniquePolicy(&p)
	if p.ChangeFeedPolicy != nil {
		cp := *p.ChangeFeedPolicy
		p.ChangeFeedPolicy = &cp
	}
	p.PartitionKeyDefinition.Paths = slices.Clone(p.PartitionKeyDefinition.Paths)
	return p
}

// normalizeProps checks a container definition (its id, default TTL,
// throughput, indexing mode, vector and full-text policies and partition key
// definition) and returns the copy to keep, with the indexing mode in its
// canonical lower case, the defaults of the partition key definition and of
// the vector and full-text policies filled in, and its parsed paths.
func normalizeProps(p ContainerProperties) (ContainerProperties, pkPaths, *Error) {
	p = cloneProps(p)
	if p.IndexingPolicy != nil {
		p.IndexingPolicy.IndexingMode = IndexingMode(strings.ToLower(string(p.IndexingPolicy.IndexingMode)))
	}
	if err := validateProps(p); err != nil {
		return p, pkPaths{}, err
	}
	if err := normalizeSearchPolicies(&p); err != nil {
		return p, pkPaths{}, err
	}
	if err := normalizeSpatialPolicy(&p); err != nil {
		return p, pkPaths{}, err
	}
	if err := normalizeUniquePolicy(&p); err != nil {
		return p, pkPaths{}, err
	}
	if cp := p.ChangeFeedPolicy; cp != nil {
		if err := cp.normalize(); err != nil {
			return p, pkPaths{}, err
		}
	}
	pkdef, pp, err := normalizePKDef(p.PartitionKeyDefinition)
	p.PartitionKeyDefinition = pkdef
	return p, pp, err
}

// validateProps checks a container definition's id, default TTL,
// throughput and indexing mode.
func validateProps(p ContainerProperties) *Error {
	if err := validateContainerID(p.ID); err != nil {
		return err
	}
	if !validDefaultTTL(p.DefaultTimeToLive) {
		return defaultTTLError(p.DefaultTimeToLive)
	}
	if problem := throughputProblem(p.Throughput, p.AutoscaleMaxThroughput); problem != "" {
		return badRequest("%s", problem)
	}
	if p.IndexingPolicy != nil {
		if err := validateIndexingPolicy(p.IndexingPolicy); err != nil {
			return err
		}
		// Accepted in any case (normalizeProps lowers it): azcosmos spells
		// them "Consistent", "Lazy", "None".
		switch p.IndexingPolicy.IndexingMode {
		case IndexingModeConsistent, IndexingModeLazy, "":
		case IndexingModeNone:
			if p.DefaultTimeToLive != TTLOff {
				return badRequest(msgIndexingNone)
			}
		default:
			return badRequest("unknown indexing mode %q: use consistent, lazy or none", p.IndexingPolicy.IndexingMode)
		}
	}
	return nil
}
