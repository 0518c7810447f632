package lethetest_test

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/lethetest"
)

// TestItemTTLIgnored: Item says when an item's own ttl is ignored because
// its container's time to live is off: ttl 60, FastForward 61 s, still
// there, and TTLIgnored says why. Nowhere else is a ttl ignored.
func TestItemTTLIgnored(t *testing.T) {
	for _, tc := range []struct {
		name       string
		defaultTTL *int32 // the container's; nil is off
		ttl        any    // the item's; nil is none
		ignored    bool
		expires    bool
	}{
		{"off, ttl 60", nil, 60, true, false},
		{"off, no ttl", nil, nil, false, false},
		{"off, ttl -1", nil, -1, false, false},
		{"on -1, ttl 60", ptr[int32](-1), 60, false, true},
		{"on 3600, ttl 60", ptr[int32](3600), 60, false, true},
		{"on 3600, no ttl", ptr[int32](3600), nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := lethetest.New(t)
			c := a.CreateContainer("app", azcosmos.ContainerProperties{ID: "c",
				PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/user"}},
				DefaultTimeToLive:      tc.defaultTTL})
			extra := map[string]any{}
			if tc.ttl != nil {
				extra["ttl"] = tc.ttl
			}
			put(t, c, "ann", "s", extra)
			it, ok := a.Item("app", "c", lethe.NewPartitionKeyString("ann"), "s")
			if !ok || it.TTLIgnored != tc.ignored || it.Expires != tc.expires {
				t.Fatalf("Item: %+v, %v; want TTLIgnored %v, Expires %v", it, ok, tc.ignored, tc.expires)
			}
		})
	}

	// The trap: ttl 60 in a container whose time to live is off.
	a := lethetest.New(t)
	c := a.CreateContainer("app", azcosmos.ContainerProperties{ID: "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/user"}}})
	put(t, c, "ann", "s", map[string]any{"ttl": 60})
	a.FastForward(61 * time.Second)
	it, ok := a.Item("app", "c", lethe.NewPartitionKeyString("ann"), "s")
	if !ok || !it.TTLIgnored || it.Expires {
		t.Fatalf("ttl 60, 61 s later, TTL off: %+v, %v; want there, TTLIgnored", it, ok)
	}
	// Time to live on: the ttl counts, from the item's last write.
	props, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	props.ContainerProperties.DefaultTimeToLive = ptr[int32](-1)
	if _, err := c.Replace(ctx, *props.ContainerProperties, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Item("app", "c", lethe.NewPartitionKeyString("ann"), "s"); ok {
		t.Fatal("ttl 60, 61 s later, TTL turned on: still there")
	}
}

// TestItemInEveryRegion: ItemIn and ExpiredIn look at any region's
// replica: West US has no item until the lag has passed, then the write
// region's version with the same expiry, and it expires at the same
// instant there as in East US; North Europe, down throughout, never has
// it; Item and Expired are the first region's.
func TestItemInEveryRegion(t *testing.T) {
	a, c := regional(t, "Eventual")
	a.TakeRegionDown("North Europe", lethetest.RegionUnavailable)
	put(t, c, "ann", "s1", nil)
	pk := lethe.NewPartitionKeyString("ann")
	east, ok := a.ItemIn("East US", "app", "sessions", pk, "s1")
	if !ok {
		t.Fatal("East US, the write region, does not hold the item")
	}
	if first, ok := a.Item("app", "sessions", pk, "s1"); !ok || string(first.JSON) != string(east.JSON) {
		t.Fatalf("Item: %s, %v; ItemIn East US: %s", first.JSON, ok, east.JSON)
	}
	if it, ok := a.ItemIn("West US", "app", "sessions", pk, "s1"); ok {
		t.Fatalf("West US holds %s before the lag has passed", it.JSON)
	}
	a.FastForward(10 * time.Second)
	it, ok := a.ItemIn("West US", "app", "sessions", pk, "s1")
	if !ok || string(it.JSON) != string(east.JSON) || !it.ExpiresAt.Equal(east.ExpiresAt) || it.TimeLeft != 50*time.Second {
		t.Fatalf("West US after the lag: %+v, %v; the write region's %+v", it, ok, east)
	}
	if it, ok := a.ItemIn("North Europe", "app", "sessions", pk, "s1"); ok {
		t.Fatalf("North Europe, down, holds %s", it.JSON)
	}
	a.FastForward(50 * time.Second)
	want := a.Expired("app", "sessions")
	if len(want) != 1 || want[0].ID != "s1" || !want[0].ExpiredAt.Equal(east.ExpiresAt.Truncate(time.Second)) {
		t.Fatalf("Expired: %+v, want s1 at %v", want, east.ExpiresAt)
	}
	for _, name := range threeRegions[:2] {
		if _, ok := a.ItemIn(name, "app", "sessions", pk, "s1"); ok {
			t.Errorf("%s still holds the item after its expiry", name)
		}
		got := a.ExpiredIn(name, "app", "sessions")
		if len(got) != 1 || got[0].ID != "s1" || !got[0].ExpiredAt.Equal(want[0].ExpiredAt) {
			t.Errorf("ExpiredIn %s: %+v, want %+v", name, got, want)
		}
	}
	if got := a.ExpiredIn("North Europe", "app", "sessions"); len(got) != 0 {
		t.Errorf("ExpiredIn North Europe, which never had the item: %+v", got)
	}
}
