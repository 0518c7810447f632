package vector

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Graph is an approximate nearest-neighbour index of vectors numbered 0, 1,
// 2, ...: a hierarchical navigable small world (HNSW: Malkov and Yashunin,
// "Efficient and robust approximate nearest neighbor search using
// Hierarchical Navigable Small World graphs", IEEE TPAMI 2018). Each node
// is linked to its near neighbours, chosen by the paper's heuristic (a
// candidate is kept when it is nearer the node than any neighbour kept
// before it), on layer 0 and on each layer up to a random level (fewer
// nodes, longer links, as layers go up). A search descends greedily from
// the top layer's entry point and searches layer 0 with a list of ef
// candidates.
//
// One writer at a time adds nodes (its caller orders them), and any number
// of searches run meanwhile with no lock: a node's links are atomic
// values, rewritten in place, so a search may see a list half rewritten,
// which only changes the path it takes; a node is reachable once its own
// links are set, and counted by Len only once every link to it is made. A
// graph never removes a node: the caller's accept function
// passes over the ones it has removed (they stay as waypoints), and the
// caller makes a new graph when there are too many.
//
// Distances within the graph are in float32 with eight sums at once: they
// choose candidates; the caller compares the ones a search returns exactly.
type Graph struct {
	metric Metric
	m      int                       // links a node keeps on layers above 0; twice that on layer 0
	efc    int                       // the search list size when adding a node
	ml     float64                   // level multiplier, 1/ln(m)
	vec    func(id uint32) []float32 // the vectors
	rng    uint64                    // the writer's xorshift state

	nodes  atomic.Pointer[[]*graphChunk]
	n      atomic.Uint32 // nodes stored, the one being added included
	linked atomic.Uint32 // nodes whole: stored and linked into the graph
	entry  atomic.Uint64 // the entry point: id<<8 | level, plus 1; 0: none
	pool   sync.Pool     // *searcher
}

// graphChunk holds the nodes of chunkSize consecutive ids.
type graphChunk [chunkSize]atomic.Pointer[graphNode]

type graphNode struct {
	scale float32           // 1/|v| for cosine (0 for the zero vector), else 1
	links [][]atomic.Uint32 // by layer: the count, then the neighbours
}

// NewGraph returns an empty graph of the vectors vec returns, compared by
// metric, whose nodes keep m neighbours (2m on layer 0) chosen among efc
// candidates.
func NewGraph(metric Metric, m, efc int, vec func(id uint32) []float32) *Graph {
	g := &Graph{metric: metric, m: m, efc: max(efc, m), ml: 1 / math.Log(float64(m)), vec: vec, rng: 0x9e3779b97f4a7c15}
	g.nodes.Store(&[]*graphChunk{})
	return g
}

// Len returns the number of nodes linked: ids 0 to Len()-1 are in the
// graph, reachable by a search. The node an Add is linking is not counted
// until it is done, though a search may already reach it.
func (g *Graph) Len() int { return int(g.linked.Load()) }

func (g *Graph) node(id uint32) *graphNode {
	cs := *g.nodes.Load()
	if int(id>>chunkBits) >= len(cs) {
		return nil
	}
	return cs[id>>chunkBits][id&(chunkSize-1)].Load()
}

// scaleOf returns what a vector's distances are scaled by (cosine: the
// inverse of its length).
func (g *Graph) scaleOf(v []float32) float32 {
	if g.metric != Cosine {
		return 1
	}
	ss := SumSquares(v)
	if ss == 0 {
		return 0
	}
	return float32(1 / math.Sqrt(ss))
}

// dist is the distance from a vector (with its scale) to node id: smaller
// is nearer, whatever the metric.
func (g *Graph) dist(q []float32, qs float32, id uint32, n *graphNode) float32 {
	v := g.vec(id)
	switch g.metric {
	case Euclidean:
		return l2sq32(q, v)
	case DotProduct:
		return -dot32(q, v)
	}
	if qs == 0 || n.scale == 0 {
		return 2 // beyond every defined cosine distance
	}
	return 1 - dot32(q, v)*qs*n.scale
}

// Add adds the next node, id Len(), whose vector vec returns. The caller
// runs one Add at a time.
func (g *Graph) Add() {
	id := g.n.Load()
	v := g.vec(id)
	level := g.randomLevel()
	nd := &graphNode{scale: g.scaleOf(v), links: make([][]atomic.Uint32, level+1)}
	for l := range nd.links {
		nd.links[l] = make([]atomic.Uint32, g.maxLinks(l)+1)
	}
	cs := *g.nodes.Load()
	if int(id>>chunkBits) == len(cs) {
		grown := append(cs[:len(cs):len(cs)], &graphChunk{})
		g.nodes.Store(&grown)
		cs = grown
	}
	cs[id>>chunkBits][id&(chunkSize-1)].Store(nd)
	g.n.Store(id + 1)
	defer g.linked.Store(id + 1)
	if testHookAdding != nil {
		testHookAdding(g, id)
	}

	if g.metric == Cosine && nd.scale == 0 {
		return // the zero vector is near nothing: it stays unlinked
	}
	e := g.entry.Load()
	if e == 0 {
		g.entry.Store(uint64(id)<<8 | uint64(level) + 1)
		return
	}
	ep, top := uint32((e-1)>>8), int((e-1)&0xff)
	s := g.searcher()
	defer g.pool.Put(s)
	cur := []cand{{g.dist(v, nd.scale, ep, g.node(ep)), ep}}
	for l := top; l > level; l-- {
		cur[0] = g.greedy(v, nd.scale, cur[0], l)
	}
	for l := min(level, top); l >= 0; l-- {
		found := g.searchLayer(s, v, nd.scale, cur, g.efc, l, nil)
		nbrs := g.selectNeighbours(found, g.m)
		setLinks(nd.links[l], nbrs)
		for _, nb := range nbrs {
			g.link(nb.id, id, nb.d, l)
		}
		cur = append(cur[:0], found...)
	}
	if level > top {
		g.entry.Store(uint64(id)<<8 | uint64(level) + 1)
	}
}

// maxLinks is how many neighbours a node keeps on layer l.
func (g *Graph) maxLinks(l int) int {
	if l == 0 {
		return 2 * g.m
	}
	return g.m
}

// testHookAdding, when set (by tests), is called by Add once the node id is
// stored, before it is linked.
var testHookAdding func(g *Graph, id uint32)

func (g *Graph) randomLevel() int {
	g.rng ^= g.rng << 13
	g.rng ^= g.rng >> 7
	g.rng ^= g.rng << 17
	u := (float64(g.rng>>11) + 0.5) / (1 << 53)
	return min(int(-math.Log(u)*g.ml), 32)
}

// setLinks writes nbrs as a node's links of one layer, entries first, then
// the count.
func setLinks(ls []atomic.Uint32, nbrs []cand) {
	for i, nb := range nbrs {
		ls[i+1].Store(nb.id)
	}
	ls[0].Store(uint32(len(nbrs)))
}

// link adds a link from node a to node b (at distance d) on layer l; when
// a has too many, it keeps those the heuristic chooses.
func (g *Graph) link(a, b uint32, d float32, l int) {
	na := g.node(a)
	ls := na.links[l]
	n := int(ls[0].Load())
	if n < len(ls)-1 {
		ls[n+1].Store(b)
		ls[0].Store(uint32(n + 1))
		return
	}
	va := g.vec(a)
	cands := make([]cand, 0, n+1)
	for i := 1; i <= n; i++ {
		id := ls[i].Load()
		cands = append(cands, cand{g.dist(va, na.scale, id, g.node(id)), id})
	}
	cands = append(cands, cand{d, b})
	sortCands(cands)
	setLinks(ls, g.selectNeighbours(cands, n))
}

// selectNeighbours returns up to m of cands (nearest first) by the
// paper's heuristic: a candidate is kept when it is nearer the base node
// than any candidate kept before it. When the heuristic keeps fewer than
// m, the nearest of those it passed over fill the rest.
func (g *Graph) selectNeighbours(cands []cand, m int) []cand {
	kept := make([]cand, 0, m)
	var passed []cand
	for _, c := range cands {
		if len(kept) == m {
			break
		}
		vc, nc := g.vec(c.id), g.node(c.id)
		good := true
		for _, k := range kept {
			if g.dist(vc, nc.scale, k.id, g.node(k.id)) < c.d {
				good = false
				break
			}
		}
		if good {
			kept = append(kept, c)
		} else {
			passed = append(passed, c)
		}
	}
	for _, c := range passed {
		if len(kept) == m {
			break
		}
		kept = append(kept, c)
	}
	return kept
}

// greedy walks layer l from cur to the node nearest q it can reach by
// steps that each come nearer.
func (g *Graph) greedy(q []float32, qs float32, cur cand, l int) cand {
	for changed := true; changed; {
		changed = false
		ls := g.node(cur.id).links[l]
		n := int(ls[0].Load())
		for i := 1; i <= n; i++ {
			id := ls[i].Load()
			nd := g.node(id)
			if nd == nil {
				continue
			}
			if d := g.dist(q, qs, id, nd); d < cur.d {
				cur, changed = cand{d, id}, true
			}
		}
	}
	return cur
}

// cand is a node and its distance to what is searched for.
type cand struct {
	d  float32
	id uint32
}

// searcher is what one search needs: the nodes it has visited (those whose
// mark is its stamp) and its two heaps.
type searcher struct {
	mark  []uint32
	stamp uint32
	todo  minHeap
	best  minHeap // with distances negated: the farthest on top
	out   []cand
}

func (g *Graph) searcher() *searcher {
	s, _ := g.pool.Get().(*searcher)
	if s == nil {
		s = &searcher{}
	}
	if n := int(g.n.Load()); len(s.mark) < n {
		s.mark = make([]uint32, n+n/4)
		s.stamp = 0
	}
	s.stamp++
	if s.stamp == 0 {
		clear(s.mark)
		s.stamp = 1
	}
	return s
}

// searchLayer searches layer l from the entry points eps for the ef nodes
// nearest q that accept takes (nil: all), and returns them, nearest first
// (in s.out). Nodes accept refuses are walked through but not returned, so
// a search goes on until it has ef accepted nodes nearer than every node
// left to walk, or has walked every node it can reach.
func (g *Graph) searchLayer(s *searcher, q []float32, qs float32, eps []cand, ef, l int, accept func(uint32) bool) []cand {
	s.todo, s.best = s.todo[:0], s.best[:0]
	keep := func(c cand) {
		s.best.push(cand{-c.d, c.id})
		if len(s.best) > ef {
			s.best.pop()
		}
	}
	for _, ep := range eps {
		if int(ep.id) < len(s.mark) {
			s.mark[ep.id] = s.stamp
		}
		s.todo.push(ep)
		if accept == nil || accept(ep.id) {
			keep(ep)
		}
	}
	for len(s.todo) > 0 {
		c := s.todo.pop()
		if len(s.best) >= ef && c.d > -s.best[0].d {
			break
		}
		nd := g.node(c.id)
		if l >= len(nd.links) {
			continue
		}
		ls := nd.links[l]
		n := min(int(ls[0].Load()), len(ls)-1)
		for i := 1; i <= n; i++ {
			id := ls[i].Load()
			if int(id) >= len(s.mark) || s.mark[id] == s.stamp {
				continue // visited, or added after the search began
			}
			s.mark[id] = s.stamp
			nb := g.node(id)
			d := g.dist(q, qs, id, nb)
			if len(s.best) < ef || d < -s.best[0].d {
				s.todo.push(cand{d, id})
				if accept == nil || accept(id) {
					keep(cand{d, id})
				}
			}
		}
	}
	s.out = s.out[:0]
	for len(s.best) > 0 {
		c := s.best.pop()
		s.out = append(s.out, cand{-c.d, c.id})
	}
	slices.Reverse(s.out)
	return s.out
}

// Search returns the ids of up to ef nodes near q that accept takes (nil:
// all), nearest first by the graph's float32 distances. It visits nodes
// until it has ef accepted ones nearer than any left to visit, or has
// visited every node it can reach: fewer than ef come back only then.
// Search may run while Add does.
func (g *Graph) Search(q []float32, ef int, accept func(id uint32) bool) []uint32 {
	e := g.entry.Load()
	if e == 0 || ef <= 0 {
		return nil
	}
	ep, top := uint32((e-1)>>8), int((e-1)&0xff)
	qs := g.scaleOf(q)
	cur := cand{g.dist(q, qs, ep, g.node(ep)), ep}
	for l := top; l > 0; l-- {
		cur = g.greedy(q, qs, cur, l)
	}
	s := g.searcher()
	defer g.pool.Put(s)
	found := g.searchLayer(s, q, qs, []cand{cur}, ef, 0, accept)
	ids := make([]uint32, len(found))
	for i, c := range found {
		ids[i] = c.id
	}
	return ids
}

func sortCands(cs []cand) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].d < cs[j-1].d; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// minHeap orders candidates by distance, the nearest on top. A searcher
// keeps its farthest on top by pushing them with their distances negated.
type minHeap []cand

func (h *minHeap) push(c cand) {
	*h = append(*h, c)
	s := *h
	for j := len(s) - 1; j > 0; {
		p := (j - 1) / 2
		if s[p].d <= s[j].d {
			break
		}
		s[p], s[j] = s[j], s[p]
		j = p
	}
}

func (h *minHeap) pop() cand {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for j := 0; ; {
		l, r, m := 2*j+1, 2*j+2, j
		if l < len(s) && s[l].d < s[m].d {
			m = l
		}
		if r < len(s) && s[r].d < s[m].d {
			m = r
		}
		if m == j {
			break
		}
		s[m], s[j] = s[j], s[m]
		j = m
	}
	*h = s
	return top
}

// dot32Go is the dot product of a and b (as long as a) in float32, eight
// sums at once.
func dot32Go(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x, y := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		s4 += x[4] * y[4]
		s5 += x[5] * y[5]
		s6 += x[6] * y[6]
		s7 += x[7] * y[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3) + (s4 + s5) + (s6 + s7)
}

// l2sq32Go is the squared euclidean distance of a and b in float32.
func l2sq32Go(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		x, y := a[i:i+4:i+4], b[i:i+4:i+4]
		d0, d1, d2, d3 := x[0]-y[0], x[1]-y[1], x[2]-y[2], x[3]-y[3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(a); i++ {
		d := a[i] - b[i]
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}
