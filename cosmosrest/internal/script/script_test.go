package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/internal/query"
)

// memStore is a Store over a map of one partition's items.
type memStore struct {
	docs  map[string][]byte
	pk    string // the partition's value of /pk, "" for any
	reads int
}

func newMemStore(docs ...string) *memStore {
	s := &memStore{docs: map[string][]byte{}}
	for i, d := range docs {
		s.docs[idOf([]byte(d))] = withSystem([]byte(d), 1, fmt.Sprintf("e%d", i))
	}
	return s
}

func (s *memStore) Read(_ context.Context, id string) ([]byte, string, float64, error) {
	s.reads++
	d, ok := s.docs[id]
	if !ok {
		return nil, "", 1, errNotFound
	}
	return s.Decorate(d), etagOf(d), 1, nil
}

func (s *memStore) Query(ctx context.Context, text string, params map[string]any) ([][]byte, float64, error) {
	q, err := query.Parse(text)
	if err != nil {
		return nil, 0, &OpError{http.StatusBadRequest, err.Error()}
	}
	var docs []query.Doc
	for id, d := range s.docs {
		docs = append(docs, query.Doc{ID: id, JSON: s.Decorate(d)})
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	res, err := query.Exec(ctx, q, params, docs, time.Now())
	if err != nil {
		return nil, 0, &OpError{http.StatusBadRequest, err.Error()}
	}
	return res.Items, 2, nil
}

func (s *memStore) Check(doc []byte) error {
	var d struct {
		PK string `json:"pk"`
	}
	_ = json.Unmarshal(doc, &d)
	if s.pk != "" && d.PK != s.pk {
		return &OpError{http.StatusBadRequest, "PartitionKey extracted from document doesn't match the one specified in the header"}
	}
	return nil
}

func (s *memStore) Decorate(doc []byte) []byte {
	m, _ := decode(doc)
	m["_self"], _ = json.Marshal("dbs/AA==/colls/AAAAAA==/docs/" + idOf(doc) + "-rid/")
	out, _ := json.Marshal(m)
	return out
}

func (s *memStore) Links() (string, string) { return "dbs/db/colls/c", "dbs/AA==/colls/AAAAAA==/" }
func (s *memStore) Now() time.Time          { return time.Unix(100, 0) }

// run compiles and runs body as a procedure with args over st.
func run(t *testing.T, st Store, body, args string, l Limits, o TxOptions) (string, *Tx, Result, error) {
	t.Helper()
	p, err := Compile(body)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if o.MaxOps == 0 {
		o.MaxOps, o.MaxBytes = 100, 2<<20
	}
	tx := NewTx(context.Background(), st, o)
	resp := &Message{}
	res, err := Run(context.Background(), p, &Env{Tx: tx, Args: []byte(args), Response: resp, Logging: true, Limits: l})
	return string(resp.Body), tx, res, err
}

func mustRun(t *testing.T, st Store, body, args string) (string, *Tx) {
	t.Helper()
	out, tx, _, err := run(t, st, body, args, Limits{}, TxOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out, tx
}

func TestCompile(t *testing.T) {
	for _, body := range []string{
		`function f(a) { getContext().getResponse().setBody(a + 1); }`,
		`function (a) { getContext().getResponse().setBody(a + 1); }`,
		`function f(a) { getContext().getResponse().setBody(g(a)); } function g(a) { return a + 1; }`,
		`function f(a) { getContext().getResponse().setBody(a + 1); }; var unused = 1;`,
	} {
		out, _ := mustRun(t, newMemStore(), body, `[1]`)
		if out != "2" {
			t.Errorf("%s: body %s, want 2", body, out)
		}
	}
	for _, body := range []string{`function f( {`, strings.Repeat(" ", MaxBodySize+1)} {
		if _, err := Compile(body); !errors.Is(err, ErrCompile) {
			t.Errorf("Compile(%.20q) = %v, want ErrCompile", body, err)
		}
	}
	_, _, _, err := run(t, newMemStore(), `1 + 1`, ``, Limits{}, TxOptions{})
	var e *Error
	if !errors.As(err, &e) || e.Reason != Thrown {
		t.Errorf("a body that is no function: %v", err)
	}
}

func TestCache(t *testing.T) {
	c := NewCache(2)
	p1, _ := c.Get("a/1", `function f() {}`)
	p2, _ := c.Get("a/1", `function f() {}`)
	if p1 != p2 {
		t.Error("the same key compiled twice")
	}
	if _, err := c.Get("b/1", `function (`); err == nil {
		t.Error("a bad body compiled")
	}
	_, _ = c.Get("b/2", `function f() {}`)
	_, _ = c.Get("c/1", `function f() {}`)
	if c.Len() > 2 {
		t.Errorf("the cache holds %d programs, over its limit of 2", c.Len())
	}
}

func TestCallbacksRunAfterTheScript(t *testing.T) {
	st := newMemStore(`{"id":"a","pk":"p","n":1}`)
	out, _ := mustRun(t, st, `function f() {
		var order = [];
		var c = getContext().getCollection();
		var ok = c.readDocument(c.getAltLink() + "/docs/a", function (err, doc) {
			order.push("callback " + doc.n);
			getContext().getResponse().setBody(order);
		});
		order.push("after " + ok);
	}`, `[]`)
	if out != `["after true","callback 1"]` {
		t.Errorf("body %s", out)
	}
}

func TestWritesAreSeenAndCommittedTogether(t *testing.T) {
	st := newMemStore(`{"id":"a","pk":"p","n":1}`, `{"id":"gone","pk":"p"}`)
	out, tx := mustRun(t, st, `function f(prefix) {
		var c = __;
		var link = c.getSelfLink();
		c.createDocument(link, {id: prefix + "1", pk: "p", n: 2}, function (err, doc) {
			if (err) throw err;
			c.readDocument(doc._self, function (err, again) {
				if (err) throw err;
				again.n = 3;
				c.replaceDocument(again._self, again, function (err) {
					if (err) throw err;
					c.deleteDocument(c.getAltLink() + "/docs/gone", function (err) {
						if (err) throw err;
						c.queryDocuments(link, {query: "SELECT VALUE r.n FROM r WHERE r.n > @min", parameters: [{name: "@min", value: 0}]}, function (err, ns) {
							if (err) throw err;
							getContext().getResponse().setBody(ns);
						});
					});
				});
			});
		});
	}`, `["x"]`)
	if out != `[1,3]` {
		t.Errorf("the query saw %s, want [1,3] (the procedure's own writes, not the deleted item)", out)
	}
	ops := tx.Ops()
	if len(ops) != 2 || ops[0].Kind != OpCreate || ops[0].ID != "x1" || ops[1].Kind != OpDelete || ops[1].ID != "gone" || ops[1].IfMatch != "e1" {
		t.Errorf("ops %+v", ops)
	}
	if strings.Contains(string(ops[0].Doc), "_self") || !strings.Contains(string(ops[0].Doc), `"n":3`) {
		t.Errorf("the created item is %s: want its last state, without system properties", ops[0].Doc)
	}
	if len(st.docs) != 2 {
		t.Error("the store changed before the commit")
	}
}

func TestOperationErrors(t *testing.T) {
	st := newMemStore(`{"id":"a","pk":"p"}`)
	st.pk = "p"
	out, _ := mustRun(t, st, `function f() {
		var c = __, link = c.getSelfLink(), seen = [];
		c.createDocument(link, {id: "a", pk: "p"}, function (err) { seen.push(err ? err.number : 0); });
		c.readDocument(c.getAltLink() + "/docs/none", function (err) { seen.push(err ? err.number : 0); });
		c.replaceDocument(c.getAltLink() + "/docs/a", {id: "a", pk: "p"}, {accessCondition: {type: "IfMatch", condition: "stale"}}, function (err) { seen.push(err ? err.number : 0); });
		c.createDocument("dbs/db/colls/other", {id: "b", pk: "p"}, function (err) { seen.push(err ? err.number : 0); });
		c.createDocument(link, {id: "b", pk: "other"}, function (err) { seen.push(err ? err.number : 0); });
		c.queryDocuments(link, "SELECT * FROM", function (err) { seen.push(err ? err.number : 0); getContext().getResponse().setBody(seen); });
	}`, `[]`)
	if out != `[409,404,412,400,400,400]` {
		t.Errorf("statuses %s", out)
	}
	// An error without a callback fails the execution.
	_, _, _, err := run(t, st, `function f() { __.createDocument(__.getSelfLink(), {id: "a", pk: "p"}); }`, ``, Limits{}, TxOptions{})
	var e *Error
	if !errors.As(err, &e) || e.Reason != Thrown || !strings.Contains(e.Message, "409") {
		t.Errorf("a conflict without callback: %v", err)
	}
	// A thrown error is the execution's, with its message.
	_, _, _, err = run(t, st, `function f() { throw new Error("no way"); }`, ``, Limits{}, TxOptions{})
	if !errors.As(err, &e) || e.Message != "Error: no way" {
		t.Errorf("a throw: %v", err)
	}
}

// TestQuerySpecErrors: queryDocuments takes a query as text or as a
// specification (queryspec); anything else is a 400 saying so, and a
// parameter without a value is missing.
func TestQuerySpecErrors(t *testing.T) {
	st := newMemStore(`{"id":"a","pk":"p","n":1}`)
	out, _ := mustRun(t, st, `function f() {
		var c = __, link = c.getSelfLink(), seen = [];
		var note = function (err, r) {
			seen.push(err ? err.number + " " + err.message : JSON.stringify(r));
			getContext().getResponse().setBody(seen);
		};
		c.queryDocuments(link, {parameters: []}, note);
		c.queryDocuments(link, {query: 7}, note);
		c.queryDocuments(link, {query: "SELECT VALUE r.n FROM r WHERE r.n = @n", parameters: [{name: "@n"}]}, note);
		c.queryDocuments(link, new String("SELECT VALUE r.n FROM r"), note);
		c.queryDocuments(link, {query: "SELECT VALUE r.n FROM r WHERE r.n = @n", parameters: [{name: "@n", value: 1}]}, note);
	}`, `[]`)
	var seen []string
	if err := json.Unmarshal([]byte(out), &seen); err != nil || len(seen) != 5 {
		t.Fatalf("body %s", out)
	}
	const malformed = `400 the query must be a string or {"query": "...", "parameters": [{"name": "@p", "value": ...}]}`
	if seen[0] != malformed || seen[1] != malformed {
		t.Errorf("malformed specifications: %q", seen[:2])
	}
	if !strings.HasPrefix(seen[2], "400 ") || !strings.Contains(seen[2], "missing parameter @n") {
		t.Errorf("a parameter without a value: %q", seen[2])
	}
	if seen[3] != "[1]" || seen[4] != "[1]" {
		t.Errorf("a String object, a specification: %q", seen[3:])
	}
}

func TestNotAcceptedPastTheBatchLimit(t *testing.T) {
	out, tx, _, err := run(t, newMemStore(), `function f() {
		var n = 0;
		while (__.createDocument(__.getSelfLink(), {pk: "p"})) n++;
		getContext().getResponse().setBody(n);
	}`, ``, Limits{}, TxOptions{MaxOps: 10, MaxBytes: 1 << 20})
	if err != nil || out != "10" || len(tx.Ops()) != 10 {
		t.Errorf("body %s, %d ops, %v: want 10 writes accepted", out, len(tx.Ops()), err)
	}
}

func TestNotAcceptedPastTheTimeLimit(t *testing.T) {
	start := time.Now()
	out, _, _, err := run(t, newMemStore(), `function f() {
		var n = 0;
		while (__.readDocuments(__.getSelfLink(), function () {})) n++;
		getContext().getResponse().setBody(n > 0);
	}`, ``, Limits{Timeout: 50 * time.Millisecond}, TxOptions{})
	if err != nil || out != "true" {
		t.Errorf("body %s, %v", out, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestLogging(t *testing.T) {
	_, _, res, err := run(t, newMemStore(), `function f() { console.log("a", 1, {}); console.log("b"); }`, ``, Limits{MaxLogBytes: 21}, TxOptions{})
	if err != nil || res.Log != "a 1 [object Object]\r\n" {
		t.Errorf("log %q, %v", res.Log, err)
	}
}

// TestLogFormat: console.log formats as Node's util.format, as the
// service's log does ("The value of %s is %s." in the SDKs' specs), and
// separates its entries with CRLF, with none after the last.
func TestLogFormat(t *testing.T) {
	tests := []struct{ call, want string }{
		{`console.log("The value of %s is %s.", "x", 1)`, "The value of x is 1."},
		{`console.log("%d and %i and %f", "42", 3.7, "1.5")`, "42 and 3 and 1.5"},
		{`console.log("%j %o", {a: [1]}, "s")`, `{"a":[1]} "s"`},
		{`console.log("100%% %s", "sure", "and", 2)`, "100% sure and 2"},
		{`console.log("%s and %s", "one")`, "one and %s"},
		{`console.log("%x %c.", "css")`, "%x ."},
		{`console.log(1, "%s", true)`, "1 %s true"},
		{`console.log("a"); console.log("b")`, "a\r\nb"},
		{`console.log()`, ""},
	}
	for _, tt := range tests {
		_, _, res, err := run(t, newMemStore(), `function f() { `+tt.call+`; }`, ``, Limits{}, TxOptions{})
		if err != nil || res.Log != tt.want {
			t.Errorf("%s: log %q, %v; want %q", tt.call, res.Log, err, tt.want)
		}
	}
}

// TestAppendToBody: getResponse().appendValue("Body", v) and appendBody(v)
// append to the body as a string (the SDKs' specs: ten appends of 0 to 9
// make "0123456789"); another name than "Body" is a TypeError.
func TestAppendToBody(t *testing.T) {
	tests := []struct{ body, want string }{
		{`for (var i = 0; i < 10; i++) getContext().getResponse().appendValue("Body", i);`, `"0123456789"`},
		{`var r = getContext().getResponse(); r.setBody("a"); r.appendBody("b"); r.appendBody({c: 1});`, `"ab{\"c\":1}"`},
		{`var r = getContext().getResponse(); r.setBody(7); r.appendBody(8);`, `"78"`},
		{`try { getContext().getResponse().appendValue("Other", 1); } catch (e) { getContext().getResponse().setBody(e instanceof TypeError && String(e)); }`,
			`"TypeError: appendValue appends to \"Body\", not to \"Other\""`},
	}
	for _, tt := range tests {
		out, _, _, err := run(t, newMemStore(), `function f() { `+tt.body+` }`, ``, Limits{}, TxOptions{})
		if err != nil || out != tt.want {
			t.Errorf("%s: body %s, %v; want %s", tt.body, out, err, tt.want)
		}
	}
}

// The attacker's tests: what a script may try to get out of its sandbox,
// or to take down the server.

func TestSandboxHasNothingOfTheHost(t *testing.T) {
	for _, expr := range []string{
		`typeof require`, `typeof process`, `typeof setTimeout`, `typeof setInterval`, `typeof module`,
		`typeof global`, `typeof ArrayBuffer`, `typeof Uint8Array`, `typeof SharedArrayBuffer`, `typeof WeakRef`,
		`(function () { try { return typeof this.constructor.constructor("return process")(); } catch (e) { return "undefined"; } })()`,
		`(function () { try { return typeof Function("return require")(); } catch (e) { return "undefined"; } })()`,
		`(function () { try { return typeof eval("fetch"); } catch (e) { return "undefined"; } })()`,
		`typeof getContext().constructor.constructor("return process")()`,
	} {
		out, _, _, err := run(t, newMemStore(), `function f() { getContext().getResponse().setBody(`+expr+`); }`, ``, Limits{}, TxOptions{})
		if err != nil && !strings.Contains(err.Error(), "not defined") {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if err == nil && out != `"undefined"` {
			t.Errorf("%s = %s, want undefined", expr, out)
		}
	}
}

func TestExecutionsShareNothing(t *testing.T) {
	st := newMemStore()
	mustRun(t, st, `function f() {
		Object.prototype.polluted = "yes"; Array.prototype.push = function () { return "hijacked"; };
		JSON.parse = function () { return {id: "evil"}; }; globalThis.leak = 1; getContext = null;
	}`, ``)
	out, _ := mustRun(t, st, `function f() {
		var a = []; a.push(1);
		getContext().getResponse().setBody([({}).polluted === undefined, a.length, typeof leak]);
	}`, ``)
	if out != `[true,1,"undefined"]` {
		t.Errorf("the second execution saw the first's changes: %s", out)
	}
	// A script that breaks its own JSON still cannot make the host
	// misread its values.
	out, _ = mustRun(t, st, `function f() { JSON.stringify = function () { return "{}"; }; getContext().getResponse().setBody({a: 1}); }`, ``)
	if out != `{"a":1}` {
		t.Errorf("body %s", out)
	}
}

func TestRunawayLoopIsInterrupted(t *testing.T) {
	for _, body := range []string{
		`function f() { while (true) {} }`,
		`function f() { __.readDocuments(__.getSelfLink(), function () { for (;;) {} }); }`,
		`function f() { try { while (true) {} } catch (e) { while (true) {} } finally { while (true) {} } }`,
	} {
		start := time.Now()
		_, tx, _, err := run(t, newMemStore(), body, ``, Limits{Timeout: 50 * time.Millisecond, Grace: 50 * time.Millisecond}, TxOptions{})
		var e *Error
		if !errors.As(err, &e) || e.Reason != Timeout {
			t.Errorf("%s: %v, want a timeout", body, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: stopped after %v", body, d)
		}
		if len(tx.Ops()) != 0 {
			t.Error("writes left")
		}
	}
}

func TestDeepRecursionIsStopped(t *testing.T) {
	for _, body := range []string{
		`function f() { function r(n) { return r(n + 1) + 1; } r(0); }`,
		`function f() { function r(n) { try { return r(n + 1) + 1; } catch (e) { return r(n + 1); } } r(0); }`,
	} {
		_, _, _, err := run(t, newMemStore(), body, ``, Limits{}, TxOptions{})
		var e *Error
		if !errors.As(err, &e) || e.Reason != StackOverflow {
			t.Errorf("%s: %v, want a stack overflow", body, err)
		}
	}
}

func TestAllocationBombIsStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates some 50 MB")
	}
	bombs := []string{
		`function f() { var a = []; while (true) a.push(new Array(1e6)); }`,
		`function f() { var s = "x"; while (true) s = s + s; }`,
	}
	if os.Getenv("LETHE_SCRIPT_SOAK") != "" {
		// Slower (seconds, more under -race): many small objects, and
		// arrays filled element by element.
		bombs = append(bombs,
			`function f() { var a = []; while (true) a.push({a: 1, b: [1, 2, 3]}); }`,
			`function f() { var a = []; while (true) a.push(new Array(1e6).fill(0)); }`)
	}
	for _, body := range bombs {
		start := time.Now()
		_, _, _, err := run(t, newMemStore(), body, ``, Limits{MaxHeapGrowth: 16 << 20, Timeout: 20 * time.Second}, TxOptions{})
		var e *Error
		if !errors.As(err, &e) || (e.Reason != OutOfMemory && e.Reason != Thrown) {
			t.Errorf("%s: %v, want it stopped for memory", body, err)
		}
		t.Logf("%s: %v after %v", body, err, time.Since(start))
	}
}

func TestOneCallAllocationsAreRefused(t *testing.T) {
	for _, expr := range []string{
		`"x".repeat(1e9)`, `"x".padStart(1e9)`, `"x".padEnd(1e9, "y")`, `"abc".repeat(6e6)`,
	} {
		_, _, _, err := run(t, newMemStore(), `function f() { `+expr+`; }`, ``, Limits{}, TxOptions{})
		if err == nil || !strings.Contains(err.Error(), "RangeError") {
			t.Errorf("%s: %v, want a RangeError", expr, err)
		}
	}
	out, _ := mustRun(t, newMemStore(), `function f() { getContext().getResponse().setBody(["ab".repeat(3), "1".padStart(3, "0"), new Array(1e9).length]); }`, ``)
	if out != `["ababab","001",1000000000]` {
		t.Errorf("body %s", out)
	}
}

func TestReadOnlyCannotWrite(t *testing.T) {
	_, tx, _, err := run(t, newMemStore(), `function f() {
		try { __.createDocument(__.getSelfLink(), {id: "a"}, function () {}); } catch (e) {}
		getContext().getResponse().setBody("wrote");
	}`, ``, Limits{}, TxOptions{ReadOnly: true})
	var e *Error
	if !errors.As(err, &e) || e.Reason != Forbidden || len(tx.Ops()) != 0 {
		t.Errorf("a write under Read: %v, %d ops", err, len(tx.Ops()))
	}
	out, _, _, err := run(t, newMemStore(`{"id":"a"}`), `function f() { __.readDocument("dbs/db/colls/c/docs/a", function (err, d) { getContext().getResponse().setBody(d.id); }); }`, ``, Limits{}, TxOptions{ReadOnly: true})
	if err != nil || out != `"a"` {
		t.Errorf("a read under Read: %s, %v", out, err)
	}
}

func TestBodyBounded(t *testing.T) {
	_, _, _, err := run(t, newMemStore(), `function f() { getContext().getResponse().setBody("x".repeat(2000)); }`, ``, Limits{MaxBodyBytes: 1000}, TxOptions{})
	if err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("an oversized body: %v", err)
	}
}

func TestCancelled(t *testing.T) {
	p, _ := Compile(`function f() { while (true) {} }`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, p, &Env{Tx: NewTx(ctx, newMemStore(), TxOptions{MaxOps: 1})})
	var e *Error
	if !errors.As(err, &e) || e.Reason != Cancelled {
		t.Errorf("%v, want cancelled", err)
	}
}

func TestTriggerMessages(t *testing.T) {
	p, _ := Compile(`function stamp() {
		var r = getContext().getRequest(), d = r.getBody();
		if (r.getOperationType() !== "Create") throw new Error("not a create");
		d.stamped = true; r.setBody(d);
	}`)
	req := &Message{Body: []byte(`{"id":"a"}`), OperationType: "Create"}
	if _, err := Run(context.Background(), p, &Env{Kind: PreTrigger, Request: req}); err != nil || string(req.Body) != `{"id":"a","stamped":true}` {
		t.Errorf("body %s, %v", req.Body, err)
	}
	req = &Message{Body: []byte(`{"id":"a"}`), OperationType: "Replace"}
	if _, err := Run(context.Background(), p, &Env{Kind: PreTrigger, Request: req}); err == nil {
		t.Error("the trigger's throw did not fail it")
	}
}

func TestCall(t *testing.T) {
	p, err := Compile(`function f(a, b) { if (a === "throw") throw new Error("no"); if (a === "undef") return undefined; return {sum: a + b, list: [b, a], t: typeof getContext}; }`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Call(context.Background(), p, []any{1.5, 2.0}, Limits{})
	b, _ := json.Marshal(got)
	if err != nil || string(b) != `{"list":[2,1.5],"sum":3.5,"t":"undefined"}` {
		t.Errorf("Call = %s, %v", b, err)
	}
	if got, err := Call(context.Background(), p, []any{"undef", nil}, Limits{}); got != Undefined || err != nil {
		t.Errorf("undefined: %v, %v", got, err)
	}
	if _, err := Call(context.Background(), p, []any{"throw", nil}, Limits{}); err == nil || !strings.Contains(err.Error(), "Error: no") {
		t.Errorf("a throw: %v", err)
	}
	spin, _ := Compile(`function spin() { for (;;) {} }`)
	var e *Error
	if _, err := Call(context.Background(), spin, nil, Limits{Timeout: 10 * time.Millisecond, Grace: 10 * time.Millisecond}); !errors.As(err, &e) || e.Reason != Timeout {
		t.Errorf("a spin: %v", err)
	}
}

func BenchmarkCall(b *testing.B) {
	p, _ := Compile(`function tax(x) { return x * 0.1; }`)
	args := []any{10.0}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Call(context.Background(), p, args, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunNoop(b *testing.B) {
	p, _ := Compile(`function noop() {}`)
	st := newMemStore()
	b.ReportAllocs()
	for b.Loop() {
		tx := NewTx(context.Background(), st, TxOptions{MaxOps: 100, MaxBytes: 1 << 20})
		if _, err := Run(context.Background(), p, &Env{Tx: tx, Response: &Message{}}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFunctionCallsShareNothing: calls of a Function that share a runtime
// see nothing an earlier call did, whatever it tried.
func TestFunctionCallsShareNothing(t *testing.T) {
	p, err := Compile(`function f(mode) {
		switch (mode) {
		case "pollute":
			Object.prototype.polluted = 1; Array.prototype.push = null; f.count = 1; JSON.parse = null;
			Math.max = function () { return 42; }; globalThis.Math = null; helper.x = 1;
			try { Object.defineProperty(Object.prototype, "p2", {value: 1}); } catch (e) {}
			return "done";
		case "implicit":
			leaked = 7; return leaked;
		case "throw":
			Object.prototype.late = 1; throw new Error("no");
		}
		var a = []; a.push(1);
		return [({}).polluted === undefined, ({}).p2 === undefined, a.length, f.count === undefined, typeof leaked, Math.max(1, 2), helper.x === undefined, typeof JSON.parse];
	}
	function helper() {}`)
	if err != nil || !p.declarations {
		t.Fatalf("compile: %v, declarations %v", err, p.declarations)
	}
	fn := NewFunction(p, Limits{})
	clean := `[true,true,1,true,"undefined",2,true,"function"]`
	check := func(when string) {
		t.Helper()
		got, err := fn.Call(context.Background(), []any{"check"})
		b, _ := json.Marshal(got)
		if err != nil || string(b) != clean {
			t.Errorf("%s: %s, %v; want %s", when, b, err, clean)
		}
	}
	check("first")
	for _, mode := range []string{"pollute", "implicit", "throw"} {
		_, _ = fn.Call(context.Background(), []any{mode})
		check("after " + mode)
	}
	if got, err := fn.Call(context.Background(), []any{"implicit"}); err != nil || got != 7.0 {
		t.Errorf("an implicit global within one call: %v, %v", got, err)
	}
	// A body with other statements gets a fresh runtime for every call.
	p2, _ := Compile(`var n = 0; function f() { return ++n; }`)
	if p2.declarations {
		t.Error("a body with a var statement is not declarations only")
	}
	fn2 := NewFunction(p2, Limits{})
	for range 3 {
		if got, err := fn2.Call(context.Background(), nil); err != nil || got != 1.0 {
			t.Errorf("counter: %v, %v", got, err)
		}
	}
	// A spinning call is stopped, and the next call still runs.
	spin, _ := Compile(`function f(s) { if (s) for (;;) {} return 1; }`)
	fs := NewFunction(spin, Limits{Timeout: 10 * time.Millisecond, Grace: 10 * time.Millisecond})
	var e *Error
	if _, err := fs.Call(context.Background(), []any{true}); !errors.As(err, &e) || e.Reason != Timeout {
		t.Errorf("spin: %v", err)
	}
	if got, err := fs.Call(context.Background(), []any{false}); err != nil || got != 1.0 {
		t.Errorf("after a spin: %v, %v", got, err)
	}
}

func BenchmarkFunctionCall(b *testing.B) {
	p, _ := Compile(`function tax(x) { return x * 0.1; }`)
	fn := NewFunction(p, Limits{})
	args := []any{10.0}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fn.Call(context.Background(), args); err != nil {
			b.Fatal(err)
		}
	}
}

// expiringStore is a memStore whose items expire after their first read.
type expiringStore struct{ *memStore }

func (s expiringStore) Read(ctx context.Context, id string) ([]byte, string, float64, error) {
	doc, etag, charge, err := s.memStore.Read(ctx, id)
	delete(s.docs, id)
	return doc, etag, charge, err
}

func TestReadNeverReturnsAnItemThatExpiredSince(t *testing.T) {
	st := expiringStore{newMemStore(`{"id":"a"}`)}
	tx := NewTx(context.Background(), st, TxOptions{MaxOps: 10, MaxBytes: 1 << 20})
	if _, _, err := tx.read("a"); err != nil {
		t.Fatalf("first read: %v", err)
	}
	if _, _, err := tx.read("a"); err != errNotFound {
		t.Errorf("a read after the item expired: %v, want 404", err)
	}
	// A write starts from the version first read: its commit is IfMatch it.
	if _, err := tx.Write(WriteReplace, "a", []byte(`{"id":"a","n":1}`), ""); err != nil {
		t.Fatal(err)
	}
	if ops := tx.Ops(); len(ops) != 1 || ops[0].Kind != OpReplace || ops[0].IfMatch != "e0" {
		t.Errorf("ops %+v", ops)
	}
}

// TestFunctionCallsShareNothingAttacks: a call of a Function that shares
// runtimes changes an intrinsic the global object does not reach (only an
// instance's prototype chain does) or the global object's prototype; the
// next call must not see it.
func TestFunctionCallsShareNothingAttacks(t *testing.T) {
	for _, c := range []struct{ name, set, get string }{
		{"array iterator", `Object.getPrototypeOf([][Symbol.iterator]()).leak = 42`, `[][Symbol.iterator]().leak`},
		{"%IteratorPrototype%", `Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())).leak = 42`, `new Set()[Symbol.iterator]().leak`},
		{"map iterator", `Object.getPrototypeOf(new Map()[Symbol.iterator]()).leak = 42`, `new Map()[Symbol.iterator]().leak`},
		{"set iterator", `Object.getPrototypeOf(new Set()[Symbol.iterator]()).leak = 42`, `new Set()[Symbol.iterator]().leak`},
		{"string iterator", `Object.getPrototypeOf(""[Symbol.iterator]()).leak = 42`, `""[Symbol.iterator]().leak`},
		{"regexp string iterator", `Object.getPrototypeOf(/a/[Symbol.matchAll]("a")).leak = 42`, `/a/[Symbol.matchAll]("a").leak`},
		{"iterator next", `Object.getPrototypeOf([][Symbol.iterator]()).next = function () { return {done: false, value: 42}; }`, `(function () { for (var v of [1]) return v; })()`},
		{"%GeneratorFunction%", `Object.getPrototypeOf(function* () {}).leak = 42`, `Object.getPrototypeOf(function* () {}).leak`},
		{"%GeneratorPrototype%", `Object.getPrototypeOf(function* () {}).prototype.leak = 42`, `(function* () {})().leak`},
		{"%AsyncFunction%", `Object.getPrototypeOf(async function () {}).leak = 42`, `Object.getPrototypeOf(async function () {}).leak`},
		{"global prototype", `Object.setPrototypeOf(globalThis, {leak: 42})`, `typeof leak === "undefined" ? undefined : leak`},
		{"global __proto__", `globalThis.__proto__ = {leak: 42}`, `typeof leak === "undefined" ? undefined : leak`},
		{"eval let", `(0, eval)("let leak = 42")`, `(0, eval)("typeof leak === 'undefined' ? undefined : leak")`},
		{"%ThrowTypeError%", `(function () { "use strict"; Object.getOwnPropertyDescriptor(arguments, "callee").get.leak = 42; })()`, `(function () { "use strict"; return Object.getOwnPropertyDescriptor(arguments, "callee").get.leak; })()`},
		{"Date.prototype", `Date.prototype.setTime(42)`, `Date.prototype.getTime()`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Compile(`function f(m) { if (m === "set") { ` + c.set + `; return 0; } return ` + c.get + `; }`)
			if err != nil || !p.declarations {
				t.Fatalf("compile: %v", err)
			}
			fn := NewFunction(p, Limits{})
			_, _ = fn.Call(context.Background(), []any{"set"})
			if got, _ := fn.Call(context.Background(), []any{"get"}); got == 42.0 {
				t.Errorf("a later call saw what an earlier one set: %v", got)
			}
		})
	}
}

// TestThrownValuesThatFightBack: a script throws a value whose
// description runs its code (a toString, a getter) that throws or spins.
// Every way of running it returns an *Error within its budget: it neither
// panics nor hangs.
func TestThrownValuesThatFightBack(t *testing.T) {
	l := Limits{Timeout: 50 * time.Millisecond, Grace: 10 * time.Millisecond}
	for _, c := range []struct {
		throw  string
		reason Reason
	}{
		{`{toString() { throw new Error("x"); }}`, Thrown},
		{`{get number() { throw new Error("x"); }}`, Thrown},
		{`{get stack() { throw new Error("x"); }, name: "E", message: "m"}`, Thrown},
		{`{get body() { throw new Error("x"); }, number: 1}`, Thrown},
		{`{body: {toJSON() { throw new Error("x"); }}, number: 1}`, Thrown},
		{`{toString() { for (;;) {} }}`, Timeout},
		{`{get number() { for (;;) {} }}`, Timeout},
		{`{stack: 1, get name() { for (;;) {} }}`, Timeout},
	} {
		p, err := Compile(`function f() { throw ` + c.throw + `; }`)
		if err != nil {
			t.Fatal(err)
		}
		for name, call := range map[string]func() error{
			"Run": func() error {
				_, err := Run(context.Background(), p, &Env{Kind: Procedure, Response: &Message{}, Limits: l})
				return err
			},
			"Call": func() error { _, err := Call(context.Background(), p, nil, l); return err },
			"Function.Call": func() error {
				_, err := NewFunction(p, l).Call(context.Background(), nil)
				return err
			},
		} {
			done := make(chan error, 1)
			go func() {
				defer func() {
					if r := recover(); r != nil {
						done <- fmt.Errorf("panicked: %v", r)
					}
				}()
				done <- call()
			}()
			select {
			case err := <-done:
				var e *Error
				if !errors.As(err, &e) || e.Reason != c.reason {
					t.Errorf("%s throwing %s: %v, want an *Error of reason %d", name, c.throw, err, c.reason)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("%s throwing %s: still running after 5 s", name, c.throw)
			}
		}
	}
}

// TestFunctionCallMatchesFreshCall: a Function's calls in a shared
// runtime (arguments made directly, results read directly where they are
// numbers, strings, booleans or null) answer as calls in a fresh runtime,
// through JSON, do; and the arguments are the call's own copies.
func TestFunctionCallMatchesFreshCall(t *testing.T) {
	bodies := []string{
		`function f(a) { return a; }`,
		`function f(a) { return typeof a; }`,
		`function f(a) { return a === null ? "null" : Array.isArray(a) ? a.length : a; }`,
		`function f() { return NaN; }`,
		`function f() { return -Infinity; }`,
		`function f() { return -0; }`,
		`function f() { return 1e300 * 10; }`,
		`function f() { return 2 ** 53 + 1; }`,
		`function f() { return [1, undefined, function () {}, "x"]; }`,
		`function f() { return {a: undefined, b: 1, c: {d: [null]}}; }`,
		`function f() { return new Date(0); }`,
		`function f() { return new String("boxed"); }`,
		`function f() { return new Number(3); }`,
		`function f() { return Object(true); }`,
		`function f() { return "\ud800"; }`,
		`function f() { return "é\u2028"; }`,
		`function f() { return undefined; }`,
		`function f() { return Symbol("s"); }`,
		`function f() { return 10n; }`,
		`function f() { n = 2; return n * 3; }`, // an implicit global
		`function f() { n = 2; return typeof n; }`,
		`function f() { globalThis.n = (globalThis.n || 0) + 1; return globalThis.n; }`,
		`function f() { this.m = 1; return typeof m; }`,
		`function f() { Object.defineProperty(globalThis, "d", {value: 1}); return typeof d; }`,
		`function f() { return typeof undeclared; }`,
		`function f(o) { o.x = 99; if (o.arr) o.arr.push(1); return o; }`,
	}
	args := [][]any{
		nil,
		{nil},
		{true},
		{"s"},
		{0.5},
		{[]any{1.0, "a", nil, []any{}}},
		{map[string]any{"b": 1.0, "a": map[string]any{"z": false}, "arr": []any{2.0}}},
	}
	for _, body := range bodies {
		p, err := Compile(body)
		if err != nil || !p.declarations {
			t.Fatalf("%s: %v, declarations %v", body, err, p.declarations)
		}
		fn := NewFunction(p, Limits{})
		for _, a := range args {
			want, wantErr := Call(context.Background(), p, a, Limits{})
			before, _ := json.Marshal(a)
			got, gotErr := fn.Call(context.Background(), a)
			after, _ := json.Marshal(a)
			if (wantErr == nil) != (gotErr == nil) {
				t.Errorf("%s %s: error %v, fresh call's %v", body, before, gotErr, wantErr)
				continue
			}
			wb, _ := json.Marshal(want)
			gb, _ := json.Marshal(got)
			if string(wb) != string(gb) || (want == Undefined) != (got == Undefined) {
				t.Errorf("%s %s: %s, fresh call's %s", body, before, gb, wb)
			}
			if string(before) != string(after) {
				t.Errorf("%s: the call changed its arguments: %s, now %s", body, before, after)
			}
		}
	}
}
