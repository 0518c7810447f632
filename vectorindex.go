package lethe

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/lethedb/lethe/internal/query"
	"github.com/lethedb/lethe/internal/vector"
)

// Vector indexes. For each path of the IndexingPolicy's VectorIndexes that
// the VectorEmbeddingPolicy declares, a container keeps the decoded vector
// of every item whose value at the path is a vector of the embedding's
// element type and dimensions, in a vector.Store: float32 values side by
// side, each with its item's record. The store is made in the background
// (buildVector) when the container is created or opened with the index, or
// its policy gains it (or a query asks, if none is being made); the
// queries made meanwhile scan. From then on every change keeps it current
// (itemChanged, from the one write path, under c.mu): a change
// removes the old version's slot (a tombstone) and appends the new one's,
// and publishes both at once.
//
// Queries read the store with no lock: each at the version current when it
// began (vector.View), so a query sees every item exactly as it was at
// that instant, and a write never waits for a query. Removed slots stay
// (with their records) until they outnumber the present ones; then a new
// store is made in the background from the old one's present vectors, the
// old one serving meanwhile.
//
// A diskANN index also keeps a graph of the store's vectors (vector.Graph,
// HNSW), linked slot after slot, in order, by its build's goroutine
// (linkAll) as the store grows; removed slots stay in it as waypoints
// until the store is made anew. Its searches are approximate, as the
// service's are. flat and quantizedFlat indexes are exact.
//
// SELECT TOP k ... ORDER BY VectorDistance(c.path, @q) (query.VectorTopK)
// finds the k items nearest @q (nearest) and evaluates the query on those
// alone, so its results, their projection and their order are a scan's
// of those items, without reading any other item's JSON. Exactly (flat,
// quantizedFlat, or bruteForce true): the items live at the query's
// instant whose vectors the store holds are compared with @q, and the k
// nearest kept, with every item tied with the k-th; where the processor
// has AVX2, each is first compared in float32, and those that the bound on
// that comparison's error shows cannot enter the k nor tie with the k-th
// are skipped (topK.prune), so the exact float64 comparison is made only
// for the few that may, and the result is the same. Through the graph:
// the graph is searched for the k × searchListSizeMultiplier (10 by
// default) nearest items that are in the query's view, live and in its
// partitions, walking through the others (an expired or removed item is
// never a result, purged or not); the slots not yet linked when the query
// began are compared exactly; and the candidates are ranked by their exact
// distances. When the graph finds fewer than k such items, the search is
// exact. When fewer than k items have a vector it can compare (the others
// come last, in id order), the query scans.

// vecIndex is the vector index of one path.
type vecIndex struct {
	c      *Container
	key    string // the path, "/"-joined: its name in the container's map
	path   []string
	typ    vector.Type
	metric vector.Metric
	dims   int
	store  *vector.Store[record]
	graph  *vector.Graph // diskANN alone; nil for the exact types

	// The writer's (the build's, then the write path's under
	// c.mu).
	slot map[*byte]uint32 // the slot of each record present, by the address of its bytes
	buf  []float32        // scratch for reading a vector

	wake chan struct{} // 1-buffered: slots to link
	stop chan struct{} // closed when the index is dropped or replaced
}

// vecIndexes are a container's vector indexes, by path ("/"-joined).
type vecIndexes map[string]*vecIndex

// recAddr is what tells records apart in a vector or full-text index: the
// address of their bytes, unique among the live records.
func recAddr(rec record) *byte { return unsafe.StringData(string(rec)) }

// graphLinks and graphBuildList are the graph's links a node (M; twice
// that on layer 0) and its search list size when linking a node (the
// service's indexingSearchListSize, 100 by default).
const (
	graphLinks     = 16
	graphBuildList = 100
)

func newVecIndex(c *Container, key string, path []string, t vector.Type, m vector.Metric, dims int, approx bool) *vecIndex {
	vi := &vecIndex{c: c, key: key, path: path, typ: t, metric: m, dims: dims, store: vector.NewStore[record](dims),
		slot: map[*byte]uint32{}, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	if approx {
		vi.graph = vector.NewGraph(m, graphLinks, graphBuildList, vi.store.Vector)
	}
	return vi
}

// change makes vi follow one item change: old ("" if none) goes, rec (""
// if none) comes, from the next Publish on. Replaying a change changes
// nothing (indexbuild.go).
func (vi *vecIndex) change(old, rec record) {
	if old != "" {
		if i, ok := vi.slot[recAddr(old)]; ok {
			vi.store.Remove(i)
			delete(vi.slot, recAddr(old))
		}
	}
	if rec == "" {
		return
	}
	if _, ok := vi.slot[recAddr(rec)]; ok {
		return
	}
	body := rec.body()
	v, ok := query.VectorAt(unsafe.Slice(unsafe.StringData(body), len(body)), vi.path, vi.typ, vi.buf[:0])
	vi.buf = v
	if !ok || len(v) != vi.dims {
		return // VectorDistance with a vector of the policy's length is undefined for it
	}
	vi.slot[recAddr(rec)] = vi.store.Add(v, rec)
}

// itemChanged makes the vector indexes follow one item change, publishes
// it, and wakes a graph's linking; it starts making anew an index whose
// removed slots outnumber its present ones. The caller holds the
// container's mu.
func (vs vecIndexes) itemChanged(old, rec record) {
	for _, vi := range vs {
		vi.change(old, rec)
		vi.store.Publish()
		if vi.graph != nil {
			select {
			case vi.wake <- struct{}{}:
			default:
			}
		}
		if removed := vi.store.Removed(); removed >= 1024 && removed > len(vi.slot) {
			vi.c.startVectorBuildLocked(vi.key, vi.path) // unless it is being made
		}
	}
}

// vectorSettings returns the element type, distance function, dimensions
// and index type of the vectors at path when props has a vector index of
// the path and an embedding of it; ok is false otherwise.
func vectorSettings(props *ContainerProperties, path []string) (t vector.Type, m vector.Metric, dims int, approx, ok bool) {
	ip, vp := props.IndexingPolicy, props.VectorEmbeddingPolicy
	if ip == nil || vp == nil {
		return 0, 0, 0, false, false
	}
	i := slices.IndexFunc(ip.VectorIndexes, func(x VectorIndex) bool { return policyPathIs(x.Path, path) })
	if i < 0 {
		return 0, 0, 0, false, false
	}
	approx = strings.EqualFold(string(ip.VectorIndexes[i].Type), string(VectorIndexTypeDiskANN))
	for _, e := range vp.VectorEmbeddings {
		if policyPathIs(e.Path, path) {
			t, _ = vector.ParseType(string(e.DataType))
			m, _ = vector.ParseMetric(string(e.DistanceFunction))
			return t, m, int(e.Dimensions), approx, true
		}
	}
	return 0, 0, 0, false, false
}

// sameSettings reports whether props declares vi as it was made.
func (vi *vecIndex) sameSettings(props *ContainerProperties) bool {
	t, m, dims, approx, ok := vectorSettings(props, vi.path)
	return ok && t == vi.typ && m == vi.metric && dims == vi.dims && approx == (vi.graph != nil)
}

// dropVectorsLocked forgets the vector indexes that props no longer
// declares as they were made. The caller holds c.mu.
func (c *Container) dropVectorsLocked(props *ContainerProperties) {
	for k, vi := range c.mu.indexes.vector {
		if !vi.sameSettings(props) {
			close(vi.stop)
			delete(c.mu.indexes.vector, k)
		}
	}
}

// stopVectorsLocked stops the goroutines of every vector index, and
// forgets them. The caller holds c.mu.
func (c *Container) stopVectorsLocked() {
	for _, vi := range c.mu.indexes.vector {
		close(vi.stop)
	}
	c.mu.indexes.vector = nil
}

// startVectorBuilds starts making, in the background, each vector index
// that the container's policy declares and that it has neither made nor
// begun to make.
func (c *Container) startVectorBuilds() {
	c.mu.Lock()
	c.startVectorBuildsLocked()
	c.mu.Unlock()
}

// startVectorBuildsLocked is startVectorBuilds with c.mu held.
func (c *Container) startVectorBuildsLocked() {
	if c.props.IndexingPolicy == nil {
		return
	}
	for _, x := range c.props.IndexingPolicy.VectorIndexes {
		if key := strings.TrimPrefix(x.Path, "/"); c.mu.indexes.vector[key] == nil {
			c.startVectorBuildLocked(key, strings.Split(key, "/"))
		}
	}
}

// vectorIndexFor returns the vector index of path; nil if the container's
// policy declares none, or if it is being made (it starts that: the
// caller scans meanwhile).
func (c *Container) vectorIndexFor(path []string) *vecIndex {
	key, ok := policyKey(path)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if vi := c.mu.indexes.vector[key]; vi != nil {
		return vi
	}
	c.startVectorBuildLocked(key, path)
	return nil
}

// startVectorBuildLocked starts making the vector index of path in the
// background, if the policy declares one and none is being made. The
// caller holds c.mu.
func (c *Container) startVectorBuildLocked(key string, path []string) {
	if c.mu.indexes.building["v:"+key] != nil {
		return
	}
	t, m, dims, approx, ok := vectorSettings(&c.props, path)
	if !ok {
		return
	}
	b, n := c.startBuildLocked("v:" + key)
	vi := newVecIndex(c, key, path, t, m, dims, approx)
	// A new store of an index the container has copies the old one's
	// vectors as they are now, rather than read the items again.
	old := c.mu.indexes.vector[key]
	var view vector.View
	if old != nil {
		view = old.store.View()
	}
	if !c.store.goBackground(func(stop <-chan struct{}) { c.buildVector(vi, old, view, b, n, stop) }) {
		delete(c.mu.indexes.building, "v:"+key) // the store is closed
	}
}

// buildVector makes vector index vi (build b; n: about how many items
// there are) and publishes it: the items' vectors (read from the items, or
// copied from view of the index old that vi replaces), then, for a diskANN
// index that replaces another, the graph of them (the old index serving
// meanwhile), then the changes made meanwhile. It then links the slots
// that come after, until the index is dropped or replaced, or the store
// closes (stop).
func (c *Container) buildVector(vi, old *vecIndex, view vector.View, b *indexBuild, n int, stop <-chan struct{}) {
	vi.slot = make(map[*byte]uint32, n+n/8+16)
	if old != nil {
		old.store.Each(view, 0, func(_ uint32, v []float32, _ float64, rec record) {
			vi.slot[recAddr(rec)] = vi.store.Add(v, rec)
		})
	} else {
		c.scanForBuild(func(rec record) { vi.change("", rec) })
	}
	if old != nil && vi.graph != nil && !vi.linkAll(stop) {
		c.mu.Lock()
		c.finishBuildLocked("v:"+vi.key, b)
		c.mu.Unlock()
		return
	}
	c.catchUp(b, vi.change)
	if !c.finishBuildLocked("v:"+vi.key, b) || !vi.sameSettings(&c.props) {
		c.mu.Unlock()
		return
	}
	vi.store.Publish()
	if prev := c.mu.indexes.vector[vi.key]; prev != nil {
		close(prev.stop)
	}
	if c.mu.indexes.vector == nil {
		c.mu.indexes.vector = vecIndexes{}
	}
	c.mu.indexes.vector[vi.key] = vi
	c.mu.Unlock()
	if vi.graph == nil {
		return
	}
	for vi.linkAll(stop) {
		select {
		case <-vi.wake:
		case <-vi.stop:
			return
		case <-stop:
			return
		}
	}
}

// linkAll links every slot of vi's store into its graph; it returns false,
// leaving the rest, when vi is dropped or the store closes (stop).
func (vi *vecIndex) linkAll(stop <-chan struct{}) bool {
	for vi.graph.Len() < vi.store.Len() {
		select {
		case <-vi.stop:
			return false
		case <-stop:
			return false
		default:
		}
		vi.graph.Add()
	}
	return true
}

// nearest returns the records of the need items live at now, in the
// partitions whose key begins with pk, whose vectors are nearest q, and
// every item tied with the last of them; with the expiry rule of the same
// instant. With the graph (exact false) the items are those its search
// finds, ranked by their exact distances. ok is false when fewer than
// need items have a vector that can be compared with q. It holds no lock
// but for an instant.
func (c *Container) nearest(vi *vecIndex, q []float32, need, list int, exact bool, pk PartitionKey, now int64) (recs []record, rule expiryRule, ok bool) {
	c.mu.Lock()
	rule = c.rule
	view := vi.store.View()
	c.mu.Unlock()
	s := vi.store
	qn := vector.SumSquares(q)
	higher := vi.metric.HigherIsCloser()
	// key returns the key a vector orders by (nearest first), as
	// VectorDistance's value is ordered: rounded to float32; ok is false
	// when it is undefined.
	key := func(v []float32, sumSquares float64) (float32, bool) {
		var sc float64
		var ok bool
		if vi.metric == vector.Cosine {
			sc, ok = vector.CosineOf(vector.Dot(v, q), sumSquares, qn)
		} else {
			sc, ok = vi.metric.Score(v, q)
		}
		if higher {
			return -float32(sc), ok
		}
		return float32(sc), ok
	}
	// ours reports whether an item is one of the query's: live at its
	// instant, in its partitions.
	ours := func(rec record) bool { return rule.live(rec, now) && pk.holds(rec.pk()) }
	// With AVX2 a scan skips the items whose float32 score shows that they
	// can neither enter the top nor tie with it (prune).
	hooks := c.store.testHooks()
	var bounds *vector.Bounds
	if (hooks == nil || !hooks.noPruneScans) && vector.Fast() {
		bounds = vector.NewBounds(vi.metric, q)
	}
	scan := func(top *topK, from uint32) {
		s.Each(view, from, func(i uint32, v []float32, sumSquares float64, rec record) {
			if ours(rec) && !top.prune(bounds, higher, v, sumSquares) {
				if k, ok := key(v, sumSquares); ok {
					top.add(k, i)
				}
			}
		})
	}
	var top topK
	if !exact && vi.graph != nil {
		linked := uint32(min(vi.graph.Len(), view.Len()))
		top.reset(need)
		ids := vi.graph.Search(q, max(need, list), func(i uint32) bool {
			return i < linked && s.Has(view, i) && ours(s.Payload(i))
		})
		if hooks != nil && hooks.afterGraphSearch != nil {
			hooks.afterGraphSearch(len(ids))
		}
		for _, i := range ids {
			if k, ok := key(s.Vector(i), s.SumSquares(i)); ok {
				top.add(k, i)
			}
		}
		scan(&top, linked) // the slots linked after the query began
		if top.full() {
			return top.records(s), rule, true
		}
	}
	top.reset(need)
	scan(&top, 0)
	if hooks != nil && hooks.afterExactScan != nil {
		hooks.afterExactScan(top.pruned)
	}
	if !top.full() {
		return nil, rule, false
	}
	return top.records(s), rule, true
}

// topK keeps the need smallest keys it is given, and the slots tied with
// the largest of them that did not fit.
type topK struct {
	need   int
	heap   []topCand // a max-heap
	ties   []uint32
	pruned int // the items prune skipped
}

type topCand struct {
	key float32
	i   uint32
}

func (t *topK) reset(need int) {
	t.need, t.heap, t.ties, t.pruned = need, make([]topCand, 0, need), nil, 0
}

func (t *topK) full() bool { return len(t.heap) == t.need }

func (t *topK) add(k float32, i uint32) {
	heap := t.heap
	switch {
	case len(heap) < t.need:
		heap = append(heap, topCand{k, i})
		for j := len(heap) - 1; j > 0; {
			p := (j - 1) / 2
			if heap[p].key >= heap[j].key {
				break
			}
			heap[p], heap[j] = heap[j], heap[p]
			j = p
		}
	case k == heap[0].key:
		t.ties = append(t.ties, i)
	case k < heap[0].key:
		top := heap[0]
		heap[0] = topCand{k, i}
		for j := 0; ; {
			l, r, m := 2*j+1, 2*j+2, j
			if l < len(heap) && heap[l].key > heap[m].key {
				m = l
			}
			if r < len(heap) && heap[r].key > heap[m].key {
				m = r
			}
			if m == j {
				break
			}
			heap[m], heap[j] = heap[j], heap[m]
			j = m
		}
		if heap[0].key == top.key {
			t.ties = append(t.ties, top.i)
		} else {
			t.ties = t.ties[:0]
		}
	}
	t.heap = heap
}

// prune reports whether a vector (v, whose sum of squares is sumSquares)
// surely neither enters t nor ties with the largest key t keeps, from its
// score's float32 approximation and the bound on its error (b; nil: it
// never prunes). higher: a higher score is nearer (the key is its
// negation). A key is the score rounded to float32, and rounding is
// monotonic: if the least key the bound allows is above next, the float32
// after t's largest key, the key is at least next, so above that largest
// key, and add would change nothing. Every item that may enter is compared exactly, as if
// none were pruned: t ends as it would have.
func (t *topK) prune(b *vector.Bounds, higher bool, v []float32, sumSquares float64) bool {
	if b == nil || !t.full() {
		return false
	}
	lo, hi, ok := b.Range(v, sumSquares)
	if !ok {
		return false
	}
	if higher {
		lo = -hi // the least key
	}
	if lo > float64(math.Nextafter32(t.heap[0].key, float32(math.Inf(1)))) {
		t.pruned++
		return true
	}
	return false
}

// records returns the records of the slots kept.
func (t *topK) records(s *vector.Store[record]) []record {
	recs := make([]record, 0, len(t.heap)+len(t.ties))
	for _, h := range t.heap {
		recs = append(recs, s.Payload(h.i))
	}
	for _, i := range t.ties {
		recs = append(recs, s.Payload(i))
	}
	return recs
}

// vector evaluates a query ordered by its VectorDistance to a constant
// (query.VectorTopK) on the items a vector index finds nearest, when the
// container has one of the path and the results fit in one page. ok is
// false, with no error, when it cannot (the next plan evaluates it).
func (r *queryRun) vector(ctx context.Context) (ev evaluation, ok bool, err error) {
	vs, ok := r.q.VectorTopK(r.params)
	if !ok || vs.Need == 0 || (r.page > 0 && vs.Need > r.page) {
		return ev, false, nil
	}
	c := r.c
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	vi := c.vectorIndexFor(vs.Path)
	if vi == nil || len(vs.Vec) != vi.dims {
		return ev, false, nil
	}
	// The query compares as the policy it began with says, or as its
	// options say.
	dist, typ := vs.DistanceFunction, vs.DataType
	if r.env.Vector != nil {
		pd, pt := r.env.Vector(vs.Path)
		dist, typ = cmp.Or(dist, pd), cmp.Or(typ, pt)
	}
	if m, _ := vector.ParseMetric(dist); dist != "" && m != vi.metric {
		return ev, false, nil
	}
	if t, _ := vector.ParseType(typ); typ != "" && t != vi.typ {
		return ev, false, nil
	}
	qf := make([]float32, len(vs.Vec))
	for i, x := range vs.Vec {
		if qf[i], ok = vi.typ.Element(x); !ok {
			return ev, false, nil
		}
	}
	list := vs.Need * cmp.Or(vs.SearchListSizeMultiplier, defaultSearchListSizeMultiplier)
	cands, rule, ok := c.nearest(vi, qf, vs.Need, list, vs.BruteForce, r.pk, r.now)
	if !ok {
		return ev, false, nil
	}
	ev.res, ev.recs, err = r.execOn(ctx, cands, rule, nil, r.env)
	return ev, true, err
}

// defaultSearchListSizeMultiplier is the service's default of
// VectorDistance's searchListSizeMultiplier option.
const defaultSearchListSizeMultiplier = 10
