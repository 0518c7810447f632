package lethe

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"
)

// TTL is a time to live in whole seconds. Its zero value, TTLOff, means "not
// set": on a container it turns time to live off, on an item (which has no
// TTL field in Go; see the "ttl" JSON property) it would mean "inherit".
// Cosmos DB never accepts 0 as a TTL, so the zero value is free for that
// meaning.
type TTL int32

const (
	// TTLOff is the zero TTL: on a container, time to live is off and no item expires.
	TTLOff TTL = 0
	// TTLNever (-1) turns time to live on without a default expiry; on an item it means "never expire".
	TTLNever TTL = -1
	// MaxTTL is the longest time to live, 2147483647 seconds (about 68 years).
	MaxTTL TTL = math.MaxInt32
)

// Duration returns t as a time.Duration, or 0 for TTLOff and TTLNever.
func (t TTL) Duration() time.Duration {
	if t <= 0 {
		return 0
	}
	return time.Duration(t) * time.Second
}

// TTLFromDuration returns the shortest TTL that lasts at least d: whole
// seconds, rounded up (1.2s gives 2). It never returns TTLOff or TTLNever: a
// d of zero or less gives 1, the shortest time to live Cosmos DB accepts, and
// a d beyond MaxTTL seconds gives MaxTTL. Use TTLNever for "no expiry".
func TTLFromDuration(d time.Duration) TTL {
	if d <= 0 {
		return 1
	}
	secs := d / time.Second
	if d%time.Second != 0 {
		secs++
	}
	return TTL(min(secs, time.Duration(MaxTTL)))
}

// String returns "off", "never" or the number of seconds.
func (t TTL) String() string {
	switch {
	case t == TTLOff:
		return "off"
	case t == TTLNever:
		return "never"
	default:
		return strconv.FormatInt(int64(t), 10) + "s"
	}
}

// validDefaultTTL reports whether t may be a container's DefaultTimeToLive.
func validDefaultTTL(t TTL) bool { return t >= TTLNever }

// never is the expiry instant of an item that does not expire.
const never = math.MaxInt64

// expiredForGood is the expiry instant, as expiresAt gives it, of an item
// that expired under an earlier setting of its container: it is expired at
// every instant, whatever the clock says later.
const expiredForGood = math.MinInt64

// expiryRule is everything that decides expiry in one container: its
// default TTL, and what "expiry is final" remembers of earlier defaults. It
// is the one place that decides expiry and liveness; the expiry index, the
// read and write paths, the reaper, queries and Stats all ask it.
//
// A rule is a value: changed returns a new one and never alters past, which
// copies of the rule may share.
type expiryRule struct {
	def TTL // the container's DefaultTimeToLive
	// An item without its own ttl written at or before finalInherit, or one
	// with its own positive ttl whose expiry is at or before finalOwn,
	// expired under an earlier setting and stays expired.
	finalInherit int64
	finalOwn     int64
	// past records, oldest first, the earlier defaults that expired
	// inheriting items for good, so that Stats can say when each of them
	// expired: an item written after past[i-1].cut and at or before
	// past[i].cut expired at written + past[i].def.
	past []pastDefault
}

// pastDefault is an earlier positive default and the last write it expired.
type pastDefault struct {
	cut int64
	def TTL
}

func newExpiryRule(def TTL) expiryRule {
	return expiryRule{def: def, finalInherit: expiredForGood, finalOwn: expiredForGood}
}

// expiresAt is the one place where lethe decides when an item expires.
//
// own is the item's own "ttl" property (TTLOff when absent or null:
// inherit), written the instant of its last write in Unix nanoseconds. The
// result is the first instant, in Unix nanoseconds, at which the item is
// expired: never if it does not expire, expiredForGood if it expired under
// an earlier default.
//
//	effective = never     if the container's TTL is off
//	          = own       if the item has a ttl (-1: never)
//	          = def       otherwise (-1: never)
//	expired   = effective != never && now >= written + effective
func (r *expiryRule) expiresAt(own TTL, written int64) int64 {
	switch {
	case own == TTLOff:
		return r.inheritExpiry(written)
	case own > 0:
		return r.ownExpiry(addSeconds(written, own))
	default: // TTLNever
		return never
	}
}

// inheritExpiry is expiresAt for an item without its own ttl.
func (r *expiryRule) inheritExpiry(written int64) int64 {
	switch {
	case written <= r.finalInherit:
		return expiredForGood
	case r.def > 0:
		return addSeconds(written, r.def)
	default:
		return never
	}
}

// ownExpiry is expiresAt for an item with its own positive ttl, at being
// its last write plus that ttl.
func (r *expiryRule) ownExpiry(at int64) int64 {
	switch {
	case at <= r.finalOwn:
		return expiredForGood
	case r.def == TTLOff:
		return never
	default:
		return at
	}
}

// live reports whether rec is live at now.
func (r *expiryRule) live(rec record, now int64) bool {
	return now < r.expiresAt(rec.ttl(), rec.written())
}

// liveNow reports whether rec is live now, reading the clock only if rec
// can expire at all: the read path's check.
func (r *expiryRule) liveNow(rec record, clock *storeClock) bool {
	exp := r.expiresAt(rec.ttl(), rec.written())
	return exp == never || (exp != expiredForGood && clock.now() < exp)
}

// expiredAt returns when an expired item expired, for statistics: the
// expiresAt of its own ttl or the default in force, or for an item expired
// for good, the instant it expired under the earlier setting.
func (r *expiryRule) expiredAt(own TTL, written int64) int64 {
	if at := r.expiresAt(own, written); at != expiredForGood {
		return at
	}
	if own > 0 {
		return addSeconds(written, own)
	}
	i, _ := slices.BinarySearchFunc(r.past, written, func(p pastDefault, w int64) int { return cmp.Compare(p.cut, w) })
	return addSeconds(written, r.past[i].def)
}

// inheritCutoff returns the latest last write at which an item without its
// own ttl is expired at now: the inheriting items expired at now are
// exactly those written at or before it. Because expiresAt grows with the
// last write, they are a prefix of the expiry index's inherit tree.
func (r *expiryRule) inheritCutoff(now int64) int64 {
	if r.def > 0 {
		return max(r.finalInherit, subSeconds(now, r.def))
	}
	return r.finalInherit
}

// ownCutoff returns the latest (last write + own ttl) at which an item with
// its own positive ttl is expired at now.
func (r *expiryRule) ownCutoff(now int64) int64 {
	if r.def != TTLOff {
		return max(r.finalOwn, now)
	}
	return r.finalOwn
}

// changed returns the rule after the container's default changes to def at
// now. Expiry is final: whatever is expired under r at now stays expired,
// without touching a single item (the reaper purges them later).
func (r expiryRule) changed(def TTL, now int64) expiryRule {
	if cut := r.inheritCutoff(now); cut > r.finalInherit {
		r.past = append(slices.Clip(r.past), pastDefault{cut: cut, def: r.def})
		r.finalInherit = cut
	}
	r.finalOwn = r.ownCutoff(now)
	r.def = def
	return r
}

// subSeconds subtracts ttl seconds from the instant at, saturating at
// expiredForGood.
func subSeconds(at int64, ttl TTL) int64 {
	d := int64(ttl) * int64(time.Second)
	if at < expiredForGood+d {
		return expiredForGood
	}
	return at - d
}

// addSeconds adds ttl seconds to the instant at, saturating at never.
func addSeconds(at int64, ttl TTL) int64 {
	d := int64(ttl) * int64(time.Second)
	if at > never-d {
		return never
	}
	return at + d
}

// ttlError is the Cosmos-worded error for an invalid ttl value, raw being
// its JSON text.
func ttlError(raw string) *Error {
	if len(raw) > 40 {
		raw = raw[:40] + "..."
	}
	return badRequest("The input ttl '%s' is invalid. %s", raw, msgTTLValidRange)
}

// defaultTTLError is the Cosmos-worded error for an invalid DefaultTimeToLive.
func defaultTTLError(t TTL) *Error {
	return badRequest("The input defaultTtl '%d' is invalid. %s", t, msgTTLValidRange)
}

// parseItemTTL validates the JSON number text of an item's "ttl" property.
// Integral values are accepted in any JSON spelling (10, 10.0, 1e1, 0.1e2);
// the decision is made on the exact decimal value, never on a rounded float,
// so 1.0000000000000001 is refused as the non-integer it is. It takes time
// linear in the text and no big-number arithmetic, whatever its length
// (1. followed by two million zeros is 1) or exponent.
func parseItemTTL(raw []byte) (TTL, *Error) {
	n, ok := smallInteger(raw)
	if !ok || (n != -1 && (n < 1 || n > int64(MaxTTL))) {
		return 0, ttlError(string(raw[:min(len(raw), 41)])) // ttlError shows 40 bytes
	}
	return TTL(n), nil
}

// smallInteger returns the value of the JSON number text num if it is an
// integer of at most ten digits; ok is false for anything else (a fraction,
// a larger magnitude, text that is not a number).
//
// The number is normalised as digits × 10^scale: the digits of its integer
// and fraction parts without leading and trailing zeros, and scale the
// exponent less the fraction digits, plus the trailing zeros dropped. It is
// an integer if scale ≥ 0, and below 10^10 if the digits and scale together
// make at most ten.
func smallInteger(num []byte) (n int64, ok bool) {
	i := 0
	neg := i < len(num) && num[i] == '-'
	if neg {
		i++
	}
	intStart := i
	i = skipDigits(num, i)
	intEnd := i
	if intEnd == intStart || (num[intStart] == '0' && intEnd-intStart > 1) {
		return 0, false
	}
	fracStart, fracEnd := i, i
	if i < len(num) && num[i] == '.' {
		fracStart = i + 1
		i = skipDigits(num, fracStart)
		fracEnd = i
		if fracEnd == fracStart {
			return 0, false
		}
	}
	exp := 0
	if i < len(num) && (num[i] == 'e' || num[i] == 'E') {
		i++
		expNeg := i < len(num) && num[i] == '-'
		if i < len(num) && (num[i] == '-' || num[i] == '+') {
			i++
		}
		expStart := i
		for ; i < len(num) && '0' <= num[i] && num[i] <= '9'; i++ {
			// Saturate: an exponent of a billion or more outweighs any
			// count of digits an item can hold.
			if exp < 1e9 {
				exp = exp*10 + int(num[i]-'0')
			}
		}
		if i == expStart {
			return 0, false
		}
		if expNeg {
			exp = -exp
		}
	}
	if i != len(num) {
		return 0, false
	}

	// The digits run over num[intStart:intEnd] and num[fracStart:fracEnd];
	// digit k of them is at pos(k).
	nInt, nFrac := intEnd-intStart, fracEnd-fracStart
	pos := func(k int) int {
		if k < nInt {
			return intStart + k
		}
		return fracStart + k - nInt
	}
	first, last := 0, nInt+nFrac-1
	for first <= last && num[pos(first)] == '0' {
		first++
	}
	if first > last {
		return 0, true // zero
	}
	for num[pos(last)] == '0' {
		last--
	}
	scale := exp - nFrac + (nInt + nFrac - 1 - last)
	if scale < 0 || last-first+1+scale > 10 {
		return 0, false
	}
	for k := first; k <= last; k++ {
		n = n*10 + int64(num[pos(k)]-'0')
	}
	for range scale {
		n *= 10
	}
	if neg {
		n = -n
	}
	return n, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
