package lethetest_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/lethetest"
)

var threeRegions = []string{"East US", "West US", "North Europe"}

// regional returns an account of threeRegions (East US writes) whose
// changes reach the read regions 10 s after they are written, with a
// container app/sessions on /user.
func regional(t *testing.T, consistency string) (*lethetest.Account, *azcosmos.ContainerClient) {
	t.Helper()
	a := lethetest.NewWithOptions(t, lethetest.Options{Regions: threeRegions, Consistency: consistency,
		Lag: func(string, string) time.Duration { return 10 * time.Second }})
	return a, sessions(t, a)
}

func regionContainer(t *testing.T, c *azcosmos.Client) *azcosmos.ContainerClient {
	t.Helper()
	cc, err := c.NewContainer("app", "sessions")
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// countingPolicy counts the requests sent to each host.
type countingPolicy struct{ hosts map[string]*atomic.Int64 }

func (p countingPolicy) Do(req *policy.Request) (*http.Response, error) {
	if n, ok := p.hosts[req.Raw().URL.Host]; ok {
		n.Add(1)
	}
	return req.Next()
}

// attempt is one attempt an azcosmos client made at an item request: the
// region whose endpoint it went to ("account" for the account's own
// endpoint), its method, and the status (0: no answer) and substatus it
// got.
type attempt struct {
	region, method string
	status         int
	substatus      string
}

// wirePolicy records the attempts of a client's item requests, each
// retry its own (a per-retry policy).
type wirePolicy struct {
	regions map[string]string // region by its endpoint's host
	mu      *sync.Mutex
	tries   *[]attempt
}

// newWire returns a wirePolicy for a's regions and options that install
// it.
func newWire(a *lethetest.Account) (wirePolicy, *azcosmos.ClientOptions) {
	w := wirePolicy{regions: map[string]string{}, mu: new(sync.Mutex), tries: new([]attempt)}
	for _, name := range threeRegions {
		u, _ := url.Parse(a.RegionEndpoint(name))
		w.regions[u.Host] = name
	}
	opts := &azcosmos.ClientOptions{}
	opts.PerRetryPolicies = []policy.Policy{w}
	return w, opts
}

func (w wirePolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	u := req.Raw().URL
	if !strings.Contains(u.Path, "/docs") {
		return resp, err
	}
	at := attempt{region: w.regions[u.Host], method: req.Raw().Method}
	if at.region == "" {
		at.region = "account"
	}
	if resp != nil {
		at.status, at.substatus = resp.StatusCode, resp.Header.Get("x-ms-substatus")
	}
	w.mu.Lock()
	*w.tries = append(*w.tries, at)
	w.mu.Unlock()
	return resp, err
}

// since returns the attempts after the first n, and how many there are.
func (w wirePolicy) since(n int) ([]attempt, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone((*w.tries)[n:]), len(*w.tries)
}

// TestRegionsPreferredRegions: a client preferring West US reads there (it
// does not have the new item until the lag has passed) and writes in the
// write region.
func TestRegionsPreferredRegions(t *testing.T) {
	a, c := regional(t, "Eventual")
	west := regionContainer(t, a.NewRegionClient([]string{"West US"}, nil))
	pk := azcosmos.NewPartitionKeyString("ann")
	if _, err := west.CreateItem(ctx, pk, []byte(`{"id":"s1","user":"ann"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadItem(ctx, pk, "s1", nil); err != nil {
		t.Fatalf("the write region: %v", err)
	}
	if _, err := west.ReadItem(ctx, pk, "s1", nil); err == nil {
		t.Fatal("West US read the item before the lag had passed: the read did not go there")
	}
	a.FastForward(10 * time.Second)
	if _, err := west.ReadItem(ctx, pk, "s1", nil); err != nil {
		t.Fatalf("West US after the lag: %v", err)
	}
	if a.RegionEndpoint("West US") == a.Endpoint() {
		t.Error("a region's endpoint is the account's")
	}
}

// TestRegionsSessionRetry: a session read in a region behind the client's
// token gets 404/1002, and the SDK retries it in the write region:
// read-your-writes holds.
func TestRegionsSessionRetry(t *testing.T) {
	a, _ := regional(t, "Session")
	hosts := map[string]*atomic.Int64{}
	for _, name := range threeRegions {
		hosts[a.RegionEndpoint(name)[len("https://"):len(a.RegionEndpoint(name))-1]] = new(atomic.Int64)
	}
	opts := &azcosmos.ClientOptions{}
	opts.PerRetryPolicies = []policy.Policy{countingPolicy{hosts}}
	west := regionContainer(t, a.NewRegionClient([]string{"West US"}, opts))
	pk := azcosmos.NewPartitionKeyString("ann")
	w, err := west.UpsertItem(ctx, pk, []byte(`{"id":"s1","user":"ann","v":1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	westHost := a.RegionEndpoint("West US")[len("https://") : len(a.RegionEndpoint("West US"))-1]
	before := hosts[westHost].Load()
	r, err := west.ReadItem(ctx, pk, "s1", &azcosmos.ItemOptions{SessionToken: w.SessionToken})
	if err != nil {
		t.Fatalf("a session read after the client's own write: %v", err)
	}
	if string(r.Value) == "" || hosts[westHost].Load() == before {
		t.Errorf("the read did not try West US first (%d requests there)", hosts[westHost].Load()-before)
	}
}

// TestRegionsRegionDown: a client preferring a region that goes down
// keeps reading, from the next region, in every way a region fails: its
// attempts go to the region down, then to the next it prefers (never to
// the write region, which it does not list), and the reads it makes while
// the region is down are answered there.
func TestRegionsRegionDown(t *testing.T) {
	for _, mode := range []lethetest.RegionDownMode{lethetest.RegionRefuse, lethetest.RegionUnavailable} {
		t.Run(string(mode), func(t *testing.T) {
			a, c := regional(t, "Eventual")
			put(t, c, "ann", "s1", nil)
			a.FastForward(10 * time.Second)
			wire, opts := newWire(a)
			west := regionContainer(t, a.NewRegionClient([]string{"West US", "North Europe"}, opts))
			pk := azcosmos.NewPartitionKeyString("ann")
			if _, err := west.ReadItem(ctx, pk, "s1", nil); err != nil {
				t.Fatal(err)
			}
			if tries, _ := wire.since(0); !slices.Equal(tries, []attempt{{"West US", "GET", 200, ""}}) {
				t.Fatalf("a read with every region up: %+v, want one to West US", tries)
			}
			_, n := wire.since(0)
			a.TakeRegionDown("West US", mode)
			down := 0 // the attempts West US failed
			for i := range 3 {
				if _, err := west.ReadItem(ctx, pk, "s1", nil); err != nil {
					t.Fatalf("read %d with West US down (%s): %v", i, mode, err)
				}
				var tries []attempt
				tries, n = wire.since(n)
				if len(tries) == 0 || tries[len(tries)-1] != (attempt{"North Europe", "GET", 200, ""}) {
					t.Fatalf("read %d with West US down (%s) was not answered by North Europe: %+v", i, mode, tries)
				}
				for _, try := range tries[:len(tries)-1] {
					if try.region != "West US" || try.status == 200 {
						t.Fatalf("read %d with West US down (%s): an attempt other than West US failing: %+v", i, mode, tries)
					}
					down++
				}
			}
			if down == 0 {
				t.Fatalf("no read tried West US, down (%s), first", mode)
			}
			a.BringRegionUp("West US")
			if _, err := west.ReadItem(ctx, pk, "s1", nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRegionsFailover: writers go on through a manual failover; the SDK
// finds the new write region by itself (403/3, then the account again);
// no acknowledged write is lost or made twice, in any region.
//
// Its attempts are the ones the topology implies: every write to East US
// before the failover; after it, the first to East US, answered 403/3,
// then to West US, and every later one to West US.
func TestRegionsFailover(t *testing.T) {
	a, _ := regional(t, "Session")
	wire, opts := newWire(a)
	c := regionContainer(t, a.NewClient(opts))
	pk := azcosmos.NewPartitionKeyString("ann")
	acked := 0
	// write writes one item and returns the attempts it made.
	write := func() []attempt {
		t.Helper()
		_, n := wire.since(0)
		if _, err := c.CreateItem(ctx, pk, fmt.Appendf(nil, `{"id":"%d","user":"ann"}`, acked), nil); err != nil {
			t.Fatalf("write %d: %v", acked, err)
		}
		acked++
		tries, _ := wire.since(n)
		return tries
	}
	for range 5 {
		if tries := write(); !slices.Equal(tries, []attempt{{"East US", "POST", 201, ""}}) {
			t.Fatalf("write %d before the failover: %+v, want one to East US", acked-1, tries)
		}
	}
	a.Failover("West US")
	if a.WriteRegion() != "West US" {
		t.Fatalf("write region %q", a.WriteRegion())
	}
	first := write()
	if len(first) < 2 || first[0] != (attempt{"East US", "POST", 403, "3"}) || first[len(first)-1] != (attempt{"West US", "POST", 201, ""}) {
		t.Fatalf("the first write after the failover: %+v, want East US 403/3 first, West US 201 last", first)
	}
	for _, try := range first[1 : len(first)-1] {
		if try.status == 201 {
			t.Fatalf("the first write after the failover was made twice: %+v", first)
		}
	}
	for range 4 {
		if tries := write(); !slices.Equal(tries, []attempt{{"West US", "POST", 201, ""}}) {
			t.Fatalf("write %d after the failover: %+v, want one to West US", acked-1, tries)
		}
	}
	a.FastForward(10 * time.Second)
	for _, name := range threeRegions {
		s, ok := a.RegionHandler(name).Store("app")
		if !ok {
			t.Fatalf("%s has no database app", name)
		}
		cont, err := s.Container("sessions")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, err := range cont.QueryItems(ctx, "SELECT * FROM c", lethe.PartitionKey{}, nil) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != acked {
			t.Errorf("%s holds %d items, %d were acknowledged", name, n, acked)
		}
		for i := range acked {
			if _, err := cont.ReadItem(ctx, lethe.NewPartitionKeyString("ann"), fmt.Sprint(i), nil); err != nil {
				t.Errorf("%s: item %d: %v", name, i, err)
			}
		}
	}
}

// TestRegionsMultiWrite: in an account of two write regions, clients
// preferring each write there; the same item written in both within the
// lag ends, in both, as the one written last.
func TestRegionsMultiWrite(t *testing.T) {
	a := lethetest.NewWithOptions(t, lethetest.Options{Regions: threeRegions[:2], MultiWrite: true, Consistency: "Eventual",
		Lag: func(string, string) time.Duration { return 10 * time.Second }})
	sessions(t, a)
	east := regionContainer(t, a.NewRegionClient([]string{"East US"}, nil))
	west := regionContainer(t, a.NewRegionClient([]string{"West US"}, nil))
	pk := azcosmos.NewPartitionKeyString("ann")
	if _, err := east.CreateItem(ctx, pk, []byte(`{"id":"s1","user":"ann","v":"east"}`), nil); err != nil {
		t.Fatal(err)
	}
	a.FastForward(time.Second)
	if _, err := west.CreateItem(ctx, pk, []byte(`{"id":"s1","user":"ann","v":"west"}`), nil); err != nil {
		t.Fatalf("the same item created in West US within the lag: %v", err)
	}
	a.FastForward(10 * time.Second)
	for _, c := range []*azcosmos.ContainerClient{east, west} {
		r, err := c.ReadItem(ctx, pk, "s1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(r.Value), `"v":"west"`) {
			t.Errorf("a region keeps %s, not the version written last", r.Value)
		}
	}
}
