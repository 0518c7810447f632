package lethe_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// udfContainer holds 100 items i00..i99 with "k" = i % 10 and "x" = i.
func udfContainer(t *testing.T, b lethe.QueryBudget) (*lethe.Container, *lethe.ManualClock) {
	t.Helper()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	s := openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}, QueryBudget: b})
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	for i := range 100 {
		create(t, c, fmt.Sprintf(`{"id":"i%02d","k":%d,"x":%d}`, i, i%10, i))
	}
	return c, clock
}

// queryUDF runs q with funcs, size results a page, and returns the results
// and the first page's response.
func queryUDF(t *testing.T, c *lethe.Container, q string, size int32, funcs map[string]lethe.UserFunction) ([]string, lethe.QueryItemsResponse, error) {
	t.Helper()
	p := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: size, UserFunctions: funcs, PopulateIndexMetrics: true})
	var out []string
	var first lethe.QueryItemsResponse
	for i := 0; p.More(); i++ {
		r, err := p.NextPage(ctx)
		if err != nil {
			return out, first, err
		}
		if i == 0 {
			first = r
		}
		out = append(out, texts(r.Items)...)
	}
	return out, first, nil
}

// TestQueryUserFunctions: queries call the functions of
// QueryOptions.UserFunctions per row, across pages, in item order and
// not; Undefined leaves a result out.
func TestQueryUserFunctions(t *testing.T) {
	t.Parallel()
	c, _ := udfContainer(t, lethe.QueryBudget{})
	funcs := map[string]lethe.UserFunction{
		"tax":  func(a []any) (any, error) { return a[0].(float64) * 0.5, nil },
		"half": func(a []any) (any, error) { return map[string]any{"h": a[0].(float64) / 2, "no": lethe.Undefined}, nil },
		"odd": func(a []any) (any, error) {
			if int(a[0].(float64))%2 == 0 {
				return lethe.Undefined, nil
			}
			return true, nil
		},
	}
	got, _, err := queryUDF(t, c, `SELECT VALUE udf.tax(c.x) FROM c WHERE c.k = 3`, 4, funcs)
	require.NoError(t, err)
	assert.Equal(t, []string{"1.5", "6.5", "11.5", "16.5", "21.5", "26.5", "31.5", "36.5", "41.5", "46.5"}, got)
	got, _, err = queryUDF(t, c, `SELECT TOP 3 c.id, udf.half(c.x) AS h FROM c WHERE udf.odd(c.x) ORDER BY c.x DESC`, 2, funcs)
	require.NoError(t, err)
	assert.Equal(t, []string{`{"id":"i99","h":{"h":49.5}}`, `{"id":"i97","h":{"h":48.5}}`, `{"id":"i95","h":{"h":47.5}}`}, got)
	got, _, err = queryUDF(t, c, `SELECT udf.odd(c.k) AS odd, COUNT(1) AS n FROM c GROUP BY udf.odd(c.k)`, 10, funcs)
	require.NoError(t, err)
	assert.Equal(t, []string{`{"n":50}`, `{"odd":true,"n":50}`}, got)
}

// TestQueryUserFunctionErrors: a query calling a function it is not given
// fails with ErrBadRequest, even on no items; a function's error or panic
// fails it with ErrBadRequest wrapping a *UserFunctionError.
func TestQueryUserFunctionErrors(t *testing.T) {
	t.Parallel()
	c, _ := udfContainer(t, lethe.QueryBudget{})
	boom := errors.New("boom")
	funcs := map[string]lethe.UserFunction{
		"fail":  func(a []any) (any, error) { return nil, boom },
		"panic": func(a []any) (any, error) { panic("kaboom") },
		"nil":   nil,
	}
	for _, q := range []string{
		`SELECT VALUE udf.nope(c.x) FROM c`,
		`SELECT VALUE udf.nil(c.x) FROM c ORDER BY c.x`,
		`SELECT VALUE udf.Fail(c.x) FROM c WHERE c.k = 99`,
	} {
		_, _, err := queryUDF(t, c, q, 10, funcs)
		require.ErrorIs(t, err, lethe.ErrBadRequest, q)
		assert.Contains(t, err.Error(), "is not a recognized user-defined function name", q)
	}
	for _, c2 := range []struct{ q, name, msg string }{
		{`SELECT VALUE udf.fail(c.x) FROM c`, "fail", "boom"},
		{`SELECT VALUE c.x FROM c WHERE udf.panic(c.x) ORDER BY c.id`, "panic", "the function panicked: kaboom"},
	} {
		_, _, err := queryUDF(t, c, c2.q, 10, funcs)
		require.ErrorIs(t, err, lethe.ErrBadRequest, c2.q)
		var ue *lethe.UserFunctionError
		require.ErrorAs(t, err, &ue, c2.q)
		assert.Equal(t, c2.name, ue.Name)
		assert.EqualError(t, ue.Err, c2.msg)
		assert.Contains(t, err.Error(), "Encountered exception while executing function udf."+c2.name+". Exception = "+c2.msg)
	}
	_, _, err := queryUDF(t, c, `SELECT VALUE udf.fail(c.x) FROM c`, 10, funcs)
	assert.ErrorIs(t, err, boom, "the function's error is wrapped")
}

// TestQueryUserFunctionUsesIndex: a query whose filter has a condition an
// index answers besides a function call evaluates the function only on
// the index's candidates, in item order or not. (An index of a path is
// made the second time a query filters on it: the first scans.)
func TestQueryUserFunctionUsesIndex(t *testing.T) {
	t.Parallel()
	c, _ := udfContainer(t, lethe.QueryBudget{})
	var calls atomic.Int64
	funcs := map[string]lethe.UserFunction{"big": func(a []any) (any, error) {
		calls.Add(1)
		return a[0].(float64) > 50, nil
	}}
	for _, c2 := range []struct {
		q, index string
		n        int
	}{
		{`SELECT VALUE c.x FROM c WHERE udf.big(c.x) AND c.k = 1`, "/k/?", 5},
		{`SELECT VALUE c.x FROM c WHERE udf.big(c.x) = true AND c.x BETWEEN 60 AND 69 ORDER BY c.x DESC`, "/x/?", 10},
	} {
		q := c2.q
		for i, want := range []int64{100, 10} {
			calls.Store(0)
			got, first, err := queryUDF(t, c, q, 100, funcs)
			require.NoError(t, err, q)
			assert.Len(t, got, c2.n, q)
			assert.Equal(t, want, calls.Load(), "run %d: %s", i, q)
			var m struct{ UtilizedSingleIndexes []struct{ IndexSpec string } }
			require.NoError(t, json.Unmarshal([]byte(first.IndexMetrics), &m))
			if i == 1 {
				require.Len(t, m.UtilizedSingleIndexes, 1, q)
				assert.Equal(t, c2.index, m.UtilizedSingleIndexes[0].IndexSpec, q)
			}
		}
	}
}

// TestQueryUserFunctionHoldsNoLock: a function runs with no lock of the
// container held: a transactional batch of the same container, run from
// inside the function, completes, whatever the shape of the query (an
// ordered walk of an index, an index's candidates, a scan, GROUP BY).
func TestQueryUserFunctionHoldsNoLock(t *testing.T) {
	t.Parallel()
	c, _ := udfContainer(t, lethe.QueryBudget{})
	var n atomic.Int64
	funcs := map[string]lethe.UserFunction{"write": func(a []any) (any, error) {
		b := c.NewTransactionalBatch(lethe.NewPartitionKey())
		b.UpsertItem(fmt.Appendf(nil, `{"id":"w%d"}`, n.Add(1)), nil)
		done := make(chan error, 1)
		go func() {
			_, err := c.ExecuteTransactionalBatch(ctx, b, nil)
			done <- err
		}()
		select {
		case err := <-done:
			return true, err
		case <-time.After(5 * time.Second):
			return nil, errors.New("a batch waited for a lock the query holds")
		}
	}}
	for _, q := range []string{
		`SELECT TOP 2 VALUE c.x FROM c WHERE udf.write(c.x) ORDER BY c.x`,
		`SELECT VALUE c.x FROM c WHERE c.x > 97 AND udf.write(c.x) ORDER BY c.x DESC`,
		`SELECT TOP 2 VALUE c.x FROM c WHERE c.k = 4 AND udf.write(c.x)`,
		`SELECT VALUE COUNT(1) FROM c WHERE c.x < 3 AND udf.write(c.x)`,
		`SELECT c.k, COUNT(1) AS n FROM c WHERE c.x < 3 GROUP BY c.k, udf.write(c.k)`,
	} {
		_, _, err := queryUDF(t, c, q, 10, funcs)
		require.NoError(t, err, q)
	}
	assert.Positive(t, n.Load())
}

// TestQueryUserFunctionBudget: a slow function spends the page's time: a
// query in item order ends its pages early, with continuations, and
// returns every result over them; one that must be evaluated whole fails
// with ErrRequestTimeout.
func TestQueryUserFunctionBudget(t *testing.T) {
	t.Parallel()
	c, clock := udfContainer(t, lethe.QueryBudget{Time: time.Second})
	var calls atomic.Int64
	funcs := map[string]lethe.UserFunction{"slow": func(a []any) (any, error) {
		calls.Add(1)
		clock.Advance(100 * time.Millisecond)
		return a[0], nil
	}}
	p := c.NewQueryItemsPager(`SELECT VALUE udf.slow(c.x) FROM c`, lethe.NewPartitionKey(), &lethe.QueryOptions{UserFunctions: funcs})
	var got []string
	pages := 0
	for p.More() {
		r, err := p.NextPage(ctx)
		require.NoError(t, err)
		got = append(got, texts(r.Items)...)
		pages++
		require.Less(t, pages, 200)
	}
	assert.Len(t, got, 100)
	assert.Equal(t, "0", got[0])
	assert.Equal(t, "99", got[99])
	assert.Greater(t, pages, 5, "pages end when their time is spent")

	calls.Store(0)
	_, _, err := queryUDF(t, c, `SELECT VALUE udf.slow(c.x) FROM c ORDER BY c.x DESC`, 10, funcs)
	require.ErrorIs(t, err, lethe.ErrRequestTimeout)
	assert.Less(t, calls.Load(), int64(40), "the page stops soon after its time is spent")
}

// BenchmarkQueryUDF compares, through the library, queries over 100,000
// items that call a small Go function with the same expressions written
// with built-in functions (a page of 1,000 results at a time):
//
//	go test -run '^$' -bench BenchmarkQueryUDF -count 6 . | benchstat -col /expr -
func BenchmarkQueryUDF(b *testing.B) {
	s, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
	require.NoError(b, err)
	defer s.Close()
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c"})
	require.NoError(b, err)
	for i := range 100_000 {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":"i%06d","k":%d,"x":%d.5,"name":"Item Number %d"}`, i, i%10, i, i), nil)
		require.NoError(b, err)
	}
	funcs := map[string]lethe.UserFunction{
		"tax":    func(a []any) (any, error) { return a[0].(float64) * 0.05, nil },
		"isEven": func(a []any) (any, error) { return int(a[0].(float64))%2 == 0, nil },
	}
	for _, q := range []struct{ name, builtin, udf string }{
		{"project", `SELECT VALUE c.x * 0.05 FROM c`, `SELECT VALUE udf.tax(c.x) FROM c`},
		{"filter", `SELECT VALUE COUNT(1) FROM c WHERE c.x % 2 < 1`, `SELECT VALUE COUNT(1) FROM c WHERE udf.isEven(c.x)`},
	} {
		for _, e := range []struct{ name, text string }{{"builtin", q.builtin}, {"udf", q.udf}} {
			b.Run(fmt.Sprintf("query=%s/expr=%s", q.name, e.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p := c.NewQueryItemsPager(e.text, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 1000, UserFunctions: funcs})
					for p.More() {
						if _, err := p.NextPage(ctx); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// TestPatchConditionUDF: a patch condition is given no user-defined
// functions: one that calls one is a 400, and the item is unchanged.
func TestPatchConditionUDF(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	before := create(t, c, `{"id":"x","n":3}`)
	var p lethe.PatchOperations
	p.AppendIncrement("/n", 1)
	p.SetCondition("FROM c WHERE udf.f(c.n)")
	_, err := c.PatchItem(ctx, lethe.NewPartitionKey(), "x", p, nil)
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	assert.Contains(t, err.Error(), "'udf.f' is not a recognized user-defined function name")
	r, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "x", nil)
	require.NoError(t, err)
	assert.Equal(t, before.ETag, r.ETag)
}
