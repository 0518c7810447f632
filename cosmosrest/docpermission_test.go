package cosmosrest_test

import (
	"net/url"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestDocumentPermissionBySelf: a permission on a document of a
// partitioned container named by its _self needs no resourcePartitionKey,
// as the service's does not (@azure/cosmos's authorization spec makes one
// so): the resource id names one document, in one partition, and the
// token reaches that document alone, not its id in another partition. By
// name, the id alone is still refused: it names a document in every
// partition.
func TestDocumentPermissionBySelf(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	ridFixture(t, c)
	docSelf, _ := selfOf(t, c, "/dbs/db/colls/c/docs/d1", p1...)
	p2 := []string{"x-ms-documentdb-partitionkey", `["p2"]`}
	d2Self, _ := selfOf(t, c, "/dbs/db/colls/c/docs/d1", p2...)
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "w"}), 201)
	p := must(t, c.do("POST", "/dbs/db/users/w/permissions", map[string]any{"id": "p", "permissionMode": "All", "resource": docSelf}), 201).json(t)
	if _, ok := p["resourcePartitionKey"]; ok {
		t.Errorf("the permission has a resourcePartitionKey it was not given: %v", p)
	}
	tok := url.QueryEscape(p["_token"].(string))
	for _, tc := range []struct {
		name, method, path string
		hdr                []string
		status             int
	}{
		{"its document by name", "GET", "/dbs/db/colls/c/docs/d1", p1, 200},
		{"its document by resource id", "GET", "/" + docSelf, p1, 200},
		{"its id in another partition", "GET", "/dbs/db/colls/c/docs/d1", p2, 403},
		{"its id in another partition by resource id", "GET", "/" + d2Self, p2, 403},
		{"its id with no partition key", "GET", "/dbs/db/colls/c/docs/d1", nil, 403},
		{"the container's feed", "GET", "/dbs/db/colls/c/docs", p1, 403},
		{"a write of its document", "PUT", "/dbs/db/colls/c/docs/d1", p1, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.method == "PUT" {
				body = map[string]any{"id": "d1", "pk": "p1", "v": 2}
			}
			r := c.doRID(tc.method, tc.path, body, append([]string{"Authorization", tok}, tc.hdr...)...)
			if r.status != tc.status {
				t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.path, r.status, tc.status, r.body)
			}
		})
	}
	// Replaced on its path by name without a partition key, it is refused.
	r := c.do("PUT", "/dbs/db/users/w/permissions/p", map[string]any{"id": "p", "permissionMode": "All", "resource": "dbs/db/colls/c/docs/d1"})
	if r.status != 400 {
		t.Errorf("a document's permission by name without a partition key: %d, want 400: %s", r.status, r.body)
	}
}

// TestDocumentPermissionBySelfAfterRestart: a durable front keeps the
// document such a permission reaches: after a restart its token still reads
// that document and not its id in another partition.
func TestDocumentPermissionBySelfAfterRestart(t *testing.T) {
	dir := t.TempDir()
	h, err := cosmosrest.New(cosmosrest.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, c := serve(t, h)
	ridFixture(t, c)
	docSelf, _ := selfOf(t, c, "/dbs/db/colls/c/docs/d1", p1...)
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "w"}), 201)
	must(t, c.do("POST", "/dbs/db/users/w/permissions", map[string]any{"id": "p", "permissionMode": "Read", "resource": docSelf}), 201)
	c = restartFront(t, h, c, dir)
	tok := url.QueryEscape(must(t, c.do("GET", "/dbs/db/users/w/permissions/p", nil), 200).json(t)["_token"].(string))
	p2 := []string{"x-ms-documentdb-partitionkey", `["p2"]`}
	for _, tc := range []struct {
		hdr    []string
		status int
	}{{p1, 200}, {p2, 403}} {
		if r := c.do("GET", "/dbs/db/colls/c/docs/d1", nil, append([]string{"Authorization", tok}, tc.hdr...)...); r.status != tc.status {
			t.Errorf("after the restart, d1 under %v: %d, want %d: %s", tc.hdr, r.status, tc.status, r.body)
		}
	}
}
