package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// dataset is the one set of items every store is fed: N JSON documents of
// about 250 bytes with random ids, and the W1 TTL mix (a third one hour, a
// third two hours, a third without a ttl).
type dataset struct {
	ids  []string
	docs [][]byte        // W1 form: ends with ,"ttl":3600} / ,"ttl":7200} / }
	cut  []uint16        // docs[i][:cut[i]] is the document without its ttl member and closing brace
	ttls []time.Duration // W1 TTL; 0: none
	raw  int64           // sum of len(id)+len(doc) over the W1 form
}

var statuses = []string{"active", "active", "active", "active", "active", "inactive", "inactive", "pending", "pending", "banned"}

// queryStatus is the value W6 filters on: about a fifth of the items.
const queryStatus = "pending"

var (
	firstNames = []string{"ada", "alan", "grace", "linus", "barbara", "ken", "dennis", "margaret", "edsger", "frances", "john", "radia"}
	lastNames  = []string{"lovelace", "turing", "hopper", "torvalds", "liskov", "thompson", "ritchie", "hamilton", "dijkstra", "allen", "backus", "perlman"}
	cities     = []string{"Berlin", "Lisbon", "Osaka", "Toronto", "Nairobi", "Lima", "Oslo", "Perth", "Austin", "Seville"}
	countries  = []string{"DE", "PT", "JP", "CA", "KE", "PE", "NO", "AU", "US", "ES"}
	words      = []string{"storage", "expiry", "latency", "queue", "cache", "index", "shard", "reaper", "cosmos", "tenant", "region", "replica"}
)

func newDataset(n int, seed uint64) *dataset {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	d := &dataset{
		ids:  make([]string, n),
		docs: make([][]byte, n),
		cut:  make([]uint16, n),
		ttls: make([]time.Duration, n),
	}
	seen := make(map[uint32]struct{}, n)
	buf := make([]byte, 0, 512)
	for i := 0; i < n; i++ {
		var num uint32
		for {
			num = 10_000_000 + r.Uint32N(90_000_000)
			if _, dup := seen[num]; !dup {
				seen[num] = struct{}{}
				break
			}
		}
		id := "user-" + strconv.FormatUint(uint64(num), 10)
		b := buf[:0]
		fn, ln := firstNames[r.IntN(len(firstNames))], lastNames[r.IntN(len(lastNames))]
		ci := r.IntN(len(cities))
		b = fmt.Appendf(b, `{"id":%q,"name":"%s %s","email":"%s.%s%d@example.com","status":%q,"age":%d,"city":%q,"country":%q,"score":%d.%02d,"tags":[%q,%q],"bio":"`,
			id, fn, ln, fn, ln, r.IntN(1000), statuses[r.IntN(len(statuses))], 18+r.IntN(70),
			cities[ci], countries[ci], r.IntN(10000), r.IntN(100),
			words[r.IntN(len(words))], words[r.IntN(len(words))])
		for len(b) < 222 {
			b = append(b, words[r.IntN(len(words))]...)
			b = append(b, ' ')
		}
		b = append(b[:len(b)-1], '"')
		d.cut[i] = uint16(len(b))
		switch i % 3 {
		case 0:
			b = append(b, `,"ttl":3600}`...)
			d.ttls[i] = time.Hour
		case 1:
			b = append(b, `,"ttl":7200}`...)
			d.ttls[i] = 2 * time.Hour
		default:
			b = append(b, '}')
		}
		d.ids[i] = id
		d.docs[i] = append([]byte(nil), b...)
		d.raw += int64(len(id) + len(b))
	}
	return d
}

// withTTL returns document i with its ttl member set to ttl seconds, or
// without one when ttl is 0 (a fresh slice).
func (d *dataset) withTTL(i int, ttl int) []byte {
	base := d.docs[i][:d.cut[i]]
	out := make([]byte, 0, len(base)+16)
	out = append(out, base...)
	if ttl != 0 {
		out = append(out, `,"ttl":`...)
		out = strconv.AppendInt(out, int64(ttl), 10)
	}
	return append(out, '}')
}

// countStatus counts the documents whose status is s: what W6 must find.
func (d *dataset) countStatus(s string) int {
	needle := []byte(`"status":"` + s + `"`)
	n := 0
	for _, doc := range d.docs {
		if containsBytes(doc, needle) {
			n++
		}
	}
	return n
}

func containsBytes(b, sub []byte) bool {
	for i := 0; i+len(sub) <= len(b); i++ {
		if string(b[i:i+len(sub)]) == string(sub) {
			return true
		}
	}
	return false
}

// readOrder returns m random indexes into [0, n) drawn from sel (or all
// items when sel is nil).
func readOrder(m int, sel []int32, n int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]int32, m)
	for i := range out {
		if sel != nil {
			out[i] = sel[r.IntN(len(sel))]
		} else {
			out[i] = int32(r.IntN(n))
		}
	}
	return out
}
