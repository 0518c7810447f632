package lethe_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

var seedFlag = flag.Uint64("lethe.seed", 0, "seed of the randomized model test (0: a new one)")

// refItem and refModel are a reference model of SPEC §2 and §3, written
// independently of the store: a map and the rule, nothing else.
type refItem struct {
	ttl     lethe.TTL // lethe.TTLOff: inherit
	hasTTL  bool      // the document has a "ttl" member (null included)
	written int64
	value   string // what the store returned on the write
	etag    string
	mark    int64 // the power-cut test's write number, the document's "v" ("" value and etag: only this is known)
}

type refModel struct {
	def   lethe.TTL
	items map[string]refItem // by partition key value and id: "pk/id"
}

func (m *refModel) expired(it refItem, now int64) bool {
	if m.def == lethe.TTLOff {
		return false
	}
	eff := m.def
	if it.ttl != lethe.TTLOff {
		eff = it.ttl
	}
	return eff != lethe.TTLNever && now >= it.written+int64(eff)*int64(time.Second)
}

func (m *refModel) live(key string, now int64) (refItem, bool) {
	it, ok := m.items[key]
	if !ok || m.expired(it, now) {
		return refItem{}, false
	}
	return it, true
}

// setDefault applies a change of the container default: items expired
// under the old one are gone for good.
func (m *refModel) setDefault(def lethe.TTL, now int64) {
	for key, it := range m.items {
		if m.expired(it, now) {
			delete(m.items, key)
		}
	}
	m.def = def
}

func (m *refModel) liveCount(now int64) int64 {
	n := int64(0)
	for key := range m.items {
		if _, ok := m.live(key, now); ok {
			n++
		}
	}
	return n
}

// TestModel runs random operation sequences against the store and the
// reference model, comparing every result, and checks the store's
// invariants after every operation. Replay a failure with -lethe.seed.
// It runs the first modelRaceRounds of its 40 rounds; the others are
// TestModelWithoutRace's, which the race detector would take many seconds
// over (withoutrace_test.go).
func TestModel(t *testing.T) {
	t.Parallel()
	runModelRounds(t, 0, modelRaceRounds, 1000, false)
}

// TestModelDurable is TestModel on a durable store that is also closed and
// reopened, and checkpointed, at random steps: recovery must give back
// exactly the model's live items, with their contents and ETags. It runs
// the first modelDurableRaceRounds of its 12 rounds; the others are
// TestModelDurableWithoutRace's.
func TestModelDurable(t *testing.T) {
	t.Parallel()
	runModelRounds(t, 0, modelDurableRaceRounds, 400, true)
}

// How many of the model tests' rounds run under the race detector too.
const (
	modelRaceRounds        = 8
	modelDurableRaceRounds = 3
)

// runModelRounds runs the rounds first to end-1 of a randomized model
// test, sequences of steps steps each, from the -lethe.seed seed or a new
// one, each on a store of its own (durable: in a directory of its own).
func runModelRounds(t *testing.T, first, end, steps int, durable bool) {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -lethe.seed=%d)", seed, seed)
	for round := first; round < end; round++ {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		dir := ""
		if durable {
			dir = t.TempDir()
		}
		runModel(t, rng, steps, fmt.Sprintf("seed %d round %d", seed, round), dir)
		if t.Failed() {
			return
		}
	}
}

// runModel runs one random sequence; with dir, on a durable store there.
func runModel(t *testing.T, rng *rand.Rand, steps int, name, dir string) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	opts := &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true, BatchSize: 1 + rng.IntN(8)}, Dir: dir, Sync: lethe.SyncNever}
	s, err := lethe.Open(opts)
	require.NoError(t, err)
	defer func() { s.Close() }()
	defs := []lethe.TTL{lethe.TTLOff, lethe.TTLNever, 1, 5, 10, 30}
	m := &refModel{def: defs[rng.IntN(len(defs))], items: map[string]refItem{}}
	// Half the rounds partition the container by "/pk", with two values:
	// the model keys its items by (pk, id), and a write whose document
	// names the other partition must fail and change nothing.
	props := lethe.ContainerProperties{ID: "m", DefaultTimeToLive: m.def}
	pks := []string{""}
	if rng.IntN(2) == 0 {
		props.PartitionKeyDefinition.Paths = []string{"/pk"}
		pks = []string{"p", "q"}
	}
	partitioned := len(pks) > 1
	c, err := s.CreateContainer(ctx, props)
	require.NoError(t, err)
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	ttls := []string{"", `,"ttl":null`, `,"ttl":-1`, `,"ttl":1`, `,"ttl":3`, `,"ttl":7`, `,"ttl":20`, `,"ttl":0`, `,"ttl":-5`, `,"ttl":"3"`}
	var stale string

	for step := range steps {
		now := clock.Now().UnixNano()
		id := ids[rng.IntN(len(ids))]
		pkv := pks[rng.IntN(len(pks))]
		key := pkv + "/" + id
		pk, docPK := lethe.NewPartitionKey(), ""
		mismatch := false
		if partitioned {
			pk, docPK = lethe.NewPartitionKeyString(pkv), fmt.Sprintf(`,"pk":%q`, pkv)
			if rng.IntN(10) == 0 {
				docPK, mismatch = `,"pk":"other"`, true
			}
		}
		where := fmt.Sprintf("%s step %d (pk %q id %q)", name, step, pkv, id)
		var o *lethe.ItemOptions
		switch rng.IntN(4) {
		case 0:
			o = &lethe.ItemOptions{IfMatchEtag: stale}
		case 1:
			if it, ok := m.items[key]; ok {
				o = &lethe.ItemOptions{IfMatchEtag: it.etag}
			}
		}
		ifMatch := func(it refItem) bool { return o == nil || o.IfMatchEtag == "" || o.IfMatchEtag == it.etag }
		ttlText := ttls[rng.IntN(len(ttls))]
		doc := fmt.Sprintf(`{"id":%q%s,"step":%d%s}`, id, docPK, step, ttlText)
		var itemTTL lethe.TTL
		validTTL := true
		switch ttlText {
		case `,"ttl":-1`:
			itemTTL = lethe.TTLNever
		case `,"ttl":1`:
			itemTTL = 1
		case `,"ttl":3`:
			itemTTL = 3
		case `,"ttl":7`:
			itemTTL = 7
		case `,"ttl":20`:
			itemTTL = 20
		case `,"ttl":0`, `,"ttl":-5`, `,"ttl":"3"`:
			validTTL = false
		}
		valid := validTTL && !mismatch
		stored := func(r lethe.ItemResponse) {
			m.items[key] = refItem{ttl: itemTTL, hasTTL: ttlText != "", written: now, value: string(r.Value), etag: r.ETag}
		}

		kinds := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13}
		if dir != "" {
			kinds = append(kinds, 10, 11) // restarts and snapshots
		}
		switch op := kinds[rng.IntN(len(kinds))]; op {
		case 0, 1: // read
			r, err := c.ReadItem(ctx, pk, id, nil)
			if it, ok := m.live(key, now); ok {
				require.NoError(t, err, where)
				require.Equal(t, it.value, string(r.Value), where)
			} else {
				require.ErrorIs(t, err, lethe.ErrNotFound, where)
			}
		case 2: // create
			r, err := c.CreateItem(ctx, pk, []byte(doc), o)
			_, live := m.live(key, now)
			switch {
			case !valid:
				require.ErrorIs(t, err, lethe.ErrBadRequest, where)
			case live:
				require.ErrorIs(t, err, lethe.ErrConflict, where)
			default:
				require.NoError(t, err, where)
				require.Equal(t, 201, r.StatusCode, where)
				stored(r)
			}
		case 3: // replace
			r, err := c.ReplaceItem(ctx, pk, id, []byte(doc), o)
			it, live := m.live(key, now)
			switch {
			case !valid:
				require.ErrorIs(t, err, lethe.ErrBadRequest, where)
			case !live:
				require.ErrorIs(t, err, lethe.ErrNotFound, where)
			case !ifMatch(it):
				require.ErrorIs(t, err, lethe.ErrPreconditionFailed, where)
			default:
				require.NoError(t, err, where)
				require.Equal(t, 200, r.StatusCode, where)
				stored(r)
			}
		case 4: // upsert
			r, err := c.UpsertItem(ctx, pk, []byte(doc), o)
			it, live := m.live(key, now)
			switch {
			case !valid:
				require.ErrorIs(t, err, lethe.ErrBadRequest, where)
			case live && !ifMatch(it):
				require.ErrorIs(t, err, lethe.ErrPreconditionFailed, where)
			case live:
				require.NoError(t, err, where)
				require.Equal(t, 200, r.StatusCode, where)
				stored(r)
			default:
				require.NoError(t, err, where)
				require.Equal(t, 201, r.StatusCode, where)
				stored(r)
			}
		case 5: // delete
			r, err := c.DeleteItem(ctx, pk, id, o)
			it, live := m.live(key, now)
			switch {
			case !live:
				require.ErrorIs(t, err, lethe.ErrNotFound, where)
			case !ifMatch(it):
				require.ErrorIs(t, err, lethe.ErrPreconditionFailed, where)
			default:
				require.NoError(t, err, where)
				require.Equal(t, 204, r.StatusCode, where)
				stale = it.etag
				delete(m.items, key)
			}
		case 6, 7: // time passes, sometimes to the nanosecond
			d := time.Duration(rng.IntN(8)) * time.Second
			if rng.IntN(3) == 0 {
				d += time.Duration(rng.IntN(3)-1) + time.Duration(rng.IntN(1000))*time.Millisecond
			}
			clock.Advance(max(d, 0))
		case 8: // the container default changes
			def := defs[rng.IntN(len(defs))]
			props.DefaultTimeToLive = def
			require.NoError(t, c.Replace(ctx, props), where)
			m.setDefault(def, now)
		case 9: // a purge, bounded or full
			if rng.IntN(2) == 0 {
				lethe.Reap(c, time.Unix(0, now), false)
			} else {
				_, err := c.Purge(ctx)
				require.NoError(t, err, where)
			}
		case 10: // the store restarts
			require.NoError(t, s.Close(), where)
			s, err = lethe.Open(opts)
			require.NoError(t, err, where)
			c, err = s.Container("m")
			require.NoError(t, err, where)
			for key, it := range m.items {
				if m.expired(it, now) {
					delete(m.items, key) // not brought back: expired for good
				}
			}
			for _, pkv := range pks {
				for _, id := range ids {
					pk := lethe.NewPartitionKey()
					if partitioned {
						pk = lethe.NewPartitionKeyString(pkv)
					}
					r, err := c.ReadItem(ctx, pk, id, nil)
					if it, ok := m.live(pkv+"/"+id, now); ok {
						require.NoError(t, err, where)
						require.Equal(t, it.value, string(r.Value), where)
						require.Equal(t, it.etag, r.ETag, where)
					} else {
						require.ErrorIs(t, err, lethe.ErrNotFound, where)
					}
				}
			}
		case 11: // a snapshot
			require.NoError(t, s.Checkpoint(ctx), where)
		case 12: // a patch: a touch, or the item's ttl set or removed
			var ops lethe.PatchOperations
			it, live := m.live(key, now)
			next := it
			next.written = now
			removeMissing := false
			switch rng.IntN(3) {
			case 0:
				ops.AppendSet("/step", step)
			case 1:
				v := []lethe.TTL{lethe.TTLNever, 1, 3, 7, 20}[rng.IntN(5)]
				ops.AppendSet("/ttl", int(v))
				next.ttl, next.hasTTL = v, true
			case 2:
				ops.AppendRemove("/ttl")
				next.ttl, next.hasTTL = lethe.TTLOff, false
				removeMissing = !it.hasTTL
			}
			r, err := c.PatchItem(ctx, pk, id, ops, o)
			switch {
			case !live:
				require.ErrorIs(t, err, lethe.ErrNotFound, where)
			case !ifMatch(it):
				require.ErrorIs(t, err, lethe.ErrPreconditionFailed, where)
			case removeMissing:
				require.ErrorIs(t, err, lethe.ErrBadRequest, where)
			default:
				require.NoError(t, err, where)
				require.Equal(t, 200, r.StatusCode, where)
				next.value, next.etag = string(r.Value), r.ETag
				m.items[key] = next
			}
		case 13: // a transactional batch of two operations in the partition
			runModelBatch(t, rng, c, m, now, pk, pkv, id, doc, valid, itemTTL, ttlText, ids, step, partitioned, where)
		}
		if it, ok := m.items[key]; ok && rng.IntN(5) == 0 {
			stale = it.etag
		}
		require.Equal(t, m.liveCount(clock.Now().UnixNano()), c.Stats().Items, where)
		lethe.CheckInvariants(t, c, where)
	}
}

// runModelBatch runs a transactional batch of two random operations in
// the partition pkv, the first on id with doc (which may be invalid), the
// second on a random id with a valid document, and checks it against the
// model run through the same operations: all succeed and the model takes
// them, or the first that fails has its own status, the other 424, and
// nothing changes.
func runModelBatch(t *testing.T, rng *rand.Rand, c *lethe.Container, m *refModel, now int64, pk lethe.PartitionKey, pkv, id, doc string,
	valid bool, itemTTL lethe.TTL, ttlText string, ids []string, step int, partitioned bool, where string) {
	t.Helper()
	type bop struct {
		kind    string
		id, doc string
		valid   bool
		ttl     lethe.TTL
		hasTTL  bool
	}
	id2 := ids[rng.IntN(len(ids))]
	docPK := ""
	if partitioned {
		docPK = fmt.Sprintf(`,"pk":%q`, pkv)
	}
	kinds := []string{"create", "upsert", "replace", "delete", "read"}
	ops := []bop{
		{kinds[rng.IntN(5)], id, doc, valid, itemTTL, ttlText != ""},
		{kinds[rng.IntN(5)], id2, fmt.Sprintf(`{"id":%q%s,"step":%d,"second":true}`, id2, docPK, step), true, lethe.TTLOff, false},
	}
	b := c.NewTransactionalBatch(pk)
	for _, op := range ops {
		switch op.kind {
		case "create":
			b.CreateItem([]byte(op.doc), nil)
		case "upsert":
			b.UpsertItem([]byte(op.doc), nil)
		case "replace":
			b.ReplaceItem(op.id, []byte(op.doc), nil)
		case "delete":
			b.DeleteItem(op.id, nil)
		case "read":
			b.ReadItem(op.id, nil)
		}
	}
	resp, err := c.ExecuteTransactionalBatch(ctx, b, &lethe.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
	require.NoError(t, err, where)
	require.Len(t, resp.OperationResults, 2, where)

	// The model, through the same operations, on a scratch view.
	view := map[string]*refItem{}
	get := func(id string) *refItem {
		k := pkv + "/" + id
		if it, ok := view[k]; ok {
			return it
		}
		if it, ok := m.live(k, now); ok {
			view[k] = &it
			return &it
		}
		view[k] = nil
		return nil
	}
	failed, status := -1, 0
	want := make([]int, 2)
	read := make([]string, 2) // what each read must return
	for i, op := range ops {
		it := get(op.id)
		writes := op.kind != "delete" && op.kind != "read"
		switch {
		case writes && !op.valid:
			status = 400
		case op.kind == "create" && it != nil:
			status = 409
		case (op.kind == "replace" || op.kind == "delete" || op.kind == "read") && it == nil:
			status = 404
		case op.kind == "create", op.kind == "upsert" && it == nil:
			want[i] = 201
		case op.kind == "delete":
			want[i] = 204
		default:
			want[i] = 200
		}
		if want[i] == 0 {
			failed = i
			break
		}
		k := pkv + "/" + op.id
		switch op.kind {
		case "delete":
			view[k] = nil
		case "read":
			read[i] = it.value
		default:
			r := resp.OperationResults[i]
			view[k] = &refItem{ttl: op.ttl, hasTTL: op.hasTTL, written: now, value: string(r.ResourceBody), etag: r.ETag}
		}
	}
	if failed >= 0 {
		require.False(t, resp.Success, where)
		for i, r := range resp.OperationResults {
			if i == failed {
				require.Equal(t, status, r.StatusCode, "%s: batch operation %d (%s) %v", where, i, ops[i].kind, r.Err)
			} else {
				require.Equal(t, 424, r.StatusCode, "%s: batch operation %d", where, i)
			}
		}
		return
	}
	require.True(t, resp.Success, "%s: batch %v: %+v", where, ops, resp.OperationResults)
	for i, r := range resp.OperationResults {
		require.Equal(t, want[i], r.StatusCode, "%s: batch operation %d (%s)", where, i, ops[i].kind)
		if ops[i].kind == "read" {
			require.Equal(t, read[i], string(r.ResourceBody), where)
		}
	}
	for k, it := range view {
		if it == nil {
			delete(m.items, k)
		} else {
			m.items[k] = *it
		}
	}
}
