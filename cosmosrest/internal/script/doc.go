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
//     whose the memory is);
//   - one call: goja checks the interrupt between instructions only, and
//     a built-in runs as one Go loop, so one call of it could spin past
//     the time limit, or allocate gigabytes before the next sample. The
//     runtime's guard (guard.go) replaces each such built-in by a Go
//     function that checks the call's inputs and throws a RangeError
//     naming the limit before calling the original, which only the Go
//     closure holds (no script value reaches it: replacing
//     Function.prototype.call or keeping a reference gains nothing).
//     Every Array.prototype method that walks its array or array-like
//     (all but at, pop, push, the iterators, and find, findIndex,
//     findLast and findLastIndex, whose callback runs at every index
//     where the interrupt reaches it), Array.from,
//     Function.prototype.apply, Reflect.apply and Reflect.construct
//     refuse a length over Limits.MaxArrayLength (1 Mi by default);
//     Array.prototype.flat refuses to visit more elements at all depths;
//     join, Array.prototype.toString and toLocaleString, JSON.stringify
//     (counted as it writes, after toJSON, getters and a replacer
//     function), String.prototype.concat, repeat, padStart, padEnd,
//     replace and replaceAll (with a string or a function; a string's
//     "$" patterns are bounded from above) refuse a result over
//     Limits.MaxStringLength (16 Mi code units); a split, and a global
//     match, matchAll or replace of a RegExp, refuse what could make
//     more than MaxArrayLength strings or matches. The guard converts a
//     value once and passes the original the result, so that a valueOf,
//     toString or getter cannot answer the check and the original
//     differently; where it cannot (an array-like whose length is a
//     getter or an object, or a Proxy), Array.prototype's methods throw a
//     TypeError instead. join keeps goja's handling of cycles (a cyclic
//     element joins as "") and, as flat, refuses arrays nested deeper
//     than Limits.MaxCallStackSize (both recurse in Go). The array and
//     string iterators' next throws once the execution is interrupted, so
//     spreading a huge sparse array or string ([...a], f(...a),
//     new Set(a)) runs until the time or memory watchdog stops it, as a
//     loop would (a Map's or Set's iterator makes what the script put
//     there, one instruction each). A regular expression that goja
//     runs on its backtracking engine (lookarounds, backreferences) may
//     take exponential time in one match: each match is given up after
//     regexpMatchTimeout (6 s, past the default Timeout and Grace, when
//     the execution's interrupt is pending), as no match. What is not bounded: a
//     JSON.stringify with a list of property names is sized by a walk
//     before it, which a getter or toJSON answering differently the
//     second time defeats; a built-in not named here that allocates in
//     proportion to what the script already holds (Object.keys of an
//     object with many properties, a string's toUpperCase) may take up
//     to a few times that at once; a global RegExp replace whose bound is
//     loose counts its matches first, so it runs the expression twice;
//     a guard adds a Go call to every guarded call, and making the guard
//     costs a fresh runtime about 100 KiB and 1,500 allocations (a
//     Function's shared runtimes pay it once);
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
