package lethetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// Options configure an Account. The zero value is an in-memory account
// under the emulator's key, on a manual clock that starts at the present.
type Options struct {
	// Key is the account's master key, base64; "" means
	// cosmosrest.EmulatorKey.
	Key string
	// Clock is the account's clock: every _ts, every expiry and every
	// throughput refill reads it. nil means a new *lethe.ManualClock at
	// the present, which FastForward and SetTime move; with a clock of
	// another kind they fail the test.
	Clock lethe.Clock
	// Throughput is the manual throughput, in RU/s, of the containers that
	// Account.CreateContainer creates; 0 means none (every request is
	// served). Throughput refills by the account's clock: under a manual
	// clock, a test that spends it moves the clock to get it back.
	Throughput int32
	// Dir is "" for an account in memory, or a directory to keep its
	// databases in (cosmosrest.Config.Dir), such as t.TempDir().
	Dir string
	// ClientOptions are the options of the account's client; its
	// Transport is always the account's in-process one.
	ClientOptions *azcosmos.ClientOptions
	// Ranges says how many partition key ranges the account's containers
	// have (RangeConfig): with Ranges.Min, a test exercises an
	// SDK's paths over several ranges without asking for throughput. The
	// zero value follows the service: one range a 10,000 RU/s of a
	// container's own throughput.
	Ranges RangeConfig

	// Regions, when set, make the account one of several regions
	// (cosmosrest.Account), each at an endpoint of its own
	// (RegionEndpoint) on the one transport; the first is the write
	// region. Endpoint reaches the write region. None is one region, as
	// ever.
	Regions []string
	// MultiWrite makes every region of Regions a write region
	// (cosmosrest.AccountConfig.MultipleWriteLocations): writes to one
	// item in two regions within the lag conflict, and the one written
	// last wins everywhere.
	MultiWrite bool
	// Consistency is the default consistency level of an account of
	// Regions ("" means Session); MaxStalenessPrefix and
	// MaxIntervalInSeconds bound a BoundedStaleness account
	// (cosmosrest.AccountConfig).
	Consistency                              string
	MaxStalenessPrefix, MaxIntervalInSeconds int
	// Lag is the replication lag of each change from region from to
	// region to, by the account's clock: a change reaches a read region
	// when FastForward or SetTime has moved the clock past it. nil means
	// none.
	Lag func(from, to string) time.Duration
}

// RangeConfig is cosmosrest.RangeConfig: how many partition key ranges a
// container has (Min, at least; one a Throughput RU/s of its own).
type RangeConfig = cosmosrest.RangeConfig

// Account is a Cosmos DB account in the test's own process: a
// cosmosrest.Handler (the very handler cmd/lethe serves) over in-memory
// lethe stores, a manual clock, fault injection rules, and an azcosmos
// client that reaches the handler through an in-process Transport. Its
// methods fail the test they were made for on error. An Account is safe for
// concurrent use.
type Account struct {
	t         testing.TB
	h         *cosmosrest.Handler
	tr        *Transport
	faults    *cosmosrest.Faults
	clock     lethe.Clock
	key       string
	endpoint  string
	client    *azcosmos.Client
	through   int32
	clientsMu sync.Mutex
	clients   []*azcosmos.Client

	acct            *cosmosrest.Account // with Options.Regions
	regionEndpoints map[string]string   // by region's name
}

// accounts numbers the accounts of the process: each has an endpoint of
// its own, since azcosmos shares its metadata caches between the clients
// of one endpoint.
var accounts atomic.Int64

// New returns a fresh in-memory account with the default Options and a
// ready client, closed when the test ends.
func New(t testing.TB) *Account { return NewWithOptions(t, Options{}) }

// NewWithOptions returns a fresh account configured by o, closed when the
// test ends.
func NewWithOptions(t testing.TB, o Options) *Account {
	t.Helper()
	a := &Account{t: t, key: o.Key, clock: o.Clock, faults: &cosmosrest.Faults{}, through: o.Throughput}
	if a.key == "" {
		a.key = cosmosrest.EmulatorKey
	}
	if a.clock == nil {
		a.clock = lethe.NewManualClock(time.Now().Truncate(time.Second))
	}
	if len(o.Regions) > 0 {
		if err := a.newRegions(o, accounts.Add(1)); err != nil {
			t.Fatalf("lethetest: %v", err)
		}
	} else {
		h, err := cosmosrest.New(cosmosrest.Config{Key: a.key, Dir: o.Dir, Clock: a.clock, Faults: a.faults, Ranges: o.Ranges})
		if err != nil {
			t.Fatalf("lethetest: %v", err)
		}
		a.h = h
		a.tr = NewTransport(h)
		a.endpoint = fmt.Sprintf("https://account-%d.lethetest.invalid/", accounts.Add(1))
	}
	t.Cleanup(a.close)
	a.client = a.NewClient(o.ClientOptions)
	return a
}

func (a *Account) close() {
	a.clientsMu.Lock()
	for _, c := range a.clients {
		c.Close()
	}
	a.clients = nil
	a.clientsMu.Unlock()
	closer := io.Closer(a.h)
	if a.acct != nil {
		closer = a.acct
	}
	if err := closer.Close(); err != nil {
		a.t.Errorf("lethetest: closing the account: %v", err)
	}
}

// Client returns the account's client.
func (a *Account) Client() *azcosmos.Client { return a.client }

// NewClient returns another client of the account, made with o (nil: the
// defaults), such as one with other RetryOptions; its Transport is the
// account's in-process one whatever o says. It is closed when the test
// ends.
func (a *Account) NewClient(o *azcosmos.ClientOptions) *azcosmos.Client {
	a.t.Helper()
	var opts azcosmos.ClientOptions
	if o != nil {
		opts = *o
	}
	opts.Transport = a.tr
	cred, err := azcosmos.NewKeyCredential(a.key)
	if err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
	c, err := azcosmos.NewClientWithKey(a.endpoint, cred, &opts)
	if err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
	a.clientsMu.Lock()
	a.clients = append(a.clients, c)
	a.clientsMu.Unlock()
	return c
}

// Endpoint returns the account's endpoint, unique in the process. It names
// no host of the network: only a client with the account's Transport
// reaches it.
func (a *Account) Endpoint() string { return a.endpoint }

// Key returns the account's master key.
func (a *Account) Key() string { return a.key }

// Transport returns the in-process transport of the account's clients.
func (a *Account) Transport() *Transport { return a.tr }

// Handler returns the account's REST front, to serve it otherwise (over
// httptest, say) or to look at its stores: in an account of regions, the
// first region's (RegionHandler returns any region's).
func (a *Account) Handler() *cosmosrest.Handler { return a.h }

// Now returns the account's time.
func (a *Account) Now() time.Time { return a.clock.Now() }

// manual returns the account's manual clock, failing the test if it has
// another kind.
func (a *Account) manual() *lethe.ManualClock {
	a.t.Helper()
	m, ok := a.clock.(*lethe.ManualClock)
	if !ok {
		a.t.Fatalf("lethetest: the account's clock is a %T, not a *lethe.ManualClock: it cannot be moved", a.clock)
	}
	return m
}

// FastForward moves the account's clock forward by d. In an account of
// regions, every change whose lag has passed by then has reached its
// region. Everything whose
// time to live ends by then has expired when FastForward returns: reads
// and queries miss it, the reaper has purged it, and the change feed
// records the expiry (a delete with timeToLiveExpired, in the
// all-versions-and-deletes mode), as if d had passed. Throughput refills
// as for d.
func (a *Account) FastForward(d time.Duration) {
	a.t.Helper()
	a.manual().Advance(d)
	a.purge()
}

// SetTime moves the account's clock to t, as FastForward does. Moving it
// backwards is allowed, as with lethe.ManualClock.Set: what expired and
// was purged stays gone.
func (a *Account) SetTime(t time.Time) {
	a.t.Helper()
	a.manual().Set(t)
	a.purge()
}

func (a *Account) purge() {
	a.t.Helper()
	handlers := []*cosmosrest.Handler{a.h}
	if a.acct != nil {
		a.acct.DeliverDue()
		handlers = handlers[:0]
		for _, name := range a.acct.Regions() {
			handlers = append(handlers, a.acct.Region(name))
		}
	}
	for _, h := range handlers {
		if _, err := h.Purge(context.Background()); err != nil {
			a.t.Fatalf("lethetest: purging: %v", err)
		}
	}
}

// CreateContainer creates database db unless it exists, and container
// props in it, with Options.Throughput if set, and returns its client.
func (a *Account) CreateContainer(db string, props azcosmos.ContainerProperties) *azcosmos.ContainerClient {
	a.t.Helper()
	ctx := context.Background()
	if _, err := a.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: db}, nil); err != nil {
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusConflict {
			a.t.Fatalf("lethetest: creating database %q: %v", db, err)
		}
	}
	d, err := a.client.NewDatabase(db)
	if err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
	var o *azcosmos.CreateContainerOptions
	if a.through > 0 {
		tp := azcosmos.NewManualThroughputProperties(a.through)
		o = &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}
	}
	if _, err := d.CreateContainer(ctx, props, o); err != nil {
		a.t.Fatalf("lethetest: creating container %q: %v", props.ID, err)
	}
	c, err := d.NewContainer(props.ID)
	if err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
	return c
}
