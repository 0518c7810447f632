package lethe_test

import (
	"errors"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// TestItemOrderFailedPageCharged: a page of a query in item order (no
// ORDER BY, paged by item) that fails, first page or later, is charged
// what a failed page of a query evaluated whole is: the failure charge,
// reported in the response with the error.
func TestItemOrderFailedPageCharged(t *testing.T) {
	t.Parallel()
	c, _ := udfContainer(t, lethe.QueryBudget{})
	boom := errors.New("boom")
	funcs := map[string]lethe.UserFunction{
		// fail fails on the item whose x is its second argument.
		"fail": func(a []any) (any, error) {
			if a[0] == a[1] {
				return nil, boom
			}
			return a[0], nil
		},
	}
	// failedPage returns the charge of q's first page that fails, after
	// ok pages that do not.
	failedPage := func(q string, ok int) float64 {
		t.Helper()
		p := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 10, UserFunctions: funcs})
		for range ok {
			_, err := p.NextPage(ctx)
			require.NoError(t, err, q)
		}
		r, err := p.NextPage(ctx)
		require.ErrorIs(t, err, lethe.ErrBadRequest, q)
		require.ErrorIs(t, err, boom, q)
		return r.RequestCharge
	}
	whole := failedPage(`SELECT VALUE udf.fail(c.x, 0) FROM c ORDER BY c.x DESC`, 0)
	require.Positive(t, whole, "a failed page evaluated whole is charged")
	for _, tc := range []struct {
		q  string
		ok int // pages before the one that fails
	}{
		{`SELECT VALUE udf.fail(c.x, 0) FROM c`, 0},
		{`SELECT VALUE udf.fail(c.x, 55) FROM c`, 5},
		{`SELECT VALUE c.id FROM c WHERE udf.fail(c.x, 0) >= 0`, 0},
	} {
		require.Equal(t, whole, failedPage(tc.q, tc.ok), "%s: a failed page in item order", tc.q)
	}
}
