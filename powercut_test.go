package lethe_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
	"github.com/stretchr/testify/require"
)

// The power-cut test: random workloads on a durable store (SyncAlways) on
// a vfstest.PowerFS, which cuts the power at a random sync point (in a
// write, a checkpoint, a container's creation or deletion, or Open's own
// recovery) and then forgets, at random, what was not synced: unsynced
// file tails dropped or torn at a sector boundary, unsynced creations,
// renames and removals undone. The store recovers from what is left, and
// is checked against a model of what it acknowledged:
//
//   - every write whose call returned success is there, with the contents
//     and ETag it returned, unless a later acknowledged write changed it;
//   - no item that had expired by the clock is back, none deleted is back;
//   - the one call in flight at the cut (it failed with the power) is there
//     wholly (every item of a batch) or not at all;
//   - each container's items, count, settings, indexes and change feed
//     agree.
//
// The disk also fills up and frees again at random (a vfstest.ErrorFS over
// the PowerFS), and some writes are cut short by it: a call refused for
// want of room (ENOSPC) changed nothing, and the recovery must show
// nothing of it, as of any acknowledged state; the store heals at the
// next write that finds room.
//
// Then the workload goes on on the recovered store, to the next cut.
// LETHE_POWERCUT_SOAK=N runs N cuts (the normal run makes a few);
// -lethe.seed replays a run's choices (the store's background snapshots
// run on their own goroutine, so their timing may differ).

const powerCutEnv = "LETHE_POWERCUT_SOAK"

// powerCutStats are what a run checked.
type powerCutStats struct {
	cuts       int // power cuts recovered from
	atSync     int // of which at a sync point (the others after the last step)
	inOpen     int // of which during Open's recovery
	acked      int // acknowledged write calls, each checked by the recovery after it
	inFlight   int // calls in flight at a cut
	landed     int // of which the recovery found wholly there
	itemChecks int // item states compared with the model after recoveries
	refused    int // calls refused for want of room, each checked absent by the recovery after it
	fullOpens  int // stores opened (read-only) on a full disk
}

func TestPowerCut(t *testing.T) {
	t.Parallel()
	cuts := 40
	if testing.Short() {
		cuts = 10
	}
	if v := os.Getenv(powerCutEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, powerCutEnv)
		cuts = n
	}
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -lethe.seed=%d)", seed, seed)
	var st powerCutStats
	start := time.Now()
	for run := uint64(0); st.cuts < cuts; run++ {
		w := newPowerCutWorld(t, seed, run, &st)
		w.live(min(8, cuts-st.cuts))
		if t.Failed() {
			return
		}
	}
	t.Logf("%d power cuts (%d at a sync point, %d during Open's recovery), %d acknowledged write calls checked, %d calls in flight at a cut (%d of them found there whole), %d calls refused on a full disk checked absent, %d opens on a full disk, %d item states compared, in %v",
		st.cuts, st.atSync, st.inOpen, st.acked, st.inFlight, st.landed, st.refused, st.fullOpens, st.itemChecks, time.Since(start).Round(time.Millisecond))
}

// powerCutWorld is one store's life on one PowerFS, through several cuts.
type powerCutWorld struct {
	t      *testing.T
	rng    *rand.Rand
	fs     *vfstest.PowerFS
	disk   *vfstest.ErrorFS // over fs: the disk fills up
	full   bool
	clock  *lethe.ManualClock
	opts   *lethe.Options
	name   string
	st     *powerCutStats
	state  pcState
	writes int64 // the "v" of the last write
}

// pcState is the model: the containers the store acknowledged, each with
// its properties and items.
type pcState map[string]*pcContainer

type pcContainer struct {
	props lethe.ContainerProperties
	m     *refModel
}

func (s pcState) clone() pcState {
	out := pcState{}
	for id, c := range s {
		out[id] = &pcContainer{props: c.props, m: &refModel{def: c.m.def, items: maps.Clone(c.m.items)}}
	}
	return out
}

var (
	pcIDs        = []string{"a", "b", "c"}
	pcItemIDs    = []string{"x", "y", "z", "w", "u"}
	pcPKs        = []string{"p", "q"}
	pcDefaults   = []lethe.TTL{lethe.TTLOff, lethe.TTLNever, 2, 5, 30}
	pcItemTTLs   = []lethe.TTL{lethe.TTLOff, lethe.TTLOff, lethe.TTLNever, 1, 3, 8, 60}
	pcDir        = "/data/store"
	pcStepsEvery = 40 // steps between cuts, at most
)

func newPowerCutWorld(t *testing.T, seed, run uint64, st *powerCutStats) *powerCutWorld {
	w := &powerCutWorld{
		t:     t,
		rng:   rand.New(rand.NewPCG(seed, run)),
		fs:    vfstest.NewPowerFS(seed ^ run*0x9e3779b97f4a7c15),
		clock: lethe.NewManualClock(t0),
		name:  fmt.Sprintf("seed %d run %d", seed, run),
		st:    st,
		state: pcState{},
	}
	w.disk = vfstest.NewErrorFS(w.fs)
	w.opts = &lethe.Options{Dir: pcDir, Clock: w.clock, Reaper: lethe.ReaperOptions{Disabled: true}}
	vfs.SetOptionsFS(w.opts, w.disk)
	return w
}

// open opens the store; on a full disk, read-only. It retries a full disk
// at every write.
func (w *powerCutWorld) open() (*lethe.Store, error) {
	s, err := lethe.Open(w.opts)
	if err == nil {
		lethe.SetDiskRetry(s, 0)
		if w.full {
			w.st.fullOpens++
		}
	}
	return s, err
}

// setFull fills the disk or frees it.
func (w *powerCutWorld) setFull(full bool) {
	w.full = full
	w.disk.SetFull(full)
}

// live runs cuts cycles: open (perhaps cut during it), work until the
// cut, recover and check.
func (w *powerCutWorld) live(cuts int) {
	t := w.t
	for cycle := range cuts {
		where := fmt.Sprintf("%s cycle %d", w.name, cycle)
		// The cut comes at one of the next syncs: in Open now and then,
		// mostly in the steps.
		w.fs.CutAtSync(1 + w.rng.IntN(pcStepsEvery+4))
		s, err := w.open()
		if err != nil {
			require.ErrorIs(t, err, vfstest.ErrPowerCut, "%s: Open", where)
			w.st.inOpen++
			w.recover(where, nil)
			continue
		}
		inflight := w.work(s, where)
		if !w.fs.IsCut() {
			w.fs.Cut() // after the last step: everything acknowledged is synced
		} else {
			w.st.atSync++
		}
		s.Close() // fails: the power is off; it must only return
		w.recover(where, inflight)
		if t.Failed() {
			return
		}
	}
}

// recover brings the power back, lets time pass, opens the store and
// checks it against the model, with the call in flight (nil: none) there
// or not.
func (w *powerCutWorld) recover(where string, inflight *pcInflight) {
	t := w.t
	w.st.cuts++
	w.fs.Restart()
	w.clock.Advance(time.Duration(w.rng.IntN(4000)) * time.Millisecond)
	w.fs.CutAtSync(0)
	w.setFull(w.rng.IntN(6) == 0)
	s, err := w.open()
	require.NoError(t, err, "%s: Open after the cut\n%s", where, w.fs)
	defer func() { require.NoError(t, s.Close(), where) }()
	now := w.clock.Now().UnixNano()
	errA := w.check(s, w.state, now)
	if inflight != nil {
		w.st.inFlight++
		if errA != nil {
			errB := w.check(s, inflight.after, now)
			require.NoError(t, errB, "%s: after the cut, the store is neither as acknowledged (%v) nor with the call in flight (%s) whole\n%s", where, errA, inflight.what, w.fs)
			w.state = inflight.after
			w.st.landed++
			w.learn(s, now)
		}
	} else {
		require.NoError(t, errA, "%s: after the cut\n%s", where, w.fs)
	}
	for _, id := range s.ContainerIDs() {
		c, err := s.Container(id)
		require.NoError(t, err)
		lethe.CheckInvariants(t, c, where)
	}
}

// pcInflight is a call that failed with the power: the model as it would
// be had it taken effect.
type pcInflight struct {
	what  string
	after pcState
}

// learn fills in the contents and ETags of the items that a call in
// flight wrote, now that the recovery shows it took effect.
func (w *powerCutWorld) learn(s *lethe.Store, now int64) {
	for id, pc := range w.state {
		c, err := s.Container(id)
		require.NoError(w.t, err)
		for key, it := range pc.m.items {
			if it.etag != "" {
				continue
			}
			if _, live := pc.m.live(key, now); !live {
				delete(pc.m.items, key)
				continue
			}
			pk, iid := splitKey(key)
			r, err := c.ReadItem(ctx, lethe.NewPartitionKeyString(pk), iid, nil)
			require.NoError(w.t, err)
			it.value, it.etag = string(r.Value), r.ETag
			pc.m.items[key] = it
		}
	}
}

func splitKey(key string) (pk, id string) {
	for i := range len(key) {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// check compares the store with the model state at now; it returns the
// first difference.
func (w *powerCutWorld) check(s *lethe.Store, state pcState, now int64) error {
	ids := s.ContainerIDs()
	if len(ids) != len(state) {
		return fmt.Errorf("the store has the containers %v, the model %v", ids, slices.Sorted(maps.Keys(state)))
	}
	for _, id := range ids {
		pc := state[id]
		if pc == nil {
			return fmt.Errorf("the container %q is there, the model has none", id)
		}
		c, err := s.Container(id)
		if err != nil {
			return err
		}
		props, err := c.Read(ctx)
		if err != nil {
			return err
		}
		if props.DefaultTimeToLive != pc.m.def {
			return fmt.Errorf("the container %q has the default ttl %d, the model %d", id, props.DefaultTimeToLive, pc.m.def)
		}
		live := map[string]string{} // id/pk -> etag
		for _, pkv := range pcPKs {
			for _, iid := range pcItemIDs {
				key := pkv + "/" + iid
				w.st.itemChecks++
				r, err := c.ReadItem(ctx, lethe.NewPartitionKeyString(pkv), iid, nil)
				it, ok := pc.m.live(key, now)
				switch {
				case !ok && err == nil:
					return fmt.Errorf("%s/%s is there (%s), the model has it deleted or expired", id, key, r.Value)
				case !ok && !errors.Is(err, lethe.ErrNotFound):
					return fmt.Errorf("%s/%s: %v", id, key, err)
				case !ok:
				case err != nil:
					return fmt.Errorf("%s/%s (write %d, acknowledged) is not there: %v", id, key, it.mark, err)
				case it.etag == "":
					var v int64
					if jerr := jsonField(string(r.Value), "v", &v); jerr != nil || v != it.mark {
						return fmt.Errorf("%s/%s is %s, not write %d", id, key, r.Value, it.mark)
					}
					live[key] = r.ETag
				case it.etag != r.ETag || it.value != string(r.Value):
					return fmt.Errorf("%s/%s is %s (etag %s), the model's write %d returned %s (etag %s)", id, key, r.Value, r.ETag, it.mark, it.value, it.etag)
				default:
					live[key] = r.ETag
				}
			}
		}
		if n := c.Stats().Items; n != int64(len(live)) {
			return fmt.Errorf("the container %q counts %d items, %d are live", id, n, len(live))
		}
		if pc.props.ChangeFeedPolicy != nil {
			// The feed's latest versions are the live items, each once.
			feed := map[string]string{}
			p := c.NewChangeFeedPager(nil)
			for {
				page, err := p.NextPage(ctx)
				if err != nil {
					return fmt.Errorf("the change feed of %q: %v", id, err)
				}
				if len(page.Items) == 0 {
					break
				}
				for _, doc := range page.Items {
					var iid, pkv, etag string
					_ = jsonField(string(doc), "id", &iid)
					_ = jsonField(string(doc), "pk", &pkv)
					_ = jsonField(string(doc), "_etag", &etag)
					feed[pkv+"/"+iid] = etag
				}
			}
			if !maps.Equal(feed, live) {
				return fmt.Errorf("the change feed of %q shows %v, the live items are %v", id, feed, live)
			}
		}
	}
	return nil
}

// work runs random steps until the power is cut or the steps run out; it
// returns the call in flight at the cut, if one was.
func (w *powerCutWorld) work(s *lethe.Store, where string) *pcInflight {
	t, rng := w.t, w.rng
	for step := range pcStepsEvery {
		if w.fs.IsCut() {
			return nil // a background snapshot met the cut
		}
		where := fmt.Sprintf("%s step %d", where, step)
		switch r := rng.IntN(40); {
		case r == 0:
			w.setFull(true)
		case r == 1:
			w.disk.Inject(vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC, Short: true})
		case w.full && r < 12:
			w.setFull(false)
		}
		now := w.clock.Now().UnixNano()
		next := w.state.clone()
		what, err := w.step(s, rng, next, now)
		switch {
		case err == nil:
			if what != "" {
				w.st.acked++
			}
			w.state = next
		case w.fs.IsCut():
			require.ErrorIs(t, err, lethe.ErrUnavailable, "%s: %s failed with the power", where, what)
			return &pcInflight{what: what, after: next}
		case errors.Is(err, syscall.ENOSPC):
			// Refused for want of room: nothing changed.
			require.ErrorIs(t, err, lethe.ErrUnavailable, "%s: %s", where, what)
			if what != "" {
				w.st.refused++
			}
		default:
			require.NoError(t, err, "%s: %s", where, what)
		}
	}
	return nil
}

// step makes one random call, predicted to succeed, and applies it to next
// (a copy of the model); it returns what it did ("" for a call that
// writes nothing) and the call's error.
func (w *powerCutWorld) step(s *lethe.Store, rng *rand.Rand, next pcState, now int64) (string, error) {
	var present []string
	for _, id := range pcIDs {
		if next[id] != nil {
			present = append(present, id)
		}
	}
	op := rng.IntN(20)
	if len(present) == 0 {
		op = 0
	}
	switch op {
	case 0: // a container created, or deleted
		id := pcIDs[rng.IntN(len(pcIDs))]
		if next[id] != nil {
			delete(next, id)
			return "DeleteContainer " + id, s.DeleteContainer(ctx, id)
		}
		props := lethe.ContainerProperties{ID: id, DefaultTimeToLive: pcDefaults[rng.IntN(len(pcDefaults))],
			PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}}
		if rng.IntN(2) == 0 {
			props.ChangeFeedPolicy = &lethe.ChangeFeedPolicy{}
		}
		next[id] = &pcContainer{props: props, m: &refModel{def: props.DefaultTimeToLive, items: map[string]refItem{}}}
		_, err := s.CreateContainer(ctx, props)
		return "CreateContainer " + id, err
	case 1: // time passes
		w.clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
		return "", nil
	case 2: // a checkpoint
		return "", s.Checkpoint(ctx)
	}
	id := present[rng.IntN(len(present))]
	pc := next[id]
	c, err := s.Container(id)
	if err != nil {
		return "Container", err
	}
	pkv := pcPKs[rng.IntN(len(pcPKs))]
	pk := lethe.NewPartitionKeyString(pkv)
	iid := pcItemIDs[rng.IntN(len(pcItemIDs))]
	key := pkv + "/" + iid
	it, live := pc.m.live(key, now)
	what := fmt.Sprintf("%s on %s/%s", "%s", id, key)
	doc := func(iid string) ([]byte, refItem) {
		w.writes++
		ttl := pcItemTTLs[rng.IntN(len(pcItemTTLs))]
		text := fmt.Sprintf(`{"id":%q,"pk":%q,"v":%d`, iid, pkv, w.writes)
		if ttl != lethe.TTLOff {
			text += fmt.Sprintf(`,"ttl":%d`, ttl)
		}
		return []byte(text + "}"), refItem{ttl: ttl, hasTTL: ttl != lethe.TTLOff, written: now, mark: w.writes}
	}
	stored := func(it refItem, r lethe.ItemResponse) {
		it.value, it.etag = string(r.Value), r.ETag
		pc.m.items[key] = it
	}
	switch op {
	case 3: // the default ttl changes
		def := pcDefaults[rng.IntN(len(pcDefaults))]
		pc.props.DefaultTimeToLive = def
		pc.m.setDefault(def, now)
		return fmt.Sprintf("Replace %s (default ttl %d)", id, def), c.Replace(ctx, pc.props)
	case 4: // a purge of what expired
		_, err := c.Purge(ctx)
		return "", err
	case 5: // the change feed is read
		if pc.props.ChangeFeedPolicy == nil {
			return "", nil
		}
		_, err := c.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
		return "", err
	case 6, 7, 8: // create or replace, whichever is valid
		d, nit := doc(iid)
		pc.m.items[key] = nit
		if live {
			r, err := c.ReplaceItem(ctx, pk, iid, d, &lethe.ItemOptions{IfMatchEtag: it.etag})
			stored(nit, r)
			return fmt.Sprintf(what, "ReplaceItem"), err
		}
		r, err := c.CreateItem(ctx, pk, d, nil)
		stored(nit, r)
		return fmt.Sprintf(what, "CreateItem"), err
	case 9, 10, 11:
		d, nit := doc(iid)
		pc.m.items[key] = nit
		r, err := c.UpsertItem(ctx, pk, d, nil)
		stored(nit, r)
		return fmt.Sprintf(what, "UpsertItem"), err
	case 12, 13:
		if !live {
			return "", nil
		}
		delete(pc.m.items, key)
		_, err := c.DeleteItem(ctx, pk, iid, nil)
		return fmt.Sprintf(what, "DeleteItem"), err
	case 14, 15: // a patch: the write number, and the ttl set or removed
		if !live {
			return "", nil
		}
		w.writes++
		var ops lethe.PatchOperations
		ops.AppendSet("/v", w.writes)
		nit := it
		nit.written, nit.mark = now, w.writes
		switch {
		case rng.IntN(2) == 0:
			ttl := pcItemTTLs[2+rng.IntN(len(pcItemTTLs)-2)]
			ops.AppendSet("/ttl", int(ttl))
			nit.ttl, nit.hasTTL = ttl, true
		case it.hasTTL:
			ops.AppendRemove("/ttl")
			nit.ttl, nit.hasTTL = lethe.TTLOff, false
		}
		nit.value, nit.etag = "", ""
		pc.m.items[key] = nit
		r, err := c.PatchItem(ctx, pk, iid, ops, nil)
		stored(nit, r)
		return fmt.Sprintf(what, "PatchItem"), err
	}
	// A transactional batch of two to four operations in the partition,
	// each valid where it stands.
	b := c.NewTransactionalBatch(pk)
	keys := map[string]bool{}
	var marks []refItem
	n := 2 + rng.IntN(3)
	for range n {
		iid := pcItemIDs[rng.IntN(len(pcItemIDs))]
		key := pkv + "/" + iid
		if keys[key] {
			continue
		}
		keys[key] = true
		_, live := pc.m.live(key, now)
		if live && rng.IntN(3) == 0 {
			b.DeleteItem(iid, nil)
			delete(pc.m.items, key)
			marks = append(marks, refItem{})
			continue
		}
		d, nit := doc(iid)
		switch {
		case live:
			b.ReplaceItem(iid, d, nil)
		case rng.IntN(2) == 0:
			b.CreateItem(d, nil)
		default:
			b.UpsertItem(d, nil)
		}
		nit.mark = w.writes
		pc.m.items[key] = nit
		marks = append(marks, nit)
	}
	resp, err := c.ExecuteTransactionalBatch(ctx, b, &lethe.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
	what = fmt.Sprintf("ExecuteTransactionalBatch of %d on %s/%s", len(marks), id, pkv)
	if err != nil {
		return what, err
	}
	if !resp.Success {
		return what, fmt.Errorf("the batch failed: %+v", resp.OperationResults)
	}
	for i, r := range resp.OperationResults {
		if marks[i].mark == 0 {
			continue
		}
		var iid string
		require.NoError(w.t, jsonField(string(r.ResourceBody), "id", &iid))
		it := marks[i]
		it.value, it.etag = string(r.ResourceBody), r.ETag
		pc.m.items[pkv+"/"+iid] = it
	}
	return what, nil
}
