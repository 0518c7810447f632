package query

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// topkValues are the values of the ORDER BY paths of prunedDocs: every
// type, in Cosmos DB's order and out of it, with many ties.
var topkValues = []string{
	"", // missing: undefined
	"null", "true", "false", "0", "1", "-1", "1.5", "2", "1e3",
	`""`, `"a"`, `"b"`, `"ab"`, `"B"`, "[]", "[1]", "[1,2]", `{}`, `{"a":1}`,
}

// prunedDocs returns n documents whose paths a, b and c hold random
// topkValues, with arrays xs of random sizes for JOINs, in random ID
// order.
func prunedDocs(rng *rand.Rand, n int) []Doc {
	docs := make([]Doc, n)
	for i, k := range rng.Perm(n) {
		id := fmt.Sprintf("d%04d", k)
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":%q,"n":%d`, id, rng.IntN(5))
		for _, p := range []string{"a", "b", "c"} {
			if v := topkValues[rng.IntN(len(topkValues))]; v != "" {
				fmt.Fprintf(&b, `,%q:%s`, p, v)
			}
		}
		b.WriteString(`,"xs":[`)
		for j := range rng.IntN(4) {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(topkValues[1+rng.IntN(len(topkValues)-1)])
		}
		b.WriteString("]}")
		docs[i] = Doc{ID: id, JSON: []byte(b.String())}
	}
	return docs
}

// prunedQuery returns a random query whose results are sorted rows: one
// to three ORDER BY keys in either direction (or none, over a FROM with a
// path), a projection kept as stored or computed, perhaps a JOIN, a
// filter, TOP or OFFSET and LIMIT.
func prunedQuery(rng *rand.Rand) string {
	join := rng.IntN(3) == 0
	var sb strings.Builder
	sb.WriteString("SELECT ")
	bounded := rng.IntN(4)
	if bounded == 1 {
		fmt.Fprintf(&sb, "TOP %d ", rng.IntN(12))
	}
	sel := []string{"*", "VALUE c", "c.id, c.a", `VALUE {"id": c.id, "b": c.b, "n": c.n}`, "VALUE c.a"}
	if join {
		sel = append(sel[1:], "c.id, x", "VALUE [c.id, x]")
	}
	if !join && rng.IntN(6) == 0 {
		// No ORDER BY: the rows of a FROM path, in item order.
		fmt.Fprintf(&sb, "VALUE x FROM x IN c.xs")
	} else {
		sb.WriteString(sel[rng.IntN(len(sel))])
		sb.WriteString(" FROM c")
		if join {
			sb.WriteString(" JOIN x IN c.xs")
		}
		if rng.IntN(3) == 0 {
			sb.WriteString(" WHERE c.n > 0")
		}
		paths := []string{"c.a", "c.b", "c.c", "c.n", "c.id"}
		if join {
			paths = append(paths, "x")
		}
		sb.WriteString(" ORDER BY ")
		for i, j := range rng.Perm(len(paths))[:1+rng.IntN(3)] {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(paths[j])
			switch rng.IntN(3) {
			case 1:
				sb.WriteString(" ASC")
			case 2:
				sb.WriteString(" DESC")
			}
		}
	}
	if bounded == 2 {
		fmt.Fprintf(&sb, " OFFSET %d LIMIT %d", rng.IntN(8), rng.IntN(12))
	}
	return sb.String()
}

// execPruned evaluates q with pruning on or off.
func execPruned(t *testing.T, prune bool, q *Query, docs []Doc, from *Resume, env *Env) (Result, error) {
	t.Helper()
	defer func(was bool) { pruneRows = was }(pruneRows)
	pruneRows = prune
	return ExecFrom(context.Background(), q, nil, docs, testNow, from, env)
}

// TestPrunedSortModel is a model test of bounded ordering: over random
// documents (values of every type, ties), random sorted queries (several
// keys in either direction, JOIN rows, TOP, OFFSET and LIMIT) give, with
// pruning, exactly the results of a sort of every row, with their keys;
// and resumed after any of them, with a random Keep, exactly the next Keep
// of those results. Run with -seed=N to replay a failure.
func TestPrunedSortModel(t *testing.T) {
	seed := cmp.Or(*seedFlag, rand.Uint64())
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	for round := range 400 {
		docs := prunedDocs(rng, rng.IntN(40))
		text := prunedQuery(rng)
		q, err := Parse(text)
		require.NoError(t, err, text)
		require.True(t, q.Prunes(), text)
		full, err := execPruned(t, false, q, docs, nil, nil)
		require.NoError(t, err, text)
		got, err := execPruned(t, true, q, docs, nil, nil)
		require.NoError(t, err, text)
		what := fmt.Sprintf("round %d: %s", round, text)
		requireSameResults(t, full, 0, len(full.Items), got, what)

		// Resumed after each result in turn (and from the start), with a
		// random Keep, as a page after a continuation token.
		for i := -1; i < len(full.Items); i++ {
			from := &Resume{Consumed: i + 1, Keep: rng.IntN(6)}
			if i >= 0 {
				from.After = full.Key(i)
			} else {
				// Before every result: the least key there is.
				from.After, from.Consumed = Key{order: make([]value, q.keyLen())}, 0
				from.Offset = rng.IntN(3)
			}
			want, err := execPruned(t, false, q, docs, from, nil)
			require.NoError(t, err, what)
			got, err := execPruned(t, true, q, docs, from, nil)
			require.NoError(t, err, what)
			requireSameResults(t, want, 0, len(want.Items), got, fmt.Sprintf("%s, after %d, keep %d", what, i, from.Keep))
			if i >= 0 {
				// The model: the next results of the whole evaluation.
				end := len(full.Items)
				if from.Keep > 0 {
					end = min(end, i+1+from.Keep)
				}
				requireSameResults(t, full, i+1, end, got, fmt.Sprintf("%s, after %d, keep %d, against the whole", what, i, from.Keep))
			}
		}
	}
}

// requireSameResults fails t unless got's results are want's from i to
// j, with the same keys.
func requireSameResults(t *testing.T, want Result, i, j int, got Result, what string) {
	t.Helper()
	require.Equal(t, j-i, len(got.Items), what)
	for k := range got.Items {
		require.Equal(t, string(want.Items[i+k]), string(got.Items[k]), "%s: result %d", what, k)
		require.Zero(t, want.q.compareKeys(want.Key(i+k), got.Key(k)), "%s: key %d", what, k)
	}
}

// TestPrunedSortHoldsItsResults: an evaluation that needs the first k
// results of many rows holds about k rows, not all: a budget of memory
// that every row passes, but twice k rows fit in, does not stop it, and
// the budget of the same query without pruning does.
func TestPrunedSortHoldsItsResults(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	docs := prunedDocs(rng, 5000)
	const k = 20
	// A computed result and its values: at most about 100 bytes; 2k rows
	// and their results are well under the budget, 5000 rows well over.
	env := &Env{Budget: Budget{Bytes: 4 * k * (rowBytes + 100)}}
	for _, tc := range []struct{ text, bound string }{
		{"SELECT %s * FROM c ORDER BY c.a DESC, c.n %s", "TOP 20"},
		{`SELECT %s VALUE {"id": c.id, "x": x} FROM c JOIN x IN c.xs ORDER BY x, c.b %s`, "OFFSET 5 LIMIT 15"},
	} {
		top, limit := "", tc.bound
		if strings.HasPrefix(limit, "TOP") {
			top, limit = limit, ""
		}
		text := fmt.Sprintf(tc.text, top, limit)
		q, err := Parse(text)
		require.NoError(t, err)
		_, err = execPruned(t, false, q, docs, nil, env)
		var be *BudgetError
		require.ErrorAs(t, err, &be, "%s: without pruning", text)
		full, err := execPruned(t, false, q, docs, nil, nil)
		require.NoError(t, err)
		got, err := execPruned(t, true, q, docs, nil, env)
		require.NoError(t, err, text)
		requireSameResults(t, full, 0, len(full.Items), got, text)

		// Unbounded but resumed, with a page's Keep: the same.
		text = fmt.Sprintf(tc.text, "", "")
		q, err = Parse(text)
		require.NoError(t, err)
		all, err := execPruned(t, false, q, docs, nil, nil)
		require.NoError(t, err)
		from := &Resume{After: all.Key(100), Consumed: 101, Keep: k}
		got, err = execPruned(t, true, q, docs, from, env)
		require.NoError(t, err, text)
		requireSameResults(t, all, 101, min(len(all.Items), 101+k), got, text+", resumed")
	}
}

// BenchmarkTopKOrderBy measures SELECT TOP k ... ORDER BY over n
// documents with and without pruning: with it, the bytes allocated grow
// with k (a few buffers turned over), not with n.
func BenchmarkTopKOrderBy(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{10_000, 100_000} {
		docs := make([]Doc, n)
		for i := range docs {
			id := fmt.Sprintf("d%07d", i)
			docs[i] = Doc{ID: id, JSON: fmt.Appendf(nil, `{"id":%q,"x":%d,"s":"%08x"}`, id, rng.IntN(1_000_000), rng.Uint32())}
		}
		for _, k := range []int{10, 1000} {
			for _, prune := range []bool{true, false} {
				for _, sel := range []string{"*", `VALUE {"id": c.id, "x": c.x}`} {
					q, err := Parse(fmt.Sprintf("SELECT TOP %d %s FROM c ORDER BY c.x DESC", k, sel))
					if err != nil {
						b.Fatal(err)
					}
					kind := map[bool]string{true: "pruned", false: "full"}[prune]
					proj := map[bool]string{true: "star", false: "computed"}[sel == "*"]
					b.Run(fmt.Sprintf("n=%d/k=%d/sel=%s/sort=%s", n, k, proj, kind), func(b *testing.B) {
						defer func(was bool) { pruneRows = was }(pruneRows)
						pruneRows = prune
						b.ReportAllocs()
						for b.Loop() {
							res, err := Exec(context.Background(), q, nil, docs, time.Time{})
							if err != nil || len(res.Items) != k {
								b.Fatal(err, len(res.Items))
							}
						}
					})
				}
			}
		}
	}
}

// TestPrunedSortCountsHeldRowsOnce pins the budget of a bounded sort: a
// row held counts rowBytes and its result's encoding, once (not also
// checkResult's estimate), and a row turned away counts nothing. With
// TOP 1 over rows that each come before all the earlier ones, so that
// every row is held, the evaluation holds at most three rows at a time
// (two, and the one being added): a budget of exactly three rows passes,
// one byte less fails.
func TestPrunedSortCountsHeldRowsOnce(t *testing.T) {
	const size = 1000
	s := strings.Repeat("s", size)
	docs := make([]Doc, 50)
	for i := range docs {
		docs[i] = Doc{ID: fmt.Sprintf("d%02d", i), JSON: fmt.Appendf(nil, `{"id":"d%02d","x":%d,"s":%q}`, i, len(docs)-i, s)}
	}
	q, err := Parse(`SELECT TOP 1 VALUE {"s": c.s} FROM c ORDER BY c.x`)
	require.NoError(t, err)
	enc := len(`{"s":""}`) + size
	exact := 3 * (rowBytes + enc)
	got, err := execPruned(t, true, q, docs, nil, &Env{Budget: Budget{Bytes: exact}})
	require.NoError(t, err)
	require.Len(t, got.Items, 1)
	require.Equal(t, `{"s":"`+s+`"}`, string(got.Items[0]))
	_, err = execPruned(t, true, q, docs, nil, &Env{Budget: Budget{Bytes: exact - 1}})
	var be *BudgetError
	require.ErrorAs(t, err, &be)
}

// TestPrunedSortSkipsResultsTurnedAway: a bounded sort evaluates the
// result of a row only if it holds the row, so a row turned away by its
// ORDER BY values fails no limit of its result (here a number JSON cannot
// write); a sort of every row fails.
func TestPrunedSortSkipsResultsTurnedAway(t *testing.T) {
	docs := make([]Doc, 20)
	for i := range docs {
		// The first three rows are held before the first cut, and hold
		// finite results; every later row comes after them.
		big := 0
		if i >= 3 {
			big = 1
		}
		docs[i] = Doc{ID: fmt.Sprintf("d%02d", i), JSON: fmt.Appendf(nil, `{"id":"d%02d","x":%d,"big":%d}`, i, i, big)}
	}
	q, err := Parse(`SELECT TOP 1 VALUE c.big * 1e308 * 10 FROM c ORDER BY c.x`)
	require.NoError(t, err)
	got, err := execPruned(t, true, q, docs, nil, nil)
	require.NoError(t, err)
	require.Len(t, got.Items, 1)
	require.Equal(t, "0", string(got.Items[0]))
	_, err = execPruned(t, false, q, docs, nil, nil)
	require.ErrorContains(t, err, "NaN or Infinity")
}
