package cosmosrest_test

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// pageThrough reads a query (or, with text "", the read feed) of coll page
// by page, with the headers hdr, and returns the ids of its results and
// each page's size. Every page must have a charge, and its query metrics
// when asked for.
func pageThrough(t *testing.T, c *client, coll, text string, hdr ...string) (ids []string, pages []int) {
	t.Helper()
	token := ""
	for len(pages) < 100 {
		h := append(slices.Clip(hdr), "x-ms-continuation", token, "x-ms-documentdb-populatequerymetrics", "True")
		var r response
		if text == "" {
			r = must(t, c.do("GET", coll+"/docs", nil, h...), 200)
		} else {
			r = must(t, c.query(coll, text, nil, h...), 200)
		}
		docs := documents(t, r, "Documents")
		for _, d := range docs {
			var v struct{ ID string }
			if err := json.Unmarshal(d, &v); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, v.ID)
		}
		pages = append(pages, len(docs))
		if ch, err := strconv.ParseFloat(r.header.Get("x-ms-request-charge"), 64); err != nil || ch <= 0 {
			t.Errorf("page %d: charge %q", len(pages), r.header.Get("x-ms-request-charge"))
		}
		if m := metricsOf(t, r); m["outputDocumentCount"] != float64(len(docs)) {
			t.Errorf("page %d: metrics %v", len(pages), m)
		}
		if token = r.header.Get("x-ms-continuation"); token == "" {
			return ids, pages
		}
	}
	t.Fatal("the query does not end")
	return nil, nil
}

// TestQueryPages: a query's documents come in the order they were
// created, across partitions, as the service returns them by _rid; the
// page of a query that reads documents in that order is cut where it
// reaches x-ms-max-item-count without looking ahead, as the service's
// backend cuts it: a page exactly full carries a continuation even when
// nothing follows, and that continuation brings an empty page (with its
// charge and metrics) without one. Queries that order, aggregate or stop
// at TOP end on their last result (as azcosmos's emulator suite sees an
// ORDER BY of 10 results in pages of 5 end after 2 pages). The
// continuation of such a page answers only its query: another query,
// other parameters, another partition key or a forged one is a 400.
func TestQueryPages(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	const coll = "/dbs/db/colls/c"
	var want []string
	for i := range 10 {
		for pk := range 2 {
			id := strconv.Itoa(i + 10*pk)
			must(t, c.do("POST", coll+"/docs", fmt.Sprintf(`{"id":%q,"pk":"%d"}`, id, pk), "x-ms-documentdb-partitionkey", fmt.Sprintf(`["%d"]`, pk)), 201)
			want = append(want, id)
		}
	}
	var inPK [2][]string // the ids of each partition, in order
	for i, id := range want {
		inPK[i%2] = append(inPK[i%2], id)
	}
	rng := []string{"x-ms-documentdb-partitionkeyrangeid", "0"}
	for _, tc := range []struct {
		name, text string
		hdr        []string
		want       []string
		pages      []int
	}{
		{"5 of 20", "SELECT * FROM c", []string{"x-ms-max-item-count", "5"}, want, []int{5, 5, 5, 5, 0}},
		{"7 of 20", "SELECT * FROM c", []string{"x-ms-max-item-count", "7"}, want, []int{7, 7, 6}},
		{"20 of 20", "SELECT * FROM c", []string{"x-ms-max-item-count", "20"}, want, []int{20, 0}},
		{"-1", "SELECT * FROM c", []string{"x-ms-max-item-count", "-1"}, want, []int{20}},
		{"default", "SELECT * FROM c", nil, want, []int{20}},
		{"one partition", "SELECT * FROM c", []string{"x-ms-max-item-count", "5", "x-ms-documentdb-partitionkey", `["1"]`}, inPK[1], []int{5, 5, 0}},
		{"filter", "SELECT * FROM c WHERE c.pk = '0'", []string{"x-ms-max-item-count", "5"}, inPK[0], []int{5, 5, 0}},
		{"TOP", "SELECT TOP 4 * FROM c", []string{"x-ms-max-item-count", "2"}, want[:4], []int{2, 2}},
		{"ORDER BY", "SELECT * FROM c ORDER BY c.pk", []string{"x-ms-max-item-count", "10"}, slices.Concat(inPK[0], inPK[1]), []int{10, 10}},
		{"DISTINCT", "SELECT DISTINCT c.id FROM c", []string{"x-ms-max-item-count", "10"}, slices.Sorted(slices.Values(want)), []int{10, 10}},
		{"read feed", "", []string{"x-ms-max-item-count", "10"}, want, []int{10, 10, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, pages := pageThrough(t, c, coll, tc.text, append(slices.Clone(rng), tc.hdr...)...)
			if !slices.Equal(ids, tc.want) || !slices.Equal(pages, tc.pages) {
				t.Errorf("pages %v of %v, want %v of %v", pages, ids, tc.pages, tc.want)
			}
		})
	}

	// The continuation of a full last page, used elsewhere.
	r := must(t, c.query(coll, "SELECT * FROM c WHERE c.pk = @pk", []map[string]any{{"name": "@pk", "value": "1"}}, "x-ms-max-item-count", "10", "x-ms-documentdb-partitionkey", `["1"]`), 200)
	end := r.header.Get("x-ms-continuation")
	if end == "" {
		t.Fatal("a full page without a continuation")
	}
	must(t, c.query(coll, "SELECT * FROM c WHERE c.pk = @pk", []map[string]any{{"name": "@pk", "value": "1"}}, "x-ms-continuation", end, "x-ms-documentdb-partitionkey", `["1"]`), 200)
	for name, req := range map[string]response{
		"query":         c.query(coll, "SELECT * FROM c WHERE c.pk = @pk OR true", []map[string]any{{"name": "@pk", "value": "1"}}, "x-ms-continuation", end, "x-ms-documentdb-partitionkey", `["1"]`),
		"parameters":    c.query(coll, "SELECT * FROM c WHERE c.pk = @pk", []map[string]any{{"name": "@pk", "value": "0"}}, "x-ms-continuation", end, "x-ms-documentdb-partitionkey", `["1"]`),
		"partition key": c.query(coll, "SELECT * FROM c WHERE c.pk = @pk", []map[string]any{{"name": "@pk", "value": "1"}}, "x-ms-continuation", end, "x-ms-documentdb-partitionkey", `["0"]`),
		"forged":        c.query(coll, "SELECT * FROM c WHERE c.pk = @pk", []map[string]any{{"name": "@pk", "value": "1"}}, "x-ms-continuation", strings.TrimSuffix(end, end[len(end)-1:])+"x", "x-ms-documentdb-partitionkey", `["1"]`),
	} {
		if req.status != 400 {
			t.Errorf("%s: %d %s", name, req.status, req.body)
		}
	}
}

// TestQueryPageBytes: a query page stops before the document that would
// take it past 4 MB, whatever x-ms-max-item-count says (-1 included); a
// document that passes 4 MB alone would still be a page of its own.
func TestQueryPageBytes(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	const coll = "/dbs/db/colls/c"
	pad := strings.Repeat("x", 1_500_000)
	for i := range 7 {
		must(t, c.do("POST", coll+"/docs", fmt.Sprintf(`{"id":"%d","pk":"p","pad":%q}`, i, pad), "x-ms-documentdb-partitionkey", `["p"]`), 201)
	}
	for _, n := range []string{"-1", "100", "1000"} {
		token, total := "", 0
		for range 10 {
			r := must(t, c.query(coll, "SELECT * FROM c", nil, "x-ms-max-item-count", n, "x-ms-continuation", token, "x-ms-documentdb-partitionkey", `["p"]`), 200)
			docs := documents(t, r, "Documents")
			if len(r.body) > 4<<20+1_600_000 || len(docs) > 2 {
				t.Errorf("max-item-count %s: a page of %d bytes, %d documents", n, len(r.body), len(docs))
			}
			total += len(docs)
			if token = r.header.Get("x-ms-continuation"); token == "" {
				break
			}
		}
		if total != 7 || token != "" {
			t.Errorf("max-item-count %s: %d documents, token %q", n, total, token)
		}
	}
}

var seedFlag = flag.Uint64("seed", 0, "the seed of the randomized tests (0: a new one)")

// TestQueryJoinPagesREST: a query whose documents give many JOIN rows,
// read through continuations in pages of random x-ms-max-item-count (the
// continuations falling inside a document's rows), gives exactly the rows
// of one page of -1, none twice and none missing. Run with
// -seed=N to replay a failure.
func TestQueryJoinPagesREST(t *testing.T) {
	seed := cmp.Or(*seedFlag, rand.Uint64())
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 4))
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	const coll = "/dbs/db/colls/c"
	for i := range 6 {
		xs := make([]int, 5+rng.IntN(20))
		for j := range xs {
			xs[j] = rng.IntN(10)
		}
		doc := map[string]any{"id": strconv.Itoa(i), "pk": strconv.Itoa(i % 2), "xs": xs, "ys": xs[:len(xs)/2]}
		must(t, c.do("POST", coll+"/docs", doc, "x-ms-documentdb-partitionkey", fmt.Sprintf(`["%d"]`, i%2)), 201)
	}
	read := func(text, count string) (rows []string) {
		token := ""
		for range 10_000 {
			r := must(t, c.query(coll, text, nil, "x-ms-max-item-count", count, "x-ms-continuation", token, "x-ms-documentdb-partitionkeyrangeid", "0"), 200)
			for _, d := range documents(t, r, "Documents") {
				rows = append(rows, string(d))
			}
			if token = r.header.Get("x-ms-continuation"); token == "" {
				return rows
			}
		}
		t.Fatalf("%s in pages of %s: no end", text, count)
		return nil
	}
	for _, text := range []string{
		"SELECT c.id, x, y FROM c JOIN x IN c.xs JOIN y IN c.ys",
		"SELECT VALUE [c.id, x, y] FROM c JOIN x IN c.xs JOIN y IN c.xs WHERE x < y",
		"SELECT c.id, x FROM c JOIN x IN c.xs OFFSET 5 LIMIT 100",
	} {
		want := read(text, "-1")
		if len(want) < 20 {
			t.Fatalf("%s: %d rows", text, len(want))
		}
		for range 5 {
			count := strconv.Itoa(1 + rng.IntN(60))
			if got := read(text, count); !slices.Equal(got, want) {
				t.Errorf("seed %d: %s in pages of %s: %d rows\n%v\nwant %d\n%v", seed, text, count, len(got), got, len(want), want)
			}
		}
	}
}

// TestQueryPageBytesSmallRows: a page of many small results (JOIN rows)
// stays within 4 MB with the commas between them and the feed around
// them, whatever x-ms-max-item-count says: it passed 4 MB by 4% (a byte a
// result).
func TestQueryPageBytesSmallRows(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDBColl(t, c)
	const coll = "/dbs/db/colls/c"
	xs := make([]int, 60)
	for i := range xs {
		xs[i] = i
	}
	for i := range 50 { // 180,000 rows of about 25 bytes
		must(t, c.do("POST", coll+"/docs", map[string]any{"id": strconv.Itoa(i), "pk": "p", "xs": xs}, "x-ms-documentdb-partitionkey", `["p"]`), 201)
	}
	const text = "SELECT c.id, a, b FROM c JOIN a IN c.xs JOIN b IN c.xs"
	for _, n := range []string{"-1", "1000000"} {
		token, rows := "", 0
		for range 10 {
			r := must(t, c.query(coll, text, nil, "x-ms-max-item-count", n, "x-ms-continuation", token, "x-ms-documentdb-partitionkey", `["p"]`), 200)
			if len(r.body) > 4<<20 {
				t.Errorf("max-item-count %s: a page of %d bytes", n, len(r.body))
			}
			rows += len(documents(t, r, "Documents"))
			if token = r.header.Get("x-ms-continuation"); token == "" {
				break
			}
		}
		if rows != 50*60*60 || token != "" {
			t.Errorf("max-item-count %s: %d rows, token %q", n, rows, token)
		}
	}
}

// TestLongQueryPageGivesWay: a query page that joins engine pages for one
// response (x-ms-max-item-count: -1) runs at full speed alone, and gives
// way (sleeps as long as it ran) while other requests are being served;
// its results are the same either way.
func TestLongQueryPageGivesWay(t *testing.T) {
	h, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c"}), 201)
	xs := make([]int, 40)
	for i := range xs {
		xs[i] = i
	}
	arr, _ := json.Marshal(xs)
	for i := range 60 {
		must(t, c.do("POST", "/dbs/db/colls/c/docs", fmt.Sprintf(`{"id":"d%d","xs":%s,"ys":%s}`, i, arr, arr)), 201)
	}
	// query follows the continuation tokens: a page that gives way may
	// reach the page's time limit on a loaded machine, and then ends there.
	query := func() []json.RawMessage {
		var all []json.RawMessage
		token := ""
		for {
			r := must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"query": "SELECT c.id, a, b FROM c JOIN a IN c.xs JOIN b IN c.ys"},
				"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True", "x-ms-max-item-count", "-1", "x-ms-continuation", token), 200)
			all = append(all, documents(t, r, "Documents")...)
			if token = r.header.Get("x-ms-continuation"); token == "" {
				return all
			}
		}
	}
	alone := query()
	if n := cosmosrest.Paced(h); n != 0 {
		t.Fatalf("a query alone gave way %d times", n)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				c.do("GET", "/dbs/db/colls/c/docs/d1", nil)
			}
		}
	}()
	beside := query()
	close(stop)
	<-done
	if cosmosrest.Paced(h) == 0 {
		t.Error("a query beside other requests never gave way")
	}
	if len(alone) != 60*40*40 || len(beside) != len(alone) {
		t.Errorf("%d results alone, %d beside other requests; want %d", len(alone), len(beside), 60*40*40)
	}
}
