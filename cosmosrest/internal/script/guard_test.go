package script

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestGuardStopsWhenInterrupted: spreading a huge array, a Go loop that
// calls the array iterator's next, stops at the time limit, as a
// procedure and as a UDF (the interrupt reaches the guard from the
// timer's goroutine: run it under -race).
func TestGuardStopsWhenInterrupted(t *testing.T) {
	l := Limits{Timeout: 50 * time.Millisecond, Grace: 50 * time.Millisecond}
	const body = `function f() { var a = []; a.length = 2 ** 32 - 1; return [...a].length; }`
	_, _, _, err := run(t, newMemStore(), body, ``, l, TxOptions{})
	var e *Error
	if !errors.As(err, &e) || e.Reason != Timeout {
		t.Errorf("a procedure: %v, want a Timeout", err)
	}
	p, err := Compile(body)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFunction(p, l)
	for range 2 {
		if _, err := f.Call(context.Background(), nil); !errors.As(err, &e) || e.Reason != Timeout {
			t.Errorf("a UDF: %v, want a Timeout", err)
		}
	}
	p, err = Compile(`function f() { return [...[1, 2]].length; }`)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := NewFunction(p, l).Call(context.Background(), nil); err != nil || v != float64(2) {
		t.Errorf("after: %v, %v", v, err)
	}
}

// TestGuardedBuiltinsStillWork: the guarded built-ins give what the
// originals give, within the limits.
func TestGuardedBuiltinsStillWork(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{`[1, 2, 3].join("-")`, `"1-2-3"`},
		{`[1, null, undefined, [2, 3]].join()`, `"1,,,2,3"`},
		{`String([1, [2, 3]])`, `"1,2,3"`},
		{`[1.5, {toLocaleString: function () { return "z"; }}].toLocaleString()`, `"1.5,z"`},
		{`Array.prototype.join.call({length: 2, 0: "a", 1: "b"}, "+")`, `"a+b"`},
		{`Array.prototype.indexOf.call("abc", "c")`, `2`},
		{`(function () { return Array.prototype.slice.call(arguments, 1); })(1, 2, 3)`, `[2,3]`},
		{`[3, 1, 2].sort()`, `[1,2,3]`},
		{`(function () { var a = [1]; a.push(a, [a]); return a.join("-") + String(a) + a.toLocaleString(); })()`, `"1--1,,1,,"`},
		{`(function () { var a = []; for (var i = 0; i < 1e5; i++) a = [a]; try { return String(a); } catch (e) { return e.name; } })()`, `"RangeError"`},
		{`(function () { var a = []; for (var i = 0; i < 1e5; i++) a = [a]; try { return a.flat(Infinity); } catch (e) { return e.name; } })()`, `"RangeError"`},
		{`[1, [2, [3, [4]]]].flat()`, `[1,2,[3,[4]]]`},
		{`[1, [2, [3, [4]]]].flat(Infinity)`, `[1,2,3,4]`},
		{`[1, [2, [3]]].flat({valueOf: function () { return 2; }})`, `[1,2,3]`},
		{`[1, 2].concat([3], 4, [[5]])`, `[1,2,3,4,[5]]`},
		{`Array.from({length: 3}, function (v, i) { return i; })`, `[0,1,2]`},
		{`Array.from("ab")`, `["a","b"]`},
		{`Math.max.apply(null, [1, 5, 2])`, `5`},
		{`Reflect.apply(Math.min, null, [4, 2])`, `2`},
		{`[..."abc", ...[1, 2]]`, `["a","b","c",1,2]`},
		{`new Array(1e9).length`, `1000000000`},
		{`"ab".repeat(3)`, `"ababab"`},
		{`"1".padStart(3, "0") + "1".padEnd(3, "ab")`, `"0011ab"`},
		{`"a".concat(1, null, {toString: function () { return "o"; }})`, `"a1nullo"`},
		{`"a-b-c".replaceAll("-", "[$&]")`, `"a[-]b[-]c"`},
		{`"a-b".replace("-", "$'$` + "`" + `")`, `"abab"`},
		{`"abcb".replace(/b/g, "[$&]")`, `"a[b]c[b]"`},
		{`"abc".replace(/(b)/, "$1$1")`, `"abbc"`},
		{`"abab".replace(/b/g, function (m, i) { return i; })`, `"a1a3"`},
		{`"a,b".split(",")`, `["a","b"]`},
		{`"abc".split("")`, `["a","b","c"]`},
		{`"aXbXc".split(/X/, 2)`, `["a","b"]`},
		{`"aXbX".match(/X/g)`, `["X","X"]`},
		{`JSON.stringify({a: [1, "x", null], d: new Date(0), n: new Number(2), f: function () {}})`, `"{\"a\":[1,\"x\",null],\"d\":\"1970-01-01T00:00:00.000Z\",\"n\":2}"`},
		{`JSON.stringify([1], null, 1)`, `"[\n 1\n]"`},
		{`JSON.stringify("a\"b") + JSON.stringify(1.5) + JSON.stringify(undefined)`, `"\"a\\\"b\"1.5undefined"`},
		{`JSON.stringify({a: 1, b: 2}, ["a"])`, `"{\"a\":1}"`},
		{`(function () { var o = {}; o.o = o; try { JSON.stringify(o); } catch (e) { return e.name; } })()`, `"TypeError"`},
		{`typeof [].indexOf`, `"function"`},
	} {
		out, _ := mustRun(t, newMemStore(), `function f() { getContext().getResponse().setBody(`+c.expr+`); }`, ``)
		if out != c.want {
			t.Errorf("%s = %s, want %s", c.expr, out, c.want)
		}
	}
}

// TestGuardLimitsAreLimits: the limits are Limits' and the error names
// them.
func TestGuardLimitsAreLimits(t *testing.T) {
	l := Limits{MaxArrayLength: 10, MaxStringLength: 100}
	for _, c := range []struct{ body, want string }{
		{`Array(11).indexOf(1)`, "over the limit of 10 elements"},
		{`"x".repeat(101)`, "over the limit of 100 characters"},
		{`Array(10).fill("xxxxxxxxxxx").join("")`, "over the limit of 100 characters"},
	} {
		_, _, _, err := run(t, newMemStore(), `function f() { `+c.body+`; }`, ``, l, TxOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "RangeError") {
			t.Errorf("%s: %v, want a RangeError naming %q", c.body, err, c.want)
		}
	}
	out, _, _, err := run(t, newMemStore(), `function f() { getContext().getResponse().setBody([Array(10).indexOf(1), "x".repeat(100).length]); }`, ``, l, TxOptions{})
	if err != nil || out != `[-1,100]` {
		t.Errorf("at the limits: %s, %v", out, err)
	}
	var v []any
	_ = json.Unmarshal([]byte(out), &v)
}
