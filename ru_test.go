package lethe

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBudgetIndependentOfRefills: users see exactly the same decisions and
// balances whether or not refills (by the reaper) happen in between, across
// debts, long idle gaps and odd rates.
func TestBudgetIndependentOfRefills(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for round := range 200 {
		rate := []int32{1, 7, 10, 400, 10_000, 1 << 30}[rng.IntN(6)]
		var a, b budget
		now := int64(1_700_000_000) * int64(time.Second)
		a.setRate(rate, now)
		b.setRate(rate, now)
		for step := range 300 {
			switch rng.IntN(10) {
			case 0:
				now += rng.Int64N(int64(5 * time.Second)) // an idle gap
			default:
				now += rng.Int64N(int64(50 * time.Millisecond))
			}
			if rng.IntN(2) == 0 { // the reaper looks in on b only
				b.mu.Lock()
				b.refillLocked(now - rng.Int64N(int64(time.Millisecond)))
				b.mu.Unlock()
			}
			cost := []int64{1000, 1240, 5500, 55_000, int64(rate) * 3000}[rng.IntN(5)]
			okA, waitA := a.take(cost, now)
			okB, waitB := b.take(cost, now)
			require.Equal(t, okA, okB, "round %d step %d", round, step)
			require.Equal(t, waitA, waitB, "round %d step %d", round, step)
			require.Equal(t, a.tokens, b.tokens, "round %d step %d", round, step)
		}
	}
}

// TestBudgetConservation: users and the reaper together never spend more
// than the bucket held at the start plus the refill since, and the reaper
// gets only what overflowed.
func TestBudgetConservation(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	var b budget
	now := int64(0)
	b.setRate(100, now)
	var users, reaper int64
	for range 5000 {
		now += rng.Int64N(int64(30 * time.Millisecond))
		if ok, _ := b.take(1000, now); ok {
			users += 1000
		}
		for b.takeSpare(5500, now) {
			reaper += 5500
		}
		require.LessOrEqual(t, users+reaper, 100_000+100*now/int64(time.Millisecond)+5500)
	}
	assert.Positive(t, reaper)
}

// TestBudgetDebt: an operation costing more than the bucket leaves a debt
// that refill repays second by second, however long the wait; RetryAfter
// tells exactly when the next operation fits.
func TestBudgetDebt(t *testing.T) {
	t.Parallel()
	var b budget
	now := int64(0)
	b.setRate(10, now)
	ok, _ := b.take(55_000, now) // 55 RU of a 10 RU bucket: allowed when full
	require.True(t, ok)
	ok, wait := b.take(1000, now)
	require.False(t, ok)
	assert.Equal(t, 4600*time.Millisecond, wait)
	ok, _ = b.take(1000, now+int64(wait)-1)
	assert.False(t, ok, "one nanosecond early")
	ok, _ = b.take(1000, now+int64(wait))
	assert.True(t, ok)
	assert.Equal(t, 2*time.Second, b.durationFor(20_000))
	var huge budget
	huge.setRate(1<<31-1, 0)
	assert.Equal(t, time.Second, huge.durationFor(huge.capacity()), "no overflow at the largest rate")
}
