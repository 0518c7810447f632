// Package script runs Cosmos DB server-side JavaScript (stored procedures,
// triggers and user-defined functions) on goja, a JavaScript engine written
// in Go.
//
// A script's body is compiled once (Compile) and the compiled program kept
// by its id and version (Cache); every execution runs it in a runtime of
// its own, made for that execution and dropped after it, so nothing one
// execution does (a changed prototype, a global) is seen by another.
//
// # The sandbox
//
// A runtime holds ECMAScript's built-in objects and the server-side API,
// nothing else: no require or modules, no timers, no file system, network
// or process, no Go values (the API hands the script JSON values it parses
// itself). The constructors of binary data (ArrayBuffer, typed arrays,
// DataView, SharedArrayBuffer, Atomics) and WeakRef and FinalizationRegistry
// are removed: the service's engine has no use for them, and ArrayBuffer
// allocates any size at once.
//
// # Budgets
//
// An execution is stopped, and what it wrote dropped, when it passes one of
// its Limits:
//   - time: operations are no longer accepted (they return false) after
//     Limits.Timeout, and the runtime is interrupted Limits.Grace later,
//     wherever the script is (a loop, a callback);
//   - stack: calls nest at most Limits.MaxCallStackSize deep (goja's own
//     limit, a RangeError the script cannot catch);
//   - memory: goja has no allocation limit, so a watchdog samples the Go
//     heap (runtime/metrics, which does not stop the world) every
//     memoryTick while the execution runs; when the heap has grown by more
//     than Limits.MaxHeapGrowth since the execution began, it collects
//     garbage once and, if the heap is still over, interrupts every
//     execution then running (the heap is the process's: it cannot tell
//     whose the memory is). Built-ins that allocate much in one call
//     (String.prototype.repeat, padStart, padEnd) are refused past
//     MaxStringLength; what a single other built-in call allocates
//     before the next sample is not bounded, and the interrupt does not
//     stop a built-in's own loop: goja checks it between instructions
//     only (a join or JSON.stringify of an array holding one huge string
//     many times, Array.from({length: 5e8}), new Array(1e9).fill(0),
//     Array.prototype.indexOf.call({length: 2**53 - 1}), the spread of an
//     array whose length was set to 2**32 - 1: each is one call);
//   - output: the response body, each document and the log are bounded
//     (Limits.MaxBodyBytes, MaxLogBytes).
//
// # Writes
//
// A stored procedure and the triggers of a write run in a Tx: its writes
// are kept in an overlay that the execution's reads see, and the caller
// commits them all together at the end, through the Store (the REST front
// commits them as one transactional batch, the one write path), or drops
// them. The Store reads the partition as it is (every read reads it
// again, so an item that expires during the execution is gone from the
// next read); the overlay adds what the execution wrote. Each written
// item's Op is IfMatch the version the execution first read, so that a
// concurrent write in between fails the commit rather than being lost.
//
// # User-defined functions
//
// A UDF is called once per row of a query: Call runs one call in a fresh
// runtime, Function many. When the body is function declarations only,
// Function's calls share runtimes prepared so that no call can change what
// a later one sees (everything reachable from the global object, or from
// the prototype chains of iterators and generator and async functions,
// frozen; the global object's properties read-only; a runtime whose call
// added a global or changed the global object's prototype dropped);
// otherwise each call gets a fresh runtime.
package script
