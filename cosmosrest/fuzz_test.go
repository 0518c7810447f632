package cosmosrest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe"
)

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"", "/", "/dbs", "/dbs/db/colls/c/docs/a%20b", "//dbs//", "/dbs/%zz", "/dbs/a/colls/b/pkranges/0",
		"/dbs/a/colls/b/docs/x/attachments/y", "/offers", "/dbs/a/users/u/permissions/p", strings.Repeat("/a", 20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, escaped string) {
		for _, g := range []gateway{routingGateway, computeGateway} {
			checkParsedPath(t, escaped, g)
		}
	})
}

// checkParsedPath checks what parsePath makes of escaped as gateway g
// reads it: at most maxSegments segments, none empty, a link that is a
// prefix of the path, and a target with the ids its kind needs.
func checkParsedPath(t *testing.T, escaped string, g gateway) {
	t.Helper()
	rt, err := parsePath(escaped, g)
	if err != nil {
		return
	}
	if len(rt.segs) > maxSegments {
		t.Fatalf("%d segments", len(rt.segs))
	}
	for _, s := range rt.segs {
		if s == "" {
			t.Fatalf("empty segment in %q", rt.segs)
		}
	}
	switch {
	case len(rt.segs) == 2 && rt.segs[0] == "offers":
		if rt.link != strings.ToLower(rt.segs[1]) {
			t.Fatalf("offer link %q for %q", rt.link, rt.segs)
		}
	case len(rt.segs) > 0 && !strings.HasPrefix(strings.Join(rt.segs, "/"), rt.link):
		t.Fatalf("link %q not a prefix of %q", rt.link, rt.segs)
	}
	tg := classify(rt)
	switch tg.kind {
	case tDatabase, tContainers:
		if tg.db == "" {
			t.Fatalf("%v: no database", rt.segs)
		}
	case tContainer, tDocuments, tPKRanges:
		if tg.db == "" || tg.coll == "" {
			t.Fatalf("%v: no container", rt.segs)
		}
	case tDocument, tPKRange:
		if tg.id == "" {
			t.Fatalf("%v: no id", rt.segs)
		}
	}
}

func FuzzPKHeader(f *testing.F) {
	for _, s := range []string{`[]`, `["a"]`, `[1.5]`, `[-0]`, `[1e400]`, `[true,false,null]`, `[{}]`, `[ { } , "x" ]`, `["\u00e9\U0001f600\a\x00"]`,
		`["\ud83d\ude00"]`, `["\ud83d"]`, `[01]`, `["a","b","c","d"]`, `[`, `["`, `["\`, `[1,]`, `[nul]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pk, err := parsePKHeader(s)
		if err != nil {
			return
		}
		// What PartitionKey.String writes parses back to the same key
		// (when the key is valid: not over lethe's length limit, which
		// a header no longer than the limit cannot pass).
		if len(s) > lethe.MaxPartitionKeyLength {
			return
		}
		back, err := parsePKHeader(pk.String())
		if err != nil {
			t.Fatalf("%q parsed to %s, which does not parse: %v", s, pk.String(), err)
		}
		if back != pk {
			t.Fatalf("%q parsed to %s, which parses to %s", s, pk.String(), back.String())
		}
	})
}

func FuzzAuthHeader(f *testing.F) {
	good, _ := SignRequest(EmulatorKey, "GET", "dbs", "", "Tue, 01 Jan 2030 00:00:00 GMT")
	for _, s := range []string{good, "", "type=master&ver=1.0&sig=", "type%3Dmaster%26ver%3D1.0%26sig%3D%2B%2F%3D", "a=b", "%", "type=aad&ver=1.0&sig=x", "type=master&type=master"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := parseAuthHeader(s)
		set := 0
		for _, b := range []bool{len(tok.sig) > 0, tok.aad != "", tok.resource != ""} {
			if b {
				set++
			}
		}
		if err == nil && (set != 1 || tok.sig != nil && len(tok.sig) != 32) {
			t.Fatalf("%q: parsed to %+v", s, tok)
		}
	})
}

func FuzzJSONScan(f *testing.F) {
	for _, s := range []string{`{}`, `{"id":"1","_rid":"x","_self":1,"_attachments":{"a":[1,"]"]}}`, `{"a":"\"","b":[{}]}`, ` { "\u005frid" : null } `,
		`{"a":`, `{"a" 1}`, `[1]`, `{"a":1,}`, `{"a":1}}`, `{"a":tru}`, `{"_x":"\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		ms, ok := topMembers(doc)
		for _, m := range ms {
			if !(m.nameStart < m.nameEnd && m.nameEnd <= m.valStart && m.valStart < m.valEnd && m.valEnd <= len(doc)) {
				t.Fatalf("bad member %+v in %q", m, doc)
			}
		}
		out := stripFrontProperties(doc)
		_, _ = stringMember(doc, "id")
		if !ok || !json.Valid(doc) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("stripping %q gave invalid JSON %q", doc, out)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(out, &m) == nil {
			for k := range frontProperties {
				if _, ok := m[k]; ok {
					t.Fatalf("stripping %q kept %s: %q", doc, k, out)
				}
			}
		}
		with := withSystemProperties(out, "rid", "self")
		if !json.Valid(with) {
			t.Fatalf("adding to %q gave invalid JSON %q", out, with)
		}
	})
}

var fuzzHandler = sync.OnceValue(func() *Handler {
	h, err := New(Config{Reaper: lethe.ReaperOptions{Disabled: true}})
	if err != nil {
		panic(err)
	}
	db := &database{id: "db", rid: databaseRID("db"), collTS: map[string]int64{}}
	db.store, err = lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, p := range []lethe.ContainerProperties{
		{ID: "c", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}, DefaultTimeToLive: -1,
			ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 1000}},
		{ID: "flat"},
		{ID: "h", PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/a", "/b"}}},
	} {
		c, err := db.store.CreateContainer(ctx, p)
		if err != nil {
			panic(err)
		}
		_, _ = c.UpsertItem(ctx, lethe.NewPartitionKeyString("x"), []byte(`{"id":"1","pk":"x"}`), nil)
	}
	h.dbs["db"] = db
	return h
})

// FuzzServeHTTP sends signed requests of any path, headers and body to a
// handler: none may panic or answer 500. Creating and deleting databases
// is left out, so that the fuzzer does not open thousands of stores.
func FuzzServeHTTP(f *testing.F) {
	f.Add(uint8(0), "/dbs/db/colls/c/docs", `["x"]`, "application/json", "", []byte(`{"id":"2","pk":"x"}`))
	f.Add(uint8(0), "/dbs/db/colls/c/docs", ``, "application/query+json", "", []byte(`{"query":"SELECT * FROM c WHERE c.id = @id","parameters":[{"name":"@id","value":"1"}]}`))
	f.Add(uint8(1), "/dbs/db/colls/c/docs/1", `["x"]`, "", "", []byte(nil))
	f.Add(uint8(2), "/dbs/db/colls/c/docs/1", `["x"]`, "application/json", `"0000000000000001"`, []byte(`{"id":"1","pk":"x","ttl":5}`))
	f.Add(uint8(3), "/dbs/db/colls/flat/docs/1", `[{}]`, "", "*", []byte(nil))
	f.Add(uint8(2), "/dbs/db/colls/c", ``, "application/json", "", []byte(`{"id":"c","defaultTtl":10,"partitionKey":{"paths":["/pk"]}}`))
	f.Add(uint8(0), "/dbs/db/colls", ``, "application/json", "", []byte(`{"id":"new","partitionKey":{"paths":["/a","/b"],"kind":"MultiHash"}}`))
	f.Add(uint8(1), "/dbs/db/colls/h/pkranges", ``, "", `"1"`, []byte(nil))
	f.Add(uint8(0), "/dbs/db/colls/h/docs", `["a"]`, "application/query+json", "", []byte(`{"query":"SELECT VALUE COUNT(1) FROM c"}`))
	f.Add(uint8(4), "/dbs/db/colls/c/docs/1", `["x"]`, "application/json", "", []byte(`[]`))
	// PATCH (method 4) on a document.
	f.Add(uint8(4), "/dbs/db/colls/c/docs/1", `["x"]`, "application/json", "", []byte(`{"operations":[{"op":"set","path":"/a","value":[1,{"b":null}]},{"op":"incr","path":"/n","value":2.5},{"op":"move","from":"/a","path":"/c"},{"op":"remove","path":"/c/0"}]}`))
	f.Add(uint8(4), "/dbs/db/colls/c/docs/1", `["x"]`, "application/json", "", []byte(`{"condition":"FROM c WHERE c.pk = 'x'","operations":[{"op":"add","path":"/ttl","value":100},{"op":"replace","path":"/pk","value":"y"}]}`))
	f.Add(uint8(11), "/dbs/db/colls/flat/docs/1", `[{}]`, "application/json", `"0000000000000001"`, []byte(`[{"op":"incr","path":"/n","value":-9223372036854775808},{"op":"add","path":"/l/-","value":1}]`))
	// Transactional batches (POST with bit 64: the batch headers; bit 32:
	// Prefer: return=minimal).
	f.Add(uint8(70), "/dbs/db/colls/c/docs", `["x"]`, "application/json", "", []byte(`[{"operationType":"Create","resourceBody":{"id":"b1","pk":"x","_rid":"r"}},{"operationType":"Read","id":"1"},{"operationType":"Patch","id":"1","resourceBody":{"operations":[{"op":"set","path":"/z","value":1}]}},{"operationType":"Delete","id":"b1"}]`))
	f.Add(uint8(98), "/dbs/db/colls/c/docs", `["x"]`, "application/json", "", []byte(`[{"operationType":"Upsert","ifMatch":"\"0000000000000001\"","resourceBody":{"id":"1","pk":"x"}},{"operationType":"Replace","id":"1","partitionKey":"[\"x\"]","resourceBody":{"id":"1","pk":"x","ttl":3}}]`))
	f.Add(uint8(70), "/dbs/db/colls/h/docs", `["a","b"]`, "application/json", "", []byte(`[{"operationType":"Create","resourceBody":{"id":"1","a":"a","b":"b"}},{"operationType":"Create","resourceBody":{"id":"1","a":"a","b":"b"}}]`))
	f.Add(uint8(17), "/dbs/db/colls/c/docs", ``, "", "*", []byte(nil))
	f.Add(uint8(25), "/dbs/db/colls/c/docs", `["x"]`, "Mon, 02 Jan 2006 15:04:05 GMT", "", []byte(nil))
	f.Add(uint8(17), "/dbs/db/colls/c/docs", ``, "", `"AQFjAQAAAg"`, []byte(nil))
	f.Add(uint8(70), "/dbs/db/colls/flat/docs", ``, "application/json", "", []byte(`[{"operationType":"Patch","id":"1","resourceBody":[{"op":"frob","path":"/a"}]}]`))
	f.Fuzz(func(t *testing.T, m uint8, path, pk, ctype, ifMatch string, body []byte) {
		h := fuzzHandler()
		method := []string{"POST", "GET", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}[int(m)%7]
		rt, err := parsePath(path, routingGateway)
		if err == nil {
			switch tg := classify(rt); {
			case tg.kind == tDatabases && method == "POST" && !strings.Contains(ctype, "query"),
				tg.kind == tDatabase && method == "DELETE":
				return
			}
		}
		req := httptest.NewRequest(method, "/", bytes.NewReader(body))
		req.URL.RawPath = path
		if p, err := url.PathUnescape(path); err == nil {
			req.URL.Path = p
		} else {
			req.URL.Path = path
		}
		date := time.Now().UTC().Format(http.TimeFormat)
		auth, _ := SignRequest(EmulatorKey, method, rt.resType, rt.link, date)
		req.Header.Set("Authorization", auth)
		req.Header.Set("x-ms-date", date)
		for k, v := range map[string]string{"x-ms-documentdb-partitionkey": pk, "Content-Type": ctype, "If-Match": ifMatch} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		if m >= 128 {
			req.Header.Set("x-ms-documentdb-is-upsert", "true")
		}
		if m%16 == 15 {
			req.Header.Set("x-ms-max-item-count", "-1")
		}
		batch := m&64 != 0 && method == "POST"
		if batch {
			req.Header.Set("x-ms-cosmos-is-batch-request", "True")
			req.Header.Set("x-ms-cosmos-batch-atomic", "True")
		}
		if m&32 != 0 {
			req.Header.Set("Prefer", "return=minimal")
		}
		if method == "GET" && m&16 != 0 { // a change feed read: If-Match's value is the continuation
			req.Header.Set("A-IM", []string{"Incremental Feed", "Full-Fidelity Feed"}[m>>3&1])
			req.Header.Del("If-Match")
			req.Header.Set("If-None-Match", ifMatch)
			if ctype != "" {
				req.Header.Set("If-Modified-Since", ctype)
			}
		}
		// A patch or batch that is not answered 200 changes nothing: item
		// 1 of container c stays as it was (unless it has a ttl, by which
		// it may expire meanwhile).
		var before []byte
		if batch || method == "PATCH" {
			before = fuzzItem(h)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %q: %d %s", method, path, w.Code, w.Body.String())
		}
		if before != nil && w.Code != http.StatusOK && !bytes.Contains(before, []byte(`"ttl"`)) {
			if after := fuzzItem(h); !bytes.Equal(before, after) {
				t.Fatalf("%s %q answered %d %s, and item 1 changed from %s to %s", method, path, w.Code, w.Body.String(), before, after)
			}
		}
	})
}

// fuzzItem returns item 1 of the fuzz handler's container c ("missing"
// when it does not exist).
func fuzzItem(h *Handler) []byte {
	c, err := h.dbs["db"].store.Container("c")
	if err != nil {
		return []byte("missing container")
	}
	r, err := c.ReadItem(context.Background(), lethe.NewPartitionKeyString("x"), "1", nil)
	if err != nil {
		return []byte("missing")
	}
	return r.Value
}

// FuzzResourceToken: the resource token reader never panics, and accepts
// exactly the tokens the handler minted (anything it accepts, it would
// mint again byte for byte).
func FuzzResourceToken(f *testing.F) {
	h, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	defer h.Close()
	good := strings.TrimPrefix(h.mintResourceToken(tokenClaims{DB: "db", User: "u", Perm: "p", Nonce: "n", Exp: 1 << 40}), "type=resource&ver=1.0&sig=")
	for _, s := range []string{good, "", ".", "a.b", good + "x", strings.Replace(good, ".", "..", 1), "e30.e30"} {
		f.Add(s)
	}
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, tok string) {
		c, ae := h.verifyResourceToken(tok, now)
		if ae != nil {
			if ae.status != 401 {
				t.Fatalf("%q: status %d", tok, ae.status)
			}
			return
		}
		if again := strings.TrimPrefix(h.mintResourceToken(c), "type=resource&ver=1.0&sig="); again != tok {
			t.Fatalf("accepted %q, which mints as %q", tok, again)
		}
	})
}
