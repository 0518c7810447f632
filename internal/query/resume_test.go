package query

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// resumeQueries are queries in item order whose items give many JOIN
// rows: JOINs over arrays, over arrays of the row before (whose sizes vary
// with it), over the same array twice, over a path, a subquery, with a
// filter, a projection, OFFSET, LIMIT and TOP.
var resumeQueries = []string{
	`SELECT c.id, a, b FROM c JOIN a IN c.xs JOIN b IN c.ys`,
	`SELECT VALUE [c.id, a, b, d] FROM c JOIN a IN c.xs JOIN b IN c.ys JOIN d IN c.xs`,
	`SELECT VALUE [c.id, a.n, e] FROM c JOIN a IN c.os JOIN e IN a.es`,
	`SELECT c.id, a, e FROM c JOIN a IN c.os JOIN e IN a.es JOIN b IN c.ys WHERE b % 2 = 0`,
	`SELECT VALUE [c.id, a.n, b, e, f] FROM c JOIN a IN c.os JOIN b IN c.ys JOIN e IN a.es JOIN f IN a["es"]`,
	`SELECT VALUE [c.id, a, b] FROM c JOIN a IN c.xs JOIN b IN c.ys WHERE a < b`,
	`SELECT VALUE [c.id, a, p] FROM c JOIN a IN c.xs JOIN c.os[0].n AS p JOIN b IN c.ys`,
	`SELECT VALUE [c.id, a, s] FROM c JOIN a IN c.xs JOIN (SELECT VALUE y FROM y IN c.ys WHERE y > 1) AS s`,
	`SELECT VALUE a FROM c JOIN a IN c.xs`,
	`SELECT VALUE c.id FROM c`,
	`SELECT c.id, a, b FROM c JOIN a IN c.xs JOIN b IN c.ys OFFSET 7 LIMIT 40`,
	`SELECT TOP 33 c.id, a, b FROM c JOIN a IN c.xs JOIN b IN c.ys`,
}

// resumeDocs returns n documents with arrays of random sizes (some empty
// or missing).
func resumeDocs(rng *rand.Rand, n int) []Doc {
	docs := make([]Doc, n)
	ints := func(k int) string {
		xs := make([]string, k)
		for i := range xs {
			xs[i] = fmt.Sprint(rng.IntN(9))
		}
		return "[" + strings.Join(xs, ",") + "]"
	}
	for i := range docs {
		id := fmt.Sprintf("d%03d", i)
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":%q`, id)
		if rng.IntN(8) > 0 {
			fmt.Fprintf(&b, `,"xs":%s`, ints(rng.IntN(9)))
		}
		fmt.Fprintf(&b, `,"ys":%s,"os":[`, ints(rng.IntN(7)))
		for j := range rng.IntN(4) {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"n":%d,"es":%s}`, j, ints(rng.IntN(5)))
		}
		b.WriteString("]}")
		docs[i] = Doc{ID: id, JSON: []byte(b.String())}
	}
	return docs
}

var seedFlag = flag.Uint64("seed", 0, "the seed of the randomized tests (TestResumeInsideItem, TestPrunedSortModel; 0: a random one)")

// TestResumeInsideItem is a model test of resuming: a query read in pages
// of random sizes, each an evaluation that resumes after the last result
// of the one before (inside an item's JOIN rows or not) and may stop once
// it has its page and one more result (Resume.Need), as the store's
// pager evaluates them, gives exactly the results of one evaluation, with
// their keys (and the JOIN sources kept while their bindings stay are
// those the rows would evaluate); and a page that resumes evaluates only the rows it returns
// (and the one that says it is full), not its item's rows before them.
// Run with -seed=N to replay a failure.
func TestResumeInsideItem(t *testing.T) {
	seed := cmp.Or(*seedFlag, rand.Uint64())
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	now := time.Unix(1_700_000_000, 0)
	for round := range 60 {
		docs := resumeDocs(rng, 1+rng.IntN(12))
		text := resumeQueries[rng.IntN(len(resumeQueries))]
		q, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		// The whole evaluation, each JOIN's source evaluated for every
		// row as the language defines it, is the reference.
		keepJoinSources = false
		whole, err := Exec(context.Background(), q, nil, docs, now)
		keepJoinSources = true
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, it := range whole.Items {
			want = append(want, string(it))
		}
		need, full, ok := q.InItemOrder(nil)
		if !ok {
			t.Fatalf("%s: not in item order", text)
		}
		offset := need - full
		size := 1 + rng.IntN(20)
		desc := fmt.Sprintf("seed %d round %d: %s over %d docs, pages of %d", seed, round, text, len(docs), size)

		var got []string
		from := &Resume{Offset: offset}
		start, pages := 0, 0
		filtered := strings.Contains(text, "WHERE") || strings.Contains(text, "SELECT VALUE y")
		for start < len(docs) && (full < 0 || from.Consumed < full) {
			pages++
			if pages > 10_000 {
				t.Fatalf("%s: no end", desc)
			}
			r := *from
			r.Need = r.Offset + size + 1
			res, err := ExecFrom(context.Background(), q, nil, docs[start:], now, &r, nil)
			if err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			if res.Partial && len(res.Items)+res.Skipped < r.Need && (full < 0 || from.Consumed+len(res.Items) < full) {
				t.Fatalf("%s: partial with %d results, need %d", desc, len(res.Items)+res.Skipped, r.Need)
			}
			if !filtered && res.Rows > r.Need {
				t.Fatalf("%s: page %d evaluated %d rows for a page of %d", desc, pages, res.Rows, size)
			}
			from.Offset = max(0, from.Offset-res.Skipped)
			n := min(size, len(res.Items))
			for i := range n {
				got = append(got, string(res.Items[i]))
				from.After = res.Key(i)
				from.Consumed++
			}
			if n < len(res.Items) || res.Partial {
				// Full: the next page resumes in the item of the last
				// result.
				start += slices.IndexFunc(docs[start:], func(d Doc) bool { return d.ID == from.After.item })
				continue
			}
			break // every item evaluated
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s:\n got %q\nwant %q", desc, got, want)
		}
	}
}
