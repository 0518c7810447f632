package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

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
// functions, the body's own functions, and the intrinsics only instances
// reach) is frozen, every property of the global object made read-only,
// and the global object made to take no new properties: an assignment
// that would add one (to an undeclared name, or through globalThis)
// throws there. A call that throws in a shared runtime is run again once
// in a fresh runtime of its own, whose answer is the call's, so such a
// call answers as in any runtime. A runtime is dropped after a call that
// failed in it. Any other body gets a fresh runtime for every call (Call).
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
  seen.add(g); // its properties are made read-only, and it takes no new ones
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
  // A call that would add a property to the global object (n = 1 for an
  // undeclared n, globalThis.n = 1) throws instead, and is run again in a
  // fresh runtime: the assignment finds no property of that name, so it
  // reaches this proxy in the global object's prototype chain.
  var refuse = Object.freeze({
    set: function () { throw new TypeError("a shared runtime takes no new global"); },
    defineProperty: function () { throw new TypeError("a shared runtime takes no new global"); }
  });
  Object.setPrototypeOf(g, new Proxy(Object.getPrototypeOf(g), refuse));
  Object.preventExtensions(g);
})(globalThis)`, false)

// Call calls the function with args, as the package-level Call does.
func (f *Function) Call(ctx context.Context, args []any) (any, error) {
	if !f.p.declarations {
		return Call(ctx, f.p, args, f.limits)
	}
	w, err := f.get()
	if err != nil {
		return nil, err
	}
	x := &execution{vm: w.vm, guard: w.guard, env: &Env{Kind: UDF, Response: &Message{}}, limits: f.limits, start: time.Now(),
		parse: w.parse, strfy: w.strfy, errCtor: w.errCtor}
	var out any
	stop := x.watch(ctx)
	err = x.try(func() error {
		vals := make([]goja.Value, len(args))
		for i, a := range args {
			v, err := x.toValue(a)
			if err != nil {
				return err
			}
			vals[i] = v
		}
		ret, err := w.fn(goja.Undefined(), vals...)
		if err != nil {
			return err
		}
		out, err = x.result(ret)
		return err
	})
	if err != nil && err != errNotJSON && err != errArgs {
		// Describing what the call threw may run its code: while the
		// watchdogs still run.
		err = x.failure(err)
	}
	stop()
	x.mu.Lock()
	aborted := x.aborted
	x.mu.Unlock()
	switch {
	case aborted != nil: // the runtime is dropped
		return nil, x.abortFailure(*aborted)
	case err == errArgs:
		f.put(w)
		return nil, err
	case err == errNotJSON:
		return nil, &Error{Reason: Thrown, Message: err.Error()}
	case err != nil:
		// The runtime is dropped, and the call is made again in a fresh
		// one: what failed may be what a shared runtime refuses.
		return Call(ctx, f.p, args, f.limits)
	}
	f.put(w)
	return out, nil
}

// errArgs is a call's arguments that are not JSON values.
var errArgs = errors.New("the arguments are not JSON values")

// toValue makes the script value of a JSON value as encoding/json decodes
// it: the argument's own copy, never a view of the Go value.
func (x *execution) toValue(a any) (goja.Value, error) {
	switch a := a.(type) {
	case nil:
		return goja.Null(), nil
	case bool, string:
		return x.vm.ToValue(a), nil
	case float64:
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return nil, errArgs
		}
		return x.vm.ToValue(a), nil
	case []any:
		items := make([]any, len(a))
		for i, e := range a {
			v, err := x.toValue(e)
			if err != nil {
				return nil, err
			}
			items[i] = v
		}
		return x.vm.NewArray(items...), nil
	case map[string]any:
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		sort.Strings(keys) // as encoding/json writes them
		o := x.vm.NewObject()
		for _, k := range keys {
			v, err := x.toValue(a[k])
			if err != nil {
				return nil, err
			}
			if err := o.Set(k, v); err != nil {
				return nil, err
			}
		}
		return o, nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, errArgs
	}
	return x.fromJSON(b)
}

// result returns a call's result as encoding/json decodes JSON into an
// any, or Undefined: a number, string, boolean or null directly, anything
// else through JSON.stringify.
func (x *execution) result(v goja.Value) (any, error) {
	switch {
	case v == nil || goja.IsUndefined(v):
		return Undefined, nil
	case goja.IsNull(v):
		return nil, nil
	}
	if _, sym := v.(*goja.Symbol); sym {
		return nil, errNotJSON
	}
	switch e := v.Export().(type) {
	case string:
		if _, obj := v.(*goja.Object); !obj && utf8.ValidString(e) {
			return e, nil
		}
	case bool:
		if _, obj := v.(*goja.Object); !obj {
			return e, nil
		}
	case int64:
		if _, obj := v.(*goja.Object); !obj {
			return float64(e), nil
		}
	case float64:
		if _, obj := v.(*goja.Object); !obj {
			if math.IsNaN(e) || math.IsInf(e, 0) {
				return nil, nil // as JSON.stringify writes them: null
			}
			return e + 0, nil // -0 as JSON.stringify writes it: 0
		}
	}
	if err := x.returned(v); err != nil {
		return nil, err
	}
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
	return &warm{vm: vm, guard: g, fn: fn, parse: x.parse, strfy: x.strfy, errCtor: x.errCtor, proto: vm.GlobalObject().Prototype()}, nil
}

// put keeps w for another call, unless the call changed the global
// object's prototype (which the freezer forbids: a check to be sure).
func (f *Function) put(w *warm) {
	w.vm.ClearInterrupt()
	w.guard.stopped.Store(false)
	if w.vm.GlobalObject().Prototype() != w.proto {
		return
	}
	f.mu.Lock()
	if len(f.idle) < maxIdle {
		f.idle = append(f.idle, w)
	}
	f.mu.Unlock()
}
