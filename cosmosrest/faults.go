package cosmosrest

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethedb/lethe"
)

// FaultOperation is the kind of request a fault rule chooses, named as the
// .NET SDK's FaultInjectionOperationType names them (Java's are the same
// in upper snake case).
type FaultOperation string

// The operations a FaultCondition can name. The empty FaultOperation
// matches every request, including those of no listed kind (databases,
// offers, users and permissions).
const (
	FaultReadItem                  FaultOperation = "ReadItem"    // GET of a document
	FaultQueryItem                 FaultOperation = "QueryItem"   // a query of a container's documents
	FaultCreateItem                FaultOperation = "CreateItem"  // POST of a document
	FaultUpsertItem                FaultOperation = "UpsertItem"  // POST of a document with x-ms-documentdb-is-upsert
	FaultReplaceItem               FaultOperation = "ReplaceItem" // PUT of a document
	FaultDeleteItem                FaultOperation = "DeleteItem"  // DELETE of a document
	FaultPatchItem                 FaultOperation = "PatchItem"   // PATCH of a document
	FaultBatch                     FaultOperation = "Batch"       // a transactional batch, or a bulk request
	FaultReadFeed                  FaultOperation = "ReadFeed"    // a read feed or change feed of a container's documents
	FaultMetadataContainer         FaultOperation = "MetadataContainer"
	FaultMetadataDatabaseAccount   FaultOperation = "MetadataDatabaseAccount"
	FaultMetadataPartitionKeyRange FaultOperation = "MetadataPartitionKeyRange"
	FaultMetadataQueryPlan         FaultOperation = "MetadataQueryPlan"
)

var faultOperations = map[FaultOperation]bool{
	FaultReadItem: true, FaultQueryItem: true, FaultCreateItem: true, FaultUpsertItem: true,
	FaultReplaceItem: true, FaultDeleteItem: true, FaultPatchItem: true, FaultBatch: true,
	FaultReadFeed: true, FaultMetadataContainer: true, FaultMetadataDatabaseAccount: true,
	FaultMetadataPartitionKeyRange: true, FaultMetadataQueryPlan: true,
}

// FaultCondition chooses the requests a rule applies to. A zero field
// matches every request.
type FaultCondition struct {
	// OperationType is the kind of request; "" means every kind.
	OperationType FaultOperation
	// Database and Container are the ids of the resources the request
	// addresses or lies under; "" means any.
	Database, Container string
	// PartitionKey, when set, matches only requests that name this
	// partition key value in x-ms-documentdb-partitionkey (item
	// operations, batches, queries and change feeds scoped to it).
	PartitionKey *lethe.PartitionKey
}

// FaultResult is what a rule answers a request it fires on with.
type FaultResult struct {
	// StatusCode is the error status answered (400 to 599), with Cosmos
	// DB's error body; 0 serves the request as usual, after Delay.
	StatusCode int
	// SubStatusCode is sent as x-ms-substatus. For a 429 without one,
	// 3200 (the request rate is too large), as Cosmos DB sends.
	SubStatusCode int
	// RetryAfter is sent as x-ms-retry-after-ms (rounded down to whole
	// milliseconds, at least 1 ms for a 429): what the SDKs wait before
	// they retry a 429.
	RetryAfter time.Duration
	// Delay holds the request that long (by the system clock) before it is
	// answered, or until its context is done.
	Delay time.Duration
}

// MaxFaultDelay bounds FaultResult.Delay and RetryAfter.
const MaxFaultDelay = 5 * time.Minute

// FaultRule is a fault injection rule, as the .NET and Java SDKs define
// one: a condition, a result, and how often it fires.
type FaultRule struct {
	// ID names the rule, unique in its Faults.
	ID        string
	Condition FaultCondition
	Result    FaultResult
	// HitLimit is how many times the rule fires: on the first HitLimit
	// requests that match (and pass InjectionRate); 0 means no limit.
	HitLimit int
	// InjectionRate is the probability that the rule fires on a request
	// that matches, in (0, 1]; 0 means 1.
	InjectionRate float64
	// Seed seeds the rule's own random source for InjectionRate, so that
	// a run replays: the same requests in the same order draw the same.
	Seed uint64
}

func (r *FaultRule) validate() error {
	res := r.Result
	switch {
	case r.ID == "":
		return fmt.Errorf("cosmosrest: a fault rule needs an id")
	case r.Condition.OperationType != "" && !faultOperations[r.Condition.OperationType]:
		return fmt.Errorf("cosmosrest: fault rule %q: unknown operation type %q", r.ID, r.Condition.OperationType)
	case r.Condition.PartitionKey != nil && r.Condition.PartitionKey.String() == "":
		return fmt.Errorf("cosmosrest: fault rule %q: the partition key is not valid", r.ID)
	case res.StatusCode != 0 && (res.StatusCode < 400 || res.StatusCode > 599):
		return fmt.Errorf("cosmosrest: fault rule %q: status %d is not an error status (400 to 599)", r.ID, res.StatusCode)
	case res.StatusCode == 0 && res.Delay <= 0:
		return fmt.Errorf("cosmosrest: fault rule %q: a result needs a status code or a delay", r.ID)
	case res.SubStatusCode < 0 || res.RetryAfter < 0 || res.Delay < 0:
		return fmt.Errorf("cosmosrest: fault rule %q: a negative substatus, retry-after or delay", r.ID)
	case res.RetryAfter > MaxFaultDelay || res.Delay > MaxFaultDelay:
		return fmt.Errorf("cosmosrest: fault rule %q: a retry-after or delay over %v", r.ID, MaxFaultDelay)
	case r.HitLimit < 0:
		return fmt.Errorf("cosmosrest: fault rule %q: a negative hit limit", r.ID)
	case r.InjectionRate < 0 || r.InjectionRate > 1 || r.InjectionRate != r.InjectionRate:
		return fmt.Errorf("cosmosrest: fault rule %q: injection rate %v is not in [0, 1]", r.ID, r.InjectionRate)
	}
	return nil
}

// Faults is a set of fault injection rules that a Handler applies to the
// requests it serves (Config.Faults), after it has authenticated them:
// the first rule, in the order they were added, whose condition matches,
// whose hit limit is not reached and whose injection rate draws true,
// answers the request with its result instead of the front. The SDKs' own
// retry policies then run against the answer, as against Cosmos DB's.
//
// The zero value has no rules. Faults is safe for concurrent use: rules may
// be added and removed while requests are served. With Config.Faults set,
// the handler also serves the control endpoint /_lethe/faults (see the
// package documentation), so that tests in any language can set rules.
type Faults struct {
	mu    sync.Mutex
	rules []*faultState // in the order added
	n     atomic.Int32  // len(rules): no lock on the path of a request while there are none
}

// faultState is a rule and what it has done.
type faultState struct {
	rule FaultRule
	hits int
	rng  *rand.Rand
}

// Add adds rule r after the rules already there. It fails if r is not
// valid or its ID is taken.
func (f *Faults) Add(r FaultRule) error {
	if err := r.validate(); err != nil {
		return err
	}
	if pk := r.Condition.PartitionKey; pk != nil {
		c := *pk
		r.Condition.PartitionKey = &c
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.rules {
		if s.rule.ID == r.ID {
			return fmt.Errorf("cosmosrest: a fault rule %q exists already", r.ID)
		}
	}
	h := fnv.New64a()
	h.Write([]byte(r.ID))
	f.rules = append(f.rules, &faultState{rule: r, rng: rand.New(rand.NewPCG(r.Seed, h.Sum64()))})
	f.n.Store(int32(len(f.rules)))
	return nil
}

// Remove removes the rule of that id, reporting whether there was one.
func (f *Faults) Remove(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, s := range f.rules {
		if s.rule.ID == id {
			f.rules = append(f.rules[:i:i], f.rules[i+1:]...)
			f.n.Store(int32(len(f.rules)))
			return true
		}
	}
	return false
}

// Clear removes every rule.
func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
	f.n.Store(0)
}

// Hits returns how many times the rule of that id has fired, and whether
// there is such a rule.
func (f *Faults) Hits(id string) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.rules {
		if s.rule.ID == id {
			return s.hits, true
		}
	}
	return 0, false
}

// FaultRuleStatus is a rule and how many times it has fired.
type FaultRuleStatus struct {
	Rule     FaultRule
	HitCount int
}

// Rules returns the rules, in order, with their hit counts.
func (f *Faults) Rules() []FaultRuleStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]FaultRuleStatus, len(f.rules))
	for i, s := range f.rules {
		out[i] = FaultRuleStatus{Rule: s.rule, HitCount: s.hits}
	}
	return out
}

// faultRequest is what a rule's condition looks at.
type faultRequest struct {
	op       FaultOperation
	db, coll string
	pk       string // the x-ms-documentdb-partitionkey header, as sent
}

// fire returns the result of the first rule that fires on q, counting the
// hit, and the rule's id.
func (f *Faults) fire(q faultRequest) (FaultResult, string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pkParsed, pkDone := "", false
	for _, s := range f.rules {
		c := &s.rule.Condition
		if c.OperationType != "" && c.OperationType != q.op ||
			c.Database != "" && c.Database != q.db ||
			c.Container != "" && c.Container != q.coll ||
			s.rule.HitLimit > 0 && s.hits >= s.rule.HitLimit {
			continue
		}
		if c.PartitionKey != nil {
			if !pkDone {
				pkDone = true
				if q.pk != "" {
					if pk, err := parsePKHeader(q.pk); err == nil {
						pkParsed = pk.String()
					}
				}
			}
			if pkParsed == "" || pkParsed != c.PartitionKey.String() {
				continue
			}
		}
		if rate := s.rule.InjectionRate; rate > 0 && rate < 1 && s.rng.Float64() >= rate {
			continue
		}
		s.hits++
		return s.rule.Result, s.rule.ID, true
	}
	return FaultResult{}, "", false
}

// faultOperation says what kind of request r, addressing t, is.
func faultOperation(r *http.Request, t target) FaultOperation {
	h := r.Header
	switch t.kind {
	case tAccount:
		return FaultMetadataDatabaseAccount
	case tContainers, tContainer:
		return FaultMetadataContainer
	case tPKRanges, tPKRange:
		return FaultMetadataPartitionKeyRange
	case tDocuments:
		switch {
		case r.Method == http.MethodGet:
			return FaultReadFeed
		case r.Method != http.MethodPost:
			return ""
		case headerTrue(h.Get("x-ms-cosmos-is-query-plan-request")):
			return FaultMetadataQueryPlan
		case isQueryRequest(r):
			return FaultQueryItem
		case headerTrue(h.Get("x-ms-cosmos-is-batch-request")):
			return FaultBatch
		case headerTrue(h.Get("x-ms-documentdb-is-upsert")):
			return FaultUpsertItem
		}
		return FaultCreateItem
	case tDocument:
		switch r.Method {
		case http.MethodGet:
			return FaultReadItem
		case http.MethodPut:
			return FaultReplaceItem
		case http.MethodDelete:
			return FaultDeleteItem
		case http.MethodPatch:
			return FaultPatchItem
		}
	}
	return ""
}

// faultMessages are the messages of the errors a rule answers with, as
// Cosmos DB words them.
var faultMessages = map[int]string{
	http.StatusTooManyRequests:     msgRequestRateLarge,
	http.StatusServiceUnavailable:  msgUnavailable,
	http.StatusRequestTimeout:      msgRequestTimeout,
	http.StatusGone:                "The requested resource is no longer available at the server.",
	http.StatusInternalServerError: msgInternal,
}

// injectFault applies h's fault rules to request r, addressing t. It
// reports whether it answered r (or r's context ended during a delay, and
// nothing is to be answered).
func (h *Handler) injectFault(w http.ResponseWriter, r *http.Request, t target) bool {
	f := h.cfg.Faults
	if f == nil || f.n.Load() == 0 {
		return false
	}
	res, id, ok := f.fire(faultRequest{op: faultOperation(r, t), db: t.db, coll: t.coll, pk: r.Header.Get("x-ms-documentdb-partitionkey")})
	if !ok {
		return false
	}
	if res.Delay > 0 {
		timer := time.NewTimer(res.Delay)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
			return true
		}
	}
	if res.StatusCode == 0 {
		return false
	}
	sub := res.SubStatusCode
	if res.StatusCode == http.StatusTooManyRequests && sub == 0 {
		sub = subRUBudgetExceed
	}
	hdr := w.Header()
	if ms := res.RetryAfter.Milliseconds(); ms > 0 || res.StatusCode == http.StatusTooManyRequests {
		setHeader(hdr, "x-ms-retry-after-ms", strconv.FormatInt(max(ms, 1), 10))
	}
	setHeader(hdr, "x-ms-lethe-fault", id)
	msg := faultMessages[res.StatusCode]
	if msg == "" {
		msg = http.StatusText(res.StatusCode) + "."
	}
	apiError{status: res.StatusCode, msg: withDetail(msg, fmt.Sprintf("injected by the fault rule %q", id)), sub: sub}.write(w)
	return true
}
