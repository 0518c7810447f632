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
	written int64
	value   string // what the store returned on the write
	etag    string
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
func TestModel(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -lethe.seed=%d)", seed, seed)
	rounds, steps := 40, 1000
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		runModel(t, rng, steps, fmt.Sprintf("seed %d round %d", seed, round), "")
		if t.Failed() {
			return
		}
	}
}

// TestModelDurable is TestModel on a durable store that is also closed and
// reopened, and checkpointed, at random steps: recovery must give back
// exactly the model's live items, with their contents and ETags.
func TestModelDurable(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -lethe.seed=%d)", seed, seed)
	rounds, steps := 12, 400
	if testing.Short() {
		rounds = 4
	}
	for round := range rounds {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		runModel(t, rng, steps, fmt.Sprintf("seed %d round %d", seed, round), t.TempDir())
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
			m.items[key] = refItem{ttl: itemTTL, written: now, value: string(r.Value), etag: r.ETag}
		}

		ops := 10
		if dir != "" {
			ops = 12
		}
		switch op := rng.IntN(ops); op {
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
		}
		if it, ok := m.items[key]; ok && rng.IntN(5) == 0 {
			stale = it.etag
		}
		require.Equal(t, m.liveCount(clock.Now().UnixNano()), c.Stats().Items, where)
		lethe.CheckInvariants(t, c, where)
	}
}
