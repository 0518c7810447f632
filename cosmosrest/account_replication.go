package cosmosrest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lethedb/lethe"
)

// Replication of items. The write region (the hub) is read container by
// container (lethe.Container.ReplicaChanges) after each of its writes,
// before the write is answered, and each change is sent to every other
// region, where it is delivered when due (the scheduler): at each request
// the region serves, by the delivery loop on the system clock, and by
// DeliverDue under an injected one.
//
// Session tokens count, per container, the hub's changes a region holds:
// the token of a change is its LSN in the hub's change feed plus the
// container's offset, which a failover sets so that the new hub's tokens
// go on from the old hub's. So a token read in any region is comparable in
// every other, before and after a failover.
//
// With several write regions, each is read after its own writes, and its
// feed's changes (those it received from the others too: a replica holding
// a change already ignores it) are sent to every other region, where
// lethe.Container.ApplyReplicaChangeResolved decides conflicts by the
// container's conflict resolution policy (conflicts.go). A session token then holds, per container, the LSN each
// write region's feed had reached, as the service's vector tokens do
// ("0:-1#5#0=4#1=7": after the global one, region index = LSN).

// shipped is a change of container k on its way to a region, with the
// session token value a region holding it has reached.
type shipped struct {
	k     collKey
	ch    lethe.ReplicaChange
	token uint64
	space int    // the token's: see srcKey
	gen   uint64 // the incarnation of container k it is of: see Account.gens
}

// collRepl is the hub's reading of one container.
type collRepl struct {
	mu     sync.Mutex // held while the container is read
	cursor uint64     // the LSN of the last change read from the hub's feed
	offset int64      // a change's token is its LSN plus offset
	gen    uint64     // the incarnation of the container it reads
}

// space returns the token space of region n's writes (srcKey): its index
// when several regions write, else 0.
func (a *Account) space(n *regionNode) int {
	if a.multi {
		return n.idx
	}
	return 0
}

// replOf returns the reading of container k.k in region k.src, made
// (from the feed's start) if there is none.
func (a *Account) replOf(k srcKey) *collRepl {
	a.mu.Lock()
	defer a.mu.Unlock()
	cr, ok := a.repl[k]
	if !ok {
		cr = &collRepl{gen: a.gens[k.k], offset: int64(a.floors[srcKey{a.space(a.regions[k.src]), k.k}])}
		a.repl[k] = cr
	}
	return cr
}

// forget drops the reading of, every region's progress in, and the
// changes on their way of the containers drop reports true for: they were
// deleted, and one made again of the same name starts afresh, a new
// incarnation (gens), whose regions drop any change of the old one still
// on its way. It waits for the deliveries under way.
func (a *Account) forget(drop func(collKey) bool) {
	for _, n := range a.regions {
		n.deliver.Lock()
		defer n.deliver.Unlock()
	}
	a.sched.Drop(func(s shipped) bool { return drop(s.k) })
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keepFloorsLocked(drop)
	bumped := map[collKey]bool{}
	for k := range a.repl {
		if drop(k.k) {
			delete(a.repl, k)
			if !bumped[k.k] {
				bumped[k.k] = true
				a.gens[k.k]++
			}
		}
	}
	for _, n := range a.regions {
		for k := range n.progress {
			if drop(k.k) {
				delete(n.progress, k)
			}
		}
		for k := range n.recv {
			if drop(k.k) {
				delete(n.recv, k)
			}
		}
	}
	a.seedFloorsLocked(drop)
}

// seedFloorsLocked sets, in an account of several write regions, every
// region's progress in the containers drop reports true for to their
// floors: a container made again numbers its tokens above its floor in
// each write region's entry, so every region holds its changes up to it
// (there are none), and a token of the one deleted is served at once, in
// every entry of the vector. a.mu is held.
func (a *Account) seedFloorsLocked(drop func(collKey) bool) {
	if !a.multi {
		return
	}
	for sk, f := range a.floors {
		if drop(sk.k) {
			for _, n := range a.regions {
				n.progress[sk] = max(n.progress[sk], f)
			}
		}
	}
}

// now reads the account's clock.
func (a *Account) now() time.Time {
	if a.cfg.Clock != nil {
		return a.cfg.Clock.Now()
	}
	return time.Now()
}

// collect reads, from write region hub's container k, the changes made
// since it last did, and sends them to every other region.
func (a *Account) collect(hub *regionNode, k collKey) {
	c, ok := hub.storeContainer(k)
	if !ok {
		return
	}
	cr := a.replOf(srcKey{hub.idx, k})
	space := a.space(hub)
	cr.mu.Lock()
	defer cr.mu.Unlock()
	sent := false
	for {
		// A small page: a write has a change or a few, and ReplicaChanges
		// makes room for the page it is asked for.
		const page = 8
		chs, last, err := c.ReplicaChanges(cr.cursor, page)
		if err != nil {
			if !errors.Is(err, lethe.ErrClosed) && !errors.Is(err, lethe.ErrNotFound) {
				hub.h.cfg.Logger.Error("cosmosrest: reading the write region's changes to replicate them", "region", hub.name, "database", k.db, "container", k.coll, "err", err)
			}
			break
		}
		if len(chs) == 0 {
			break
		}
		var tok uint64
		for _, ch := range chs {
			tok = uint64(cr.offset + int64(ch.LSN))
			for _, n := range a.regions {
				if n != hub {
					a.sched.Send(hub.name, n.name, ch.Written, shipped{k: k, ch: ch, token: tok, space: space, gen: cr.gen})
				}
			}
		}
		cr.cursor = last
		a.mu.Lock()
		sk := srcKey{space, k}
		hub.progress[sk] = max(hub.progress[sk], tok)
		a.mu.Unlock()
		sent = true
		if len(chs) < page {
			break
		}
	}
	if sent {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

// collectAll collects every container of region hub.
func (a *Account) collectAll(hub *regionNode) {
	for _, d := range hub.h.databases() {
		for _, id := range d.store.ContainerIDs() {
			a.collect(hub, collKey{d.id, id})
		}
	}
}

// wrote follows a write in write region hub's container k: its changes
// are sent, and under Strong delivered to every region up before it is
// answered.
func (a *Account) wrote(hub *regionNode, k collKey) {
	a.collect(hub, k)
	if a.level != Strong {
		return
	}
	for _, n := range a.regions {
		if n != hub && n.isUp() {
			a.catchUp(n)
		}
	}
}

func (n *regionNode) isUp() bool {
	n.acct.mu.Lock()
	defer n.acct.mu.Unlock()
	return n.down == ""
}

// deliverDue delivers to region n, unless it is down, what is due for it
// by the account's clock (or forced by the staleness bound).
func (a *Account) deliverDue(n *regionNode) {
	if !n.isUp() {
		return
	}
	n.deliver.Lock()
	defer n.deliver.Unlock()
	n.apply(a.sched.Due(n.name, a.now()))
}

// catchUp delivers to region n everything sent to it, due or not.
func (a *Account) catchUp(n *regionNode) {
	n.deliver.Lock()
	defer n.deliver.Unlock()
	n.apply(a.sched.All(n.name))
}

// apply applies changes to region n's replicas, in order (deciding
// conflicts when several regions write). n.deliver is held. A change of a
// container the region no longer has, or of an incarnation of it that was
// deleted (forget), is dropped.
func (n *regionNode) apply(changes []shipped) {
	for _, s := range changes {
		n.acct.mu.Lock()
		stale := s.gen != n.acct.gens[s.k]
		n.acct.mu.Unlock()
		if stale {
			continue
		}
		if c, ok := n.storeContainer(s.k); ok {
			var err error
			if n.acct.multi {
				err = n.applyResolved(c, s) // by the container's policy (conflicts.go)
			} else {
				err = c.ApplyReplicaChange(context.Background(), s.ch)
			}
			if err != nil && !errors.Is(err, lethe.ErrClosed) && !errors.Is(err, lethe.ErrNotFound) {
				n.h.cfg.Logger.Error("cosmosrest: applying a replicated change", "region", n.name, "database", s.k.db, "container", s.k.coll, "id", s.ch.ID, "err", err)
			}
		}
		sk := srcKey{s.space, s.k}
		n.acct.mu.Lock()
		n.progress[sk] = max(n.progress[sk], s.token)
		if n.acct.multi && s.ch.Kind == lethe.ReplicaWrite {
			n.received(s)
		}
		n.acct.mu.Unlock()
	}
}

// received counts write s in region n's recv. acct.mu is held.
func (n *regionNode) received(s shipped) {
	if w, seq, ok := etagRegion(s.ch.ETag, len(n.acct.regions)); ok {
		k := srcKey{w, s.k}
		n.recv[k] = max(n.recv[k], seq)
	}
}

// DeliverDue delivers to every region that is up what is due for it by the
// account's clock. An account on the system clock does so by itself; one
// on an injected clock (Config.Clock), at each request a region serves and
// when DeliverDue is called (lethetest calls it when its clock moves).
func (a *Account) DeliverDue() {
	a.mu.Lock()
	closed := a.closed
	a.mu.Unlock()
	if closed {
		return
	}
	for _, n := range a.regions {
		a.deliverDue(n)
	}
}

// loop delivers changes when they become due by the system clock, until
// Close.
func (a *Account) loop() {
	defer close(a.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait := time.Hour
		if next, ok := a.sched.Next(); ok {
			wait = max(0, time.Until(next))
		}
		t.Reset(wait)
		select {
		case <-a.stop:
			return
		case <-a.wake:
		case <-t.C:
		}
		a.DeliverDue()
	}
}

// latestLSN returns the LSN of the last change container c's feed holds, 0
// when it holds none (or c is gone).
func latestLSN(c *lethe.Container) uint64 {
	last, _ := c.LastReplicaLSN()
	return last
}

// startCursors brings every replica up to date with each write region's
// feed, from the oldest change it keeps (a replica applies a change it
// already holds, or an older version, as a no-op), page by page, and
// leaves the write region's reading at its end: an account opened again
// on a Dir after a crash that lost changes on their way finds its
// replicas consistent, as far as the feeds reach back. With one write
// region, every other region's feed is replayed first: one that was the
// write region before a failover may hold writes it acknowledged and had
// not sent when the process stopped.
func (a *Account) startCursors() {
	if !a.multi {
		for _, r := range a.regions {
			if r != a.hub {
				a.replay(r)
			}
		}
	}
	for _, w := range a.regions {
		if !w.acceptsWrites() {
			continue
		}
		for _, d := range w.h.databases() {
			for _, id := range d.store.ContainerIDs() {
				a.resync(w, collKey{d.id, id})
			}
		}
	}
}

// replay applies every change region r's feeds keep to every other
// region, at once, counting none in the session tokens (the write
// region's resync does).
func (a *Account) replay(r *regionNode) {
	for _, d := range r.h.databases() {
		for _, id := range d.store.ContainerIDs() {
			k := collKey{d.id, id}
			c, ok := r.storeContainer(k)
			if !ok {
				continue
			}
			for cursor := uint64(0); ; {
				chs, last, err := c.ReplicaChanges(cursor, 4096)
				if err != nil || len(chs) == 0 {
					break
				}
				page := make([]shipped, len(chs))
				for i, ch := range chs {
					page[i] = shipped{k: k, ch: ch}
				}
				for _, n := range a.regions {
					if n != r {
						n.deliver.Lock()
						n.apply(page)
						n.deliver.Unlock()
					}
				}
				cursor = last
			}
		}
	}
}

// resync applies write region w's changes of container k to every other
// region, from the oldest its feed keeps, at once; their tokens are their
// LSNs plus the container's offset (a saved one, after a failover).
func (a *Account) resync(w *regionNode, k collKey) {
	c, ok := w.storeContainer(k)
	if !ok {
		return
	}
	cr := a.replOf(srcKey{w.idx, k})
	space := a.space(w)
	for {
		chs, last, err := c.ReplicaChanges(cr.cursor, 4096)
		if err != nil || len(chs) == 0 {
			return
		}
		page := make([]shipped, len(chs))
		for i, ch := range chs {
			page[i] = shipped{k: k, ch: ch, token: uint64(cr.offset + int64(ch.LSN)), space: space, gen: cr.gen}
		}
		for _, n := range a.regions {
			if n != w {
				n.deliver.Lock()
				n.apply(page)
				n.deliver.Unlock()
			}
		}
		cr.cursor = last
		a.mu.Lock()
		w.progress[srcKey{space, k}] = uint64(cr.offset + int64(last))
		a.mu.Unlock()
	}
}

// token returns region n's session token for container k (after a write
// in n, once the write's changes are sent): its progress, "0:-1#N"; with
// several write regions, its own and each write region's, "0:-1#N#0=a#1=b".
func (n *regionNode) token(k collKey, write bool) string {
	a := n.acct
	if write && n.acceptsWrites() {
		a.wrote(n, k)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	tok := "0:-1#" + strconv.FormatUint(n.progress[srcKey{a.space(n), k}]+1, 10)
	if a.multi {
		for _, w := range a.regions {
			if w.writable {
				tok += "#" + strconv.Itoa(w.idx) + "=" + strconv.FormatUint(n.progress[srcKey{w.idx, k}], 10)
			}
		}
	}
	return tok
}

// sessionToken returns the session token of request q's response (write:
// the response is of a write): the handler's, or in a region of an
// account the region's progress in the request's container.
func (q *request) sessionToken(write bool) string {
	n := q.h.region
	if n == nil {
		return q.h.sessionToken(write)
	}
	return n.token(collKey{q.t.db, q.t.coll}, write)
}

// sessionAvailable reports whether region n holds what request q's session
// token (x-ms-session-token) says its client has seen of the request's
// container: none of its ranges' tokens is past the region's progress. A
// token that cannot be read asks for nothing.
func (n *regionNode) sessionAvailable(q *request) bool {
	a := n.acct
	tok := q.r.Header.Get("x-ms-session-token")
	k := collKey{q.t.db, q.t.coll}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.multi {
		for src, want := range tokenVector(tok) {
			if want > n.progress[srcKey{src, k}] {
				return false
			}
		}
		return true
	}
	want := tokenLSN(tok)
	return want == 0 || want <= n.progress[srcKey{0, k}]+1
}

// tokenVector returns the highest LSN of each region of a session token in
// the multi-region form ("id:version#lsn#region=lsn..."), over its ranges.
func tokenVector(tok string) map[int]uint64 {
	out := map[int]uint64{}
	for part := range strings.SplitSeq(tok, ",") {
		segs := strings.Split(part, "#")
		for _, seg := range segs[min(2, len(segs)):] {
			r, v, ok := strings.Cut(seg, "=")
			if !ok {
				continue
			}
			ri, rerr := strconv.Atoi(r)
			lsn, verr := strconv.ParseUint(v, 10, 64)
			if rerr == nil && verr == nil {
				out[ri] = max(out[ri], lsn)
			}
		}
	}
	return out
}

// tokenLSN returns the highest global LSN of a session token: of each
// range's "id:version#lsn" (or "id:version#lsn#region=lsn...", the
// multi-region form), the lsn; 0 when there is none.
func tokenLSN(tok string) uint64 {
	var top uint64
	for part := range strings.SplitSeq(tok, ",") {
		_, rest, ok := strings.Cut(part, "#")
		if !ok {
			continue
		}
		if i := strings.IndexByte(rest, '#'); i >= 0 {
			rest = rest[:i]
		}
		if v, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 64); err == nil {
			top = max(top, v)
		}
	}
	return top
}
