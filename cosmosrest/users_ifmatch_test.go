package cosmosrest_test

import (
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// A user or permission is replaced or deleted on an If-Match that names
// its ETag (with or without quotes, or "*"); on another ETag the request
// is answered 412 and the resource is as it was.
func TestUserPermissionIfMatch(t *testing.T) {
	const (
		user = "/dbs/db/users/ada"
		perm = user + "/permissions/p"
	)
	userBody := map[string]any{"id": "ada"}
	permBody := map[string]any{"id": "p", "permissionMode": "All", "resource": "dbs/db/colls/c"}
	for _, tc := range []struct {
		name, method, path string
		body               map[string]any
		ifMatch            func(etag string) string
		want               int
	}{
		{"replace user, its ETag", "PUT", user, userBody, func(e string) string { return e }, 200},
		{"replace user, unquoted", "PUT", user, userBody, func(e string) string { return e[1 : len(e)-1] }, 200},
		{"replace user, any", "PUT", user, userBody, func(string) string { return "*" }, 200},
		{"replace user, stale", "PUT", user, userBody, func(string) string { return `"0000000000000000"` }, 412},
		{"delete user, its ETag", "DELETE", user, nil, func(e string) string { return e }, 204},
		{"delete user, stale", "DELETE", user, nil, func(string) string { return `"0000000000000000"` }, 412},
		{"replace permission, its ETag", "PUT", perm, permBody, func(e string) string { return e }, 200},
		{"replace permission, stale", "PUT", perm, permBody, func(string) string { return `"0000000000000000"` }, 412},
		{"delete permission, its ETag", "DELETE", perm, nil, func(e string) string { return e }, 204},
		{"delete permission, stale", "DELETE", perm, nil, func(string) string { return `"0000000000000000"` }, 412},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := testServer(t, cosmosrest.Config{})
			createDBColl(t, c)
			must(t, c.do("POST", "/dbs/db/users", map[string]any{"id": "ada"}), 201)
			must(t, c.do("POST", user+"/permissions", map[string]any{"id": "p", "permissionMode": "Read", "resource": "dbs/db/colls/c"}), 201)
			before := must(t, c.do("GET", tc.path, nil), 200).json(t)
			var body any
			if tc.body != nil {
				body = tc.body
			}
			must(t, c.do(tc.method, tc.path, body, "If-Match", tc.ifMatch(before["_etag"].(string))), tc.want)
			if tc.want != 412 {
				return
			}
			after := must(t, c.do("GET", tc.path, nil), 200).json(t)
			for _, k := range []string{"_ts", "_etag", "permissionMode"} {
				if after[k] != before[k] {
					t.Errorf("the refused request changed %s from %v to %v", k, before[k], after[k])
				}
			}
		})
	}
}
