//go:build !race

// The bombs run without the race detector only: under it, making their
// 16 MiB string alone takes longer than the time limit the test gives.

package script

import (
	"context"
	"errors"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlclark/regexp2/v2"
)

// TestOneCallBombsAreRefused runs every built-in call that escaped the
// budgets (one Go loop that neither the interrupt nor the heap watchdog
// reaches), as a procedure and as a UDF: each must fail within the time
// budget, and the process's heap must stay within a few hundred MB. The
// time is the CPU time the process spends on the call, not the wall
// clock: on a loaded machine a call refused in time can take seconds of
// wall time (a regex refused after 1.44 s at load 16 failed the wall
// bound once), while a call that runs on past its budget burns CPU time
// as it goes, on whatever share of a core it gets, and passes the bound.
func TestOneCallBombsAreRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates some 100 MB")
	}
	const s = `var s = "x".repeat(1 << 24); var a = []; a.length = 2 ** 32 - 1;`
	bombs := []string{
		// Time: a loop over a length no element fills.
		`Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1)`,
		`Array.prototype.lastIndexOf.call({length: 2 ** 40}, 1)`,
		`Array.prototype.includes.call({length: 2 ** 53 - 1}, 1)`,
		`Array.prototype.forEach.call({length: 2 ** 53 - 1}, function () {})`,
		`Array.prototype.indexOf.call(Object.create({length: 2 ** 53 - 1}), 1)`,
		`Array.prototype.indexOf.call("abc", "d") + Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1)`,
		`var n = 0; Array.prototype.indexOf.call({get length() { return n++ ? 2 ** 53 - 1 : 1; }}, 1)`,
		`var n = 0; Array.prototype.indexOf.call({length: {valueOf: function () { return n++ ? 2 ** 53 - 1 : 1; }}}, 1)`,
		`var n = 0; Array.prototype.indexOf.call(new Proxy({}, {get: function () { return n++ ? 2 ** 53 - 1 : 1; }}), 1)`,
		`[...a]`, `a.indexOf(1)`, `a.lastIndexOf(1)`, `Math.max(...a)`, `a.slice()`, `a.shift()`, `a.reverse()`,
		`var o = [1]; for (var i = 0; i < 40; i++) o = [o, o]; o.flat(Infinity)`,
		`var o = []; for (var i = 0; i < 40; i++) o = [o, o]; o.flat(Infinity)`,
		`a.sort()`, `a.copyWithin(0, 1)`, `a.flat()`, `a.map(function (x) { return x; })`, `a.concat(a)`,
		`Array.from(a)`, `new Set(a)`, `a.splice(0, 1)`, `a.findLastIndex(function () { return false; })`, `a.find(function () { return false; })`,
		`var it = (function () { return arguments; })()[Symbol.iterator]; var o = {length: 2 ** 53 - 1}; o[Symbol.iterator] = it; [...o]`,
		// Memory: one call that allocates gigabytes.
		`Array(256).fill(s).join("")`, `JSON.stringify(Array(256).fill(s))`, `String(Array(256).fill(s))`,
		`Array(256).fill(s).toLocaleString()`, `[Array(9).fill(s), Array(9).fill(s)].join()`,
		`JSON.stringify({a: Array(256).fill(s)})`, `JSON.stringify(Array(256).fill(s), null, 2)`, `JSON.stringify(Array(256).fill(s), ["a"])`,
		`JSON.stringify({toJSON: function () { return Array(256).fill(s); }})`,
		`JSON.stringify("\u0001".repeat(1 << 22))`, `JSON.stringify(s + "x")`, `var o = []; for (var i = 0; i < 100; i++) o = [o, o]; JSON.stringify(o)`, `JSON.stringify([s], function (k, v) { return k === "0" ? Array(256).fill(s) : v; })`,
		`Array.from({length: 5e8})`, `a.length = 4e9; a.fill(0)`, `Array(4e9).fill(0)`,
		`Array.apply(null, {length: 3e8})`, `Reflect.apply(Math.max, null, {length: 3e8})`,
		`Reflect.construct(Array, {length: 3e8})`,
		`s.replaceAll("x", "0123456789012345678901234567890123456789012345678901234567890123456789")`,
		`s.replace(/x/g, "yy")`, `s.replace(/x/g, "$&$&")`, `s.slice(0, 10000).replaceAll("x", "$'")`, `s.replaceAll("x", "")`,
		`s.replace(/x/g, function () { return "yy"; })`, `/x/g[Symbol.replace](s, "yy")`,
		`s.concat(s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s)`, `s.concat.apply(s, Array(128).fill(s))`,
		`s.split("")`, `s.split("x")`, `s.split(/x/)`, `s.match(/x/g)`, `[...s]`, `[...s.matchAll(/x/g)]`, `Array.from(s)`,
		`s.repeat(2)`, `"x".repeat(1e9)`, `"x".padStart(1e9)`, `"x".padEnd(1e9, "y")`,
		`Function.prototype.call = function () { throw new Error("the original leaked"); }; "x".repeat(1e9)`,
	}
	// One backtracking match runs for minutes: its own timeout, shorter
	// here (no test runs in parallel with this one), and as in the
	// package's default, past the execution's Timeout and Grace, so that
	// the interrupt is pending when the match gives up.
	defer func(d time.Duration) { regexp2.DefaultMatchTimeout = d }(regexp2.DefaultMatchTimeout)
	regexp2.DefaultMatchTimeout = 600 * time.Millisecond
	bombs = append(bombs, `/(a+)+(?=b)/.test("a".repeat(40))`)
	var peak peakHeap
	stop := peak.watch()
	defer stop()
	l := Limits{Timeout: 300 * time.Millisecond, Grace: 100 * time.Millisecond}
	for _, bomb := range bombs {
		for _, udf := range []bool{false, true} {
			peak.reset()
			start, cpu0 := time.Now(), processCPU()
			var err error
			if udf {
				p, cerr := Compile(`function f() { ` + s + ` return (` + bomb + `).length; }`)
				if cerr != nil {
					// Statements, not an expression: as a procedure only.
					continue
				}
				_, err = NewFunction(p, l).Call(context.Background(), nil)
			} else {
				_, _, _, err = run(t, newMemStore(), `function f() { `+s+bomb+`; }`, ``, l, TxOptions{})
			}
			took, cpu := time.Since(start), processCPU()-cpu0
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("%s (udf %v): %v, want it refused", bomb, udf, err)
			} else if e.Reason == Thrown && !strings.Contains(e.Message, "RangeError") && !strings.Contains(e.Message, "TypeError") {
				t.Errorf("%s (udf %v): %v, want a RangeError or TypeError", bomb, udf, err)
			}
			if cpu > l.Timeout+l.Grace+time.Second {
				t.Errorf("%s (udf %v): refused after %v of CPU time (%v of wall time)", bomb, udf, cpu, took)
			}
			if p := peak.max(); p > 1<<30 {
				t.Errorf("%s (udf %v): the heap reached %d MiB", bomb, udf, p>>20)
			}
			t.Logf("%s (udf %v): %v after %v (%v of CPU), heap at most %d MiB", bomb, udf, err, took, cpu, peak.max()>>20)
		}
	}
}

// peakHeap samples the heap's objects every millisecond.
type peakHeap struct {
	mu   sync.Mutex
	peak uint64
}

func (p *peakHeap) watch() func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(s)
			p.mu.Lock()
			p.peak = max(p.peak, s[0].Value.Uint64())
			p.mu.Unlock()
		}
	})
	return func() { close(done); wg.Wait() }
}

func (p *peakHeap) reset() {
	p.mu.Lock()
	p.peak = 0
	p.mu.Unlock()
}

func (p *peakHeap) max() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}
