package lethetest

import (
	"net/http"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// The fault injection types are cosmosrest's: the rules an Account applies
// are the ones cmd/lethe applies, on the same handler.
type (
	// FaultRule is a condition, a result, and how often the rule fires.
	FaultRule = cosmosrest.FaultRule
	// FaultCondition chooses the requests a rule applies to.
	FaultCondition = cosmosrest.FaultCondition
	// FaultResult is what a rule answers with.
	FaultResult = cosmosrest.FaultResult
	// FaultOperation is a kind of request ("ReadItem", "CreateItem", ...).
	FaultOperation = cosmosrest.FaultOperation
)

// Substatus codes that go with a 410 Gone, which the SDKs treat as a
// partition's move: its key range is gone, or a split is completing.
const (
	SubStatusPartitionKeyRangeGone = 1002
	SubStatusCompletingSplit       = 1007
)

// TooManyRequests is a 429 (substatus 3200) telling the client to retry
// after retryAfter, as a container over its throughput answers.
func TooManyRequests(retryAfter time.Duration) FaultResult {
	return FaultResult{StatusCode: http.StatusTooManyRequests, RetryAfter: retryAfter}
}

// ServiceUnavailable is a 503.
func ServiceUnavailable() FaultResult {
	return FaultResult{StatusCode: http.StatusServiceUnavailable}
}

// RequestTimeout is a 408.
func RequestTimeout() FaultResult { return FaultResult{StatusCode: http.StatusRequestTimeout} }

// Gone is a 410 with substatus sub, such as SubStatusPartitionKeyRangeGone
// or SubStatusCompletingSplit.
func Gone(sub int) FaultResult { return FaultResult{StatusCode: http.StatusGone, SubStatusCode: sub} }

// InternalServerError is a 500.
func InternalServerError() FaultResult {
	return FaultResult{StatusCode: http.StatusInternalServerError}
}

// Delay serves the request as usual after d (real time, cut short when
// the request's context ends): for testing timeouts.
func Delay(d time.Duration) FaultResult { return FaultResult{Delay: d} }

// Rule is a fault rule added to an account.
type Rule struct {
	a  *Account
	id string
}

// Inject adds rule r to the account's rules, after those already there,
// and returns it. The first rule that matches a request, has hits left and
// draws true answers it. It fails the test if r is not valid or its ID is
// taken.
func (a *Account) Inject(r FaultRule) *Rule {
	a.t.Helper()
	if err := a.faults.Add(r); err != nil {
		a.t.Fatalf("lethetest: %v", err)
	}
	return &Rule{a: a, id: r.ID}
}

// Faults returns the account's fault rules, which Inject adds to.
func (a *Account) Faults() *cosmosrest.Faults { return a.faults }

// ClearFaults removes every fault rule.
func (a *Account) ClearFaults() { a.faults.Clear() }

// Hits returns how many requests the rule has answered.
func (r *Rule) Hits() int {
	n, _ := r.a.faults.Hits(r.id)
	return n
}

// Remove removes the rule; requests are served as usual again.
func (r *Rule) Remove() { r.a.faults.Remove(r.id) }
