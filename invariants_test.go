package lethe

import "testing"

// checkInvariants verifies that a container's primary index and its expiry
// index agree: every item that can expire has exactly one entry, in the
// right tree at the right place, no entry points at a stale record, the
// counts match, and the expiry index's view of what is expired now (the
// rule's cutoffs, the running counts) agrees with expiryRule.expiresAt for
// every item.
func checkInvariants(t testing.TB, c *Container, where string) {
	t.Helper()
	defer c.freeze()()
	now := c.store.clock.now()
	ci, co := cutoffs(&c.rule, now)
	var items, bytes, expired, expiredBytes int64
	oldest := int64(never)
	want := 0
	for i := range c.shards {
		n := 0
		c.shards[i].items.all(func(rec record) bool {
			n++
			pk, id := rec.pk(), rec.id()
			if sh, h := c.shardFor(pk, id); sh != &c.shards[i] || sh.items.get(pk, id, h) != rec {
				t.Fatalf("%s: item %q cannot be found in its shard", where, id)
			}
			items++
			bytes += int64(rec.jsonLen())
			isExpired := !c.rule.live(rec, now)
			if isExpired {
				expired++
				expiredBytes += int64(rec.jsonLen())
				oldest = min(oldest, c.rule.expiredAt(rec.ttl(), rec.written()))
			}
			tree, e := c.expiry.treeFor(rec)
			if tree == nil {
				if isExpired {
					t.Fatalf("%s: item %q with ttl -1 is expired", where, id)
				}
				return true
			}
			want++
			if got, ok := tree.t.Get(e); !ok || got.rec != rec {
				t.Fatalf("%s: item %q (ttl %v) missing from the expiry index", where, id, rec.ttl())
			}
			cutoff := ci
			if tree == &c.expiry.own {
				cutoff = co
			}
			if inPrefix := lessEntry(e, cutoff); inPrefix != isExpired {
				t.Fatalf("%s: item %q: expired by expiresAt %v, by the index's cutoff %v", where, id, isExpired, inPrefix)
			}
			return true
		})
		if n != c.shards[i].items.n {
			t.Fatalf("%s: shard %d counts %d items, holds %d", where, i, c.shards[i].items.n, n)
		}
	}
	check := func(name string, tree *expiryTree) int {
		n := 0
		var front, frontBytes int64
		tree.t.Ascend(func(e expiryEntry) bool {
			n++
			if sh, h := c.shardFor(e.rec.pk(), e.rec.id()); sh.items.get(e.rec.pk(), e.rec.id(), h) != e.rec {
				t.Fatalf("%s: %s tree holds a stale or purged record of %q", where, name, e.rec.id())
			}
			if !lessEntry(tree.front, e) {
				front++
				frontBytes += int64(e.rec.jsonLen())
			}
			return true
		})
		if front != tree.n || frontBytes != tree.bytes {
			t.Fatalf("%s: %s tree counts %d entries (%d bytes) before its front, holds %d (%d bytes)", where, name, tree.n, tree.bytes, front, frontBytes)
		}
		return n
	}
	got := check("inherit", &c.expiry.inherit) + check("own", &c.expiry.own)
	if got != want || items != c.expiry.items || bytes != c.expiry.bytes {
		t.Fatalf("%s: expiry index has %d entries for %d expiring items; counts %d/%d items, %d/%d bytes",
			where, got, want, c.expiry.items, items, c.expiry.bytes, bytes)
	}
	for !c.expiry.countExpired(&c.rule, now, 3) {
	}
	if n, b := c.expiry.expired(); n != expired || b != expiredBytes {
		t.Fatalf("%s: running counts say %d expired (%d bytes), expiresAt says %d (%d bytes)", where, n, b, expired, expiredBytes)
	}
	if expired > 0 {
		if got := c.expiry.oldestExpiry(&c.rule, now); got != oldest {
			t.Fatalf("%s: oldest expiry %d, want %d", where, got, oldest)
		}
	}
}

// freeze holds every shard's lock for reading and then the expiry lock, so
// that no change is made until the function it returns is called.
func (c *Container) freeze() (thaw func()) {
	for i := range c.shards {
		c.shards[i].mu.RLock()
	}
	c.expiry.mu.Lock()
	return func() {
		c.expiry.mu.Unlock()
		for i := range c.shards {
			c.shards[i].mu.RUnlock()
		}
	}
}
