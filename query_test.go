package lethe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collect runs a query through QueryItems and returns its results as text.
func collect(t *testing.T, c *lethe.Container, q string, params ...lethe.QueryParameter) []string {
	t.Helper()
	var out []string
	for item, err := range c.QueryItems(ctx, q, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: params}) {
		require.NoError(t, err, q)
		out = append(out, string(item))
	}
	return out
}

// queryContainer holds ten items n0..n9 with "n" = i and a status; the odd
// ones expire after 10 s.
func queryContainer(t *testing.T) (*lethe.Container, *lethe.ManualClock) {
	c, clock := newContainer(t, lethe.TTLNever)
	for i := range 10 {
		ttl := ""
		if i%2 == 1 {
			ttl = `,"ttl":10`
		}
		status := []string{"active", "idle"}[i%3%2]
		create(t, c, fmt.Sprintf(`{"id":"n%d","n":%d,"status":%q,"tags":["t%d","all"]%s}`, i, i, status, i%3, ttl))
	}
	return c, clock
}

// TestQueryExcludesExpired: expired items never appear in results, counts
// or aggregates, purged or not.
func TestQueryExcludesExpired(t *testing.T) {
	t.Parallel()
	c, clock := queryContainer(t)
	for _, tc := range []struct {
		query         string
		before, after []string
	}{
		{"SELECT VALUE COUNT(1) FROM c", []string{"10"}, []string{"5"}},
		{"SELECT VALUE SUM(c.n) FROM c", []string{"45"}, []string{"20"}},
		{"SELECT VALUE AVG(c.n) FROM c", []string{"4.5"}, []string{"4"}},
		{"SELECT VALUE MAX(c.n) FROM c", []string{"9"}, []string{"8"}},
		{"SELECT VALUE MIN(c.n) FROM c WHERE c.n > 0", []string{"1"}, []string{"2"}},
		{"SELECT COUNT(1) AS n, MAX(c.n) AS highest FROM c", []string{`{"n":10,"highest":9}`}, []string{`{"n":5,"highest":8}`}},
		{"SELECT VALUE c.id FROM c WHERE c.n >= 6", []string{`"n6"`, `"n7"`, `"n8"`, `"n9"`}, []string{`"n6"`, `"n8"`}},
		{"SELECT VALUE t FROM c JOIN t IN c.tags WHERE t = 'all'", repeat(`"all"`, 10), repeat(`"all"`, 5)},
		{"SELECT DISTINCT VALUE c.status FROM c ORDER BY c.status", []string{`"active"`, `"idle"`}, []string{`"active"`, `"idle"`}},
		{"SELECT TOP 2 VALUE c.n FROM c ORDER BY c.n DESC", []string{"9", "8"}, []string{"8", "6"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			clock.Set(t0.Add(10*time.Second - 1))
			assert.Equal(t, tc.before, collect(t, c, tc.query))
			clock.Set(t0.Add(10 * time.Second))
			assert.Equal(t, tc.after, collect(t, c, tc.query))
		})
	}
	assert.Equal(t, int64(5), c.Stats().ExpiredPending, "the expired items were not purged: queries hid them")
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestQuerySelectStar(t *testing.T) {
	t.Parallel()
	c, _ := queryContainer(t)
	got := collect(t, c, "SELECT * FROM c WHERE c.id = @id", lethe.QueryParameter{Name: "@id", Value: "n4"})
	require.Len(t, got, 1)
	r, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "n4", nil)
	require.NoError(t, err)
	assert.Equal(t, string(r.Value), got[0], "SELECT * returns the item as stored, with _ts and _etag")
	assert.Equal(t, []string{`{"n":2,"s":"active"}`}, collect(t, c, `SELECT c.n, c.status AS s FROM root c WHERE c.n = 2`))
	assert.Equal(t, []string{"4"}, collect(t, c, "SELECT VALUE ABS(-4)"))
}

// TestQueryPaging: pages concatenate to the unpaged result, tokens resume
// a new pager, and tokens of other queries are refused.
func TestQueryPaging(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLNever)
	for i := range 95 {
		create(t, c, fmt.Sprintf(`{"id":"i%03d","n":%d}`, i, i))
	}
	const q = "SELECT VALUE c.n FROM c WHERE c.n % @m = 0 ORDER BY c.n DESC"
	params := []lethe.QueryParameter{{Name: "@m", Value: 2}}
	all := collect(t, c, q, params...)
	require.Len(t, all, 48)

	var paged []string
	token := ""
	pages := 0
	for {
		p := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: params, PageSizeHint: 7, ContinuationToken: token})
		require.True(t, p.More())
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		pages++
		assert.LessOrEqual(t, len(page.Items), 7)
		for _, it := range page.Items {
			paged = append(paged, string(it))
		}
		if page.ContinuationToken == "" {
			assert.False(t, p.More())
			break
		}
		token = page.ContinuationToken
	}
	assert.Equal(t, all, paged)
	assert.Equal(t, 7, pages)

	// One pager, many pages, evaluated in full (a scan): the first page
	// pays for the items examined.
	was := lethe.SetUseIndexes(c, false)
	p := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: params, PageSizeHint: 20})
	first, err := p.NextPage(ctx)
	require.NoError(t, err)
	assert.InDelta(t, 2.3+95*0.01+20*0.05, first.RequestCharge, 1e-9)
	second, err := p.NextPage(ctx)
	require.NoError(t, err)
	assert.InDelta(t, 2.3+20*0.05, second.RequestCharge, 1e-9)
	third, err := p.NextPage(ctx)
	require.NoError(t, err)
	assert.Len(t, third.Items, 8)
	assert.Empty(t, third.ContinuationToken)
	_, err = p.NextPage(ctx)
	require.ErrorIs(t, err, lethe.ErrBadRequest)
	lethe.SetUseIndexes(c, was)

	// Streamed through the index of /n: each page walks the index from
	// where the last ended, and pays for what its walk examined alone.
	p = c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: params, PageSizeHint: 20})
	var streamed []string
	for p.More() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		examined := (page.RequestCharge - 2.3 - float64(len(page.Items))*0.05) / 0.01
		assert.Less(t, examined, 95.0, "a page examined every item")
		for _, it := range page.Items {
			streamed = append(streamed, string(it))
		}
	}
	assert.Equal(t, all, streamed)

	for name, opts := range map[string]*lethe.QueryOptions{
		"other query":      {ContinuationToken: first.ContinuationToken},
		"other parameters": {ContinuationToken: first.ContinuationToken, QueryParameters: []lethe.QueryParameter{{Name: "@m", Value: 3}}},
		"malformed":        {ContinuationToken: "not a token!"},
	} {
		text := "SELECT VALUE c.n FROM c"
		if name != "other query" {
			text = q
		}
		_, err := c.NewQueryItemsPager(text, lethe.NewPartitionKey(), opts).NextPage(ctx)
		require.ErrorIs(t, err, lethe.ErrBadRequest, name)
		assert.Contains(t, err.Error(), "continuation token", name)
	}
}

func TestQueryErrors(t *testing.T) {
	t.Parallel()
	c, _ := queryContainer(t)
	for _, tc := range []struct {
		query  string
		params []lethe.QueryParameter
		msg    string
	}{
		{"SELECT * FROM c WHER c.n = 1", nil, `1:17: expected`},
		{"SELECT * FORM c", nil, "1:10: expected FROM"},
		{"SELECT FOO(c.n) FROM c", nil, "FOO"},
		{"SELECT * FROM c WHERE c.n = @x", nil, "@x"},
		{"SELECT * FROM c WHERE c.n = @x", []lethe.QueryParameter{{Name: "x", Value: 1}}, "must start with '@'"},
		{"SELECT * FROM c WHERE c.n = @x", []lethe.QueryParameter{{Name: "@x", Value: 1}, {Name: "@x", Value: 2}}, "twice"},
		{"SELECT * FROM c WHERE c.n = @x", []lethe.QueryParameter{{Name: "@x", Value: make(chan int)}}, "@x"},
		{"SELECT * FROM c GROUP BY c.n", nil, "GROUP BY"},
		{"", nil, ""},
	} {
		t.Run(tc.query, func(t *testing.T) {
			p := c.NewQueryItemsPager(tc.query, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: tc.params})
			r, err := p.NextPage(ctx)
			require.ErrorIs(t, err, lethe.ErrBadRequest)
			assert.Contains(t, err.Error(), tc.msg)
			assert.Equal(t, 1.24, r.RequestCharge)
		})
	}
	var seen error
	for _, err := range c.QueryItems(ctx, "SELECT", lethe.NewPartitionKey(), nil) {
		seen = err
	}
	require.ErrorIs(t, seen, lethe.ErrBadRequest)
}

func TestQueryContext(t *testing.T) {
	t.Parallel()
	c, _ := queryContainer(t)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err := c.NewQueryItemsPager("SELECT * FROM c", lethe.NewPartitionKey(), nil).NextPage(cctx)
	require.ErrorIs(t, err, context.Canceled)
	var first []byte
	for item, err := range c.QueryItems(ctx, "SELECT VALUE c.n FROM c", lethe.NewPartitionKey(), nil) {
		require.NoError(t, err)
		first = item
		break // stopping early is fine
	}
	assert.Equal(t, "0", string(first))
}

func TestQueryThrottled(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", Throughput: 10})
	require.NoError(t, err)
	create(t, c, `{"id":"a"}`) // 5.5 of 10
	p := c.NewQueryItemsPager("SELECT * FROM c", lethe.NewPartitionKey(), nil)
	page, err := p.NextPage(ctx) // 2.36 of 4.5
	require.NoError(t, err)
	assert.InDelta(t, 2.36, page.RequestCharge, 1e-9)
	p = c.NewQueryItemsPager("SELECT * FROM c", lethe.NewPartitionKey(), nil)
	_, err = p.NextPage(ctx) // 2.36 of 2.14
	require.ErrorIs(t, err, lethe.ErrTooManyRequests)
	assert.True(t, p.More(), "a throttled page can be retried")
	clock.Advance(time.Second)
	page, err = p.NextPage(ctx)
	require.NoError(t, err)
	assert.Len(t, page.Items, 1)
}

func TestQueryParameterTypes(t *testing.T) {
	t.Parallel()
	c, _ := queryContainer(t)
	for _, v := range []any{int64(3), uint8(3), 3.0, float32(3), json.RawMessage(`3`)} {
		assert.Equal(t, []string{`"n3"`}, collect(t, c, "SELECT VALUE c.id FROM c WHERE c.n = @v", lethe.QueryParameter{Name: "@v", Value: v}), "%T", v)
	}
	assert.Equal(t, []string{`"n1"`, `"n4"`}, collect(t, c, "SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(@ids, c.id)",
		lethe.QueryParameter{Name: "@ids", Value: []string{"n1", "n4", "zz"}}))
	assert.True(t, strings.HasPrefix(collect(t, c, "SELECT VALUE GetCurrentDateTime()")[0], `"2023-11-14T22:13:20.`))
}

// TestQueryPagesAcrossExpiry: results of items that expire between pages
// are left out of later pages, and a first page retried after a 429 is
// evaluated again.
func TestQueryPagesAcrossExpiry(t *testing.T) {
	t.Parallel()
	c, clock := newContainer(t, lethe.TTLNever)
	create(t, c, `{"id":"a"}`)
	create(t, c, `{"id":"b","ttl":5}`)
	create(t, c, `{"id":"c"}`)
	p := c.NewQueryItemsPager("SELECT VALUE c.id FROM c", lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 1})
	var pages []string
	for p.More() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		for _, it := range page.Items {
			pages = append(pages, string(it))
		}
		clock.Advance(5 * time.Second)
	}
	assert.Equal(t, []string{`"a"`, `"c"`}, pages, "b expired after the first page")
}

func TestQueryRetryAfterThrottle(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c, err := s.CreateContainer(ctx, lethe.ContainerProperties{ID: "t", DefaultTimeToLive: lethe.TTLNever, Throughput: 6})
	require.NoError(t, err)
	create(t, c, `{"id":"x","ttl":1}`) // 5.5 of 6
	p := c.NewQueryItemsPager("SELECT VALUE COUNT(1) FROM c", lethe.NewPartitionKey(), nil)
	_, err = p.NextPage(ctx)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests)
	clock.Advance(2 * time.Second) // x expires; the bucket refills
	page, err := p.NextPage(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"0"}, texts(page.Items), "the retry must not serve the count from before the expiry")

	// A failed query draws its failure charge like any failed operation.
	clock.Advance(time.Second)
	create(t, c, `{"id":"y"}`) // 5.5 of 6
	_, err = c.NewQueryItemsPager("SELECT FROM", lethe.NewPartitionKey(), nil).NextPage(ctx)
	require.ErrorIs(t, err, lethe.ErrTooManyRequests)
}

func texts(items [][]byte) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}
