package query

import (
	"slices"

	"github.com/lethedb/lethe/internal/fulltext"
)

// The functions of the service's rewritten hybrid search queries, which
// its query plans give the SDKs to send to each partition key range
// (ServicePlan):
//
//   - COUNTIF(cond), an aggregate: how many rows cond is true for;
//   - _FullTextWordCount(text): the number of terms of a text, analyzed as
//     the full-text functions analyze it (the global statistics query sums
//     it over the ranges);
//   - _FullTextScore(text, ["s1", ...], docs, words, [hits1, ...]): the
//     BM25 score FullTextScore(text, "s1", ...) gives, with the statistics
//     of the whole container the SDK gathered: docs items, words terms in
//     their texts, hits_i items holding search string i;
//   - _VectorScore(vector, vector [, bruteForce [, options]]): the
//     VectorDistance of the two, ordered most similar first as
//     VectorDistance is.
//
// Unlike FullTextScore, _FullTextScore and _VectorScore stand anywhere an
// expression may, ORDER BY without RANK included.

func init() {
	funcs["COUNTIF"] = &funcDef{name: "COUNTIF", minArgs: 1, maxArgs: 1, agg: true}
	def("_VectorScore", 2, 4, nil)
	funcs["_VECTORSCORE"].vector = true
	def("_FullTextWordCount", 1, 1, func(ev *evaluator, a []value) value {
		if a[0].k != kStr {
			return undef
		}
		n := len(fulltext.Terms(a[0].s, ev.textLang()))
		ev.tick(n)
		return numVal(float64(n))
	})
	funcs["_FULLTEXTWORDCOUNT"].text = true
	def("_FullTextScore", 5, 5, func(ev *evaluator, a []value) value {
		ts := ev.givenScoreSettings(a)
		if ts == nil {
			return undef
		}
		if a[0].k != kStr || len(ts.terms) == 0 {
			return numVal(0)
		}
		text := fulltext.Terms(a[0].s, ts.lang)
		ev.tick(len(text))
		score := 0.0
		for i, t := range ts.terms {
			tf := 0
			for _, w := range text {
				if w == t {
					tf++
				}
			}
			if tf > 0 {
				score += fulltext.BM25(ts.idf[i], tf, len(text), ts.avg)
			}
		}
		return numVal(score)
	})
	funcs["_FULLTEXTSCORE"].text = true
}

// givenScoreSettings returns the settings of the _FullTextScore call being
// evaluated (ev.textCall) from its arguments a, worked out once: the
// distinct terms of its search strings, each term's item count that of the
// first search string holding it. It is nil when the arguments are not a
// text, an array of strings, two counts and an array of one count per
// search string.
func (ev *evaluator) givenScoreSettings(a []value) *textScore {
	x := ev.textCall
	if ts, ok := ev.textScores[x]; ok {
		return ts
	}
	strs, docs, words, hits := a[1], a[2], a[3], a[4]
	ok := strs.k == kArr && docs.k == kNum && words.k == kNum && hits.k == kArr && len(hits.a) == len(strs.a)
	for i := 0; ok && i < len(strs.a); i++ {
		ok = strs.a[i].k == kStr && hits.a[i].k == kNum
	}
	var ts *textScore
	if ok {
		ts = &textScore{lang: ev.textLang()}
		var df []int
		for i, s := range strs.a {
			for _, t := range fulltext.Terms(s.s, ts.lang) {
				if !slices.Contains(ts.terms, t) {
					ts.terms = append(ts.terms, t)
					df = append(df, int(hits.a[i].n))
				}
			}
		}
		ts.idf, ts.avg = fulltext.Weights(int(docs.n), int(words.n), df, len(ts.terms))
	}
	if ev.textScores == nil {
		ev.textScores = map[*call]*textScore{}
	}
	ev.textScores[x] = ts
	return ts
}
