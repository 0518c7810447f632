package cosmosrest_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestRewrittenQueryCost compares, side by side in one run, an ORDER BY
// query over N items, read whole, with the rewritten query of its service
// plan that an SDK sends each range (c._rid, the ORDER BY items and the
// item as payload), through the REST front. It runs only with
// LETHE_PLAN_BENCH=N:
//
//	LETHE_PLAN_BENCH=20000 go -C cosmosrest test -run TestRewrittenQueryCost -v .
func TestRewrittenQueryCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LETHE_PLAN_BENCH"))
	if n <= 0 {
		t.Skip("set LETHE_PLAN_BENCH to the number of items")
	}
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	for i := range n {
		must(t, c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`{"id":"%d","pk":"p%d","n":%d,"s":"some text of an item"}`, i, i%10, (i*7919)%n), "x-ms-documentdb-partitionkey", fmt.Sprintf(`["p%d"]`, i%10)), 201)
	}
	run := func(q string) time.Duration {
		start := time.Now()
		token, got := "", 0
		for {
			hdr := []string{"x-ms-documentdb-partitionkeyrangeid", "0", "x-ms-max-item-count", "-1"}
			if token != "" {
				hdr = append(hdr, "x-ms-continuation", token)
			}
			r := must(t, c.query("/dbs/db/colls/c", q, nil, hdr...), 200)
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
	var whole, rewritten time.Duration
	for range 3 {
		whole += run("SELECT * FROM c ORDER BY c.n")
		rewritten += run("SELECT c._rid, [{\"item\": c.n}] AS orderByItems, c AS payload\nFROM c\nWHERE (true)\nORDER BY c.n")
	}
	t.Logf("%d items, 3 runs each, alternating: whole %v, rewritten %v: %.2fx", n, whole/3, rewritten/3, float64(rewritten)/float64(whole))
}
