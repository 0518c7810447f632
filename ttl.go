package lethe

import (
	"math"
	"math/big"
	"strconv"
	"strings"
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

// expiredForGood is the expiry instant of an item that expired under an
// earlier setting of its container.
const expiredForGood = math.MinInt64

// expiryRule is everything that decides expiry in one container: its
// default TTL, and what "expiry is final" remembers of earlier defaults.
type expiryRule struct {
	def TTL // the container's DefaultTimeToLive
	// An item without its own ttl written at or before finalInherit, or one
	// with its own positive ttl whose expiry is at or before finalOwn,
	// expired under an earlier default and stays expired.
	finalInherit int64
	finalOwn     int64
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
func (r expiryRule) expiresAt(own TTL, written int64) int64 {
	if (own == TTLOff && written <= r.finalInherit) || (own > 0 && addSeconds(written, own) <= r.finalOwn) {
		return expiredForGood
	}
	if r.def == TTLOff {
		return never
	}
	eff := r.def
	if own != TTLOff {
		eff = own
	}
	if eff == TTLNever {
		return never
	}
	return addSeconds(written, eff)
}

// changed returns the rule after the container's default changes to def at
// now. Expiry is final: whatever is expired under r at now stays expired,
// without touching a single item (the reaper purges them later).
func (r expiryRule) changed(def TTL, now int64) expiryRule {
	if r.def != TTLOff {
		r.finalOwn = max(r.finalOwn, now)
		if r.def > 0 {
			r.finalInherit = max(r.finalInherit, now-addSeconds(0, r.def))
		}
	}
	r.def = def
	return r
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
// Integral values are accepted in any JSON spelling (10, 10.0, 1e1); the
// decision is made on the exact decimal value, never on a rounded float, so
// 1.0000000000000001 is rejected as the non-integer it is.
func parseItemTTL(raw []byte) (TTL, *Error) {
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		if n != -1 && (n < 1 || n > int64(MaxTTL)) {
			return 0, ttlError(string(raw))
		}
		return TTL(n), nil
	}
	// A fraction or an exponent. Any exponent beyond ±30 puts a non-zero
	// value outside the range or below 1; so does a zero.
	text := string(raw)
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(text[i+1:], "+"))
		if err != nil || exp > 30 || exp < -30 {
			return 0, ttlError(text)
		}
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return 0, ttlError(text)
	}
	n := r.Num().Int64()
	if n != -1 && (n < 1 || n > int64(MaxTTL)) {
		return 0, ttlError(text)
	}
	return TTL(n), nil
}
