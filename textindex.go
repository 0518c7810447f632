package lethe

import (
	"context"
	"slices"
	"unsafe"

	"github.com/lethedb/lethe/internal/fulltext"
	"github.com/lethedb/lethe/internal/query"
)

// Full-text indexes. For each path of the IndexingPolicy's FullTextIndexes
// (a path of the FullTextPolicy), a container keeps an inverted index
// (fulltext.Index) of the text of every item whose value at the path is a
// string, analyzed in the path's language: made the first time a query
// asks, as the other indexes are (indexbuild.go), and kept up to date by
// every change after (indexItemsLocked, under c.mu). Like the
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
// query scans. The scoring holds c.mu, as a vector index's
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

// itemChanged makes the full-text indexes follow one item change. The caller
// holds the container's mu.
func (ts textIndexes) itemChanged(old, rec record) {
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
// declares as they were made. The caller holds c.mu.
func (c *Container) dropTextsLocked(props *ContainerProperties) {
	for k, ti := range c.mu.indexes.text {
		if lang, ok := textSettings(props, ti.path); !ok || lang != ti.ix.Lang() {
			delete(c.mu.indexes.text, k)
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
	var lang string // the path's language, as the policy says when the build starts
	return buildOnce(c, "t:"+key, indexRecipe[*textIndex]{
		made: func() *textIndex { return c.mu.indexes.text[key] },
		may: func() bool {
			l, ok := textSettings(&c.props, path)
			lang = l
			return ok
		},
		make: func(b *indexBuild, n int) *textIndex {
			n += n/8 + 16 // room for the writes made meanwhile and soon after
			ti := &textIndex{key: key, path: path, ix: fulltext.NewIndex(lang), doc: make(map[*byte]int32, n), recs: make([]record, 0, n)}
			c.scanForBuild(func(rec record) { ti.change("", rec) })
			c.catchUp(b, ti.change)
			return ti
		},
		keep: func(ti *textIndex) bool {
			if now, ok := textSettings(&c.props, path); !ok || now != lang {
				return false
			}
			if c.mu.indexes.text == nil {
				c.mu.indexes.text = textIndexes{}
			}
			c.mu.indexes.text[key] = ti
			return true
		},
	})
}

// textStatsLocked returns the statistics FullTextScore scores ti's text
// by, for terms: those of the items live at now by rule, which are the
// index's less those of the expired items it holds (the expired prefix of
// the expiry index). The caller holds c.mu.
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
		sh.expiryMu.Lock()
		sh.expiry.inherit.t.AscendLessThan(ci, expired)
		sh.expiry.own.t.AscendLessThan(co, expired)
		sh.expiryMu.Unlock()
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.indexes.text[ti.key] != ti {
		return nil, st, rule, false, false
	}
	rule = c.rule
	st = c.textStatsLocked(ti, terms, &rule, now)
	idf, avg := fulltext.Weights(st.Docs, st.Terms, st.DF, len(terms))
	best, all := ti.ix.TopK(terms, idf, avg, want, func(d int32) bool {
		rec := ti.recs[d]
		return rule.live(rec, now) && pk.holds(rec.pk())
	})
	recs = make([]record, len(best))
	for i, b := range best {
		recs[i] = ti.recs[b.Doc]
	}
	return recs, st, rule, all, true
}

// text evaluates a query ranked by FullTextScore (query.TextTopK) on the
// items a full-text index scores best, when the container has one of the
// path and the results fit in one page. ok is false, with no error, when
// it cannot (the next plan evaluates it).
func (r *queryRun) text(ctx context.Context) (ev evaluation, ok bool, err error) {
	path, strs, need, full, ok := r.q.TextTopK(r.params)
	if !ok || need == 0 || (r.page > 0 && need > r.page) {
		return ev, false, nil
	}
	c := r.c
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	ti := c.textIndexFor(path)
	if ti == nil {
		return ev, false, nil
	}
	lang := ti.ix.Lang()
	if r.env.TextLanguage != nil && r.env.TextLanguage(path) != lang {
		return ev, false, nil // the query began under another policy
	}
	terms := searchTerms(strs, lang)
	for want := need; ; want *= 4 {
		cands, st, rule, all, ok := c.bestTexts(ti, terms, want, r.pk, r.now)
		if !ok || all && len(cands) < need {
			return ev, false, nil
		}
		// The evaluation scores by the statistics the index scored by.
		scanStats, qenv := r.env.TextStats, *r.env
		qenv.TextStats = func(p []string, l string, t []string) query.TextStats {
			if slices.Equal(p, path) && l == lang && slices.Equal(t, terms) || scanStats == nil {
				return st
			}
			return scanStats(p, l, t)
		}
		ev.res, ev.recs, err = r.execOn(ctx, cands, rule, nil, &qenv)
		if err != nil || len(ev.res.Items) >= full {
			return ev, true, err
		}
		if all {
			return evaluation{}, false, nil // fewer results than asked: unranked items follow
		}
	}
}

// textDocs is docs through a full-text index, when r's WHERE clause has a
// full-text filter (query.TextFilter) on a path the container's policy
// indexes: the live items whose text holds the search terms. It holds the
// batch lock for reading, as liveDocs does.
func (r *queryRun) textDocs() ([]query.Doc, []record, bool) {
	filters := r.q.TextFilters(r.params)
	if len(filters) == 0 {
		return nil, nil, false
	}
	c := r.c
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	for _, f := range filters {
		ti := c.textIndexFor(f.Path)
		if ti == nil {
			continue
		}
		c.mu.Lock()
		if c.mu.indexes.text[ti.key] != ti {
			c.mu.Unlock()
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
		c.mu.Unlock()
		r.plan.used = indexSpec(f.Path)
		qdocs, live := liveOf(recs, rule, r.now, r.pk)
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
	c.mu.Lock()
	defer c.mu.Unlock()
	ti := c.mu.indexes.text[key]
	if ti == nil || ti.ix.Lang() != lang {
		return st, false
	}
	rule := c.rule
	return c.textStatsLocked(ti, terms, &rule, now), true
}
