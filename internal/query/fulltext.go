package query

import (
	"slices"
	"strings"

	"github.com/lethedb/lethe/internal/fulltext"
)

// The full-text functions FullTextContains, FullTextContainsAll and
// FullTextContainsAny. The service answers them from its full-text index;
// lethe evaluates them on each item, which gives the same results: the
// text at the path and each search string are analyzed alike
// (internal/fulltext: tokenized, folded, and for English stop words
// removed and stemmed) in the language of the path.

// Env is what an evaluation knows of the container beyond the documents
// it is given. The zero Env knows nothing of it.
type Env struct {
	// TextLanguage returns the language of the text at a path of the
	// container's items (its property names: ["a", "b"] for /a/b), as its
	// full-text policy gives it: the full-text functions analyze the text
	// and their search strings in that language. When nil, or when it
	// returns "", the language is en-US, as it is for a first argument
	// that is not a property path of the item.
	TextLanguage func(path []string) string
	// Vector returns the distance function and element type ("cosine",
	// "float32") the container's vector embedding policy gives the
	// vectors at a path, or "", "" for a path it does not list:
	// VectorDistance compares vectors by them unless its options say
	// otherwise. When nil, no path has a policy: cosine and float32.
	Vector func(path []string) (distanceFunction, dataType string)
	// TextStats returns the statistics FullTextScore scores the text at a
	// path in a language by, for the given terms: those of the
	// container's live items. When nil, those of the documents the query
	// is given (CorpusStats).
	TextStats func(path []string, lang string, terms []string) TextStats
	// Geometry says that the container's geospatialConfig is Geometry:
	// the spatial functions compute in the plane. Else they compute on
	// the earth (Geography, the default; spatial.go).
	Geometry bool
	// Budget bounds the evaluation's work and memory (limits.go).
	Budget Budget
	// UDFs are the user-defined functions a query may call, by name
	// (udf.go).
	UDFs map[string]Func
}

func init() {
	defText("FullTextContains", 2, 2, true)
	defText("FullTextContainsAll", 2, -1, true)
	defText("FullTextContainsAny", 2, -1, false)
}

// defText registers a full-text function: its first argument is the text,
// the others the strings to find; it is true when all of them (all) or any
// of them are found. Each search string is a phrase: its terms must appear
// in the text one after the other. Text that is not a string (or is
// missing) contains nothing: the result is false. A search string that is
// not a string makes the result undefined, as a function's argument of the
// wrong type does; one with no terms (only stop words or punctuation) is
// found nowhere.
func defText(name string, minA, maxA int, all bool) {
	def(name, minA, maxA, func(ev *evaluator, a []value) value {
		for _, s := range a[1:] {
			if s.k != kStr {
				return undef
			}
		}
		if a[0].k != kStr {
			return boolVal(false)
		}
		lang := ev.textLang()
		text := fulltext.Terms(a[0].s, lang)
		ev.tick(len(text))
		for _, s := range a[1:] {
			found := hasPhrase(text, ev.searchTerms(s.s, lang))
			if found != all {
				return boolVal(found)
			}
		}
		return boolVal(all)
	})
	funcs[strings.ToUpper(name)].text = true
}

// hasPhrase reports whether phrase, not empty, appears in text as a run of
// consecutive terms.
func hasPhrase(text, phrase []string) bool {
	if len(phrase) == 0 {
		return false
	}
	for i := 0; i+len(phrase) <= len(text); i++ {
		if slices.Equal(text[i:i+len(phrase)], phrase) {
			return true
		}
	}
	return false
}

// textLang is the language of the text the full-text call being evaluated
// (ev.textCall) searches: that of its first argument's path, when it is a
// property path of the item.
func (ev *evaluator) textLang() string {
	x := ev.textCall
	if lang, ok := ev.textLangs[x]; ok {
		return lang
	}
	lang := ""
	if path, ok := itemPath(x.args[0]); ok && ev.env.TextLanguage != nil {
		lang = ev.env.TextLanguage(path)
	}
	if lang == "" {
		lang = "en-US"
	}
	if ev.textLangs == nil {
		ev.textLangs = map[*call]string{}
	}
	ev.textLangs[x] = lang
	return lang
}

// searchTerms returns the terms of a search string, analyzed once per
// evaluation.
func (ev *evaluator) searchTerms(s, lang string) []string {
	key := lang + "\x00" + s
	if t, ok := ev.textTerms[key]; ok {
		return t
	}
	t := fulltext.Terms(s, lang)
	if ev.textTerms == nil {
		ev.textTerms = map[string][]string{}
	}
	if len(ev.textTerms) < 1024 {
		ev.textTerms[key] = t
	}
	return t
}

// itemPath returns the property names of e when it is a property path of
// the item (c.a.b, c["a"].b, with c the FROM alias of the item itself).
func itemPath(e expr) ([]string, bool) {
	var rev []string
	for {
		switch x := e.(type) {
		case *member:
			rev = append(rev, x.name)
			e = x.x
		case *index:
			lit, ok := x.idx.(*literal)
			if !ok || lit.val.k != kStr {
				return nil, false
			}
			rev = append(rev, lit.val.s)
			e = x.x
		case *ident:
			if x.slot != 0 || len(rev) == 0 {
				return nil, false
			}
			slices.Reverse(rev)
			return rev, true
		default:
			return nil, false
		}
	}
}

// TextFilter is a condition of a WHERE clause that a full-text index can
// answer: FullTextContains, FullTextContainsAll or FullTextContainsAny of
// a path of the FROM alias's items and constant strings. Only items whose
// text holds every term of every string (Any: of one string at least) can
// satisfy it.
type TextFilter struct {
	Path    []string // the text's property names
	Strings []string // the search strings
	Any     bool     // FullTextContainsAny
}

// TextFilters returns the conditions of q's WHERE clause, conjuncts joined
// by AND at the top, that a full-text index can answer, with params bound.
// A call whose search strings are not all strings (it is undefined) is not
// one of them.
func (q *Query) TextFilters(params map[string]any) []TextFilter {
	if q.from == nil || q.from.path != nil || q.where == nil {
		return nil
	}
	vals, err := bindParams(q, params)
	if err != nil {
		return nil
	}
	var out []TextFilter
	conjuncts(q.where, func(e expr) {
		x, ok := e.(*call)
		if !ok || !x.fn.text {
			return
		}
		path, ok := itemPath(x.args[0])
		if !ok {
			return
		}
		f := TextFilter{Path: path, Any: x.fn.name == "FullTextContainsAny"}
		for _, a := range x.args[1:] {
			v, ok := constant(a, vals)
			if !ok || v.k != kStr {
				return
			}
			f.Strings = append(f.Strings, v.s)
		}
		out = append(out, f)
	})
	return out
}

// TextTopK reports whether q is SELECT TOP or OFFSET LIMIT ... ORDER BY
// RANK FullTextScore(path, strings) over the FROM alias's items (no JOIN,
// DISTINCT, aggregate or GROUP BY), and returns the path of its text, its
// search strings (each string of an array among them), and need and full
// as OrderedByPaths gives them. Such a query's results are the full
// results of its first need rows, most relevant first.
func (q *Query) TextTopK(params map[string]any) (path, strs []string, need, full int, ok bool) {
	if q.from == nil || q.from.path != nil || len(q.joins) > 0 || !q.rank || q.distinct || q.aggregated || q.grouped {
		return nil, nil, 0, 0, false
	}
	x, isCall := q.orderBy[0].x.(*call)
	if !isCall || x.fn.name != "FullTextScore" {
		return nil, nil, 0, 0, false
	}
	need, full, ok = q.resultBound(params)
	if !ok || full < 0 {
		return nil, nil, 0, 0, false
	}
	if path, ok = itemPath(x.args[0]); !ok {
		return nil, nil, 0, 0, false
	}
	vals, err := bindParams(q, params)
	if err != nil {
		return nil, nil, 0, 0, false
	}
	for _, a := range x.args[1:] {
		v, ok := constant(a, vals)
		if !ok {
			return nil, nil, 0, 0, false
		}
		list := []value{v}
		if v.k == kArr {
			list = v.a
		}
		for _, s := range list {
			if s.k != kStr {
				return nil, nil, 0, 0, false // an error, which the evaluation reports
			}
			strs = append(strs, s.s)
		}
	}
	return path, strs, need, full, true
}

// TextAt returns the string at path in doc (an item's JSON), the text
// FullTextScore and its statistics read there; ok is false when the value
// at path is not a string.
func TextAt(doc []byte, path []string) (string, bool) {
	raw := doc
	for _, name := range path {
		sub, ok := lookupKey(raw, name)
		if !ok {
			return "", false
		}
		raw = sub
	}
	v := decodeRaw(raw)
	return v.s, v.k == kStr
}
