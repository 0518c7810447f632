// Package cosmosrest serves the Azure Cosmos DB for NoSQL REST API over
// lethe stores, so that the official SDKs (azcosmos for Go, @azure/cosmos
// for JavaScript, and the others that speak the gateway protocol) work
// against lethe as they do against the Cosmos DB emulator:
//
//	h, err := cosmosrest.New(cosmosrest.Config{}) // in memory, the emulator's key
//	defer h.Close()
//	srv := httptest.NewTLSServer(h)
//	client, _ := azcosmos.NewClientWithKey(srv.URL, cred,
//		&azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: srv.Client()}})
//
// The command github.com/lethedb/lethe/cmd/lethe serves a Handler on
// https://localhost:8081/, as the emulator does.
//
// # Resources
//
// Each database is a lethe.Store of its own (in memory, or with Config.Dir
// a durable store in a subdirectory); each container a lethe.Container.
// Config.Logger (log/slog) is given each database's recovery, its store's
// failures and every request that failed on the server's side; CheckDir
// verifies a Config.Dir without changing it.
//
// The front serves:
//
//   - the account, GET /: one region whose endpoint is the address the
//     request came to; an Account (NewAccount) of several regions names
//     each region's endpoint, its write regions and its consistency;
//   - databases, /dbs: create (with shared throughput from
//     x-ms-offer-throughput or x-ms-cosmos-offer-autopilot-settings: the
//     database's store's, which its containers without their own draw on),
//     read, list, query, delete;
//   - containers, /dbs/{db}/colls: create (partitionKey paths, kind and
//     version; defaultTtl; indexingPolicy's indexingMode; manual throughput
//     from x-ms-offer-throughput or autoscale from
//     x-ms-cosmos-offer-autopilot-settings; vectorEmbeddingPolicy,
//     fullTextPolicy and the indexing policy's vectorIndexes and
//     fullTextIndexes, checked as lethe's ContainerProperties are), read,
//     list, query, replace (defaultTtl, indexing policy and the vector and
//     full-text policies; the partition key and a vector path's settings
//     cannot change), delete; a container without a partition key reads
//     back with the system's (/_partitionKey, systemKey: true) at API
//     versions since 2018-12-31, and without one before (systemkey.go);
//   - documents, /dbs/{db}/colls/{coll}/docs: create, upsert
//     (x-ms-documentdb-is-upsert), read, replace, delete, with If-Match and
//     Prefer: return=minimal; read feed (GET); queries (POST,
//     application/query+json, {"query", "parameters"}), paged by
//     x-ms-max-item-count and x-ms-continuation: documents come in the
//     order they were created (lethe's order without ORDER BY, as the
//     service's by _rid), and the page of a query that reads them in that
//     order (no ORDER BY, DISTINCT, aggregate, GROUP BY, TOP or OFFSET
//     LIMIT) that reaches x-ms-max-item-count carries a continuation even
//     when nothing follows, as the service's backend cuts such pages
//     without looking ahead; that continuation brings an empty page
//     without one (1 RU, zero query metrics); in a container without a
//     partition key, as in the service's, the last page carries none,
//     full or not; the full-text functions
//     (FullTextContains, FullTextContainsAll, FullTextContainsAny) read
//     the container's full-text policy for each path's language,
//     VectorDistance its vector embedding policy; a query plan request
//     (x-ms-cosmos-is-query-plan-request) gets the service's plan
//     (queryPlanJSON, queryplan.go): rewritten queries with ORDER BY
//     items, partial aggregates and GROUP BY items, a non-streaming ORDER
//     BY for VectorDistance, a hybrid search (global statistics, then
//     component queries) for ORDER BY RANK, so that an SDK runs its own
//     pipeline over the ranges as against the service; their results
//     carry the item's _rid and, where they hold the item, its system
//     properties;
//   - partial document update, PATCH on a document: the body
//     {"operations":[…],"condition":"FROM c WHERE …"} (or the bare array
//     of operations), each {"op":"add"|"set"|"replace"|"remove"|"incr"|
//     "move","path",…} with "value" (add, set, replace, incr) or "from"
//     (move), up to 10, applied all or none by lethe's PatchItem; with
//     If-Match and Prefer: return=minimal;
//   - transactional batches, POST on a container's documents with
//     x-ms-cosmos-is-batch-request and x-ms-cosmos-batch-atomic: True: a
//     JSON array of up to 100 operations ({"operationType":"Create",
//     "Upsert", "Read", "Replace", "Delete" or "Patch", "id",
//     "resourceBody", "ifMatch"}) on the partition key value of the
//     x-ms-documentdb-partitionkey header (an operation's own
//     "partitionKey", if it has one, must be that value), executed all or
//     none by lethe's ExecuteTransactionalBatch. The response is an array of
//     results ({"statusCode", "subStatusCode", "requestCharge", "eTag",
//     "resourceBody"}), with status 200 when the batch was committed and
//     207 when an operation failed: that one has its own status (and a
//     "message"), every other one 424, and nothing was applied. Writes
//     have a resourceBody unless Prefer: return=minimal; reads always do.
//     x-ms-request-charge is the batch's total;
//   - the change feed, GET on a container's documents with A-IM:
//     "Incremental Feed" for the latest version of each changed document
//     (with "_lsn"), "Full-Fidelity Feed" for all versions and deletes
//     (the 2021-09-15 wire format: {"current", "previous", "metadata"},
//     TTL expiries marked "timeToLiveExpired": true and dated when the item
//     expired). If-None-Match is the continuation (the previous page's
//     etag); "*" starts from now; without it the feed starts from the
//     beginning, or from If-Modified-Since, but all versions and deletes
//     never start from the beginning (400, the service's "You must read
//     the change feed from within the retention period."). A page is
//     scoped to the whole container, to the value of
//     x-ms-documentdb-partitionkey (or the prefix of a hierarchical key),
//     to the partition key range of x-ms-documentdb-partitionkeyrangeid,
//     or to a feed range within it (x-ms-start-epk, x-ms-end-epk, as the
//     SDKs send for a feed range or a hierarchical key's prefix), and
//     names its range. 200 carries changes,
//     304 Not Modified says the reader has caught up; both carry the
//     continuation in etag. Every container the front creates keeps a
//     change feed (Config.ChangeFeed sets its retention, by count and
//     bytes, Config.NoChangeFeed turns it off); a continuation older than
//     what it keeps is 400. A container's changeFeedPolicy
//     (retentionDuration) is not read: lethe keeps the deletes for every
//     container;
//   - the reaper's state: container responses (create, read, replace)
//     carry lethe's own header x-ms-lethe-reaper,
//     "expiredPending=N;purgeLagMs=N;purged=N;requestCharge=N;": the
//     expired items not yet purged, how long ago the oldest of them
//     expired, the items purged since the store opened and the request
//     units the reaper spent (lethe's ContainerStats). It is read-only and
//     signed like the read that carries it; the SDKs ignore it;
//   - partition key ranges, /pkranges: the ranges of the container's
//     effective partition key space (pkranges.go, internal/epk), with
//     ids, minInclusive and maxExclusive, parents, _rid, _etag and _lsn,
//     as the service lists them: a partitioned container with throughput
//     of its own has one a 10,000 RU/s of it (manual, or the autoscale
//     maximum: 4 at 40,000), any other container one (Config.Ranges sets
//     a per-range throughput and a minimum count for tests). Ranges are
//     metadata: the container's items are one set, a range a filter on
//     their effective partition keys. Every response about a document
//     names its range
//     (x-ms-documentdb-partitionkeyrangeid) and carries that range's
//     session token ({range}:-1#{lsn}; a response about the whole
//     container, one per range, comma-separated); a query or change feed
//     naming a range is served from it alone, and one naming a range the
//     container does not have is 410 with substatus 1002
//     (PartitionKeyRangeGone), as after a split;
//   - offers, /offers: a database's or a container's throughput, manual or
//     autoscale, read and replaced (the SDKs' ReadThroughput and
//     ReplaceThroughput), checked as Cosmos DB checks it (manual 400 to
//     1,000,000 RU/s in steps of 100, an autoscale maximum 1000 to
//     1,000,000 in steps of 1000, a replace keeps the kind); an autoscale
//     offer's offerThroughput is what it has scaled to (lethe's
//     ScaledThroughput); a container without throughput of its own has no
//     offer;
//   - query plans (x-ms-cosmos-is-query-plan-request): a plan that leaves
//     nothing to the client, since lethe evaluates the whole query, ORDER
//     BY, TOP, DISTINCT and aggregates included, over one range;
//   - the gateway's refusals, as Cosmos DB's: a query over several
//     partitions (no x-ms-documentdb-partitionkey, no
//     x-ms-documentdb-partitionkeyrangeid, no filter fixing every partition
//     key path to one value) is 400 without
//     x-ms-documentdb-query-enablecrosspartition, 400 with substatus 1004
//     and the query plan in additionalErrorInfo when it needs a client's
//     work (ORDER BY, TOP, OFFSET LIMIT, DISTINCT, VALUE aggregates,
//     GROUP BY), and 400 with substatus 0 and no plan for a SELECT with an
//     aggregate without VALUE (GROUP BY with COUNT(1) AS n included) sent
//     with x-ms-documentdb-query-enablecrosspartition, whatever its filter; both
//     keep the service's text first and add lethe's note (the client sent
//     the query without a query plan, as azcosmos does, Cosmos DB refuses
//     it the same way, and what works instead); an ORDER BY of several paths
//     that no composite index serves is 400 unless
//     Config.AllowOrderByWithoutCompositeIndex;
//   - query metrics: x-ms-documentdb-query-metrics (lethe's measured
//     figures, lethe.QueryItemsResponse.QueryMetrics) with
//     x-ms-documentdb-populatequerymetrics, x-ms-cosmos-index-utilization
//     (the page's IndexMetrics, base64) with
//     x-ms-cosmos-populateindexmetrics;
//   - bulk requests (x-ms-cosmos-is-batch-request without
//     x-ms-cosmos-batch-atomic: True, bulk.go): each operation on its own,
//     through the same item calls as single requests, with its own result;
//     the operations whose results would take the response past 4 MB are
//     not run and answer 413/3402, which the SDKs send again (a
//     transactional batch whose response would pass 4 MB fails whole with
//     413/3402, nothing applied);
//   - users and permissions (users.go), replaced and deleted with
//     If-Match, and the resource tokens that permissions hand out
//     (resourcetoken.go);
//   - containers' conflict resolution policies and the conflicts feed
//     (conflicts.go): empty with one region, filled by the conflicts of
//     an Account of several write regions;
//   - server-side JavaScript: stored procedures (/sprocs), triggers
//     (/triggers, Pre or Post, for All, Create, Update, Delete, Replace or
//     Upsert) and user-defined functions (/udfs) of a container: create,
//     read, list, query, replace, delete (scripts.go), kept durably beside
//     the database's store and deleted with their container; a procedure's
//     execution, POST on it with its parameters and a partition key
//     (sprocexec.go); the triggers a write names (triggers.go); the UDFs a
//     query calls, udf.<id>(args) (udf.go). See "Server-side JavaScript".
//
// Attachments are not served: such requests get 400 with a message saying
// so.
//
// # Server-side JavaScript
//
// Scripts run on goja, a JavaScript engine in Go (internal/script), which a
// program that imports lethe alone does not link. Each execution gets a
// runtime of its own, made for it (so nothing an execution changes is seen
// by another), with ECMAScript's built-ins and the service's server-side
// API, nothing of the host: no require or modules, no timers, no file
// system or network. A script's body is compiled once per version, when
// it first runs: a stored procedure or trigger whose body is not
// JavaScript is stored, as the service stores it, and refused with 400
// when it runs (a UDF's is refused when stored).
//
// A stored procedure runs in the partition key of its request
// (x-ms-documentdb-partitionkey) as a transaction: getContext(), its
// getCollection() (also __) with createDocument, upsertDocument,
// replaceDocument, deleteDocument, readDocument, readDocuments and
// queryDocuments (callbacks (err, resource, options), run after the
// script's own code returns, in order; a call returns false when the
// operation is not accepted), getSelfLink, getAltLink, and
// getResponse().setBody/getBody (and setValue/getValue), appendBody(v)
// and appendValue("Body", v), which append to the body as a string. Its
// reads see its own writes and never an
// expired item, nor any item of another partition. Its writes are kept
// until it ends, then committed as one transactional batch (the one write
// path), or dropped when it throws or passes a budget: so a procedure
// writes at most 100 items and 2 MB of them (the batch's limits), past
// which its writes are not accepted, as they are not past its time.
// Items it wrote after reading them are written IfMatch the version it
// read; a concurrent write of one of them makes the commit fail and the
// procedure run again (three times at most, then 449). Items it only read
// are not checked again at the commit.
//
// Budgets: Config.ScriptTimeout (5 s by default), after which operations
// are not accepted, and 500 ms later the script is interrupted wherever it
// is (408); a call stack 1000 deep (400); a heap growth of
// Config.ScriptMaxHeapGrowth during the execution (128 MiB by default;
// goja has no allocation limit, so a watchdog samples the Go heap every
// 2 ms and interrupts the execution, 400, after a garbage collection still
// finds it over); output bounds (a body 4 MiB, the log 16 KiB). At most
// half the processors run scripts at once (one at least), so that scripts
// that spin until stopped leave the others to the other requests; a script
// that waits for one longer than twice its time limit gets 429.
//
// A script that throws is 400, its message the service's shape (Message:
// {"Errors":["Encountered exception while executing function. Exception =
// Error: ..."]}), its substatus the thrown object's number (an operation's
// error, thrown on, carries its status there). The charge is the sum of
// the operations' charges plus 1 RU per millisecond of execution. With
// x-ms-documentdb-script-enable-logging: true, what console.log wrote comes
// back URL-encoded in x-ms-documentdb-script-log-results: its arguments
// formatted as Node's util.format does ("The value of %s is %s."), one
// entry after another with CRLF between them and none after the last.
//
// Under a resource token whose permission is Read, scripts can be read and
// procedures run, but a procedure that writes is stopped with 403 and
// nothing written; changing scripts takes All.
//
// # Two gateways
//
// The emulator serves the same data on two ports, through two gateways that
// read request paths differently; so does the front. A Handler serves as
// the routing gateway (the emulator's https://localhost:8081/); the handler
// that Handler.ComputeGateway returns serves the same databases as the
// compute gateway (https://localhost:8903/). The SDKs escape an id once in
// the path and sign the id itself (the resource link, unescaped).
//
// The compute gateway splits the path at '/' and unescapes each segment
// once: every id reaches its document.
//
// The routing gateway unescapes the whole path first, as its HTTP layer
// does; a control character (U+0000 to U+001F, U+007F to U+009F) is then
// an invalid URL, 400 with http.sys's HTML page (not JSON, as that HTTP
// layer answers before Cosmos DB sees the request), and a '\' is a '/'. It reads the result as a URI
// again: a '#' starts a fragment, which is dropped, and trailing spaces are
// trimmed. Then it splits the path at '/' and unescapes each segment a
// second time. What it read is both the resource link it checks the
// signature against and the id it looks up; so an id it reads otherwise
// than the client signed gets 401 with the payload it signed: an id with
// '/', '\' or '#', trailing spaces, or a '%' and two hex digits ("%20"
// escaped once becomes " "). An id with CR, LF or tab gets 400; '?' and
// everything else work. Escaped twice, every id works on the routing
// gateway (and none of those on the compute gateway). Creating a document
// names no id in the path and works on both, whatever its id; lethe stores
// any id, as Cosmos DB does. Both gateways read a request's query as part
// of its path, as the emulator does: the JavaScript SDK writes paths with
// encodeURI, which leaves a '?' in an id unescaped.
//
// # Resource ids in paths
//
// Every resource is served by the path of its resource ids as well as by
// name, as Cosmos DB serves it: its _self (dbs/{rid}/colls/{rid}/docs/{rid}/,
// with or without slashes around it), which the legacy SDKs (the Python SDK
// 3.x, .NET's DocumentClient) use once they have read a resource. Such a
// request is signed over the resource type and the last resource id of its
// path, lowercased, as those SDKs sign it; it is then served, and a
// resource token checked, as the same request by name: a permission made
// on a _self reaches what the one on the path by name does. A resource id
// that identifies nothing is 404 (substatus 1003 for an owner's). A
// database whose name reads as a resource id keeps its paths by name.
// Resource ids are derived from names, so they are the same after a
// restart with Config.Dir. A document is found by its resource id through
// an index of its container's documents, made by a scan of the container
// the first time one of them is read so (about a second for 100,000
// documents, drawn from the container's throughput; 8 bytes and the id of
// each document kept, about 5 MB for 100,000) and kept current by noting
// every document the front returns and, for those it never returned
// (written by a procedure, or with Prefer: return=minimal), through the
// container's change feed; without one (Config.NoChangeFeed), a resource
// id it does not know costs a new scan.
//
// # Time to live
//
// A container's defaultTtl maps onto lethe's DefaultTimeToLive exactly:
// absent is off, -1 is on without a default, n > 0 is n seconds; null,
// like 0 and other negatives, is the service's 400; a document's ttl is lethe's, but for an explicit "ttl": null, which
// lethe's library takes as inheriting the container's default (as the
// original TTL tables say) and Cosmos DB refuses: the front refuses it
// with the service's 400 and message, in creates, upserts, replaces,
// batches and patches that set /ttl. Replacing a container without defaultTtl
// turns time to live off, as in Cosmos DB. Config.Clock sets the stores'
// clock, so tests can expire documents with a lethe.ManualClock.
//
// # System properties
//
// lethe stores _ts and _etag in each document. The front adds _rid, _self
// and _attachments to every document it returns, as Cosmos DB keeps them
// in every document: the responses of creates, upserts, replaces, patches
// and reads, query results that are whole documents (SELECT *, SELECT
// VALUE c, without JOIN or a FROM path), the read feed, both change feeds
// (the "current" and "previous" of all versions) and batch results. It
// drops them from documents on input (Cosmos DB ignores a client's
// values). Projections carry only what they select, and a query cannot
// filter on _rid or _self, which lethe does not store.
// Resource ids are derived from names (see rid.go), never stored: a
// document's from its container, its id and its partition key value, read
// from the document, so it is the same on every path. A
// container's _ts is when this handler created or last replaced it (when it
// started, for containers it found on disk), and its _etag a hash of its
// properties: lethe keeps neither. ETags are in double quotes, as HTTP
// and Cosmos DB write them, in etag headers and in _etag in bodies alike,
// a document's too (lethe's 16 hex digits, "_etag":"\"…\""); lethe's
// If-Match takes them with or without the quotes.
//
// # Security
//
// Every request must carry an authorization (URL-encoded), one of:
//   - a master-key signature (type=master&ver=1.0&sig=…) over its verb,
//     resource type, resource link and x-ms-date (or Date), computed with
//     Config.Key; a date more than MaxClockSkew from the server's clock
//     gets 403, as in Cosmos DB;
//   - a resource token (type=resource&ver=1.0&sig=…) that a permission
//     handed out: its scope (container or document, partition key, All or
//     Read) is checked against every request in one place (authorize), 403
//     outside it; an expired or altered token, or one whose permission is
//     gone, gets 401;
//   - a Microsoft Entra ID token (type=aad&ver=1.0&sig=<JWT>) as the
//     emulator accepts one: its signature segment is the account key,
//     base64url-encoded (aad.go).
//
// A missing or wrong authorization gets 401 and changes nothing.
// Request bodies are bounded by MaxRequestSize: 413 for a Content-Length
// above it before any of the body is read, or as soon as a chunked body
// passes it; a body that has not arrived within a minute of its header
// gets 408. Query texts are bounded as the account advertises
// (maxSqlQueryInputLength 512 KB, maxJoinsPerSqlQuery 5: 400 above). The
// body of a GET or DELETE is read and dropped, within the same bounds.
//
// Every refusal made before the body has been read whole (400 for the
// path, 401, 403, 413, and those of the control endpoints) reaches a
// client that is still writing the body, whatever its speed: over HTTP/1
// the refusal is sent at once, with Connection: close, and then the rest
// of the body is read and discarded, up to 16 MB and no later than the
// body's deadline (a minute from its header), before the connection is
// closed. Closing with a body unread makes the kernel reset the
// connection, and a client still writing saw the reset instead of the
// answer (@azure/cosmos: ECONNRESET for a 3 MB item). Nothing of the
// discarded body is kept. A body announced over 16 MB is not read, nor is
// one whose client waits for 100 Continue: the connection closes after
// the refusal. A body announced no longer than 256 KB is read by net/http
// before the refusal is sent, and the connection stays open. Over HTTP/2 the stream is reset with NO_ERROR once the
// refusal is whole, which asks the client to stop sending.
//
// # Reset
//
// POST /_lethe/reset drops every database, for test suites that share one
// server: each is dropped as DELETE on it drops it (with Config.Dir, its
// directory is removed), and the answer is 200 with the ids dropped,
// {"dropped":["a","b"]}, and, when some databases could not be opened at
// start, "unavailable": their directories, which a reset leaves to their
// owner. It is signed as any request of the REST API, for the resource
// type "reset" and the resource link "", with the master key (or an
// Entra ID token as the emulator accepts one); a resource token gets 403,
// a wrong signature 401, another method 405, and none of them drops
// anything. Fault rules (Config.Faults) are kept: they are cleared on
// their own endpoint (DELETE /_lethe/faults), and those a server was
// started with stay for its run. Requests under way on a database dropped
// end as they would had it been deleted. Handler.Reset does the same in
// process.
//
// # Splits
//
// POST /_lethe/split, with the body {"database": "db", "container": "c",
// "range": "0"}, splits that partition key range of the container in two,
// as the service splits a range that grows, and answers 200 with the
// children's ids, {"children":["4","5"]}: they take the container's next
// ids, divide the range at the middle of its share of the hash space, and
// list it as their parent; requests naming it then get 410 with substatus
// 1002, and the SDKs read the ranges again and resume their queries and
// change feeds over the children with the continuations they had
// (lethe's continuations are positions in the container's items or feed,
// good in any range). A range is metadata over the container's one set of
// items: a split moves nothing and waits for nothing, whatever the
// container holds. It is signed as a reset is, for the resource type
// "split"; a missing database, container or range is 404, a range too
// narrow to divide 400. Handler.SplitPartitionKeyRange does the same in
// process.
//
// # Errors
//
// Error responses have Cosmos DB's body, {"code":"NotFound","message":…},
// status and x-ms-substatus, and the service's message wherever the
// service has one for the case (messages.go): 404 "Entity with the
// specified id does not exist in the system. …" for a document, "Resource
// Not Found. …" for a database, container, user, permission, offer or
// partition key range, and substatus 1003 "Owner resource does not exist"
// for a document, query or feed whose database or container is missing;
// 409 "Entity with the specified id already exists in the system." for a
// document, "Unique index constraint violation." for a write that breaks
// a unique key policy, "Resource with specified id or name already
// exists." for the others; 412 "One of the specified pre-condition is not met. …"; 400
// with substatus 1001 "PartitionKey extracted from document doesn't match
// the one specified in the header. …", "PartitionKey value must be
// supplied for this operation.", the ttl and defaultTtl messages, "The
// input content is invalid because the required properties - 'id; ' - are
// missing", "The request payload is invalid. …"; 401 "Required Header
// authorization is missing. …" and "The input authorization token can't
// serve the request. …" with the payload the front signed; 403 "The
// authorization token is not valid at the current time. …" and, for a
// resource token, "Insufficient permissions provided in the authorization
// header …"; 405 "The requested verb is not supported."; 408 "Request
// timed out."; 413 `Message: {"Errors":["Request size is too large"]}`
// and a line "ActivityId: …, lethe: " with lethe's reason, as the gateway
// writes it; 429 substatus 3200
// "Request rate is large. …" with x-ms-retry-after-ms; 500 "Unknown server
// error occurred when processing this request."; 503 "Service is currently
// unavailable, …". The operations of a batch or bulk request carry the
// same statuses, substatuses and messages in their results.
//
// A bad query is 400 with the message Cosmos DB's gateway writes: "Message:
// " and the query engine's list of errors as JSON,
// {"errors":[{"severity":"Error","location":{"start":S,"end":E},"code":"SC1001","message":"Syntax
// error, incorrect syntax near 'X'."}]}, the location in UTF-16 code units
// of the query text; then "\r\nActivityId: " and the response's activity
// id, and, where lethe's text says more, ", lethe: " and its explanation
// with line and column (1:22: expected an expression, found end of query).
// The codes: SC1001 a syntax error near a token, SC1002 the end of the
// query ("Syntax error, unexpected end-of-file."), SC1012 an unterminated
// string, SC2001 an identifier that could not be resolved, SC2005 an
// unknown function, SC2050 a wrong count of arguments, SC2022 two select
// items of one name, and lethe's SC2000 for the other semantic errors,
// with lethe's text. A query plan request's message begins "Gateway Failed
// to Retrieve Query Plan: ".
//
// One convention adds lethe's explanation: where the service's message
// alone would mislead, or would not say what lethe refused (a limit, the
// cause of a 500 or 503, the offset of invalid JSON, a patch's condition
// behind a 412, an injected fault), the explanation follows the service's
// message in parentheses: "PartitionKey value must be supplied for this
// operation. (lethe: …)". A plain not-found, conflict
// or failed precondition gets the service's message alone. What the
// service has no message for (what lethe does not support, its own
// limits, query errors) gets lethe's own message.
package cosmosrest
