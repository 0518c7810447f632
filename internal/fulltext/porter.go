package fulltext

// The Porter stemmer, written from the algorithm's published description
// (M. F. Porter, "An algorithm for suffix stripping", Program 14(3), 1980).
//
// A word is seen as [C](VC)^m[V], where C is a run of consonants and V a
// run of vowels (a, e, i, o, u, and y after a consonant); m is the word's
// measure. Five steps each remove or replace one suffix, under a condition
// on what is left (the stem): its measure, whether it has a vowel (*v*),
// ends with a double consonant (*d) or with consonant-vowel-consonant
// where the last is not w, x or y (*o). In the rule lists of steps 2 to 4,
// only the longest suffix that matches is considered: if its condition
// fails, the word is left as it is by that step.

// stem returns the Porter stem of w, a lower-case word. Words of one or
// two letters, and words with anything but the letters a to z, are kept.
func stem(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	var buf [32]byte // the word's letters, on the stack for most words
	b := append(buf[:0], w...)
	b = step1a(b)
	b = step1b(b)
	b = step1c(b)
	b = replaceLongest(b, step2Rules, 0)
	b = replaceLongest(b, step3Rules, 0)
	b = step4(b)
	b = step5(b)
	if string(b) == w {
		return w
	}
	return string(b)
}

// consonant reports whether b[i] is a consonant.
func consonant(b []byte, i int) bool {
	switch b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !consonant(b, i-1)
	}
	return true
}

// measure is m of b.
func measure(b []byte) int {
	m, i := 0, 0
	for i < len(b) && consonant(b, i) {
		i++
	}
	for i < len(b) {
		for i < len(b) && !consonant(b, i) {
			i++
		}
		if i == len(b) {
			break
		}
		for i < len(b) && consonant(b, i) {
			i++
		}
		m++
	}
	return m
}

// hasVowel is *v*.
func hasVowel(b []byte) bool {
	for i := range b {
		if !consonant(b, i) {
			return true
		}
	}
	return false
}

// doubleConsonant is *d.
func doubleConsonant(b []byte) bool {
	n := len(b)
	return n >= 2 && b[n-1] == b[n-2] && consonant(b, n-1)
}

// cvc is *o.
func cvc(b []byte) bool {
	n := len(b)
	if n < 3 || !consonant(b, n-1) || consonant(b, n-2) || !consonant(b, n-3) {
		return false
	}
	c := b[n-1]
	return c != 'w' && c != 'x' && c != 'y'
}

// hasSuffix reports whether b ends with s (not empty). The last letters
// are compared first: most suffixes of a rule list fail there.
func hasSuffix(b []byte, s string) bool {
	return len(b) >= len(s) && b[len(b)-1] == s[len(s)-1] && string(b[len(b)-len(s):]) == s
}

// replace replaces the suffix s of b (which b has) with r.
func replace(b []byte, s, r string) []byte {
	return append(b[:len(b)-len(s)], r...)
}

func step1a(b []byte) []byte {
	switch {
	case hasSuffix(b, "sses"):
		return replace(b, "sses", "ss")
	case hasSuffix(b, "ies"):
		return replace(b, "ies", "i")
	case hasSuffix(b, "ss"):
		return b
	case hasSuffix(b, "s"):
		return replace(b, "s", "")
	}
	return b
}

func step1b(b []byte) []byte {
	if hasSuffix(b, "eed") {
		if measure(b[:len(b)-3]) > 0 {
			return replace(b, "eed", "ee")
		}
		return b
	}
	var cut []byte
	switch {
	case hasSuffix(b, "ed") && hasVowel(b[:len(b)-2]):
		cut = b[:len(b)-2]
	case hasSuffix(b, "ing") && hasVowel(b[:len(b)-3]):
		cut = b[:len(b)-3]
	default:
		return b
	}
	switch {
	case hasSuffix(cut, "at"), hasSuffix(cut, "bl"), hasSuffix(cut, "iz"):
		return append(cut, 'e')
	case doubleConsonant(cut):
		if c := cut[len(cut)-1]; c != 'l' && c != 's' && c != 'z' {
			return cut[:len(cut)-1]
		}
	case measure(cut) == 1 && cvc(cut):
		return append(cut, 'e')
	}
	return cut
}

func step1c(b []byte) []byte {
	if hasSuffix(b, "y") && hasVowel(b[:len(b)-1]) {
		b[len(b)-1] = 'i'
	}
	return b
}

// rule replaces a suffix with another.
type rule struct{ suffix, with string }

var step2Rules = []rule{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"},
	{"izer", "ize"}, {"abli", "able"}, {"alli", "al"}, {"entli", "ent"},
	{"eli", "e"}, {"ousli", "ous"}, {"ization", "ize"}, {"ation", "ate"},
	{"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"},
	{"ousness", "ous"}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
}

var step3Rules = []rule{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

// longest returns the longest rule of rules whose suffix b has, or -1.
func longest(b []byte, rules []rule) int {
	best := -1
	for i, r := range rules {
		if hasSuffix(b, r.suffix) && (best < 0 || len(r.suffix) > len(rules[best].suffix)) {
			best = i
		}
	}
	return best
}

// replaceLongest applies the longest matching rule of rules when the stem
// it leaves has a measure above over.
func replaceLongest(b []byte, rules []rule, over int) []byte {
	i := longest(b, rules)
	if i < 0 {
		return b
	}
	r := rules[i]
	if measure(b[:len(b)-len(r.suffix)]) > over {
		return replace(b, r.suffix, r.with)
	}
	return b
}

var step4Rules = []rule{
	{"al", ""}, {"ance", ""}, {"ence", ""}, {"er", ""}, {"ic", ""}, {"able", ""},
	{"ible", ""}, {"ant", ""}, {"ement", ""}, {"ment", ""}, {"ent", ""},
	{"ion", ""}, {"ou", ""}, {"ism", ""}, {"ate", ""}, {"iti", ""}, {"ous", ""},
	{"ive", ""}, {"ize", ""},
}

func step4(b []byte) []byte {
	i := longest(b, step4Rules)
	if i < 0 {
		return b
	}
	s := step4Rules[i].suffix
	rest := b[:len(b)-len(s)]
	if measure(rest) <= 1 {
		return b
	}
	if s == "ion" && !hasSuffix(rest, "s") && !hasSuffix(rest, "t") {
		return b
	}
	return rest
}

func step5(b []byte) []byte {
	if hasSuffix(b, "e") {
		rest := b[:len(b)-1]
		if m := measure(rest); m > 1 || m == 1 && !cvc(rest) {
			b = rest
		}
	}
	if measure(b) > 1 && doubleConsonant(b) && hasSuffix(b, "l") {
		b = b[:len(b)-1]
	}
	return b
}
