package cosmosrest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest/internal/script"
	"github.com/lethedb/lethe/internal/query"
	"github.com/lethedb/lethe/internal/queryspec"
)

// defaultPageSize is the page size of a query without x-ms-max-item-count,
// Cosmos DB's default.
const defaultPageSize = 100

// feedEnvelope bounds the bytes of a feed's response around its documents
// (replyFeed): its _rid, its name and its _count.
const feedEnvelope = 128

// partitionKey reads the request's x-ms-documentdb-partitionkey header for
// a point operation on container c. A container without partition key
// paths takes no header, [] or [{}]; a partitioned one requires it.
func (q *request) partitionKey(p lethe.ContainerProperties, forQuery bool) (lethe.PartitionKey, bool) {
	v := q.r.Header.Get("x-ms-documentdb-partitionkey")
	partitioned := len(p.PartitionKeyDefinition.Paths) > 0
	if v == "" {
		if partitioned && !forQuery {
			q.answerError(http.StatusBadRequest, msgPKMissing)
			return lethe.PartitionKey{}, false
		}
		return lethe.NewPartitionKey(), true
	}
	pk, err := parsePKHeader(v)
	if err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return pk, false
	}
	if !partitioned && (pk == lethe.NonePartitionKey || pk == lethe.NewPartitionKey()) {
		return lethe.NewPartitionKey(), true
	}
	return pk, true
}

// itemOptions reads If-Match and Prefer: return=minimal.
func (q *request) itemOptions() *lethe.ItemOptions {
	o := &lethe.ItemOptions{IfMatchEtag: q.r.Header.Get("If-Match")}
	if o.IfMatchEtag == "*" {
		o.IfMatchEtag = ""
	}
	for _, v := range q.r.Header.Values("Prefer") {
		if strings.Contains(strings.ToLower(v), "return=minimal") {
			o.NoContentResponseOnWrite = true
		}
	}
	return o
}

// checkTriggers refuses requests that name triggers where lethe does not
// run them: on a patch, a batch or a bulk request.
func (q *request) checkTriggers() bool {
	if q.hasTriggers() {
		q.answerError(http.StatusBadRequest, "triggers run on a create, upsert, replace or delete of one document, not on a patch, batch or bulk request")
		return false
	}
	return true
}

// withSelf returns doc, a document of container coll as lethe stores it,
// with the system properties that Cosmos DB keeps in every document and
// lethe does not: _rid, _self and _attachments. They are derived from the
// document's id and partition key value (read from the document at the
// container's partition key paths), so they are the same wherever the
// front returns the document; the container's index of documents by
// resource id, if it has one, notes it (ridpath.go).
func (db *database) withSelf(coll string, paths []string, doc []byte) []byte {
	id, ok := stringMember(doc, "id")
	if !ok {
		return doc
	}
	crid := containerRID(db.id, coll)
	drid := documentRID(crid, docPartitionKey(doc, paths).String(), id)
	db.docRIDs.note(coll, drid, id)
	return withSystemProperties(doc, ridString(drid), "dbs/"+ridString(db.rid)+"/colls/"+ridString(crid)+"/docs/"+ridString(drid)+"/")
}

// replyItem writes the response of a point operation on a document of
// container c (properties p).
func (q *request) replyItem(db *database, c *lethe.Container, p lethe.ContainerProperties, resp lethe.ItemResponse, write bool) {
	l := q.layout(db, c, p)
	hdr := q.w.Header()
	if resp.ETag != "" {
		setHeader(hdr, "etag", quoteETag(resp.ETag))
	}
	q.rangeHeaders(l, q.itemRange(l), write)
	setHeader(hdr, "x-ms-alt-content-path", "dbs/"+db.id+"/colls/"+c.ID())
	setHeader(hdr, "x-ms-content-path", ridString(containerRID(db.id, c.ID())))
	var body []byte
	if resp.Value != nil {
		body = db.withSelf(c.ID(), p.PartitionKeyDefinition.Paths, resp.Value)
	}
	q.reply(resp.StatusCode, body, resp.RequestCharge)
}

// pointTarget resolves a point operation on a document (create, read,
// replace, delete, patch, batch): its database, its container and the
// partition key of the x-ms-documentdb-partitionkey header, refusing
// triggers on a write. It answers the request itself when any of them
// fails.
func (q *request) pointTarget(write bool) (db *database, c *lethe.Container, p lethe.ContainerProperties, pk lethe.PartitionKey, ok bool) {
	db, c, p, ok = q.documentContainer()
	if !ok || write && !q.checkTriggers() {
		return nil, nil, p, pk, false
	}
	pk, ok = q.partitionKey(p, false)
	return db, c, p, pk, ok
}

// documentContainer finds the container of a document request and reads
// its properties; a missing one is 404 with the sub-status of a missing
// owner.
func (q *request) documentContainer() (*database, *lethe.Container, lethe.ContainerProperties, bool) {
	return q.containerProps(subOwnerNotFound)
}

// containerProps finds the container the request names and reads its
// properties, answering the request itself (404 with sub-status sub) when
// it cannot.
func (q *request) containerProps(sub int) (*database, *lethe.Container, lethe.ContainerProperties, bool) {
	db, c := q.container(sub)
	if c == nil {
		return nil, nil, lethe.ContainerProperties{}, false
	}
	p, err := c.Read(q.ctx())
	if err != nil {
		q.fail(err, 0, sub)
		return nil, nil, p, false
	}
	return db, c, p, true
}

func (q *request) createDocument() {
	db, c, p, pk, ok := q.pointTarget(false)
	if !ok {
		return
	}
	doc, err := inputDocument(q.body)
	if err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return
	}
	upsert := headerTrue(q.r.Header.Get("x-ms-documentdb-is-upsert"))
	if q.hasTriggers() {
		k := script.WriteCreate
		if upsert {
			k = script.WriteUpsert
		}
		q.triggeredWrite(db, c, p, pk, k, "", doc)
		return
	}
	var resp lethe.ItemResponse
	if upsert {
		resp, err = c.UpsertItem(q.ctx(), pk, doc, q.itemOptions())
	} else {
		resp, err = c.CreateItem(q.ctx(), pk, doc, q.itemOptions())
	}
	if err != nil {
		q.fail(err, resp.RequestCharge, 0)
		return
	}
	q.replyItem(db, c, p, resp, true)
}

func (q *request) readDocument() {
	db, c, p, pk, ok := q.pointTarget(false)
	if !ok {
		return
	}
	resp, err := c.ReadItem(q.ctx(), pk, q.t.id, nil)
	if err != nil {
		q.fail(err, resp.RequestCharge, 0)
		return
	}
	if inm := q.r.Header.Get("If-None-Match"); inm != "" && (inm == "*" || inm == resp.ETag || inm == quoteETag(resp.ETag)) {
		setHeader(q.w.Header(), "etag", quoteETag(resp.ETag))
		q.reply(http.StatusNotModified, nil, resp.RequestCharge)
		return
	}
	q.replyItem(db, c, p, resp, false)
}

func (q *request) replaceDocument() {
	db, c, p, pk, ok := q.pointTarget(false)
	if !ok {
		return
	}
	doc, err := inputDocument(q.body)
	if err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return
	}
	if q.hasTriggers() {
		q.triggeredWrite(db, c, p, pk, script.WriteReplace, q.t.id, doc)
		return
	}
	resp, err := c.ReplaceItem(q.ctx(), pk, q.t.id, doc, q.itemOptions())
	if err != nil {
		q.fail(err, resp.RequestCharge, 0)
		return
	}
	q.replyItem(db, c, p, resp, true)
}

func (q *request) deleteDocument() {
	db, c, p, pk, ok := q.pointTarget(false)
	if !ok {
		return
	}
	if q.hasTriggers() {
		q.triggeredWrite(db, c, p, pk, script.WriteDelete, q.t.id, nil)
		return
	}
	resp, err := c.DeleteItem(q.ctx(), pk, q.t.id, q.itemOptions())
	if err != nil {
		q.fail(err, resp.RequestCharge, 0)
		return
	}
	resp.Value = nil
	q.replyItem(db, c, p, resp, true)
}

func (q *request) queryDocuments() {
	spec, ok := q.parseQueryBody()
	if !ok {
		return
	}
	if !q.gatewayServes(spec.Query, spec.Params) {
		return
	}
	q.runQuery(spec.Query, spec.Params)
}

// readFeed answers GET on a container's documents: every document, or
// those of the partition in x-ms-documentdb-partitionkey, in pages.
func (q *request) readFeed() {
	q.runQuery("SELECT * FROM c", nil)
}

// runQuery answers a query over documents: lethe evaluates all of it (ORDER
// BY, TOP, DISTINCT, aggregates included) over the partition in the
// x-ms-documentdb-partitionkey header, or over every partition without it;
// results that are whole documents (SELECT *, SELECT VALUE c) carry the
// system properties of point reads;
// a page holds x-ms-max-item-count results (100 by default; -1: as many as
// fit 4 MB), and x-ms-continuation carries lethe's continuation token. The
// page of a query that reads the documents in their order (no ORDER BY,
// DISTINCT, aggregate, GROUP BY, TOP or OFFSET LIMIT: a read feed, a
// SELECT with or without a filter) is cut where it reaches
// x-ms-max-item-count, as the service's backend cuts it, without looking
// ahead: so such a page that is exactly full carries a continuation even
// when no result follows it (endToken), and that continuation brings an
// empty page without one. Other queries end on their last result, as the
// service's do (an ORDER BY of 10 results in pages of 5 is 2 pages). With
// x-ms-documentdb-populatequerymetrics, the page carries lethe's measured
// x-ms-documentdb-query-metrics; with x-ms-cosmos-populateindexmetrics,
// x-ms-cosmos-index-utilization (the page's IndexMetrics, base64), as
// Cosmos DB sends them.
func (q *request) runQuery(text string, params map[string]json.RawMessage) {
	db, c, p, ok := q.documentContainer()
	if !ok {
		return
	}
	pk, ok := q.partitionKey(p, true)
	if !ok {
		return
	}
	l := q.layout(db, c, p)
	rangeID, feedRange, ok := q.requestRange(l, pk)
	if !ok {
		return
	}
	limit, ok := q.maxItemCount()
	if !ok {
		return
	}
	end := endToken(db.id, c.ID(), text, params, pk)
	token := q.r.Header.Get("x-ms-continuation")
	if strings.HasPrefix(token, endTokenPrefix) {
		if token != end {
			q.answerError(http.StatusBadRequest, withDetail(msgBadToken, "the continuation token belongs to another container, query, parameters or partition key"))
			return
		}
		q.queryHeaders(db, c, emptyQueryMetrics, "")
		q.rangeHeaders(l, rangeID, false)
		q.replyFeed(ridString(containerRID(db.id, c.ID())), "Documents", nil, "", endPageCharge)
		return
	}
	opts := &lethe.QueryOptions{
		ContinuationToken:       token,
		PopulateIndexMetrics:    headerTrue(q.r.Header.Get("x-ms-cosmos-populateindexmetrics")),
		RequireCompositeIndexes: !q.h.cfg.AllowOrderByWithoutCompositeIndex,
		FeedRange:               feedRange,
	}
	for name, v := range params {
		opts.QueryParameters = append(opts.QueryParameters, lethe.QueryParameter{Name: name, Value: v})
	}
	if opts.UserFunctions = q.userFunctions(db, text); opts.UserFunctions != nil {
		// A query calling UDFs runs scripts: it takes a script slot.
		if !q.acquireScriptSlot() {
			return
		}
		defer q.releaseScriptSlot()
	}
	switch {
	case limit == 0:
		limit = defaultPageSize
		opts.PageSizeHint = defaultPageSize
	case limit < 0:
		opts.PageSizeHint = defaultPageSize
	default:
		opts.PageSizeHint = int32(limit)
	}
	pq, perr := query.Parse(text)
	rw := rewrittenRun(text, pq, perr, p)
	if rw.orderBy {
		opts.ContinuationToken = orderByResume(token, queryKey(db.id, c.ID(), rw.text, params, pk))
	}
	// The page's 4 MB counts the response's bytes: the comma before each
	// document, and the feed around them (feedEnvelope).
	opts.PageItemOverhead = 1
	if perr == nil && pq.ReturnsItems() {
		// Every item gains the same system properties (their ids have
		// one length): count them where the page's 4 MB is counted.
		x := []byte(`{"id":"x"}`)
		opts.PageItemOverhead += len(db.withSelf(c.ID(), p.PartitionKeyDefinition.Paths, x)) - len(x)
	}
	// A page stops before the item that would take it past the service's
	// 4 MB, whatever x-ms-max-item-count says; with -1, full pages are
	// joined while one page's time has not passed, each given what is left
	// of the 4 MB, until one ends short.
	var items [][]byte
	var charge float64
	size := 0
	next, metrics, indexMetrics := "", "", ""
	began := time.Now()
	var busy time.Duration // run since the page last gave way
	seen := q.h.started.Load()
	for {
		if opts.MaxPageBytes = maxResponseBytes - feedEnvelope - size; opts.MaxPageBytes <= 0 && len(items) > 0 {
			break // full to the byte; the token resumes after it
		}
		pageStart := time.Now()
		page, err := c.NewQueryItemsPager(rw.text, pk, opts).NextPage(q.ctx())
		busy += time.Since(pageStart)
		charge += page.RequestCharge
		if err != nil {
			if len(items) > 0 && errors.Is(err, lethe.ErrTooManyRequests) {
				break // return what was read; the token resumes after it
			}
			q.fail(err, charge, 0)
			return
		}
		items = append(items, page.Items...)
		for _, it := range page.Items {
			size += len(it) + opts.PageItemOverhead
		}
		next = page.ContinuationToken
		metrics = addQueryMetrics(metrics, page.QueryMetrics)
		if page.IndexMetrics != "" {
			indexMetrics = page.IndexMetrics
			opts.PopulateIndexMetrics = false
		}
		if next == "" || limit > 0 || len(page.Items) < int(opts.PageSizeHint) || time.Since(began) >= queryPageTime {
			// The last page, or one that ended at its bytes or its budget.
			break
		}
		if busy >= paceSlice {
			q.h.giveWay(q.ctx(), busy, &seen)
			busy = 0
		}
		opts.ContinuationToken = next
	}
	if perr == nil && pq.ReturnsItems() {
		for i, it := range items {
			items[i] = db.withSelf(c.ID(), p.PartitionKeyDefinition.Paths, it)
		}
	}
	if rw.rids != nil || rw.fields != nil {
		for i, it := range items {
			items[i] = db.withItemFields(c.ID(), p.PartitionKeyDefinition.Paths, it, rw.rids, rw.fields)
		}
	}
	if next == "" && limit > 0 && len(items) == limit && perr == nil && readsInOrder(pq, params) && len(p.PartitionKeyDefinition.Paths) > 0 {
		// A full page of a partitioned container: the service's backend
		// does not look ahead (a container without a partition key's
		// does: its last page, full or not, has no continuation).
		next = end
	}
	if rw.orderBy && next != "" {
		next = orderByTokenPrefix + queryKey(db.id, c.ID(), rw.text, params, pk) + ":" + next
	}
	q.queryHeaders(db, c, metrics, indexMetrics)
	q.rangeHeaders(l, rangeID, false)
	q.replyFeed(ridString(containerRID(db.id, c.ID())), "Documents", items, next, charge)
}

// queryHeaders sets the headers of a page of a query over c's documents
// but its continuation: the session token, the content paths, and the
// query metrics (when asked for) and index metrics (when there are any).
func (q *request) queryHeaders(db *database, c *lethe.Container, metrics, indexMetrics string) {
	hdr := q.w.Header()
	setHeader(hdr, "x-ms-session-token", q.sessionToken(false))
	setHeader(hdr, "x-ms-alt-content-path", "dbs/"+db.id+"/colls/"+c.ID())
	setHeader(hdr, "x-ms-content-path", ridString(containerRID(db.id, c.ID())))
	if headerTrue(q.r.Header.Get("x-ms-documentdb-populatequerymetrics")) {
		setHeader(hdr, "x-ms-documentdb-query-metrics", metrics)
	}
	if indexMetrics != "" {
		setHeader(hdr, "x-ms-cosmos-index-utilization", base64.StdEncoding.EncodeToString([]byte(indexMetrics)))
	}
}

// readsInOrder reports whether the query q with params makes its results
// document by document in the documents' order, with no TOP or LIMIT to
// end it: the service's backend then pages without looking ahead.
func readsInOrder(q *query.Query, params map[string]json.RawMessage) bool {
	_, full, ok := q.InItemOrder(queryspec.Spec{Params: params}.Values())
	return ok && full < 0
}

// endTokenPrefix begins the continuation of a full page after which no
// result follows: lethe's own tokens are base64url, without ':'.
const endTokenPrefix = "end:"

// endToken returns the continuation of a full page of the query text with
// params over the partition pk of container cid of database dbid after
// which no result follows: endTokenPrefix and a hash of them, so that it
// answers only the same query (the empty page it brings reads nothing).
func endToken(dbid, cid, text string, params map[string]json.RawMessage, pk lethe.PartitionKey) string {
	return endTokenPrefix + queryKey(dbid, cid, text, params, pk)
}

// queryKey is a hash of the query text with params over the partition pk
// of container cid of database dbid, in hexadecimal.
func queryKey(dbid, cid, text string, params map[string]json.RawMessage, pk lethe.PartitionKey) string {
	h := fnv.New64a()
	for _, s := range []string{dbid, cid, text, pk.String()} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, name := range slices.Sorted(maps.Keys(params)) {
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write(params[name])
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// endPageCharge is the request charge of the empty page an end token
// brings, which the front answers without lethe: the nominal 1 RU of the
// front's other answers of its own.
const endPageCharge = 1

// emptyQueryMetrics are the query metrics of that page: it reads and
// returns nothing.
const emptyQueryMetrics = "totalExecutionTimeInMs=0.00;queryCompileTimeInMs=0.00;queryLogicalPlanBuildTimeInMs=0.00;" +
	"queryPhysicalPlanBuildTimeInMs=0.00;queryOptimizationTimeInMs=0.00;VMExecutionTimeInMs=0.00;indexLookupTimeInMs=0.00;" +
	"documentLoadTimeInMs=0.00;systemFunctionExecuteTimeInMs=0.00;userFunctionExecuteTimeInMs=0.00;retrievedDocumentCount=0;" +
	"retrievedDocumentSize=0;outputDocumentCount=0;outputDocumentSize=0;writeOutputTimeInMs=0.00;indexUtilizationRatio=0.00"
