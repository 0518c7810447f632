// Package fulltext is lethe's text analyzer for the full-text query
// functions (FullTextContains, FullTextContainsAll, FullTextContainsAny,
// FullTextScore): it turns a text and the language of a container's
// full-text policy into the terms a search compares. It also holds the
// inverted index of a container's full-text index (Index), and the BM25
// scoring that the index and the query evaluator share (IDF, BM25,
// Weights).
//
// Cosmos DB documents that its full-text search tokenizes text, removes
// stop words and stems what is left; it publishes neither its tokenizer's
// rules, nor its stop words, nor its stemmer. lethe therefore does what the
// documentation describes with well-known published choices:
//
//   - Tokenization splits text on word boundaries: a word is a run of
//     letters, digits, combining marks and underscores; an apostrophe
//     between two letters stays inside a word ("don't"), as does a period
//     or a comma between two digits ("3.14", "1,000"). Everything else
//     separates words.
//   - Case folding lowers every word (Unicode simple lower case).
//   - For English (en-US): an ending "'s" is dropped ("cosmos's" is
//     "cosmos"), the stop words of the classic English list (a, an, and,
//     are, as, at, be, but, by, for, if, in, into, is, it, no, not, of, on,
//     or, such, that, the, their, then, there, these, they, this, to, was,
//     will, with) are removed, and each remaining word made of the letters
//     a to z alone is reduced to its stem by the Porter algorithm (M. F.
//     Porter, "An algorithm for suffix stripping", 1980): "searching",
//     "searched" and "searches" are all "search".
//   - For the other languages of a policy (de-DE, es-ES, fr-FR, it-IT,
//     pt-PT, pt-BR, in preview in Cosmos DB) words are tokenized and folded
//     only: no stop words are removed and nothing is stemmed, so a search
//     finds the same word, not its other forms. This is an approximation of
//     the service.
package fulltext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Terms returns the terms of text in the language lang (a policy's
// language, in any case; "" is en-US, as is a language lethe does not
// know), in the order they appear, repeats included.
func Terms(text, lang string) []string {
	english := isEnglish(lang)
	terms := make([]string, 0, len(text)/6+1) // about a word in six bytes
	for i := 0; i < len(text); {
		start, end := nextWord(text, i)
		if start == end {
			break
		}
		i = end
		w := strings.ToLower(text[start:end])
		if english {
			w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "\u2019s")
			if w == "" || stopWords[w] {
				continue
			}
			w = stem(w)
		}
		terms = append(terms, w)
	}
	return terms
}

// isEnglish reports whether lang is analyzed as English: en-US, and what
// lethe does not know.
func isEnglish(lang string) bool {
	for _, l := range []string{"de-DE", "es-ES", "fr-FR", "it-IT", "pt-PT", "pt-BR"} {
		if strings.EqualFold(lang, l) {
			return false
		}
	}
	return true
}

// stopWords are the English words removed from text and from searches.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by for if in into is it no not of on
		or such that the their then there these they this to was will with`) {
		stopWords[w] = true
	}
}

// wordRune reports whether r is part of a word.
func wordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc)
}

// nextWord returns the bounds of the first word of text at or after i;
// start == end when there is none.
func nextWord(text string, i int) (start, end int) {
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		if wordRune(r) {
			break
		}
		i += n
	}
	start = i
	var prev rune
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !wordRune(r) {
			// A joiner between two letters (apostrophe) or two digits
			// (period, comma) stays in the word.
			next, m := utf8.DecodeRuneInString(text[i+n:])
			if m == 0 || !joins(prev, r, next) {
				break
			}
			i += n
			r, n = next, m
		}
		prev = r
		i += n
	}
	return start, i
}

// joins reports whether the separator sep, between the runes before and
// after, keeps them in one word.
func joins(before, sep, after rune) bool {
	switch sep {
	case '\'', '\u2019':
		return unicode.IsLetter(before) && unicode.IsLetter(after)
	case '.', ',':
		return unicode.IsDigit(before) && unicode.IsDigit(after)
	}
	return false
}
