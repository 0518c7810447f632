package lethe_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// TestQueryTokenParameterOrder: a continuation token answers its query
// with the same parameters in any order (the REST front gives them in a
// map's order), and still refuses other values.
func TestQueryTokenParameterOrder(t *testing.T) {
	t.Parallel()
	c, _ := newContainer(t, lethe.TTLOff)
	for i := range 10 {
		create(t, c, fmt.Sprintf(`{"id":"i%d","n":%d}`, i, i))
	}
	const q = "SELECT VALUE c.id FROM c WHERE c.n >= @a AND c.n < @b AND @c < @d ORDER BY c.n DESC"
	params := []lethe.QueryParameter{{Name: "@a", Value: 2}, {Name: "@b", Value: 9}, {Name: "@c", Value: 1}, {Name: "@d", Value: 2}}
	r, err := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 3, QueryParameters: params}).NextPage(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{`"i8"`, `"i7"`, `"i6"`}, texts(r.Items))

	reversed := slices.Clone(params)
	slices.Reverse(reversed)
	next, err := c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 3, QueryParameters: reversed, ContinuationToken: r.ContinuationToken}).NextPage(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{`"i5"`, `"i4"`, `"i3"`}, texts(next.Items))

	reversed[0].Value = 3 // @d
	_, err = c.NewQueryItemsPager(q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 3, QueryParameters: reversed, ContinuationToken: r.ContinuationToken}).NextPage(ctx)
	require.ErrorIs(t, err, lethe.ErrBadRequest)
}
