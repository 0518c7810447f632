package sdktest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethedb/lethe/lethetest"
)

// TestConflictResolutionPolicy: azcosmos creates a container with Last
// Writer Wins on a path of its own and reads the policy back; in an
// account of two write regions, an item created in both within the lag
// ends, in both, as the version with the higher number there, though it
// was written first.
func TestConflictResolutionPolicy(t *testing.T) {
	ctx := context.Background()
	a := lethetest.NewWithOptions(t, lethetest.Options{Regions: []string{"East US", "West US"}, MultiWrite: true, Consistency: "Eventual",
		Lag: func(string, string) time.Duration { return 10 * time.Second }})
	if _, err := a.Client().CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, err := a.Client().NewDatabase("db")
	if err != nil {
		t.Fatal(err)
	}
	policy := &azcosmos.ConflictResolutionPolicy{Mode: azcosmos.ConflictResolutionModeLastWriteWins, ResolutionPath: "/score"}
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", ConflictResolutionPolicy: policy,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/user"}}}, nil); err != nil {
		t.Fatal(err)
	}
	containerIn := func(region string) *azcosmos.ContainerClient {
		c, err := a.NewRegionClient([]string{region}, nil).NewContainer("db", "c")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	east, west := containerIn("East US"), containerIn("West US")
	r, err := west.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.ContainerProperties.ConflictResolutionPolicy; got == nil || *got != *policy {
		t.Fatalf("the policy read back: %+v, want %+v", got, policy)
	}
	pk := azcosmos.NewPartitionKeyString("ann")
	if _, err := east.CreateItem(ctx, pk, []byte(`{"id":"x","user":"ann","score":9,"v":"east"}`), nil); err != nil {
		t.Fatal(err)
	}
	a.FastForward(time.Second)
	if _, err := west.CreateItem(ctx, pk, []byte(`{"id":"x","user":"ann","score":2,"v":"west"}`), nil); err != nil {
		t.Fatal(err)
	}
	a.FastForward(10 * time.Second)
	for _, c := range []*azcosmos.ContainerClient{east, west} {
		r, err := c.ReadItem(ctx, pk, "x", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(r.Value), `"v":"east"`) {
			t.Errorf("a region keeps %s, not the version of the higher score", r.Value)
		}
	}
}
