package lethetest_test

import (
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethedb/lethe/lethetest"
)

// TestRanges: with Options.Ranges.Min, the account's containers have that
// many partition key ranges, and azcosmos's writes and reads of keys
// spread over them each name their range (x-ms-documentdb-partitionkeyrangeid)
// and go on working; without it, one range.
func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		min, want int
	}{{0, 1}, {4, 4}} {
		a := lethetest.NewWithOptions(t, lethetest.Options{Ranges: lethetest.RangeConfig{Min: tc.min}})
		c := sessions(t, a)
		seen := map[string]bool{}
		for i := range 16 {
			user := fmt.Sprintf("u%d", i)
			put(t, c, user, "s", nil)
			r, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString(user), "s", nil)
			if err != nil {
				t.Fatal(err)
			}
			seen[r.RawResponse.Header.Get("x-ms-documentdb-partitionkeyrangeid")] = true
		}
		if tc.want == 1 && (len(seen) != 1 || !seen["0"]) {
			t.Errorf("min %d: ranges named %v, want only 0", tc.min, seen)
		}
		for id := range seen {
			if id == "" || len(seen) < 2 && tc.want > 1 {
				t.Errorf("min %d: ranges named %v", tc.min, seen)
			}
			var n int
			if _, err := fmt.Sscan(id, &n); err != nil || n >= tc.want {
				t.Errorf("min %d: range %q of %d", tc.min, id, tc.want)
			}
		}
	}
}
