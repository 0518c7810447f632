package script

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
)

// A guard bounds one runtime's built-ins that goja runs as one Go loop:
// the interrupt is checked between JavaScript instructions only, and goja
// has no allocation limit, so one call of such a built-in could spin past
// the time limit or allocate past the memory the process has before any
// watchdog can act. The guard replaces each of them, on its prototype or
// constructor, by a Go function that checks the call's inputs first and
// throws a RangeError naming the limit, then calls the original. The
// originals stay in the Go closures: no script value reaches them, so
// nothing the script does (replacing Function.prototype.call, keeping a
// reference) calls one unchecked.
//
// The bounds: an array or array-like whose length is over
// Limits.MaxArrayLength is refused by every Array.prototype method that
// walks it (and by Array.from and Function.prototype.apply); a string
// builder (join, toString and toLocaleString of arrays, JSON.stringify,
// String.prototype.concat, repeat, padStart, padEnd, replace, replaceAll
// and RegExp replacement) is refused when its result would be longer than
// Limits.MaxStringLength; a split or global match that could make more
// than MaxArrayLength strings or matches is refused. The array and string
// iterators' next throws once the execution is interrupted, so that
// spreading a huge array stops within the budgets.
type guard struct {
	vm      *goja.Runtime
	maxLen  int64
	maxStr  int64
	stopped atomic.Bool // the execution was interrupted
	gopd    func(goja.FunctionCall) goja.Value
	// joining are the arrays being joined, outermost first: one met again
	// is a cycle, which joins as "" (as goja's join does), and they nest
	// at most maxDepth deep (the joins recurse in Go, not on goja's
	// stack).
	joining  []*goja.Object
	maxDepth int
}

// The constructors of what a guard throws, looked up when it throws (the
// runtime makes each when it is first touched).
const (
	rangeError = "RangeError"
	typeError  = "TypeError"
)

var proxyType = reflect.TypeOf(goja.Proxy{})

// native is the Go function behind a built-in function value.
func native(v goja.Value) func(goja.FunctionCall) goja.Value {
	if o, ok := v.(*goja.Object); ok {
		if f, ok := o.Export().(func(goja.FunctionCall) goja.Value); ok {
			return f
		}
	}
	panic(fmt.Sprintf("script: %v is not a built-in function", v)) // fixed built-ins: it does not happen
}

// arrayUnguarded are the Array.prototype methods that do not walk the
// array: every other function there is length-checked.
var arrayUnguarded = map[string]bool{"constructor": true, "at": true, "pop": true, "push": true, "keys": true, "values": true, "entries": true,
	// They call their callback at every index, holes too: the interrupt
	// reaches them there.
	"find": true, "findIndex": true, "findLast": true, "findLastIndex": true}

// installGuard bounds vm's built-ins (see guard).
func installGuard(vm *goja.Runtime, l Limits) *guard {
	g := &guard{vm: vm, maxLen: int64(l.MaxArrayLength), maxStr: int64(l.MaxStringLength), maxDepth: l.MaxCallStackSize}
	object := vm.Get("Object").ToObject(vm)
	g.gopd = native(object.Get("getOwnPropertyDescriptor"))

	array := vm.Get("Array").ToObject(vm)
	ap := array.Get("prototype").ToObject(vm)
	for _, name := range ap.GetOwnPropertyNames() {
		if arrayUnguarded[name] {
			continue
		}
		if _, ok := ap.Get(name).(*goja.Object); !ok {
			continue
		}
		orig := native(ap.Get(name))
		switch name {
		case "join":
			g.set(ap, name, g.join(orig))
		case "toLocaleString":
			g.set(ap, name, g.toLocaleString(orig))
		case "concat":
			g.set(ap, name, g.concatArrays(orig))
		case "flat":
			g.set(ap, name, g.flat(orig))
		default:
			g.set(ap, name, g.walks(orig, "Array.prototype."+name))
		}
	}
	from := native(array.Get("from"))
	g.set(array, "from", func(c goja.FunctionCall) goja.Value {
		if it := c.Argument(0); !goja.IsUndefined(it) && !goja.IsNull(it) {
			g.length(it, "Array.from")
		}
		return from(c)
	})
	g.guardIterators(ap)

	fp := vm.Get("Function").ToObject(vm).Get("prototype").ToObject(vm)
	apply := native(fp.Get("apply"))
	g.set(fp, "apply", func(c goja.FunctionCall) goja.Value {
		g.argList(c.Argument(1), "Function.prototype.apply")
		return apply(c)
	})
	reflectObj := vm.Get("Reflect").ToObject(vm)
	for _, name := range []string{"apply", "construct"} {
		orig, at := native(reflectObj.Get(name)), 1
		if name == "apply" {
			at = 2
		}
		what := "Reflect." + name
		g.set(reflectObj, name, func(c goja.FunctionCall) goja.Value {
			g.argList(c.Argument(at), what)
			return orig(c)
		})
	}

	g.guardStrings(vm.Get("String").ToObject(vm).Get("prototype").ToObject(vm))
	g.guardRegExps(vm.Get("RegExp").ToObject(vm).Get("prototype").ToObject(vm))
	json := vm.Get("JSON").ToObject(vm)
	stringify := native(json.Get("stringify"))
	g.set(json, "stringify", func(c goja.FunctionCall) goja.Value {
		if r, ok := c.Argument(1).(*goja.Object); ok && r.ClassName() == "Array" {
			// A list of properties: walked before (see jsonSize).
			g.jsonSize(c.Argument(0), c.Argument(2))
			return stringify(c)
		}
		if _, ok := c.Argument(0).(*goja.Object); !ok && goja.IsUndefined(c.Argument(1)) {
			// A primitive: its text is known (a UDF's result often is).
			if n := g.jsonLen(c.Argument(0), g.maxStr); n > g.maxStr {
				g.stringTooLong("JSON.stringify", n)
			}
			return stringify(c)
		}
		return stringify(goja.FunctionCall{This: c.This, Arguments: []goja.Value{c.Argument(0), g.jsonCounter(c.Argument(1), c.Argument(2)), c.Argument(2)}})
	})
	return g
}

// guardIterators makes the next of the array and string iterators throw
// once the execution is interrupted: spreading one, or Array.from or new
// Set of one, is a Go loop calling next. (A Map's or Set's iterator makes
// as many values as the script put there, one instruction each; a
// RegExp's matchAll is bounded as match is.)
func (g *guard) guardIterators(ap *goja.Object) {
	vm := g.vm
	iterOf := func(v goja.Value) *goja.Object {
		return native(v.ToObject(vm).GetSymbol(goja.SymIterator))(goja.FunctionCall{This: v}).ToObject(vm)
	}
	for _, it := range []*goja.Object{iterOf(vm.NewArray()), iterOf(vm.ToValue(""))} {
		proto := it.Prototype()
		next := native(proto.Get("next"))
		g.set(proto, "next", func(c goja.FunctionCall) goja.Value {
			g.checkStopped()
			return next(c)
		})
	}
}

// set replaces o's method name by f, a built-in's own attributes.
func (g *guard) set(o *goja.Object, name string, f func(goja.FunctionCall) goja.Value) {
	if err := o.DefineDataProperty(name, g.vm.ToValue(f), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		panic(err) // a built-in's configurable property: it does not fail
	}
}

func (g *guard) setSymbol(o *goja.Object, s *goja.Symbol, f func(goja.FunctionCall) goja.Value) {
	if err := o.DefineDataPropertySymbol(s, g.vm.ToValue(f), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		panic(err)
	}
}

// throw throws a new ctor (RangeError, TypeError: the global one) with
// msg into the script.
func (g *guard) throw(ctor string, msg string) {
	e, err := g.vm.New(g.vm.Get(ctor), g.vm.ToValue(msg))
	if err != nil {
		panic(err)
	}
	panic(e)
}

// checkStopped throws once the execution is interrupted: a guard's own
// loop, or a built-in's loop that calls back into one, is where goja does
// not look for the interrupt.
func (g *guard) checkStopped() {
	if g.stopped.Load() {
		g.throw(rangeError, "the script was interrupted")
	}
}

func (g *guard) tooLong(what string, n int64) {
	g.throw(rangeError, fmt.Sprintf("%s: the array's length %d is over the limit of %d elements", what, n, g.maxLen))
}

func (g *guard) stringTooLong(what string, n int64) {
	g.throw(rangeError, fmt.Sprintf("%s: the result's length %d is over the limit of %d characters", what, n, g.maxStr))
}

// walks bounds an Array.prototype method that walks its this value.
func (g *guard) walks(orig func(goja.FunctionCall) goja.Value, what string) func(goja.FunctionCall) goja.Value {
	return func(c goja.FunctionCall) goja.Value {
		g.length(c.This, what)
		return orig(c)
	}
}

// length returns the length of the array-like v, refusing one over the
// limit, and one whose length may change between this read and the
// built-in's own: a Proxy, or a length that is a getter or an object
// (whose valueOf runs each time).
func (g *guard) length(v goja.Value, what string) int64 {
	o := v.ToObject(g.vm)
	if o.ExportType() == proxyType {
		g.throw(typeError, what+": a Proxy is not accepted (its length is not bounded)")
	}
	if o.ClassName() != "Array" {
		for p := o; p != nil; p = p.Prototype() {
			if p.ExportType() == proxyType {
				g.throw(typeError, what+": an object whose prototype is a Proxy is not accepted (its length is not bounded)")
			}
			d, ok := g.gopd(goja.FunctionCall{Arguments: []goja.Value{p, g.vm.ToValue("length")}}).(*goja.Object)
			if !ok {
				continue
			}
			if v := d.Get("value"); v == nil || !isPrimitive(v) {
				g.throw(typeError, what+": an object whose length is a getter or an object is not accepted (its length is not bounded)")
			}
			break
		}
	}
	n := o.Get("length")
	if n == nil {
		return 0
	}
	l := n.ToInteger()
	if l > g.maxLen {
		g.tooLong(what, l)
	}
	return max(l, 0)
}

func isPrimitive(v goja.Value) bool {
	_, ok := v.(*goja.Object)
	return !ok
}

// argList bounds an argument list made from an array-like.
func (g *guard) argList(v goja.Value, what string) {
	if v != nil && !goja.IsUndefined(v) && !goja.IsNull(v) {
		g.length(v, what)
	}
}

// str is v as a string, converted once.
func (g *guard) str(v goja.Value) goja.String {
	if s, ok := v.(goja.String); ok {
		return s
	}
	r := v.ToString()
	if s, ok := r.(goja.String); ok {
		return s
	}
	return g.vm.ToValue(r.String()).(goja.String) // a number, a boolean: ASCII
}

// join is Array.prototype.join, bounded: the elements are converted to
// strings once, here, and the original joins the strings.
func (g *guard) join(orig func(goja.FunctionCall) goja.Value) func(goja.FunctionCall) goja.Value {
	return func(c goja.FunctionCall) goja.Value {
		o := c.This.ToObject(g.vm)
		n := g.length(o, "Array.prototype.join")
		sep := goja.Value(g.vm.ToValue(","))
		if s := c.Argument(0); !goja.IsUndefined(s) {
			sep = g.str(s)
		}
		return g.joinStrings(orig, o, n, sep, "Array.prototype.join", func(e goja.Value) goja.String { return g.str(e) })
	}
}

// joinStrings joins the n elements of o, each converted by conv (null and
// undefined are empty), with sep, refusing a result over the limit.
func (g *guard) joinStrings(orig func(goja.FunctionCall) goja.Value, o *goja.Object, n int64, sep goja.Value, what string, conv func(goja.Value) goja.String) goja.Value {
	for _, j := range g.joining {
		if j == o {
			return g.vm.ToValue("")
		}
	}
	if len(g.joining) >= g.maxDepth {
		g.throw(rangeError, fmt.Sprintf("%s: arrays nested past the limit of %d (Maximum call stack size exceeded)", what, g.maxDepth))
	}
	g.joining = append(g.joining, o)
	defer func() { g.joining = g.joining[:len(g.joining)-1] }()
	sepLen := int64(sep.(goja.String).Length())
	total := int64(0)
	if n > 1 {
		total = sepLen * (n - 1)
	}
	if total > g.maxStr {
		g.stringTooLong(what, total)
	}
	parts := make([]any, n)
	for i := range n {
		g.checkStopped()
		e := o.Get(strconv.FormatInt(i, 10))
		if e == nil || goja.IsUndefined(e) || goja.IsNull(e) {
			parts[i] = ""
			continue
		}
		s := conv(e)
		total += int64(s.Length())
		if total > g.maxStr {
			g.stringTooLong(what, total)
		}
		parts[i] = s
	}
	return orig(goja.FunctionCall{This: g.vm.NewArray(parts...), Arguments: []goja.Value{sep}})
}

// toLocaleString is Array.prototype.toLocaleString, bounded as join.
func (g *guard) toLocaleString(orig func(goja.FunctionCall) goja.Value) func(goja.FunctionCall) goja.Value {
	join := native(g.vm.Get("Array").ToObject(g.vm).Get("prototype").ToObject(g.vm).Get("join"))
	_ = orig // the elements are converted here, and joined by the original join
	return func(c goja.FunctionCall) goja.Value {
		o := c.This.ToObject(g.vm)
		n := g.length(o, "Array.prototype.toLocaleString")
		return g.joinStrings(join, o, n, g.vm.ToValue(","), "Array.prototype.toLocaleString", func(e goja.Value) goja.String {
			f, ok := goja.AssertFunction(e.ToObject(g.vm).Get("toLocaleString"))
			if !ok {
				g.throw(typeError, "toLocaleString is not a function")
			}
			v, err := f(e)
			if err != nil {
				panic(err)
			}
			return g.str(v)
		})
	}
}

// flat is Array.prototype.flat, bounded: the elements it visits, at
// every depth, are at most MaxArrayLength (arrays nested in each other
// twice at every level are 2**depth elements).
func (g *guard) flat(orig func(goja.FunctionCall) goja.Value) func(goja.FunctionCall) goja.Value {
	return func(c goja.FunctionCall) goja.Value {
		depth := goja.Value(g.vm.ToValue(1))
		if d := c.Argument(0); !goja.IsUndefined(d) {
			depth = d.ToNumber()
		}
		visited := int64(0)
		var visit func(o *goja.Object, d float64, level int)
		visit = func(o *goja.Object, d float64, level int) {
			if level > g.maxDepth {
				g.throw(rangeError, fmt.Sprintf("Array.prototype.flat: arrays nested past the limit of %d (Maximum call stack size exceeded)", g.maxDepth))
			}
			n := g.length(o, "Array.prototype.flat")
			for i := range n {
				g.checkStopped()
				if visited++; visited > g.maxLen {
					g.tooLong("Array.prototype.flat", visited)
				}
				if e, ok := o.Get(strconv.FormatInt(i, 10)).(*goja.Object); ok && d >= 1 && e.ClassName() == "Array" {
					visit(e, d-1, level+1)
				}
			}
		}
		visit(c.This.ToObject(g.vm), depth.ToFloat(), 0)
		return orig(goja.FunctionCall{This: c.This, Arguments: []goja.Value{depth}})
	}
}

// concatArrays is Array.prototype.concat, bounded: the arrays it spreads
// together are at most MaxArrayLength elements.
func (g *guard) concatArrays(orig func(goja.FunctionCall) goja.Value) func(goja.FunctionCall) goja.Value {
	return func(c goja.FunctionCall) goja.Value {
		total := int64(0)
		for _, v := range append([]goja.Value{c.This}, c.Arguments...) {
			o, ok := v.(*goja.Object)
			if !ok {
				total++
				continue
			}
			spread := o.ClassName() == "Array"
			if s := o.GetSymbol(goja.SymIsConcatSpreadable); s != nil && !goja.IsUndefined(s) {
				spread = s.ToBoolean()
			}
			if !spread {
				total++
				continue
			}
			total += g.length(o, "Array.prototype.concat")
			if total > g.maxLen {
				g.tooLong("Array.prototype.concat", total)
			}
		}
		return orig(c)
	}
}

// guardStrings bounds String.prototype's builders. Each converts its
// this value and arguments once, here, and passes the original the
// converted values, so that no valueOf or toString runs twice.
func (g *guard) guardStrings(sp *goja.Object) {
	repeat := native(sp.Get("repeat"))
	g.set(sp, "repeat", func(c goja.FunctionCall) goja.Value {
		s, n := g.str(g.coercible(c.This, "repeat")), c.Argument(0).ToNumber()
		if f := n.ToFloat(); f > 0 && float64(s.Length())*f > float64(g.maxStr) {
			g.stringTooLong("String.prototype.repeat", int64(min(float64(s.Length())*f, 1<<62)))
		}
		return repeat(goja.FunctionCall{This: s, Arguments: []goja.Value{n}})
	})
	for _, name := range []string{"padStart", "padEnd"} {
		pad, what := native(sp.Get(name)), "String.prototype."+name
		g.set(sp, name, func(c goja.FunctionCall) goja.Value {
			s, n := g.str(g.coercible(c.This, name)), c.Argument(0).ToNumber()
			if l := n.ToInteger(); l > g.maxStr && l > int64(s.Length()) {
				g.stringTooLong(what, l)
			}
			return pad(goja.FunctionCall{This: s, Arguments: []goja.Value{n, c.Argument(1)}})
		})
	}
	concat := native(sp.Get("concat"))
	g.set(sp, "concat", func(c goja.FunctionCall) goja.Value {
		s := g.str(g.coercible(c.This, "concat"))
		total := int64(s.Length())
		args := make([]goja.Value, len(c.Arguments))
		for i, a := range c.Arguments {
			as := g.str(a)
			total += int64(as.Length())
			if total > g.maxStr {
				g.stringTooLong("String.prototype.concat", total)
			}
			args[i] = as
		}
		return concat(goja.FunctionCall{This: s, Arguments: args})
	})
	for _, name := range []string{"replace", "replaceAll"} {
		orig, what := native(sp.Get(name)), "String.prototype."+name
		g.set(sp, name, func(c goja.FunctionCall) goja.Value {
			pat := c.Argument(0)
			if o, ok := pat.(*goja.Object); ok {
				if m := o.GetSymbol(goja.SymReplace); m != nil && !goja.IsUndefined(m) && !goja.IsNull(m) {
					// A RegExp's Symbol.replace does it (bounded below).
					return orig(c)
				}
			}
			s := g.str(g.coercible(c.This, name))
			p := g.str(pat)
			repl := g.replacement(c.Argument(1), s, what)
			if rs, ok := repl.(goja.String); ok {
				count := int64(1)
				if name == "replaceAll" {
					count = occurrences(s, p)
				}
				g.replaceSize(s, rs, count, int64(p.Length()), what)
			}
			return orig(goja.FunctionCall{This: s, Arguments: []goja.Value{p, repl}})
		})
	}
	split := native(sp.Get("split"))
	g.set(sp, "split", func(c goja.FunctionCall) goja.Value {
		sep := c.Argument(0)
		if o, ok := sep.(*goja.Object); ok {
			if m := o.GetSymbol(goja.SymSplit); m != nil && !goja.IsUndefined(m) && !goja.IsNull(m) {
				return split(c) // a RegExp's Symbol.split (bounded below)
			}
		}
		s := g.str(g.coercible(c.This, "split"))
		if goja.IsUndefined(sep) {
			return split(goja.FunctionCall{This: s, Arguments: []goja.Value{sep, c.Argument(1)}})
		}
		p := g.str(sep)
		n := occurrences(s, p)
		if p.Length() == 0 {
			n = int64(s.Length()) - 1
		}
		if lim := c.Argument(1); !goja.IsUndefined(lim) {
			n = min(n, lim.ToInteger()&0xffffffff)
		}
		if n+1 > g.maxLen {
			g.tooLong("String.prototype.split", n+1)
		}
		return split(goja.FunctionCall{This: s, Arguments: []goja.Value{p, c.Argument(1)}})
	})
}

// coercible refuses null and undefined as a String method's this value,
// as the method itself does.
func (g *guard) coercible(v goja.Value, name string) goja.Value {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		g.throw(typeError, "String.prototype."+name+" called on null or undefined")
	}
	return v
}

// occurrences counts the non-overlapping occurrences of p in s: one more
// than s's length for an empty p.
func occurrences(s, p goja.String) int64 {
	if p.Length() == 0 {
		return int64(s.Length()) + 1
	}
	return int64(strings.Count(s.String(), p.String()))
}

// replacement returns a replace's replacement: a function wrapped so that
// the strings it returns are bounded together, or the string.
func (g *guard) replacement(r goja.Value, s goja.String, what string) goja.Value {
	f, ok := goja.AssertFunction(r)
	if !ok {
		return g.str(r)
	}
	total := int64(s.Length())
	return g.vm.ToValue(func(c goja.FunctionCall) goja.Value {
		g.checkStopped()
		v, err := f(c.This, c.Arguments...)
		if err != nil {
			panic(err)
		}
		rs := g.str(v)
		total += int64(rs.Length())
		if total > g.maxStr {
			g.stringTooLong(what, total)
		}
		return rs
	})
}

// replaceSize refuses count replacements by repl in s whose result may be
// over the limit. The matches do not overlap, so together they are at
// most s long; "$`" and "$'" are up to s each time.
func (g *guard) replaceSize(s, repl goja.String, count, matchLen int64, what string) {
	if count > g.maxLen {
		g.throw(rangeError, fmt.Sprintf("%s: %d replacements are over the limit of %d", what, count, g.maxLen))
	}
	if !g.replaceFits(s, repl, count, matchLen) {
		g.stringTooLong(what, int64(min(replaceBound(s, repl, count, matchLen), 1<<62)))
	}
}

// replaceFits reports whether count replacements by repl in s are within
// the limit.
func (g *guard) replaceFits(s, repl goja.String, count, matchLen int64) bool {
	return replaceBound(s, repl, count, matchLen) <= float64(g.maxStr)
}

// replaceBound bounds the length of count replacements by repl in s.
func replaceBound(s, repl goja.String, count, matchLen int64) float64 {
	r := repl.String()
	whole := int64(strings.Count(r, "$`") + strings.Count(r, "$'"))
	parts := int64(strings.Count(r, "$&"))
	for d := '0'; d <= '9'; d++ {
		parts += int64(strings.Count(r, "$"+string(d)))
	}
	sl := float64(s.Length())
	return sl + float64(count)*(float64(repl.Length())+float64(whole)*sl) + float64(parts)*max(sl, float64(matchLen))
}

// guardRegExps bounds RegExp.prototype's Symbol.replace (its result),
// Symbol.split and Symbol.match (how many strings they make).
func (g *guard) guardRegExps(rp *goja.Object) {
	replace := native(rp.GetSymbol(goja.SymReplace))
	count := func(re goja.Value, s goja.String) int64 {
		n := int64(0)
		counter := g.vm.ToValue(func(goja.FunctionCall) goja.Value {
			g.checkStopped()
			n++
			return g.vm.ToValue("")
		})
		replace(goja.FunctionCall{This: re, Arguments: []goja.Value{s, counter}})
		return n
	}
	// global refuses a global match on a string so long that its matches
	// could be more than MaxArrayLength: the original keeps them all.
	global := func(re goja.Value, s goja.String, what string) bool {
		if !re.ToObject(g.vm).Get("global").ToBoolean() {
			return false
		}
		if n := int64(s.Length()) + 1; n > g.maxLen {
			g.throw(rangeError, fmt.Sprintf("%s: a global match on a string of %d characters may find more than the limit of %d matches", what, n-1, g.maxLen))
		}
		return true
	}
	g.setSymbol(rp, goja.SymReplace, func(c goja.FunctionCall) goja.Value {
		const what = "RegExp.prototype[Symbol.replace]"
		s := g.str(c.Argument(0))
		all := global(c.This, s, what)
		repl := g.replacement(c.Argument(1), s, what)
		if rs, ok := repl.(goja.String); ok {
			n := int64(1)
			if all {
				// At most one match a character; counted only when that
				// bound is too loose.
				n = int64(s.Length()) + 1
				if !g.replaceFits(s, rs, n, int64(s.Length())) {
					n = count(c.This, s)
				}
			}
			g.replaceSize(s, rs, n, int64(s.Length()), what)
		}
		return replace(goja.FunctionCall{This: c.This, Arguments: []goja.Value{s, repl}})
	})
	split := native(rp.GetSymbol(goja.SymSplit))
	g.setSymbol(rp, goja.SymSplit, func(c goja.FunctionCall) goja.Value {
		s := g.str(c.Argument(0))
		n := int64(s.Length()) + 1
		if lim := c.Argument(1); !goja.IsUndefined(lim) {
			n = min(n, lim.ToInteger()&0xffffffff)
		}
		if n > g.maxLen {
			g.tooLong("RegExp.prototype[Symbol.split]", n)
		}
		return split(goja.FunctionCall{This: c.This, Arguments: []goja.Value{s, c.Argument(1)}})
	})
	for _, sym := range []*goja.Symbol{goja.SymMatch, goja.SymMatchAll} {
		match, what := native(rp.GetSymbol(sym)), "RegExp.prototype["+sym.String()+"]"
		g.setSymbol(rp, sym, func(c goja.FunctionCall) goja.Value {
			s := g.str(c.Argument(0))
			global(c.This, s, what)
			return match(goja.FunctionCall{This: c.This, Arguments: []goja.Value{s}})
		})
	}
}

// jsonCounter returns a replacer function for JSON.stringify that counts
// the text as stringify makes it, each value once it is what stringify
// writes (after toJSON, a getter, the script's own replacer r), and
// throws as soon as the text would be over the limit.
func (g *guard) jsonCounter(r, space goja.Value) goja.Value {
	user, _ := goja.AssertFunction(r)
	indent := jsonIndent(space)
	total := int64(0)
	var depth map[*goja.Object]int64 // a holder's depth, with an indent
	if indent > 0 {
		depth = map[*goja.Object]int64{}
	}
	return g.vm.ToValue(func(c goja.FunctionCall) goja.Value {
		g.checkStopped()
		v := c.Argument(1)
		if user != nil {
			var err error
			if v, err = user(c.This, c.Arguments...); err != nil {
				panic(err)
			}
		}
		total += int64(g.str(c.Argument(0)).Length()) + 4
		if depth != nil {
			d := int64(0)
			if h, ok := c.This.(*goja.Object); ok {
				d = depth[h] + 1
			}
			total += indent*d + 1
			if o, ok := v.(*goja.Object); ok {
				depth[o] = d
			}
		}
		total += g.jsonLen(v, g.maxStr-total)
		if total > g.maxStr {
			g.stringTooLong("JSON.stringify", total)
		}
		return v
	})
}

// jsonIndent is JSON.stringify's indent for space.
func jsonIndent(space goja.Value) int64 {
	if s, ok := space.(goja.String); ok {
		return int64(min(s.Length(), 10))
	}
	if space != nil && goja.IsNumber(space) {
		return min(max(space.ToInteger(), 0), 10)
	}
	return 0
}

// jsonLen is how long stringify writes v, an object's own brackets only;
// a string's escapes are counted when they may matter (room is what is
// left under the limit).
func (g *guard) jsonLen(v goja.Value, room int64) int64 {
	switch v := v.(type) {
	case goja.String:
		n := int64(v.Length()) + 2
		if 6*n > room {
			// \uXXXX is six characters for one.
			for _, r := range v.String() {
				if r < 0x20 || r == '"' || r == '\\' {
					n += 5
				}
			}
		}
		return n
	case *goja.Object:
		switch v.ClassName() {
		case "String", "Number", "Boolean":
			return int64(len(fmt.Sprint(v.Export()))) + 2
		}
		return 2
	}
	if v == nil || goja.IsUndefined(v) {
		return 0
	}
	return int64(len(v.String()))
}

// jsonSize refuses a JSON.stringify with a list of properties whose text
// would be over the limit, walking v as stringify does (own enumerable
// properties, toJSON) before it, and stopping as soon as the text is
// over: at most MaxStringLength steps. A value whose getters or toJSON
// answer differently the second time is not bounded by this walk (see
// the package documentation).
func (g *guard) jsonSize(v, space goja.Value) {
	indent := jsonIndent(space)
	total := int64(0)
	var onPath []*goja.Object
	var walk func(v goja.Value, depth int64)
	walk = func(v goja.Value, depth int64) {
		total += 1 + indent*depth
		if total > g.maxStr {
			g.stringTooLong("JSON.stringify", total)
		}
		g.checkStopped()
		o, ok := v.(*goja.Object)
		if !ok {
			if s, ok := v.(goja.String); ok {
				total += int64(s.Length()) + 1
			} else if v != nil && !goja.IsUndefined(v) {
				total += int64(len(v.String()))
			}
			return
		}
		if f, ok := goja.AssertFunction(o.Get("toJSON")); ok {
			r, err := f(o, g.vm.ToValue(""))
			if err != nil {
				panic(err)
			}
			if r2, ok := r.(*goja.Object); !ok || r2 != o {
				walk(r, depth)
				return
			}
		}
		for _, p := range onPath {
			if p == o {
				return // a cycle: stringify throws
			}
		}
		onPath = append(onPath, o)
		defer func() { onPath = onPath[:len(onPath)-1] }()
		switch o.ClassName() {
		case "Function":
			return
		case "String", "Number", "Boolean", "BigInt":
			total += int64(g.str(o).Length()) + 2
			return
		case "Array":
			n := g.length(o, "JSON.stringify")
			for i := range n {
				walk(o.Get(strconv.FormatInt(i, 10)), depth+1)
				total++
			}
			return
		}
		for _, k := range o.Keys() {
			total += int64(len(k)) + 3
			walk(o.Get(k), depth+1)
		}
	}
	walk(v, 0)
}

// regexpMatchTimeout bounds one match of a regular expression that goja
// runs on its backtracking engine (regexp2: lookarounds, backreferences),
// where a catastrophic pattern takes exponential time in one Go call. A
// match past it is given up as no match, so it is half a second longer
// than the default Timeout and Grace: by then the execution's interrupt is
// pending, the next instruction stops it, and the wrong answer never
// reaches the script (with a longer Limits.Timeout it may).
// regexp2 reads it when a pattern is compiled, and it is the process's:
// goja is its only user here.
const regexpMatchTimeout = 6 * time.Second

func init() {
	regexp2.DefaultMatchTimeout = regexpMatchTimeout
}
