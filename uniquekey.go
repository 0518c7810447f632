package lethe

import (
	"encoding/binary"
	"slices"
	"strings"
	"unsafe"

	"github.com/lethedb/lethe/internal/query"
)

// UniqueKeyPolicy makes the values at some paths unique in each logical
// partition, as Cosmos DB's uniqueKeyPolicy does: no two live items of one
// partition may have equal values at every path of one of its keys. An item
// without a value at a path counts as null there (so only one item of a
// partition may lack it). The policy is fixed when the container is
// created: Container.Replace refuses another. A write that would break it
// fails with ErrConflict and changes nothing. An expired item, purged or
// not, holds no unique value.
type UniqueKeyPolicy struct {
	UniqueKeys []UniqueKey `json:"uniqueKeys"`
}

// UniqueKey is one key of a UniqueKeyPolicy: 1 to 16 paths of property
// names from the item's root ("/name/first"; no wildcards, no arrays),
// case-sensitive, whose values together are unique in each partition.
type UniqueKey struct {
	Paths []string `json:"paths"`
}

// Limits of a UniqueKeyPolicy, Cosmos DB's.
const (
	maxUniqueKeys  = 10 // keys in a policy
	maxUniquePaths = 16 // paths in a key
)

// msgUniqueViolation is Cosmos DB's message for a write that would break a
// unique key policy.
const msgUniqueViolation = "Unique index constraint violation."

// normalizeUniquePolicy checks p's unique key policy, and takes a policy
// without keys for none (nil).
func normalizeUniquePolicy(p *ContainerProperties) *Error {
	up := p.UniqueKeyPolicy
	if up == nil {
		return nil
	}
	if len(up.UniqueKeys) == 0 {
		p.UniqueKeyPolicy = nil
		return nil
	}
	if len(up.UniqueKeys) > maxUniqueKeys {
		return badRequest("the unique key policy has %d unique keys, over the limit of %d", len(up.UniqueKeys), maxUniqueKeys)
	}
	for i, k := range up.UniqueKeys {
		if len(k.Paths) == 0 || len(k.Paths) > maxUniquePaths {
			return badRequest("unique key %d of the unique key policy has %d paths: it must have 1 to %d", i, len(k.Paths), maxUniquePaths)
		}
		for j, path := range k.Paths {
			if _, err := parseUniquePath(path); err != nil {
				return err
			}
			if slices.Contains(k.Paths[:j], path) {
				return badRequest("unique key %d of the unique key policy names the path %q twice", i, path)
			}
		}
	}
	return nil
}

// parseUniquePath reads a path of a unique key into its property names.
func parseUniquePath(path string) ([]string, *Error) {
	bad := func(why string) ([]string, *Error) {
		return nil, badRequest("the unique key path %q is invalid: %s", path, why)
	}
	if !strings.HasPrefix(path, "/") {
		return bad(`it must start with "/"`)
	}
	names := strings.Split(path[1:], "/")
	if systemProperties[names[0]] {
		// The store owns them: a document's own _ts or _etag is dropped
		// before it is stored, so it could be checked as one value and
		// kept as another.
		return bad("it names a system property")
	}
	for _, n := range names {
		switch {
		case n == "":
			return bad("a property name is empty")
		case n == "*" || n == "?" || strings.Contains(n, "[]"):
			return bad("a unique key path names properties, without wildcards or arrays")
		}
	}
	return names, nil
}

// uniquePolicyChange refuses a replacement of a container's properties old
// by next that changes the unique key policy (both normalized).
func uniquePolicyChange(old, next ContainerProperties) *Error {
	var a, b []UniqueKey
	if old.UniqueKeyPolicy != nil {
		a = old.UniqueKeyPolicy.UniqueKeys
	}
	if next.UniqueKeyPolicy != nil {
		b = next.UniqueKeyPolicy.UniqueKeys
	}
	if !slices.EqualFunc(a, b, func(x, y UniqueKey) bool { return slices.Equal(x.Paths, y.Paths) }) {
		return badRequest("the unique key policy of a container cannot be changed")
	}
	return nil
}

// cloneUniquePolicy makes p's unique key policy a copy of its own.
func cloneUniquePolicy(p *ContainerProperties) {
	if p.UniqueKeyPolicy == nil {
		return
	}
	up := UniqueKeyPolicy{UniqueKeys: slices.Clone(p.UniqueKeyPolicy.UniqueKeys)}
	for i := range up.UniqueKeys {
		up.UniqueKeys[i].Paths = slices.Clone(up.UniqueKeys[i].Paths)
	}
	p.UniqueKeyPolicy = &up
}

// uniqueIndex holds, for each unique key of a container's policy, the items
// by their partition and their values at the key's paths: every version
// the id tables hold, expired or not (an expired one holds no value, and a
// check skips it: its purge, later, removes it alone); and the values that
// single writes have claimed (claimUnique) and not yet made. Guarded by the
// container's mu; writes that check it hold the container's uniqueMu too
// (see the locking note).
type uniqueIndex struct {
	keys   [][][]string           // each key's paths, each path's property names
	held   map[string][]record    // by entry: the versions that have its values
	claims map[string]uniqueClaim // by entry: the write that claimed its values
	buf    []byte                 // scratch for entries
}

// uniqueClaim is a single write's hold on the values of the version it
// makes, from its check until the version is in the index (or the write
// failed): the entry (its key in claims, which held takes over), the
// item's id, and the new version's ttl and instant, which say until when
// it is live. A durable write waits for the log meanwhile, and the writes
// checked in that time find its values taken, as they would once it is
// made.
type uniqueClaim struct {
	entry   string
	id      string
	ttl     TTL
	written int64
}

// newUniqueIndex returns the index of the policy up (normalized), nil for
// none.
func newUniqueIndex(up *UniqueKeyPolicy) *uniqueIndex {
	if up == nil {
		return nil
	}
	u := &uniqueIndex{held: map[string][]record{}, claims: map[string]uniqueClaim{}}
	for _, k := range up.UniqueKeys {
		var paths [][]string
		for _, p := range k.Paths {
			names, _ := parseUniquePath(p) // checked by normalizeUniquePolicy
			paths = append(paths, names)
		}
		u.keys = append(u.keys, paths)
	}
	return u
}

// entry appends to dst the entry of the values of doc, an item of the
// partition pk (encoded), at the paths of key k.
func (u *uniqueIndex) entry(dst []byte, k int, pk string, doc []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(pk)))
	dst = append(dst, pk...)
	dst = append(dst, byte(k))
	for _, path := range u.keys[k] {
		dst = query.AppendUnique(dst, doc, path)
	}
	return dst
}

// bodyBytes returns rec's stored document, without copying it.
func bodyBytes(rec record) []byte {
	b := rec.body()
	return unsafe.Slice(unsafe.StringData(b), len(b))
}

// itemChanged makes the index follow one item change, old ("" if none)
// going and rec ("" if none) coming: rec's write's claims end as rec takes
// their place. The caller holds the container's mu.
func (u *uniqueIndex) itemChanged(old, rec record) {
	if u == nil {
		return
	}
	for k := range u.keys {
		if old != "" {
			u.buf = u.entry(u.buf[:0], k, old.pk(), bodyBytes(old))
			if rs := u.held[string(u.buf)]; len(rs) == 1 && rs[0] == old {
				delete(u.held, string(u.buf))
			} else if i := slices.Index(rs, old); i >= 0 {
				u.held[string(u.buf)] = slices.Delete(rs, i, i+1)
			}
		}
		if rec != "" {
			u.buf = u.entry(u.buf[:0], k, rec.pk(), bodyBytes(rec))
			if cl, ok := u.claims[string(u.buf)]; ok && cl.id == rec.id() {
				delete(u.claims, cl.entry)
				u.held[cl.entry] = append(u.held[cl.entry], rec) // the claim's string: no copy
				continue
			}
			u.held[string(u.buf)] = append(u.held[string(u.buf)], rec)
		}
	}
}

// uniqueConflict reports whether doc, the new version of the item (pk,
// id), would share the values of one of the container's unique keys with
// another item of its partition live at now: one the index holds that
// skip does not rule out, one a write claimed, or one of others. The
// caller holds c.uniqueMu and the item's shard lock, not c.mu.
func (c *Container) uniqueConflict(pk, id string, doc []byte, now int64, skip func(rec record) bool, others []record) bool {
	c.mu.Lock()
	found := c.uniqueHeldLocked(pk, id, doc, now, skip, others)
	c.mu.Unlock()
	c.afterUniqueCheck(found)
	return found
}

// claimUnique is uniqueConflict for a single write of doc, with ttl, at
// now, that has no others to skip: where it finds no conflict it claims
// doc's values for the write in the same hold of c.mu, until the write's
// version takes their place in the index (itemChanged) or, if the write
// fails, the caller gives them back (releaseUnique). So the check and the
// write are one step for every write checked later, without the caller
// holding c.uniqueMu (for writing) across the write's wait for the log.
// The caller holds c.uniqueMu for reading and the item's shard lock, not
// c.mu.
func (c *Container) claimUnique(pk, id string, doc []byte, ttl TTL, now int64) (conflict bool) {
	c.mu.Lock()
	if u := c.mu.indexes.unique; u != nil {
		// Each key's entry once, one after the other in buf.
		var ends [maxUniqueKeys]int
		u.buf = u.buf[:0]
		for k := range u.keys {
			start := len(u.buf)
			u.buf = u.entry(u.buf, k, pk, doc)
			ends[k] = len(u.buf)
			if conflict = c.takenLocked(u, u.buf[start:], id, now, nil); conflict {
				break
			}
		}
		for k, start := 0, 0; !conflict && k < len(u.keys); k++ {
			e := string(u.buf[start:ends[k]])
			u.claims[e] = uniqueClaim{entry: e, id: id, ttl: ttl, written: now}
			start = ends[k]
		}
	}
	c.mu.Unlock()
	c.afterUniqueCheck(conflict)
	return conflict
}

// releaseUnique gives back the claims of a write of doc, the item (pk, id),
// that failed after claimUnique. A claim another write has taken over (this
// one's version had expired before the other was checked) is the other's.
func (c *Container) releaseUnique(pk, id string, doc []byte) {
	c.mu.Lock()
	if u := c.mu.indexes.unique; u != nil {
		for k := range u.keys {
			u.buf = u.entry(u.buf[:0], k, pk, doc)
			if cl, ok := u.claims[string(u.buf)]; ok && cl.id == id {
				delete(u.claims, cl.entry)
			}
		}
	}
	c.mu.Unlock()
}

// afterUniqueCheck runs the test hook of a unique key check that found no
// conflict.
func (c *Container) afterUniqueCheck(conflict bool) {
	if h := c.store.testHooks(); !conflict && h != nil && h.afterUniqueCheck != nil {
		h.afterUniqueCheck()
	}
}

// uniqueHeldLocked is uniqueConflict under c.mu.
func (c *Container) uniqueHeldLocked(pk, id string, doc []byte, now int64, skip func(rec record) bool, others []record) bool {
	u := c.mu.indexes.unique
	if u == nil {
		return false
	}
	for k := range u.keys {
		u.buf = u.entry(u.buf[:0], k, pk, doc)
		if c.takenLocked(u, u.buf, id, now, skip) {
			return true
		}
		if len(others) == 0 {
			continue
		}
		mine := string(u.buf)
		for _, r := range others {
			if r != "" && r.id() != id && c.rule.live(r, now) && string(u.entry(u.buf[:0], k, pk, bodyBytes(r))) == mine {
				return true
			}
		}
	}
	return false
}

// takenLocked reports whether the values of the entry e of the item id
// are another's live at now: an item's the index holds that skip does not
// rule out, or a write's claim. The caller holds c.mu.
func (c *Container) takenLocked(u *uniqueIndex, e []byte, id string, now int64, skip func(rec record) bool) bool {
	for _, r := range u.held[string(e)] {
		if r.id() != id && c.rule.live(r, now) && (skip == nil || !skip(r)) {
			return true
		}
	}
	cl, ok := u.claims[string(e)]
	return ok && cl.id != id && now < c.rule.expiresAt(cl.ttl, cl.written)
}

// rebuildUniqueLocked makes the unique index anew from the id tables, after
// recovery has filled them. The caller holds c.mu.
func (c *Container) rebuildUniqueLocked() {
	u := newUniqueIndex(c.props.UniqueKeyPolicy)
	if u != nil {
		for i := range c.shards {
			c.shards[i].items.all(func(rec record) bool {
				u.itemChanged("", rec)
				return true
			})
		}
	}
	c.mu.indexes.unique = u
}

// batchUniqueConflict is uniqueConflict for rec, the new version of the
// batch's item i: the versions the index holds of the batch's items give
// way to those the batch's operations so far made (their cur).
func (c *Container) batchUniqueConflict(sc *batchScratch, i int, pk string, rec record, now int64) bool {
	others := make([]record, 0, len(sc.items))
	for k := range sc.items {
		if k != i {
			others = append(others, sc.items[k].cur)
		}
	}
	inBatch := func(r record) bool {
		_, ok := sc.index[r.id()]
		return ok
	}
	return c.uniqueConflict(pk, rec.id(), bodyBytes(rec), now, inBatch, others)
}
