package lethe_test

import (
	"fmt"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// TestCountOverJoinNotFromIndex: a COUNT over a JOIN counts rows, one per
// array element, not items, so an index count (which counts items) must
// not answer it; with the index of /k made, it answers as the scan does.
func TestCountOverJoinNotFromIndex(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})
	for i := range 10 {
		create(t, c, fmt.Sprintf(`{"id":"i%d","k":%d,"tags":["a","b","c"]}`, i, i%2))
	}
	// The first filter on /k scans, the second makes its index.
	for range 2 {
		queryAll(t, c, `SELECT VALUE c.id FROM c WHERE c.k = 1`, nil, lethe.NewPartitionKey())
	}
	require.Equal(t, 1, lethe.IndexCount(c), "the index of /k is made")
	for _, tc := range []struct{ q, want string }{
		{`SELECT VALUE COUNT(1) FROM c JOIN t IN c.tags WHERE c.k = 1`, "15"},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.k = 1`, "5"},
	} {
		indexed, _ := queryAll(t, c, tc.q, nil, lethe.NewPartitionKey())
		was := lethe.SetUseIndexes(c, false)
		scanned, _ := queryAll(t, c, tc.q, nil, lethe.NewPartitionKey())
		lethe.SetUseIndexes(c, was)
		require.Equal(t, []string{tc.want}, scanned, "scan: %s", tc.q)
		require.Equal(t, scanned, indexed, "with the index: %s", tc.q)
	}
}
