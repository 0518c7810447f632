package lethe_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pageThrough runs q through fresh pagers, one per page, resuming each from
// the token of the one before; between pages it calls between(page number).
func pageThrough(t *testing.T, c *lethe.Container, q string, size int32, between func(page int)) []string {
	t.Helper()
	var out []string
	token := ""
	for page := 0; ; page++ {
		p := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: size, ContinuationToken: token})
		r, err := p.NextPage(ctx)
		require.NoError(t, err)
		require.LessOrEqual(t, len(r.Items), int(size))
		out = append(out, texts(r.Items)...)
		if r.ContinuationToken == "" {
			return out
		}
		token = r.ContinuationToken
		if between != nil {
			between(page)
		}
	}
}

// TestQueryTokenResumesByKey: a continuation token resumes after the last
// result it returned, not at a position in a result that may have shrunk:
// an item that expires or is deleted before the resume point does not make
// the next page skip a live item.
func TestQueryTokenResumesByKey(t *testing.T) {
	t.Parallel()
	for _, q := range []string{
		"SELECT VALUE c.id FROM c",
		"SELECT VALUE c.id FROM c ORDER BY c.n DESC",
		"SELECT c.id FROM c ORDER BY c.n",
		"SELECT * FROM c",
	} {
		for _, how := range []string{"expires", "deleted"} {
			t.Run(how+"/"+q, func(t *testing.T) {
				c, clock := newContainer(t, lethe.TTLNever)
				for i := range 10 {
					ttl := ""
					if i == 1 || i == 8 {
						ttl = `,"ttl":5`
					}
					create(t, c, fmt.Sprintf(`{"id":"i%d","n":%d%s}`, i, i, ttl))
				}
				got := pageThrough(t, c, q, 3, func(int) {
					if how == "expires" {
						clock.Advance(5 * time.Second)
						return
					}
					for _, id := range []string{"i1", "i8"} {
						c.DeleteItem(ctx, lethe.NewPartitionKey(), id, nil) // the second time it is gone already
					}
				})
				assert.Len(t, got, 9, "the 3 of the first page, then the 6 of the 7 others still there: %v", got)
				seen := map[string]bool{}
				for _, s := range got {
					assert.False(t, seen[s], "returned twice: %s", s)
					seen[s] = true
				}
			})
		}
	}
}

// TestQueryTokenTopOffsetLimit: paging with tokens neither applies OFFSET
// again nor returns more than LIMIT or TOP results in all.
func TestQueryTokenTopOffsetLimit(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLNever)
	for i := range 20 {
		create(t, c, fmt.Sprintf(`{"id":"i%02d","n":%d,"g":%d,"tags":["x","y"]}`, i, i, i%4))
	}
	for _, tc := range []struct {
		q    string
		want int
	}{
		{"SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 3 LIMIT 7", 7},
		{"SELECT VALUE c.n FROM c OFFSET 15 LIMIT 10", 5},
		{"SELECT TOP 8 VALUE c.n FROM c ORDER BY c.n DESC", 8},
		{"SELECT TOP 5 c.id, t FROM c JOIN t IN c.tags", 5},
		{"SELECT VALUE t FROM c JOIN t IN c.tags ORDER BY c.n OFFSET 5 LIMIT 9", 9},
		{"SELECT DISTINCT VALUE c.g FROM c", 4},
		{"SELECT DISTINCT VALUE c.g FROM c ORDER BY c.g DESC", 4},
		{"SELECT DISTINCT c.g FROM c OFFSET 1 LIMIT 2", 2},
		{"SELECT VALUE COUNT(1) FROM c", 1},
		{"SELECT VALUE 1", 1},
		{"SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g", 4},
		{"SELECT TOP 3 VALUE c.g FROM c GROUP BY c.g", 3},
		{"SELECT c.g, SUM(c.n) AS s FROM c GROUP BY c.g OFFSET 1 LIMIT 2", 2},
		{"SELECT t, c.g, COUNT(1) AS n FROM c JOIN t IN c.tags GROUP BY t, c.g", 8},
		{"SELECT DISTINCT VALUE COUNT(1) FROM c GROUP BY c.g", 1},
		{"SELECT c.id, ARRAY(SELECT VALUE t FROM t IN c.tags WHERE t = \"x\") AS x FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags)", 20},
	} {
		all := collect(t, c, tc.q)
		require.Len(t, all, tc.want, tc.q)
		for _, size := range []int32{1, 2, 3, 100} {
			assert.Equal(t, all, pageThrough(t, c, tc.q, size, nil), "%s, pages of %d", tc.q, size)
		}
	}
}

// TestQueryTokenBinding: a token works only for its container, query text
// and parameters; a malformed one is refused. Each is a 400 saying which.
func TestQueryTokenBinding(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	var cs [2]*lethe.Container
	for i := range cs {
		var err error
		cs[i], err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: fmt.Sprintf("c%d", i)})
		require.NoError(t, err)
		for j := range 5 {
			create(t, cs[i], fmt.Sprintf(`{"id":"i%d","n":%d}`, j, j))
		}
	}
	const q = "SELECT VALUE c.n FROM c WHERE c.n >= @m"
	params := []lethe.QueryParameter{{Name: "@m", Value: 0}}
	r, err := cs[0].NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: params, PageSizeHint: 2}).NextPage(ctx)
	require.NoError(t, err)
	tok := r.ContinuationToken
	require.NotEmpty(t, tok)

	for _, tc := range []struct {
		name   string
		c      *lethe.Container
		q      string
		params []lethe.QueryParameter
		tok    string
		msg    string
	}{
		{"other container", cs[1], q, params, tok, "another container"},
		{"other query", cs[0], "SELECT VALUE c.n FROM c", nil, tok, "another query"},
		{"other parameters", cs[0], q, []lethe.QueryParameter{{Name: "@m", Value: 1}}, tok, "another query"},
		{"malformed", cs[0], q, params, "not a token!", "malformed"},
		{"truncated", cs[0], q, params, tok[:len(tok)-3], "malformed"},
		{"extended", cs[0], q, params, tok + "AAAA", "malformed"},
		{"unknown version", cs[0], q, params, "AA", "version 0"},
		{"empty", cs[0], q, params, "=", "malformed"},
	} {
		_, err := tc.c.NewQueryItemsPager(tc.q, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: tc.params, ContinuationToken: tc.tok}).NextPage(ctx)
		require.ErrorIs(t, err, lethe.ErrBadRequest, tc.name)
		assert.Contains(t, err.Error(), "continuation token", tc.name)
		assert.Contains(t, err.Error(), tc.msg, tc.name)
	}
	// The right container, query and parameters resume.
	r, err = cs[0].NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{QueryParameters: params, ContinuationToken: tok}).NextPage(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"2", "3", "4"}, texts(r.Items))
}

// TestQueryPagerKeepsRewrittenItems: one pager's later pages keep a result
// whose item is live now, even if the record it was made from has expired
// because the item was written again since; they drop results whose item
// has been deleted or has expired.
func TestQueryPagerKeepsRewrittenItems(t *testing.T) {
	t.Parallel()
	c, clock := newContainer(t, lethe.TTLNever)
	create(t, c, `{"id":"a"}`)
	create(t, c, `{"id":"b","ttl":5}`)
	create(t, c, `{"id":"c"}`)
	create(t, c, `{"id":"d","ttl":5}`)
	p := c.NewQueryItemsPager("SELECT VALUE c.id FROM c", lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 1})
	var got []string
	for pages := 0; p.More(); pages++ {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		got = append(got, texts(page.Items)...)
		if pages == 0 {
			clock.Advance(4 * time.Second)
			_, err := c.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"b","ttl":5}`), nil) // b lives until 9 s now
			require.NoError(t, err)
			_, err = c.DeleteItem(ctx, lethe.NewPartitionKey(), "c", nil)
			require.NoError(t, err)
			clock.Advance(2 * time.Second) // the record of b the query saw, and d, have expired
		}
	}
	assert.Equal(t, []string{`"a"`, `"b"`}, got)
}

// TestQueryGroupByPages: a GROUP BY query pages one group at a time, each
// group once, with one pager and with continuation tokens; a token resumes
// after the last group returned, whatever groups came or went meanwhile.
func TestQueryGroupByPages(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLNever)
	for i := range 12 {
		g := fmt.Sprintf(`,"g":"g%d"`, i%5)
		if i%5 == 4 {
			g = "" // the group of undefined
		}
		create(t, c, fmt.Sprintf(`{"id":"i%02d","n":%d%s}`, i, i, g))
	}
	const q = "SELECT c.g, COUNT(1) AS n, SUM(c.n) AS total FROM c GROUP BY c.g"
	want := []string{
		`{"n":2,"total":13}`,
		`{"g":"g0","n":3,"total":15}`,
		`{"g":"g1","n":3,"total":18}`,
		`{"g":"g2","n":2,"total":9}`,
		`{"g":"g3","n":2,"total":11}`,
	}

	// One pager, one group a page.
	p := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 1})
	var got []string
	for p.More() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Items), 1)
		got = append(got, texts(page.Items)...)
	}
	assert.Equal(t, want, got)

	// A fresh pager a page, resuming from the token.
	assert.Equal(t, want, pageThrough(t, c, q, 1, nil))

	// Groups that come and go between pages: each group is returned at
	// most once, those before the resume point are not returned again,
	// and those after it are returned as they are at the time of the page.
	got = pageThrough(t, c, q, 1, func(page int) {
		switch page {
		case 0:
			create(t, c, `{"id":"new0","n":100,"g":"a"}`) // a new group before g0: after the token, returned
			create(t, c, `{"id":"new1","n":100,"g":"g3"}`)
		case 1:
			for _, id := range []string{"i02", "i07"} { // all of g2
				_, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), id, nil)
				require.NoError(t, err)
			}
		}
	})
	assert.Equal(t, []string{
		`{"n":2,"total":13}`,
		`{"g":"a","n":1,"total":100}`,
		`{"g":"g0","n":3,"total":15}`,
		`{"g":"g1","n":3,"total":18}`,
		`{"g":"g3","n":3,"total":111}`,
	}, got)
	seen := map[string]bool{}
	for _, s := range got {
		assert.False(t, seen[s], "returned twice: %s", s)
		seen[s] = true
	}
}
