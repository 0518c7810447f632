package lethe

import (
	"context"
	"slices"
	"strings"
	"unsafe"

	"github.com/lethedb/lethe/internal/query"
	"github.com/lethedb/lethe/internal/vector"
)

// Vector indexes. For each path of the IndexingPolicy's VectorIndexes that
// the VectorEmbeddingPolicy declares, a container keeps the decoded vector
// of every item whose value at the path is a vector of the embedding's
// element type and dimensions: float32 values side by side, made the first
// time a query asks (as the other indexes are, indexbuild.go) and kept up
// to date by every change after (applyItems, under the expiry lock). Every
// index type (flat, quantizedFlat, diskANN) is this one, and exact.
//
// SELECT TOP k ... ORDER BY VectorDistance(c.path, @q) (query.VectorTopK)
// compares @q with the kept vectors of the items live at the query's
// instant, keeps the k nearest and every item tied with the k-th, and
// evaluates the query on those alone, so its results, their projection
// and their order are a scan's without reading any other item's JSON. When
// fewer than k items have a vector it can compare (the others come last,
// in id order), the query scans.

// vecIndex is the vector index of one path.
type vecIndex struct {
	key    string // the path, "/"-joined: its name in the container's map
	path   []string
	typ    vector.Type
	metric vector.Metric
	dims   int
	slot   map[*byte]int // the position of each record's vector, by the address of its bytes
	recs   []record      // the records, in positions
	data   []float32     // their vectors, dims values each, in positions
	norms  []float64     // their sums of squares, in positions (cosine alone)
	buf    []float32     // scratch for reading a vector
}

// vecIndexes are a container's vector indexes, by path ("/"-joined).
type vecIndexes map[string]*vecIndex

// recAddr is what tells records apart in a vecIndex: the address of their
// bytes, unique among the live records.
func recAddr(rec record) *byte { return unsafe.StringData(string(rec)) }

// change makes vi follow one item change: old ("" if none) goes, rec (""
// if none) comes. Replaying a change changes nothing (indexbuild.go).
func (vi *vecIndex) change(old, rec record) {
	if old != "" {
		if i, ok := vi.slot[recAddr(old)]; ok {
			last := len(vi.recs) - 1
			if i != last {
				moved := vi.recs[last]
				vi.recs[i] = moved
				copy(vi.data[i*vi.dims:(i+1)*vi.dims], vi.data[last*vi.dims:])
				if vi.norms != nil {
					vi.norms[i] = vi.norms[last]
				}
				vi.slot[recAddr(moved)] = i
			}
			vi.recs[last] = ""
			vi.recs, vi.data = vi.recs[:last], vi.data[:last*vi.dims]
			if vi.norms != nil {
				vi.norms = vi.norms[:last]
			}
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
	vi.slot[recAddr(rec)] = len(vi.recs)
	vi.recs = append(vi.recs, rec)
	vi.data = append(vi.data, v...)
	if vi.metric == vector.Cosine {
		vi.norms = append(vi.norms, vector.SumSquares(v))
	}
}

// update makes the vector indexes follow one item change. The caller holds
// the expiry lock.
func (vs vecIndexes) update(old, rec record) {
	for _, vi := range vs {
		vi.change(old, rec)
	}
}

// vectorSettings returns the element type, distance function and
// dimensions of the vectors at path when props has a vector index of the
// path and an embedding of it; ok is false otherwise.
func vectorSettings(props *ContainerProperties, path []string) (t vector.Type, m vector.Metric, dims int, ok bool) {
	ip, vp := props.IndexingPolicy, props.VectorEmbeddingPolicy
	if ip == nil || vp == nil || !slices.ContainsFunc(ip.VectorIndexes, func(x VectorIndex) bool { return policyPathIs(x.Path, path) }) {
		return 0, 0, 0, false
	}
	for _, e := range vp.VectorEmbeddings {
		if policyPathIs(e.Path, path) {
			t, _ = vector.ParseType(string(e.DataType))
			m, _ = vector.ParseMetric(string(e.DistanceFunction))
			return t, m, int(e.Dimensions), true
		}
	}
	return 0, 0, 0, false
}

// dropVectorsLocked forgets the vector indexes that props no longer
// declares as they were made. The caller holds the expiry lock.
func (c *Container) dropVectorsLocked(props *ContainerProperties) {
	for k, vi := range c.expiry.vectors {
		if t, m, dims, ok := vectorSettings(props, vi.path); !ok || t != vi.typ || m != vi.metric || dims != vi.dims {
			delete(c.expiry.vectors, k)
		}
	}
}

// vectorIndexFor returns the vector index of path, making it if the
// container's policy declares one; nil if it does not, or if another
// query is making it (this one scans meanwhile). The caller holds
// c.batchMu for reading and no other lock.
func (c *Container) vectorIndexFor(path []string) *vecIndex {
	key := strings.Join(path, "/")
	bkey := "v:" + key
	c.expiry.mu.Lock()
	if vi := c.expiry.vectors[key]; vi != nil {
		c.expiry.mu.Unlock()
		return vi
	}
	t, m, dims, ok := vectorSettings(&c.props, path)
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
	vi := &vecIndex{key: key, path: path, typ: t, metric: m, dims: dims, slot: make(map[*byte]int, n),
		recs: make([]record, 0, n), data: make([]float32, 0, n*dims)}
	if m == vector.Cosine {
		vi.norms = make([]float64, 0, n)
	}
	c.scanForBuild(func(rec record) { vi.change("", rec) })
	c.catchUp(b, vi.change)
	defer c.expiry.mu.Unlock()
	if !c.finishBuildLocked(bkey, b) {
		return nil
	}
	if t2, m2, dims2, ok := vectorSettings(&c.props, path); !ok || t2 != t || m2 != m || dims2 != dims {
		return nil
	}
	if c.expiry.vectors == nil {
		c.expiry.vectors = vecIndexes{}
	}
	c.expiry.vectors[key] = vi
	return vi
}

// nearest returns the records of the need items live at now, in the
// partitions whose key begins with pk, whose vectors are nearest q, and
// every item tied with the last of them; with the expiry rule of the same
// instant. ok is false when fewer than need items have a vector that can be
// compared with q, or when a policy change has dropped the index meanwhile.
// The caller holds c.batchMu for reading.
func (c *Container) nearest(vi *vecIndex, q []float32, need int, pk PartitionKey, now int64) (recs []record, rule expiryRule, ok bool) {
	c.expiry.mu.Lock()
	defer c.expiry.mu.Unlock()
	if c.expiry.vectors[vi.key] != vi {
		return nil, rule, false
	}
	rule = c.rule
	// A max-heap of the need smallest keys found so far (a key orders the
	// nearest first), and the items tied with its top that did not fit.
	type cand struct {
		key float32
		i   int
	}
	heap := make([]cand, 0, need)
	var ties []int
	higher := vi.metric.HigherIsCloser()
	d := vi.dims
	qn := vector.SumSquares(q)
	for i, rec := range vi.recs {
		var s float64
		var sok bool
		if vi.norms != nil {
			// Score's value, with the item's sum of squares kept.
			s, sok = vector.CosineOf(vector.Dot(vi.data[i*d:(i+1)*d], q), vi.norms[i], qn)
		} else {
			s, sok = vi.metric.Score(vi.data[i*d:(i+1)*d], q)
		}
		if !sok || !rule.live(rec, now) || !strings.HasPrefix(rec.pk(), pk.enc) {
			continue
		}
		// Ordered as VectorDistance's value is: rounded to float32.
		k := float32(s)
		if higher {
			k = -k
		}
		switch {
		case len(heap) < need:
			heap = append(heap, cand{k, i})
			for j := len(heap) - 1; j > 0; {
				p := (j - 1) / 2
				if heap[p].key >= heap[j].key {
					break
				}
				heap[p], heap[j] = heap[j], heap[p]
				j = p
			}
		case k == heap[0].key:
			ties = append(ties, i)
		case k < heap[0].key:
			top := heap[0]
			heap[0] = cand{k, i}
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
				ties = append(ties, top.i)
			} else {
				ties = ties[:0]
			}
		}
	}
	if len(heap) < need {
		return nil, rule, false
	}
	recs = make([]record, 0, len(heap)+len(ties))
	for _, h := range heap {
		recs = append(recs, vi.recs[h.i])
	}
	for _, i := range ties {
		recs = append(recs, vi.recs[i])
	}
	return recs, rule, true
}

// runVector evaluates a query ordered by its VectorDistance to a constant
// (query.VectorTopK) on the items a vector index finds nearest, when the
// container has one of the path and the results fit in one page. ok is
// false, with no error, when it cannot (the query is evaluated as usual).
func (c *Container) runVector(ctx context.Context, q *query.Query, params map[string]any, pk PartitionKey, now int64, from *query.Resume, page int, env *query.Env) (res query.Result, recs []record, ok bool, err error) {
	if !useIndexes || from != nil {
		return res, nil, false, nil
	}
	path, qv, need, ok := q.VectorTopK(params)
	if !ok || need == 0 || (page > 0 && need > page) {
		return res, nil, false, nil
	}
	c.batchMu.RLock()
	defer c.batchMu.RUnlock()
	vi := c.vectorIndexFor(path)
	if vi == nil || len(qv) != vi.dims {
		return res, nil, false, nil
	}
	if env.Vector != nil {
		// The query compares as the policy it began with says.
		dist, typ := env.Vector(path)
		if m, _ := vector.ParseMetric(dist); m != vi.metric {
			return res, nil, false, nil
		}
		if t, _ := vector.ParseType(typ); t != vi.typ {
			return res, nil, false, nil
		}
	}
	qf := make([]float32, len(qv))
	for i, x := range qv {
		if qf[i], ok = vi.typ.Element(x); !ok {
			return res, nil, false, nil
		}
	}
	cands, rule, ok := c.nearest(vi, qf, need, pk, now)
	if !ok {
		return res, nil, false, nil
	}
	res, recs, err = execOn(ctx, q, params, pk, now, cands, rule, nil, env)
	return res, recs, true, err
}
