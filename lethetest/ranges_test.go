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

// TestSplitAzcosmos: after SplitPartitionKeyRange, azcosmos's change feed
// continuation taken before the split resumes over the children (the
// parent's 410/1002 refreshes its ranges), and every change is read once;
// ReadManyItems and point reads go on; ReadFeedRanges lists the children.
func TestSplitAzcosmos(t *testing.T) {
	a := lethetest.NewWithOptions(t, lethetest.Options{Ranges: lethetest.RangeConfig{Min: 2}})
	c := sessions(t, a)
	var want []azcosmos.ItemIdentity
	write := func(from, to int) {
		for i := from; i < to; i++ {
			user := fmt.Sprintf("u%d", i%16)
			id := fmt.Sprintf("s%d", i)
			put(t, c, user, id, nil)
			want = append(want, azcosmos.ItemIdentity{ID: id, PartitionKey: azcosmos.NewPartitionKeyString(user)})
		}
	}
	write(0, 20)
	seen := map[string]int{}
	read := func(o *azcosmos.ChangeFeedOptions) string {
		t.Helper()
		for {
			resp, err := c.ReadChangeFeed(ctx, o)
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
			o.Continuation = &resp.ContinuationToken
			if len(resp.Items) == 0 {
				return resp.ContinuationToken
			}
		}
	}
	whole := azcosmos.FeedRange{MinInclusive: "", MaxExclusive: "FF"}
	token := read(&azcosmos.ChangeFeedOptions{MaxItemCount: 7, FeedRange: &whole})
	if got := a.SplitPartitionKeyRange("app", "sessions", "0"); len(got) != 2 || got[0] != "2" || got[1] != "3" {
		t.Fatalf("children %v", got)
	}
	write(20, 40)
	read(&azcosmos.ChangeFeedOptions{MaxItemCount: 7, Continuation: &token})
	if len(seen) != 40 {
		t.Errorf("the change feed across the split read %d of 40 items", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("item %s read %d times", id, n)
		}
	}
	many, err := c.ReadManyItems(ctx, want, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(many.Items) != len(want) {
		t.Errorf("ReadManyItems after the split found %d of %d", len(many.Items), len(want))
	}
	ranges, err := c.ReadFeedRanges(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ranges) != 3 {
		t.Errorf("%d feed ranges after splitting one of 2", len(ranges))
	}
}
