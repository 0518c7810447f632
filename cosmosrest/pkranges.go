package cosmosrest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/epk"
)

// Partition key ranges, as the service has them.
//
// A container's effective partition key space (internal/epk) is divided
// into partition key ranges, each a physical partition of the service's:
// /pkranges lists them, every response about a document names the range
// it lies in (x-ms-documentdb-partitionkeyrangeid) and carries that
// range's session token, and a query or change feed request that names a
// range (x-ms-documentdb-partitionkeyrangeid), or a part of one
// (x-ms-start-epk and x-ms-end-epk), is served from it alone. lethe keeps
// one set of items per container whatever its ranges: a range is a filter
// on the items' effective partition keys (lethe.FeedRange), so ranges cost
// nothing to have and nothing moves between them.

// RangeConfig says how many partition key ranges the front gives the
// containers it creates. The zero value follows the service.
type RangeConfig struct {
	// Throughput is the throughput, in RU/s, of one range at a container's
	// creation: a partitioned container with throughput of its own has
	// its manual throughput (or its autoscale maximum) divided by it,
	// rounded up, ranges; one without (on a database's shared throughput,
	// or none) has one. 0 means the service's 10,000 RU/s a physical
	// partition, by which a container created at 40,000 RU/s has 4.
	Throughput int32
	// Min is the fewest ranges a partitioned container has, whatever its
	// throughput, so that tests exercise several ranges without asking for
	// throughput; 0 means 1. A container without partition key paths has
	// one range always, as on the service.
	Min int
}

// check refuses a configuration that cannot be followed.
func (rc RangeConfig) check() error {
	if rc.Throughput < 0 || rc.Min < 0 || rc.Min > maxRanges {
		return fmt.Errorf("cosmosrest: the range configuration must have a throughput of at least 0 (%d; 0 means %d RU/s a range) and a minimum of 0 to %d ranges (%d)",
			rc.Throughput, defaultRangeThroughput, maxRanges, rc.Min)
	}
	return nil
}

// Defaults of RangeConfig, and the most ranges a container has.
const (
	defaultRangeThroughput = 10_000
	maxRanges              = 1024
)

// subPartitionKeyRangeGone is the substatus of a 410: the request names a
// partition key range the container does not have (any more: a split).
const subPartitionKeyRangeGone = 1002

// pkRange is one partition key range: [lo, hi) of the effective partition
// key space.
type pkRange struct {
	id      string
	num     int // id, as a number
	lo, hi  string
	parents []string // the ranges it was split from
	header  []string // []string{id}: the value of rangeIDHeader, made once
}

// rangeLayout is a container's partition key ranges, in the order of the
// space, and how the container hashes its keys. It is never changed in
// place.
type rangeLayout struct {
	ranges  []pkRange
	lsn     uint64 // the layout's version, the /pkranges feed's etag
	next    int    // the id of the next range a split makes
	version int    // the partition key's hash version
	multi   bool   // a hierarchical key (MultiHash)
	// kept says that the layout is not the one the container's
	// properties give (a split, or a replace of its throughput, changed
	// it): a durable database keeps it in rangesFile (rangesfile.go).
	kept bool
}

// newLayout divides the space of a container of properties p into the
// number of ranges cfg gives it (rangeCount).
func newLayout(p lethe.ContainerProperties, cfg RangeConfig) *rangeLayout {
	def := p.PartitionKeyDefinition
	l := &rangeLayout{lsn: 1, version: def.Version, multi: isMulti(def)}
	n := rangeCount(p, cfg)
	bounds := append(append([]string{epk.Min}, epk.Bounds(l.version, l.multi, n)...), epk.Max)
	l.next = n
	for i := range n {
		id := strconv.Itoa(i)
		l.ranges = append(l.ranges, pkRange{id: id, num: i, lo: bounds[i], hi: bounds[i+1], parents: []string{}, header: []string{id}})
	}
	return l
}

// rangeCount is the number of ranges cfg gives a container of properties
// p at its creation: its own throughput (manual, or the autoscale maximum)
// divided by cfg's throughput a range, rounded up, at least cfg.Min and 1,
// at most maxRanges; 1 without partition key paths.
func rangeCount(p lethe.ContainerProperties, cfg RangeConfig) int {
	if len(p.PartitionKeyDefinition.Paths) == 0 {
		return 1
	}
	per := cfg.Throughput
	if per <= 0 {
		per = defaultRangeThroughput
	}
	own := p.Throughput
	if p.AutoscaleMaxThroughput > 0 {
		own = p.AutoscaleMaxThroughput
	}
	return min(max(int((own+per-1)/per), cfg.Min, 1), maxRanges)
}

// raiseRanges splits the ranges of the container of properties p in db,
// as the service splits physical partitions when a container's throughput
// is raised, until it has the count its properties to be (to) would give
// it at creation (rangeCount); it never merges them when that is fewer,
// as the service merges none when throughput is lowered. The layout is
// kept either way (rangesfile.go), so that a restart gives the container
// the ranges it had, not the count of its throughput.
func (h *Handler) raiseRanges(db *database, p, to lethe.ContainerProperties) error {
	n := rangeCount(to, h.cfg.Ranges)
	return db.changeLayout(p.ID, p, h.cfg.Ranges, func(l *rangeLayout) (*rangeLayout, error) { return l.grow(n), nil })
}

// isMulti reports whether def is of a hierarchical key, hashed per
// component.
func isMulti(def lethe.PartitionKeyDefinition) bool {
	return def.Kind == lethe.PartitionKeyKindMultiHash || len(def.Paths) > 1
}

// byID returns the range of id: at its index while no split has
// renumbered the ranges, else looked for.
func (l *rangeLayout) byID(id string) (pkRange, bool) {
	if i, err := strconv.Atoi(id); err == nil && i >= 0 && i < len(l.ranges) && l.ranges[i].id == id {
		return l.ranges[i], true
	}
	for _, r := range l.ranges {
		if r.id == id {
			return r, true
		}
	}
	return pkRange{}, false
}

// of returns the range that holds the effective partition key key.
func (l *rangeLayout) of(key string) pkRange {
	i, _ := slices.BinarySearchFunc(l.ranges, key, func(r pkRange, k string) int {
		switch {
		case k < r.lo:
			return 1
		case k >= r.hi:
			return -1
		}
		return 0
	})
	return l.ranges[min(i, len(l.ranges)-1)]
}

// rangeOf returns the id of the range of partition key pk.
func (l *rangeLayout) rangeOf(pk lethe.PartitionKey) string {
	if len(l.ranges) == 1 {
		return l.ranges[0].id
	}
	def := lethe.PartitionKeyDefinition{Version: l.version}
	if l.multi {
		def.Kind = lethe.PartitionKeyKindMultiHash
	}
	return l.of(lethe.EffectivePartitionKey(def, pk)).id
}

// layout returns the ranges of container c (properties p) of db: those
// it was given when the front created it, as splits and replaces of its
// throughput changed them, or, for a container the front found on disk
// without a kept layout (rangesfile.go), those its throughput gives it
// now.
func (q *request) layout(db *database, c *lethe.Container, p lethe.ContainerProperties) *rangeLayout {
	if l, ok := db.ranges.Load(c.ID()); ok {
		return l.(*rangeLayout)
	}
	l, _ := db.ranges.LoadOrStore(c.ID(), newLayout(p, q.h.cfg.Ranges))
	return l.(*rangeLayout)
}

// rangeIDOf returns the range id a request's
// x-ms-documentdb-partitionkeyrangeid names ("" for none): the SDKs send
// the id alone, or as "{database rid},{range id}".
func rangeIDOf(r *http.Request) string {
	id := r.Header.Get("x-ms-documentdb-partitionkeyrangeid")
	return id[strings.LastIndexByte(id, ',')+1:]
}

// requestRange reads the range a query or change feed request of partition
// key pk reads: the range of x-ms-documentdb-partitionkeyrangeid (410 with
// substatus 1002 when the container has none of that id), narrowed to
// x-ms-start-epk and x-ms-end-epk when the request has them. It returns a
// nil feed range for a request that names neither, with the id of the one
// range pk reads, if it reads one (keyRange); it answers the request itself
// when it fails.
func (q *request) requestRange(l *rangeLayout, pk lethe.PartitionKey) (id string, fr *lethe.FeedRange, ok bool) {
	id = q.r.Header.Get("x-ms-documentdb-partitionkeyrangeid")
	lo, hi := q.r.Header.Get("x-ms-start-epk"), q.r.Header.Get("x-ms-end-epk")
	if id == "" && lo == "" && hi == "" {
		return l.keyRange(pk), nil, true
	}
	fr = &lethe.FeedRange{MinInclusive: epk.Min, MaxExclusive: epk.Max}
	if id != "" {
		r, found := l.byID(rangeIDOf(q.r))
		if !found {
			apiError{status: http.StatusGone, sub: subPartitionKeyRangeGone,
				msg: fmt.Sprintf("The partition key range %q does not exist in the container: it has been split, or never existed. Read the container's partition key ranges (/pkranges) again.", clip(id))}.write(q.w)
			return "", nil, false
		}
		id, fr.MinInclusive, fr.MaxExclusive = r.id, r.lo, r.hi
	}
	if lo != "" || hi != "" {
		lo, hi = strings.ToUpper(lo), strings.ToUpper(hi)
		if hi == "" {
			hi = epk.Max
		}
		fr.MinInclusive, fr.MaxExclusive = max(fr.MinInclusive, lo), min(fr.MaxExclusive, hi)
		if fr.MinInclusive >= fr.MaxExclusive {
			q.answerError(http.StatusBadRequest, fmt.Sprintf("the effective partition key range [%q, %q) of x-ms-start-epk and x-ms-end-epk is empty, or outside the partition key range %q", clip(lo), clip(hi), clip(id)))
			return "", nil, false
		}
	}
	if id == "" {
		id = l.keyRange(pk)
	}
	return id, fr, true
}

// rangeJSON writes range r (the i-th) of container coll of db, as the
// service lists it.
func rangeJSON(db *database, coll []byte, l *rangeLayout, i int, ts int64) []byte {
	r := l.ranges[i]
	rid := pkRangeRID(coll, r.num)
	parents := "[]"
	if len(r.parents) > 0 {
		parents = `["` + strings.Join(r.parents, `","`) + `"]`
	}
	etag := strconv.Quote(`"` + strconv.FormatUint(l.lsn, 10) + `"`)
	return fmt.Appendf(nil, `{"_rid":%q,"id":%q,"_etag":%s,"minInclusive":%q,"maxExclusive":%q,"ridPrefix":%d,"_self":"dbs/%s/colls/%s/pkranges/%s/","throughputFraction":%s,"status":"online","parents":%s,"ownedArchivalPKRangeIds":[],"_ts":%d,"lsn":%d,"_lsn":%d}`,
		ridString(rid), r.id, etag, r.lo, r.hi, r.num, ridString(db.rid), ridString(coll), ridString(rid),
		strconv.FormatFloat(1/float64(len(l.ranges)), 'g', -1, 64), parents, ts, l.lsn, l.lsn)
}

// rangeIDHeader is the response header that names a partition key range,
// as the service writes it (setHeader).
const rangeIDHeader = "x-ms-documentdb-partitionkeyrangeid"

// rangeHeaders names the range id a response came from, in
// x-ms-documentdb-partitionkeyrangeid, with that range's session token
// (write: the response is of a write). id "" is a response from the whole
// container: no range named, and a session token for each range.
func (q *request) rangeHeaders(l *rangeLayout, id string, write bool) {
	hdr := q.w.Header()
	tok := q.sessionToken(write)
	switch {
	case id != "":
		// The range's own value, shared by its responses: net/http and
		// the front only ever replace a header's slice, never write in it.
		if r, ok := l.byID(id); ok {
			hdr[rangeIDHeader] = r.header
		}
		if id != "0" {
			tok = id + tok[strings.IndexByte(tok, ':'):]
		}
	case len(l.ranges) > 1:
		rest := tok[strings.IndexByte(tok, ':'):]
		var sb strings.Builder
		for i, r := range l.ranges {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(r.id)
			sb.WriteString(rest)
		}
		tok = sb.String()
	}
	setHeader(hdr, "x-ms-session-token", tok)
}

// itemRange returns the id of the range of the document a point request
// names by its x-ms-documentdb-partitionkey header, which has been read
// (partitionKey) without fault.
func (q *request) itemRange(l *rangeLayout) string {
	if len(l.ranges) == 1 {
		return l.ranges[0].id
	}
	pk, err := parsePKHeader(q.r.Header.Get("x-ms-documentdb-partitionkey"))
	if err != nil {
		return l.ranges[0].id
	}
	return l.rangeOf(pk)
}

// keyRange returns the id of the one range a query or feed of partition
// key pk reads: the only range, or the range of a whole key (not a
// hierarchical key's prefix); "" when pk is empty or reads several.
func (l *rangeLayout) keyRange(pk lethe.PartitionKey) string {
	switch {
	case len(l.ranges) == 1:
		return l.ranges[0].id
	case pk == lethe.NewPartitionKey() || l.multi:
		return ""
	}
	return l.rangeOf(pk)
}
