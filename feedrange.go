package lethe

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/lethedb/lethe/internal/epk"
)

// Feed ranges: parts of a container by effective partition key.
//
// Azure Cosmos DB places every partition key value at a point of one space,
// its effective partition key (EPK): a hash of the value, written as
// upper-case hexadecimal, that orders byte by byte (EffectivePartitionKey
// computes it as the service and the SDKs do). The service divides that
// space into partition key ranges, each served by one physical partition;
// a feed range is any part of it, one range, part of one, or the keys a
// prefix of a hierarchical key begins (PrefixFeedRange). lethe keeps one
// set of items per container whatever its ranges, so a feed range is a
// filter on the items' effective partition keys: QueryOptions.FeedRange
// and ChangeFeedOptions.FeedRange read the items and changes in one, and
// reading each range of a division of the space once reads every item and
// change exactly once.

// FeedRange is a range of effective partition keys, [MinInclusive,
// MaxExclusive): upper-case hexadecimal strings as EffectivePartitionKey
// writes them, "" the least, "FF" (MaxEffectivePartitionKey) above every
// key. The zero value, "" to "", is refused; the whole space is
// FeedRange{MaxExclusive: MaxEffectivePartitionKey}.
type FeedRange struct {
	MinInclusive string
	MaxExclusive string
}

// MaxEffectivePartitionKey is above every effective partition key: the
// upper bound of a container's last range.
const MaxEffectivePartitionKey = epk.Max

// EffectivePartitionKey returns the effective partition key of pk in a
// container whose items are partitioned by def, as Azure Cosmos DB computes
// it: by def's version (1, or 2 for 0) and kind (MultiHash hashes each
// component of a hierarchical key apart, so a prefix's keys lie together).
// The empty key, of a container without paths, is "".
func EffectivePartitionKey(def PartitionKeyDefinition, pk PartitionKey) string {
	multi := def.Kind == PartitionKeyKindMultiHash || len(def.Paths) > 1
	return effectivePK(def.Version, multi, pk.enc)
}

// PrefixFeedRange returns the feed range of the items whose partition key
// begins with prefix, one or two components of a hierarchical key (or a
// whole key) in a container whose kind is MultiHash.
func PrefixFeedRange(prefix PartitionKey) FeedRange {
	lo, hi := epk.PrefixRange(epkValues(prefix.enc))
	return FeedRange{MinInclusive: lo, MaxExclusive: hi}
}

// effectivePK returns the effective partition key of an encoded key.
func effectivePK(version int, multi bool, enc string) string {
	return epk.Hash(version, multi, epkValues(enc))
}

// epkValues decodes an encoded key into the components epk hashes.
func epkValues(enc string) []epk.Value {
	var vals []epk.Value
	for enc != "" {
		n := pkComponentLen(enc)
		c := enc[:n]
		enc = enc[n:]
		var v epk.Value
		switch c[0] {
		case pkNull:
			v.Kind = epk.Null
		case pkFalse:
			v.Kind = epk.False
		case pkTrue:
			v.Kind = epk.True
		case pkNumber:
			v.Kind, v.Number = epk.Number, math.Float64frombits(binary.BigEndian.Uint64([]byte(c[1:])))
		case pkString:
			_, k := binary.Uvarint([]byte(c[1:min(len(c), 1+binary.MaxVarintLen64)]))
			v.Kind, v.String = epk.String, c[1+k:]
		}
		vals = append(vals, v)
	}
	return vals
}

// epkScope is a feed range compiled for a container: which of its items'
// encoded keys lie in it.
type epkScope struct {
	lo, hi  string
	version int
	multi   bool
}

// scope validates r and compiles it for c; nil r is every key (nil scope).
func (c *Container) scope(r *FeedRange) (*epkScope, *Error) {
	if r == nil {
		return nil, nil
	}
	lo, hi := strings.ToUpper(r.MinInclusive), strings.ToUpper(r.MaxExclusive)
	for _, b := range []string{lo, hi} {
		if strings.Trim(b, "0123456789ABCDEF") != "" {
			return nil, badRequest("the feed range's bounds must be hexadecimal effective partition keys, not %q", clip(b))
		}
	}
	if lo >= hi {
		return nil, badRequest("the feed range [%q, %q) is empty: its minimum must be below its maximum", clip(lo), clip(hi))
	}
	return &epkScope{lo: lo, hi: hi, version: c.pkPaths.version, multi: c.pkPaths.multi}, nil
}

// has reports whether the item of encoded key enc lies in s (nil: every
// item).
func (s *epkScope) has(enc string) bool {
	if s == nil {
		return true
	}
	return epk.InRange(effectivePK(s.version, s.multi, enc), s.lo, s.hi)
}

// holds reports whether an item of encoded key enc is among those a query
// or feed of pk reads: its key begins with pk's, and it lies in pk's feed
// range if it has one.
func (pk PartitionKey) holds(enc string) bool {
	return strings.HasPrefix(enc, pk.enc) && pk.scope.has(enc)
}
