package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// Undefined is what a call returns for a function whose result is
// undefined.
var Undefined = undefined{}

type undefined struct{}

// Call calls the user-defined function p once with args (JSON values as
// encoding/json decodes them into an any) in a fresh runtime of its own,
// within limits, and returns its result decoded the same way, or
// Undefined. A UDF is pure: it gets no collection, request, response or
// console. A call that throws or passes a budget returns an *Error.
func Call(ctx context.Context, p *Program, args []any, l Limits) (any, error) {
	in, err := marshalArgs(args)
	if err != nil {
		return nil, err
	}
	resp := &Message{}
	if _, err := Run(ctx, p, &Env{Kind: UDF, Args: in, Response: resp, Limits: l}); err != nil {
		return nil, err
	}
	return unmarshalResult(resp.Body)
}

func marshalArgs(args []any) ([]byte, error) {
	if args == nil {
		args = []any{}
	}
	in, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("the arguments are not JSON: %w", err)
	}
	return in, nil
}

func unmarshalResult(b []byte) (any, error) {
	if b == nil {
		return Undefined, nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// errNotJSON is a function's result that JSON cannot hold.
var errNotJSON = errors.New("the function's result is not a JSON value")

// returned keeps a function's result as the response body: JSON, nil for
// undefined.
func (x *execution) returned(v goja.Value) error {
	if v == nil || goja.IsUndefined(v) {
		return nil
	}
	b, err := x.toJSON(v)
	if err != nil {
		return errNotJSON
	}
	x.env.Response.Body = b
	return nil
}

// Function is a user-defined function ready for many calls, as a query
// makes one per row; it is safe for concurrent use.
//
// A fresh runtime for every call costs some 100 µs (see BenchmarkCall).
// So when the body is function declarations and nothing else, calls share
// runtimes, each prepared once so that no call can change what a later
// one sees: after the body is evaluated, every object reachable from the
// global object (the built-in constructors, their prototypes and
// functions, the body's own functions) is frozen, and every property of
// the global object made read-only. What a call may still change is the
// global object's set of properties (an assignment to an undeclared
// name) and its prototype: a call that did is not affected, but its
// runtime is dropped after it. A runtime is dropped too after a call that fails. Any other body
// gets a fresh runtime for every call (Call).
//
// One difference shows: an assignment to a property that the object
// inherits from a frozen prototype (o.toString = f, e.message = s on an
// Error made without a message) is ignored, as JavaScript's rule for
// read-only inherited properties says.
type Function struct {
	p      *Program
	limits Limits
	mu     sync.Mutex
	idle   []*warm // runtimes ready for a call
}

// warm is a runtime prepared for calls of a Function.
type warm struct {
	vm      *goja.Runtime
	guard   *guard
	fn      goja.Callable
	parse   goja.Callable
	strfy   goja.Callable
	errCtor goja.Value
	globals int          // the global object's own properties, after preparation
	proto   *goja.Object // the global object's prototype, after preparation
}

// maxIdle bounds the runtimes a Function keeps.
const maxIdle = 8

// NewFunction returns the user-defined function p, called within limits.
func NewFunction(p *Program, l Limits) *Function {
	return &Function{p: p, limits: l.withDefaults()}
}

// freezer freezes what is reachable from the global object and makes the
// global object's properties read-only.
var freezer = goja.MustCompile("freeze", `(function (g) {
  var seen = new Set();
  function freeze(o) {
    if ((typeof o !== "object" && typeof o !== "function") || o === null || seen.has(o)) return;
    seen.add(o);
    var keys = Reflect.ownKeys(o);
    for (var i = 0; i < keys.length; i++) {
      var d = Reflect.getOwnPropertyDescriptor(o, keys[i]);
      if (!d) continue;
      if ("value" in d) freeze(d.value); else { freeze(d.get); freeze(d.set); }
    }
    freeze(Object.getPrototypeOf(o));
    Object.freeze(o);
  }
  seen.add(g); // its properties are made read-only; it stays extensible
  var names = Reflect.ownKeys(g);
  for (var i = 0; i < names.length; i++) {
    var d = Reflect.getOwnPropertyDescriptor(g, names[i]);
    if ("value" in d) {
      freeze(d.value);
      if (d.configurable || d.writable) Object.defineProperty(g, names[i], {writable: false, configurable: false});
    } else {
      freeze(d.get); freeze(d.set);
      if (d.configurable) Object.defineProperty(g, names[i], {configurable: false});
    }
  }
  freeze(Object.getPrototypeOf(g));
  // The intrinsics no property of the global object reaches, only an
  // instance's prototype chain: the iterators' prototypes (and
  // %IteratorPrototype%), generator and async functions' constructors
  // and prototypes.
  var instances = [[][Symbol.iterator](), new Map()[Symbol.iterator](), new Set()[Symbol.iterator](),
    ""[Symbol.iterator](), /a/[Symbol.matchAll](""), function* () {}, (function* () {})(), async function () {}];
  for (var i = 0; i < instances.length; i++) freeze(instances[i]);
})(globalThis)`, false)

// Call calls the function with args, as the package-level Call does.
func (f *Function) Call(ctx context.Context, args []any) (any, error) {
	if !f.p.declarations {
		return Call(ctx, f.p, args, f.limits)
	}
	in, err := marshalArgs(args)
	if err != nil {
		return nil, err
	}
	w, err := f.get()
	if err != nil {
		return nil, err
	}
	x := &execution{vm: w.vm, guard: w.guard, env: &Env{Kind: UDF, Response: &Message{}}, limits: f.limits, start: time.Now(),
		parse: w.parse, strfy: w.strfy, errCtor: w.errCtor}
	stop := x.watch(ctx)
	err = x.try(func() error {
		argv, err := x.fromJSON(in)
		if err != nil {
			return err
		}
		o := argv.(*goja.Object)
		n := int(o.Get("length").ToInteger())
		vals := make([]goja.Value, n)
		for i := range n {
			vals[i] = o.Get(fmt.Sprint(i))
		}
		ret, err := w.fn(goja.Undefined(), vals...)
		if err != nil {
			return err
		}
		return x.returned(ret)
	})
	if err != nil && err != errNotJSON {
		// Describing what the call threw may run its code: while the
		// watchdogs still run.
		err = x.failure(err)
	}
	stop()
	x.mu.Lock()
	aborted := x.aborted
	x.mu.Unlock()
	if err != nil || aborted != nil {
		// A failed runtime is dropped.
		if aborted != nil {
			return nil, x.abortFailure(*aborted)
		}
		if err == errNotJSON {
			return nil, &Error{Reason: Thrown, Message: err.Error()}
		}
		return nil, err
	}
	f.put(w)
	return unmarshalResult(x.env.Response.Body)
}

// get returns an idle runtime, or prepares one.
func (f *Function) get() (*warm, error) {
	f.mu.Lock()
	if n := len(f.idle); n > 0 {
		w := f.idle[n-1]
		f.idle = f.idle[:n-1]
		f.mu.Unlock()
		return w, nil
	}
	f.mu.Unlock()
	vm, g := newRuntime(f.limits)
	x := &execution{vm: vm, guard: g, env: &Env{Kind: UDF}, limits: f.limits}
	x.bindJSON()
	v, err := vm.RunProgram(f.p.prog)
	if err != nil {
		return nil, x.failure(err)
	}
	fn, ok := goja.AssertFunction(v)
	if !ok {
		return nil, &Error{Reason: Thrown, Message: "the script's body is not a function"}
	}
	if _, err := vm.RunProgram(freezer); err != nil {
		return nil, x.failure(err)
	}
	return &warm{vm: vm, guard: g, fn: fn, parse: x.parse, strfy: x.strfy, errCtor: x.errCtor, globals: globalCount(vm), proto: vm.GlobalObject().Prototype()}, nil
}

// put keeps w for another call, unless the call added to its global
// object or changed its prototype (which it may: the global object stays
// extensible).
func (f *Function) put(w *warm) {
	w.vm.ClearInterrupt()
	w.guard.stopped.Store(false)
	if globalCount(w.vm) != w.globals || w.vm.GlobalObject().Prototype() != w.proto {
		return
	}
	f.mu.Lock()
	if len(f.idle) < maxIdle {
		f.idle = append(f.idle, w)
	}
	f.mu.Unlock()
}

func globalCount(vm *goja.Runtime) int {
	g := vm.GlobalObject()
	return len(g.GetOwnPropertyNames()) + len(g.Symbols())
}
