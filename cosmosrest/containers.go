package cosmosrest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/lethedb/lethe"
)

// collBody is what the front reads of a container's properties.
type collBody struct {
	ID           *string         `json:"id"`
	DefaultTTL   json.RawMessage `json:"defaultTtl"`
	PartitionKey *struct {
		Paths     []string `json:"paths"`
		Kind      string   `json:"kind"`
		Version   int      `json:"version"`
		SystemKey bool     `json:"systemKey"`
	} `json:"partitionKey"`
	IndexingPolicy *struct {
		IndexingMode  string                   `json:"indexingMode"`
		IncludedPaths []lethe.IndexPath        `json:"includedPaths"`
		ExcludedPaths []lethe.IndexPath        `json:"excludedPaths"`
		Composite     [][]lethe.CompositeIndex `json:"compositeIndexes"`
		Vector        []lethe.VectorIndex      `json:"vectorIndexes"`
		FullText      []lethe.FullTextIndex    `json:"fullTextIndexes"`
		Spatial       []lethe.SpatialIndex     `json:"spatialIndexes"`
	} `json:"indexingPolicy"`
	GeospatialConfig      *lethe.GeospatialConfig      `json:"geospatialConfig"`
	VectorEmbeddingPolicy *lethe.VectorEmbeddingPolicy `json:"vectorEmbeddingPolicy"`
	FullTextPolicy        *lethe.FullTextPolicy        `json:"fullTextPolicy"`
	UniqueKeyPolicy       *lethe.UniqueKeyPolicy       `json:"uniqueKeyPolicy"`
	ConflictPolicy        *conflictPolicyBody          `json:"conflictResolutionPolicy"`
}

// parseContainer reads a container's properties from a create or replace
// body. defaultTtl maps onto lethe's TTL exactly: absent is off, -1 is on
// without a default, n > 0 is n seconds; null, 0 and other negatives are
// refused, as Cosmos DB refuses them. An index path "/", the legacy
// syntax for the whole document, is read as "/*", as the service reads
// it.
func parseContainer(body []byte) (lethe.ContainerProperties, *collBody, error) {
	var in collBody
	if err := json.Unmarshal(body, &in); err != nil {
		return lethe.ContainerProperties{}, nil, messageError(withDetail(msgPayloadInvalid, "the body is not a JSON object of container properties: "+err.Error()))
	}
	var p lethe.ContainerProperties
	if in.ID != nil {
		p.ID = *in.ID
	}
	if raw := bytes.TrimSpace(in.DefaultTTL); len(raw) > 0 {
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n == 0 || n < -1 || n > math.MaxInt32 {
			return p, nil, messageError(fmt.Sprintf("The input defaultTtl '%s' is invalid. %s", clip(string(raw)), msgTTLValidRange))
		}
		p.DefaultTimeToLive = lethe.TTL(n)
	}
	if in.PartitionKey != nil {
		p.PartitionKeyDefinition = lethe.PartitionKeyDefinition{
			Paths:   in.PartitionKey.Paths,
			Kind:    lethe.PartitionKeyKind(in.PartitionKey.Kind),
			Version: in.PartitionKey.Version,
		}
		if len(p.PartitionKeyDefinition.Paths) == 0 || isSystemKey(in.PartitionKey.SystemKey, in.PartitionKey.Paths) {
			p.PartitionKeyDefinition = lethe.PartitionKeyDefinition{}
		}
	}
	if ip := in.IndexingPolicy; ip != nil && (ip.IndexingMode != "" || len(ip.IncludedPaths) > 0 || len(ip.ExcludedPaths) > 0 ||
		len(ip.Composite) > 0 || len(ip.Vector) > 0 || len(ip.FullText) > 0 || len(ip.Spatial) > 0) {
		p.IndexingPolicy = &lethe.IndexingPolicy{IndexingMode: lethe.IndexingMode(strings.ToLower(ip.IndexingMode)),
			IncludedPaths: legacyRoot(ip.IncludedPaths), ExcludedPaths: legacyRoot(ip.ExcludedPaths), CompositeIndexes: ip.Composite,
			VectorIndexes: ip.Vector, FullTextIndexes: ip.FullText, SpatialIndexes: ip.Spatial}
	}
	p.VectorEmbeddingPolicy, p.FullTextPolicy, p.GeospatialConfig = in.VectorEmbeddingPolicy, in.FullTextPolicy, in.GeospatialConfig
	p.UniqueKeyPolicy = in.UniqueKeyPolicy
	return p, &in, nil
}

// legacyRoot returns paths with "/", the spelling of every path in the
// indexing policies of Cosmos DB's first API versions (which the service
// still takes: @azure/cosmos's spatial spec sends it), as "/*".
func legacyRoot(paths []lethe.IndexPath) []lethe.IndexPath {
	for i, p := range paths {
		if p.Path == "/" {
			paths[i].Path = "/*"
		}
	}
	return paths
}

// etagPath is the path the service excludes from every consistent
// indexing policy, given or not.
const etagPath = `/"_etag"/?`

// containerJSON writes a container's properties as Cosmos DB does; the
// system properties are derived, never stored. A container without a
// partition key has no partitionKey, as the service writes it, or the
// system's when systemKey (seesSystemKey).
func containerJSON(db *database, p lethe.ContainerProperties, ts int64, systemKey bool) []byte {
	rid := containerRID(db.id, p.ID)
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	writeJSONString(&b, p.ID)
	mode := lethe.IndexingModeConsistent
	if p.IndexingPolicy != nil && p.IndexingPolicy.IndexingMode != "" {
		mode = p.IndexingPolicy.IndexingMode
	}
	if mode == lethe.IndexingModeNone {
		b.WriteString(`,"indexingPolicy":{"indexingMode":"none","automatic":false,"includedPaths":[],"excludedPaths":[]}`)
	} else {
		inc, exc := []lethe.IndexPath{{Path: "/*"}}, []lethe.IndexPath{}
		if ip := p.IndexingPolicy; ip != nil && (len(ip.IncludedPaths) > 0 || len(ip.ExcludedPaths) > 0) {
			inc, exc = nonNil(ip.IncludedPaths), slices.Clone(ip.ExcludedPaths)
		}
		if !slices.ContainsFunc(exc, func(x lethe.IndexPath) bool { return x.Path == etagPath }) {
			exc = append(exc, lethe.IndexPath{Path: etagPath})
		}
		incJSON, _ := json.Marshal(inc)
		excJSON, _ := json.Marshal(exc)
		fmt.Fprintf(&b, `,"indexingPolicy":{"indexingMode":%q,"automatic":true,"includedPaths":%s,"excludedPaths":%s`, mode, incJSON, excJSON)
		if ip := p.IndexingPolicy; ip != nil {
			writeJSONField(&b, "compositeIndexes", ip.CompositeIndexes, len(ip.CompositeIndexes) > 0)
			writeJSONField(&b, "vectorIndexes", ip.VectorIndexes, len(ip.VectorIndexes) > 0)
			writeJSONField(&b, "fullTextIndexes", ip.FullTextIndexes, len(ip.FullTextIndexes) > 0)
			writeJSONField(&b, "spatialIndexes", ip.SpatialIndexes, len(ip.SpatialIndexes) > 0)
		}
		b.WriteByte('}')
	}
	if vp := p.VectorEmbeddingPolicy; vp != nil {
		writeJSONField(&b, "vectorEmbeddingPolicy", lethe.VectorEmbeddingPolicy{VectorEmbeddings: nonNil(vp.VectorEmbeddings)}, true)
	}
	if fp := p.FullTextPolicy; fp != nil {
		writeJSONField(&b, "fullTextPolicy", lethe.FullTextPolicy{DefaultLanguage: fp.DefaultLanguage, FullTextPaths: nonNil(fp.FullTextPaths)}, true)
	}
	if def := p.PartitionKeyDefinition; len(def.Paths) > 0 {
		paths, _ := json.Marshal(def.Paths)
		kind := def.Kind
		if kind == "" {
			kind = lethe.PartitionKeyKindHash
		}
		version := def.Version
		if version == 0 {
			version = 2
		}
		fmt.Fprintf(&b, `,"partitionKey":{"paths":%s,"kind":%q,"version":%d}`, paths, kind, version)
	} else if systemKey {
		b.WriteString(systemKeyJSON)
	}
	var keys []lethe.UniqueKey
	if up := p.UniqueKeyPolicy; up != nil {
		keys = up.UniqueKeys
	}
	writeJSONField(&b, "uniqueKeyPolicy", lethe.UniqueKeyPolicy{UniqueKeys: nonNil(keys)}, true)
	if p.DefaultTimeToLive != lethe.TTLOff {
		fmt.Fprintf(&b, `,"defaultTtl":%d`, p.DefaultTimeToLive)
	}
	b.WriteString(`,"conflictResolutionPolicy":`)
	b.Write(db.conflictPolicy(p.ID).json())
	geoType := lethe.GeospatialGeography
	if p.GeospatialConfig != nil {
		geoType = p.GeospatialConfig.Type
	}
	writeJSONField(&b, "geospatialConfig", lethe.GeospatialConfig{Type: geoType}, true)
	fmt.Fprintf(&b, `,"_rid":%q,"_ts":%d,"_self":"dbs/%s/colls/%s/","_etag":%s`,
		ridString(rid), ts, ridString(db.rid), ridString(rid), strconv.Quote(quoteETag(containerETag(db, p, ts))))
	b.WriteString(`,"_docs":"docs/","_sprocs":"sprocs/","_triggers":"triggers/","_udfs":"udfs/","_conflicts":"conflicts/"}`)
	return b.Bytes()
}

// writeJSONField appends ,"name":v to b when present is true.
func writeJSONField(b *bytes.Buffer, name string, v any, present bool) {
	if !present {
		return
	}
	text, _ := json.Marshal(v) // lethe's policy types: cannot fail
	fmt.Fprintf(b, `,%q:%s`, name, text)
}

// nonNil returns s, or an empty slice for nil, which JSON writes as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// containerETag is a hash of the container's properties: it changes when
// they do.
func containerETag(db *database, p lethe.ContainerProperties, ts int64) string {
	mode := ""
	if p.IndexingPolicy != nil {
		mode = string(p.IndexingPolicy.IndexingMode)
	}
	search, _ := json.Marshal([]any{p.VectorEmbeddingPolicy, p.FullTextPolicy})
	return fmt.Sprintf("%016x", hash64("colletag", db.id, p.ID, strconv.FormatInt(ts, 10),
		p.DefaultTimeToLive.String(), mode, strings.Join(p.PartitionKeyDefinition.Paths, "\x00"),
		strconv.FormatInt(int64(p.Throughput), 10), strconv.FormatInt(int64(p.AutoscaleMaxThroughput), 10), string(search)))
}

// collTS returns when the container was created or last replaced through
// this handler; the handler's start for containers it found on disk.
func (q *request) collTS(db *database, id string) int64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	if ts, ok := db.collTS[id]; ok {
		return ts
	}
	return q.h.start.Unix()
}

func (q *request) setCollTS(db *database, id string, ts int64) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if ts < 0 {
		delete(db.collTS, id)
		return
	}
	db.collTS[id] = ts
}

func (q *request) createContainer() {
	db := q.database(subOwnerNotFound)
	if db == nil {
		return
	}
	p, in, err := parseContainer(q.body)
	if err == nil && p.ID == "" {
		err = messageError(msgIDMissing)
	}
	var policy conflictPolicy
	if err == nil {
		policy, err = parseConflictPolicy(in.ConflictPolicy)
	}
	if err == nil {
		p.Throughput, p.AutoscaleMaxThroughput, err = q.throughput()
	}
	p.ChangeFeedPolicy = q.h.feedPolicy()
	if err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return
	}
	ts := q.instant().Unix()
	c, err := db.store.CreateContainer(q.ctx(), p)
	if err != nil {
		q.fail(err, 0, subOwnerNotFound)
		return
	}
	q.setCollTS(db, p.ID, ts)
	if err := db.setConflictPolicy(p.ID, policy); err != nil {
		q.h.logFailure(q.r, http.StatusInternalServerError, err) // kept in memory: saved again at the next change
	}
	got, err := c.Read(q.ctx())
	if err != nil {
		q.fail(err, 0, 0)
		return
	}
	if err := db.setLayout(p.ID, newLayout(got, q.h.cfg.Ranges)); err != nil {
		// The file keeps a layout of a container of this id that is gone:
		// the next change of the database's ranges saves it again.
		q.h.logFailure(q.r, http.StatusInternalServerError, err)
	}
	q.containerHeaders(db, c)
	setHeader(q.w.Header(), "etag", quoteETag(containerETag(db, got, ts)))
	q.reply(http.StatusCreated, containerJSON(db, got, ts, q.seesSystemKey()), 2)
}

// container finds the request's container, or answers 404 and returns nil.
// sub is the substatus of a missing container (1003 when the request is
// for something in it).
func (q *request) container(sub int) (*database, *lethe.Container) {
	db := q.database(subOwnerNotFound)
	if db == nil {
		return nil, nil
	}
	c, err := db.store.Container(q.t.coll)
	if err != nil {
		q.fail(err, 0, sub)
		return nil, nil
	}
	return db, c
}

// containerHeaders sets the headers of a container response: its quota and
// usage, the state of its store's reaper (reaperHeader), and its paths.
func (q *request) containerHeaders(db *database, c *lethe.Container) {
	st := c.Stats()
	hdr := q.w.Header()
	setHeader(hdr, "x-ms-resource-quota", "functions=25;storedProcedures=100;triggers=25;documentSize=10240;documentsSize=10485760;documentsCount=-1;collectionSize=10485760;")
	kb := (st.Bytes + 1023) / 1024
	udfs, sprocs, triggers := db.scriptCounts(c.ID())
	setHeader(hdr, "x-ms-resource-usage", fmt.Sprintf("functions=%d;storedProcedures=%d;triggers=%d;documentSize=%d;documentsSize=%d;documentsCount=%d;collectionSize=%d;", udfs, sprocs, triggers, kb/1024, kb, st.Items, kb))
	setHeader(hdr, reaperHeader, reaperState(st))
	// A policy is in effect as soon as it is set (queries are answered
	// whole while an index is built), so its transformation is done, as
	// the service's header says once it is: the SDKs' specs look for it.
	setHeader(hdr, "x-ms-documentdb-collection-index-transformation-progress", "100")
	setHeader(hdr, "x-ms-alt-content-path", "dbs/"+db.id)
	setHeader(hdr, "x-ms-content-path", ridString(db.rid))
}

func (q *request) readContainer() {
	db, c, p, ok := q.containerProps(0)
	if !ok {
		return
	}
	ts := q.collTS(db, p.ID)
	body := containerJSON(db, p, ts, q.seesSystemKey())
	if headerTrue(q.r.Header.Get(populateStatsHeader)) {
		var err error
		if body, err = q.withRangeStatistics(body, c, q.layout(db, c, p)); err != nil {
			q.fail(err, 0, 0)
			return
		}
	}
	q.containerHeaders(db, c)
	setHeader(q.w.Header(), "etag", quoteETag(containerETag(db, p, ts)))
	q.reply(http.StatusOK, body, 1)
}

// ifMatch reports whether the request's If-Match header, if any, names
// etag; it answers 412 when it does not.
func (q *request) ifMatch(etag string) bool {
	v := q.r.Header.Get("If-Match")
	if v == "" || v == "*" || v == etag || v == quoteETag(etag) {
		return true
	}
	q.answerError(http.StatusPreconditionFailed, msgPrecondition)
	return false
}

func (q *request) replaceContainer() {
	db, c, cur, ok := q.containerProps(0)
	if !ok {
		return
	}
	if !q.ifMatch(containerETag(db, cur, q.collTS(db, cur.ID))) {
		return
	}
	p, in, err := parseContainer(q.body)
	if err == nil && p.ID != "" && p.ID != cur.ID {
		err = fmt.Errorf("the id in the body, %q, is not the container's, %q: a container cannot be renamed", clip(p.ID), clip(cur.ID))
	}
	if err == nil && in.ConflictPolicy != nil {
		err = checkConflictPolicyKept(in.ConflictPolicy, db.conflictPolicy(cur.ID))
	}
	if err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return
	}
	p.ID = cur.ID
	if in.PartitionKey == nil || len(p.PartitionKeyDefinition.Paths) == 0 {
		p.PartitionKeyDefinition = cur.PartitionKeyDefinition
	}
	if in.UniqueKeyPolicy == nil { // left out: kept, as the partition key is
		p.UniqueKeyPolicy = cur.UniqueKeyPolicy
	}
	p.Throughput, p.AutoscaleMaxThroughput = cur.Throughput, cur.AutoscaleMaxThroughput
	p.ChangeFeedPolicy = cur.ChangeFeedPolicy
	if err := c.ReplaceAt(q.ctx(), p, q.instant()); err != nil {
		q.fail(err, 0, 0)
		return
	}
	got, err := c.Read(q.ctx())
	if err != nil {
		q.fail(err, 0, 0)
		return
	}
	ts := q.instant().Unix()
	q.setCollTS(db, got.ID, ts)
	q.containerHeaders(db, c)
	setHeader(q.w.Header(), "etag", quoteETag(containerETag(db, got, ts)))
	q.reply(http.StatusOK, containerJSON(db, got, ts, q.seesSystemKey()), 10)
}

func (q *request) deleteContainer() {
	db, c := q.container(0)
	if c == nil {
		return
	}
	if q.r.Header.Get("If-Match") != "" {
		cur, err := c.Read(q.ctx())
		if err != nil {
			q.fail(err, 0, 0)
			return
		}
		if !q.ifMatch(containerETag(db, cur, q.collTS(db, cur.ID))) {
			return
		}
	}
	// The container's permissions are orphaned before it goes, so that no
	// token of theirs ever reaches a container created again under its id;
	// if the delete then fails, they are restored.
	db.mu.Lock()
	err := db.orphanPermissionsLocked(q.t.coll, true)
	db.mu.Unlock()
	if err != nil {
		q.fail(err, 0, 0)
		return
	}
	if err := db.store.DeleteContainer(q.ctx(), q.t.coll); err != nil {
		db.mu.Lock()
		if rerr := db.orphanPermissionsLocked(q.t.coll, false); rerr != nil {
			q.h.cfg.Logger.Error("restoring the permissions of a container whose delete failed", "database", db.id, "container", q.t.coll, "err", rerr)
		}
		db.mu.Unlock()
		q.fail(err, 0, 0)
		return
	}
	q.setCollTS(db, q.t.coll, -1)
	if err := db.dropConflicts(q.t.coll); err != nil {
		q.h.logFailure(q.r, http.StatusInternalServerError, err)
	}
	db.docRIDs.forget(q.t.coll)
	_ = db.setLayout(q.t.coll, nil) // no save: never fails
	if err := db.dropScripts(q.t.coll); err != nil {
		// The container is gone; its scripts stay in the file until the
		// next change of the database's scripts saves it again, and are
		// dropped when it is read at start (dropOrphanScripts).
		q.h.logFailure(q.r, http.StatusInternalServerError, err)
	}
	q.reply(http.StatusNoContent, nil, 2)
}

// containerDocs returns the properties of the database's containers.
func (q *request) containerDocs(db *database) []metaDoc {
	var docs []metaDoc
	for _, id := range db.store.ContainerIDs() {
		c, err := db.store.Container(id)
		if err != nil {
			continue // deleted meanwhile
		}
		p, err := c.Read(q.ctx())
		if err != nil {
			continue
		}
		docs = append(docs, metaDoc{id, containerJSON(db, p, q.collTS(db, id), q.seesSystemKey())})
	}
	return docs
}

func (q *request) listContainers() {
	db := q.database(0)
	if db == nil {
		return
	}
	var out [][]byte
	for _, d := range q.containerDocs(db) {
		out = append(out, d.json)
	}
	q.replyFeed(ridString(db.rid), "DocumentCollections", out, "", 1)
}

func (q *request) queryContainers() {
	db := q.database(0)
	if db == nil {
		return
	}
	q.metaQuery(ridString(db.rid), "DocumentCollections", q.containerDocs(db))
}

// partitionKeyRanges answers the partition key ranges of a container
// (pkranges.go), or one of them by id. The SDKs read the ranges as a
// change feed (A-IM: Incremental Feed) until 304 Not Modified, so a
// request whose If-None-Match names the ranges' ETag, their layout's
// version, gets 304.
func (q *request) partitionKeyRanges() {
	db, c := q.container(subOwnerNotFound)
	if c == nil {
		return
	}
	p, err := c.Read(q.ctx())
	if err != nil {
		q.fail(err, 0, subOwnerNotFound)
		return
	}
	l := q.layout(db, c, p)
	coll := containerRID(db.id, c.ID())
	etag := `"` + strconv.FormatUint(l.lsn, 10) + `"`
	setHeader(q.w.Header(), "etag", etag)
	setHeader(q.w.Header(), "x-ms-alt-content-path", "dbs/"+db.id+"/colls/"+c.ID())
	setHeader(q.w.Header(), "x-ms-content-path", ridString(coll))
	if inm := q.r.Header.Get("If-None-Match"); inm == etag || inm == strings.Trim(etag, `"`) {
		q.reply(http.StatusNotModified, nil, 1)
		return
	}
	ts := q.collTS(db, c.ID())
	if q.t.kind == tPKRange {
		for i, r := range l.ranges {
			if r.id == q.t.id {
				q.reply(http.StatusOK, rangeJSON(db, coll, l, i, ts), 1)
				return
			}
		}
		q.answerError(http.StatusNotFound, msgResourceNotFound)
		return
	}
	docs := make([][]byte, len(l.ranges))
	for i := range l.ranges {
		docs[i] = rangeJSON(db, coll, l, i, ts)
	}
	q.replyFeed(ridString(coll), "PartitionKeyRanges", docs, "", 1)
}

// reaperHeader is lethe's own header on container responses (create, read,
// replace): what the reaper has left to do in the container and what it
// has done, for tools such as the command's data explorer. It is read-only
// and signed as the container read that carries it; Cosmos DB has no such
// header, and the SDKs ignore it.
const reaperHeader = "x-ms-lethe-reaper"

// reaperState is the value of reaperHeader, in the form of
// x-ms-resource-usage: expiredPending (expired items not yet purged, the
// reaper's backlog), purgeLagMs (how long ago the oldest of them expired),
// purged (items purged since the store opened) and requestCharge (the
// request units the reaper has spent), each "name=value;".
func reaperState(st lethe.ContainerStats) string {
	return fmt.Sprintf("expiredPending=%d;purgeLagMs=%d;purged=%d;requestCharge=%s;",
		st.ExpiredPending, st.PurgeLag.Milliseconds(), st.Purged, strconv.FormatFloat(st.ReaperCharge, 'f', -1, 64))
}
