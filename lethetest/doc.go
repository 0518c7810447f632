// Package lethetest runs the official Azure Cosmos DB Go SDK (azcosmos)
// against lethe in the test's own process, with time and faults under the
// test's control: miniredis's ergonomics for Cosmos DB.
//
//	func TestSessions(t *testing.T) {
//		acct := lethetest.New(t) // a fresh account, closed when t ends
//		c := acct.CreateContainer("app", azcosmos.ContainerProperties{ID: "sessions",
//			PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}},
//			DefaultTimeToLive:      &hour})
//		store := NewSessionStore(c) // the code under test, written against azcosmos only
//		...
//		acct.FastForward(61 * time.Minute) // every session has expired, no sleep
//	}
//
// The account is a cosmosrest.Handler, the very handler cmd/lethe serves,
// over in-memory lethe stores. Its clients reach it through a Transport,
// an azcore policy.Transporter that calls the handler in the calling
// goroutine: no listener, no TLS, no certificate, yet every request is
// the one the SDK would send over HTTPS (account discovery, signatures,
// pagers, the change feed, batches, patches), so code tested here runs
// unchanged against Azure Cosmos DB by changing its endpoint and key.
//
// # Time
//
// The account's clock is a lethe.ManualClock starting at the present.
// FastForward and SetTime move it: items whose time to live ends expire,
// the reaper purges them before the call returns, the change feed records
// the expiries, and the next SDK call sees it all. Throughput refills by
// the same clock. Request signatures are dated by the system clock, as the
// SDK dates them, and are checked against it.
//
// # Faults
//
// Inject adds a fault injection rule as the .NET and Java SDKs define
// them (FaultInjectionRule): a condition (operation type, database,
// container, partition key), a result (TooManyRequests with a retry-after,
// ServiceUnavailable, RequestTimeout, Gone with substatus 1002 or 1007,
// InternalServerError, or a Delay), and how often it fires (the first
// HitLimit matches, or with InjectionRate from a Seed, so that a run
// replays). The SDK's own retry policies run against the answers; the
// rule counts its hits. cmd/lethe applies the same rules, set through its
// control endpoint /_lethe/faults (see the cosmosrest package
// documentation), for tests in other languages.
//
// # Regions
//
// Options.Regions makes the account one of several regions
// (cosmosrest.Account), each at an endpoint of its own on the one
// in-process transport (RegionEndpoint), with a consistency level
// (Options.Consistency) and a replication lag (Options.Lag) that runs on
// the account's clock: FastForward delivers what fell due. NewRegionClient
// makes a client with PreferredRegions; TakeRegionDown, BringRegionUp and
// Failover fail regions and move the write region, and the SDK follows as
// against the service. Options.MultiWrite makes every region a write
// region. See docs/regions.md in the repository.
//
// # Looking inside
//
// Item reads an item as stored, with its _ts, its time left, and whether
// its own ttl is ignored because the container's time to live is off
// (StoredItem.TTLIgnored); Expired lists what expired in a container. Neither costs request units nor passes the
// fault rules.
//
// # Importing
//
// lethetest is a module of its own, so that the root module
// (github.com/lethedb/lethe) needs no Azure SDK. Until lethe is
// published, a module outside this repository uses it through replace
// lines (or a go.work) that name both it and github.com/lethedb/lethe:
// docs/install.md in the repository gives them, and TestInstallDoc builds
// a module from them. Once published, lethetest is tagged
// lethetest/vX.Y.Z beside the library's vX.Y.Z:
//
//	go get github.com/lethedb/lethe/lethetest@vX.Y.Z
//
// Inside this repository its go.mod replaces github.com/lethedb/lethe with
// the working tree (../), so that both change together.
package lethetest
