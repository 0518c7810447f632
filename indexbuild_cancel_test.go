package lethe_test

import (
	"fmt"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// TestIndexBuildCancelledByPolicyChange: a policy change while an index of
// /k is being built cancels the build, even when the new policy still
// indexes /k (a build stops logging the writes made after it is
// cancelled): the index is not published, and the writes made meanwhile to
// a shard the build had read already are in what the queries answer.
func TestIndexBuildCancelledByPolicyChange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		excluded string // the path the policy change excludes
	}{
		{"another path excluded", "/x/?"},
		{"the path excluded", "/k/?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore(t)
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})
			for i := range 40 {
				create(t, c, fmt.Sprintf(`{"id":"i%d","k":%d}`, i, i%2))
			}
			const q = `SELECT VALUE c.id FROM c WHERE c.k = 1`
			queryAll(t, c, q, nil, lethe.NewPartitionKey()) // the first filter on /k scans
			require.Zero(t, lethe.IndexCount(c))

			var added []string
			lethe.SetAfterBuildShard(c, func(shard int) {
				if shard != 0 || added != nil {
					return
				}
				p, err := c.Read(ctx)
				require.NoError(t, err)
				p.IndexingPolicy = &lethe.IndexingPolicy{ExcludedPaths: []lethe.IndexPath{{Path: tc.excluded}}}
				require.NoError(t, c.Replace(ctx, p))
				// New items in the shard the build has read: it no
				// longer logs them.
				for i := 0; len(added) < 3; i++ {
					id := fmt.Sprintf("new%d", i)
					if lethe.ShardOf(c, lethe.NewPartitionKey(), id) == 0 {
						create(t, c, fmt.Sprintf(`{"id":%q,"k":1}`, id))
						added = append(added, id)
					}
				}
			})
			t.Cleanup(func() { lethe.SetAfterBuildShard(c, nil) })
			queryAll(t, c, q, nil, lethe.NewPartitionKey()) // the second builds the index
			require.NotNil(t, added, "the build ran")
			require.Zero(t, lethe.IndexCount(c), "a cancelled build publishes no index")

			for range 2 { // a build afresh (if allowed), then its index
				got, _ := queryAll(t, c, q, nil, lethe.NewPartitionKey())
				was := lethe.SetUseIndexes(c, false)
				want, _ := queryAll(t, c, q, nil, lethe.NewPartitionKey())
				lethe.SetUseIndexes(c, was)
				require.Len(t, want, 23)
				require.ElementsMatch(t, want, got)
			}
		})
	}
}
