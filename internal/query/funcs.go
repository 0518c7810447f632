package query

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// funcDef describes a built-in function. maxArgs < 0 means variadic.
type funcDef struct {
	name             string
	minArgs, maxArgs int
	agg              bool
	joins            bool // the result holds all the arguments: their sizes are checked as they come
	text             bool // a full-text function: it reads the call (evaluator.textCall)
	vector           bool // VectorDistance: evaluated by evaluator.vectorDistance, on the call
	rank             bool // FullTextScore or RRF: only in ORDER BY RANK (rank.go)
	spatial          bool // an ST_ function: it reads the call (evaluator.spatialCall)
	fn               func(ev *evaluator, args []value) value
}

func (f *funcDef) arity() string {
	plural := func(n int) string {
		if n == 1 {
			return "1 argument"
		}
		return strconv.Itoa(n) + " arguments"
	}
	switch {
	case f.maxArgs < 0:
		return "takes at least " + plural(f.minArgs)
	case f.minArgs == f.maxArgs:
		return "takes " + plural(f.minArgs)
	case f.maxArgs == f.minArgs+1:
		return "takes " + strconv.Itoa(f.minArgs) + " or " + plural(f.maxArgs)
	}
	return "takes " + strconv.Itoa(f.minArgs) + " to " + plural(f.maxArgs)
}

var funcs = map[string]*funcDef{}

func lookupFunc(name string) *funcDef {
	if len(name) > 32 {
		return nil
	}
	return funcs[strings.ToUpper(name)]
}

func def(name string, minA, maxA int, fn func(ev *evaluator, args []value) value) {
	funcs[strings.ToUpper(name)] = &funcDef{name: name, minArgs: minA, maxArgs: maxA, fn: fn}
}

func typeCheck(name string, pred func(v value) bool) {
	def(name, 1, 1, func(_ *evaluator, a []value) value { return boolVal(pred(a[0])) })
}

func math1(name string, f func(float64) float64) {
	def(name, 1, 1, func(_ *evaluator, a []value) value {
		if a[0].k != kNum {
			return undef
		}
		return numVal(f(a[0].n))
	})
}

// optBool reads an optional boolean argument; ok is false when present but
// not a boolean.
func optBool(a []value, i int) (b bool, ok bool) {
	if len(a) <= i {
		return false, true
	}
	if a[i].k != kBool {
		return false, false
	}
	return a[i].b, true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// len16 is the length of s in UTF-16 code units.
func len16(s string) int {
	if isASCII(s) {
		return len(s)
	}
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// sub16 returns s[start:end] counted in UTF-16 code units (clamped).
func sub16(s string, start, end int) string {
	if isASCII(s) {
		start, end = clamp(start, 0, len(s)), clamp(end, 0, len(s))
		if start >= end {
			return ""
		}
		return s[start:end]
	}
	u := utf16.Encode([]rune(s))
	start, end = clamp(start, 0, len(u)), clamp(end, 0, len(u))
	if start >= end {
		return ""
	}
	return string(utf16.Decode(u[start:end]))
}

// index16 is strings.Index measured in UTF-16 code units.
func index16(s, sub string, from int) int {
	if from < 0 {
		from = 0
	}
	if isASCII(s) {
		if from > len(s) {
			return -1
		}
		i := strings.Index(s[from:], sub)
		if i < 0 {
			return -1
		}
		return i + from
	}
	u := utf16.Encode([]rune(s))
	w := utf16.Encode([]rune(sub))
	for i := from; i+len(w) <= len(u); i++ {
		if slices.Equal(u[i:i+len(w)], w) {
			return i
		}
	}
	return -1
}

func clamp(x, lo, hi int) int {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// toInt converts a number argument to an int (truncating), saturating; NaN
// is 0, as JavaScript's ToIntegerOrInfinity has it.
func toInt(f float64) int {
	// 2^40, beyond any string's length; on a 32-bit build a quarter of
	// the int range, so that a sum of two stays an int.
	const maxToInt = min(1<<40, math.MaxInt/4)
	if math.IsNaN(f) {
		return 0
	}
	if f > maxToInt {
		return maxToInt
	}
	if f < -maxToInt {
		return -maxToInt
	}
	return int(f)
}

func stringFn3(name string, f func(s, t string) bool) {
	def(name, 2, 3, func(_ *evaluator, a []value) value {
		ic, ok := optBool(a, 2)
		if a[0].k != kStr || a[1].k != kStr || !ok {
			return undef
		}
		s, t := a[0].s, a[1].s
		if ic {
			s, t = strings.ToLower(s), strings.ToLower(t)
		}
		return boolVal(f(s, t))
	})
}

func trimFn(name string, f func(s, cut string) string, spaceF func(string) string) {
	def(name, 1, 2, func(_ *evaluator, a []value) value {
		if a[0].k != kStr {
			return undef
		}
		if len(a) == 2 {
			if a[1].k != kStr {
				return undef
			}
			return strVal(f(a[0].s, a[1].s))
		}
		return strVal(spaceF(a[0].s))
	})
}

// toString renders v as Cosmos ToString does.
func toString(v value) value {
	switch v.k {
	case kUndef:
		return undef
	case kStr:
		return v
	}
	return strVal(string(appendJSON(nil, v)))
}

// arrayContains reports whether arr holds x; with partial, an object
// element matches when it contains all of x's properties.
func arrayContains(arr []value, x value, partial bool) bool {
	for _, e := range arr {
		if deepEqual(e, x) {
			return true
		}
		if partial && e.k == kObj && x.k == kObj {
			all := true
			for _, f := range x.o {
				if f.v.k != kUndef && !deepEqual(e.get(f.k), f.v) {
					all = false
					break
				}
			}
			if all {
				return true
			}
		}
	}
	return false
}

const maxReplicate = 10000

func init() {
	typeCheck("IS_DEFINED", func(v value) bool { return v.k != kUndef })
	typeCheck("IS_NULL", func(v value) bool { return v.k == kNull })
	typeCheck("IS_NUMBER", func(v value) bool { return v.k == kNum })
	typeCheck("IS_FINITE_NUMBER", func(v value) bool { return v.k == kNum && finite(v) })
	typeCheck("IS_STRING", func(v value) bool { return v.k == kStr })
	typeCheck("IS_BOOL", func(v value) bool { return v.k == kBool })
	typeCheck("IS_ARRAY", func(v value) bool { return v.k == kArr })
	typeCheck("IS_OBJECT", func(v value) bool { return v.k == kObj })
	typeCheck("IS_PRIMITIVE", func(v value) bool { return v.k >= kNull && v.k <= kStr })

	// strings
	def("CONCAT", 2, -1, func(ev *evaluator, a []value) value {
		n := 0
		for _, v := range a {
			if v.k != kStr {
				return undef
			}
			n += len(v.s)
		}
		ev.checkSize("CONCAT", n)
		var sb strings.Builder
		sb.Grow(n)
		for _, v := range a {
			sb.WriteString(v.s)
		}
		return strVal(sb.String())
	})
	stringFn3("CONTAINS", strings.Contains)
	stringFn3("STARTSWITH", strings.HasPrefix)
	stringFn3("ENDSWITH", strings.HasSuffix)
	stringFn3("STRINGEQUALS", func(s, t string) bool { return s == t })
	def("LOWER", 1, 1, func(_ *evaluator, a []value) value {
		if a[0].k != kStr {
			return undef
		}
		return strVal(strings.ToLower(a[0].s))
	})
	def("UPPER", 1, 1, func(_ *evaluator, a []value) value {
		if a[0].k != kStr {
			return undef
		}
		return strVal(strings.ToUpper(a[0].s))
	})
	def("LENGTH", 1, 1, func(_ *evaluator, a []value) value {
		if a[0].k != kStr {
			return undef
		}
		return numVal(float64(len16(a[0].s)))
	})
	def("SUBSTRING", 3, 3, func(_ *evaluator, a []value) value {
		if a[0].k != kStr || a[1].k != kNum || a[2].k != kNum {
			return undef
		}
		start, n := toInt(a[1].n), toInt(a[2].n)
		if start < 0 {
			start = 0
		}
		if n <= 0 {
			return strVal("")
		}
		return strVal(sub16(a[0].s, start, start+n))
	})
	def("LEFT", 2, 2, func(_ *evaluator, a []value) value {
		if a[0].k != kStr || a[1].k != kNum || a[1].n < 0 {
			return undef
		}
		return strVal(sub16(a[0].s, 0, toInt(a[1].n)))
	})
	def("RIGHT", 2, 2, func(_ *evaluator, a []value) value {
		if a[0].k != kStr || a[1].k != kNum || a[1].n < 0 {
			return undef
		}
		l := len16(a[0].s)
		return strVal(sub16(a[0].s, l-toInt(a[1].n), l))
	})
	def("INDEX_OF", 2, 3, func(_ *evaluator, a []value) value {
		if a[0].k != kStr || a[1].k != kStr {
			return undef
		}
		from := 0
		if len(a) == 3 {
			if a[2].k != kNum {
				return undef
			}
			from = toInt(a[2].n)
		}
		return numVal(float64(index16(a[0].s, a[1].s, from)))
	})
	def("REPLACE", 3, 3, func(ev *evaluator, a []value) value {
		if a[0].k != kStr || a[1].k != kStr || a[2].k != kStr {
			return undef
		}
		if a[1].s == "" {
			return a[0]
		}
		if len(a[2].s) > len(a[1].s) {
			ev.checkSize("REPLACE", len(a[0].s)+strings.Count(a[0].s, a[1].s)*(len(a[2].s)-len(a[1].s)))
		}
		return strVal(strings.ReplaceAll(a[0].s, a[1].s, a[2].s))
	})
	trimFn("TRIM", strings.Trim, func(s string) string { return strings.TrimFunc(s, unicode.IsSpace) })
	trimFn("LTRIM", strings.TrimLeft, func(s string) string { return strings.TrimLeftFunc(s, unicode.IsSpace) })
	trimFn("RTRIM", strings.TrimRight, func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) })
	def("TOSTRING", 1, 1, func(ev *evaluator, a []value) value {
		n, ok := sizeAtMost(a[0], MaxValueSize)
		if !ok {
			ev.fail("TOSTRING would build a string over the limit of %d bytes", MaxValueSize)
		}
		ev.tick(n >> 10)
		return toString(a[0])
	})
	def("REVERSE", 1, 1, func(_ *evaluator, a []value) value {
		if a[0].k != kStr {
			return undef
		}
		r := []rune(a[0].s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return strVal(string(r))
	})
	def("REPLICATE", 2, 2, func(_ *evaluator, a []value) value {
		if a[0].k != kStr || a[1].k != kNum || a[1].n < 0 {
			return undef
		}
		n := toInt(a[1].n)
		if n*len16(a[0].s) > maxReplicate {
			return undef
		}
		return strVal(strings.Repeat(a[0].s, n))
	})

	// math
	math1("ABS", math.Abs)
	math1("CEILING", math.Ceil)
	math1("FLOOR", math.Floor)
	math1("ROUND", math.Round)
	math1("TRUNC", math.Trunc)
	math1("SQRT", math.Sqrt)
	math1("EXP", math.Exp)
	math1("LOG10", math.Log10)
	math1("SIN", math.Sin)
	math1("COS", math.Cos)
	math1("TAN", math.Tan)
	math1("ASIN", math.Asin)
	math1("ACOS", math.Acos)
	math1("ATAN", math.Atan)
	math1("COT", func(x float64) float64 { return 1 / math.Tan(x) })
	math1("DEGREES", func(x float64) float64 { return x * 180 / math.Pi })
	math1("RADIANS", func(x float64) float64 { return x * math.Pi / 180 })
	math1("SQUARE", func(x float64) float64 { return x * x })
	math1("SIGN", func(x float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	})
	def("POWER", 2, 2, func(_ *evaluator, a []value) value {
		if a[0].k != kNum || a[1].k != kNum {
			return undef
		}
		return numVal(math.Pow(a[0].n, a[1].n))
	})
	def("ATN2", 2, 2, func(_ *evaluator, a []value) value {
		if a[0].k != kNum || a[1].k != kNum {
			return undef
		}
		return numVal(math.Atan2(a[1].n, a[0].n))
	})
	def("LOG", 1, 2, func(_ *evaluator, a []value) value {
		if a[0].k != kNum {
			return undef
		}
		if len(a) == 2 {
			if a[1].k != kNum {
				return undef
			}
			return numVal(math.Log(a[0].n) / math.Log(a[1].n))
		}
		return numVal(math.Log(a[0].n))
	})
	def("PI", 0, 0, func(_ *evaluator, _ []value) value { return numVal(math.Pi) })

	// arrays
	def("ARRAY_CONTAINS", 2, 3, func(_ *evaluator, a []value) value {
		partial, ok := optBool(a, 2)
		if a[0].k != kArr || !ok {
			return undef
		}
		return boolVal(arrayContains(a[0].a, a[1], partial))
	})
	def("ARRAY_LENGTH", 1, 1, func(_ *evaluator, a []value) value {
		if a[0].k != kArr {
			return undef
		}
		return numVal(float64(len(a[0].a)))
	})
	def("ARRAY_SLICE", 2, 3, func(_ *evaluator, a []value) value {
		if a[0].k != kArr || a[1].k != kNum || (len(a) == 3 && a[2].k != kNum) {
			return undef
		}
		arr := a[0].a
		start := toInt(a[1].n)
		if start < 0 {
			start += len(arr)
		}
		start = clamp(start, 0, len(arr))
		end := len(arr)
		if len(a) == 3 {
			n := toInt(a[2].n)
			if n < 0 {
				n = 0
			}
			end = clamp(start+n, start, len(arr))
		}
		return value{k: kArr, a: arr[start:end:end]}
	})
	def("ARRAY_CONCAT", 2, -1, func(ev *evaluator, a []value) value {
		n := 0
		for _, v := range a {
			if v.k != kArr {
				return undef
			}
			n += len(v.a)
		}
		// Each element takes at least two bytes of JSON: itself and a comma.
		ev.checkSize("ARRAY_CONCAT", 2*n)
		out := make([]value, 0, n)
		for _, v := range a {
			out = append(out, v.a...)
		}
		if out == nil {
			out = []value{}
		}
		return value{k: kArr, a: out}
	})

	// date and time: all read the query's single clock reading.
	for _, suffix := range []string{"", "Static"} {
		def("GetCurrentTimestamp"+suffix, 0, 0, func(ev *evaluator, _ []value) value {
			return numVal(float64(ev.now.UnixMilli()))
		})
		def("GetCurrentDateTime"+suffix, 0, 0, func(ev *evaluator, _ []value) value {
			return strVal(ev.now.UTC().Format("2006-01-02T15:04:05.0000000Z"))
		})
		def("GetCurrentTicks"+suffix, 0, 0, func(ev *evaluator, _ []value) value {
			return numVal(float64(ev.now.UnixNano() / 100))
		})
	}

	funcs["CONCAT"].joins = true
	funcs["ARRAY_CONCAT"].joins = true

	// aggregates (evaluated by the executor, never called directly)
	for _, n := range []string{"COUNT", "SUM", "AVG", "MIN", "MAX"} {
		funcs[n] = &funcDef{name: n, minArgs: 1, maxArgs: 1, agg: true}
	}
}
