package query

import (
	"strings"
	"unicode/utf8"
)

// maxLikeWork bounds the character comparisons one LIKE evaluation may make
// (about a tenth of a second); past it the query fails. Matching is linear
// in the string for patterns whose %-separated parts are literal text, and
// at worst the product of the string's and one part's lengths otherwise.
const maxLikeWork = 1 << 26

// likeItem is one pattern element that matches exactly one character.
type likeItem struct {
	kind   byte // 'c' literal, '_' one, '[' set
	r      rune
	neg    bool
	ranges []rune // pairs
}

func (it *likeItem) match(r rune) bool {
	switch it.kind {
	case '_':
		return true
	case 'c':
		return it.r == r
	}
	in := false
	for k := 0; k+1 < len(it.ranges); k += 2 {
		if r >= it.ranges[k] && r <= it.ranges[k+1] {
			in = true
			break
		}
	}
	return in != it.neg
}

// compileLike splits a LIKE pattern at its % wildcards into segments of
// single-character elements: % any sequence, _ any one character, [abc]
// [a-f] [^abc] character sets; esc (or -1) makes the next pattern character
// literal. A pattern without % has one segment; one with k has k+1, the
// first anchored at the start of the string and the last at its end.
func compileLike(pattern string, esc rune) [][]likeItem {
	segs := [][]likeItem{nil}
	add := func(it likeItem) { segs[len(segs)-1] = append(segs[len(segs)-1], it) }
	pr := []rune(pattern)
	for i := 0; i < len(pr); i++ {
		c := pr[i]
		switch {
		case c == esc && i+1 < len(pr):
			i++
			add(likeItem{kind: 'c', r: pr[i]})
		case c == '%':
			segs = append(segs, nil)
		case c == '_':
			add(likeItem{kind: '_'})
		case c == '[':
			j := i + 1
			it := likeItem{kind: '['}
			if j < len(pr) && pr[j] == '^' {
				it.neg = true
				j++
			}
			closed := false
			for ; j < len(pr); j++ {
				if pr[j] == ']' {
					closed = true
					break
				}
				lo := pr[j]
				if j+2 < len(pr) && pr[j+1] == '-' && pr[j+2] != ']' {
					it.ranges = append(it.ranges, lo, pr[j+2])
					j += 2
				} else {
					it.ranges = append(it.ranges, lo, lo)
				}
			}
			if !closed {
				add(likeItem{kind: 'c', r: '['})
				continue
			}
			add(it)
			i = j
		default:
			add(likeItem{kind: 'c', r: c})
		}
	}
	return segs
}

// likeMatcher matches one string, counting its work.
type likeMatcher struct {
	ev   *evaluator
	s    string
	work int
	tick int // work at which to count an evaluation step next
}

func (m *likeMatcher) spend(n int) {
	m.work += n
	if m.work >= m.tick {
		m.tick = m.work + 1024
		m.ev.tick(1)
		if m.work > maxLikeWork {
			m.ev.fail("LIKE needs more than %d steps to match a string of %d bytes, the limit", maxLikeWork, len(m.s))
		}
	}
}

// at reports whether seg matches s at byte offset i, and where the match ends.
func (m *likeMatcher) at(seg []likeItem, i int) (int, bool) {
	s := m.s
	m.spend(1)
	for k := range seg {
		if i >= len(s) {
			return 0, false
		}
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		if !seg[k].match(r) {
			m.spend(k)
			return 0, false
		}
		i += n
	}
	m.spend(len(seg))
	return i, true
}

// find returns the leftmost match of seg in s at or after byte offset from,
// and its end. A literal prefix of seg is searched for with strings.Index.
func (m *likeMatcher) find(seg []likeItem, from int) (int, int, bool) {
	s := m.s
	var lit []byte
	for _, it := range seg {
		if it.kind != 'c' {
			break
		}
		lit = utf8.AppendRune(lit, it.r)
	}
	for p := from; p <= len(s); {
		if len(lit) > 0 {
			j := strings.Index(s[p:], string(lit))
			if j < 0 {
				m.spend((len(s) - p) >> 4)
				return 0, 0, false
			}
			m.spend(j >> 4)
			p += j
		}
		if end, ok := m.at(seg, p); ok {
			return p, end, true
		}
		if p == len(s) {
			break
		}
		_, n := utf8.DecodeRuneInString(s[p:])
		p += n
	}
	return 0, 0, false
}

// likeMatch matches s against a LIKE pattern (see compileLike). The first
// segment must match at the start and the last at the end; the ones between
// are matched leftmost-first in turn, which finds a match whenever there is
// one since each segment matches a fixed number of characters.
func (ev *evaluator) likeMatch(s, pattern string, esc rune) bool {
	segs := compileLike(pattern, esc)
	m := &likeMatcher{ev: ev, s: s, tick: 1024}
	first := segs[0]
	start, ok := m.at(first, 0)
	if !ok {
		return false
	}
	if len(segs) == 1 {
		return start == len(s)
	}
	// The last segment matches the last len(last) characters.
	last := segs[len(segs)-1]
	end := len(s)
	for range last {
		if end <= start {
			return false
		}
		_, n := utf8.DecodeLastRuneInString(s[:end])
		end -= n
	}
	if end < start {
		return false
	}
	if _, ok := m.at(last, end); !ok {
		return false
	}
	m.s = s[:end]
	for _, seg := range segs[1 : len(segs)-1] {
		_, e, ok := m.find(seg, start)
		if !ok {
			return false
		}
		start = e
	}
	return true
}
