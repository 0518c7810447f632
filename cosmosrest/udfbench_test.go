package cosmosrest_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestUDFQueryCost compares, side by side in one run, a query over N items
// calling a small UDF with the same expression written with built-in
// operators, through the REST front. It runs only with LETHE_UDF_BENCH=N:
//
//	LETHE_UDF_BENCH=100000 go -C cosmosrest test -run TestUDFQueryCost -v .
func TestUDFQueryCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LETHE_UDF_BENCH"))
	if n <= 0 {
		t.Skip("set LETHE_UDF_BENCH to the number of items")
	}
	c, _, _ := sprocServer(t, cosmosrest.Config{})
	for i := range n {
		must(t, c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`{"id":"%d","pk":"a","price":%d}`, i, i%1000), "x-ms-documentdb-partitionkey", `["a"]`), 201)
	}
	must(t, c.do("POST", "/dbs/db/colls/c/udfs", map[string]any{"id": "tax", "body": `function tax(x) { return x * 0.1; }`}), 201)
	run := func(q string) time.Duration {
		start := time.Now()
		token, got := "", 0
		for {
			hdr := []string{"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True", "x-ms-documentdb-partitionkey", `["a"]`, "x-ms-max-item-count", "-1"}
			if token != "" {
				hdr = append(hdr, "x-ms-continuation", token)
			}
			r := must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"query": q}, hdr...), 200)
			got += len(documents(t, r, "Documents"))
			if token = r.header.Get("x-ms-continuation"); token == "" {
				break
			}
		}
		if got != n {
			t.Fatalf("%s: %d results, want %d", q, got, n)
		}
		return time.Since(start)
	}
	var udf, builtin time.Duration
	for range 3 {
		builtin += run("SELECT VALUE c.price * 0.1 FROM c")
		udf += run("SELECT VALUE udf.tax(c.price) FROM c")
	}
	t.Logf("%d items, 3 runs each, alternating: built-in %v, UDF %v: %.1fx", n, builtin/3, udf/3, float64(udf)/float64(builtin))
}
