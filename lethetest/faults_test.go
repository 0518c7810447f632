package lethetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/lethetest"
)

// retrySpy records, for each attempt the SDK makes, its status and the
// retry-after the server sent, and when it was made.
type retrySpy struct {
	mu       sync.Mutex
	statuses []int
	after    []time.Duration
	at       []time.Time
}

func (s *retrySpy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, time.Now())
	if resp != nil {
		s.statuses = append(s.statuses, resp.StatusCode)
		ms, _ := strconv.Atoi(resp.Header.Get("x-ms-retry-after-ms"))
		s.after = append(s.after, time.Duration(ms)*time.Millisecond)
	}
	return resp, err
}

// TestThrottlingStorm: 100 injected 429s, each with its retry-after; the
// SDK rides them out, retrying exactly 100 times and waiting at least what
// it was told, and the rule counts 100 hits.
func TestThrottlingStorm(t *testing.T) {
	a := lethetest.New(t)
	spy := &retrySpy{}
	cl := a.NewClient(&azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		PerRetryPolicies: []policy.Policy{spy},
		Retry:            policy.RetryOptions{MaxRetries: 200, MaxRetryDelay: time.Second},
	}})
	sessions(t, a)
	db, _ := cl.NewDatabase("app")
	c, _ := db.NewContainer("sessions")
	put(t, c, "ann", "s1", nil)

	const storm, after = 100, 2 * time.Millisecond
	rule := a.Inject(lethetest.FaultRule{ID: "storm",
		Condition: lethetest.FaultCondition{OperationType: "ReadItem", Container: "sessions"},
		Result:    lethetest.TooManyRequests(after), HitLimit: storm})
	spy.mu.Lock()
	spy.statuses, spy.after, spy.at = nil, nil, nil
	spy.mu.Unlock()
	start := time.Now()
	resp, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString("ann"), "s1", nil)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("the SDK did not ride out the storm: %v", err)
	}
	if resp.RawResponse.StatusCode != http.StatusOK || rule.Hits() != storm {
		t.Errorf("status %d, %d hits, want 200 after %d", resp.RawResponse.StatusCode, rule.Hits(), storm)
	}
	var throttles int
	var told time.Duration
	for i, s := range spy.statuses {
		if s == http.StatusTooManyRequests {
			throttles++
			told += spy.after[i]
		}
	}
	if throttles != storm || len(spy.statuses) != storm+1 {
		t.Errorf("the SDK made %d attempts with %d throttled, want %d and %d", len(spy.statuses), throttles, storm+1, storm)
	}
	if told != storm*after {
		t.Errorf("retry-after sent %v in all, want %v", told, storm*after)
	}
	// Each wait between attempts is at least the retry-after sent.
	var waited time.Duration
	for i := 1; i < len(spy.at); i++ {
		gap := spy.at[i].Sub(spy.at[i-1])
		if gap < spy.after[i-1] {
			t.Errorf("attempt %d came %v after a retry-after of %v", i, gap, spy.after[i-1])
		}
		waited += gap
	}
	if elapsed < told || waited < told {
		t.Errorf("waited %v (elapsed %v), under the %v sent", waited, elapsed, told)
	}
	t.Logf("%d retries, retry-after sent %v, waited %v, elapsed %v", throttles, told, waited, elapsed)
}

// TestServiceUnavailableSurfaces: a 503 on every write reaches the caller
// after the SDK's own retries, with its status.
func TestServiceUnavailableSurfaces(t *testing.T) {
	a := lethetest.New(t)
	c := sessions(t, a)
	rule := a.Inject(lethetest.FaultRule{ID: "down", Condition: lethetest.FaultCondition{OperationType: "CreateItem"},
		Result: lethetest.ServiceUnavailable()})
	b, _ := json.Marshal(map[string]any{"id": "x", "user": "ann"})
	_, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString("ann"), b, nil)
	if s, _ := status(err); s != http.StatusServiceUnavailable {
		t.Fatalf("create under a 503 rule: %v", err)
	}
	if rule.Hits() < 1 {
		t.Errorf("hits %d", rule.Hits())
	}
	// Reads are untouched; the write was never applied.
	if _, ok := a.Item("app", "sessions", lethe.NewPartitionKeyString("ann"), "x"); ok {
		t.Error("the refused create was applied")
	}
	rule.Remove()
	if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString("ann"), b, nil); err != nil {
		t.Errorf("after the rule was removed: %v", err)
	}
}

// TestFaultResults: each result reaches the SDK with its status and
// substatus, for the operation, container and partition key chosen and
// no other.
func TestFaultResults(t *testing.T) {
	a := lethetest.New(t)
	noRetry := a.NewClient(&azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	sessions(t, a)
	db, _ := noRetry.NewDatabase("app")
	c, _ := db.NewContainer("sessions")
	put(t, c, "ann", "s1", nil)
	put(t, c, "bob", "s2", nil)
	cases := []struct {
		name   string
		result lethetest.FaultResult
		status int
		sub    string
	}{
		{"gone", lethetest.Gone(lethetest.SubStatusPartitionKeyRangeGone), 410, "1002"},
		{"split", lethetest.Gone(lethetest.SubStatusCompletingSplit), 410, "1007"},
		{"timeout", lethetest.RequestTimeout(), 408, "0"},
		{"internal", lethetest.InternalServerError(), 500, "0"},
		{"throttled", lethetest.TooManyRequests(time.Millisecond), 429, "3200"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a.ClearFaults()
			pk := lethe.NewPartitionKeyString("ann")
			rule := a.Inject(lethetest.FaultRule{ID: tc.name, Condition: lethetest.FaultCondition{OperationType: "UpsertItem",
				Database: "app", Container: "sessions", PartitionKey: &pk}, Result: tc.result, HitLimit: 1})
			// Another partition key and another operation pass.
			if _, err := c.UpsertItem(ctx, azcosmos.NewPartitionKeyString("bob"), []byte(`{"id":"s2","user":"bob"}`), nil); err != nil {
				t.Errorf("bob's upsert: %v", err)
			}
			if _, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString("ann"), "s1", nil); err != nil {
				t.Errorf("ann's read: %v", err)
			}
			_, err := c.UpsertItem(ctx, azcosmos.NewPartitionKeyString("ann"), []byte(`{"id":"s1","user":"ann"}`), nil)
			if s, sub := status(err); s != tc.status || sub != tc.sub {
				t.Errorf("ann's upsert: %d/%s (%v), want %d/%s", s, sub, err, tc.status, tc.sub)
			}
			if _, err := c.UpsertItem(ctx, azcosmos.NewPartitionKeyString("ann"), []byte(`{"id":"s1","user":"ann"}`), nil); err != nil {
				t.Errorf("after the hit limit: %v", err)
			}
			if rule.Hits() != 1 {
				t.Errorf("hits %d", rule.Hits())
			}
		})
	}
}

// TestDelay: a delayed read meets the caller's deadline; one within it is
// served.
func TestDelay(t *testing.T) {
	a := lethetest.New(t)
	c := sessions(t, a)
	put(t, c, "ann", "s1", nil)
	a.Inject(lethetest.FaultRule{ID: "slow", Condition: lethetest.FaultCondition{OperationType: "ReadItem"}, Result: lethetest.Delay(time.Minute)})
	dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.ReadItem(dctx, azcosmos.NewPartitionKeyString("ann"), "s1", nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Errorf("delayed read: %v after %v, want the deadline", err, time.Since(start))
	}
	a.ClearFaults()
	a.Inject(lethetest.FaultRule{ID: "short", Result: lethetest.Delay(5 * time.Millisecond), HitLimit: 1})
	start = time.Now()
	if _, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString("ann"), "s1", nil); err != nil || time.Since(start) < 5*time.Millisecond {
		t.Errorf("short delay: %v after %v", err, time.Since(start))
	}
}

// TestInjectionRateReplays: a rule with a rate fires on about that share
// of requests, and on the same ones again with the same seed.
func TestInjectionRateReplays(t *testing.T) {
	run := func(seed uint64) []bool {
		a := lethetest.New(t)
		cl := a.NewClient(&azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
		sessions(t, a)
		db, _ := cl.NewDatabase("app")
		c, _ := db.NewContainer("sessions")
		put(t, c, "ann", "s1", nil)
		a.Inject(lethetest.FaultRule{ID: "flaky", Condition: lethetest.FaultCondition{OperationType: "ReadItem"},
			Result: lethetest.TooManyRequests(time.Millisecond), InjectionRate: 0.3, Seed: seed})
		var out []bool
		for range 200 {
			_, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString("ann"), "s1", nil)
			out = append(out, err != nil)
		}
		return out
	}
	first, again, other := run(7), run(7), run(8)
	n := 0
	for _, f := range first {
		if f {
			n++
		}
	}
	if n < 30 || n > 90 {
		t.Errorf("%d of 200 fired at a rate of 0.3", n)
	}
	if !equal(first, again) {
		t.Error("the same seed fired on other requests")
	}
	if equal(first, other) {
		t.Error("another seed fired on the same requests")
	}
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestInjectRefusesBadRules(t *testing.T) {
	for _, r := range []lethetest.FaultRule{
		{ID: "", Result: lethetest.ServiceUnavailable()},
		{ID: "ok-status", Result: lethetest.FaultResult{StatusCode: 200}},
		{ID: "nothing"},
		{ID: "op", Condition: lethetest.FaultCondition{OperationType: "Frobnicate"}, Result: lethetest.ServiceUnavailable()},
		{ID: "rate", Result: lethetest.ServiceUnavailable(), InjectionRate: 1.5},
		{ID: "limit", Result: lethetest.ServiceUnavailable(), HitLimit: -1},
	} {
		ft := &fatalRecorder{TB: t}
		a := lethetest.New(t)
		a.Faults() // the same rules the handler applies
		func() {
			defer func() { _ = recover() }()
			lethetest.NewWithOptions(ft, lethetest.Options{}).Inject(r)
		}()
		if ft.msg == "" {
			t.Errorf("rule %+v accepted", r)
		}
	}
}
