package lethetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/lethetest"
)

var ctx = context.Background()

func ptr[T any](v T) *T { return &v }

func status(err error) (int, string) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode, re.RawResponse.Header.Get("x-ms-substatus")
	}
	return 0, ""
}

func sessions(t *testing.T, a *lethetest.Account) *azcosmos.ContainerClient {
	t.Helper()
	return a.CreateContainer("app", azcosmos.ContainerProperties{ID: "sessions",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/user"}},
		DefaultTimeToLive:      ptr[int32](60)})
}

func put(t *testing.T, c *azcosmos.ContainerClient, user, id string, extra map[string]any) {
	t.Helper()
	doc := map[string]any{"id": id, "user": user}
	for k, v := range extra {
		doc[k] = v
	}
	b, _ := json.Marshal(doc)
	if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(user), b, nil); err != nil {
		t.Fatal(err)
	}
}

func TestItemsExpireOnFastForward(t *testing.T) {
	a := lethetest.New(t)
	c := sessions(t, a)
	start := a.Now()
	put(t, c, "ann", "s1", nil)
	put(t, c, "ann", "s2", map[string]any{"ttl": 10})
	put(t, c, "bob", "s3", map[string]any{"ttl": -1})

	it, ok := a.Item("app", "sessions", lethe.NewPartitionKeyString("ann"), "s2")
	if !ok || !it.Expires || it.TimeLeft != 10*time.Second || !it.TS.Equal(start) || !strings.Contains(string(it.JSON), `"_ts"`) {
		t.Fatalf("stored s2: %+v, %v", it, ok)
	}
	if it, _ := a.Item("app", "sessions", lethe.NewPartitionKeyString("bob"), "s3"); it.Expires {
		t.Errorf("s3 (ttl -1) expires: %+v", it)
	}

	a.FastForward(10 * time.Second)
	// The reaper purged s2 before FastForward returned.
	store, _ := a.Handler().Store("app")
	cont, _ := store.Container("sessions")
	if st := cont.Stats(); st.Items != 2 || st.ExpiredPending != 0 {
		t.Errorf("stats after FastForward: %+v", st)
	}
	if _, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString("ann"), "s2", nil); func() int { s, _ := status(err); return s }() != http.StatusNotFound {
		t.Errorf("s2 after its ttl: %v, want 404", err)
	}
	if it, ok := a.Item("app", "sessions", lethe.NewPartitionKeyString("ann"), "s1"); !ok || it.TimeLeft != 50*time.Second {
		t.Errorf("s1 after 10 s: %+v, %v", it, ok)
	}
	a.SetTime(start.Add(time.Hour))
	if _, ok := a.Item("app", "sessions", lethe.NewPartitionKeyString("ann"), "s1"); ok {
		t.Error("s1 is live an hour on")
	}
	got := a.Expired("app", "sessions")
	if len(got) != 2 || got[0].ID != "s2" || got[1].ID != "s1" || !got[0].ExpiredAt.Equal(start.Add(10*time.Second)) ||
		got[1].PartitionKey["user"] != "ann" || !strings.Contains(string(got[1].Item), `"s1"`) {
		t.Errorf("expired %+v", got)
	}
	if st := cont.Stats(); st.Items != 1 {
		t.Errorf("stats after the purge: %+v", st)
	}
	// Queries through the SDK miss them.
	pager := c.NewQueryItemsPager("SELECT VALUE COUNT(1) FROM c", azcosmos.NewPartitionKeyString("ann"), nil)
	page, err := pager.NextPage(ctx)
	if err != nil || len(page.Items) != 1 || string(page.Items[0]) != "0" {
		t.Errorf("count after expiry: %s, %v", page.Items, err)
	}
}

// TestStaysInProcess: every request the SDK sends, the account's discovery
// and the follow-ups at the endpoint it advertises, goes through the
// transport, over "TLS", and the advertised endpoint is the account's.
func TestStaysInProcess(t *testing.T) {
	a := lethetest.New(t)
	var hosts []string
	spy := policyFunc(func(req *policy.Request) (*http.Response, error) {
		hosts = append(hosts, req.Raw().URL.Scheme+"://"+req.Raw().URL.Host)
		return req.Next()
	})
	cl := a.NewClient(&azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{spy}}})
	before := a.Transport().Requests()
	if _, err := cl.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "d"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := a.Transport().Requests() - before; n < 2 {
		t.Errorf("%d requests through the transport, want the account's read and the create", n)
	}
	want := strings.TrimSuffix(a.Endpoint(), "/")
	for _, h := range hosts {
		if h != want {
			t.Errorf("a request went to %s, want %s", h, want)
		}
	}
}

type policyFunc func(*policy.Request) (*http.Response, error)

func (f policyFunc) Do(r *policy.Request) (*http.Response, error) { return f(r) }

func TestAccountsAreApart(t *testing.T) {
	a, b := lethetest.New(t), lethetest.New(t)
	if a.Endpoint() == b.Endpoint() {
		t.Fatal("two accounts share an endpoint, and so azcosmos's caches")
	}
	sessions(t, a)
	if _, err := b.Client().NewQueryDatabasesPager("SELECT * FROM d", nil).NextPage(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Handler().Store("app"); ok {
		t.Error("b sees a's database")
	}
}

func TestKeyAndDir(t *testing.T) {
	dir := t.TempDir()
	const key = "c2VjcmV0LWtleS1vZi10aGUtdGVzdA=="
	a := lethetest.NewWithOptions(t, lethetest.Options{Key: key, Dir: dir})
	c := sessions(t, a)
	put(t, c, "ann", "s1", nil)
	if a.Key() != key {
		t.Errorf("key %q", a.Key())
	}
	// A client with another key is refused.
	cred, _ := azcosmos.NewKeyCredential("b3RoZXIta2V5")
	other, _ := azcosmos.NewClientWithKey(a.Endpoint(), cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: a.Transport()}})
	defer other.Close()
	if _, err := other.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "x"}, nil); func() int { s, _ := status(err); return s }() != http.StatusUnauthorized {
		t.Errorf("another key: %v, want 401", err)
	}
}

func TestClockOfAnotherKind(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	a := lethetest.NewWithOptions(ft, lethetest.Options{Clock: systemClock{}})
	func() {
		defer func() { _ = recover() }()
		a.FastForward(time.Second)
	}()
	if !strings.Contains(ft.msg, "not a *lethe.ManualClock") {
		t.Errorf("FastForward on the system clock: %q", ft.msg)
	}
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// fatalRecorder records a Fatalf and stops the goroutine's function by a
// panic that the caller recovers.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = strings.TrimSpace(strings.ReplaceAll(format, "%T", "?"))
	panic("fatal")
}

func TestThroughputRefillsWithTheClock(t *testing.T) {
	a := lethetest.NewWithOptions(t, lethetest.Options{Throughput: 400})
	cl := a.NewClient(&azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	_ = sessions(t, a)
	db, _ := cl.NewDatabase("app")
	c, _ := db.NewContainer("sessions")
	big := strings.Repeat("x", 100<<10)
	var throttled error
	for i := 0; i < 50 && throttled == nil; i++ {
		b, _ := json.Marshal(map[string]any{"id": "i" + string(rune('a'+i)), "user": "ann", "pad": big})
		_, throttled = c.CreateItem(ctx, azcosmos.NewPartitionKeyString("ann"), b, nil)
	}
	if s, _ := status(throttled); s != http.StatusTooManyRequests {
		t.Fatalf("writes of 100 KB at 400 RU/s: %v, want a 429", throttled)
	}
	a.FastForward(10 * time.Second)
	b, _ := json.Marshal(map[string]any{"id": "after", "user": "ann"})
	if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString("ann"), b, nil); err != nil {
		t.Errorf("after the clock moved: %v", err)
	}
}
