package sessionstore_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/lethedb/lethe/lethetest"
	"github.com/lethedb/lethe/lethetest/examples/sessionstore"
)

var ctx = context.Background()

func newStore(t *testing.T) (*lethetest.Account, *sessionstore.Store) {
	t.Helper()
	acct := lethetest.New(t)
	c, err := sessionstore.EnsureContainer(ctx, acct.Client(), "app", "sessions")
	if err != nil {
		t.Fatal(err)
	}
	return acct, sessionstore.New(c, 30*time.Minute)
}

// A session lives while it is used, and expires 30 idle minutes on: no
// sleep, the account's clock moves.
func TestSessionsExpireWhenIdle(t *testing.T) {
	acct, store := newStore(t)
	sess, err := store.Create(ctx, "ann", map[string]string{"cart": "3 items"})
	if err != nil {
		t.Fatal(err)
	}
	acct.FastForward(29 * time.Minute)
	if err := store.Touch(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	acct.FastForward(29 * time.Minute) // 58 minutes old, 29 idle
	got, err := store.Get(ctx, sess.ID)
	if err != nil || got.User != "ann" || got.Touches != 1 {
		t.Fatalf("after a touch: %+v, %v", got, err)
	}
	acct.FastForward(time.Minute)
	if _, err := store.Get(ctx, sess.ID); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("30 idle minutes on: %v, want ErrNotFound", err)
	}
	if exp := acct.Expired("app", "sessions"); len(exp) != 1 || exp[0].ID != sess.ID {
		t.Errorf("expired: %+v", exp)
	}
}

// A storm of throttling is the SDK's business: it retries after each
// retry-after, and the store never sees it.
func TestThrottlingIsRiddenOut(t *testing.T) {
	acct, store := newStore(t)
	sess, err := store.Create(ctx, "ann", nil)
	if err != nil {
		t.Fatal(err)
	}
	storm := acct.Inject(lethetest.FaultRule{ID: "storm",
		Condition: lethetest.FaultCondition{OperationType: "ReadItem", Container: "sessions"},
		Result:    lethetest.TooManyRequests(time.Millisecond), HitLimit: 3})
	if _, err := store.Get(ctx, sess.ID); err != nil {
		t.Fatalf("Get under a 429 storm: %v", err)
	}
	if storm.Hits() != 3 {
		t.Errorf("the SDK met %d throttles, want 3", storm.Hits())
	}
}

// An outage is not a missing session: Get surfaces the 503.
func TestOutageIsSurfaced(t *testing.T) {
	acct, store := newStore(t)
	sess, err := store.Create(ctx, "ann", nil)
	if err != nil {
		t.Fatal(err)
	}
	acct.Inject(lethetest.FaultRule{ID: "outage", Condition: lethetest.FaultCondition{Container: "sessions"},
		Result: lethetest.ServiceUnavailable()})
	_, err = store.Get(ctx, sess.ID)
	var re *azcore.ResponseError
	if errors.Is(err, sessionstore.ErrNotFound) || !errors.As(err, &re) || re.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("Get in an outage: %v, want the 503", err)
	}
	acct.ClearFaults()
	if _, err := store.Get(ctx, sess.ID); err != nil {
		t.Errorf("after the outage: %v", err)
	}
}
