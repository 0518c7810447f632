// Package lethe is an embeddable document store whose documents expire. It
// brings the time-to-live model of Azure Cosmos DB (DocumentDB) into the
// process: containers with a default TTL, per-item "ttl" overrides, _ts reset
// on every write, expired items invisible at once to every operation, and a
// background reaper that physically purges them using only the request units
// that user traffic leaves over.
//
// A Store holds containers; a Container holds JSON items, each a JSON object
// with a string "id", identified by its partition key value and its id. The
// calls read like the Azure Cosmos DB Go SDK (azcosmos) minus the network,
// the partition key first:
//
//	store, _ := lethe.Open(nil) // in memory, system clock, default reaper
//	defer store.Close()
//	sessions, _ := store.CreateContainer(ctx, lethe.ContainerProperties{ID: "sessions", DefaultTimeToLive: 1800,
//		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/user"}}})
//	ada := lethe.NewPartitionKeyString("ada")
//	sessions.UpsertItem(ctx, ada, []byte(`{"id":"s1","user":"ada"}`), nil)
//	resp, err := sessions.ReadItem(ctx, ada, "s1", nil) // errors.Is(err, lethe.ErrNotFound) after 30 idle minutes
//
// # Partition keys
//
// A container's PartitionKeyDefinition names one path into its items (or
// two or three: a hierarchical key); the values there are the item's
// partition key value, and the same id may exist once in each logical
// partition. Every item call takes that value (a PartitionKey) first; a
// write whose document holds another value is refused with Cosmos DB's 400,
// "PartitionKey extracted from document doesn't match the one specified in
// the header". A document without the path is in the partition
// NonePartitionKey, apart from JSON null (NullPartitionKey). A container
// without paths is not partitioned and takes NewPartitionKey(), the empty
// key, which in a query means every partition. The definition cannot change
// after the container is created. Expiry is per item, in every partition
// alike.
//
// # Time to live
//
// A container's DefaultTimeToLive is TTLOff (the zero value: nothing
// expires), TTLNever (-1: only items with their own positive ttl expire) or
// n > 0 (items expire n seconds after their last write). An item's "ttl"
// property overrides it: absent or null inherits, -1 never expires, n > 0
// expires n seconds after the item's last write. Every write (create,
// replace, upsert) sets _ts and restarts the countdown; reads never do.
//
//	container default → / item ttl ↓   off      -1       1000
//	absent (or null)                   never    never    1000 s
//	-1                                 never    never    never
//	2000                               never    2000 s   2000 s
//
// Invalid values are rejected on every write with ErrBadRequest and change
// nothing: an item ttl of 0, a negative other than -1, a non-integer, a
// non-number or anything over 2147483647; a container default that is
// negative but not -1. An item's ttl is kept and validated while the
// container's TTL is off, and takes effect when it is turned on.
//
// Expiry is exact: the last write is kept at full clock precision (_ts shows
// it in whole seconds), and an item is gone from the first nanosecond of its
// expiry, for every operation, whether or not the reaper has purged it yet.
// Read, replace and delete of an expired item fail with ErrNotFound; create
// succeeds; upsert creates (status 201) and ignores If-Match; statistics
// never count it. A change of the container's default applies at once to
// every item, from each item's own last write. Expiry is final: an item that
// expired under the settings before a change stays gone after it.
//
// Time comes from one Clock per store (Options.Clock). The system clock is
// read through the monotonic clock, anchored to the wall clock at Open, so
// steps of the wall clock never shorten or lengthen a TTL. A read of an item
// that cannot expire does not read the clock at all. Tests inject a
// ManualClock and move it by hand.
//
// # Request units and the reaper
//
// Every operation returns a request charge in request units (RU), from one
// table (it follows the shape Cosmos DB publishes; k is the item's size in
// KB, rounded up, not counting its ttl property, because TTL costs nothing):
//
//	ReadItem                               1 + (k-1)/11     (1 KB: 1 RU, 100 KB: 10 RU)
//	CreateItem, UpsertItem that creates    5.5 + (k-1)/2
//	DeleteItem, and each purge             5.5 + (k-1)/2
//	ReplaceItem, UpsertItem that replaces  11 + (k-1)
//	PatchItem                              11 + (k-1)       (k of the patched item: a replace)
//	a transactional batch                  the sum of its operations' charges
//	a page of a query                      2.3 + 0.01 per item examined + 0.05 per item returned
//	any failed operation, or failed batch  1.24
//
// A container may have a Throughput in RU per second. User operations draw
// from a token bucket holding one second of it; one that would overdraw it
// fails with ErrTooManyRequests, its *Error carrying RetryAfter, and changes
// nothing. Refill that would overflow the full bucket is what users left
// unused: it goes to the reaper's own bucket, and the reaper spends nothing
// else. So the reaper never causes a user operation to be throttled, and under
// full load purging waits.
//
// A store is a database: Options.Throughput gives it shared throughput, one
// budget that every container without throughput of its own draws on, so
// that the sum of their traffic is throttled, and the reaper purges in any
// of them only with what the users of all of them left
// (Store.ReplaceThroughput changes it). Throughput may instead be
// autoscale (AutoscaleMaxThroughput, of a container or of the store): the
// budget is the maximum every second, as the service scales at once, and
// ScaledThroughput reports the figure it has scaled to, between a tenth of
// the maximum and the maximum, from what users drew in the last second or
// two.
//
// The reaper is one goroutine per store. It sleeps until the earliest expiry
// of any container, or until a write brings an earlier one; then it purges
// expired items oldest first, one batch (ReaperOptions.BatchSize, sized to
// fit MaxHold while users are served) per container per round, so that one
// container's backlog never starves another's. It holds a shard's lock only
// while it deletes that shard's items of one batch, so readers never wait
// behind a whole batch, and while it works through a backlog it rests a
// millisecond after each millisecond of work in which users were served,
// so that it never holds for long a core that readers need. Container.Purge
// purges on demand.
// Container.Stats reports the backlog (ExpiredPending, PurgeLag) and the work
// done (Purged, ReaperCharge, Throttled).
//
// # Queries
//
// Container.QueryItems and Container.NewQueryItemsPager run queries in the
// Cosmos DB for NoSQL query language over the container's live items:
//
//	SELECT [DISTINCT] [TOP n] * | VALUE expr | expr [AS alias], ...
//	FROM c | FROM root r | FROM x IN c.children | FROM c.children
//	[JOIN t IN c.tags | JOIN (SELECT ...) [AS alias] ...] [WHERE expr]
//	[GROUP BY expr, ... | ORDER BY expr [ASC|DESC], ...] [OFFSET n LIMIT m]
//
// The name after FROM only names the container's items. Paths (c.a.b,
// c["a b"], c.arr[0]), object and array literals, @parameters (anywhere a
// value can stand, TOP, OFFSET and LIMIT included), the operators
// + - * / % || = != <> < <= > >= IN BETWEEN LIKE (with % _ [...] and
// ESCAPE) AND OR NOT ?: ?? and bitwise ones, the aggregates COUNT, SUM, AVG,
// MIN and MAX, and the built-in functions of the Cosmos DB reference (type
// checks, IIF, CHOOSE, string, regular expression, math, array, set, and
// date and time functions; spatial, full-text and vector functions are
// refused) are supported. A query without FROM (SELECT ABS(-4)) is
// evaluated once.
//
// GROUP BY gives one result per group of the values of its expressions
// (paths or expressions such as LOWER(c.name); items where a value is
// undefined form a group of their own), in the order of those values; the
// select list may hold only the GROUP BY expressions, aggregates and
// constants, and ORDER BY cannot be combined with it, as in Cosmos DB.
// Subqueries are correlated: (SELECT VALUE COUNT(1) FROM t IN c.tags) is
// the only result of the subquery for the current item (undefined if none,
// an error if several), EXISTS(SELECT ...) whether it has any, ARRAY(SELECT
// ...) the array of them, and JOIN (SELECT ...) AS x iterates them. The
// operator form c.x IN (SELECT ...) and FROM (SELECT ...) are not
// supported. User-defined functions, udf.name(args), stand anywhere an
// expression may; the caller gives them as Go functions
// (QueryOptions.UserFunctions, UserFunction), called per row with no lock
// held. A query with one still uses an index for its other conditions,
// but is never evaluated by a walk of an index in ORDER BY's order (that
// walk holds a lock): it sorts its candidates.
//
// Values follow Cosmos DB. A missing property is undefined, which is not
// null: it is left out of projected objects, and SELECT VALUE of it yields
// no row. Arithmetic on non-numbers, comparisons between values of different
// types, and anything involving undefined yield undefined; AND, OR and NOT
// are three-valued (false AND undefined is false, true OR undefined is true);
// WHERE keeps a row only when its condition is exactly true. ORDER BY, MIN
// and MAX order values across types as undefined < null < false < true <
// numbers < strings (byte-wise) < arrays < objects. String functions count
// UTF-16 code units, as JavaScript does. Numbers are IEEE doubles; SELECT *
// returns each item exactly as stored.
//
// Expired items never appear in a result, a count or an aggregate, whether
// or not the reaper has purged them. A query pager evaluates its query once,
// when its first page is asked for, over the items live at one clock
// reading (a query an index streams, ordered by indexed paths, is evaluated
// page by page instead, each page resuming after the last: see Query
// pages and continuation tokens, below); each shard of the container is read under its lock in turn, so
// every item is seen exactly once, as it was either before or after any
// concurrent write to it. Later pages drop results whose item has since been
// deleted or has expired, and keep those whose item was rewritten. Results
// without ORDER BY come in the order their items were created, across
// partitions, as Cosmos DB returns them in the order of their "_rid": every
// item has a position in its container, the next one when it is created,
// kept when it is replaced, upserted or patched (an item deleted or expired
// and created again is a new one, at the end); results with equal ORDER BY
// values come in that order too. Pages hold PageSizeHint results (default
// 100). A continuation token resumes after the key of the last result
// returned (its ORDER BY values, then its item's position; for GROUP BY, its
// group's values), so items that expire, are deleted or are
// written between pages never make a resumed query skip or repeat an
// unchanged live item; tokens are bound to their container, query text,
// parameters and partition key, and any other use is refused
// (ErrBadRequest).
//
// A bad query is an ErrBadRequest whose message gives line, column and what
// was expected, such as "1:17: expected WHERE, found "WHER"". Queries honour
// their context inside a single item, and fail with ErrBadRequest rather
// than run away when they would build values larger than MaxQueryValueSize,
// produce more than MaxQueryJoinRows rows from one item, or hold more than
// MaxQueryRows rows or MaxQueryBuiltBytes of computed results.
//
// # Indexes
//
// A container's IndexingPolicy says which paths may be indexed: every one
// by default ("/*"), less its ExcludedPaths, the most specific path that
// covers a value deciding, as in Cosmos DB; IndexingModeNone keeps no
// index. lethe does not index every path of every item as Cosmos DB does:
// the index of a path is made the second time a query filters on it (the
// first scans: making an index costs about as much as one and a half
// scans, more than a query that runs once would save) or the first time
// one orders by it (whose scan would sort every item),
// from the items while writes go on (an item write waits at most for the
// reading of one of the container's 16 shards, a transactional batch for the
// whole build, as for any query; the changes made during the build are
// replayed into the index before it is used), and from then on every
// change keeps it, in the same step that changes the items (at most 16
// indexes per container). So a container pays, on writes and
// in memory (about 100 bytes an item for each index: BenchmarkIndexMemory),
// only for the paths its queries use.
//
// A query whose WHERE clause has, among the conditions joined by AND at its
// top, one on a path of its items that an index answers (=, IN, <, <=, >,
// >=, BETWEEN with constants or parameters, or STARTSWITH without
// ignoring case) is evaluated on the items the index finds alone; a query
// ordered by one path, with TOP or LIMIT or more results than a page, on
// the items a walk of the index in that order meets first, walking further
// until its results (or its page's) cannot change. Every other part of the query is evaluated as without an index,
// so results, their order, their continuation tokens and the exclusion of
// expired items are exactly a scan's; the charge, which counts the items
// examined, is lower. Arrays and objects, and the values inside them, are
// not indexed (a filter on them scans), and IndexingModeLazy behaves as
// consistent.
//
// IndexingPolicy.CompositeIndexes declare composite indexes, as in Cosmos
// DB: two or more paths, each ascending or descending. A query ordered by
// exactly those paths, in those directions or all reversed, with TOP or
// LIMIT or more results than a page, and no filter an index answers, walks
// the composite index (made by
// the first such query and kept by every change after, as a path's index
// is) instead of sorting every item. A query ordered by several paths that
// no composite index serves is refused, as Cosmos DB refuses it, with
// QueryOptions.RequireCompositeIndexes; without, it runs, sorting every
// item. QueryOptions.PopulateIndexMetrics returns which index a query
// used, which paths it filters on that the policy excludes, and which
// composite index would serve its ORDER BY (QueryItemsResponse.IndexMetrics,
// in Cosmos DB's JSON). Every page also carries its measured
// QueryMetrics, in Cosmos DB's form: the items the evaluation retrieved
// and their size, the results output, the index utilization ratio, and
// the time of each phase.
//
// # Vector and full-text policies
//
// ContainerProperties.VectorEmbeddingPolicy declares the paths that hold
// vectors (element type float32, float16, int8 or uint8; distance function
// cosine, dotproduct or euclidean; dimensions), and FullTextPolicy the paths
// that hold text and their language (en-US; de-DE, es-ES, fr-FR, it-IT,
// pt-PT and pt-BR, in preview in Cosmos DB). IndexingPolicy.VectorIndexes
// (flat, at most 505 dimensions; quantizedFlat and diskANN, at most 4,096)
// and FullTextIndexes index paths those policies declare. lethe checks them
// as Cosmos DB does (an error names what was wrong, and nothing changes),
// fills in the documented defaults (float32, cosine, 1,536 dimensions,
// en-US), keeps them durably with the container's other properties and
// returns them. Container.Replace may add or remove a vector path, not
// change the settings of one the container has, nor the type of its index.
// Queries use the full-text policy: FullTextContains, FullTextContainsAll
// and FullTextContainsAny analyze a path's text, and their search strings,
// in the path's language (the policy's default for a path it does not
// list; en-US without a policy): see the README's differences for what
// that analysis is. VectorDistance compares vectors by the distance
// function and element type of the path's embedding (unless its options
// say otherwise), exactly; ORDER BY VectorDistance puts the most similar
// first. For a path of VectorIndexes, the container keeps every item's
// decoded vector, made in the background when the index is declared or the
// store opened and kept by every write after; a diskANN index also keeps a
// graph of them (HNSW). A SELECT TOP k ... ORDER BY VectorDistance(c.path,
// @q) (no WHERE) reads them with no lock, as they were when it began, and
// evaluates the query on the k nearest items live at that instant: exactly
// the k nearest, with the same results as a scan, through a flat or
// quantizedFlat index or with bruteForce; the nearest the graph finds
// (k × searchListSizeMultiplier candidates, ranked by their exact
// distances) through a diskANN index, approximate as in Cosmos DB, never
// an expired item. ORDER BY RANK orders by FullTextScore (BM25, with the
// statistics of all the container's live items) or by RRF, the reciprocal
// rank fusion of FullTextScore and VectorDistance rankings. Items are not
// checked against the vector policy when written, as in Cosmos DB.
//
// For a path of FullTextIndexes, the container keeps an inverted index of
// the path's text, made at the first query that asks and kept by every
// write after: a WHERE filter of FullTextContains, FullTextContainsAll or
// FullTextContainsAny takes its candidates from it, and a SELECT TOP k ...
// ORDER BY RANK FullTextScore(c.path, ...) scores the items holding its
// terms from it, with the statistics of the live items, and evaluates the
// query on the k best; either way with the same results as a scan.
//
// # Unique keys
//
// A container's UniqueKeyPolicy, set when it is created and fixed from
// then on, makes the values at some paths unique in each logical
// partition: a create, replace, upsert, patch or batch operation that
// would give a live item the values another live item of its partition
// has at every path of one key fails with ErrConflict and Cosmos DB's
// message, "Unique index constraint violation.", and changes nothing (a
// batch fails whole). A missing path counts as null; values compare as
// queries compare them (1 and 1.0 alike, "a" and "A" not, objects
// deeply). An expired item holds no value from the instant it expires,
// purged or not. The check and the write are one step: of concurrent
// writes of one value, one wins.
//
// # Patch and transactional batch
//
// Container.PatchItem changes one item with up to MaxPatchOperations
// operations, applied in order, all or none, as Cosmos DB's partial
// document update does: add (creates or replaces a member; in an array,
// inserts at an index up to the length, "-" appending), set (as add, but
// in an array it replaces an existing element), replace and remove (the
// path must exist), increment (a number; a missing member is created with
// the increment) and move (removes the value at one path and adds it at
// another). Paths are JSON Pointers ("/a/b/0", "~1" standing for '/' and
// "~0" for '~' in a name); a missing parent is an error, as is any path to
// a system property (id, _ts, _etag, _rid, _self, _attachments) or on the
// container's partition key paths. PatchOperations.SetCondition makes a
// patch conditional on a FROM clause, such as "FROM c WHERE c.stock > 0",
// evaluated on the item before the patch (ErrPreconditionFailed when it
// does not hold); If-Match applies as for a replace. A patch edits the
// stored JSON text without decoding it, and its result is validated as any
// incoming item is (size, nesting, ttl).
//
// A patch is a write: _ts and _etag change and the countdown restarts. So
// sliding expiry (keeping an item alive while it is used) is a patch of
// any property, a single small operation on the stored text, much cheaper
// than reading and replacing the item (see ExampleContainer_PatchItem). A
// patch of "/ttl" sets the item's own time to live; removing "/ttl" makes
// it inherit the container's default again. An expired item cannot be
// patched: ErrNotFound, as for a replace.
//
// Container.ExecuteTransactionalBatch runs up to MaxBatchOperations
// creates, reads, replaces, upserts, deletes and patches on the items of
// one logical partition, in order, all or none; each operation sees the
// effects of the ones before it, and expired items count as missing, as
// they do outside a batch. When an operation fails nothing is applied and,
// as in azcosmos, the call returns a nil error with a response whose
// Success is false: the failing operation carries its own status code and
// every other one 424 (failed dependency). Readers never see part of a
// batch: a point read sees each item as it was before the batch or after
// it, and a query sees all of the batch or none of it. A batch is charged
// the sum of its operations' charges, drawn at once; a batch the budget
// cannot cover is refused whole with ErrTooManyRequests.
//
// # Durability
//
// With Options.Dir, a store is durable, in the model of Redis and BuntDB:
// items stay in memory, so reads cost what they cost in memory, and every
// change (item writes and deletes with their partition key, purges,
// container creation, settings and deletion) is appended to a write-ahead
// log before it is acknowledged; a transactional batch is one record,
// recovered whole or, torn at the end of the log, not at all:
//
//	store, err := lethe.Open(&lethe.Options{Dir: "data"}) // SyncAlways
//
// Options.Sync says when a write is acknowledged: SyncAlways once its log
// record is on stable storage (concurrent writers share each fsync, so
// throughput grows with the number of writers), SyncEverySecond once it is
// written to the operating system (a machine crash loses at most the last
// second; a process crash loses nothing), SyncNever likewise without the
// periodic sync. If the log cannot be written or synced, the write fails
// with ErrUnavailable, while reads go on: after a full disk the store
// refuses writes until the disk takes them again, then heals by itself and
// takes them; after any other failure it refuses every later write until
// it is reopened. A write is made in memory, and so visible
// to readers, only once its log record is durable under the policy,
// holding its item's shard lock meanwhile (readers of that shard wait for
// it; writers to other shards share its fsync): a write that fails is
// never visible, and under SyncAlways no reader sees a write that a power
// cut can take back (a group commit's writes become visible together,
// when their fsync returns). Under SyncEverySecond and SyncNever a reader
// sees a write once the operating system has it: a process crash keeps
// it, a power cut may take back what a reader saw in the last second
// (SyncEverySecond) or since the last checkpoint (SyncNever). A write
// whose fsync failed is not visible while the store runs, but its record
// may have reached the disk and come back after a reopen (a failed fsync
// leaves that unknown; treat a 503 as an unknown outcome, as with Cosmos
// DB). Expiries are not writes: the change feed shows one when it is
// found. Open
// on a disk that is full (or mounted read-only), where it cannot start a
// log segment, opens the store read-only: reads, queries and the change
// feed work, every write fails with ErrUnavailable (503) and a message
// naming the disk, and Close loses nothing; reopen it once there is room.
//
// Snapshots keep the log short: Store.Checkpoint takes one now, and the
// store takes one by itself when the log has grown (by 64 MB and by the
// last snapshot's size) and soon after a container is deleted, whose items
// then leave the disk. A snapshot is written from the immutable records,
// holding each shard's read lock only to list them, at a bounded pace in
// the background; expired items are left out.
//
// Open recovers a durable store: the newest snapshot, then the log after
// it. An item whose expiry has passed by the store's clock is not brought
// back (Store.Recovery counts it, and Stats counts it as purged); settings
// changes are replayed at the instants they were made, so expiry stays
// final across restarts; _ts, _etag and the write sequence continue
// without reuse. A torn record at the very end of the log (the process died
// while appending it; it was never acknowledged) is cut off and reported in
// Store.Recovery; any other damage fails Open with a *CorruptionError
// naming the file and offset. The directory's MANIFEST records what it must
// hold (the store's id, which every file's header carries, its snapshot,
// its log segments and the sizes of those written to their end, the last
// write sequence number): a snapshot or segment that is missing, cut short
// below what the manifest records, or another store's fails Open with a
// *CorruptionError naming it, never opens as an emptier store. A log
// segment removed or replaced while the store runs stops its writes
// (ErrUnavailable, naming the segment) at the next commit that syncs. One store at a time may have a directory
// open: another Open, in this process or another, fails with ErrLocked.
// The file formats are documented in the source (format.go). Check verifies a
// directory as Open would recover it, and changes nothing. Store.Stats
// counts the log's bytes, fsyncs and snapshots; Options.Logger (log/slog)
// is told what no call returns: a torn end cut off, a store opened
// read-only, a log that failed, a background snapshot that failed.
//
// # Change feed and expiry events
//
// A container with a ChangeFeedPolicy keeps a change feed, shaped after
// Cosmos DB's and azcosmos's: NewChangeFeedPager (or ReadChangeFeed, one
// page) reads it from the beginning, from now or from an instant, over the
// container or one partition key (or a prefix of a hierarchical one), with
// continuation tokens. Every change has a log sequence number (lsn), in
// commit order. Latest-version mode returns each changed item once, at its
// latest version, with "_lsn"; all-versions-and-deletes mode returns every
// write and delete as {"current", "previous", "metadata"} with operationType,
// lsn, crts and previousImageLSN, and a delete caused by expiry carries
// "timeToLiveExpired": true, the item's id and partition key, and its last
// version (with its _etag) as "previous".
//
// Unlike Cosmos DB, whose feed shows a TTL delete when the item is purged,
// "not guaranteed" to be soon after it expired, lethe puts an expiry in the
// feed at the instant the item expired by the store's clock, whatever the
// reaper does: the feed is brought up to date before each page is read, so
// replaying the all-versions-and-deletes feed always gives the container's
// live items. A write decided while its item was live that the feed has
// seen expire by the time the write is numbered (a reader brought the feed
// up to date meanwhile) follows the expiry as a create, or, for a delete,
// not at all; the write's answer is still the one decided (a replace
// answers 200, a delete 204: the item was live when they were decided),
// and the create keeps its write's instant as crts, which may be earlier
// than the expiry before it. An expiry the feed's watch found only after
// it had looked past its instant (a version written, or taken out of the
// expiry index, while a reader brought the feed up to date) is stamped
// with the instant the watch had reached, as is one that a shorter default
// TTL brings about, so that the feed's expiries stay in order of instant.
// The feed keeps what its policy allows (changes, bytes) and
// forgets the oldest; a continuation that needs a forgotten change fails
// with ErrChangeFeedTrimmed. A durable store keeps its feeds across
// restarts, expiries that happened while it was closed included.
//
//	sub, err := container.SubscribeExpiries(nil)
//	for ev := range sub.Events() {
//		log.Printf("%s expired at %v", ev.ID, ev.ExpiredAt)
//	}
//
// SubscribeExpiries reports each expiry once, in expiry order, at its
// instant, through a bounded queue that never blocks the store: a slow
// subscriber loses events (counted in Dropped and in
// ContainerStats.ExpiryEventsDropped), which the change feed still has.
// An item written again or deleted before it expires reports nothing; a
// shorter default TTL that expires items at once reports them at the
// change. Purges stay on the reaper's spare throughput: events do not wait
// for them.
//
// # Concurrency
//
// A Store and its Containers are safe for concurrent use by any number of
// goroutines. A container's items are split into shards, each under its own
// read-write lock: reads run in parallel with each other and with writes to
// other shards. Each shard's expiry index and counts have a lock of their
// own, taken briefly by every write. What the shards share (the change
// feed, the expiry watch, the indexes beside the expiry index) has one lock
// per container, which a write takes only while the container has some of
// it, so that the feed, the watch and the indexes always agree. A
// transactional batch holds the write locks of the shards its items are
// in, and a container-wide batch lock that the scans of queries share, so
// a query sees all of a batch or none of it: the scans of a container's
// queries and the application of its batches wait for one another.
// Store.Close stops the reaper and waits for it; afterwards every call
// fails with ErrClosed.
//
// Item bodies are copied in and out: a caller that changes a slice it passed
// or received never changes the store.
//
// # Errors
//
// Every failure of an operation on an open store is an *Error carrying a
// Cosmos-style status code (400, 404, 409, 412, 413, 429, 503; 424 marks
// the operations of a failed batch that did not fail themselves), the
// operation, the container, the item id and a message saying what was
// wrong. errors.Is matches it against the sentinels ErrBadRequest,
// ErrNotFound, ErrConflict, ErrPreconditionFailed, ErrRequestTooLarge,
// ErrTooManyRequests and ErrUnavailable; errors.As gives the details. An
// operation that fails changes nothing. Calls after Close fail with ErrClosed;
// a cancelled context fails with the context's error.
//
// Limits: an item id is 1 to 1,023 bytes of UTF-8, any characters (as in
// Cosmos DB, whose REST gateways, not its stores, trip over '/', '\', '?',
// '#'); a container id 1 to 255 characters without those four; an item
// at most 2 MB of JSON (ErrRequestTooLarge above that) nested at most 128
// levels.
//
// # Query pages and continuation tokens
//
// What NewQueryItemsPager's pages evaluate, and what they guarantee.
//
// Results come in the order of their keys: the ORDER BY values, then the
// position of the item the result was made from, then the result's
// position among the rows of that item (JOINs). An item's position is
// given when it is created (by CreateItem, or UpsertItem of a missing or
// expired item, alone or in a batch), after every other item's of its
// container, and kept by every later write of it, as Cosmos DB's "_rid" is:
// so results without ORDER BY come in the order the items were created,
// across partitions, and results with equal ORDER BY values in that order
// too. An item deleted, or expired, and created again is a new item, at
// the end. DISTINCT results are ordered by
// their ORDER BY values, then by their value itself; GROUP BY results by
// their group's values (each group is one result, and keeps its place
// whatever other groups come and go between pages); an aggregate without
// GROUP BY, or a query without FROM, has at most one result.
//
// Each page runs under the store's QueryBudget (time, rows, memory): a
// page that spends it ends early, possibly empty, with a continuation; a
// query that cannot make progress within it fails with ErrRequestTimeout.
// A query in item order (no ORDER BY, DISTINCT, aggregate or GROUP BY)
// lists the items live at its first page's instant (their records, not
// their results), and each page evaluates as many of them as it needs,
// from where the last ended, each item with the content the list holds,
// if it is still live at the instant of the page; resumed from a continuation token, it walks
// the container's items in position order from the token's, so page n
// costs what one page costs. Other queries are evaluated whole within one
// page's budget.
//
// A pager of another query evaluates it once, on its first page, over the
// items live at one instant: each of the container's shards is read under its lock in
// turn, so every item is seen exactly once, either as it was before a
// concurrent write or as it is after it, and an item that expires during
// the query is seen by none of it. Later pages of the same pager come from
// that evaluation, as it was, less the results whose item, looked up again
// at the instant of the page, has been deleted or has expired since; a
// result whose item was written again since is kept, with the content of
// the evaluation. So one pager never returns a result twice, and never one
// whose item is not live at the instant of the page; it does not return
// items created after its first page.
//
// A query ordered by paths an index walks in order (one path, or the paths
// of a composite index) that has more results than a page is streamed
// instead: each page is evaluated on its own, at its own instant, by a
// walk of the index that starts at the ORDER BY values of the last result
// returned, exactly as a pager given the previous page's continuation token
// would (below), so a streamed pager has a continuation token's guarantees
// rather than those above (it may return items created after its first
// page, and the result of an item rewritten with a later ORDER BY value
// again). A page costs what its walk examines, not the whole container;
// when a walk has to go far past its page (many items share a value), the
// pager evaluates the rest whole, once. A query without ORDER BY whose
// filter an index answers, with TOP or LIMIT, is evaluated on as few of the
// index's candidates, taken in item order, as its results need. Whether a
// query streams depends on the indexes the container has made so far.
//
// A continuation token holds the key of the last result of its page (its
// ORDER BY values and its item's position) and how many results have been
// counted against TOP and LIMIT. A pager given
// one evaluates the query again, at its own instant, and returns only the
// results whose keys come after that key, without applying OFFSET again and
// with TOP and LIMIT reduced by the results already counted. So resuming
// skips no result of an item that stayed live and unchanged, and repeats
// none, whatever was written, deleted or expired in between; a result
// whose item was written since may move: it is returned again if its new
// ORDER BY values place it after the token, and not at all if they place
// it before. DISTINCT results are keyed by their values: a value is
// returned again on resumption only if its ORDER BY values changed. A token
// is refused (ErrBadRequest) by another container (one deleted and created
// again under the same id included), another query text, other parameters
// or another partition key, and when malformed or written by a version of
// lethe before positions. It holds the ORDER BY values in clear, so it
// grows with them.
//
// A sorted evaluation (ORDER BY that no index walks) holds only the rows
// its results need: with TOP or LIMIT, the first of them (and OFFSET's);
// resumed from a token without DISTINCT, GROUP BY or aggregate, a page's
// and one more, its first page then being evaluated as a streamed one is,
// and the pager's later pages whole, once, from that page's key. Its
// memory grows with those results, not with the items, and it evaluates
// the select list of a row (user-defined functions included) only if the
// row may be one of them: a row that passes WHERE but is turned away by
// its ORDER BY values fails no limit of its results.
//
// Limits: an evaluation stops with its context's error soon after ctx is
// done, even within one item, and fails with ErrBadRequest when it would
// pass MaxQueryValueSize, MaxQueryJoinRows, MaxQueryRows or
// MaxQueryBuiltBytes, or when one LIKE would need more than about 67
// million character comparisons (LIKE is linear in the string for patterns
// whose parts between % are literal text).
package lethe
