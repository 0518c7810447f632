package lethe

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/google/btree"

	"github.com/lethedb/lethe/internal/query"
)

// Secondary indexes. A container's IndexingPolicy says which paths may be
// indexed (by default every path, as in Cosmos DB); an index of a path is
// made from the container's items the second time a query filters on the
// path (the first scans), or the first time one orders by it, and kept up
// to date by every change after (applyItems, under
// c.mu), so a container pays, in memory and on writes, only for the paths
// its queries filter on or order by. An index maps the value at its path
// to the records that hold it, expired or not: scalar values (null, a
// boolean, a number or a string) in full, and undefined, arrays and objects
// by their type alone (the values inside arrays and objects are not
// indexed), so that it holds every item in ORDER BY's order of types.
//
// A query decides each candidate's liveness by the expiry rule, from its
// record's header, as a scan would, then evaluates itself on the
// candidates alone, less the conditions of its WHERE clause the index
// decided (query.Residual: the index answers a condition exactly, type
// rules included), so results, their order and their continuation tokens
// are those of a scan. When the index decided the whole clause, a SELECT *
// copies each candidate out as its result, in position order, without
// evaluating anything (itemPages.whole), and a count of the rows counts
// the live candidates without reading a document (indexCount). The later
// pages of such a pager look each item up again only if an item of the
// container has been replaced or removed since the first (indexGuard):
// else each listed record is still its item's, and its header decides.

// maxIndexes bounds the indexes one container makes, of paths and
// composite: past it, queries on other paths scan.
const maxIndexes = 16

// indexCountLocked returns how many indexes the container has made. The
// caller holds c.mu.
func (c *Container) indexCountLocked() int {
	return len(c.mu.indexes.secondary) + len(c.mu.indexes.composite)
}

// pathIndex is the index of one path.
type pathIndex struct {
	key  string // its name in the container's map of indexes
	path []string
	t    *btree.BTreeG[indexEntry]
	// gone counts the changes that replaced or removed an item (a
	// write, delete or purge of a stored version), under c.mu,
	// as every change of the container's items is made in its indexes:
	// while it stays the same, a listed record is its item's current
	// version (indexGuard).
	gone uint64
	// gen tells this index from every other the process has made, of
	// this path or another: a guard names its index by it, not by
	// pointer, so that a pager kept after its index is dropped does not
	// keep the dropped index's tree alive.
	gen uint64
}

// indexGens numbers the path indexes the process makes (pathIndex.gen).
var indexGens atomic.Uint64

// indexEntry is one item's value at the index's path. Entries of equal
// values are told apart by their record's address, which is unique among
// the live records and never read. (Told apart by position instead, an
// equality's candidates would come in result order, with no sort; but the
// position makes an entry 56 bytes rather than 48: when a build left its
// leaves half full in arrays of 64 entries (fill), an index cost 135
// bytes an item rather than 102.)
type indexEntry struct {
	key query.IndexKey
	rec record
}

func lessIndexEntry(a, b indexEntry) bool { return compareIndexEntries(a, b) < 0 }

func compareIndexEntries(a, b indexEntry) int {
	if c := a.key.Compare(b.key); c != 0 {
		return c
	}
	return compareRecAddrs(a.rec, b.rec)
}

// compareRecAddrs orders index entries of equal values by their records'
// addresses, with the pivots first and last.
func compareRecAddrs(a, b record) int {
	pa, pb := unsafe.StringData(string(a)), unsafe.StringData(string(b))
	switch {
	case pa == pb:
		return 0
	case pa == firstPivot || pb == lastPivot:
		return -1
	case pa == lastPivot || pb == firstPivot:
		return 1
	}
	return cmp.Compare(uintptr(unsafe.Pointer(pa)), uintptr(unsafe.Pointer(pb)))
}

// Pivots: records that index entries use to start a walk before or after
// every entry of a value (they are never stored).
var (
	pivots                = make([]byte, 2)
	firstPivot, lastPivot = &pivots[0], &pivots[1]
)

// pivot returns an entry of k that sorts before (last: after) every
// entry of k in an index.
func pivot(last bool) record {
	if last {
		return record(unsafe.String(lastPivot, 1))
	}
	return record(unsafe.String(firstPivot, 1))
}

// indexes are a container's secondary indexes, by path ("/"-joined).
type indexes map[string]*pathIndex

// entry returns rec's entry in idx: every item has one, whatever its value
// at the path (undefined, an array or an object included), so that a walk
// of the index in order meets every item.
func (idx *pathIndex) entry(rec record) indexEntry {
	return indexEntry{keyAt(rec, idx.path), rec}
}

// keyAt returns the index key of rec's value at path, as queries see it:
// the system properties _ts and _etag, kept apart from the stored
// document, come from the record.
func keyAt(rec record, path []string) query.IndexKey {
	if len(path) == 1 && (path[0] == "_ts" || path[0] == "_etag") {
		d := query.Doc{Sys: true, TS: rec.ts(), ETag: rec.etag()}
		k, _ := query.SysKey(&d, path[0])
		return k
	}
	body := rec.body()
	return query.PathKey(unsafe.Slice(unsafe.StringData(body), len(body)), path)
}

// change makes idx follow one item change: old ("" if none) goes, rec (""
// if none) comes.
func (idx *pathIndex) change(old, rec record) {
	if old != "" {
		idx.t.Delete(idx.entry(old))
		idx.gone++
	}
	if rec != "" {
		idx.t.ReplaceOrInsert(idx.entry(rec))
	}
}

// itemChanged makes the indexes follow one item change. The caller holds
// the container's mu.
func (ix indexes) itemChanged(old, rec record) {
	for _, idx := range ix {
		idx.change(old, rec)
	}
}

// IndexPath is a path of an IndexingPolicy, in Cosmos DB's syntax: "/*"
// (every path), "/status/?" (the value at status), "/address/*" (every
// path under address); property names may be quoted ("/\"a b\"/?").
type IndexPath struct {
	Path string `json:"path"`
}

// indexRule is a parsed IndexPath: names, and whether it covers every path
// below them (/*) or the value at them alone (/?).
type indexRule struct {
	names []string
	all   bool
}

// parseIndexPath reads an IndexPath.
func parseIndexPath(p string) (indexRule, *Error) {
	bad := func(why string) (indexRule, *Error) {
		return indexRule{}, badRequest("the indexing policy path %q is invalid: %s", p, why)
	}
	if !strings.HasPrefix(p, "/") {
		return bad(`it must start with "/"`)
	}
	var r indexRule
	rest := p[1:]
	for {
		switch rest {
		case "*":
			r.all = true
			return r, nil
		case "?":
			if len(r.names) == 0 {
				return bad(`"/?" needs a property name before it`)
			}
			return r, nil
		case "":
			return bad(`it must end with "/?" or "/*"`)
		}
		var name string
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return bad("a quoted name is not closed")
			}
			name, rest = rest[1:1+end], rest[2+end:]
		} else {
			end := strings.IndexByte(rest, '/')
			if end < 0 {
				return bad(`it must end with "/?" or "/*"`)
			}
			name, rest = rest[:end], rest[end:]
		}
		if name == "" || name == "[]" || !strings.HasPrefix(rest, "/") {
			return bad("a property name is empty, or an array path ([]) is used: lethe indexes the scalar values of object properties")
		}
		r.names = append(r.names, name)
		rest = rest[1:]
	}
}

// covers reports whether the rule applies to the value at path, and how
// specific it is (longer is more).
func (r indexRule) covers(path []string) (int, bool) {
	if len(r.names) > len(path) || !r.all && len(r.names) != len(path) {
		return 0, false
	}
	for i, n := range r.names {
		if path[i] != n {
			return 0, false
		}
	}
	spec := 2 * len(r.names)
	if !r.all {
		spec++ // "/a/?" is more specific than "/a/*"
	}
	return spec, true
}

// validateIndexingPolicy checks the paths of a policy.
func validateIndexingPolicy(ip *IndexingPolicy) *Error {
	for _, ps := range [][]IndexPath{ip.IncludedPaths, ip.ExcludedPaths} {
		for _, p := range ps {
			if _, err := parseIndexPath(p.Path); err != nil {
				return err
			}
		}
	}
	for _, ci := range ip.CompositeIndexes {
		if _, err := parseComposite(ci); err != nil {
			return err
		}
	}
	return nil
}

// indexable reports whether the policy lets the value at path be indexed:
// the most specific of its paths that covers it is an included one (the
// default, with no included paths, is every path). The system properties
// _ts and _etag are kept apart from the stored document and not indexed.
func indexable(ip *IndexingPolicy, path []string) bool {
	if ip != nil && ip.IndexingMode == IndexingModeNone {
		return false
	}
	if len(path) == 1 && (path[0] == "_ts" || path[0] == "_etag") {
		return false
	}
	if ip == nil {
		return true
	}
	inc := ip.IncludedPaths
	if len(inc) == 0 {
		inc = []IndexPath{{Path: "/*"}}
	}
	best, included := -1, false
	for _, list := range []struct {
		paths []IndexPath
		in    bool
	}{{inc, true}, {ip.ExcludedPaths, false}} {
		for _, p := range list.paths {
			r, err := parseIndexPath(p.Path)
			if err != nil {
				continue
			}
			if spec, ok := r.covers(path); ok && (spec > best || spec == best && !list.in) {
				best, included = spec, list.in
			}
		}
	}
	return included
}

// maxWanted bounds how many paths a container remembers a filter asked
// about before their index is made (indexFor).
const maxWanted = 64

// indexFor returns the index of path, or nil with indexed false when the
// policy does not index the path (or the container has as many indexes as
// it may). It makes the index when need be; but for a filter (not eager),
// only the second time one asks: making an index costs about one and a half
// scans, more than a query that runs once saves, so the first filter on a
// path scans. An ORDER BY with TOP (eager) makes it at once, since its scan
// would sort every item. An index is known by its path's spec (indexSpec),
// which quotes a name that is not plain: the property "a/b" and the path
// a.b have indexes of their own. The caller holds c.batchMu for reading
// and no other lock.
func (c *Container) indexFor(path []string, eager bool) (idx *pathIndex, indexed bool) {
	key := indexSpec(path)
	c.mu.Lock()
	idx = c.mu.indexes.secondary[key]
	policy, n := c.props.IndexingPolicy, c.indexCountLocked()
	asked := eager || c.mu.indexes.wanted[key]
	c.mu.Unlock()
	if idx != nil {
		return idx, true
	}
	if n >= maxIndexes || !indexable(policy, path) {
		return nil, false
	}
	if !asked {
		c.mu.Lock()
		if c.mu.indexes.wanted == nil || len(c.mu.indexes.wanted) >= maxWanted {
			c.mu.indexes.wanted = map[string]bool{}
		}
		c.mu.indexes.wanted[key] = true
		c.mu.Unlock()
		return nil, true
	}
	idx = c.buildIndex(key, path)
	return idx, idx != nil
}

// madeIndex returns the index of path if it has been made, and nil
// otherwise (without asking for it, as indexFor does).
func (c *Container) madeIndex(path []string) *pathIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.indexes.secondary[indexSpec(path)]
}

// rangeOf appends to recs each record idx holds for r, in the index's
// order, its position not read (c.mu is held for no more than
// the walk: the callers decide liveness after, from the records' headers,
// by rule, the expiry rule of the same instant); found is false if a
// policy change has dropped the index meanwhile. The caller holds
// c.batchMu for reading and no other lock.
func (c *Container) rangeOf(idx *pathIndex, r query.IndexRange, recs []posRec) (_ []posRec, rule expiryRule, g indexGuard, found bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.indexes.secondary[idx.key] != idx {
		return recs, rule, g, false // dropped meanwhile by a policy change
	}
	rule, g = c.rule, indexGuard{idx.key, idx.gen, idx.gone}
	if r.Points != nil {
		// Equality and IN: each value on its own (once), rather than the
		// span between them.
		points := slices.Clone(r.Points)
		slices.SortFunc(points, query.IndexKey.Compare)
		points = slices.CompactFunc(points, func(a, b query.IndexKey) bool { return a.Compare(b) == 0 })
		for _, p := range points {
			idx.t.AscendGreaterOrEqual(indexEntry{key: p}, func(e indexEntry) bool {
				if e.key.Compare(p) != 0 {
					return false
				}
				recs = append(recs, posRec{rec: e.rec})
				return true
			})
		}
		return recs, rule, g, true
	}
	// A range or a prefix: one walk from its start.
	idx.t.AscendGreaterOrEqual(indexEntry{key: r.Start()}, func(e indexEntry) bool {
		if r.Past(e.key) {
			return false
		}
		if r.Contains(e.key) {
			recs = append(recs, posRec{rec: e.rec})
		}
		return true
	})
	return recs, rule, g, true
}

// indexGuard is what a list of records taken from an index (rangeOf) needs
// to tell, later, that none of them has been replaced or removed since:
// the index, by its name and generation (not a pointer: a pager may be
// kept long after a policy change drops the index, and must not keep its
// tree alive), and its count of such changes then.
type indexGuard struct {
	key  string
	gen  uint64 // 0: no index
	gone uint64
}

// unchanged reports whether no item of the container has been replaced or
// removed since g was taken (the index is still the container's, and has
// seen no such change), and returns the expiry rule now: then a record
// listed then is its item's current version, live at now if live by that
// rule. The caller holds no container lock.
func (c *Container) unchanged(g indexGuard) (rule expiryRule, ok bool) {
	if g.gen == 0 {
		return rule, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	idx := c.mu.indexes.secondary[g.key]
	return c.rule, idx != nil && idx.gen == g.gen && idx.gone == g.gone
}

// buildIndex makes the index of path from the container's items while
// writes go on (indexbuild.go), and returns it: nil if another query is
// making it (this one scans meanwhile), or if the container changed its
// policy meanwhile so that the path is no longer indexed. The caller holds
// no container lock but c.batchMu for reading.
func (c *Container) buildIndex(key string, path []string) *pathIndex {
	may := func() bool { return indexable(c.props.IndexingPolicy, path) && c.indexCountLocked() < maxIndexes }
	return buildOnce(c, "p:"+key, indexRecipe[*pathIndex]{
		made: func() *pathIndex { return c.mu.indexes.secondary[key] },
		may:  may,
		make: func(b *indexBuild, n int) *pathIndex {
			idx := &pathIndex{key: key, path: path, t: btree.NewG(btreeDegree, lessIndexEntry), gen: indexGens.Add(1)}
			fill(c, b, n, idx.t, idx.entry, compareIndexEntries, idx.change)
			return idx
		},
		keep: func(idx *pathIndex) bool {
			if !may() {
				return false
			}
			if c.mu.indexes.secondary == nil {
				c.mu.indexes.secondary = indexes{}
			}
			c.mu.indexes.secondary[key] = idx
			return true
		},
	})
}

// ordered walks the index of path in ORDER BY's order (desc: descending)
// and returns the records that may be among the first need results of a
// query ordered by it: every item whose value comes before all scalars in
// that order (undefined ascending; arrays and objects descending), then
// items of scalar values in order until want of them, and, if the walk got
// that far, the rest. last is the last scalar value taken, exhausted
// whether the walk reached the end. With bound (ascending only), the walk
// covers the range of a filter on the path alone. With from (a query
// resuming after a result whose value was from), it starts at the first
// entry of that value. rule is the expiry rule of the same instant.
// current is false, and nothing else is returned, if a policy change has
// dropped the index meanwhile. The caller holds c.batchMu for reading.
func (c *Container) ordered(idx *pathIndex, desc bool, want int, bound *query.IndexRange, from *query.IndexKey) (recs []record, last query.IndexKey, exhausted bool, rule expiryRule, current bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.indexes.secondary[idx.key] != idx {
		return nil, last, false, rule, false
	}
	rule = c.rule
	exhausted = true
	scalars := 0
	visit := func(e indexEntry) bool {
		if bound != nil && bound.Past(e.key) {
			return false // exhausted: nothing further can pass the filter
		}
		if e.key.Scalar() {
			if scalars == want {
				exhausted = false
				return false
			}
			scalars++
			last = e.key
		}
		recs = append(recs, e.rec)
		return true
	}
	start := from
	if bound != nil && (start == nil || bound.Start().Compare(*start) > 0) {
		s := bound.Start()
		start = &s
	}
	switch {
	case desc && start != nil:
		idx.t.DescendLessOrEqual(indexEntry{key: *start, rec: pivot(true)}, visit)
	case desc:
		idx.t.Descend(visit)
	case start != nil:
		idx.t.AscendGreaterOrEqual(indexEntry{key: *start, rec: pivot(false)}, visit)
	default:
		idx.t.Ascend(visit)
	}
	return recs, last, exhausted, rule, true
}

// dropIndexes forgets the indexes the policy no longer allows. The caller
// holds c.mu.
func (c *Container) dropIndexesLocked(ip *IndexingPolicy) {
	for k, idx := range c.mu.indexes.secondary {
		if !indexable(ip, idx.path) {
			delete(c.mu.indexes.secondary, k)
		}
	}
	for k := range c.mu.indexes.composite {
		if !compositeDeclared(ip, k) {
			delete(c.mu.indexes.composite, k)
		}
	}
	c.mu.indexes.building = nil // cancelled: a build checks the policy again when it starts
}

// liveCandidates returns the records the index of r's path finds for r
// that are live at now in the partitions whose key begins with pk, in
// position order (the order of results without ORDER BY); found is false
// when there is no index for the path yet (indexFor), and indexed false
// when the policy does not index the path (or the container has as many
// indexes as it may). The caller holds c.batchMu for reading and no other
// lock.
func (c *Container) liveCandidates(r query.IndexRange, pk PartitionKey, now int64) (recs []posRec, g indexGuard, found, indexed bool) {
	idx, indexed := c.indexFor(r.Path, false)
	if idx == nil {
		return nil, g, false, indexed
	}
	// The candidates, then those live, each beside its position, read
	// with its liveness (the same header): comparing records would read
	// two headers a comparison.
	live, rule, g, found := c.rangeOf(idx, r, nil)
	if !found {
		return nil, g, false, true
	}
	n := 0
	for _, p := range live {
		if rule.live(p.rec, now) && pk.holds(p.rec.pk()) {
			live[n] = posRec{p.rec.pos(), p.rec}
			n++
		}
	}
	return sortByPos(live[:n]), g, true, true
}

// byPos returns recs beside their positions, sorted by position.
func byPos(recs []record) []posRec {
	rs := make([]posRec, len(recs))
	for i, rec := range recs {
		rs[i] = posRec{rec.pos(), rec}
	}
	return sortByPos(rs)
}

// posRec is a record beside its position.
type posRec struct {
	pos uint64
	rec record
}

// sortByPos sorts rs by position, and returns them sorted (in rs's array
// or another): a radix sort, a byte of the positions at a time, least
// significant first, over the bytes in which they differ. The candidates
// of an equality come in the order of their records' addresses, and those
// of a range by value: a comparison sort of them costs several times more.
func sortByPos(rs []posRec) []posRec {
	if len(rs) < 64 {
		slices.SortFunc(rs, func(a, b posRec) int { return cmp.Compare(a.pos, b.pos) })
		return rs
	}
	var or uint64
	sorted := true
	for i, r := range rs {
		or |= r.pos
		sorted = sorted && (i == 0 || rs[i-1].pos < r.pos)
	}
	if sorted {
		return rs
	}
	tmp := make([]posRec, len(rs))
	for shift := uint(0); shift < 64 && or>>shift != 0; shift += 8 {
		var count [256]int
		for _, r := range rs {
			count[byte(r.pos>>shift)]++
		}
		at := 0
		for i, n := range count {
			count[i] = at
			at += n
		}
		for _, r := range rs {
			d := byte(r.pos >> shift)
			tmp[count[d]] = r
			count[d]++
		}
		rs, tmp = tmp, rs
	}
	return rs
}

// indexCount answers a query whose one result is a count of the rows that
// pass its WHERE clause (query.CountsRows, without JOIN: planCount) from
// an index alone, reading no document, when the index of the most
// selective of the clause's conditions that has one decides the whole
// clause (query.Residual): the count is of the items the index finds that
// are live at r.now (by the expiry rule, from their records' headers) in
// r's partitions. ok is false when no such index has been made:
// indexCount does not ask for one, as the query's evaluation then does
// (indexFor). It holds the batch lock for reading, as liveDocs does.
func (r *queryRun) indexCount() (n int, ok bool) {
	c := r.c
	ranges := r.q.IndexRanges(r.params)
	slices.SortStableFunc(ranges, func(a, b query.IndexRange) int { return rangeRank(a) - rangeRank(b) })
	for _, rg := range ranges {
		idx := c.madeIndex(rg.Path)
		if idx == nil {
			continue
		}
		if r.q.Residual(r.params, rg).HasWhere() {
			return 0, false
		}
		c.batchMu.RLock()
		defer c.batchMu.RUnlock()
		buf := countBufs.Get().(*[]posRec)
		defer putCountBuf(buf)
		recs, rule, _, found := c.rangeOf(idx, rg, (*buf)[:0])
		*buf = recs
		if !found {
			return 0, false
		}
		r.plan.used = indexSpec(rg.Path)
		for _, p := range recs {
			if rule.live(p.rec, r.now) && r.pk.holds(p.rec.pk()) {
				n++
			}
		}
		return n, true
	}
	return 0, false
}

// countBufs holds lists of candidates for counts (indexCount) to reuse: a
// count keeps none, and a new list a count, grown to the candidates' number
// and then collected, cost over a third of its instructions, the
// collector's included (an equality of 200 candidates: 196k instructions
// a count with a new list, 123k with one reused).
var countBufs = sync.Pool{New: func() any { return new([]posRec) }}

// maxCountBuf bounds the candidates a list kept in countBufs may hold
// (larger ones are left to the collector).
const maxCountBuf = 1 << 16

// putCountBuf returns a list to countBufs, cleared, so that it keeps no
// record alive.
func putCountBuf(buf *[]posRec) {
	if cap(*buf) > maxCountBuf {
		return
	}
	clear(*buf)
	*buf = (*buf)[:0]
	countBufs.Put(buf)
}
