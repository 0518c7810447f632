package cosmosrest_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestPartitionKeyDelete: POST …/operations/partitionkeydelete, signed as a
// request on the container as the SDKs sign it, deletes the items of the
// partition its header names and no others; without the header it is 400;
// a resource token reaches only its own partition, and only with All.
func TestPartitionKeyDelete(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	for _, pk := range []string{"a", "b"} {
		for i := range 3 {
			must(t, c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`{"id":"%d","pk":%q}`, i, pk), "x-ms-documentdb-partitionkey", fmt.Sprintf(`[%q]`, pk)), 201)
		}
	}
	const path, link = "/dbs/db/colls/c/operations/partitionkeydelete", "dbs/db/colls/c"
	must(t, c.doAs("POST", path, "colls", link, nil), 400)
	r := must(t, c.doAs("POST", path, "colls", link, nil, "x-ms-documentdb-partitionkey", `["a"]`), 200)
	if r.header.Get("x-ms-request-charge") == "" || r.header.Get("x-ms-request-charge") == "0" {
		t.Errorf("no request charge: %v", r.header)
	}
	for i := range 3 {
		must(t, c.do("GET", fmt.Sprintf("/dbs/db/colls/c/docs/%d", i), nil, "x-ms-documentdb-partitionkey", `["a"]`), 404)
		must(t, c.do("GET", fmt.Sprintf("/dbs/db/colls/c/docs/%d", i), nil, "x-ms-documentdb-partitionkey", `["b"]`), 200)
	}
	// Signed over the path as a resource of its own, as no SDK signs it: 401.
	must(t, c.doAs("POST", path, "operations", strings.TrimPrefix(path, "/"), nil, "x-ms-documentdb-partitionkey", `["b"]`), 401)

	for _, mode := range []string{"Read", "All"} {
		must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": mode}), 201)
		p := must(t, c.do("POST", "/dbs/db/users/"+mode+"/permissions", map[string]any{"id": mode, "permissionMode": mode, "resource": "dbs/db/colls/c", "resourcePartitionKey": []any{"b"}}), 201).json(t)
		auth := url.QueryEscape(p["_token"].(string))
		for _, tc := range []struct {
			pk     string
			status int
		}{{`["a"]`, 403}, {`["b"]`, map[string]int{"Read": 403, "All": 200}[mode]}} {
			got := c.doAs("POST", path, "colls", link, nil, "Authorization", auth, "x-ms-documentdb-partitionkey", tc.pk)
			if got.status != tc.status {
				t.Errorf("a %s token on [\"b\"], partition %s: %d %s, want %d", mode, tc.pk, got.status, got.body, tc.status)
			}
		}
	}
	must(t, c.do("GET", "/dbs/db/colls/c/docs/0", nil, "x-ms-documentdb-partitionkey", `["b"]`), 404)

	// A token on one document reaches that document, not its partition.
	must(t, c.do("POST", "/dbs/db/colls/c/docs", `{"id":"9","pk":"b"}`, "x-ms-documentdb-partitionkey", `["b"]`), 201)
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "doc"}), 201)
	p := must(t, c.do("POST", "/dbs/db/users/doc/permissions", map[string]any{"id": "d", "permissionMode": "All", "resource": "dbs/db/colls/c/docs/9", "resourcePartitionKey": []any{"b"}}), 201).json(t)
	got := c.doAs("POST", path, "colls", link, nil, "Authorization", url.QueryEscape(p["_token"].(string)), "x-ms-documentdb-partitionkey", `["b"]`)
	if got.status != 403 || !strings.Contains(string(got.body), "one document") {
		t.Errorf("a token on one document: %d %s, want 403", got.status, got.body)
	}
	must(t, c.do("GET", "/dbs/db/colls/c/docs/9", nil, "x-ms-documentdb-partitionkey", `["b"]`), 200)

	// By resource ids, signed over the container's id as the legacy SDKs sign it.
	coll := must(t, c.do("GET", "/dbs/db/colls/c", nil), 200).json(t)
	self := strings.Trim(coll["_self"].(string), "/")
	crid := coll["_rid"].(string)
	must(t, c.doAs("POST", "/"+self+"/operations/partitionkeydelete", "colls", "partitionkeydelete", nil, "x-ms-documentdb-partitionkey", `["b"]`), 401)
	must(t, c.doAs("POST", "/"+self+"/operations/partitionkeydelete", "colls", strings.ToLower(crid), nil, "x-ms-documentdb-partitionkey", `["b"]`), 200)
	must(t, c.do("GET", "/dbs/db/colls/c/docs/9", nil, "x-ms-documentdb-partitionkey", `["b"]`), 404)

	// A permission on a database's resource id path is no server error.
	if r := c.do("POST", "/dbs/db/users/doc/permissions", map[string]any{"id": "x", "permissionMode": "Read", "resource": "dbs/AAAAAA=="}); r.status >= 500 {
		t.Errorf("a permission on dbs/AAAAAA==: %d %s", r.status, r.body)
	}
}
