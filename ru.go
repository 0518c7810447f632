// Request units: the charge table, the throughput budgets and the draw
// that charges every operation.

package lethe

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Request charges, in request units (RU). This table is the only place where
// lethe prices an operation. It follows the shape Cosmos DB publishes: a point
// read of an item up to 1 KB costs 1 RU and of 100 KB 10 RU; an insert of 1 KB
// about 5.5 RU and a replace twice that; a delete like an insert; a query a base
// charge plus a share per item examined and per item returned; a failed request
// a small fixed charge. Charges are kept in milli-RU so that budgets add up
// exactly; they depend only on the operation and the item's size (not counting
// the ttl property: time to live costs nothing, and checking expiry is free).
//
//	operation                          charge (k = size in KB, rounded up, at least 1)
//	ReadItem                           1 + (k-1)/11
//	CreateItem, UpsertItem (created)   5.5 + (k-1)/2
//	DeleteItem, a purge by the reaper  5.5 + (k-1)/2
//	ReplaceItem, UpsertItem (replaced) 11 + (k-1)
//	PatchItem                          11 + (k-1), k of the patched item (a replace)
//	a transactional batch              the sum of its operations' charges, drawn at once
//	a query page                       2.3 + 0.01 per item examined + 0.05 per item returned
//	a server-side script's run         1 per millisecond it ran, or part of one (ChargeScriptTime),
//	                                   on top of its operations' charges
//	any failure (400, 404, 409, ...)   1.24, and for a batch that fails
const (
	chargeFailure       = 1240 // milli-RU
	chargeQueryBase     = 2300
	chargeQueryExamined = 10
	chargeQueryReturned = 50
	chargeScriptMilli   = 1000 // a millisecond of a script's execution
)

type opKind uint8

const (
	opRead opKind = iota
	opCreate
	opReplace
	opDelete
)

// charge returns the charge, in milli-RU, of a successful operation on an
// item whose charged size is size bytes.
func charge(op opKind, size int) int64 {
	k := int64(1)
	if size > 1024 {
		k = (int64(size) + 1023) / 1024
	}
	switch op {
	case opRead:
		return 1000 + (k-1)*1000/11
	case opReplace:
		return 11000 + (k-1)*1000
	default: // create, delete
		return 5500 + (k-1)*500
	}
}

// queryCharge returns the charge, in milli-RU, of a page of a query.
func queryCharge(examined, returned int) int64 {
	return chargeQueryBase + int64(examined)*chargeQueryExamined + int64(returned)*chargeQueryReturned
}

// ru converts milli-RU to request units.
func ru(milli int64) float64 { return float64(milli) / 1000 }

// budget is a container's throughput: a token bucket for user operations
// that holds at most one second of throughput, and a second bucket, of the
// same size, for the reaper. Refill that would overflow the full user bucket
// is what users left unused; only that goes to the reaper's bucket. So the
// reaper never takes a request unit a user could have spent, and user
// operations see exactly the same decisions whether the reaper runs or not.
//
// Amounts are milli-RU and refill is computed from a fixed origin in whole
// integers, so that how often the buckets are refilled (by users, by the
// reaper) never changes how much they receive.
//
// A budget is a container's own or, shared, a store's: every container
// without throughput of its own draws on its store's, users and reapers
// alike, so all of them together spend at most its rate, and the reapers
// only what the users of all of them left. An autoscale budget provides its
// maximum every second (the service scales up at once to what is used) and
// counts what users draw, second by second, to tell the throughput it has
// scaled to (scaled).
type budget struct {
	mu        sync.Mutex
	rate      int64 // RU per second; 0: unlimited
	autoscale bool  // rate is an autoscale maximum; set before the budget is shared, then fixed
	tokens    int64 // user bucket, at most capacity (below 0 only after an operation costing more than capacity)
	spare     int64 // reaper's bucket, at most capacity
	origin    int64 // Unix ns from which refill is counted; moves by whole seconds
	credited  int64 // refill credited since origin (less than one second's)
	last      int64 // the latest time seen

	// An autoscale budget's use: milli-RU users drew in the whole second
	// (of the store's clock) second, and in the second before it.
	second, used, prevUsed int64
}

// budgetRate returns the rate of a throughput setting, and whether it is
// autoscale: a manual throughput, or the maximum of an autoscale one (the
// setting is validated: never both).
func budgetRate(throughput, autoscaleMax int32) (rate int32, autoscale bool) {
	if autoscaleMax > 0 {
		return autoscaleMax, true
	}
	return throughput, false
}

// replaceBudget makes *p the budget of a throughput setting (nil for none),
// both buckets full, and keeps the current budget, with its balance, when
// the setting is unchanged. Callers serialize their calls for one p.
func replaceBudget(p *atomic.Pointer[budget], throughput, autoscaleMax int32, now int64) {
	rate, autoscale := budgetRate(throughput, autoscaleMax)
	if cur := p.Load(); cur != nil && cur.rate == int64(rate) && cur.autoscale == autoscale {
		return
	}
	if rate <= 0 {
		p.Store(nil)
		return
	}
	b := &budget{autoscale: autoscale}
	b.setRate(rate, now)
	p.Store(b)
}

// setting returns the throughput setting of b, which may be nil (none).
func (b *budget) setting() (throughput, autoscaleMax int32) {
	switch {
	case b == nil:
		return 0, 0
	case b.autoscale:
		return 0, int32(b.rate)
	default:
		return int32(b.rate), 0
	}
}

// throughputProblem says what is wrong with a throughput setting, "" if
// nothing: both are at least 0, at most one is set.
func throughputProblem(throughput, autoscaleMax int32) string {
	switch {
	case throughput < 0:
		return fmt.Sprintf("the throughput %d is negative; use 0 for none", throughput)
	case autoscaleMax < 0:
		return fmt.Sprintf("the autoscale maximum throughput %d is negative; use 0 for none", autoscaleMax)
	case throughput > 0 && autoscaleMax > 0:
		return fmt.Sprintf("both a throughput (%d) and an autoscale maximum throughput (%d): set one or the other", throughput, autoscaleMax)
	}
	return ""
}

func (b *budget) capacity() int64 { return b.rate * 1000 }

// setRate changes the throughput; both buckets start full.
func (b *budget) setRate(rate int32, now int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if int64(rate) == b.rate {
		return
	}
	b.rate = int64(rate)
	b.tokens, b.spare = b.capacity(), 0
	b.origin, b.credited, b.last = now, 0, now
}

// refillLocked credits the buckets up to now. The credit since origin is
// whole seconds of capacity plus the exact share of the current second, so
// the sum credited never depends on how often refill runs.
func (b *budget) refillLocked(now int64) {
	if now <= b.last {
		return // the clock went backwards or stood still: no credit
	}
	b.last = now
	capacity := b.capacity()
	elapsed := now - b.origin
	whole, part := elapsed/int64(time.Second), elapsed%int64(time.Second)
	hi, lo := bits.Mul64(uint64(capacity), uint64(part))
	partCredit, _ := bits.Div64(hi, lo, uint64(time.Second))
	// Credit beyond what fills both buckets is lost anyway: cap it so that
	// long idle times cannot overflow.
	useful := 2*capacity - b.tokens - b.spare
	var delta int64
	if whole > useful/capacity+1 {
		delta = useful
	} else {
		delta = whole*capacity + int64(partCredit) - b.credited
	}
	b.origin += whole * int64(time.Second)
	b.credited = int64(partCredit)
	b.tokens += delta
	if b.tokens > capacity {
		b.spare = min(capacity, b.spare+b.tokens-capacity)
		b.tokens = capacity
	}
}

// take draws cost milli-RU for a user operation. When the bucket cannot
// cover it, nothing is drawn and take reports how long until it could. An
// operation costing more than the whole bucket runs when the bucket is full.
func (b *budget) take(cost, now int64) (ok bool, retryAfter time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate == 0 {
		return true, 0
	}
	b.refillLocked(now)
	need := min(cost, b.capacity())
	if b.tokens >= need {
		b.tokens -= cost
		if b.autoscale {
			b.noteUseLocked(cost, now)
		}
		return true, 0
	}
	return false, b.durationFor(need - b.tokens)
}

// owe draws cost milli-RU that a user operation has already spent (a
// script's execution time): unlike take it never refuses, so the bucket may
// go below 0, and the operations after it wait until refill has paid the
// debt.
func (b *budget) owe(cost, now int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate == 0 {
		return
	}
	b.refillLocked(now)
	b.tokens -= cost
	if b.autoscale {
		b.noteUseLocked(cost, now)
	}
}

// noteUseLocked counts cost milli-RU drawn by users at now, in now's whole
// second. A clock that went backwards counts in the latest second seen.
func (b *budget) noteUseLocked(cost, now int64) {
	sec := now / int64(time.Second)
	if now < 0 && now%int64(time.Second) != 0 {
		sec-- // round down
	}
	switch {
	case sec == b.second+1:
		b.second, b.prevUsed, b.used = sec, b.used, 0
	case sec > b.second:
		b.second, b.prevUsed, b.used = sec, 0, 0
	}
	b.used += cost
}

// scaled returns the throughput the budget provides now, in RU per second.
// For a manual budget, its rate. An autoscale budget has scaled to what users
// drew in the current whole second of the store's clock or in the one
// before, whichever is more, rounded up to a whole RU: at least a tenth of
// the maximum (rounded up), at most the maximum.
func (b *budget) scaled(now int64) int32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.autoscale {
		return int32(b.rate)
	}
	b.noteUseLocked(0, now) // move the window to now
	used := max(b.used, b.prevUsed)
	return int32(max((b.rate+9)/10, min(b.rate, (used+999)/1000)))
}

// takeSpare draws cost milli-RU for the reaper from what users left unused.
// With unlimited throughput it always succeeds.
func (b *budget) takeSpare(cost, now int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate == 0 {
		return true
	}
	b.refillLocked(now)
	if b.spare >= min(cost, b.capacity()) {
		b.spare -= cost
		return true
	}
	return false
}

// returnSpare gives back cost milli-RU that takeSpare drew for purges
// that did not happen.
func (b *budget) returnSpare(cost int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate != 0 {
		b.spare = min(b.capacity(), b.spare+cost)
	}
}

// spareWait estimates how long until the reaper could draw cost milli-RU if
// users spent nothing meanwhile.
func (b *budget) spareWait(cost, now int64) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate == 0 {
		return 0
	}
	b.refillLocked(now)
	missing := b.capacity() - b.tokens + min(cost, b.capacity()) - b.spare
	return b.durationFor(max(missing, 1))
}

// durationFor is how long refill takes to bring milli-RU, rounded up.
func (b *budget) durationFor(milli int64) time.Duration {
	perSecond := uint64(b.capacity())
	hi, lo := bits.Mul64(uint64(milli), uint64(time.Second))
	lo, carry := bits.Add64(lo, perSecond-1, 0)
	hi += carry
	if hi >= perSecond {
		return time.Duration(1<<63 - 1)
	}
	q, _ := bits.Div64(hi, lo, perSecond)
	return time.Duration(q)
}

// budget returns the budget the container draws on: its own, or else its
// store's shared one; nil: unlimited.
func (c *Container) budget() *budget {
	if b := c.own.Load(); b != nil {
		return b
	}
	return c.store.shared.Load()
}

// draw takes cost milli-RU from the container's throughput, or returns the
// 429 that refuses the operation.
func (c *Container) draw(op, id string, cost int64) error {
	if c.budget() == nil {
		return nil // unlimited: the clock need not be read
	}
	return c.drawAt(op, id, cost, c.store.clock.now())
}

// chargeFailed draws the fixed charge of a failed request (op, on the item
// id: "" for none) and returns it in request units; a container out of
// throughput refuses it with ErrTooManyRequests.
func (c *Container) chargeFailed(op, id string) (float64, error) {
	if err := c.draw(op, id, chargeFailure); err != nil {
		return 0, err
	}
	return ru(chargeFailure), nil
}

// drawAt is draw for a caller that has read the clock already.
func (c *Container) drawAt(op, id string, cost, now int64) error {
	b := c.budget()
	if b == nil {
		return nil
	}
	ok, wait := b.take(cost, now)
	if ok {
		return nil
	}
	c.throttled.Add(1)
	return withContext(&Error{
		StatusCode: statusTooManyRequests,
		Message:    "Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later.",
		RetryAfter: wait,
	}, op, c.id, id)
}

// ChargeScriptTime charges the container d of a server-side script's
// execution (a stored procedure's, a trigger's), on top of the charges of
// the operations the script made: 1 RU for each millisecond it ran, or
// part of one. It returns the charge in request units. The time is already
// spent, so the charge is never refused: it is drawn from the container's
// throughput even past what the budget holds, and the operations after it
// are refused (ErrTooManyRequests) until refill has paid it back.
func (c *Container) ChargeScriptTime(d time.Duration) float64 {
	cost := chargeScriptMilli * int64((max(d, 0)+time.Millisecond-1)/time.Millisecond)
	if b := c.budget(); b != nil {
		b.owe(cost, c.store.clock.now())
	}
	return ru(cost)
}
