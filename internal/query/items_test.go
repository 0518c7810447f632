package query

import "testing"

func TestReturnsItems(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want bool
	}{
		{"SELECT * FROM c", true},
		{"SELECT * FROM root", true},
		{"SELECT DISTINCT TOP 3 * FROM c WHERE c.a > 1 ORDER BY c.a OFFSET 1 LIMIT 2", true},
		{"SELECT VALUE c FROM c", true},
		{"SELECT VALUE d FROM c AS d", true},
		{"SELECT c FROM c", false},         // {"c": item}
		{"SELECT c.id FROM c", false},      // a projection
		{"SELECT VALUE c.a FROM c", false}, // a member
		{"SELECT * FROM c.children", false},
		{"SELECT VALUE c FROM c JOIN t IN c.tags", false},
		{"SELECT VALUE COUNT(1) FROM c", false},
		{"SELECT c.a FROM c GROUP BY c.a", false},
		{"SELECT VALUE 1", false},
		{"SELECT VALUE (SELECT VALUE c FROM c IN x.a) FROM x", false},
	} {
		q, err := Parse(tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		if got := q.ReturnsItems(); got != tc.want {
			t.Errorf("%s: ReturnsItems() = %v, want %v", tc.q, got, tc.want)
		}
	}
}
