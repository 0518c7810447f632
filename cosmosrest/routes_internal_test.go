package cosmosrest

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRoutingTable walks the routing table: every kind the front serves
// has a row, each row ends with an operation that takes every request
// (so that each request meets one entry, which both serves it and says
// what a resource token needs), no operation stands behind one that
// takes all its requests, and a method is served exactly when the
// row's Allow header names it.
func TestRoutingTable(t *testing.T) {
	for k := tAccount; k < tUnsupported; k++ {
		rr := &routes[k]
		if len(rr.ops) == 0 {
			t.Errorf("kind %d has no row", k)
			continue
		}
		if last := rr.ops[len(rr.ops)-1]; last.method != "" || last.when != nil || last.serve != nil {
			t.Errorf("kind %d: the last operation does not take every request unserved: %+v", k, last)
		}
		for i, op := range rr.ops {
			for _, before := range rr.ops[:i] {
				if before.when == nil && (before.method == "" || before.method == op.method) {
					t.Errorf("kind %d: operation %d (%s) is behind one that takes all its requests", k, i, op.method)
				}
			}
		}
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"} {
			r := httptest.NewRequest(m, "/", nil)
			// A POST that is no query, plan or batch: every kind that
			// takes POST serves this one.
			named := strings.Contains(", "+rr.allow+", ", ", "+m+", ")
			if served := rr.pick(r).serve != nil; served != named && !(k == tConflicts && m == "POST") {
				t.Errorf("kind %d, %s: served %v, Allow %q", k, m, served, rr.allow)
			}
		}
	}
	for _, k := range []targetKind{tUnsupported, tUnknown} {
		if op := routes[k].pick(httptest.NewRequest("GET", "/", nil)); op.serve != nil || op.token.deny == "" {
			t.Errorf("kind %d: %+v, want no handler and no token", k, op)
		}
	}
}
