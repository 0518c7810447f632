package cosmosrest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSetHeader: setHeader keeps a name as it is given, so that the
// answer carries it so, where http.Header.Set would canonicalize it, and
// responseHeader reads it back.
func TestSetHeader(t *testing.T) {
	tests := []struct{ name, sent string }{
		{"x-ms-continuation", "x-ms-continuation"},
		{"etag", "etag"},
		{"lsn", "lsn"},
		{"x-ms-documentdb-partitionkeyrangeid", "x-ms-documentdb-partitionkeyrangeid"},
	}
	w := httptest.NewRecorder()
	for _, tt := range tests {
		setHeader(w.Header(), tt.name, "v")
	}
	w.Header().Set("content-type", "application/json")
	w.WriteHeader(http.StatusOK)
	sent := w.Result().Header
	if len(sent) != len(tests)+1 || sent["Content-Type"] == nil {
		t.Errorf("sent %v, want %d names and Content-Type", sent, len(tests))
	}
	for _, tt := range tests {
		if _, ok := sent[tt.sent]; !ok {
			t.Errorf("%s: sent %v, want the name %q", tt.name, sent, tt.sent)
		}
		if got := responseHeader(w.Header(), tt.name); got != "v" {
			t.Errorf("responseHeader(%q) = %q, want v", tt.name, got)
		}
	}
	if got := responseHeader(w.Header(), "x-ms-none"); got != "" {
		t.Errorf("responseHeader of a header not set = %q", got)
	}
}

// TestServiceHeadersSetAsSent reads the package's source: no call sets or
// adds an x-ms-* header, etag or lsn with http.Header's Set or Add, which
// would send it in Go's canonical form: setHeader sets them as the
// service writes them; and none reads one back from a response's map with
// Get (w.Header().Get), which looks up the canonical form and so finds
// nothing: responseHeader does. (TestResponseHeaderNamesLowerCase sees the
// names of the answers it gets; this sees every answer's.)
func TestServiceHeadersSetAsSent(t *testing.T) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	consts := map[string]string{} // the package's string constants
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, sp := range g.Specs {
					vs := sp.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								consts[n.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				}
			}
		}
	}
	service := func(e ast.Expr) (string, bool) {
		var name string
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind == token.STRING {
				name, _ = strconv.Unquote(e.Value)
			}
		case *ast.Ident:
			name = consts[e.Name]
		}
		name = strings.ToLower(name)
		return name, strings.HasPrefix(name, "x-ms-") || name == "etag" || name == "lsn"
	}
	// responseMap reports whether e is a call of a Header method, as a
	// ResponseWriter's (a request's header is a field).
	responseMap := func(e ast.Expr) bool {
		call, ok := e.(*ast.CallExpr)
		if !ok || len(call.Args) != 0 {
			return false
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Header"
	}
	sets := 0
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			name, service := service(call.Args[0])
			switch {
			case (sel.Sel.Name == "Set" || sel.Sel.Name == "Add") && len(call.Args) == 2:
				sets++
				if service {
					t.Errorf("%s: %s(%q, …): use setHeader", fset.Position(call.Pos()), sel.Sel.Name, name)
				}
			case sel.Sel.Name == "Get" && len(call.Args) == 1 && responseMap(sel.X) && service:
				t.Errorf("%s: Header().Get(%q): use responseHeader", fset.Position(call.Pos()), name)
			}
			return true
		})
	}
	if sets == 0 {
		t.Fatal("no Set or Add call found: the test reads nothing")
	}
}

// headerProbes are the headers that make a request reach each of the
// routing table's conditional operations (when).
var headerProbes = [][]string{
	nil,
	{"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"},
	{"x-ms-cosmos-is-query-plan-request", "True", "Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"},
	{"A-IM", "Incremental feed"},
	{"x-ms-cosmos-is-batch-request", "True"},
	{"x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True"},
}

// firstOp is the index of the operation of rr that takes r, -1 for none:
// what pick returns.
func firstOp(rr *resourceRoutes, r *http.Request) int {
	for i, op := range rr.ops {
		if (op.method == "" || op.method == r.Method) && (op.when == nil || op.when(r)) {
			return i
		}
	}
	return -1
}

// samplePaths are a path of each kind of target, on the resources
// TestResponseHeaderNamesLowerCase creates ("{offer}" stands for the
// container's offer's resource id).
var samplePaths = map[targetKind]string{
	tAccount:         "/",
	tDatabases:       "/dbs",
	tDatabase:        "/dbs/db",
	tContainers:      "/dbs/db/colls",
	tContainer:       "/dbs/db/colls/c",
	tDocuments:       "/dbs/db/colls/c/docs",
	tDocument:        "/dbs/db/colls/c/docs/d",
	tPKRanges:        "/dbs/db/colls/c/pkranges",
	tPKRange:         "/dbs/db/colls/c/pkranges/0",
	tOffers:          "/offers",
	tOffer:           "/offers/{offer}",
	tConflicts:       "/dbs/db/colls/c/conflicts",
	tConflict:        "/dbs/db/colls/c/conflicts/x",
	tUsers:           "/dbs/db/users",
	tUser:            "/dbs/db/users/u",
	tPermissions:     "/dbs/db/users/u/permissions",
	tPermission:      "/dbs/db/users/u/permissions/p",
	tSprocs:          "/dbs/db/colls/c/sprocs",
	tSproc:           "/dbs/db/colls/c/sprocs/s",
	tTriggers:        "/dbs/db/colls/c/triggers",
	tTrigger:         "/dbs/db/colls/c/triggers/t",
	tUDFs:            "/dbs/db/colls/c/udfs",
	tUDF:             "/dbs/db/colls/c/udfs/f",
	tPartitionDelete: "/dbs/db/colls/c/operations/partitionkeydelete",
}

// sampleBodies are the bodies of the sample requests, by kind and method:
// a create of a feed's kind makes a second resource, a replace keeps the
// sample's id.
var sampleBodies = map[targetKind]map[string]string{
	tDatabases:   {"POST": `{"id":"db2"}`},
	tContainers:  {"POST": `{"id":"c2","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`},
	tContainer:   {"PUT": `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`},
	tDocuments:   {"POST": `{"id":"e","pk":"a"}`, "bulk": `[{"operationType":"Read","id":"d","partitionKey":"[\"a\"]"}]`},
	tDocument:    {"PUT": `{"id":"d","pk":"a","n":2}`, "PATCH": `{"operations":[{"op":"set","path":"/n","value":3}]}`},
	tOffer:       {"PUT": `{"offerVersion":"V2","content":{"offerThroughput":500}}`},
	tUsers:       {"POST": `{"id":"u2"}`},
	tUser:        {"PUT": `{"id":"u"}`},
	tPermissions: {"POST": `{"id":"p2","permissionMode":"Read","resource":"dbs/db/colls/c"}`},
	tPermission:  {"PUT": `{"id":"p","permissionMode":"Read","resource":"dbs/db/colls/c"}`},
	tSprocs:      {"POST": `{"id":"s2","body":"function () { getContext().getResponse().setBody(1) }"}`},
	tSproc:       {"PUT": `{"id":"s","body":"function () { getContext().getResponse().setBody(2) }"}`, "POST": `[]`},
	tTriggers:    {"POST": `{"id":"t2","body":"function () {}","triggerType":"Pre","triggerOperation":"All"}`},
	tTrigger:     {"PUT": `{"id":"t","body":"function () {}","triggerType":"Pre","triggerOperation":"All"}`},
	tUDFs:        {"POST": `{"id":"f2","body":"function (x) { return x }"}`},
	tUDF:         {"PUT": `{"id":"f","body":"function (x) { return x }"}`},
}

// rawExchange is one request sent over its own TCP connection and the
// head of its response as the bytes came.
type rawExchange struct {
	t    *testing.T
	addr string
}

// send sends a request signed with the master key and returns the
// response's status and the raw header lines (without the status line).
func (x rawExchange) send(method, path, body string, hdr ...string) (int, []string, []byte) {
	x.t.Helper()
	req, err := http.NewRequest(method, "http://"+x.addr+path, strings.NewReader(body))
	if err != nil {
		x.t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	rt, err := parsePath(req.URL.EscapedPath(), routingGateway)
	if err != nil {
		x.t.Fatal(err)
	}
	if control, ok := strings.CutPrefix(path, "/_lethe/"); ok {
		rt.resType, rt.link, _ = strings.Cut(control, "/") // reset, faults/{id}
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := SignRequest(EmulatorKey, method, rt.resType, rt.link, date)
	if err != nil {
		x.t.Fatal(err)
	}
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-11-05")
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-ms-documentdb-partitionkey", `["a"]`)
	req.Header.Set("x-ms-max-item-count", "1")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	req.Close = true
	conn, err := net.Dial("tcp", x.addr)
	if err != nil {
		x.t.Fatal(err)
	}
	defer conn.Close()
	if err := req.Write(conn); err != nil {
		x.t.Fatal(err)
	}
	var raw bytes.Buffer
	resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(conn, &raw)), req)
	if err != nil {
		x.t.Fatalf("%s %s: %v", method, path, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		x.t.Fatal(err)
	}
	head, _, ok := bytes.Cut(raw.Bytes(), []byte("\r\n\r\n"))
	if !ok {
		x.t.Fatalf("%s %s: no end of the head in %q", method, path, raw.Bytes())
	}
	lines := strings.Split(string(head), "\r\n")
	return resp.StatusCode, lines[1:], b
}

// TestResponseHeaderNamesLowerCase walks the routing table: a request of
// every operation of every kind of target, every 405, the unsupported and
// unknown paths and the control endpoints, each over its own HTTP/1.1
// connection, and reads the head of each answer as it came: every x-ms-*
// name (and etag, lsn) is in lower case as the service sends it, and
// Content-Type keeps its form.
func TestResponseHeaderNamesLowerCase(t *testing.T) {
	h, err := New(Config{Faults: &Faults{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	x := rawExchange{t: t, addr: srv.Listener.Addr().String()}
	setup := []struct{ path, body string }{
		{"/dbs", `{"id":"db"}`},
		{"/dbs/db/colls", `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`},
		{"/dbs/db/colls/c/docs", `{"id":"d","pk":"a"}`},
		{"/dbs/db/colls/c/docs", `{"id":"d1","pk":"a"}`},
		{"/dbs/db/users", `{"id":"u"}`},
		{"/dbs/db/users/u/permissions", `{"id":"p","permissionMode":"All","resource":"dbs/db/colls/c"}`},
		{"/dbs/db/colls/c/sprocs", `{"id":"s","body":"function () { getContext().getResponse().setBody(1) }"}`},
		{"/dbs/db/colls/c/triggers", `{"id":"t","body":"function () {}","triggerType":"Pre","triggerOperation":"All"}`},
		{"/dbs/db/colls/c/udfs", `{"id":"f","body":"function (x) { return x }"}`},
	}
	for _, s := range setup {
		var hdr []string
		if s.path == "/dbs/db/colls" {
			hdr = []string{"x-ms-offer-throughput", "400"}
		}
		if status, _, b := x.send("POST", s.path, s.body, hdr...); status != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", s.path, status, b)
		}
	}
	_, _, b := x.send("GET", "/offers", "", "x-ms-max-item-count", "")
	var offers struct {
		Offers []struct {
			Rid string `json:"_rid"`
		}
	}
	if err := json.Unmarshal(b, &offers); err != nil || len(offers.Offers) == 0 {
		t.Fatalf("offers %s: %v", b, err)
	}
	offer := offers.Offers[0].Rid

	type sample struct {
		kind         targetKind
		method, path string
		body         string
		hdr          []string
	}
	var samples, deletes []sample
	for k := tAccount; k < tUnsupported; k++ {
		p, ok := samplePaths[k]
		if !ok {
			t.Errorf("kind %d has no sample path: add one to samplePaths", k)
			continue
		}
		p = strings.Replace(p, "{offer}", offer, 1)
		rr := &routes[k]
		reached := make([]bool, len(rr.ops))
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			for _, hdr := range headerProbes {
				r := httptest.NewRequest(m, p, nil)
				for i := 0; i+1 < len(hdr); i += 2 {
					r.Header.Set(hdr[i], hdr[i+1])
				}
				i := firstOp(rr, r)
				if i < 0 || reached[i] {
					continue
				}
				reached[i] = true
				s := sample{kind: k, method: m, path: p, body: sampleBodies[k][m], hdr: hdr}
				switch probe := strings.Join(hdr, " "); {
				case strings.Contains(probe, "isquery"):
					s.body = `{"query":"SELECT * FROM c","parameters":[]}`
				case strings.Contains(probe, "batch"):
					s.body = sampleBodies[k]["bulk"]
				}
				if m == "DELETE" {
					deletes = append(deletes, s)
				} else {
					samples = append(samples, s)
				}
			}
		}
		for i, op := range rr.ops {
			if op.serve != nil && !reached[i] {
				t.Errorf("kind %d: no sample request reaches operation %d (%s): add its headers to headerProbes", k, i, op.method)
			}
		}
	}
	// An injected fault, then the deletes, the innermost resources first.
	samples = append(samples,
		sample{method: "POST", path: faultsPath, body: `{"id":"r","condition":{"operationType":"ReadItem"},"result":{"statusCode":429,"retryAfterMs":7}}`},
		sample{method: "GET", path: faultsPath + "/r"},
		sample{method: "GET", path: samplePaths[tDocument]},
		sample{method: "DELETE", path: faultsPath + "/r"},
	)
	slices.Reverse(deletes)
	samples = append(samples, deletes...)
	samples = append(samples,
		sample{method: "GET", path: "/media/m"},
		sample{method: "GET", path: "/nothing/here/at/all"},
		sample{method: "GET", path: faultsPath},
		sample{method: "POST", path: faultsPath, body: `{"status":"nope"}`},
		sample{method: "GET", path: faultsPath + "/none"},
		sample{method: "DELETE", path: faultsPath},
		sample{method: "POST", path: resetPath},
	)

	seen := map[string]bool{}
	for _, s := range samples {
		status, lines, b := x.send(s.method, s.path, s.body, s.hdr...)
		if status >= 500 {
			t.Errorf("%s %s %v: %d %s", s.method, s.path, s.hdr, status, b)
		}
		for _, l := range lines {
			name, _, _ := strings.Cut(l, ":")
			lower := strings.ToLower(name)
			seen[name] = true
			if (strings.HasPrefix(lower, "x-ms-") || lower == "etag" || lower == "lsn") && name != lower {
				t.Errorf("%s %s %v: header %q is not in lower case", s.method, s.path, s.hdr, l)
			}
		}
	}
	for _, n := range []string{"Content-Type", "x-ms-continuation", "x-ms-session-token", "etag", "x-ms-activity-id", "x-ms-substatus", "x-ms-retry-after-ms", "x-ms-lethe-fault"} {
		if !seen[n] {
			t.Errorf("no answer carried %q; seen %v", n, seen)
		}
	}
}
