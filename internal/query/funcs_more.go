package query

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"time"
)

// The rest of the Cosmos DB for NoSQL function reference: type checking,
// conditional, string conversion, regular expressions, integer math, set
// operations on arrays, and date and time arithmetic. Spatial, full-text
// and vector functions are refused with a clear error.

// maxInt53 bounds the integers a double represents exactly: the integer
// functions refuse (undefined) what lies beyond.
const maxInt53 = 1 << 53

// asInt reports v as an integer, if it is a number with no fraction that a
// double holds exactly.
func asInt(v value) (int64, bool) {
	if v.k != kNum || v.n != math.Trunc(v.n) || math.Abs(v.n) > maxInt53 {
		return 0, false
	}
	return int64(v.n), true
}

// asWhole reports v as an int64, if it is a number with no fraction in
// int64's range, however many of its low digits a double has lost.
func asWhole(v value) (int64, bool) {
	if v.k != kNum || v.n != math.Trunc(v.n) || v.n < math.MinInt64 || v.n >= math.MaxInt64 {
		return 0, false
	}
	return int64(v.n), true
}

// intResult makes a number of an integer result, undefined when a double
// cannot hold it exactly.
func intResult(n int64) value {
	if n > maxInt53 || n < -maxInt53 {
		return undef
	}
	return numVal(float64(n))
}

func int2(name string, f func(a, b int64) (int64, bool)) {
	def(name, 2, 2, func(_ *evaluator, a []value) value {
		x, ok1 := asInt(a[0])
		y, ok2 := asInt(a[1])
		if !ok1 || !ok2 {
			return undef
		}
		r, ok := f(x, y)
		if !ok {
			return undef
		}
		return intResult(r)
	})
}

// stringTo parses a string argument as one JSON value of kind k (any JSON
// value when k is kUndef), as the StringTo* functions do.
func stringTo(name string, k kind) {
	def(name, 1, 1, func(ev *evaluator, a []value) value {
		if a[0].k != kStr {
			return undef
		}
		ev.tick(len(a[0].s) >> 10)
		v := decodeRaw([]byte(a[0].s))
		if v.k != k {
			return undef
		}
		return unraw(v)
	})
}

// unraw drops the source text kept in v and its parts, so that v is
// written out anew (compact), not as the string it was parsed from.
func unraw(v value) value {
	v.raw = nil
	switch v.k {
	case kArr:
		a := make([]value, len(v.a))
		for i, e := range v.a {
			a[i] = unraw(e)
		}
		v.a = a
	case kObj:
		o := make([]field, len(v.o))
		for i, f := range v.o {
			o[i] = field{f.k, unraw(f.v)}
		}
		v.o = o
	}
	return v
}

// regexCache keeps compiled patterns: a query applies the same pattern to
// every document.
var regexCache = struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}{m: map[string]*regexp.Regexp{}}

const maxRegexCache = 256

// compileRegex compiles pattern with RegexMatch's modifiers (m, s, i, x).
func compileRegex(ev *evaluator, pattern, modifiers string) *regexp.Regexp {
	key := modifiers + "/" + pattern
	regexCache.Lock()
	re := regexCache.m[key]
	regexCache.Unlock()
	if re != nil {
		return re
	}
	flags := ""
	for _, m := range modifiers {
		switch m {
		case 'm', 's', 'i':
			if !strings.ContainsRune(flags, m) {
				flags += string(m)
			}
		case 'x':
			pattern = stripExtended(pattern)
		default:
			ev.fail("RegexMatch: unknown modifier %q: use m, s, i or x", string(m))
		}
	}
	if flags != "" {
		pattern = "(?" + flags + ")" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		ev.fail("RegexMatch: the pattern is not a regular expression lethe can run (RE2 syntax: no backreferences or lookaround): %v", err)
	}
	regexCache.Lock()
	if len(regexCache.m) >= maxRegexCache {
		clear(regexCache.m)
	}
	regexCache.m[key] = re
	regexCache.Unlock()
	return re
}

// stripExtended drops the whitespace and # comments of an extended
// pattern (modifier x), outside character classes and escapes.
func stripExtended(p string) string {
	var sb strings.Builder
	inClass, comment := false, false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case comment:
			if c == '\n' {
				comment = false
			}
		case c == '\\' && i+1 < len(p):
			sb.WriteByte(c)
			i++
			sb.WriteByte(p[i])
		case inClass:
			if c == ']' {
				inClass = false
			}
			sb.WriteByte(c)
		case c == '[':
			inClass = true
			sb.WriteByte(c)
		case c == '#':
			comment = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// distinctValues returns vs without deep duplicates, in first-seen order.
func distinctValues(vs []value) []value {
	out := make([]value, 0, len(vs))
	seen := map[string]struct{}{}
	var buf []byte
	for _, v := range vs {
		if v.k == kUndef {
			continue
		}
		buf = canonical(buf[:0], v)
		if _, dup := seen[string(buf)]; dup {
			continue
		}
		seen[string(buf)] = struct{}{}
		out = append(out, v)
	}
	return out
}

// ---- date and time ----

// dateTimeLayout is the ISO 8601 form Cosmos DB writes: UTC, seven
// fractional digits.
const dateTimeLayout = "2006-01-02T15:04:05.0000000Z"

// parseDateTime reads an ISO 8601 UTC date and time as Cosmos DB accepts
// it: YYYY-MM-DD, optionally with Thh:mm, :ss and a fraction of up to seven
// digits, and a Z (or nothing) at the end.
func parseDateTime(s string) (time.Time, bool) {
	s = strings.TrimSuffix(s, "Z")
	for _, layout := range []string{"2006-01-02T15:04:05.9999999", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func formatDateTime(t time.Time) value {
	if t.Year() < 1 || t.Year() > 9999 {
		return undef
	}
	return strVal(t.UTC().Format(dateTimeLayout))
}

// dateParts maps the part names and abbreviations of the date and time
// functions to the part.
var dateParts = map[string]string{
	"year": "year", "yyyy": "year", "yy": "year",
	"month": "month", "mm": "month", "m": "month",
	"day": "day", "dd": "day", "d": "day",
	"hour": "hour", "hh": "hour",
	"minute": "minute", "mi": "minute", "n": "minute",
	"second": "second", "ss": "second", "s": "second",
	"millisecond": "millisecond", "ms": "millisecond",
	"microsecond": "microsecond", "mcs": "microsecond",
	"nanosecond": "nanosecond", "ns": "nanosecond",
}

func datePart(v value) (string, bool) {
	if v.k != kStr {
		return "", false
	}
	p, ok := dateParts[strings.ToLower(v.s)]
	return p, ok
}

// fixedUnit is the length of the parts that have one.
var fixedUnit = map[string]time.Duration{
	"day": 24 * time.Hour, "hour": time.Hour, "minute": time.Minute, "second": time.Second,
	"millisecond": time.Millisecond, "microsecond": time.Microsecond, "nanosecond": time.Nanosecond,
}

// Ticks are 100 ns since the Unix epoch, as Cosmos DB counts them.
func toTicks(t time.Time) int64 {
	return t.Unix()*10_000_000 + int64(t.Nanosecond()/100)
}

func fromTicks(n int64) time.Time {
	return time.Unix(floorDiv(n, 10_000_000), (n-floorDiv(n, 10_000_000)*10_000_000)*100).UTC()
}

// The instants the date and time strings can hold: years 1 to 9999.
const (
	minTicks = -62135596800 * 10_000_000
	maxTicks = 253402300800*10_000_000 - 1
)

// boundaries counts the boundaries of part crossed from a to b (negative
// when b is before a), as DateTimeDiff does, or reports that the count
// does not fit.
func boundaries(part string, a, b time.Time) (int64, bool) {
	switch part {
	case "year":
		return int64(b.Year() - a.Year()), true
	case "month":
		return int64((b.Year()-a.Year())*12 + int(b.Month()) - int(a.Month())), true
	}
	u := fixedUnit[part]
	if u >= time.Second {
		secs := int64(u / time.Second)
		return floorDiv(b.Unix(), secs) - floorDiv(a.Unix(), secs), true
	}
	perSec := int64(time.Second / u)
	secs := b.Unix() - a.Unix()
	if secs > math.MaxInt64/perSec-1 || secs < math.MinInt64/perSec+1 {
		return 0, false
	}
	return secs*perSec + int64(b.Nanosecond())/int64(u) - int64(a.Nanosecond())/int64(u), true
}

func init() {
	typeCheck("IS_INTEGER", func(v value) bool { _, ok := asInt(v); return ok })

	// conditional
	def("IIF", 3, 3, func(_ *evaluator, a []value) value {
		if a[0].isTrue() {
			return a[1]
		}
		return a[2]
	})
	def("CHOOSE", 2, -1, func(_ *evaluator, a []value) value {
		i, ok := asInt(a[0])
		if !ok || i < 1 || i >= int64(len(a)) {
			return undef
		}
		return a[i]
	})

	// string conversion and regular expressions
	stringTo("StringToArray", kArr)
	stringTo("StringToBoolean", kBool)
	stringTo("StringToNull", kNull)
	stringTo("StringToNumber", kNum)
	stringTo("StringToObject", kObj)
	def("RegexMatch", 2, 3, func(ev *evaluator, a []value) value {
		if a[0].k != kStr || a[1].k != kStr || (len(a) == 3 && a[2].k != kStr) {
			return undef
		}
		mods := ""
		if len(a) == 3 {
			mods = a[2].s
		}
		ev.tick(len(a[0].s) >> 8)
		return boolVal(compileRegex(ev, a[1].s, mods).MatchString(a[0].s))
	})
	def("StringJoin", 2, 2, func(ev *evaluator, a []value) value {
		if a[0].k != kArr || a[1].k != kStr {
			return undef
		}
		n := 0
		parts := make([]string, len(a[0].a))
		for i, v := range a[0].a {
			if v.k != kStr {
				return undef
			}
			parts[i] = v.s
			n += len(v.s) + len(a[1].s)
		}
		ev.checkSize("StringJoin", n)
		return strVal(strings.Join(parts, a[1].s))
	})
	def("StringSplit", 2, 2, func(ev *evaluator, a []value) value {
		if a[0].k != kStr || a[1].k != kStr {
			return undef
		}
		var parts []string
		if a[1].s == "" {
			parts = []string{a[0].s}
		} else {
			parts = strings.Split(a[0].s, a[1].s)
		}
		ev.checkSize("StringSplit", len(a[0].s)+3*len(parts))
		out := make([]value, len(parts))
		for i, p := range parts {
			out[i] = strVal(p)
		}
		return value{k: kArr, a: out}
	})

	// math
	def("NumberBin", 1, 2, func(_ *evaluator, a []value) value {
		size := 1.0
		if len(a) == 2 {
			if a[1].k != kNum || a[1].n <= 0 {
				return undef
			}
			size = a[1].n
		}
		if a[0].k != kNum {
			return undef
		}
		return numVal(math.Floor(a[0].n/size) * size)
	})
	def("RAND", 0, 0, func(_ *evaluator, _ []value) value { return numVal(rand.Float64()) })
	int2("IntAdd", func(x, y int64) (int64, bool) { return x + y, true })
	int2("IntSub", func(x, y int64) (int64, bool) { return x - y, true })
	int2("IntMul", func(x, y int64) (int64, bool) {
		r := x * y
		return r, x == 0 || r/x == y
	})
	int2("IntDiv", func(x, y int64) (int64, bool) {
		if y == 0 {
			return 0, false
		}
		return x / y, true
	})
	int2("IntMod", func(x, y int64) (int64, bool) {
		if y == 0 {
			return 0, false
		}
		return x % y, true
	})
	int2("IntBitAnd", func(x, y int64) (int64, bool) { return x & y, true })
	int2("IntBitOr", func(x, y int64) (int64, bool) { return x | y, true })
	int2("IntBitXor", func(x, y int64) (int64, bool) { return x ^ y, true })
	int2("IntBitLeftShift", func(x, y int64) (int64, bool) {
		if y < 0 || y > 63 {
			return 0, false
		}
		return x << y, true
	})
	int2("IntBitRightShift", func(x, y int64) (int64, bool) {
		if y < 0 || y > 63 {
			return 0, false
		}
		return x >> y, true
	})
	def("IntBitNot", 1, 1, func(_ *evaluator, a []value) value {
		x, ok := asInt(a[0])
		if !ok {
			return undef
		}
		return intResult(^x)
	})

	// arrays and objects
	anyAll := func(name string, all bool) {
		def(name, 2, -1, func(_ *evaluator, a []value) value {
			if a[0].k != kArr {
				return undef
			}
			for _, x := range a[1:] {
				found := arrayContains(a[0].a, x, false)
				if found != all {
					return boolVal(found)
				}
			}
			return boolVal(all)
		})
	}
	anyAll("ARRAY_CONTAINS_ANY", false)
	anyAll("ARRAY_CONTAINS_ALL", true)
	def("SetIntersect", 2, 2, func(_ *evaluator, a []value) value {
		if a[0].k != kArr || a[1].k != kArr {
			return undef
		}
		var both []value
		for _, v := range a[0].a {
			if arrayContains(a[1].a, v, false) {
				both = append(both, v)
			}
		}
		return value{k: kArr, a: distinctValues(both)}
	})
	def("SetUnion", 2, 2, func(ev *evaluator, a []value) value {
		if a[0].k != kArr || a[1].k != kArr {
			return undef
		}
		ev.checkSize("SetUnion", 2*(len(a[0].a)+len(a[1].a)))
		all := append(append(make([]value, 0, len(a[0].a)+len(a[1].a)), a[0].a...), a[1].a...)
		return value{k: kArr, a: distinctValues(all)}
	})
	def("ObjectToArray", 1, 3, func(_ *evaluator, a []value) value {
		if a[0].k != kObj {
			return undef
		}
		kn, vn := "k", "v"
		if len(a) > 1 {
			if a[1].k != kStr {
				return undef
			}
			kn = a[1].s
		}
		if len(a) > 2 {
			if a[2].k != kStr {
				return undef
			}
			vn = a[2].s
		}
		out := make([]value, 0, len(a[0].o))
		for _, f := range a[0].o {
			if f.v.k == kUndef {
				continue
			}
			out = append(out, value{k: kObj, o: []field{{kn, strVal(f.k)}, {vn, f.v}}})
		}
		return value{k: kArr, a: out}
	})

	// date and time
	def("DateTimeAdd", 3, 3, func(_ *evaluator, a []value) value {
		part, ok := datePart(a[0])
		n, okN := asInt(a[1])
		if !ok || !okN || a[2].k != kStr {
			return undef
		}
		t, ok := parseDateTime(a[2].s)
		if !ok {
			return undef
		}
		switch part {
		case "year":
			t = t.AddDate(int(n), 0, 0)
		case "month":
			t = t.AddDate(0, int(n), 0)
		default:
			u := fixedUnit[part]
			if n > math.MaxInt64/int64(u) || n < math.MinInt64/int64(u) {
				return undef
			}
			t = t.Add(time.Duration(n) * u)
		}
		return formatDateTime(t)
	})
	def("DateTimeDiff", 3, 3, func(_ *evaluator, a []value) value {
		part, ok := datePart(a[0])
		if !ok || a[1].k != kStr || a[2].k != kStr {
			return undef
		}
		start, ok1 := parseDateTime(a[1].s)
		end, ok2 := parseDateTime(a[2].s)
		if !ok1 || !ok2 {
			return undef
		}
		n, ok := boundaries(part, start, end)
		if !ok {
			return undef
		}
		return intResult(n)
	})
	def("DateTimePart", 2, 2, func(_ *evaluator, a []value) value {
		part, ok := datePart(a[0])
		if !ok || a[1].k != kStr {
			return undef
		}
		t, ok := parseDateTime(a[1].s)
		if !ok {
			return undef
		}
		var n int
		switch part {
		case "year":
			n = t.Year()
		case "month":
			n = int(t.Month())
		case "day":
			n = t.Day()
		case "hour":
			n = t.Hour()
		case "minute":
			n = t.Minute()
		case "second":
			n = t.Second()
		case "millisecond":
			n = t.Nanosecond() / 1e6
		case "microsecond":
			n = t.Nanosecond() / 1e3
		case "nanosecond":
			n = t.Nanosecond()
		}
		return numVal(float64(n))
	})
	def("DateTimeFromParts", 3, 7, func(_ *evaluator, a []value) value {
		var p [7]int64
		for i, v := range a {
			n, ok := asInt(v)
			if !ok {
				return undef
			}
			p[i] = n
		}
		if p[0] < 1 || p[0] > 9999 || p[1] < 1 || p[1] > 12 || p[2] < 1 || p[2] > 31 ||
			p[3] < 0 || p[3] > 23 || p[4] < 0 || p[4] > 59 || p[5] < 0 || p[5] > 59 || p[6] < 0 || p[6] > 9_999_999 {
			return undef
		}
		t := time.Date(int(p[0]), time.Month(p[1]), int(p[2]), int(p[3]), int(p[4]), int(p[5]), int(p[6])*100, time.UTC)
		if t.Day() != int(p[2]) { // February 30th and the like
			return undef
		}
		return formatDateTime(t)
	})
	def("DateTimeBin", 2, 4, func(_ *evaluator, a []value) value {
		if a[0].k != kStr {
			return undef
		}
		t, ok := parseDateTime(a[0].s)
		part, okP := datePart(a[1])
		if !ok || !okP {
			return undef
		}
		size := int64(1)
		if len(a) > 2 {
			n, ok := asInt(a[2])
			if !ok || n < 1 {
				return undef
			}
			size = n
		}
		origin := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
		if len(a) > 3 {
			o, ok := parseDateTime(stringOf(a[3]))
			if !ok {
				return undef
			}
			origin = o
		}
		switch part {
		case "year":
			n := int64(t.Year() - origin.Year())
			if t.Before(origin.AddDate(int(n), 0, 0)) {
				n--
			}
			n = floorDiv(n, size) * size
			return formatDateTime(origin.AddDate(int(n), 0, 0))
		case "month":
			n := int64((t.Year()-origin.Year())*12 + int(t.Month()) - int(origin.Month()))
			if t.Before(origin.AddDate(0, int(n), 0)) {
				n--
			}
			n = floorDiv(n, size) * size
			return formatDateTime(origin.AddDate(0, int(n), 0))
		}
		u := fixedUnit[part]
		if size > math.MaxInt64/int64(u) {
			return undef
		}
		bin := time.Duration(size) * u
		d := t.Sub(origin) // saturates beyond some 292 years
		if d == time.Duration(math.MaxInt64) || d == time.Duration(math.MinInt64) {
			return undef
		}
		q := d / bin
		if d%bin < 0 {
			q--
		}
		return formatDateTime(origin.Add(q * bin))
	})
	def("DateTimeToTicks", 1, 1, func(_ *evaluator, a []value) value {
		if a[0].k != kStr {
			return undef
		}
		t, ok := parseDateTime(a[0].s)
		if !ok {
			return undef
		}
		return numVal(float64(toTicks(t)))
	})
	def("DateTimeToTimestamp", 1, 1, func(_ *evaluator, a []value) value {
		if a[0].k != kStr {
			return undef
		}
		t, ok := parseDateTime(a[0].s)
		if !ok {
			return undef
		}
		return numVal(float64(t.UnixMilli()))
	})
	def("TicksToDateTime", 1, 1, func(_ *evaluator, a []value) value {
		n, ok := asWhole(a[0])
		if !ok || n < minTicks || n > maxTicks {
			return undef
		}
		return formatDateTime(fromTicks(n))
	})
	def("TimestampToDateTime", 1, 1, func(_ *evaluator, a []value) value {
		n, ok := asWhole(a[0])
		if !ok || n < -62135596800000 || n > 253402300799999 {
			return undef
		}
		return formatDateTime(time.UnixMilli(n))
	})

	// Refused: lethe has no spatial, full-text or vector indexes.
	refuse := func(what string, names ...string) {
		for _, n := range names {
			def(n, 0, -1, func(ev *evaluator, _ []value) value {
				ev.fail("%s is a %s function, which lethe does not support", n, what)
				return undef
			})
		}
	}
	refuse("spatial", "ST_DISTANCE", "ST_WITHIN", "ST_INTERSECTS", "ST_ISVALID", "ST_ISVALIDDETAILED", "ST_AREA")
	refuse("full-text search", "FullTextContains", "FullTextContainsAll", "FullTextContainsAny", "FullTextScore", "RRF")
	refuse("vector search", "VectorDistance")
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func stringOf(v value) string {
	if v.k != kStr {
		return "\x00"
	}
	return v.s
}
