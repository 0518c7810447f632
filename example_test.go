package lethe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lethedb/lethe"
)

// A container whose items expire 30 seconds after their last write, unless
// an item says otherwise.
func Example() {
	ctx := context.Background()
	clock := lethe.NewManualClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	store, err := lethe.Open(&lethe.Options{Clock: clock})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	sessions, err := store.CreateContainer(ctx, lethe.ContainerProperties{ID: "sessions", DefaultTimeToLive: 30})
	if err != nil {
		panic(err)
	}
	sessions.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"alice"}`), nil)
	sessions.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"bob","ttl":-1}`), nil) // never expires
	sessions.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"carol","ttl":5}`), nil)

	clock.Advance(20 * time.Second)
	sessions.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"alice"}`), nil) // a write restarts the countdown

	clock.Advance(20 * time.Second)
	for _, id := range []string{"alice", "bob", "carol"} {
		_, err := sessions.ReadItem(ctx, lethe.NewPartitionKey(), id, nil)
		fmt.Printf("%s: found=%v\n", id, err == nil)
	}
	// Output:
	// alice: found=true
	// bob: found=true
	// carol: found=false
}

// ManualClock lets tests move time by hand instead of sleeping.
func ExampleManualClock() {
	ctx := context.Background()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	store, _ := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	defer store.Close()
	cache, _ := store.CreateContainer(ctx, lethe.ContainerProperties{ID: "cache", DefaultTimeToLive: 60})
	resp, _ := cache.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"k","v":1}`), nil)
	fmt.Println(string(resp.Value[:len(`{"id":"k","v":1,"_ts":1700000000`)]))

	clock.Advance(time.Minute - time.Nanosecond)
	_, err := cache.ReadItem(ctx, lethe.NewPartitionKey(), "k", nil)
	fmt.Println("one nanosecond before expiry:", err)
	clock.Advance(time.Nanosecond)
	_, err = cache.ReadItem(ctx, lethe.NewPartitionKey(), "k", nil)
	fmt.Println("at expiry:", errors.Is(err, lethe.ErrNotFound))
	fmt.Printf("%+v\n", cache.Stats())
	// Output:
	// {"id":"k","v":1,"_ts":1700000000
	// one nanosecond before expiry: <nil>
	// at expiry: true
	// {Items:0 Bytes:0 ExpiredPending:1 Purged:0 PurgeLag:0s ReaperCharge:0 Throttled:0 ExpiryEventsDropped:0 FeedChanges:0 FeedBytes:0}
}

// Errors carry a status code, match the sentinels with errors.Is, and give
// their details with errors.As.
func ExampleError() {
	ctx := context.Background()
	store, _ := lethe.Open(nil)
	defer store.Close()
	c, _ := store.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})

	_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"a","ttl":0}`), nil)
	var e *lethe.Error
	if errors.As(err, &e) {
		fmt.Println(e.StatusCode, errors.Is(err, lethe.ErrBadRequest))
		fmt.Println(e.Message)
	}
	// Output:
	// 400 true
	// The input ttl '0' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.
}

// With throughput set, an operation that would overdraw the budget is
// refused with a 429 and a RetryAfter, and changes nothing.
func ExampleContainerProperties_throughput() {
	ctx := context.Background()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	store, _ := lethe.Open(&lethe.Options{Clock: clock})
	defer store.Close()
	c, _ := store.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", Throughput: 10})

	for i := range 3 {
		resp, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(fmt.Sprintf(`{"id":"%d"}`, i)), nil)
		var e *lethe.Error
		if errors.As(err, &e) {
			fmt.Printf("item %d: %d, retry after %v\n", i, e.StatusCode, e.RetryAfter)
			continue
		}
		fmt.Printf("item %d: %d, %.1f RU\n", i, resp.StatusCode, resp.RequestCharge)
	}
	// Output:
	// item 0: 201, 5.5 RU
	// item 1: 429, retry after 100ms
	// item 2: 429, retry after 100ms
}

// Queries see live items only: an expired item is in no result, count or
// aggregate, even before the reaper has purged it.
func ExampleContainer_QueryItems() {
	ctx := context.Background()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	store, _ := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	defer store.Close()
	sessions, _ := store.CreateContainer(ctx, lethe.ContainerProperties{ID: "sessions", DefaultTimeToLive: 1800})
	sessions.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"s1","user":"ada"}`), nil)
	sessions.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"s2","user":"ada","ttl":60}`), nil)
	sessions.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"s3","user":"bob"}`), nil)

	count := func() {
		opts := &lethe.QueryOptions{QueryParameters: []lethe.QueryParameter{{Name: "@u", Value: "ada"}}}
		for item, err := range sessions.QueryItems(ctx, "SELECT VALUE COUNT(1) FROM c WHERE c.user = @u", lethe.NewPartitionKey(), opts) {
			if err != nil {
				panic(err)
			}
			fmt.Println("ada's sessions:", string(item))
		}
	}
	count()
	clock.Advance(time.Minute)
	count()
	// Output:
	// ada's sessions: 2
	// ada's sessions: 1
}

// A session lifetime given as a time.Duration becomes a TTL in whole
// seconds, rounded up so that nothing expires early.
func ExampleTTLFromDuration() {
	fmt.Println(lethe.TTLFromDuration(90 * time.Minute))
	fmt.Println(lethe.TTLFromDuration(1500 * time.Millisecond))
	fmt.Println(lethe.TTLFromDuration(0))
	// Output:
	// 5400s
	// 2s
	// 1s
}

// A durable store survives its process: it logs every write in its
// directory, and Open recovers it.
func ExampleOpen_durable() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "lethe-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	store, err := lethe.Open(&lethe.Options{Dir: dir}) // SyncAlways: acknowledged means on disk
	if err != nil {
		panic(err)
	}
	sessions, err := store.CreateContainer(ctx, lethe.ContainerProperties{ID: "sessions", DefaultTimeToLive: 3600})
	if err != nil {
		panic(err)
	}
	if _, err := sessions.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"s1","user":"ada"}`), nil); err != nil {
		panic(err)
	}
	store.Close()

	store, err = lethe.Open(&lethe.Options{Dir: dir})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	sessions, err = store.Container("sessions")
	if err != nil {
		panic(err)
	}
	r, err := sessions.ReadItem(ctx, lethe.NewPartitionKey(), "s1", nil)
	if err != nil {
		panic(err)
	}
	var doc struct{ User string }
	if err := json.Unmarshal(r.Value, &doc); err != nil {
		panic(err)
	}
	fmt.Println("recovered", store.Recovery().Items, "item; user", doc.User)
	// Output: recovered 1 item; user ada
}

// Sliding expiry: a session lives 30 minutes after its last use. Touching
// it is a patch, a write like any other, so it restarts the countdown; it
// sends one small operation and never decodes the item.
func ExampleContainer_PatchItem() {
	ctx := context.Background()
	clock := lethe.NewManualClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	store, err := lethe.Open(&lethe.Options{Clock: clock})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	sessions, err := store.CreateContainer(ctx, lethe.ContainerProperties{ID: "sessions", DefaultTimeToLive: 1800})
	if err != nil {
		panic(err)
	}
	pk := lethe.NewPartitionKey()
	if _, err := sessions.CreateItem(ctx, pk, []byte(`{"id":"s1","user":"ada","hits":0}`), nil); err != nil {
		panic(err)
	}

	touch := func() error {
		var ops lethe.PatchOperations
		ops.AppendIncrement("/hits", 1) // any patch restarts the countdown
		_, err := sessions.PatchItem(ctx, pk, "s1", ops, &lethe.ItemOptions{NoContentResponseOnWrite: true})
		return err
	}
	for range 3 { // used every 20 minutes: it stays
		clock.Advance(20 * time.Minute)
		if err := touch(); err != nil {
			panic(err)
		}
	}
	r, _ := sessions.ReadItem(ctx, pk, "s1", nil)
	var s struct{ Hits int }
	json.Unmarshal(r.Value, &s)
	fmt.Println("hits after an hour:", s.Hits)

	clock.Advance(30 * time.Minute) // idle for 30 minutes: gone
	fmt.Println("touched after 30 idle minutes:", touch())
	// Output:
	// hits after an hour: 3
	// touched after 30 idle minutes: lethe: PatchItem container "sessions" item "s1": not found: Entity with the specified id does not exist in the system.
}

// A transactional batch applies all of its operations or none: here an
// order and the count on its customer's profile, in the customer's
// partition.
func ExampleContainer_ExecuteTransactionalBatch() {
	ctx := context.Background()
	store, err := lethe.Open(nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	shop, err := store.CreateContainer(ctx, lethe.ContainerProperties{ID: "shop",
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/customer"}}})
	if err != nil {
		panic(err)
	}
	ada := lethe.NewPartitionKeyString("ada")
	if _, err := shop.CreateItem(ctx, ada, []byte(`{"id":"profile","customer":"ada","orders":0}`), nil); err != nil {
		panic(err)
	}

	order := func(id string) lethe.TransactionalBatch {
		var count lethe.PatchOperations
		count.AppendIncrement("/orders", 1)
		b := shop.NewTransactionalBatch(ada)
		b.CreateItem([]byte(`{"id":"`+id+`","customer":"ada","total":42}`), nil)
		b.PatchItem("profile", count, nil)
		return b
	}
	for _, id := range []string{"o1", "o1"} { // the second create of o1 conflicts
		resp, err := shop.ExecuteTransactionalBatch(ctx, order(id), nil)
		if err != nil {
			panic(err) // the batch could not run at all
		}
		fmt.Println("success:", resp.Success, "statuses:", resp.OperationResults[0].StatusCode, resp.OperationResults[1].StatusCode)
	}
	r, _ := shop.ReadItem(ctx, ada, "profile", nil)
	var p struct{ Orders int }
	json.Unmarshal(r.Value, &p)
	fmt.Println("orders:", p.Orders)
	// Output:
	// success: true statuses: 201 200
	// success: false statuses: 409 424
	// orders: 1
}

// The change feed in all-versions-and-deletes mode shows every write and
// every delete, and an expiry at the instant it happened.
func ExampleContainer_NewChangeFeedPager() {
	ctx := context.Background()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	store, _ := lethe.Open(&lethe.Options{Clock: clock})
	defer store.Close()
	sessions, _ := store.CreateContainer(ctx, lethe.ContainerProperties{
		ID:                "sessions",
		DefaultTimeToLive: 60,
		ChangeFeedPolicy:  &lethe.ChangeFeedPolicy{MaxChanges: 100_000},
	})
	pk := lethe.NewPartitionKey()
	sessions.UpsertItem(ctx, pk, []byte(`{"id":"s1"}`), nil)
	sessions.UpsertItem(ctx, pk, []byte(`{"id":"s1","user":"ada"}`), nil)
	clock.Advance(time.Minute)

	feed := sessions.NewChangeFeedPager(&lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
	page, _ := feed.NextPage(ctx)
	for _, item := range page.Items {
		var change struct {
			Metadata struct {
				OperationType     string
				LSN               int
				CRTS              int64
				TimeToLiveExpired bool
			}
		}
		json.Unmarshal(item, &change)
		m := change.Metadata
		fmt.Println(m.LSN, m.OperationType, m.CRTS, m.TimeToLiveExpired)
	}
	page, _ = feed.NextPage(ctx)
	fmt.Println("then:", len(page.Items), "changes")
	// Output:
	// 1 create 1700000000 false
	// 2 replace 1700000000 false
	// 3 delete 1700000060 true
	// then: 0 changes
}

// SubscribeExpiries tells the program that an item expired, when it did.
func ExampleContainer_SubscribeExpiries() {
	ctx := context.Background()
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	store, _ := lethe.Open(&lethe.Options{Clock: clock})
	defer store.Close()
	locks, _ := store.CreateContainer(ctx, lethe.ContainerProperties{ID: "locks", DefaultTimeToLive: lethe.TTLNever})
	sub, _ := locks.SubscribeExpiries(nil)
	defer sub.Close()
	locks.UpsertItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"job-7","ttl":30}`), nil)

	clock.Advance(30 * time.Second)
	ev := <-sub.Events()
	fmt.Println(ev.ID, "expired at", ev.ExpiredAt.Unix())
	// Output:
	// job-7 expired at 1700000030
}
