package lethe

import (
	"encoding/binary"
	"errors"
	"strings"
)

// Tombstones. In a store of several write regions (Options.WriteRegions),
// a version's generation counts the removals in its history (see genBits),
// so a create must know the generation of the item's last removal however
// long ago it was: the change feed forgets it. So each shard keeps, for
// every item removed from it (deleted, or expired and purged) and not
// written since, a tombstone: the generation a create of the item then
// makes, the one after the removed version's (nextGen). A write of the
// item drops it: newGen reads a stored version first.
//
// Tombstones are as durable as the items: recovery rebuilds them from the
// log's removals (replayer.remove, which finds the version removed in the
// items it has replayed), and a snapshot writes them as 'T' frames, those
// of the expired items it leaves out included; recovery buries the expired
// items it drops too (replayer.dropExpired). A store that is the only
// writer keeps none and writes none: its files are as before.

// multiWrite reports whether the container's store is one of several
// write regions: whether its versions have generations.
func (c *Container) multiWrite() bool { return c.store.opts.WriteRegions > 1 }

// bury keeps the tombstone of the item whose version old was just removed
// from sh. The caller holds sh's write lock.
func (sh *shard) bury(old record) {
	if sh.tombs == nil {
		sh.tombs = map[string]uint16{}
	}
	// A key of its own: pk+id is a new string, but the id alone (no
	// partition key) would be a part of old, and keep all of it.
	key := old.pk() + old.id()
	if old.pk() == "" {
		key = strings.Clone(key)
	}
	sh.tombs[key] = uint16(nextGen(old))
}

// unbury drops the tombstone of the item of rec, which was just written to
// sh. The caller holds sh's write lock.
func (sh *shard) unbury(rec record) {
	if len(sh.tombs) > 0 {
		delete(sh.tombs, rec.pk()+rec.id())
	}
}

// tomb returns the generation the tombstone of the item (pk, id) holds, 0
// if it has none. The caller holds sh's lock.
func (sh *shard) tomb(pk, id string) uint64 {
	if len(sh.tombs) == 0 {
		return 0
	}
	return uint64(sh.tombs[pk+id])
}

// tombstone is a tombstone as a snapshot writes it.
type tombstone struct {
	pk, id string
	gen    uint64
}

// appendTombs appends to ts the tombstones sh, a shard of c, keeps, for a
// snapshot. The caller holds sh's lock.
func (sh *shard) appendTombs(ts []tombstone, c *Container) []tombstone {
	for key, gen := range sh.tombs {
		n, _ := c.pkPaths.prefixLen(key) // a key bury or loadTomb made
		ts = append(ts, tombstone{pk: key[:n], id: key[n:], gen: uint64(gen)})
	}
	return ts
}

// appendTombFrame appends a snapshot's 'T' frame: the tombstone t of an
// item of the container cid.
func appendTombFrame(b []byte, cid string, t tombstone) []byte {
	b, start := beginFrame(b)
	b = append(b, frameTomb)
	b = appendStr(b, cid)
	b = appendStr(b, t.pk)
	b = binary.AppendUvarint(b, t.gen)
	b = append(b, t.id...)
	return endFrame(b, start)
}

// loadTomb restores a tombstone from a snapshot's 'T' frame (after its
// kind byte). A store that is now the only writer has no use for it.
func (r *replayer) loadTomb(p []byte) error {
	d := decoder{b: p}
	cid, pk, gen := d.str(), d.str(), d.uvarint()
	if d.bad || len(d.b) == 0 || gen == 0 || gen > genMax {
		return errors.New("the tombstone is malformed")
	}
	c := r.s.containers[string(cid)]
	if c == nil {
		return nil
	}
	key := string(pk) + string(d.b)
	if n, ok := c.pkPaths.prefixLen(key); !ok || n != len(pk) {
		return errors.New("the tombstone's partition key value is not one of its container's")
	}
	if !c.multiWrite() {
		return nil
	}
	i, _ := c.shardIndex(string(pk), string(d.b))
	sh := &c.shards[i]
	if sh.tombs == nil {
		sh.tombs = map[string]uint16{}
	}
	sh.tombs[key] = uint16(gen)
	return nil
}

// prefixLen returns the length of the encoded partition key value that
// key, an item's encoded partition key value and id, starts with, and
// false if key starts with none of the container's.
func (p *pkPaths) prefixLen(key string) (int, bool) {
	n := 0
	for range p.segs {
		if n >= len(key) {
			return 0, false
		}
		l := pkComponentLen(key[n:])
		if l <= 0 || l > len(key)-n {
			return 0, false
		}
		n += l
	}
	return n, true
}
