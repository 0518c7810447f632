package script

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// Limits bound one execution. The zero value of a field means its
// default.
type Limits struct {
	// Timeout is the time an execution may take: after it, its operations
	// are no longer accepted (they return false). 5 s by default, the
	// service's.
	Timeout time.Duration
	// Grace is how long after Timeout an execution that ignores that is
	// interrupted: 500 ms by default.
	Grace time.Duration
	// MaxCallStackSize bounds how deep calls nest: 1000 by default.
	MaxCallStackSize int
	// MaxHeapGrowth is how much the Go heap may grow during an execution
	// before it is interrupted: 128 MiB by default (see the package
	// documentation).
	MaxHeapGrowth uint64
	// MaxBodyBytes bounds a body the script sets or a document it writes:
	// 4 MiB by default.
	MaxBodyBytes int
	// MaxLogBytes bounds the log: 16 KiB by default, the rest dropped.
	MaxLogBytes int
	// MaxArrayLength bounds the arrays and array-likes a built-in walks in
	// one call (Array.prototype's methods, Array.from,
	// Function.prototype.apply) and the strings a split makes:
	// DefaultMaxArrayLength by default (see the package documentation).
	MaxArrayLength int
	// MaxStringLength bounds the string a built-in builds in one call
	// (join, JSON.stringify, concat, repeat, padStart, padEnd, replace), in
	// UTF-16 code units: DefaultMaxStringLength by default.
	MaxStringLength int
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = 5 * time.Second
	}
	if l.Grace <= 0 {
		l.Grace = 500 * time.Millisecond
	}
	if l.MaxCallStackSize <= 0 {
		l.MaxCallStackSize = 1000
	}
	if l.MaxHeapGrowth == 0 {
		l.MaxHeapGrowth = 128 << 20
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = 4 << 20
	}
	if l.MaxLogBytes <= 0 {
		l.MaxLogBytes = 16 << 10
	}
	if l.MaxArrayLength <= 0 {
		l.MaxArrayLength = DefaultMaxArrayLength
	}
	if l.MaxStringLength <= 0 {
		l.MaxStringLength = DefaultMaxStringLength
	}
	return l
}

// The defaults of Limits.MaxArrayLength and MaxStringLength: an array of
// 1 Mi elements is 16 MiB of values, a string of 16 Mi code units 16 to
// 32 MiB, each well under MaxHeapGrowth's default, so that one call
// stays near the memory budget the heap watchdog enforces between calls.
const (
	DefaultMaxArrayLength  = 1 << 20
	DefaultMaxStringLength = 16 << 20
)

// Kind is what a script is run as.
type Kind int

// The kinds of scripts.
const (
	Procedure Kind = iota
	PreTrigger
	PostTrigger
	// UDF is a user-defined function: its result is the response's body,
	// and it has no context (getContext is undefined) or console.
	UDF
)

// Message is a request or response body a script may read and change
// (getContext().getRequest() and getResponse()).
type Message struct {
	// Body is JSON, nil when there is none.
	Body []byte
	// OperationType is the request's operation, for triggers: Create,
	// Replace, Upsert or Delete.
	OperationType string
}

// Env is what one execution gets.
type Env struct {
	Kind Kind
	// Tx is the collection (getCollection()); nil gives none.
	Tx *Tx
	// Args is the JSON array of the procedure's arguments ("" or nil: none).
	Args []byte
	// Request and Response are getRequest() and getResponse(); their
	// bodies are what the script left there when Run returns.
	Request, Response *Message
	// Logging keeps what console.log writes (Result.Log).
	Logging bool
	Limits  Limits
}

// Result is what an execution leaves besides its bodies.
type Result struct {
	Log      string
	Duration time.Duration
}

// Error is an execution that failed: the script threw (Thrown), ran out
// of one of its budgets, or did what it may not.
type Error struct {
	Reason  Reason
	Message string // the script's error, or which budget
	Status  int    // for Forbidden: the status to answer
	Err     error  // for Failed: the Store's failure
	// Number is the number property of a thrown object (an operation's
	// error carries its status there), 0 when it has none.
	Number int
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the Store's failure, for Failed.
func (e *Error) Unwrap() error { return e.Err }

// Reason says why an execution failed.
type Reason int

// The reasons an execution fails.
const (
	Thrown        Reason = iota // the script threw, or its body is not a function
	Timeout                     // Limits.Timeout and Grace passed
	StackOverflow               // Limits.MaxCallStackSize
	OutOfMemory                 // Limits.MaxHeapGrowth
	Cancelled                   // the context was done
	Forbidden                   // a write under a Read token
	Failed                      // the Store failed (not an *OpError): Error.Err
)

// abortErr is what a runtime is interrupted with.
type abortErr struct{ reason Reason }

func (a abortErr) Error() string { return "interrupted" }

// memoryTick is how often the memory watchdog samples the heap.
const memoryTick = 2 * time.Millisecond

// Run executes p in a fresh runtime with env. A script that throws, or
// runs past a budget, returns an *Error; its writes stay in env.Tx,
// which the caller then drops.
func Run(ctx context.Context, p *Program, env *Env) (Result, error) {
	l := env.Limits.withDefaults()
	start := time.Now()
	vm, g := newRuntime(l)
	x := &execution{vm: vm, guard: g, env: env, limits: l, start: start}
	stop := x.watch(ctx)
	defer stop()
	err := x.run(p)
	res := Result{Log: x.log.String(), Duration: time.Since(start)}
	return res, err
}

// execution is one run of a script.
type execution struct {
	vm      *goja.Runtime
	guard   *guard // vm's: told when the execution is interrupted
	env     *Env
	limits  Limits
	start   time.Time
	log     strings.Builder
	logged  bool // console.log has written an entry
	queue   []func() error
	parse   goja.Callable
	strfy   goja.Callable
	errCtor goja.Value
	fatal   error // the Store's failure, for Failed
	mu      sync.Mutex
	aborted *Reason // what the runtime was interrupted for, under mu
	done    bool    // the execution ended: no interrupt any more, under mu
}

// watch starts the execution's time, context and memory watchdogs, and
// returns what stops them.
func (x *execution) watch(ctx context.Context) func() {
	timer := time.AfterFunc(x.limits.Timeout+x.limits.Grace, func() { x.abort(Timeout) })
	stopCtx := context.AfterFunc(ctx, func() { x.abort(Cancelled) })
	base := heapBytes()
	var mem *time.Timer
	var mu sync.Mutex
	done := false
	check := func() {
		if heapBytes() > base+x.limits.MaxHeapGrowth && collectAndCheck(base+x.limits.MaxHeapGrowth) {
			x.abort(OutOfMemory)
			return
		}
		mu.Lock()
		if !done {
			mem.Reset(memoryTick)
		}
		mu.Unlock()
	}
	mu.Lock()
	mem = time.AfterFunc(memoryTick, check)
	mu.Unlock()
	return func() {
		timer.Stop()
		stopCtx()
		mu.Lock()
		done = true
		mem.Stop()
		mu.Unlock()
		x.mu.Lock()
		x.done = true
		x.mu.Unlock()
	}
}

func (x *execution) abort(r Reason) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return
	}
	if x.aborted == nil {
		x.aborted = &r
	}
	x.vm.Interrupt(abortErr{r})
	x.guard.stopped.Store(true)
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
var heapMu sync.Mutex

// heapBytes returns the bytes of the Go heap's objects, live or not yet
// swept.
func heapBytes() uint64 {
	heapMu.Lock()
	defer heapMu.Unlock()
	metrics.Read(heapSample)
	if heapSample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return heapSample[0].Value.Uint64()
}

var gcMu sync.Mutex

// collectAndCheck collects garbage and reports whether the heap is still
// over limit: garbage of other goroutines is no reason to abort.
func collectAndCheck(limit uint64) bool {
	gcMu.Lock()
	defer gcMu.Unlock()
	if heapBytes() <= limit {
		return false
	}
	runtime.GC()
	return heapBytes() > limit
}

// removedGlobals are the built-ins a script does not get.
var removedGlobals = []string{
	"ArrayBuffer", "SharedArrayBuffer", "DataView", "Atomics", "WeakRef", "FinalizationRegistry",
	"Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array",
	"Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array",
}

// newRuntime returns a fresh runtime: the built-ins, bounded, and its
// guard.
func newRuntime(l Limits) (*goja.Runtime, *guard) {
	vm := goja.New()
	vm.SetMaxCallStackSize(l.MaxCallStackSize)
	g := vm.GlobalObject()
	for _, name := range removedGlobals {
		// goja makes a built-in when it is first touched, so this makes
		// each of them first: about half of what a runtime costs (see
		// BenchmarkRunNoop).
		_ = g.Delete(name)
	}
	return vm, installGuard(vm, l)
}

// run compiles nothing: it evaluates p, calls the function it yields with
// the arguments, then the callbacks the calls queued, in order.
func (x *execution) run(p *Program) error {
	vm := x.vm
	x.bindJSON()
	if x.env.Kind != UDF {
		x.bindAPI()
	}
	v, err := vm.RunProgram(p.prog)
	if err != nil {
		return x.failure(err)
	}
	fn, ok := goja.AssertFunction(v)
	if !ok {
		return &Error{Reason: Thrown, Message: "the script's body is not a function"}
	}
	var args []goja.Value
	if len(x.env.Args) > 0 {
		arr, err := x.fromJSON(x.env.Args)
		if err != nil {
			return x.failure(err)
		}
		o, ok := arr.(*goja.Object)
		if !ok || o.ClassName() != "Array" {
			return &Error{Reason: Thrown, Message: "the procedure's parameters must be a JSON array"}
		}
		n := int(o.Get("length").ToInteger())
		for i := range n {
			args = append(args, o.Get(fmt.Sprint(i)))
		}
	}
	ret, err := fn(goja.Undefined(), args...)
	if err != nil {
		return x.failure(err)
	}
	if x.env.Kind == UDF {
		if err := x.returned(ret); err != nil {
			return &Error{Reason: Thrown, Message: err.Error()}
		}
	}
	for len(x.queue) > 0 {
		f := x.queue[0]
		x.queue = x.queue[1:]
		if err := x.try(f); err != nil {
			return x.failure(err)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.aborted != nil {
		// Interrupted as the script returned: it ends as interrupted.
		return x.abortFailure(*x.aborted)
	}
	return nil
}

// try runs f, which calls into the runtime, returning its error or what
// it panics with.
func (x *execution) try(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			switch v := r.(type) {
			case error:
				err = v
			case goja.Value:
				err = x.thrown(v)
			default:
				panic(r)
			}
		}
	}()
	return f()
}

// failure turns what the runtime returned into an *Error.
func (x *execution) failure(err error) error {
	x.mu.Lock()
	aborted := x.aborted
	x.mu.Unlock()
	if aborted != nil {
		// What the script threw after (a guarded built-in refusing to go
		// on) is not why it stopped.
		return x.abortFailure(*aborted)
	}
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	var ex *goja.Exception
	switch {
	case errors.As(err, &ie):
		a, ok := ie.Value().(abortErr)
		if !ok {
			return &Error{Reason: Thrown, Message: err.Error()}
		}
		return x.abortFailure(a.reason)
	case errors.As(err, &so):
		return &Error{Reason: StackOverflow, Message: fmt.Sprintf("the script's calls nested past the limit of %d (Maximum call stack size exceeded)", x.limits.MaxCallStackSize)}
	case errors.As(err, &ex):
		return x.thrown(ex.Value())
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Reason: Thrown, Message: err.Error()}
}

// number returns the integer number property of a thrown object, or 0.
func number(v goja.Value) int {
	o, ok := v.(*goja.Object)
	if !ok {
		return 0
	}
	n := o.Get("number")
	if n == nil {
		return 0
	}
	if i, ok := n.Export().(int64); ok && i > 0 && i < 1<<31 {
		return int(i)
	}
	return 0
}

// abortFailure is the *Error of an execution interrupted for r.
func (x *execution) abortFailure(r Reason) error {
	switch r {
	case Timeout:
		return &Error{Reason: Timeout, Message: fmt.Sprintf("the script ran past its time limit of %v", x.limits.Timeout)}
	case OutOfMemory:
		return &Error{Reason: OutOfMemory, Message: fmt.Sprintf("the script allocated past its memory limit (the heap grew by more than %d MiB)", x.limits.MaxHeapGrowth>>20)}
	case Cancelled:
		return &Error{Reason: Cancelled, Message: "the request was cancelled"}
	case Forbidden:
		return &Error{Reason: Forbidden, Message: errReadOnlyWrite.Message, Status: errReadOnlyWrite.Status}
	case Failed:
		return &Error{Reason: Failed, Message: x.fatal.Error(), Err: x.fatal}
	}
	return &Error{Reason: r, Message: "the script was interrupted"}
}

// thrown is the *Error of a value the script threw. Describing it may
// run the script's code (a toString, a getter), which may throw or spin:
// the caller's watchdogs must still run, and what such code throws or is
// interrupted with is not described but reported.
func (x *execution) thrown(v goja.Value) (e *Error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if ie, ok := r.(*goja.InterruptedError); ok {
			if a, ok := ie.Value().(abortErr); ok {
				e = x.abortFailure(a.reason).(*Error)
				return
			}
		}
		switch r.(type) {
		case error, goja.Value:
			e = &Error{Reason: Thrown, Message: "the script threw a value that cannot be described (describing it threw)"}
		default:
			panic(r)
		}
	}()
	return &Error{Reason: Thrown, Message: x.describe(v), Number: number(v)}
}

// describe writes a thrown value as the service does: an Error's
// "Name: message", else its JSON or string.
func (x *execution) describe(v goja.Value) string {
	if o, ok := v.(*goja.Object); ok {
		if body := o.Get("body"); body != nil && !goja.IsUndefined(body) && o.Get("number") != nil && !goja.IsUndefined(o.Get("number")) {
			return fmt.Sprintf("Error: {\"number\":%s,\"body\":%s}", o.Get("number").String(), x.jsonString(body))
		}
		if o.Get("stack") != nil && !goja.IsUndefined(o.Get("stack")) {
			if name, msg := o.Get("name"), o.Get("message"); name != nil && msg != nil {
				return name.String() + ": " + msg.String()
			}
		}
	}
	if v == nil {
		return "undefined"
	}
	return v.String()
}

func (x *execution) jsonString(v goja.Value) string {
	b, err := x.toJSON(v)
	if err != nil {
		return v.String()
	}
	return string(b)
}
