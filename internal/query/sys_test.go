package query

import (
	"context"
	"strings"
	"testing"
)

// TestSysProperties: a Doc that keeps "_ts" and "_etag" apart (Sys) is seen
// by every part of a query as if they were its last members.
func TestSysProperties(t *testing.T) {
	docs := []Doc{
		{ID: "a", JSON: []byte(`{"id":"a","n":2,"tags":[{"t":1}]}`), Sys: true, TS: 1700000002, ETag: "0000000000000002"},
		{ID: "b", JSON: []byte(`{"id":"b","n":1}`), Sys: true, TS: 1700000001, ETag: "0000000000000001"},
	}
	for _, tc := range []struct{ q, want string }{
		{`SELECT * FROM c WHERE c.id = "b"`, `{"id":"b","n":1,"_ts":1700000001,"_etag":"0000000000000001"}`},
		{`SELECT VALUE c FROM c WHERE c.id = "b"`, `{"id":"b","n":1,"_ts":1700000001,"_etag":"0000000000000001"}`},
		{`SELECT VALUE c._ts FROM c ORDER BY c._etag`, `1700000001 1700000002`},
		{`SELECT VALUE c.id FROM c WHERE c._ts > 1700000001`, `"a"`},
		{`SELECT VALUE c["_etag"] FROM c WHERE c.id = "a"`, `"0000000000000002"`},
		{`SELECT VALUE IS_DEFINED(c._etag) FROM c WHERE c.id = "a"`, `true`},
		{`SELECT c FROM c WHERE c.id = "b"`, `{"c":{"id":"b","n":1,"_ts":1700000001,"_etag":"0000000000000001"}}`},
		{`SELECT VALUE {"x": c} FROM c WHERE c.id = "b"`, `{"x":{"id":"b","n":1,"_ts":1700000001,"_etag":"0000000000000001"}}`},
		{`SELECT DISTINCT VALUE c FROM c WHERE c.id = "b"`, `{"id":"b","n":1,"_ts":1700000001,"_etag":"0000000000000001"}`},
		{`SELECT c.id, c._ts FROM c WHERE c.n = 2`, `{"id":"a","_ts":1700000002}`},
		{`SELECT * FROM t IN c.tags`, `{"t":1}`},           // a part of a document has no system properties
		{`SELECT VALUE t._ts FROM c JOIN t IN c.tags`, ``}, // nor does a joined value
		{`SELECT VALUE MAX(c._ts) FROM c`, `1700000002`},
		{`SELECT VALUE ARRAY(SELECT VALUE c._etag FROM t IN c.tags) FROM c WHERE c.id = "a"`, `["0000000000000002"]`},
		{`SELECT VALUE EXISTS(SELECT VALUE 1 FROM t IN c.tags WHERE c._ts > 1700000001) FROM c`, `true false`},
		{`SELECT c.n, MAX(c._ts) AS ts FROM c GROUP BY c.n`, `{"n":1,"ts":1700000001} {"n":2,"ts":1700000002}`},
		{`SELECT VALUE (SELECT VALUE x FROM x IN [c]) FROM c WHERE c.id = "b"`, `{"id":"b","n":1,"_ts":1700000001,"_etag":"0000000000000001"}`},
	} {
		q, err := Parse(tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		res, err := Exec(context.Background(), q, nil, docs, testNow)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		var got []string
		for _, it := range res.Items {
			got = append(got, string(it))
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.q, s, tc.want)
		}
	}
}
