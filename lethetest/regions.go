package lethetest

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethedb/lethe/cosmosrest"
)

// RegionDownMode is how a region that is down fails its requests
// (cosmosrest.RegionDownMode): RegionRefuse, RegionUnavailable or
// RegionTimeout.
type RegionDownMode = cosmosrest.RegionDownMode

// The ways a region is down.
const (
	// RegionRefuse fails every request as a refused connection would:
	// the client's transport returns an error.
	RegionRefuse = cosmosrest.RegionRefuse
	// RegionUnavailable answers every request 503.
	RegionUnavailable = cosmosrest.RegionUnavailable
	// RegionTimeout holds every request until its context is done (or the
	// region comes up).
	RegionTimeout = cosmosrest.RegionTimeout
)

// regionRouter serves each request with the handler of the region its
// host names; the account's own endpoint is the write region's, as the
// service's global endpoint is.
type regionRouter struct {
	a      *cosmosrest.Account
	global string            // the account's host
	hosts  map[string]string // region by host
}

func (r *regionRouter) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.a.Region(r.region(req.Host)).ServeHTTP(w, req)
}

// region returns the name of the region of host.
func (r *regionRouter) region(host string) string {
	if name, ok := r.hosts[strings.ToLower(host)]; ok {
		return name
	}
	return r.a.WriteRegion()
}

// refused reports whether req's region is down refusing connections.
func (r *regionRouter) refused(req *http.Request) bool {
	return r.a.RegionDown(r.region(req.URL.Host)) == cosmosrest.RegionRefuse
}

// newRegions makes the account a of o.Regions: one handler per region,
// each at an endpoint of its own, behind one transport.
func (a *Account) newRegions(o Options, n int64) error {
	global := fmt.Sprintf("account-%d.lethetest.invalid", n)
	cfg := cosmosrest.AccountConfig{Consistency: o.Consistency, MaxStalenessPrefix: o.MaxStalenessPrefix, MaxIntervalInSeconds: o.MaxIntervalInSeconds, Lag: o.Lag,
		MultipleWriteLocations: o.MultiWrite}
	cfg.Config = cosmosrest.Config{Key: a.key, Dir: o.Dir, Clock: a.clock, Faults: a.faults, Ranges: o.Ranges}
	router := &regionRouter{global: global, hosts: map[string]string{}}
	a.regionEndpoints = map[string]string{}
	for i, name := range o.Regions {
		host := fmt.Sprintf("account-%d-%s.lethetest.invalid", n, cosmosrest.RegionSlug(name))
		router.hosts[host] = name
		a.regionEndpoints[name] = "https://" + host + "/"
		cfg.Regions = append(cfg.Regions, cosmosrest.RegionConfig{Name: name, Writable: i == 0 || o.MultiWrite, Endpoint: a.regionEndpoints[name]})
	}
	acct, err := cosmosrest.NewAccount(cfg)
	if err != nil {
		return err
	}
	router.a = acct
	a.acct = acct
	a.h = acct.Region(o.Regions[0])
	a.tr = NewTransport(router)
	a.tr.refused = router.refused
	a.endpoint = "https://" + global + "/"
	return nil
}

// CosmosAccount returns the account's cosmosrest.Account when it has
// regions (Options.Regions), nil otherwise.
func (a *Account) CosmosAccount() *cosmosrest.Account { return a.acct }

// regions returns the account's cosmosrest.Account, failing the test when
// it has no regions.
func (a *Account) regions() *cosmosrest.Account {
	a.t.Helper()
	if a.acct == nil {
		a.t.Fatal("lethetest: the account has no regions: give Options.Regions")
	}
	return a.acct
}

// RegionEndpoint returns the endpoint of region name, which the account
// resource advertises (the SDKs send a region's requests there); the
// account's own endpoint (Endpoint) reaches its write region.
func (a *Account) RegionEndpoint(name string) string {
	a.t.Helper()
	a.regions()
	e, ok := a.regionEndpoints[name]
	if !ok {
		a.t.Fatalf("lethetest: the account has no region %q", name)
	}
	return e
}

// RegionHandler returns region name's REST front, to look at its
// replica.
func (a *Account) RegionHandler(name string) *cosmosrest.Handler {
	a.t.Helper()
	h := a.regions().Region(name)
	if h == nil {
		a.t.Fatalf("lethetest: the account has no region %q", name)
	}
	return h
}

// NewRegionClient returns a client of the account that prefers regions
// preferred, in order (azcosmos.ClientOptions.PreferredRegions), made
// otherwise as NewClient makes one from o.
func (a *Account) NewRegionClient(preferred []string, o *azcosmos.ClientOptions) *azcosmos.Client {
	a.t.Helper()
	var opts azcosmos.ClientOptions
	if o != nil {
		opts = *o
	}
	opts.PreferredRegions = preferred
	return a.NewClient(&opts)
}

// TakeRegionDown takes region name down: it fails every request as mode
// says, and receives no replicated change until BringRegionUp.
func (a *Account) TakeRegionDown(name string, mode RegionDownMode) {
	a.t.Helper()
	if err := a.regions().TakeRegionDown(name, mode); err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
}

// BringRegionUp brings region name up again.
func (a *Account) BringRegionUp(name string) {
	a.t.Helper()
	if err := a.regions().BringRegionUp(name); err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
}

// Failover makes region to the write region, losing no acknowledged
// write (cosmosrest.Account.Failover).
func (a *Account) Failover(to string) {
	a.t.Helper()
	if err := a.regions().Failover(to); err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
}

// WriteRegion returns the name of the account's write region.
func (a *Account) WriteRegion() string {
	a.t.Helper()
	return a.regions().WriteRegion()
}
