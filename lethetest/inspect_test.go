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
