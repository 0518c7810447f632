package query

import (
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
)

// More built-in functions of the Cosmos DB for NoSQL function reference:
// conditional, integer math, string conversion, regular expressions, set
// functions and the date and time functions. DocumentId is registered only
// to refuse it clearly.

// isInt64 reports whether x is a number with an integral value in the
// range of a 64-bit signed integer; 2^63 is accepted (it is how the
// literal 9223372036854775807 reads as a double) and means MaxInt64.
func isInt64(v value) bool {
	return v.k == kNum && v.n == math.Trunc(v.n) && v.n >= -(1<<63) && v.n <= 1<<63
}

// int64Of converts a value that passed isInt64.
func int64Of(v value) int64 {
	if v.n >= 1<<63 {
		return math.MaxInt64
	}
	return int64(v.n)
}

// intFn2 registers a function of two 64-bit integers; arguments that are
// not integers give undefined, as does f reporting !ok.
func intFn2(name string, f func(a, b int64) (int64, bool)) {
	def(name, 2, 2, func(_ *evaluator, a []value) value {
		if !isInt64(a[0]) || !isInt64(a[1]) {
			return undef
		}
		r, ok := f(int64Of(a[0]), int64Of(a[1]))
		if !ok {
			return undef
		}
		return numVal(float64(r))
	})
}

// ---- regular expressions ----

// regexCache keeps compiled RegexMatch patterns (a query applies the same
// pattern to every item). It is cleared when full.
var regexCache struct {
	sync.Mutex
	m map[string]*regexp.Regexp // nil value: the pattern does not compile
}

const (
	regexCacheSize = 256
	// maxRegexCached is the longest pattern the cache keeps, and
	// maxRegexLen the longest RegexMatch compiles at all (longer give
	// undefined): a compiled pattern takes tens of bytes per byte.
	maxRegexCached = 1 << 10
	maxRegexLen    = 1 << 16
)

// compileRegex compiles pattern with the RegexMatch modifiers mods (any of
// m, s, i, x). Go's RE2 syntax is a subset of PCRE without backtracking:
// backreferences, lookarounds and possessive quantifiers do not compile,
// and such patterns give nil (RegexMatch returns undefined).
func compileRegex(pattern, mods string) *regexp.Regexp {
	if len(pattern) > maxRegexLen {
		return nil
	}
	key := mods + "\x00" + pattern
	regexCache.Lock()
	re, ok := regexCache.m[key]
	regexCache.Unlock()
	if ok {
		return re
	}
	flags := ""
	extended := false
	for i := 0; i < len(mods); i++ {
		switch c := mods[i]; c {
		case 'm', 's', 'i':
			if !strings.ContainsRune(flags, rune(c)) {
				flags += string(c)
			}
		case 'x':
			extended = true
		default:
			return nil
		}
	}
	p := pattern
	if extended {
		p = stripExtended(p)
	}
	if flags != "" {
		p = "(?" + flags + ")" + p
	}
	re, err := regexp.Compile(p)
	if err != nil {
		re = nil
	}
	if len(pattern) > maxRegexCached {
		return re
	}
	regexCache.Lock()
	if regexCache.m == nil || len(regexCache.m) >= regexCacheSize {
		regexCache.m = map[string]*regexp.Regexp{}
	}
	regexCache.m[key] = re
	regexCache.Unlock()
	return re
}

// stripExtended removes what PCRE's x modifier ignores: white space and #
// comments (to the end of the line) outside character classes, unless
// escaped.
func stripExtended(p string) string {
	var sb strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			sb.WriteByte(c)
			sb.WriteByte(p[i+1])
			i++
			continue
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			// A ] right after [ or [^ is a literal.
			sb.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				sb.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				sb.WriteByte(']')
				i++
			}
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			continue
		case c == '#':
			for i+1 < len(p) && p[i+1] != '\n' {
				i++
			}
			continue
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

// ---- strings ----

// lastIndex16 is the UTF-16 index of the last occurrence of sub in s that
// ends at or before code unit end (exclusive), or -1.
func lastIndex16(s, sub string, end int) int {
	if isASCII(s) && isASCII(sub) {
		end = clamp(end, 0, len(s))
		return strings.LastIndex(s[:end], sub)
	}
	u := utf16.Encode([]rune(s))
	w := utf16.Encode([]rune(sub))
	end = clamp(end, 0, len(u))
	for i := end - len(w); i >= 0; i-- {
		match := true
		for j := range w {
			if u[i+j] != w[j] {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

// parseJSONOf decodes s as JSON text (surrounding white space allowed) and
// returns the value when it is of kind k.
func parseJSONOf(ev *evaluator, v value, k kind) value {
	if v.k != kStr {
		return undef
	}
	ev.tick(len(v.s) >> 10)
	r := decodeRaw([]byte(v.s))
	if r.k != k {
		return undef
	}
	return unraw(r)
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

// ---- sets ----

// setOf builds the canonical encodings of arr's elements.
func setOf(ev *evaluator, arr []value) map[string]struct{} {
	m := make(map[string]struct{}, len(arr))
	var buf []byte
	for _, e := range arr {
		buf = canonical(buf[:0], e)
		ev.tick(1 + len(buf)>>10)
		m[string(buf)] = struct{}{}
	}
	return m
}

// ---- date and time ----

const (
	tickNs      = 100
	ticksPerSec = 10_000_000
	ticksPerDay = 86400 * ticksPerSec
	// minTicks and maxTicks bound the representable date and times
	// (0001-01-01 to 9999-12-31T23:59:59.9999999), in ticks since the Unix
	// epoch.
	minTicks = -62135596800 * ticksPerSec
	maxTicks = 253402300800*ticksPerSec - 1
)

// dtParts is a broken-down UTC date and time; frac is in ticks (100 ns).
type dtParts struct {
	year, month, day, hour, min, sec, frac int
}

// daysIn is the number of days of a month.
func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the number of days from 1970-01-01 to the given date
// of the proleptic Gregorian calendar.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := int(z - era*146097)
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + int(era)*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func (p dtParts) valid() bool {
	return p.year >= 1 && p.year <= 9999 && p.month >= 1 && p.month <= 12 &&
		p.day >= 1 && p.day <= daysIn(p.year, p.month) &&
		p.hour >= 0 && p.hour <= 23 && p.min >= 0 && p.min <= 59 &&
		p.sec >= 0 && p.sec <= 59 && p.frac >= 0 && p.frac < ticksPerSec
}

// ticks is p in ticks since the Unix epoch (p must be valid).
func (p dtParts) ticks() int64 {
	days := daysFromCivil(p.year, p.month, p.day)
	secs := days*86400 + int64(p.hour*3600+p.min*60+p.sec)
	return secs*ticksPerSec + int64(p.frac)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// partsOf breaks down t ticks since the Unix epoch.
func partsOf(t int64) dtParts {
	days := floorDiv(t, ticksPerDay)
	rem := t - days*ticksPerDay
	y, m, d := civilFromDays(days)
	secs := int(rem / ticksPerSec)
	return dtParts{year: y, month: m, day: d, hour: secs / 3600, min: secs / 60 % 60, sec: secs % 60, frac: int(rem % ticksPerSec)}
}

func digitsAt(s string, i, n int) (int, bool) {
	if i+n > len(s) {
		return 0, false
	}
	x := 0
	for j := i; j < i+n; j++ {
		c := s[j]
		if c < '0' || c > '9' {
			return 0, false
		}
		x = x*10 + int(c-'0')
	}
	return x, true
}

// parseDateTime reads an ISO 8601 UTC date and time as Cosmos DB takes
// it (see IS_DATETIME): YYYY-MM-DD, then optionally either Z, or T or a
// space followed by hh:mm:ss, an optional fraction of 1 to 7 digits and an
// optional Z. It returns ticks since the Unix epoch.
func parseDateTime(v value) (int64, bool) {
	if v.k != kStr {
		return 0, false
	}
	s := v.s
	var p dtParts
	var ok bool
	if p.year, ok = digitsAt(s, 0, 4); !ok || len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	if p.month, ok = digitsAt(s, 5, 2); !ok {
		return 0, false
	}
	if p.day, ok = digitsAt(s, 8, 2); !ok {
		return 0, false
	}
	i := 10
	if i < len(s) && (s[i] == 'T' || s[i] == ' ') {
		if len(s) < i+9 || s[i+3] != ':' || s[i+6] != ':' {
			return 0, false
		}
		if p.hour, ok = digitsAt(s, i+1, 2); !ok {
			return 0, false
		}
		if p.min, ok = digitsAt(s, i+4, 2); !ok {
			return 0, false
		}
		if p.sec, ok = digitsAt(s, i+7, 2); !ok {
			return 0, false
		}
		i += 9
		if i < len(s) && s[i] == '.' {
			i++
			n := 0
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				if n == 7 {
					return 0, false
				}
				p.frac = p.frac*10 + int(s[i]-'0')
				i++
				n++
			}
			if n == 0 {
				return 0, false
			}
			for ; n < 7; n++ {
				p.frac *= 10
			}
		}
	}
	if i < len(s) && s[i] == 'Z' {
		i++
	}
	if i != len(s) || !p.valid() {
		return 0, false
	}
	return p.ticks(), true
}

// formatDateTime renders t ticks since the Unix epoch as
// YYYY-MM-DDThh:mm:ss.fffffffZ; out of range gives undefined.
func formatDateTime(t int64) value {
	if t < minTicks || t > maxTicks {
		return undef
	}
	p := partsOf(t)
	b := make([]byte, 0, 28)
	put := func(x, n int) {
		for d := n - 1; d >= 0; d-- {
			div := 1
			for k := 0; k < d; k++ {
				div *= 10
			}
			b = append(b, byte('0'+x/div%10))
		}
	}
	put(p.year, 4)
	b = append(b, '-')
	put(p.month, 2)
	b = append(b, '-')
	put(p.day, 2)
	b = append(b, 'T')
	put(p.hour, 2)
	b = append(b, ':')
	put(p.min, 2)
	b = append(b, ':')
	put(p.sec, 2)
	b = append(b, '.')
	put(p.frac, 7)
	b = append(b, 'Z')
	return strVal(string(b))
}

// dtUnit is a date and time part of DateTimeAdd and friends.
type dtUnit int

const (
	uBad dtUnit = iota
	uYear
	uMonth
	uDay
	uHour
	uMinute
	uSecond
	uMillisecond
	uMicrosecond
	uNanosecond
)

func unitOf(v value) dtUnit {
	if v.k != kStr {
		return uBad
	}
	switch strings.ToLower(v.s) {
	case "year", "yyyy", "yy":
		return uYear
	case "month", "mm", "m":
		return uMonth
	case "day", "dd", "d":
		return uDay
	case "hour", "hh":
		return uHour
	case "minute", "mi", "n":
		return uMinute
	case "second", "ss", "s":
		return uSecond
	case "millisecond", "ms":
		return uMillisecond
	case "microsecond", "mcs":
		return uMicrosecond
	case "nanosecond", "ns":
		return uNanosecond
	}
	return uBad
}

// unitTicks is the length of a fixed-length unit in ticks (nanoseconds
// are a hundredth of a tick: 0).
func unitTicks(u dtUnit) int64 {
	switch u {
	case uDay:
		return ticksPerDay
	case uHour:
		return 3600 * ticksPerSec
	case uMinute:
		return 60 * ticksPerSec
	case uSecond:
		return ticksPerSec
	case uMillisecond:
		return ticksPerSec / 1000
	case uMicrosecond:
		return 10
	}
	return 0
}

// addMonths adds n months to t, keeping the time of day and clamping the
// day to the end of the resulting month.
func addMonths(t int64, n int64) value {
	if n > 120000 || n < -120000 {
		return undef
	}
	p := partsOf(t)
	m := int64(p.year)*12 + int64(p.month-1) + n
	if m < 12 || m >= 10000*12 {
		return undef
	}
	p.year, p.month = int(m/12), int(m%12)+1
	p.day = min(p.day, daysIn(p.year, p.month))
	return formatDateTime(p.ticks())
}

// addTicks adds n units of u ticks each to t, or n/100 ticks for
// nanoseconds, failing (undefined) out of range.
func addTicks(t int64, n int64, u dtUnit) value {
	var d int64
	if u == uNanosecond {
		d = n / tickNs
	} else {
		ut := unitTicks(u)
		if n > (maxTicks-minTicks)/ut || n < -(maxTicks-minTicks)/ut {
			return undef
		}
		d = n * ut
	}
	if d > maxTicks-minTicks || d < -(maxTicks-minTicks) {
		return undef
	}
	return formatDateTime(t + d)
}

// dateTimeDiff counts the boundaries of unit u crossed from a to b.
func dateTimeDiff(u dtUnit, a, b int64) value {
	switch u {
	case uYear:
		return numVal(float64(partsOf(b).year - partsOf(a).year))
	case uMonth:
		pa, pb := partsOf(a), partsOf(b)
		return numVal(float64((pb.year*12 + pb.month) - (pa.year*12 + pa.month)))
	case uNanosecond:
		return numVal(float64(b-a) * tickNs)
	}
	ut := unitTicks(u)
	return numVal(float64(floorDiv(b, ut) - floorDiv(a, ut)))
}

// dateTimePart extracts part u of t.
func dateTimePart(u dtUnit, t int64) value {
	p := partsOf(t)
	var x int
	switch u {
	case uYear:
		x = p.year
	case uMonth:
		x = p.month
	case uDay:
		x = p.day
	case uHour:
		x = p.hour
	case uMinute:
		x = p.min
	case uSecond:
		x = p.sec
	case uMillisecond:
		x = p.frac / 10000
	case uMicrosecond:
		x = p.frac / 10
	case uNanosecond:
		x = p.frac * tickNs
	default:
		return undef
	}
	return numVal(float64(x))
}

// fromEpoch converts a count of units (each of per ticks) since the Unix
// epoch to a date and time string, truncating a fraction.
func fromEpoch(v value, per int64) value {
	if v.k != kNum {
		return undef
	}
	f := math.Trunc(v.n)
	if !(f >= float64(minTicks/per) && f <= float64(maxTicks/per)) { // NaN too
		return undef
	}
	// Beyond 2^53 ticks a double is coarser than a tick: the last
	// representable instant reads back as just past it.
	return formatDateTime(min(max(int64(f)*per, minTicks), maxTicks))
}

// refuse registers a function of the reference that lethe does not
// implement: calling it fails the query with a clear error.
func refuse(name string, minA, maxA int, why string) {
	def(name, minA, maxA, func(ev *evaluator, _ []value) value {
		ev.fail("%s is not supported: %s", name, why)
		return undef
	})
}

func init() {
	// type checks
	typeCheck("IS_INTEGER", isInt64)

	// conditional
	def("IIF", 3, 3, func(_ *evaluator, a []value) value {
		if a[0].isTrue() {
			return a[1]
		}
		return a[2]
	})
	def("CHOOSE", 2, -1, func(_ *evaluator, a []value) value {
		if a[0].k != kNum || a[0].n != math.Trunc(a[0].n) || a[0].n < 1 || a[0].n > float64(len(a)-1) {
			return undef
		}
		return a[int(a[0].n)]
	})

	// strings
	def("RegexMatch", 2, 3, func(ev *evaluator, a []value) value {
		if a[0].k != kStr || a[1].k != kStr {
			return undef
		}
		mods := ""
		if len(a) == 3 {
			if a[2].k != kStr {
				return undef
			}
			mods = a[2].s
		}
		ev.tick(len(a[1].s) >> 6)
		re := compileRegex(a[1].s, mods)
		if re == nil {
			return undef
		}
		ev.tick(len(a[0].s) >> 10)
		return boolVal(re.MatchString(a[0].s))
	})
	def("StringToArray", 1, 1, func(ev *evaluator, a []value) value { return parseJSONOf(ev, a[0], kArr) })
	def("StringToObject", 1, 1, func(ev *evaluator, a []value) value { return parseJSONOf(ev, a[0], kObj) })
	def("StringToBoolean", 1, 1, func(ev *evaluator, a []value) value { return parseJSONOf(ev, a[0], kBool) })
	def("StringToNull", 1, 1, func(ev *evaluator, a []value) value { return parseJSONOf(ev, a[0], kNull) })
	def("StringToNumber", 1, 1, func(ev *evaluator, a []value) value { return parseJSONOf(ev, a[0], kNum) })
	def("StringJoin", 2, 2, func(ev *evaluator, a []value) value {
		if a[0].k != kArr || a[1].k != kStr {
			return undef
		}
		n := 0
		for _, e := range a[0].a {
			if e.k != kStr {
				return undef
			}
			n += len(e.s) + len(a[1].s)
		}
		ev.checkSize("StringJoin", n)
		var sb strings.Builder
		sb.Grow(n)
		for i, e := range a[0].a {
			if i > 0 {
				sb.WriteString(a[1].s)
			}
			sb.WriteString(e.s)
		}
		return strVal(sb.String())
	})
	def("StringSplit", 2, 2, func(ev *evaluator, a []value) value {
		if a[0].k != kStr || a[1].k != kStr {
			return undef
		}
		if a[1].s == "" {
			return value{k: kArr, a: []value{a[0]}}
		}
		// Each part costs its quotes and a comma beside its text.
		ev.checkSize("StringSplit", len(a[0].s)+3*(strings.Count(a[0].s, a[1].s)+1))
		parts := strings.Split(a[0].s, a[1].s)
		out := make([]value, len(parts))
		for i, p := range parts {
			out[i] = strVal(p)
		}
		return value{k: kArr, a: out}
	})
	def("LastIndexOf", 2, 3, func(ev *evaluator, a []value) value {
		if a[0].k != kStr || a[1].k != kStr {
			return undef
		}
		ev.tick(len(a[0].s) >> 10)
		end := math.MaxInt
		if len(a) == 3 {
			if a[2].k != kNum {
				return undef
			}
			// The search goes from position a[2] toward the start: a
			// match must end at or before it.
			if a[2].n < 0 {
				return numVal(-1)
			}
			end = toInt(a[2].n) + 1
		}
		return numVal(float64(lastIndex16(a[0].s, a[1].s, end)))
	})

	// math
	def("NumberBin", 1, 2, func(_ *evaluator, a []value) value {
		if a[0].k != kNum {
			return undef
		}
		size := 1.0
		if len(a) == 2 {
			if a[1].k != kNum || a[1].n == 0 {
				return undef
			}
			size = a[1].n
		}
		return numVal(math.Floor(a[0].n/size) * size)
	})
	intFn2("IntAdd", func(a, b int64) (int64, bool) { return a + b, true })
	intFn2("IntSub", func(a, b int64) (int64, bool) { return a - b, true })
	intFn2("IntMul", func(a, b int64) (int64, bool) { return a * b, true })
	intFn2("IntDiv", func(a, b int64) (int64, bool) {
		if b == 0 {
			return 0, false
		}
		return a / b, true // MinInt64 / -1 wraps to MinInt64
	})
	intFn2("IntMod", func(a, b int64) (int64, bool) {
		if b == 0 {
			return 0, false
		}
		return a % b, true
	})
	intFn2("IntBitAnd", func(a, b int64) (int64, bool) { return a & b, true })
	intFn2("IntBitOr", func(a, b int64) (int64, bool) { return a | b, true })
	intFn2("IntBitXor", func(a, b int64) (int64, bool) { return a ^ b, true })
	// Shift counts are taken modulo 64, as .NET shifts a long.
	intFn2("IntBitLeftShift", func(a, b int64) (int64, bool) { return a << (uint64(b) & 63), true })
	intFn2("IntBitRightShift", func(a, b int64) (int64, bool) { return a >> (uint64(b) & 63), true })
	def("IntBitNot", 1, 1, func(_ *evaluator, a []value) value {
		if !isInt64(a[0]) {
			return undef
		}
		return numVal(float64(^int64Of(a[0])))
	})
	def("RAND", 0, 0, func(_ *evaluator, _ []value) value { return numVal(rand.Float64()) })

	// arrays
	def("ARRAY_CONTAINS_ANY", 2, -1, func(ev *evaluator, a []value) value { return arrayContainsList(ev, a, true) })
	def("ARRAY_CONTAINS_ALL", 2, -1, func(ev *evaluator, a []value) value { return arrayContainsList(ev, a, false) })
	def("SetIntersect", 2, 2, func(ev *evaluator, a []value) value {
		if a[0].k != kArr || a[1].k != kArr {
			return undef
		}
		return value{k: kArr, a: appendDistinct(ev, []value{}, a[1].a, map[string]struct{}{}, setOf(ev, a[0].a))}
	})
	def("SetUnion", 2, 2, func(ev *evaluator, a []value) value {
		if a[0].k != kArr || a[1].k != kArr {
			return undef
		}
		seen := map[string]struct{}{}
		out := appendDistinct(ev, []value{}, a[0].a, seen, nil)
		return value{k: kArr, a: appendDistinct(ev, out, a[1].a, seen, nil)}
	})
	funcs["SETUNION"].joins = true
	def("ObjectToArray", 1, 3, func(ev *evaluator, a []value) value {
		if a[0].k != kObj {
			return undef
		}
		kn, vn := "k", "v"
		if len(a) >= 2 {
			if a[1].k != kStr {
				return undef
			}
			kn = a[1].s
		}
		if len(a) == 3 {
			if a[2].k != kStr {
				return undef
			}
			vn = a[2].s
		}
		n := 0
		for _, f := range a[0].o {
			n = ev.addSize("ObjectToArray", n, f.v)
			n += len(f.k) + len(kn) + len(vn) + 12
		}
		ev.checkSize("ObjectToArray", n)
		out := make([]value, 0, len(a[0].o))
		for _, f := range a[0].o {
			if f.v.k == kUndef {
				continue
			}
			var fs []field
			if kn == vn {
				fs = []field{{vn, f.v}}
			} else {
				fs = []field{{kn, strVal(f.k)}, {vn, f.v}}
			}
			out = append(out, value{k: kObj, o: fs})
		}
		return value{k: kArr, a: out}
	})

	// date and time
	def("DateTimeAdd", 3, 3, func(_ *evaluator, a []value) value {
		t, ok := parseDateTime(a[2])
		if !ok {
			return undef
		}
		return dateTimeAdd(unitOf(a[0]), a[1], t, false)
	})
	def("DateTimeBin", 2, 4, func(_ *evaluator, a []value) value {
		t, ok := parseDateTime(a[0])
		u := unitOf(a[1])
		if !ok || u == uBad || u == uYear || u == uMonth {
			return undef
		}
		size := int64(1)
		if len(a) >= 3 {
			if !isInt64(a[2]) || a[2].n <= 0 {
				return undef
			}
			size = int64Of(a[2])
		}
		origin := int64(0)
		if len(a) == 4 {
			if origin, ok = parseDateTime(a[3]); !ok || partsOf(origin).year < 1601 {
				return undef
			}
		}
		var bin int64
		if u == uNanosecond {
			bin = size / tickNs
			if bin == 0 {
				return formatDateTime(t) // finer than the clock's resolution
			}
		} else {
			ut := unitTicks(u)
			if size > (maxTicks-minTicks)/ut {
				bin = maxTicks - minTicks + 1 // longer than all time
			} else {
				bin = size * ut
			}
		}
		return formatDateTime(origin + floorDiv(t-origin, bin)*bin)
	})
	def("DateTimeDiff", 3, 3, func(_ *evaluator, a []value) value {
		u := unitOf(a[0])
		s, ok1 := parseDateTime(a[1])
		e, ok2 := parseDateTime(a[2])
		if u == uBad || !ok1 || !ok2 {
			return undef
		}
		return dateTimeDiff(u, s, e)
	})
	def("DateTimeFromParts", 3, 7, func(_ *evaluator, a []value) value {
		var x [7]int
		for i, v := range a {
			if !isInt64(v) || v.n < 0 || v.n > 1e8 {
				return undef
			}
			x[i] = int(v.n)
		}
		p := dtParts{x[0], x[1], x[2], x[3], x[4], x[5], x[6]}
		if !p.valid() {
			return undef
		}
		return formatDateTime(p.ticks())
	})
	def("DateTimePart", 2, 2, func(_ *evaluator, a []value) value {
		u := unitOf(a[0])
		t, ok := parseDateTime(a[1])
		if u == uBad || !ok {
			return undef
		}
		return dateTimePart(u, t)
	})
	def("DateTimeToTicks", 1, 1, func(_ *evaluator, a []value) value {
		t, ok := parseDateTime(a[0])
		if !ok {
			return undef
		}
		return numVal(float64(t))
	})
	def("DateTimeToTimestamp", 1, 1, func(_ *evaluator, a []value) value {
		t, ok := parseDateTime(a[0])
		if !ok {
			return undef
		}
		return numVal(float64(floorDiv(t, ticksPerSec/1000)))
	})
	def("TicksToDateTime", 1, 1, func(_ *evaluator, a []value) value { return fromEpoch(a[0], 1) })
	def("TimestampToDateTime", 1, 1, func(_ *evaluator, a []value) value { return fromEpoch(a[0], ticksPerSec/1000) })

	// Refused: it needs data lethe does not keep.
	refuse("DocumentId", 1, 1, "lethe items have no _rid")
}

// ---- newer functions of the reference ----

// nowTicks is the query's clock reading in ticks since the Unix epoch.
func nowTicks(ev *evaluator) int64 {
	return ev.now.Unix()*ticksPerSec + int64(ev.now.Nanosecond()/tickNs)
}

// dateTimeAdd adds n (a value that must be an integer) units u to t.
func dateTimeAdd(u dtUnit, n value, t int64, negate bool) value {
	if u == uBad || !isInt64(n) {
		return undef
	}
	x := int64Of(n)
	if negate {
		if x == math.MinInt64 {
			return undef
		}
		x = -x
	}
	switch u {
	case uYear:
		if x > 10000 || x < -10000 {
			return undef
		}
		return addMonths(t, x*12)
	case uMonth:
		return addMonths(t, x)
	}
	return addTicks(t, x, u)
}

var (
	monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	dayNames   = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
)

// formatCustom renders t with a .NET custom date and time format string
// (the invariant culture; the time zone is UTC): y, M, d, H, h, m, s, f,
// F, t, K, z and g specifiers, \ escapes and quoted literals; any other
// character is copied. ok is false for a bad format.
func formatCustom(t int64, format string) (string, bool) {
	p := partsOf(t)
	var b []byte
	num := func(x, width int) {
		s := make([]byte, 0, 8)
		for x > 0 || len(s) == 0 {
			s = append(s, byte('0'+x%10))
			x /= 10
		}
		for len(s) < width {
			s = append(s, '0')
		}
		for i := len(s) - 1; i >= 0; i-- {
			b = append(b, s[i])
		}
	}
	for i := 0; i < len(format); {
		c := format[i]
		n := 1
		for i+n < len(format) && format[i+n] == c {
			n++
		}
		switch c {
		case 'y':
			switch n {
			case 1:
				num(p.year%100, 1)
			case 2:
				num(p.year%100, 2)
			default:
				num(p.year, n)
			}
		case 'M':
			switch n {
			case 1, 2:
				num(p.month, n)
			case 3:
				b = append(b, monthNames[p.month-1][:3]...)
			default:
				b = append(b, monthNames[p.month-1]...)
			}
		case 'd':
			wd := int((floorDiv(t, ticksPerDay)%7 + 11) % 7) // 1970-01-01 was a Thursday
			switch n {
			case 1, 2:
				num(p.day, n)
			case 3:
				b = append(b, dayNames[wd][:3]...)
			default:
				b = append(b, dayNames[wd]...)
			}
		case 'H':
			num(p.hour, min(n, 2))
		case 'h':
			h := p.hour % 12
			if h == 0 {
				h = 12
			}
			num(h, min(n, 2))
		case 'm':
			num(p.min, min(n, 2))
		case 's':
			num(p.sec, min(n, 2))
		case 'f', 'F':
			if n > 7 {
				return "", false
			}
			digits := p.frac
			for k := n; k < 7; k++ {
				digits /= 10
			}
			if c == 'f' {
				num(digits, n)
				break
			}
			w := n
			for w > 0 && digits%10 == 0 {
				digits /= 10
				w--
			}
			if w > 0 {
				num(digits, w)
			}
		case 't':
			ampm := "AM"
			if p.hour >= 12 {
				ampm = "PM"
			}
			if n == 1 {
				ampm = ampm[:1]
			}
			b = append(b, ampm...)
		case 'K':
			b = append(b, 'Z')
			n = 1
		case 'z':
			switch n {
			case 1:
				b = append(b, "+0"...)
			case 2:
				b = append(b, "+00"...)
			default:
				b = append(b, "+00:00"...)
			}
		case 'g':
			b = append(b, "A.D."...)
		case '\\':
			if i+1 >= len(format) {
				return "", false
			}
			b = append(b, format[i+1])
			n = 2
		case '\'', '"':
			end := strings.IndexByte(format[i+1:], c)
			if end < 0 {
				return "", false
			}
			b = append(b, format[i+1:i+1+end]...)
			n = end + 2
		case '%':
			n = 1
		default:
			b = append(b, format[i:i+n]...)
		}
		i += n
	}
	return string(b), true
}

// arrayScalars collects the defined elements of an array argument; ok is
// false when it is not an array or holds a value that keep refuses.
func arrayScalars(v value, keep func(value) bool) ([]value, bool) {
	if v.k != kArr {
		return nil, false
	}
	out := make([]value, 0, len(v.a))
	for _, e := range v.a {
		if e.k == kUndef {
			continue
		}
		if !keep(e) {
			return nil, false
		}
		out = append(out, e)
	}
	return out, true
}

func isNum(v value) bool { return v.k == kNum }

func isScalar(v value) bool { return v.k >= kNull && v.k <= kStr }

// containsList is CONTAINS(s, x, ci) of each x in xs combined with OR
// (any) or AND (all), in three-valued logic.
func containsList(a []value, ci, any bool) value {
	unknown := false
	for _, x := range a[1:] {
		if a[0].k != kStr || x.k != kStr {
			unknown = true
			continue
		}
		s, t := a[0].s, x.s
		if ci {
			s, t = strings.ToLower(s), strings.ToLower(t)
		}
		if strings.Contains(s, t) == any {
			return boolVal(any)
		}
	}
	if unknown {
		return undef
	}
	return boolVal(!any)
}

// appendDistinct appends to out the elements of arr not in seen (by their
// canonical encoding) and, when only is not nil, in only, each value once,
// adding them to seen.
func appendDistinct(ev *evaluator, out, arr []value, seen, only map[string]struct{}) []value {
	var buf []byte
	for _, e := range arr {
		buf = canonical(buf[:0], e)
		ev.tick(1 + len(buf)>>10)
		if _, dup := seen[string(buf)]; dup {
			continue
		}
		if only != nil {
			if _, ok := only[string(buf)]; !ok {
				continue
			}
		}
		seen[string(buf)] = struct{}{}
		out = append(out, e)
	}
	return out
}

// arrayContainsList is ARRAY_CONTAINS(arr, x) of each x in xs combined
// with OR (any) or AND (all), in three-valued logic: an undefined x leaves
// the answer undefined unless another decides it.
func arrayContainsList(ev *evaluator, a []value, any bool) value {
	if a[0].k != kArr {
		return undef
	}
	unknown := false
	for _, x := range a[1:] {
		if x.k == kUndef {
			unknown = true
			continue
		}
		ev.tick(len(a[0].a) >> 6)
		if arrayContains(a[0].a, x, false) == any {
			return boolVal(any)
		}
	}
	if unknown {
		return undef
	}
	return boolVal(!any)
}

func init() {
	typeCheck("IS_DATETIME", func(v value) bool { _, ok := parseDateTime(v); return ok })

	// strings
	for _, ci := range []bool{false, true} {
		suffix := "_CS"
		if ci {
			suffix = "_CI"
		}
		def("CONTAINS_ANY"+suffix, 2, -1, func(_ *evaluator, a []value) value { return containsList(a, ci, true) })
		def("CONTAINS_ALL"+suffix, 2, -1, func(_ *evaluator, a []value) value { return containsList(a, ci, false) })
	}

	// arrays
	def("SetDifference", 2, 2, func(ev *evaluator, a []value) value {
		if a[0].k != kArr || a[1].k != kArr {
			return undef
		}
		// seen starts with the elements of the second array.
		return value{k: kArr, a: appendDistinct(ev, []value{}, a[0].a, setOf(ev, a[1].a), nil)}
	})
	def("SetEqual", 2, 2, func(ev *evaluator, a []value) value {
		if a[0].k != kArr || a[1].k != kArr {
			return undef
		}
		x, y := setOf(ev, a[0].a), setOf(ev, a[1].a)
		if len(x) != len(y) {
			return falseV
		}
		for k := range x {
			if _, ok := y[k]; !ok {
				return falseV
			}
		}
		return trueVal
	})
	// ARRAY_MAX and ARRAY_MIN order null < booleans < numbers < strings.
	for _, name := range []string{"ARRAY_MAX", "ARRAY_MIN"} {
		sign := 1
		if name == "ARRAY_MIN" {
			sign = -1
		}
		def(name, 1, 1, func(ev *evaluator, a []value) value {
			xs, ok := arrayScalars(a[0], isScalar)
			if !ok || len(xs) == 0 {
				return undef
			}
			ev.tick(len(xs) >> 8)
			best := xs[0]
			for _, x := range xs[1:] {
				if compareTotal(x, best)*sign > 0 {
					best = x
				}
			}
			return best
		})
	}
	def("ARRAY_SUM", 1, 1, func(ev *evaluator, a []value) value {
		xs, ok := arrayScalars(a[0], isNum)
		if !ok {
			return undef
		}
		ev.tick(len(xs) >> 8)
		sum := 0.0
		for _, x := range xs {
			sum += x.n
		}
		return numVal(sum)
	})
	def("ARRAY_AVG", 1, 1, func(ev *evaluator, a []value) value {
		xs, ok := arrayScalars(a[0], isNum)
		if !ok || len(xs) == 0 {
			return undef
		}
		ev.tick(len(xs) >> 8)
		sum := 0.0
		for _, x := range xs {
			sum += x.n
		}
		return numVal(sum / float64(len(xs)))
	})
	def("ARRAY_MEDIAN", 1, 1, func(ev *evaluator, a []value) value {
		xs, ok := arrayScalars(a[0], isNum)
		if !ok || len(xs) == 0 {
			return undef
		}
		ev.tick(len(xs) >> 6)
		ns := make([]float64, len(xs))
		for i, x := range xs {
			ns[i] = x.n
		}
		slices.Sort(ns)
		m := len(ns) / 2
		if len(ns)%2 == 1 {
			return numVal(ns[m])
		}
		return numVal((ns[m-1] + ns[m]) / 2)
	})

	// date and time
	def("NOW", 0, 2, func(ev *evaluator, a []value) value {
		t := nowTicks(ev)
		switch len(a) {
		case 0:
			return formatDateTime(t)
		case 1:
			return undef
		}
		return dateTimeAdd(unitOf(a[0]), a[1], t, false)
	})
	def("AGO", 2, 2, func(ev *evaluator, a []value) value {
		return dateTimeAdd(unitOf(a[0]), a[1], nowTicks(ev), true)
	})
	for name, u := range map[string]dtUnit{"YEAR": uYear, "MONTH": uMonth, "DAY": uDay} {
		def(name, 1, 1, func(_ *evaluator, a []value) value {
			t, ok := parseDateTime(a[0])
			if !ok {
				return undef
			}
			return dateTimePart(u, t)
		})
	}
	def("DateTimeFormat", 2, 2, func(ev *evaluator, a []value) value {
		t, ok := parseDateTime(a[0])
		if !ok || a[1].k != kStr {
			return undef
		}
		// No specifier writes more than 9 bytes for every 3 of the format.
		ev.checkSize("DateTimeFormat", 3*len(a[1].s))
		s, ok := formatCustom(t, a[1].s)
		if !ok {
			return undef
		}
		return strVal(s)
	})
}
