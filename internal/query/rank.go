package query

import (
	"slices"
	"strings"

	"github.com/lethedb/lethe/internal/fulltext"
)

// ORDER BY RANK <scoring function>: FullTextScore(path, "term", ...), the
// BM25 relevance of the text at path to the search strings, or RRF(f1, f2,
// ... [, weights]), the reciprocal rank fusion of FullTextScore and
// VectorDistance scores. Results come most relevant first.
//
// FullTextScore analyzes the text and its search strings as the full-text
// functions do (fulltext.go), in the path's language. Its statistics (how
// many items have text at the path, their average number of terms, how
// many hold each term) are those Env.TextStats gives: lethe's container
// passes those of all its live items, whatever the query reads; without
// it, those of the items the query is given. The score of an item is, over
// the distinct terms of the search strings,
//
//	Σ idf(t) · tf·(k1+1) / (tf + k1·(1 - b + b·len/avglen)),
//	idf(t) = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5)),  k1 = 1.2, b = 0.75,
//
// tf the term's count in the item's text, len its number of terms.
//
// RRF ranks the items by each of its scoring functions (1 for the most
// relevant; equal scores share a rank) and scores each item
// Σ weight / (60 + rank) over the functions that rank it: a FullTextScore
// ranks the items whose text holds a term, a VectorDistance those it is
// defined for. The weights are 1 unless an array of numbers, one for each
// function, follows them. Equal scores are ordered by item, as ORDER BY
// orders its ties.

// RRF's rank constant, its customary value (BM25's are fulltext.K1 and
// fulltext.B).
const rrfConst = 60

// TextStats are the statistics FullTextScore scores by, of the text at one
// path in one language.
type TextStats struct {
	Docs  int   // the items whose value at the path is a string
	Terms int   // the terms of those strings, in all
	DF    []int // for each term asked about, how many of those items hold it
}

// CorpusStats computes the TextStats of the text at path (its property
// names) in docs, analyzed in lang, for terms (analyzed terms, as
// fulltext.Terms gives them).
func CorpusStats(docs []Doc, path []string, lang string, terms []string) TextStats {
	st := TextStats{DF: make([]int, len(terms))}
	seen := make([]bool, len(terms))
	for i := range docs {
		text, ok := TextAt(docs[i].JSON, path)
		if !ok {
			continue
		}
		tt := fulltext.Terms(text, lang)
		st.Docs++
		st.Terms += len(tt)
		clear(seen)
		for _, t := range tt {
			if j := slices.Index(terms, t); j >= 0 && !seen[j] {
				seen[j] = true
				st.DF[j]++
			}
		}
	}
	return st
}

func init() {
	rankOnly := func(ev *evaluator, _ []value) value {
		ev.fail("scoring functions are only allowed in the ORDER BY RANK clause")
		return undef
	}
	def("FullTextScore", 2, -1, rankOnly)
	def("RRF", 1, -1, rankOnly)
	funcs["FULLTEXTSCORE"].rank = true
	funcs["RRF"].rank = true
}

// acceptRank consumes the RANK of ORDER BY RANK: the identifier RANK
// followed by another (the scoring function's name); anything else is
// left unread.
func (p *parser) acceptRank() bool {
	t := p.peek()
	if t.typ != tIdent || !strings.EqualFold(t.val, "RANK") {
		return false
	}
	lex, tok, back, prev, ntok := p.lex, p.tok, p.back, p.prev, p.ntok
	p.next()
	if p.peek().typ == tIdent {
		return true
	}
	p.lex, p.tok, p.back, p.prev, p.ntok = lex, tok, back, prev, ntok
	return false
}

// checkRank checks the scoring expression of ORDER BY RANK: FullTextScore
// or RRF, whose arguments are FullTextScore and VectorDistance calls, then
// perhaps the weights; FullTextScore's search strings are constants.
func checkRank(text string, e expr) *Error {
	x, ok := e.(*call)
	if !ok || !x.fn.rank {
		return errAt(text, e.position(), "ORDER BY RANK takes a scoring function: FullTextScore or RRF")
	}
	if x.fn.name == "FullTextScore" {
		return checkTextScore(text, x)
	}
	for i, a := range x.args {
		y, ok := a.(*call)
		switch {
		case ok && y.fn.name == "RRF":
			e := errAt(text, y.pos, "'RRF' is not a recognized built-in function name.")
			e.Code = codeUnknownFunc
			return e
		case ok && y.fn.name == "FullTextScore":
			if err := checkTextScore(text, y); err != nil {
				return err
			}
		case ok && y.fn.vector:
		case i == len(x.args)-1 && i > 0 && isConst(a):
		default:
			return errAt(text, a.position(), "the arguments of RRF must be scoring functions (FullTextScore, VectorDistance), then perhaps an array of weights")
		}
	}
	return nil
}

// checkTextScore checks that the search strings of a FullTextScore call
// are constants (string literals or parameters).
func checkTextScore(text string, x *call) *Error {
	for _, a := range x.args[1:] {
		if !isConst(a) {
			return errAt(text, a.position(), "The second through last arguments of the 'FullTextScore' function must be string literals.")
		}
	}
	return nil
}

// rankComponents returns the scoring calls of the ORDER BY RANK
// expression x: x itself, or RRF's arguments but its weights.
func rankComponents(x *call) []*call {
	if x.fn.name == "FullTextScore" {
		return []*call{x}
	}
	var cs []*call
	for _, a := range x.args {
		if y, ok := a.(*call); ok {
			cs = append(cs, y)
		}
	}
	return cs
}

// textScore is what one FullTextScore call scores with, worked out at its
// first evaluation.
type textScore struct {
	lang  string
	terms []string  // the distinct terms of the search strings
	idf   []float64 // of each term
	avg   float64   // the average number of terms of a text
}

// scoreSettings returns the settings of the FullTextScore call x.
func (ev *evaluator) scoreSettings(x *call) *textScore {
	if ts := ev.textScores[x]; ts != nil {
		return ts
	}
	ev.textCall = x
	ts := &textScore{lang: ev.textLang()}
	for _, a := range x.args[1:] {
		v := ev.eval(a)
		strs := []value{v}
		if v.k == kArr {
			strs = v.a
		}
		for _, s := range strs {
			if s.k != kStr {
				ev.fail("the search strings of FullTextScore must be strings, found %s", describeValue(s))
			}
			for _, t := range fulltext.Terms(s.s, ts.lang) {
				if !slices.Contains(ts.terms, t) {
					ts.terms = append(ts.terms, t)
				}
			}
		}
	}
	var st TextStats
	if path, ok := itemPath(x.args[0]); ok {
		if ev.env.TextStats != nil {
			st = ev.env.TextStats(path, ts.lang, ts.terms)
		} else {
			st = CorpusStats(ev.docs, path, ts.lang, ts.terms)
		}
	}
	ev.tick(st.Docs)
	ts.idf, ts.avg = fulltext.Weights(st.Docs, st.Terms, st.DF, len(ts.terms))
	if ev.textScores == nil {
		ev.textScores = map[*call]*textScore{}
	}
	ev.textScores[x] = ts
	return ts
}

// textScore evaluates the FullTextScore call x on the current row: its
// BM25 score, 0 when its text holds none of the terms (or is no string).
func (ev *evaluator) textScore(x *call) float64 {
	ts := ev.scoreSettings(x)
	v := ev.eval(x.args[0])
	if v.k != kStr || len(ts.terms) == 0 {
		return 0
	}
	text := fulltext.Terms(v.s, ts.lang)
	ev.tick(len(text))
	score := 0.0
	for i, t := range ts.terms {
		tf := 0
		for _, w := range text {
			if w == t {
				tf++
			}
		}
		if tf == 0 {
			continue
		}
		score += fulltext.BM25(ts.idf[i], tf, len(text), ts.avg)
	}
	return score
}

// rankKeys returns the values of the scoring functions of ORDER BY RANK
// for the current row, each a number that is higher for the more relevant
// (a VectorDistance's euclidean distance negated), or undefined when the
// function does not rank the row.
func (ev *evaluator) rankKeys() []value {
	cs := rankComponents(ev.q.orderBy[0].x.(*call))
	keys := make([]value, len(cs))
	for i, c := range cs {
		if c.fn.vector {
			v := ev.eval(c)
			if v.k == kNum && !ev.vecSettings(c.memoOrSelf()).metric.HigherIsCloser() {
				v.n = -v.n
			}
			keys[i] = v
			continue
		}
		if s := ev.textScore(c); s > 0 {
			keys[i] = numVal(s)
		}
	}
	return keys
}

// memoOrSelf is the call whose settings x uses.
func (x *call) memoOrSelf() *call {
	if x.memo != nil {
		return x.memo
	}
	return x
}

// fuseRanks replaces the scoring values of each row (rankKeys) by its
// one ORDER BY key: for FullTextScore its score, for RRF the fused score,
// negated so that ascending keys put the most relevant first. Rows no
// function ranks get a key after every number.
func (ev *evaluator) fuseRanks(rows []row) {
	x := ev.q.orderBy[0].x.(*call)
	cs := rankComponents(x)
	if x.fn.name == "FullTextScore" {
		for i := range rows {
			rows[i].keys = []value{negKey(rows[i].keys[0])}
		}
		return
	}
	weights := make([]float64, len(cs))
	for i := range weights {
		weights[i] = 1
	}
	if len(x.args) > len(cs) {
		w := ev.eval(x.args[len(x.args)-1])
		if w.k != kArr || len(w.a) != len(cs) {
			ev.fail("the weights of RRF must be an array of %d numbers, one for each scoring function, found %s", len(cs), describeValue(w))
		}
		for i, e := range w.a {
			if e.k != kNum {
				ev.fail("the weights of RRF must be numbers, found %s", describeValue(e))
			}
			weights[i] = e.n
		}
	}
	fused := make([]float64, len(rows))
	ranked := make([]bool, len(rows))
	order := make([]int, 0, len(rows))
	for j := range cs {
		order = order[:0]
		for i := range rows {
			if rows[i].keys[j].k == kNum {
				order = append(order, i)
			}
		}
		ev.tick(len(order))
		slices.SortFunc(order, func(a, b int) int {
			return -compareTotal(rows[a].keys[j], rows[b].keys[j])
		})
		rank := 0
		for p, i := range order {
			if p == 0 || rows[i].keys[j].n != rows[order[p-1]].keys[j].n {
				rank = p + 1
			}
			fused[i] += weights[j] / float64(rrfConst+rank)
			ranked[i] = true
		}
	}
	for i := range rows {
		k := undef
		if ranked[i] {
			k = numVal(fused[i])
		}
		rows[i].keys = []value{negKey(k)}
	}
}

// negKey is the ascending key of a relevance v: -v, or after every number
// when v is undefined.
func negKey(v value) value {
	if v.k != kNum {
		return strVal("")
	}
	return numVal(-v.n)
}
