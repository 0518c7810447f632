package cosmosrest_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestContainerWithoutPartitionKey: a container created without a
// partition key (or with no paths) comes back, to a client of an API
// version before the partition key migration (2018-12-31), without
// partitionKey, as the service writes it (the legacy Python SDK, at
// 2018-09-17, fails on "paths": [] with "Unsupported paths count"); to a
// later one with the system's partition key, /_partitionKey with
// systemKey, as the service (and the emulator, in the .NET SDK's
// ReadNonPartitionItemAsync) gives it: @azure/cosmos needs it for bulk on
// such a container ("Unexpected undefined Partition Key Found."). One with
// a partition key keeps it.
func TestContainerWithoutPartitionKey(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	const legacy, current = "2018-09-17", "2020-11-05"
	system := map[string]any{"paths": []any{"/_partitionKey"}, "kind": "Hash", "systemKey": true}
	tests := []struct {
		body    map[string]any
		version string
		want    any // the partitionKey read back, nil for none
	}{
		{map[string]any{"id": "none"}, legacy, nil},
		{map[string]any{"id": "empty", "partitionKey": map[string]any{"paths": []string{}, "kind": "Hash"}}, legacy, nil},
		{map[string]any{"id": "none2"}, current, system},
		{map[string]any{"id": "empty2", "partitionKey": map[string]any{"paths": []string{}, "kind": "Hash"}}, current, system},
		// What such a client sends back is no partition key.
		{map[string]any{"id": "system", "partitionKey": system}, current, system},
		{map[string]any{"id": "system2", "partitionKey": system}, legacy, nil},
		{map[string]any{"id": "pk", "partitionKey": map[string]any{"paths": []string{"/pk"}}}, legacy, map[string]any{"paths": []any{"/pk"}, "kind": "Hash", "version": 2.0}},
		{map[string]any{"id": "pk2", "partitionKey": map[string]any{"paths": []string{"/pk"}}}, current, map[string]any{"paths": []any{"/pk"}, "kind": "Hash", "version": 2.0}},
	}
	for _, tt := range tests {
		id := tt.body["id"].(string)
		v := []string{"x-ms-version", tt.version}
		for _, r := range []response{
			must(t, c.do("POST", "/dbs/db/colls", tt.body, v...), 201),
			must(t, c.do("GET", "/dbs/db/colls/"+id, nil, v...), 200),
		} {
			if got := r.json(t)["partitionKey"]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s at %s: partitionKey %v, want %v", id, tt.version, got, tt.want)
			}
		}
	}
	// Replaced with what it read, it stays without one.
	m := must(t, c.do("GET", "/dbs/db/colls/none2", nil), 200).json(t)
	must(t, c.do("PUT", "/dbs/db/colls/none2", m), 200)
	if got := must(t, c.do("GET", "/dbs/db/colls/none2", nil, "x-ms-version", legacy), 200).json(t)["partitionKey"]; got != nil {
		t.Errorf("replaced with the system's partition key: partitionKey %v, want none", got)
	}
	// Documents of the container without one are served as before, and
	// by the empty partition key the system's key gives them.
	must(t, c.do("POST", "/dbs/db/colls/none/docs", map[string]any{"id": "a"}, "x-ms-documentdb-partitionkey", "[{}]"), 201)
	must(t, c.do("GET", "/dbs/db/colls/none/docs/a", nil, "x-ms-documentdb-partitionkey", "[{}]"), 200)
	must(t, c.do("POST", "/dbs/db/colls/none/docs", map[string]any{"id": "b"}, "x-ms-documentdb-partitionkey", "[]"), 201)
	must(t, c.do("GET", "/dbs/db/colls/none/docs/b", nil, "x-ms-documentdb-partitionkey", "[]"), 200)
	bulk := `[{"operationType":"Create","partitionKey":"[]","resourceBody":{"id":"c"}}]`
	r := must(t, c.do("POST", "/dbs/db/colls/none/docs", bulk, "x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "False"), 200)
	if !strings.Contains(string(r.body), `"statusCode":201`) {
		t.Errorf("bulk create with the empty partition key: %s", r.body)
	}
}

// TestIndexTransformationProgress: a container's create, read and replace
// say its indexing policy's transformation is done (100), as the
// service's do once it is; the JS SDK's container specs look for the
// header.
func TestIndexTransformationProgress(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	def := map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}
	for name, r := range map[string]response{
		"create": must(t, c.do("POST", "/dbs/db/colls", def), 201),
		"read":   must(t, c.do("GET", "/dbs/db/colls/c", nil), 200),
	} {
		if got := r.header.Get("x-ms-documentdb-collection-index-transformation-progress"); got != "100" {
			t.Errorf("%s: progress %q, want 100", name, got)
		}
	}
	def["indexingPolicy"] = map[string]any{"excludedPaths": []any{map[string]any{"path": "/a/?"}}}
	if got := must(t, c.do("PUT", "/dbs/db/colls/c", def), 200).header.Get("x-ms-documentdb-collection-index-transformation-progress"); got != "100" {
		t.Errorf("replace: progress %q, want 100", got)
	}
}

// TestDefaultTTLNull: defaultTtl null is refused on a create and on a
// replace, as the service refuses it (valid values are -1 and positive
// numbers of seconds); absent is TTL off.
func TestDefaultTTLNull(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	r := c.do("POST", "/dbs/db/colls", `{"id":"c","defaultTtl":null,"partitionKey":{"paths":["/pk"]}}`)
	if r.status != 400 || !strings.Contains(string(r.body), "defaultTtl 'null' is invalid") {
		t.Errorf("create: %d %s", r.status, r.body)
	}
	must(t, c.do("GET", "/dbs/db/colls/c", nil), 404)
	must(t, c.do("POST", "/dbs/db/colls", `{"id":"c","defaultTtl":5,"partitionKey":{"paths":["/pk"]}}`), 201)
	must(t, c.do("PUT", "/dbs/db/colls/c", `{"id":"c","defaultTtl":null,"partitionKey":{"paths":["/pk"]}}`), 400)
	if m := must(t, c.do("GET", "/dbs/db/colls/c", nil), 200).json(t); m["defaultTtl"] != 5.0 {
		t.Errorf("after a refused replace: defaultTtl %v", m["defaultTtl"])
	}
}

// TestIndexingPolicyServiceDefaults: the service excludes /"_etag"/? from
// every consistent indexing policy, given or not, after the paths given
// (the JS SDK's specs count one excluded path for {} and for
// includedPaths alone, two for one excluded path); the legacy root path
// "/" is read as "/*" (the JS SDK's aggregate and cross-partition specs
// create their containers with it).
func TestIndexingPolicyServiceDefaults(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	tests := []struct {
		name, policy string
		inc, exc     string
	}{
		{"none given", ``, `[{"path":"/*"}]`, `[{"path":"/\"_etag\"/?"}]`},
		{"empty", `{}`, `[{"path":"/*"}]`, `[{"path":"/\"_etag\"/?"}]`},
		{"included only", `{"includedPaths":[{"path":"/*"}]}`, `[{"path":"/*"}]`, `[{"path":"/\"_etag\"/?"}]`},
		{"excluded", `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"systemMetadata\"/*"}]}`,
			`[{"path":"/*"}]`, `[{"path":"/\"systemMetadata\"/*"},{"path":"/\"_etag\"/?"}]`},
		{"etag given", `{"excludedPaths":[{"path":"/\"_etag\"/?"},{"path":"/a/?"}]}`,
			`[]`, `[{"path":"/\"_etag\"/?"},{"path":"/a/?"}]`},
		{"legacy root", `{"includedPaths":[{"path":"/","indexes":[{"kind":"Range","dataType":"Number","precision":-1}]}]}`,
			`[{"path":"/*"}]`, `[{"path":"/\"_etag\"/?"}]`},
		{"none mode", `{"indexingMode":"none","automatic":false}`, `[]`, `[]`},
	}
	for i, tt := range tests {
		body := `{"id":"c` + string(rune('a'+i)) + `","partitionKey":{"paths":["/pk"]}`
		if tt.policy != "" {
			body += `,"indexingPolicy":` + tt.policy
		}
		r := c.do("POST", "/dbs/db/colls", body+"}")
		if r.status != 201 {
			t.Errorf("%s: %d %s", tt.name, r.status, r.body)
			continue
		}
		var m struct {
			IndexingPolicy struct{ IncludedPaths, ExcludedPaths json.RawMessage }
		}
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatal(err)
		}
		if string(m.IndexingPolicy.IncludedPaths) != tt.inc || string(m.IndexingPolicy.ExcludedPaths) != tt.exc {
			t.Errorf("%s: included %s, excluded %s; want %s, %s", tt.name, m.IndexingPolicy.IncludedPaths, m.IndexingPolicy.ExcludedPaths, tt.inc, tt.exc)
		}
	}
}

// TestDocumentETagQuoted: a document's body carries its _etag in double
// quotes, the very string of its etag header and of every other
// resource's body (the service's "_etag":"\"…\""), on every path that
// returns documents; sending it back in If-Match works.
func TestDocumentETagQuoted(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	pk := []string{"x-ms-documentdb-partitionkey", `["a"]`}
	created := must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "d", "pk": "a"}, pk...), 201)
	etag := created.header.Get("etag")
	if !strings.HasPrefix(etag, `"`) || created.json(t)["_etag"] != etag {
		t.Errorf("created: etag header %q, body %s", etag, created.body)
	}
	read := must(t, c.do("GET", "/dbs/db/colls/c/docs/d", nil, pk...), 200)
	if read.json(t)["_etag"] != etag || read.header.Get("etag") != etag {
		t.Errorf("read: etag header %q, body %s", read.header.Get("etag"), read.body)
	}
	for name, r := range map[string]response{
		"feed":        must(t, c.do("GET", "/dbs/db/colls/c/docs", nil), 200),
		"query":       must(t, c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, pk...), 200),
		"change feed": must(t, c.do("GET", "/dbs/db/colls/c/docs", nil, "A-IM", "Incremental feed", "x-ms-documentdb-partitionkeyrangeid", "0"), 200),
	} {
		docs := documents(t, r, "Documents")
		var d map[string]any
		if len(docs) != 1 || json.Unmarshal(docs[0], &d) != nil || d["_etag"] != etag {
			t.Errorf("%s: %s, want _etag %s", name, r.body, etag)
		}
	}
	replaced := must(t, c.do("PUT", "/dbs/db/colls/c/docs/d", map[string]any{"id": "d", "pk": "a", "n": 1}, append(pk, "If-Match", etag)...), 200)
	if e := replaced.json(t)["_etag"]; e != replaced.header.Get("etag") || e == etag {
		t.Errorf("replaced: etag header %q, body %s", replaced.header.Get("etag"), replaced.body)
	}
	must(t, c.do("PUT", "/dbs/db/colls/c/docs/d", map[string]any{"id": "d", "pk": "a"}, append(pk, "If-Match", etag)...), 412)
}

// TestSpellingAsSent: a trigger's triggerType and triggerOperation and a
// permission's permissionMode come back as the client spelled them (the
// JS SDK sends "pre", "all"), as the service returns them, and keep their
// meaning.
func TestSpellingAsSent(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	trig := map[string]any{"id": "stamp", "triggerType": "pre", "triggerOperation": "create",
		"body": "function () { var r = getContext().getRequest(); var d = r.getBody(); d.stamped = true; r.setBody(d); }"}
	for _, r := range []response{
		must(t, c.do("POST", "/dbs/db/colls/c/triggers", trig), 201),
		must(t, c.do("GET", "/dbs/db/colls/c/triggers/stamp", nil), 200),
	} {
		if m := r.json(t); m["triggerType"] != "pre" || m["triggerOperation"] != "create" {
			t.Errorf("trigger: %s", r.body)
		}
	}
	doc := must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "d", "pk": "a"},
		"x-ms-documentdb-partitionkey", `["a"]`, "x-ms-documentdb-pre-trigger-include", "stamp"), 201)
	if doc.json(t)["stamped"] != true {
		t.Errorf("the trigger did not run: %s", doc.body)
	}

	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "u"}), 201)
	perm := map[string]any{"id": "p", "permissionMode": "read", "resource": "dbs/db/colls/c"}
	for _, r := range []response{
		must(t, c.do("POST", "/dbs/db/users/u/permissions", perm), 201),
		must(t, c.do("GET", "/dbs/db/users/u/permissions/p", nil), 200),
	} {
		if m := r.json(t); m["permissionMode"] != "read" {
			t.Errorf("permission: %s", r.body)
		}
	}
	token := must(t, c.do("GET", "/dbs/db/users/u/permissions/p", nil), 200).json(t)["_token"].(string)
	must(t, c.do("GET", "/dbs/db/colls/c/docs/d", nil, "Authorization", token, "x-ms-documentdb-partitionkey", `["a"]`), 200)
	must(t, c.do("DELETE", "/dbs/db/colls/c/docs/d", nil, "Authorization", token, "x-ms-documentdb-partitionkey", `["a"]`), 403)
}

// TestBadContinuationToken: a continuation token the front cannot resume
// from is a 400 whose message holds the service's "Invalid Continuation
// Token", which the SDKs' tests look for, on every feed that takes one.
func TestBadContinuationToken(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "a", "pk": "a"}, "x-ms-documentdb-partitionkey", `["a"]`), 201)
	// A full page's token after which nothing follows, for another query.
	pk := []string{"x-ms-documentdb-partitionkey", `["a"]`}
	full := must(t, c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, append(pk, "x-ms-max-item-count", "1")...), 200).header.Get("x-ms-continuation")
	tests := []struct {
		name string
		r    response
	}{
		{"malformed, query", c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, append(pk, "x-ms-continuation", "garbage")...)},
		{"malformed, feed", c.do("GET", "/dbs/db/colls/c/docs", nil, append(pk, "x-ms-continuation", "garbage")...)},
		{"another query's end", c.query("/dbs/db/colls/c", "SELECT * FROM c WHERE c.pk = 'a'", nil, append(pk, "x-ms-continuation", full)...)},
		{"metadata query", c.do("POST", "/dbs", map[string]any{"query": "SELECT * FROM r"},
			"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True", "x-ms-continuation", "x")},
	}
	if full == "" {
		t.Fatal("no continuation on a full page")
	}
	for _, tt := range tests {
		if tt.r.status != 400 || !strings.Contains(string(tt.r.body), "Invalid Continuation Token") {
			t.Errorf("%s: %d %s", tt.name, tt.r.status, tt.r.body)
		}
	}
}

// TestRequestTooLargeMessage: a 413 carries the gateway's form of the
// message, `Message: {"Errors":["Request size is too large"]}` and a line
// end, which the JS SDK's bulk tests look for: for a bulk request over 4
// MB, refused before it is read, and for an item over lethe's 2 MB.
func TestRequestTooLargeMessage(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	big := strings.Repeat("x", 5<<20)
	bulk := `[{"operationType":"Create","partitionKey":"[\"a\"]","resourceBody":{"id":"1","pk":"a","v":"` + big + `"}}]`
	item := `{"id":"2","pk":"a","v":"` + big[:(2<<20)+10] + `"}`
	for name, r := range map[string]response{
		"bulk": c.do("POST", "/dbs/db/colls/c/docs", bulk, "x-ms-cosmos-is-batch-request", "True"),
		"item": c.do("POST", "/dbs/db/colls/c/docs", item, "x-ms-documentdb-partitionkey", `["a"]`),
	} {
		var e struct{ Message string }
		if err := json.Unmarshal(r.body, &e); err != nil || r.status != 413 ||
			!strings.HasPrefix(e.Message, `Message: {"Errors":["Request size is too large"]}`+"\r\nActivityId: "+r.header.Get("x-ms-activity-id")+", lethe: ") {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
}

// TestOfferReplaceWrongRID: an offer's replace whose body names another
// _rid is the service's 400 and changes nothing; its own _rid, or none,
// is replaced.
func TestOfferReplaceWrongRID(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	coll := must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}},
		"x-ms-offer-throughput", "400"), 201).json(t)
	offer := offerOf(t, c, coll["_rid"].(string))
	path := "/" + strings.TrimSuffix(offer["_self"].(string), "/")
	offer["content"].(map[string]any)["offerThroughput"] = 500
	good := offer["_rid"]
	offer["_rid"] = "NotAllowed"
	if r := c.do("PUT", path, offer); r.status != 400 || !strings.Contains(string(r.body), "NotAllowed") {
		t.Errorf("a wrong _rid: %d %s", r.status, r.body)
	}
	if th, _ := offerFigures(offerOf(t, c, coll["_rid"].(string))); th != 400 {
		t.Errorf("after the refusal: %v RU/s, want 400", th)
	}
	offer["_rid"] = good
	must(t, c.do("PUT", path, offer), 200)
	delete(offer, "_rid")
	offer["content"].(map[string]any)["offerThroughput"] = 600
	must(t, c.do("PUT", path, offer), 200)
	if th, _ := offerFigures(offerOf(t, c, coll["_rid"].(string))); th != 600 {
		t.Errorf("after the replaces: %v RU/s, want 600", th)
	}
}

// TestTokenChangesItsContainer: a resource token of a permission with All
// on a whole container may replace and delete that container, as the
// service allows; under Read, or on one partition key, it may not.
func TestTokenChangesItsContainer(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	def := map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}
	must(t, c.do("POST", "/dbs/db/colls", def), 201)
	token := func(id, mode string, pk any) string { // one user each: a user has one permission per resource
		must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": id}), 201)
		p := map[string]any{"id": "p", "permissionMode": mode, "resource": "dbs/db/colls/c"}
		if pk != nil {
			p["resourcePartitionKey"] = pk
		}
		return must(t, c.do("POST", "/dbs/db/users/"+id+"/permissions", p), 201).json(t)["_token"].(string)
	}
	read, onA, all := token("read", "Read", nil), token("a", "All", []any{"a"}), token("all", "All", nil)
	def["defaultTtl"] = 60
	for _, tok := range []string{read, onA} {
		must(t, c.do("PUT", "/dbs/db/colls/c", def, "Authorization", tok), 403)
		must(t, c.do("DELETE", "/dbs/db/colls/c", nil, "Authorization", tok), 403)
	}
	if m := must(t, c.do("PUT", "/dbs/db/colls/c", def, "Authorization", all), 200).json(t); m["defaultTtl"] != 60.0 {
		t.Errorf("replaced under All: %v", m)
	}
	must(t, c.do("DELETE", "/dbs/db/colls/c", nil, "Authorization", all), 204)
	must(t, c.do("GET", "/dbs/db/colls/c", nil), 404)
}

// TestNonPartitionedLastPage: in a container without a partition key, a
// full last page carries no continuation, as the service's (the JS SDK's
// specs count 12 pages where lethe gave 18); in a partitioned container
// it still does, and its continuation brings an empty page.
func TestNonPartitionedLastPage(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "flat"}), 201)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "pk", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	for i := range 4 {
		must(t, c.do("POST", "/dbs/db/colls/flat/docs", map[string]any{"id": strconv.Itoa(i)}, "x-ms-documentdb-partitionkey", "[{}]"), 201)
		must(t, c.do("POST", "/dbs/db/colls/pk/docs", map[string]any{"id": strconv.Itoa(i), "pk": "a"}, "x-ms-documentdb-partitionkey", `["a"]`), 201)
	}
	tests := []struct {
		coll, text string
		hdr        []string
		pages      []int
	}{
		{"/dbs/db/colls/flat", "SELECT * FROM c", nil, []int{2, 2}},
		{"/dbs/db/colls/flat", "", nil, []int{2, 2}},
		{"/dbs/db/colls/pk", "SELECT * FROM c", []string{"x-ms-documentdb-partitionkey", `["a"]`}, []int{2, 2, 0}},
	}
	for _, tt := range tests {
		_, pages := pageThrough(t, c, tt.coll, tt.text, append([]string{"x-ms-max-item-count", "2"}, tt.hdr...)...)
		if !slices.Equal(pages, tt.pages) {
			t.Errorf("%s %q: pages %v, want %v", tt.coll, tt.text, pages, tt.pages)
		}
	}
}

// TestSingleQuotedPartitionKeyPath: a hierarchical partition key path in
// the service's single quotes, /'level" 1*()'/'le/vel2', names the
// members level" 1*() and le/vel2 (it was a 400): its documents are
// created, read, and told apart by partition in their _rid.
func TestSingleQuotedPartitionKeyPath(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", `{"id":"c","partitionKey":{"paths":["/'level\" 1*()'/'le/vel2'"],"kind":"Hash"}}`), 201)
	rids := map[string]bool{}
	for _, v := range []string{"v", "w"} {
		pk := []string{"x-ms-documentdb-partitionkey", `["` + v + `"]`}
		must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"1","level\" 1*()":{"le/vel2":"`+v+`"}}`, pk...), 201)
		r := must(t, c.do("GET", "/dbs/db/colls/c/docs/1", nil, pk...), 200).json(t)
		rids[r["_rid"].(string)] = true
	}
	if len(rids) != 2 {
		t.Errorf("the documents of two partitions have the _rids %v", rids)
	}
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"2","level\" 1*()":{"le/vel2":"v"}}`, "x-ms-documentdb-partitionkey", `["w"]`), 400)
}

// TestScriptBodyCheckedWhenRun: a stored procedure's or a trigger's body
// that is not JavaScript is stored, as the service stores it (the JS
// SDK's trigger specs create "serverScript() { … }"), and refused with
// 400 when it runs, a write it would run before changing nothing; a UDF's
// is still refused when stored.
func TestScriptBodyCheckedWhenRun(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	pk := []string{"x-ms-documentdb-partitionkey", `["a"]`}
	must(t, c.do("POST", "/dbs/db/colls/c/sprocs", map[string]any{"id": "bad", "body": "function ( {"}), 201)
	if r := c.do("POST", "/dbs/db/colls/c/sprocs/bad", `[]`, pk...); r.status != 400 || !strings.Contains(string(r.body), "SyntaxError") {
		t.Errorf("running it: %d %s", r.status, r.body)
	}
	trig := map[string]any{"id": "t", "body": "serverScript() { var x = 10; }", "triggerType": "Pre", "triggerOperation": "All"}
	must(t, c.do("POST", "/dbs/db/colls/c/triggers", trig), 201)
	withTrigger := append(slices.Clone(pk), "x-ms-documentdb-pre-trigger-include", "t")
	must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "d", "pk": "a"}, withTrigger...), 400)
	must(t, c.do("GET", "/dbs/db/colls/c/docs/d", nil, pk...), 404)
	trig["body"] = "function () { var x = 20; }"
	must(t, c.do("PUT", "/dbs/db/colls/c/triggers/t", trig), 200)
	must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": "d", "pk": "a"}, withTrigger...), 201)
	must(t, c.do("POST", "/dbs/db/colls/c/udfs", map[string]any{"id": "f", "body": "function ( {"}), 400)
}
