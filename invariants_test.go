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
	for i := range c.shards {
		sh := &c.shards[i]
		x := &sh.expiry
		var items, bytes, expired, expiredBytes int64
		shardOldest := int64(never)
		want, n := 0, 0
		sh.items.all(func(rec record) bool {
			n++
			pk, id := rec.pk(), rec.id()
			if s, h := c.shardFor(pk, id); s != sh || sh.items.get(pk, id, h) != rec {
				t.Fatalf("%s: item %q cannot be found in its shard", where, id)
			}
			items++
			bytes += int64(rec.jsonLen())
			isExpired := !c.rule.live(rec, now)
			if isExpired {
				expired++
				expiredBytes += int64(rec.jsonLen())
				shardOldest = min(shardOldest, c.rule.expiredAt(rec.ttl(), rec.written()))
			}
			tree, e := x.treeFor(rec)
			if tree == nil {
				if isExpired {
					t.Fatalf("%s: item %q with ttl -1 is expired", where, id)
				}
				return true
			}
			want++
			if got, ok := tree.t.Get(e); !ok || got.rec != rec {
				t.Fatalf("%s: item %q (ttl %v) missing from its shard's expiry index", where, id, rec.ttl())
			}
			cutoff := ci
			if tree == &x.own {
				cutoff = co
			}
			if inPrefix := lessEntry(e, cutoff); inPrefix != isExpired {
				t.Fatalf("%s: item %q: expired by expiresAt %v, by the index's cutoff %v", where, id, isExpired, inPrefix)
			}
			return true
		})
		if n != sh.items.n {
			t.Fatalf("%s: shard %d counts %d items, holds %d", where, i, sh.items.n, n)
		}
		check := func(name string, tree *expiryTree) int {
			n := 0
			var front, frontBytes int64
			tree.t.Ascend(func(e expiryEntry) bool {
				n++
				if s, h := c.shardFor(e.rec.pk(), e.rec.id()); s != sh || sh.items.get(e.rec.pk(), e.rec.id(), h) != e.rec {
					t.Fatalf("%s: shard %d's %s tree holds a stale, purged or foreign record of %q", where, i, name, e.rec.id())
				}
				if !lessEntry(tree.front, e) {
					front++
					frontBytes += int64(e.rec.jsonLen())
				}
				return true
			})
			if front != tree.n || frontBytes != tree.bytes {
				t.Fatalf("%s: shard %d's %s tree counts %d entries (%d bytes) before its front, holds %d (%d bytes)", where, i, name, tree.n, tree.bytes, front, frontBytes)
			}
			return n
		}
		got := check("inherit", &x.inherit) + check("own", &x.own)
		if got != want || items != x.items || bytes != x.bytes {
			t.Fatalf("%s: shard %d's expiry index has %d entries for %d expiring items; counts %d/%d items, %d/%d bytes",
				where, i, got, want, x.items, items, x.bytes, bytes)
		}
		for !x.countExpired(&c.rule, now, 3) {
		}
		if n, b := x.expired(); n != expired || b != expiredBytes {
			t.Fatalf("%s: shard %d's running counts say %d expired (%d bytes), expiresAt says %d (%d bytes)", where, i, n, b, expired, expiredBytes)
		}
		if expired > 0 {
			if got := x.oldestExpiry(&c.rule, now); got != shardOldest {
				t.Fatalf("%s: shard %d's oldest expiry %d, want %d", where, i, got, shardOldest)
			}
		}
	}
}

// freeze holds every shard's lock for reading, then c.mu, then
// every shard's expiry index lock, so that no change is made until the
// function it returns is called.
func (c *Container) freeze() (thaw func()) {
	for i := range c.shards {
		c.shards[i].mu.RLock()
	}
	c.mu.Lock()
	for i := range c.shards {
		c.shards[i].expiryMu.Lock()
	}
	return func() {
		for i := range c.shards {
			c.shards[i].expiryMu.Unlock()
		}
		c.mu.Unlock()
		for i := range c.shards {
			c.shards[i].mu.RUnlock()
		}
	}
}
