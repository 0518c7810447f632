package lethe

import (
	"context"
	"slices"
	"strings"
	"unsafe"

	"github.com/lethedb/lethe/internal/fulltext"
	"github.com/lethedb/lethe/internal/query"
)

// Vector and full-text policies. A container's VectorEmbeddingPolicy says
// which paths of its items hold vectors (their element type, the distance
// function that compares them, their length), and its FullTextPolicy which
// paths hold text to search (and its language). The IndexingPolicy's
// VectorIndexes and FullTextIndexes index paths those policies declare.
// lethe keeps, validates and returns them as Cosmos DB does. The full-text
// functions of queries read the languages of the full-text policy
// (FullTextPolicy.language), VectorDistance the distance function and
// element type of a path's embedding (VectorEmbeddingPolicy.embedding).
// Items are not checked against the vector policy when written, as Cosmos
// DB does not check them: a vector of another length or type is kept, and
// VectorDistance is undefined for it.

// VectorEmbeddingPolicy declares the paths of a container's items that hold
// vectors, one VectorEmbedding per path.
type VectorEmbeddingPolicy struct {
	VectorEmbeddings []VectorEmbedding `json:"vectorEmbeddings"`
}

// VectorEmbedding describes the vectors at one path ("/embedding"; no
// wildcards, no arrays): the type of their elements (float32 when empty),
// the function that measures the distance between two of them (cosine when
// empty) and their number of elements (1536 when zero), as Cosmos DB's
// defaults are. Once the container has it, an embedding's settings cannot
// change: Replace may add paths and remove them, not change one.
type VectorEmbedding struct {
	Path             string                 `json:"path"`
	DataType         VectorDataType         `json:"dataType"`
	DistanceFunction VectorDistanceFunction `json:"distanceFunction"`
	Dimensions       uint32                 `json:"dimensions"`
}

// VectorDataType is the type of a vector's elements.
type VectorDataType string

// The vector element types Cosmos DB documents. Any case is accepted; the
// container keeps them in this form.
const (
	VectorDataTypeFloat32 VectorDataType = "float32"
	VectorDataTypeFloat16 VectorDataType = "float16"
	VectorDataTypeInt8    VectorDataType = "int8"
	VectorDataTypeUint8   VectorDataType = "uint8"
)

// VectorDistanceFunction is how the distance between two vectors is measured.
type VectorDistanceFunction string

// The distance functions. Any case is accepted; the container keeps them in
// this form.
const (
	VectorDistanceFunctionCosine     VectorDistanceFunction = "cosine"
	VectorDistanceFunctionDotProduct VectorDistanceFunction = "dotproduct"
	VectorDistanceFunctionEuclidean  VectorDistanceFunction = "euclidean"
)

// VectorIndex indexes the vectors at a path of the container's
// VectorEmbeddingPolicy. Its type bounds the vectors' dimensions: a flat
// index takes at most 505, quantizedFlat and diskANN at most 4,096. Like an
// embedding, a vector index's type cannot change once the container has it.
// flat and quantizedFlat indexes are exact in lethe (quantizedFlat keeps
// the vectors unquantized); a diskANN index is a graph whose searches are
// approximate, as the service's are.
type VectorIndex struct {
	Path string          `json:"path"`
	Type VectorIndexType `json:"type"`
}

// VectorIndexType is the kind of a vector index.
type VectorIndexType string

// The vector index types. Any case is accepted; the container keeps them in
// this form.
const (
	VectorIndexTypeFlat          VectorIndexType = "flat"
	VectorIndexTypeQuantizedFlat VectorIndexType = "quantizedFlat"
	VectorIndexTypeDiskANN       VectorIndexType = "diskANN"
)

// FullTextPolicy declares the paths of a container's items that hold text to
// search, and their language. DefaultLanguage is "en-US" when empty.
type FullTextPolicy struct {
	DefaultLanguage string         `json:"defaultLanguage"`
	FullTextPaths   []FullTextPath `json:"fullTextPaths"`
}

// FullTextPath is a path holding text ("/description"; no wildcards, no
// arrays) and the text's language: the policy's DefaultLanguage when empty.
// The languages are those of Cosmos DB: en-US (generally available), and
// de-DE, es-ES, fr-FR, it-IT, pt-PT and pt-BR (in preview); any case is
// accepted and kept in this form.
type FullTextPath struct {
	Path     string `json:"path"`
	Language string `json:"language"`
}

// FullTextIndex indexes the text at a path of the container's FullTextPolicy.
type FullTextIndex struct {
	Path string `json:"path"`
}

// language returns the language of the text at path (its property names)
// for the full-text functions: the path's, when the policy lists it, else
// the policy's default.
func (fp *FullTextPolicy) language(path []string) string {
	for _, tp := range fp.FullTextPaths {
		if policyPathIs(tp.Path, path) {
			return tp.Language
		}
	}
	return fp.DefaultLanguage
}

// embedding returns the distance function and element type of the
// vectors at path (its property names) for VectorDistance, or "", "" when
// the policy does not list it.
func (vp *VectorEmbeddingPolicy) embedding(path []string) (distanceFunction, dataType string) {
	for _, e := range vp.VectorEmbeddings {
		if policyPathIs(e.Path, path) {
			return string(e.DistanceFunction), string(e.DataType)
		}
	}
	return "", ""
}

// policyPathIs reports whether the policy path p ("/a/b") names path.
func policyPathIs(p string, path []string) bool {
	for _, name := range path {
		if strings.Contains(name, "/") || !strings.HasPrefix(p, "/") || !strings.HasPrefix(p[1:], name) {
			return false
		}
		p = p[1+len(name):]
	}
	return p == ""
}

// policyKey returns the key of path's vector or full-text index: the
// policy path that names it, without its leading slash. ok is false when a
// name in path holds a slash, which no policy path can name (policyPathIs):
// the property "a/b" is not the path /a/b.
func policyKey(path []string) (key string, ok bool) {
	for _, name := range path {
		if strings.Contains(name, "/") {
			return "", false
		}
	}
	return strings.Join(path, "/"), true
}

// The defaults and limits of the vector policies, as Cosmos DB documents them.
const (
	defaultVectorDimensions = 1536
	maxFlatDimensions       = 505
	maxVectorIndexDims      = 4096
	defaultTextLanguage     = "en-US"
)

// textLanguages are the languages a full-text path may have.
var textLanguages = []string{"en-US", "de-DE", "es-ES", "fr-FR", "it-IT", "pt-PT", "pt-BR"}

// canonical returns the element of names equal to s in any case, and
// whether there is one.
func canonical[S ~string](s S, names ...S) (S, bool) {
	for _, n := range names {
		if strings.EqualFold(string(s), string(n)) {
			return n, true
		}
	}
	return s, false
}

// normalizeSearchPolicies checks p's vector embedding and full-text
// policies, and the vector and full-text indexes of its indexing policy, and
// fills in their defaults and canonical spellings. p's policies are its own
// copies (normalizeProps clones them first).
func normalizeSearchPolicies(p *ContainerProperties) *Error {
	vectors := map[string]VectorEmbedding{}
	if vp := p.VectorEmbeddingPolicy; vp != nil {
		for i := range vp.VectorEmbeddings {
			e := &vp.VectorEmbeddings[i]
			if err := checkPolicyPath("vector embedding", e.Path); err != nil {
				return err
			}
			if _, dup := vectors[e.Path]; dup {
				return badRequest("the vector embedding policy lists the path %q twice: a path has at most one embedding", e.Path)
			}
			if e.DataType == "" {
				e.DataType = VectorDataTypeFloat32
			}
			var ok bool
			if e.DataType, ok = canonical(e.DataType, VectorDataTypeFloat32, VectorDataTypeFloat16, VectorDataTypeInt8, VectorDataTypeUint8); !ok {
				return badRequest("the vector embedding of path %q has the data type %q: use float32, float16, int8 or uint8", e.Path, e.DataType)
			}
			if e.DistanceFunction == "" {
				e.DistanceFunction = VectorDistanceFunctionCosine
			}
			if e.DistanceFunction, ok = canonical(e.DistanceFunction, VectorDistanceFunctionCosine, VectorDistanceFunctionDotProduct, VectorDistanceFunctionEuclidean); !ok {
				return badRequest("the vector embedding of path %q has the distance function %q: use cosine, dotproduct or euclidean", e.Path, e.DistanceFunction)
			}
			if e.Dimensions == 0 {
				e.Dimensions = defaultVectorDimensions
			}
			vectors[e.Path] = *e
		}
	}
	texts := map[string]bool{}
	if fp := p.FullTextPolicy; fp != nil {
		if fp.DefaultLanguage == "" {
			fp.DefaultLanguage = defaultTextLanguage
		}
		var ok bool
		if fp.DefaultLanguage, ok = canonical(fp.DefaultLanguage, textLanguages...); !ok {
			return badRequest("the full-text policy's default language %q is not supported: use %s", fp.DefaultLanguage, strings.Join(textLanguages, ", "))
		}
		for i := range fp.FullTextPaths {
			tp := &fp.FullTextPaths[i]
			if err := checkPolicyPath("full-text", tp.Path); err != nil {
				return err
			}
			if texts[tp.Path] {
				return badRequest("the full-text policy lists the path %q twice", tp.Path)
			}
			texts[tp.Path] = true
			if tp.Language == "" {
				tp.Language = fp.DefaultLanguage
			}
			if tp.Language, ok = canonical(tp.Language, textLanguages...); !ok {
				return badRequest("the full-text path %q has the language %q, which is not supported: use %s", tp.Path, tp.Language, strings.Join(textLanguages, ", "))
			}
		}
	}
	ip := p.IndexingPolicy
	if ip == nil {
		return nil
	}
	if ip.IndexingMode == IndexingModeNone && (len(ip.VectorIndexes) > 0 || len(ip.FullTextIndexes) > 0) {
		return badRequest("a container whose indexing mode is none keeps no indexes: it cannot have vector or full-text indexes")
	}
	seen := map[string]bool{}
	for i := range ip.VectorIndexes {
		vi := &ip.VectorIndexes[i]
		e, ok := vectors[vi.Path]
		if !ok {
			return badRequest("the vector index path %q is not a path of the container's vector embedding policy", vi.Path)
		}
		if seen[vi.Path] {
			return badRequest("the indexing policy lists the vector index path %q twice", vi.Path)
		}
		seen[vi.Path] = true
		if vi.Type, ok = canonical(vi.Type, VectorIndexTypeFlat, VectorIndexTypeQuantizedFlat, VectorIndexTypeDiskANN); !ok {
			return badRequest("the vector index of path %q has the type %q: use flat, quantizedFlat or diskANN", vi.Path, vi.Type)
		}
		limit := uint32(maxVectorIndexDims)
		if vi.Type == VectorIndexTypeFlat {
			limit = maxFlatDimensions
		}
		if e.Dimensions > limit {
			return badRequest("the vector index of path %q is %s, which takes vectors of at most %d dimensions, and the path's have %d", vi.Path, vi.Type, limit, e.Dimensions)
		}
	}
	clear(seen)
	for _, ti := range ip.FullTextIndexes {
		if !texts[ti.Path] {
			return badRequest("the full-text index path %q is not a path of the container's full-text policy", ti.Path)
		}
		if seen[ti.Path] {
			return badRequest("the indexing policy lists the full-text index path %q twice", ti.Path)
		}
		seen[ti.Path] = true
	}
	return nil
}

// checkPolicyPath checks a path of a vector embedding or full-text policy:
// a property path such as "/a/b", without the wildcards and array steps
// Cosmos DB does not support there.
func checkPolicyPath(what, path string) *Error {
	if strings.ContainsAny(path, "*?") || strings.Contains(path, "[]") {
		return badRequest("the %s path %q is invalid: wildcards (*, ?) and arrays ([]) are not supported", what, path)
	}
	if _, err := parseIndexPath(path + "/?"); err != nil {
		return badRequest(`the %s path %q is invalid: it must be a property path such as "/embedding" or "/a/b"`, what, path)
	}
	return nil
}

// searchPolicyChange refuses a replacement of a container's properties,
// old, by next that changes the settings of a vector embedding or the type
// of a vector index the container has: as in Cosmos DB, a path may be added
// or removed, and one to change must be removed first, then added back.
// Both are normalized.
func searchPolicyChange(old, next ContainerProperties) *Error {
	if old.VectorEmbeddingPolicy != nil && next.VectorEmbeddingPolicy != nil {
		for _, e := range next.VectorEmbeddingPolicy.VectorEmbeddings {
			i := slices.IndexFunc(old.VectorEmbeddingPolicy.VectorEmbeddings, func(o VectorEmbedding) bool { return o.Path == e.Path })
			if i >= 0 && old.VectorEmbeddingPolicy.VectorEmbeddings[i] != e {
				o := old.VectorEmbeddingPolicy.VectorEmbeddings[i]
				return badRequest("the vector embedding of path %q cannot be changed (from %s, %s, %d dimensions to %s, %s, %d): remove the path, then add it back",
					e.Path, o.DataType, o.DistanceFunction, o.Dimensions, e.DataType, e.DistanceFunction, e.Dimensions)
			}
		}
	}
	if old.IndexingPolicy != nil && next.IndexingPolicy != nil {
		for _, vi := range next.IndexingPolicy.VectorIndexes {
			i := slices.IndexFunc(old.IndexingPolicy.VectorIndexes, func(o VectorIndex) bool { return o.Path == vi.Path })
			if i >= 0 && old.IndexingPolicy.VectorIndexes[i].Type != vi.Type {
				return badRequest("the vector index of path %q cannot be changed (from %s to %s): remove it, then add it back",
					vi.Path, old.IndexingPolicy.VectorIndexes[i].Type, vi.Type)
			}
		}
	}
	return nil
}

// cloneSearchPolicies makes p's vector embedding and full-text policies, and
// its indexing policy's vector and full-text indexes, copies of their own.
// p.IndexingPolicy is already p's own.
func cloneSearchPolicies(p *ContainerProperties) {
	if vp := p.VectorEmbeddingPolicy; vp != nil {
		p.VectorEmbeddingPolicy = &VectorEmbeddingPolicy{VectorEmbeddings: slices.Clone(vp.VectorEmbeddings)}
	}
	if fp := p.FullTextPolicy; fp != nil {
		p.FullTextPolicy = &FullTextPolicy{DefaultLanguage: fp.DefaultLanguage, FullTextPaths: slices.Clone(fp.FullTextPaths)}
	}
	if ip := p.IndexingPolicy; ip != nil {
		ip.VectorIndexes = slices.Clone(ip.VectorIndexes)
		ip.FullTextIndexes = slices.Clone(ip.FullTextIndexes)
	}
}

// hasVectorIndexes reports whether props' indexing policy has vector
// indexes.
func hasVectorIndexes(props ContainerProperties) bool {
	return props.IndexingPolicy != nil && len(props.IndexingPolicy.VectorIndexes) > 0
}

// vectorIndexesOnShared refuses vector indexes in a store with shared
// throughput: Cosmos DB does not support vector indexing and search on
// shared-throughput databases.
func vectorIndexesOnShared(s *Store, props ContainerProperties) *Error {
	if !s.SharedThroughput() || !hasVectorIndexes(props) {
		return nil
	}
	return badRequest("vector indexes are not supported in a database with shared throughput (the store's Throughput or AutoscaleMaxThroughput): index %q in a database without it", props.IndexingPolicy.VectorIndexes[0].Path)
}

// Full-text indexes. For each path of the IndexingPolicy's FullTextIndexes
// (a path of the FullTextPolicy), a container keeps an inverted index
// (fulltext.Index) of the text of every item whose value at the path is a
// string, analyzed in the path's language: made the first time a query
// asks, as the other indexes are (indexbuild.go), and kept up to date by
// every change after (indexItemsLocked, under the expiry lock). Like the
// expiry index, it holds expired items until the reaper purges them;
// queries leave them out.
//
// A filter of FullTextContains, FullTextContainsAll or FullTextContainsAny
// (query.TextFilter) takes its candidates from the postings: the items
// whose text holds every term of a search string (every string, or one
// for Any); the query then decides on them, so its results are a scan's.
//
// SELECT TOP k ... ORDER BY RANK FullTextScore(c.path, ...)
// (query.TextTopK) scores the items from the postings of the search
// terms, with BM25 statistics of the items live at the query's instant
// (the index's counts, less those of the expired items it still holds),
// keeps the k best live ones and every one tied with the k-th, and
// evaluates the query on them alone, with those same statistics: its
// results, their projection and their order are a scan's. When a WHERE
// clause drops some, it scores four times as many, and so on; when fewer
// items than k hold a term (the others come last, in item order), the
// query scans. The scoring holds the expiry lock, as a vector index's
// comparison does, so the container's writes wait for it.

// textIndex is the full-text index of one path.
type textIndex struct {
	key  string // the path, "/"-joined: its name in the container's map
	path []string
	ix   *fulltext.Index
	doc  map[*byte]int32 // each record's document in ix, by the address of its bytes
	recs []record        // the records, by document
}

// textIndexes are a container's full-text indexes, by path ("/"-joined).
type textIndexes map[string]*textIndex

// change makes ti follow one item change: old ("" if none) goes, rec (""
// if none) comes. Replaying a change changes nothing (indexbuild.go).
func (ti *textIndex) change(old, rec record) {
	if old != "" {
		if d, ok := ti.doc[recAddr(old)]; ok {
			ti.ix.Remove(d)
			ti.recs[d] = ""
			delete(ti.doc, recAddr(old))
		}
	}
	if rec == "" {
		return
	}
	if _, ok := ti.doc[recAddr(rec)]; ok {
		return
	}
	body := rec.body()
	text, ok := query.TextAt(unsafe.Slice(unsafe.StringData(body), len(body)), ti.path)
	if !ok {
		return
	}
	d := ti.ix.Add(text)
	if int(d) == len(ti.recs) {
		ti.recs = append(ti.recs, rec)
	} else {
		ti.recs[d] = rec
	}
	ti.doc[recAddr(rec)] = d
}

// update makes the full-text indexes follow one item change. The caller
// holds the expiry lock.
func (ts textIndexes) update(old, rec record) {
	for _, ti := range ts {
		ti.change(old, rec)
	}
}

// textSettings returns the language of the text at path when props has a
// full-text index of the path; ok is false otherwise.
func textSettings(props *ContainerProperties, path []string) (lang string, ok bool) {
	ip, fp := props.IndexingPolicy, props.FullTextPolicy
	if ip == nil || fp == nil || !slices.ContainsFunc(ip.FullTextIndexes, func(x FullTextIndex) bool { return policyPathIs(x.Path, path) }) {
		return "", false
	}
	return fp.language(path), true
}

// dropTextsLocked forgets the full-text indexes that props no longer
// declares as they were made. The caller holds the expiry lock.
func (c *Container) dropTextsLocked(props *ContainerProperties) {
	for k, ti := range c.expiry.texts {
		if lang, ok := textSettings(props, ti.path); !ok || lang != ti.ix.Lang() {
			delete(c.expiry.texts, k)
		}
	}
}

// textIndexFor returns the full-text index of path, making it if the
// container's policy declares one; nil if it does not, or if another
// query is making it (this one scans meanwhile). The caller holds
// c.batchMu for reading and no other lock.
func (c *Container) textIndexFor(path []string) *textIndex {
	key, ok := policyKey(path)
	if !ok {
		return nil
	}
	bkey := "t:" + key
	c.expiry.mu.Lock()
	if ti := c.expiry.texts[key]; ti != nil {
		c.expiry.mu.Unlock()
		return ti
	}
	lang, ok := textSettings(&c.props, path)
	if !ok {
		c.expiry.mu.Unlock()
		return nil
	}
	b, n := c.startBuildLocked(bkey)
	c.expiry.mu.Unlock()
	if b == nil {
		return nil
	}
	n += n/8 + 16 // room for the writes made meanwhile and soon after
	ti := &textIndex{key: key, path: path, ix: fulltext.NewIndex(lang), doc: make(map[*byte]int32, n), recs: make([]record, 0, n)}
	c.scanForBuild(func(rec record) { ti.change("", rec) })
	c.catchUp(b, ti.change)
	defer c.expiry.mu.Unlock()
	if !c.finishBuildLocked(bkey, b) {
		return nil
	}
	if lang2, ok := textSettings(&c.props, path); !ok || lang2 != lang {
		return nil
	}
	if c.expiry.texts == nil {
		c.expiry.texts = textIndexes{}
	}
	c.expiry.texts[key] = ti
	return ti
}

// textStatsLocked returns the statistics FullTextScore scores ti's text
// by, for terms: those of the items live at now by rule, which are the
// index's less those of the expired items it holds (the expired prefix of
// the expiry index). The caller holds the expiry lock.
func (c *Container) textStatsLocked(ti *textIndex, terms []string, rule *expiryRule, now int64) query.TextStats {
	st := query.TextStats{Docs: ti.ix.Docs(), Terms: int(ti.ix.TotalTerms()), DF: make([]int, len(terms))}
	for i, t := range terms {
		st.DF[i] = len(ti.ix.Postings(t))
	}
	ci, co := cutoffs(rule, now)
	expired := func(e expiryEntry) bool {
		d, ok := ti.doc[recAddr(e.rec)]
		if !ok {
			return true
		}
		st.Docs--
		st.Terms -= ti.ix.Len(d)
		for i, t := range terms {
			if ti.ix.TF(d, t) > 0 {
				st.DF[i]--
			}
		}
		return true
	}
	for i := range c.shards {
		sh := &c.shards[i]
		sh.x.Lock()
		sh.expiry.inherit.t.AscendLessThan(ci, expired)
		sh.expiry.own.t.AscendLessThan(co, expired)
		sh.x.Unlock()
	}
	return st
}

// searchTerms returns the distinct terms of search strings in lang, in
// the order they first appear, as FullTextScore takes them.
func searchTerms(strs []string, lang string) []string {
	var terms []string
	for _, s := range strs {
		for _, t := range fulltext.Terms(s, lang) {
			if !slices.Contains(terms, t) {
				terms = append(terms, t)
			}
		}
	}
	return terms
}

// bestTexts returns the records of the want items live at now, in the
// partitions whose key begins with pk, that score best for terms in ti,
// and every item tied with the last of them, with the statistics they were
// scored by and the expiry rule of the same instant. all reports whether
// they are every such item that holds a term; ok is false when a policy
// change has dropped the index meanwhile. The caller holds c.batchMu for
// reading.
func (c *Container) bestTexts(ti *textIndex, terms []string, want int, pk PartitionKey, now int64) (recs []record, st query.TextStats, rule expiryRule, all, ok bool) {
	c.expiry.mu.Lock()
	defer c.expiry.mu.Unlock()
	if c.expiry.texts[ti.key] != ti {
		return nil, st, rule, false, false
	}
	rule = c.rule
	st = c.textStatsLocked(ti, terms, &rule, now)
	idf, avg := fulltext.Weights(st.Docs, st.Terms, st.DF, len(terms))
	best, all := ti.ix.TopK(terms, idf, avg, want, func(d int32) bool {
		rec := ti.recs[d]
		return rule.live(rec, now) && strings.HasPrefix(rec.pk(), pk.enc)
	})
	recs = make([]record, len(best))
	for i, b := range best {
		recs[i] = ti.recs[b.Doc]
	}
	return recs, st, rule, all, true
}

// runText evaluates a query ranked by FullTextScore (query.TextTopK) on
// the items a full-text index scores best, when the container has one of
// the path and the results fit in one page. ok is false, with no error,
// when it cannot (the query is evaluated as usual).
func (c *Container) runText(ctx context.Context, q *query.Query, params map[string]any, pk PartitionKey, now int64, from *query.Resume, page int, env *query.Env) (res query.Result, recs []record, ok bool, err error) {
	if !c.store.useIndexes() || from != nil {
		return res, nil, false, nil
	}
	path, strs, need, full, ok := q.TextTopK(params)
	if !ok || need == 0 || (page > 0 && need > page) {
		return res, nil, false, nil
	}
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	ti := c.textIndexFor(path)
	if ti == nil {
		return res, nil, false, nil
	}
	lang := ti.ix.Lang()
	if env.TextLanguage != nil && env.TextLanguage(path) != lang {
		return res, nil, false, nil // the query began under another policy
	}
	terms := searchTerms(strs, lang)
	for want := need; ; want *= 4 {
		cands, st, rule, all, ok := c.bestTexts(ti, terms, want, pk, now)
		if !ok || all && len(cands) < need {
			return res, nil, false, nil
		}
		// The evaluation scores by the statistics the index scored by.
		scanStats, qenv := env.TextStats, *env
		qenv.TextStats = func(p []string, l string, t []string) query.TextStats {
			if slices.Equal(p, path) && l == lang && slices.Equal(t, terms) || scanStats == nil {
				return st
			}
			return scanStats(p, l, t)
		}
		res, recs, err = execOn(ctx, q, params, pk, now, cands, rule, nil, &qenv)
		if err != nil || len(res.Items) >= full {
			return res, recs, true, err
		}
		if all {
			return res, nil, false, nil // fewer results than asked: unranked items follow
		}
	}
}

// textDocs is queryDocs through a full-text index, when q's WHERE clause
// has a full-text filter (query.TextFilter) on a path the container's
// policy indexes: the live items whose text holds the search terms. It
// holds the batch lock for reading, as liveDocs does.
func (c *Container) textDocs(q *query.Query, params map[string]any, pk PartitionKey, now int64, plan *indexPlan) ([]query.Doc, []record, bool) {
	filters := q.TextFilters(params)
	if len(filters) == 0 {
		return nil, nil, false
	}
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	for _, f := range filters {
		ti := c.textIndexFor(f.Path)
		if ti == nil {
			continue
		}
		c.expiry.mu.Lock()
		if c.expiry.texts[ti.key] != ti {
			c.expiry.mu.Unlock()
			continue // dropped meanwhile by a policy change
		}
		rule := c.rule
		var docs []int32
		add := func(d int32) { docs = append(docs, d) }
		if f.Any {
			for _, s := range f.Strings {
				ti.ix.Containing(fulltext.Terms(s, ti.ix.Lang()), add)
			}
			slices.Sort(docs)
			docs = slices.Compact(docs)
		} else {
			var terms []string
			for _, s := range f.Strings {
				st := fulltext.Terms(s, ti.ix.Lang())
				if len(st) == 0 {
					terms = nil // a string with no terms is found nowhere
					break
				}
				terms = append(terms, st...)
			}
			ti.ix.Containing(terms, add)
		}
		recs := make([]record, len(docs))
		for i, d := range docs {
			recs[i] = ti.recs[d]
		}
		c.expiry.mu.Unlock()
		plan.used = indexSpec(f.Path)
		qdocs, live := liveOf(recs, rule, now, pk)
		return qdocs, live, true
	}
	return nil, nil, false
}

// indexedTextStats returns FullTextScore's statistics of the text at path
// in lang for terms, those of the items live at now, from the path's
// full-text index if one is made and analyzes lang; ok is false if none
// is.
func (c *Container) indexedTextStats(path []string, lang string, terms []string, now int64) (st query.TextStats, ok bool) {
	if !c.store.useIndexes() {
		return st, false
	}
	key, ok := policyKey(path)
	if !ok {
		return st, false
	}
	c.expiry.mu.Lock()
	defer c.expiry.mu.Unlock()
	ti := c.expiry.texts[key]
	if ti == nil || ti.ix.Lang() != lang {
		return st, false
	}
	rule := c.rule
	return c.textStatsLocked(ti, terms, &rule, now), true
}
