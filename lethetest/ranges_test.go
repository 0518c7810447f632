package lethetest_test

import (
	"encoding/json"
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

// TestRangesAzcosmos: azcosmos routes by its own effective partition key
// hashing and the ranges /pkranges lists: ReadManyItems, which queries
// each range for the items it computes are there, finds every item, and a
// change feed of each of ReadFeedRanges' ranges holds its items alone,
// every item once over all of them.
func TestRangesAzcosmos(t *testing.T) {
	a := lethetest.NewWithOptions(t, lethetest.Options{Ranges: lethetest.RangeConfig{Min: 4}})
	c := sessions(t, a)
	var want []azcosmos.ItemIdentity
	for i := range 32 {
		user := fmt.Sprintf("u%d", i%16)
		id := fmt.Sprintf("s%d", i)
		put(t, c, user, id, nil)
		want = append(want, azcosmos.ItemIdentity{ID: id, PartitionKey: azcosmos.NewPartitionKeyString(user)})
	}
	many, err := c.ReadManyItems(ctx, want, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(many.Items) != len(want) {
		t.Errorf("ReadManyItems found %d of %d items", len(many.Items), len(want))
	}
	ranges, err := c.ReadFeedRanges(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ranges) != 4 {
		t.Fatalf("%d feed ranges", len(ranges))
	}
	seen := map[string]int{}
	for _, fr := range ranges {
		resp, err := c.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: &fr, MaxItemCount: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range resp.Items {
			var doc struct{ ID string }
			if err := json.Unmarshal(item, &doc); err != nil {
				t.Fatal(err)
			}
			seen[doc.ID]++
		}
	}
	if len(seen) != len(want) {
		t.Errorf("the feed ranges' change feeds hold %d of %d items", len(seen), len(want))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("item %s in %d feed ranges' change feeds", id, n)
		}
	}
}
