package fulltext

import (
	"math"
	"slices"
)

// Index is an inverted index of the texts of a set of documents, analyzed
// in one language as Terms analyzes them: for each term, the documents
// that hold it and how many times (its postings); for each document, its
// number of terms; and for the whole set, how many documents and terms
// there are. It is what BM25 scores by (Score, TopK) and what a search for
// terms finds its candidates in (Containing).
//
// Documents are numbered by the index (Add returns the number, Remove
// frees it for reuse), so that a caller keeps what a document stands for
// in a slice beside it. Removing a document costs O(its distinct terms):
// each of its postings is swapped with the last of its list, and the
// moved posting's document told where it went.
//
// An Index is not safe for concurrent use; its caller guards it.
type Index struct {
	lang   string
	ids    map[string]int32 // the number of each term
	lists  [][]Posting      // the postings of each term, by number; nil: free
	names  []string         // each term, by number
	free   []int32          // numbers of terms no document holds any more
	docs   []doc            // by document number
	vacant []int32          // document numbers free for reuse
	bounds []bound          // by term number
	n      int              // documents
	total  int64            // their terms, repeats included

	acc     []float64 // scratch of TopK: each document's score so far
	touched []int32   // scratch of TopK: the documents it scored
	parts   []float64 // scratch of TopK: the rarest term's part of each of its postings
}

// bound is what bounds a term's part in the score of the documents in its
// postings: the most times one of them held it, the fewest terms one of
// them had, since the term last had no postings (removals leave it
// alone, so it may be loose, never wrong).
type bound struct{ maxTF, minLen int32 }

// Posting is one document holding a term: its number, how many times it
// holds the term, and its number of terms (kept here too, so that scoring
// a list reads it in order).
type Posting struct {
	Doc int32
	TF  int32
	Len int32
	at  int32 // the term's place in the document's terms
}

// doc is a document of the index: its number of terms (-1: the number is
// free) and its distinct terms.
type doc struct {
	len   int32
	terms []docTerm
}

// docTerm is one of a document's distinct terms: its number, how many
// times the document holds it, and the place of its posting in the term's
// list.
type docTerm struct{ term, tf, at int32 }

// NewIndex returns an empty index of texts in the language lang (a
// policy's language, as Terms takes it).
func NewIndex(lang string) *Index {
	return &Index{lang: lang, ids: map[string]int32{}}
}

// Lang is the language of the index's texts.
func (x *Index) Lang() string { return x.lang }

// Add indexes a document whose text is text, and returns its number.
func (x *Index) Add(text string) int32 {
	terms := Terms(text, x.lang)
	d := int32(len(x.docs))
	if n := len(x.vacant); n > 0 {
		d, x.vacant = x.vacant[n-1], x.vacant[:n-1]
	} else {
		x.docs = append(x.docs, doc{})
	}
	x.n++
	x.total += int64(len(terms))
	dt := make([]docTerm, 0, min(len(terms), 16))
	// Each distinct term once, with its count: in place for a short text,
	// by a map for a long one.
	var seen map[string]int
	if len(terms) > 64 {
		seen = make(map[string]int, len(terms)/2)
	}
	var counts []int32
	var order []string
	for _, t := range terms {
		i := -1
		if seen != nil {
			if j, ok := seen[t]; ok {
				i = j
			}
		} else {
			i = slices.Index(order, t)
		}
		if i >= 0 {
			counts[i]++
			continue
		}
		if seen != nil {
			seen[t] = len(order)
		}
		order = append(order, t)
		counts = append(counts, 1)
	}
	for i, t := range order {
		id := x.termID(t)
		dt = append(dt, docTerm{term: id, tf: counts[i], at: int32(len(x.lists[id]))})
		x.lists[id] = append(x.lists[id], Posting{Doc: d, TF: counts[i], Len: int32(len(terms)), at: int32(i)})
		b := &x.bounds[id]
		b.maxTF, b.minLen = max(b.maxTF, counts[i]), min(b.minLen, int32(len(terms)))
	}
	x.docs[d] = doc{len: int32(len(terms)), terms: dt}
	return d
}

// termID returns the number of the term t, giving it one if it has none.
func (x *Index) termID(t string) int32 {
	if id, ok := x.ids[t]; ok {
		return id
	}
	var id int32
	if n := len(x.free); n > 0 {
		id, x.free = x.free[n-1], x.free[:n-1]
		x.names[id] = t
	} else {
		id = int32(len(x.lists))
		x.lists = append(x.lists, nil)
		x.names = append(x.names, t)
		x.bounds = append(x.bounds, bound{})
	}
	x.bounds[id] = bound{maxTF: 0, minLen: math.MaxInt32}
	x.ids[t] = id
	return id
}

// Remove forgets the document d, which Add returned and no Remove has
// removed since.
func (x *Index) Remove(d int32) {
	dd := &x.docs[d]
	for _, dt := range dd.terms {
		l := x.lists[dt.term]
		last := int32(len(l) - 1)
		if dt.at != last {
			moved := l[last]
			l[dt.at] = moved
			x.docs[moved.Doc].terms[moved.at].at = dt.at
		}
		l = l[:last]
		switch {
		case last == 0:
			delete(x.ids, x.names[dt.term])
			x.names[dt.term] = ""
			l = nil
			x.free = append(x.free, dt.term)
		case cap(l) > 64 && len(l) < cap(l)/4:
			l = slices.Clip(slices.Clone(l))
		}
		x.lists[dt.term] = l
	}
	x.n--
	x.total -= int64(dd.len)
	*dd = doc{len: -1}
	x.vacant = append(x.vacant, d)
}

// Docs returns how many documents the index holds.
func (x *Index) Docs() int { return x.n }

// TotalTerms returns the number of terms of the documents, repeats
// included.
func (x *Index) TotalTerms() int64 { return x.total }

// Len returns the number of terms of the document d.
func (x *Index) Len(d int32) int { return int(x.docs[d].len) }

// Postings returns the postings of the analyzed term t (nil if no document
// holds it), in no particular order. The caller must not change them, and
// they are good until the index next changes.
func (x *Index) Postings(t string) []Posting {
	if id, ok := x.ids[t]; ok {
		return x.lists[id]
	}
	return nil
}

// TF returns how many times the document d holds the analyzed term t.
func (x *Index) TF(d int32, t string) int {
	id, ok := x.ids[t]
	if !ok {
		return 0
	}
	for _, dt := range x.docs[d].terms {
		if dt.term == id {
			return int(dt.tf)
		}
	}
	return 0
}

// Containing calls fn with each document that holds every one of terms
// (analyzed terms; none: no document), once.
func (x *Index) Containing(terms []string, fn func(d int32)) {
	if len(terms) == 0 {
		return
	}
	ids := make([]int32, len(terms))
	for i, t := range terms {
		id, ok := x.ids[t]
		if !ok {
			return
		}
		ids[i] = id
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	// The shortest list, each of its documents checked for the others.
	shortest := slices.MinFunc(ids, func(a, b int32) int { return len(x.lists[a]) - len(x.lists[b]) })
next:
	for _, p := range x.lists[shortest] {
		for _, id := range ids {
			if id != shortest && !x.holds(p.Doc, id) {
				continue next
			}
		}
		fn(p.Doc)
	}
}

// holds reports whether the document d holds the term numbered id.
func (x *Index) holds(d, id int32) bool {
	for _, dt := range x.docs[d].terms {
		if dt.term == id {
			return true
		}
	}
	return false
}

// BM25's parameters, their customary values.
const (
	K1 = 1.2
	B  = 0.75
)

// IDF is BM25's inverse document frequency of a term that df of docs
// documents hold: ln(1 + (docs - df + 0.5) / (df + 0.5)).
func IDF(docs, df int) float64 {
	return math.Log(1 + (float64(docs)-float64(df)+0.5)/(float64(df)+0.5))
}

// Weights returns what BM25 scores n terms by, from the statistics of a
// set of documents (docs of them, holding terms terms in all, df[i] of
// them the i-th term; a missing df is 0): each term's idf and the average
// number of a document's terms (0 without documents).
func Weights(docs, terms int, df []int, n int) (idf []float64, avg float64) {
	if docs > 0 {
		avg = float64(terms) / float64(docs)
	}
	idf = make([]float64, n)
	for i := range idf {
		d := 0
		if i < len(df) {
			d = df[i]
		}
		idf[i] = IDF(docs, d)
	}
	return idf, avg
}

// BM25 is the part of a document's BM25 score that a term brings: the
// term's idf, its count tf in the document, the document's number of
// terms and the average number of a document's terms (0: none).
// FullTextScore's evaluation and an Index's TopK both score with it, so
// that they agree to the last bit.
func BM25(idf float64, tf, docLen int, avg float64) float64 {
	norm := 1 - B
	if avg > 0 {
		norm += B * float64(docLen) / avg
	}
	return idf * float64(tf) * (K1 + 1) / (float64(tf) + K1*norm)
}

// Scored is a document and its score.
type Scored struct {
	Doc   int32
	Score float64
}

// TopK scores the documents that hold any of terms (distinct analyzed
// terms, with their idf, above 0 as BM25's always is, and the average
// number of a document's terms), adding each term's part in the order of terms, as
// FullTextScore does, and returns the k best of those keep accepts, with
// every one tied with the k-th (in no particular order). all reports
// whether those are every document keep accepts with a score above 0
// (false when it cannot tell). keep is asked only about documents that
// might be among the best.
//
// It reads the postings of the rarest term first, scoring each document
// whole (its terms are at hand), then the next rarest, skipping the
// documents an earlier list had, and stops when no document of the lists
// left can reach the k-th best score: the sum of those terms' bounds
// (their idf, their highest count, their shortest document) is below it.
// Common terms that cannot change the best are never read.
//
// When the rarest term is common too (its postings are more than a
// quarter of all the terms'), it first finds the k-th best part that term
// alone gives, and scores whole only the documents of its postings that
// can reach it with the other terms' bounds (firstList); failing that, it
// reads every list, in the order of terms, adding each posting's part to
// its document's score.
func (x *Index) TopK(terms []string, idf []float64, avg float64, k int, keep func(d int32) bool) (best []Scored, all bool) {
	if k <= 0 {
		return nil, false
	}
	ids := make([]int32, len(terms))
	var order []int // the terms present, rarest first
	for i, t := range terms {
		id, ok := x.ids[t]
		if !ok {
			id = -1
		} else {
			order = append(order, i)
		}
		ids[i] = id
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(x.lists[ids[a]]) - len(x.lists[ids[b]]) })
	// rest[j]: the most a document holding only terms order[j:] can score.
	rest := make([]float64, len(order)+1)
	for j := len(order) - 1; j >= 0; j-- {
		i := order[j]
		b := x.bounds[ids[i]]
		rest[j] = rest[j+1] + BM25(idf[i], int(b.maxTF), int(b.minLen), avg)
	}
	h := topHeap{k: k, keep: keep}
	total := 0
	for _, i := range order {
		total += len(x.lists[ids[i]])
	}
	tfs := make([]int32, len(terms))
	all, start := true, 0
	if len(order) > 1 && 4*len(x.lists[ids[order[0]]]) > total {
		if !x.firstList(ids, order[0], idf, avg, rest[1], &h, tfs) {
			h = topHeap{k: k, keep: keep}
			x.scoreAll(ids, idf, avg, &h)
			return append(h.heap, h.ties...), !h.rejected
		}
		all, start = false, 1
	}
	for j := start; j < len(order); j++ {
		if len(h.heap) == k && rest[j]*(1+1e-9) < h.heap[0].Score {
			all = false
			break
		}
	next:
		for _, p := range x.lists[ids[order[j]]] {
			x.termCounts(p.Doc, ids, tfs)
			for _, e := range order[:j] {
				if tfs[e] > 0 {
					continue next // scored with an earlier list
				}
			}
			h.offer(p.Doc, x.score(p.Doc, idf, avg, tfs))
		}
	}
	return append(h.heap, h.ties...), all && !h.rejected
}

// termCounts sets tfs[q] to how many times the document d holds the term
// numbered ids[q].
func (x *Index) termCounts(d int32, ids, tfs []int32) {
	clear(tfs)
	for _, dt := range x.docs[d].terms {
		for q, id := range ids {
			if dt.term == id {
				tfs[q] = dt.tf
			}
		}
	}
}

// score is the BM25 score of the document d, which holds the q-th term
// tfs[q] times: each term's part added, in order.
func (x *Index) score(d int32, idf []float64, avg float64, tfs []int32) float64 {
	s := 0.0
	for q, tf := range tfs {
		if tf > 0 {
			s += BM25(idf[q], int(tf), int(x.docs[d].len), avg)
		}
	}
	return s
}

// firstList offers h the documents of the postings of the term numbered
// ids[first], the rarest, that can be among the k best: it finds t, the
// k-th best part of that term alone, then scores whole only the documents
// whose part, plus rest (the most the other terms can add), reaches t.
// It reports whether that was enough: the k-th best whole score is t or
// more, so that every document left out scores less. When it is not (the
// best parts were documents h does not keep), the caller scores every
// document.
func (x *Index) firstList(ids []int32, first int, idf []float64, avg, rest float64, h *topHeap, tfs []int32) bool {
	l := x.lists[ids[first]]
	if len(l) < h.k {
		return false
	}
	if cap(x.parts) < len(l) {
		x.parts = make([]float64, len(l)+len(l)/4)
	}
	parts := x.parts[:len(l)]
	top := make([]float64, 0, h.k) // a min-heap of the k best parts
	for i, p := range l {
		s := BM25(idf[first], int(p.TF), int(p.Len), avg)
		parts[i] = s
		switch {
		case len(top) < h.k:
			top = append(top, s)
			for j := len(top) - 1; j > 0 && top[(j-1)/2] > top[j]; j = (j - 1) / 2 {
				top[(j-1)/2], top[j] = top[j], top[(j-1)/2]
			}
		case s > top[0]:
			top[0] = s
			for j := 0; ; {
				m := j
				if l := 2*j + 1; l < len(top) && top[l] < top[m] {
					m = l
				}
				if r := 2*j + 2; r < len(top) && top[r] < top[m] {
					m = r
				}
				if m == j {
					break
				}
				top[m], top[j] = top[j], top[m]
				j = m
			}
		}
	}
	t := top[0]
	cut := t - rest*(1+1e-9) - t*1e-9
	for i, p := range l {
		if parts[i] >= cut {
			x.termCounts(p.Doc, ids, tfs)
			h.offer(p.Doc, x.score(p.Doc, idf, avg, tfs))
		}
	}
	return len(h.heap) == h.k && h.heap[0].Score >= t
}

// scoreAll offers h every document in the postings of the terms numbered
// ids (-1: none), with its score: each term's part added, in order.
func (x *Index) scoreAll(ids []int32, idf []float64, avg float64, h *topHeap) {
	if len(x.acc) < len(x.docs) {
		x.acc = make([]float64, len(x.docs)+len(x.docs)/4)
	}
	acc, touched := x.acc, x.touched[:0]
	for i, id := range ids {
		if id < 0 {
			continue
		}
		for _, p := range x.lists[id] {
			if acc[p.Doc] == 0 {
				touched = append(touched, p.Doc)
			}
			acc[p.Doc] += BM25(idf[i], int(p.TF), int(p.Len), avg)
		}
	}
	for _, d := range touched {
		h.offer(d, acc[d])
		acc[d] = 0
	}
	x.touched = touched[:0]
}

// topHeap keeps the k best documents offered (a min-heap), those tied
// with its top that did not fit, and whether it turned one away.
type topHeap struct {
	k        int
	keep     func(d int32) bool
	heap     []Scored
	ties     []Scored
	rejected bool
}

// offer considers document d, whose score is s.
func (h *topHeap) offer(d int32, s float64) {
	switch {
	case len(h.heap) < h.k:
		if !h.keep(d) {
			return
		}
		h.heap = append(h.heap, Scored{d, s})
		for j := len(h.heap) - 1; j > 0; {
			p := (j - 1) / 2
			if h.heap[p].Score <= h.heap[j].Score {
				break
			}
			h.heap[p], h.heap[j] = h.heap[j], h.heap[p]
			j = p
		}
	case s < h.heap[0].Score:
		h.rejected = true
	case s == h.heap[0].Score:
		if h.keep(d) {
			h.ties = append(h.ties, Scored{d, s})
		}
	default:
		if !h.keep(d) {
			return
		}
		top := h.heap[0]
		h.heap[0] = Scored{d, s}
		h.down()
		if h.heap[0].Score == top.Score {
			h.ties = append(h.ties, top)
		} else {
			h.ties = h.ties[:0]
			h.rejected = true
		}
	}
}

// down restores the heap after its top changed.
func (h *topHeap) down() {
	heap := h.heap
	for j := 0; ; {
		l, r, m := 2*j+1, 2*j+2, j
		if l < len(heap) && heap[l].Score < heap[m].Score {
			m = l
		}
		if r < len(heap) && heap[r].Score < heap[m].Score {
			m = r
		}
		if m == j {
			return
		}
		heap[m], heap[j] = heap[j], heap[m]
		j = m
	}
}
