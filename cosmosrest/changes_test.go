package cosmosrest_test

import (
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestRefusedChangeKeepsUsers upserts a permission over one that exists,
// on a resource another permission of the user holds: the upsert drops
// the old permission before it finds the clash, and the refusal (409)
// puts it back.
func TestRefusedChangeKeepsUsers(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "d", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "ada"}), 201)
	must(t, c.do("POST", "/dbs/db/users/ada/permissions", map[string]any{"id": "p", "permissionMode": "Read", "resource": "dbs/db/colls/c"}), 201)
	must(t, c.do("POST", "/dbs/db/users/ada/permissions", map[string]any{"id": "q", "permissionMode": "Read", "resource": "dbs/db/colls/d"}), 201)
	must(t, c.do("POST", "/dbs/db/users/ada/permissions", map[string]any{"id": "p", "permissionMode": "All", "resource": "dbs/db/colls/d"}, "x-ms-documentdb-is-upsert", "True"), 409)
	if got := must(t, c.do("GET", "/dbs/db/users/ada/permissions/p", nil), 200).json(t); got["resource"] != "dbs/db/colls/c" || got["permissionMode"] != "Read" {
		t.Errorf("the refused upsert changed the permission: %v", got)
	}
}
