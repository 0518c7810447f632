package lethe_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// region is one write region of a model account: its store, its container,
// how far it has read each other region's changes, and where it stood
// before.
type region struct {
	dir   string
	s     *lethe.Store
	c     *lethe.Container
	pos   map[int]uint64
	marks map[int][]uint64
}

// refChange is a change of an item as the model's reference knows it: what
// it did, and the changes it descends from.
type refChange struct {
	item    string
	del     bool
	etag    string // a write's
	value   string // a write's version, as a read returns it
	written time.Time
	// gen is the number of removals in its history: deletes (itself
	// included), and expiries the item was created again after.
	gen int
	anc map[int]bool // the changes it descends from, itself included
}

// delKey names a delete as a region's change feed gives it: the removal of
// that region's version at the delete's instant.
type delKey struct {
	region     int
	item, etag string
	at         int64
}

// conflictModel drives two or three regions that all take writes and
// exchange their changes (their own, and those they applied from others)
// in random batches, in random order, some of them again, and checks that
// once every change has been delivered they hold the same items: those of
// a reference that orders the changes by their history (a delete wins over
// the writes concurrent with it, a write after a delete over both), then
// by Last Writer Wins.
type conflictModel struct {
	t       *testing.T
	rng     *rand.Rand
	clock   *lethe.ManualClock
	props   lethe.ContainerProperties
	rule    lethe.ConflictRule
	regions []*region
	losers  int

	refs     []refChange
	cur      []map[string]int // per region, per item: its state, refs' index + 1 (0: none)
	byETag   map[string]int
	byDelete map[delKey]int
	applied  map[[3]uint64]bool // (region, from, lsn) applied
	// deleteWon and recreateWon count the items whose winner a delete, or
	// a write after a delete, made: over a concurrent write.
	deleteWon, recreateWon int
}

func (m *conflictModel) open(i int) {
	g := m.regions[i]
	s, err := lethe.Open(&lethe.Options{Dir: g.dir, Clock: m.clock, Reaper: lethe.ReaperOptions{Disabled: true},
		WriteRegions: len(m.regions), WriteRegion: i})
	require.NoError(m.t, err)
	m.t.Cleanup(func() { _ = s.Close() })
	c, err := s.Container(m.props.ID)
	if err != nil {
		c, err = s.CreateContainer(ctx, m.props)
	}
	require.NoError(m.t, err)
	g.s, g.c = s, c
}

// note adds the change ch, made in region g over its state, to the
// reference, and returns its index.
func (m *conflictModel) note(g int, ch refChange, created bool) int {
	idx := len(m.refs)
	ch.anc = map[int]bool{idx: true}
	if p := m.cur[g][ch.item] - 1; p >= 0 {
		parent := m.refs[p]
		maps.Copy(ch.anc, parent.anc)
		ch.gen = parent.gen
		if created && !parent.del {
			ch.gen++ // created again after its version expired
		}
	}
	if ch.del {
		ch.gen++
	}
	m.refs = append(m.refs, ch)
	m.cur[g][ch.item] = idx + 1
	return idx
}

// write makes a random change in a random region.
func (m *conflictModel) write() {
	r := m.rng
	gi := r.IntN(len(m.regions))
	c := m.regions[gi].c
	id := replIDs[r.IntN(3)]
	doc := fmt.Sprintf(`{"id":%q,"pk":"p","n":%d`, id, r.IntN(1000))
	// v, the path's number, grows with time, as the timestamp it stands
	// for: a tenth of a second's.
	doc += fmt.Sprintf(`,"v":%d`, m.clock.Now().Sub(t0)/(100*time.Millisecond))
	if r.IntN(4) == 0 {
		doc += fmt.Sprintf(`,"ttl":%d`, 1+r.IntN(4))
	}
	doc += "}"
	pk := lethe.NewPartitionKeyString("p")
	var (
		resp lethe.ItemResponse
		err  error
	)
	switch r.IntN(5) {
	case 0:
		resp, err = c.CreateItem(ctx, pk, []byte(doc), nil)
	case 1:
		resp, err = c.ReplaceItem(ctx, pk, id, []byte(doc), nil)
	case 2:
		before, rerr := c.ReadItem(ctx, pk, id, nil)
		if _, err = c.DeleteItem(ctx, pk, id, nil); err == nil {
			require.NoError(m.t, rerr)
			i := m.note(gi, refChange{item: id, del: true, written: m.clock.Now()}, false)
			m.byDelete[delKey{gi, id, before.ETag, m.clock.Now().UnixNano()}] = i
		}
	case 3:
		var ops lethe.PatchOperations
		ops.AppendIncrement("/n", 1)
		resp, err = c.PatchItem(ctx, pk, id, ops, nil)
	default:
		resp, err = c.UpsertItem(ctx, pk, []byte(doc), nil)
	}
	if err != nil {
		require.Contains(m.t, []int{404, 409}, status(err), "%v", err)
		return
	}
	if resp.ETag != "" {
		i := m.note(gi, refChange{item: id, etag: resp.ETag, value: string(resp.Value), written: m.clock.Now()}, resp.StatusCode == 201)
		m.byETag[resp.ETag] = i
	}
}

// apply applies change ch of region from's feed to region to, checks what
// it reports against the reference, and follows it there.
func (m *conflictModel) apply(from, to int, ch lethe.ReplicaChange) lethe.ConflictOutcome {
	t := m.t
	out, err := m.regions[to].c.ApplyReplicaChangeResolved(ctx, ch, m.rule)
	require.NoError(t, err)
	if ch.Kind == lethe.ReplicaExpiry {
		require.Equal(t, lethe.ConflictOutcome{}, out, "an expiry is skipped")
		return out
	}
	i, ok := m.byETag[ch.ETag]
	if ch.Kind == lethe.ReplicaDelete {
		i, ok = m.byDelete[delKey{from, ch.ID, ch.ETag, ch.Written.UnixNano()}]
	}
	require.True(t, ok, "region %d's change %+v is the reference's", from, ch)
	prev := m.cur[to][ch.ID] - 1
	if out.Conflict {
		m.losers++
		if out.Loser != nil {
			switch {
			case !out.Applied:
				require.Equal(t, m.refs[i].value, string(out.Loser), "the change lost")
			case prev >= 0:
				require.Equal(t, m.refs[prev].value, string(out.Loser), "the replica's version lost")
			}
		}
	}
	if out.Applied {
		if ch.Kind == lethe.ReplicaDelete {
			require.GreaterOrEqual(t, prev, 0)
			m.byDelete[delKey{to, ch.ID, m.refs[prev].etag, ch.Written.UnixNano()}] = i
		}
		m.cur[to][ch.ID] = i + 1
		m.applied[[3]uint64{uint64(to), uint64(from), ch.LSN}] = true
	}
	return out
}

// ship delivers up to n batches of region from's changes to region to
// (n < 0: all), and reports whether it delivered any.
func (m *conflictModel) ship(from, to, n int) bool {
	src, dst := m.regions[from], m.regions[to]
	any := false
	for ; n != 0; n-- {
		chs, last, err := src.c.ReplicaChanges(dst.pos[from], 1+m.rng.IntN(4))
		require.NoError(m.t, err)
		if len(chs) == 0 {
			break
		}
		any = true
		for _, ch := range chs {
			m.apply(from, to, ch)
		}
		dst.marks[from] = append(dst.marks[from], dst.pos[from])
		dst.pos[from] = last
	}
	return any
}

// again delivers once more region from's changes to region to since a
// position to had reached before: a change applied then is a no-op now.
func (m *conflictModel) again(from, to int) {
	dst := m.regions[to]
	marks := dst.marks[from]
	if len(marks) == 0 {
		return
	}
	for at := marks[m.rng.IntN(len(marks))]; at < dst.pos[from]; {
		chs, last, err := m.regions[from].c.ReplicaChanges(at, 1+m.rng.IntN(4))
		require.NoError(m.t, err)
		for _, ch := range chs {
			if ch.LSN > dst.pos[from] {
				break
			}
			was := m.applied[[3]uint64{uint64(to), uint64(from), ch.LSN}]
			if out := m.apply(from, to, ch); was {
				require.Equal(m.t, lethe.ConflictOutcome{}, out, "region %d's change %d again in region %d: %+v", from, ch.LSN, to, ch)
			}
		}
		at = last
	}
}

// settle delivers every change everywhere until nothing new moves.
func (m *conflictModel) settle() {
	for moved := true; moved; {
		moved = false
		for from := range m.regions {
			for to := range m.regions {
				if from != to && m.ship(from, to, -1) {
					moved = true
				}
			}
		}
	}
}

// winner returns the reference's winner of item id: of its changes, the
// one of the highest generation, a write before a delete of the same, then
// the Last Writer Wins winner. -1 if the item has no change.
func (m *conflictModel) winner(id string) int {
	best := -1
	for i, ch := range m.refs {
		if ch.item == id && (best < 0 || m.after(ch, m.refs[best])) {
			best = i
		}
	}
	return best
}

// after reports whether change a wins over change b in the reference.
func (m *conflictModel) after(a, b refChange) bool {
	switch {
	case a.gen != b.gen:
		return a.gen > b.gen
	case a.del || b.del:
		return !a.del && b.del
	}
	if m.rule.Path != "" {
		na, oka := refNumber(a.value)
		nb, okb := refNumber(b.value)
		switch {
		case oka != okb:
			return oka
		case na != nb:
			return na > nb
		}
	}
	if !a.written.Equal(b.written) {
		return a.written.After(b.written)
	}
	return a.etag > b.etag
}

// refNumber returns the number at /v of a version.
func refNumber(value string) (float64, bool) {
	var doc map[string]any
	if json.Unmarshal([]byte(value), &doc) != nil {
		return 0, false
	}
	n, ok := doc["v"].(float64)
	return n, ok
}

// visible returns the version of a write as a read returns it now, "" if it
// has expired.
func (m *conflictModel) visible(ch refChange) string {
	var doc struct{ TTL *int }
	require.NoError(m.t, json.Unmarshal([]byte(ch.value), &doc))
	ttl := int(m.props.DefaultTimeToLive)
	if doc.TTL != nil {
		ttl = *doc.TTL
	}
	if ttl > 0 && !m.clock.Now().Before(ch.written.Add(time.Duration(ttl)*time.Second)) {
		return ""
	}
	return ch.value
}

// converged checks that every region shows the same items, as of now, and
// the reference's winners: a delete won over every write concurrent with
// it, unless a write after a delete of its generation (or a later) won.
func (m *conflictModel) converged(what string) {
	t := m.t
	pk := lethe.NewPartitionKeyString("p")
	base := m.regions[0].c
	for _, id := range replIDs[:3] {
		want, werr := base.ReadItem(ctx, pk, id, nil)
		if w := m.winner(id); w >= 0 {
			win := m.refs[w]
			ref := ""
			if !win.del {
				ref = m.visible(win)
			}
			require.Equal(t, ref, string(want.Value), "%s: item %s, the reference's winner %+v", what, id, win)
			for i, ch := range m.refs {
				if !ch.del || ch.item != id || win.anc[i] {
					continue
				}
				// A delete the winner does not descend from: the
				// winner descends from as many removals.
				require.GreaterOrEqual(t, win.gen, ch.gen, "%s: item %s's delete %d lost to %+v", what, id, i, win)
			}
			m.noteWin(w)
		}
		wexp, _, _ := base.ItemExpiry(ctx, pk, id)
		for i, g := range m.regions[1:] {
			got, err := g.c.ReadItem(ctx, pk, id, nil)
			where := fmt.Sprintf("%s: item %s in region %d at %v", what, id, i+1, m.clock.Now().Sub(t0))
			require.Equal(t, status(werr), status(err), where)
			require.Equal(t, string(want.Value), string(got.Value), where)
			exp, _, _ := g.c.ItemExpiry(ctx, pk, id)
			require.True(t, wexp.Equal(exp), where)
		}
	}
	query := func(c *lethe.Container) []string {
		var out []string
		for doc, err := range c.QueryItems(ctx, "SELECT * FROM c", lethe.NewPartitionKey(), nil) {
			require.NoError(t, err)
			out = append(out, string(doc))
		}
		slices.Sort(out)
		return out
	}
	for _, g := range m.regions[1:] {
		require.Equal(t, query(base), query(g.c), what)
	}
}

// noteWin counts what made the winner w win over a concurrent write of
// its item: a delete, or a write after a delete.
func (m *conflictModel) noteWin(w int) {
	win := m.refs[w]
	for i, ch := range m.refs {
		if ch.item != win.item || ch.del || win.anc[i] || ch.anc[w] || ch.gen >= win.gen {
			continue
		}
		if win.del {
			m.deleteWon++
		} else {
			m.recreateWon++
		}
		return
	}
}

func TestReplicaConflictsConverge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rule    lethe.ConflictRule
		regions int
		def     lethe.TTL
		durable bool
	}{
		{name: "instant", regions: 2, def: lethe.TTLNever},
		{name: "path", rule: lethe.ConflictRule{Path: "/v"}, regions: 2, def: lethe.TTLNever},
		{name: "default ttl", regions: 2, def: 4},
		{name: "three regions", rule: lethe.ConflictRule{Path: "/v"}, regions: 3, def: lethe.TTLNever},
		{name: "durable", rule: lethe.ConflictRule{Path: "/v"}, regions: 2, def: 4, durable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			losers, deleteWon, recreateWon := 0, 0, 0
			for seed := range 20 {
				t.Run(fmt.Sprint(seed), func(t *testing.T) {
					m := &conflictModel{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 46)), clock: lethe.NewManualClock(t0), rule: tc.rule,
						byETag: map[string]int{}, byDelete: map[delKey]int{}, applied: map[[3]uint64]bool{}}
					m.props = lethe.ContainerProperties{ID: "c", DefaultTimeToLive: tc.def,
						PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}},
						ChangeFeedPolicy:       &lethe.ChangeFeedPolicy{}}
					for i := range tc.regions {
						g := &region{pos: map[int]uint64{}, marks: map[int][]uint64{}}
						m.cur = append(m.cur, map[string]int{})
						if tc.durable {
							g.dir = filepath.Join(t.TempDir(), fmt.Sprint(i))
						}
						m.regions = append(m.regions, g)
					}
					for i := range m.regions {
						m.open(i)
					}
					for round := range 8 {
						for range 40 {
							from := m.rng.IntN(tc.regions)
							to := (from + 1 + m.rng.IntN(tc.regions-1)) % tc.regions
							switch x := m.rng.IntN(20); {
							case x < 10:
								m.write()
							case x < 14:
								m.clock.Advance(time.Duration(m.rng.IntN(1500)) * time.Millisecond)
							case x < 19:
								m.ship(from, to, 1+m.rng.IntN(2))
							default:
								m.again(from, to)
							}
						}
						m.settle()
						m.converged(fmt.Sprintf("round %d", round))
						if tc.durable {
							for i, g := range m.regions {
								require.NoError(t, g.s.Close())
								m.open(i)
							}
							m.converged(fmt.Sprintf("round %d, reopened", round))
						}
					}
					losers += m.losers
					deleteWon += m.deleteWon
					recreateWon += m.recreateWon
				})
			}
			require.NotZero(t, losers, "the model makes conflicts")
			require.NotZero(t, deleteWon, "deletes win over concurrent writes")
			require.NotZero(t, recreateWon, "writes after deletes win over writes concurrent with them")
		})
	}
}

// twoRegions makes the container c in two stores on one clock, each a
// write region of the same account.
func twoRegions(t *testing.T) (a, b *lethe.Container, clock *lethe.ManualClock) {
	t.Helper()
	clock = lethe.NewManualClock(t0)
	props := lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}}
	for i, c := range []**lethe.Container{&a, &b} {
		s := openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}, WriteRegions: 2, WriteRegion: i})
		*c = mustContainer(t, s, props)
	}
	return a, b, clock
}

// changesOf returns c's changes after lsn.
func changesOf(t *testing.T, c *lethe.Container, lsn uint64) []lethe.ReplicaChange {
	t.Helper()
	chs, _, err := c.ReplicaChanges(lsn, 0)
	require.NoError(t, err)
	return chs
}

// resolved applies ch to c under rule.
func resolved(t *testing.T, c *lethe.Container, ch lethe.ReplicaChange, rule lethe.ConflictRule) lethe.ConflictOutcome {
	t.Helper()
	out, err := c.ApplyReplicaChangeResolved(ctx, ch, rule)
	require.NoError(t, err)
	return out
}

// readOrNil returns the item id of c as a read returns it, "" if none.
func readOrNil(t *testing.T, c *lethe.Container, id string) string {
	t.Helper()
	r, err := c.ReadItem(ctx, noPK, id, nil)
	if status(err) == 404 {
		return ""
	}
	require.NoError(t, err)
	return string(r.Value)
}

func TestReplicaConflictOutcomes(t *testing.T) {
	t.Run("a change that follows is no conflict", func(t *testing.T) {
		a, b, clock := twoRegions(t)
		create(t, a, `{"id":"x","n":1}`)
		require.Equal(t, lethe.ConflictOutcome{Applied: true}, resolved(t, b, changesOf(t, a, 0)[0], lethe.ConflictRule{}))
		clock.Advance(time.Second)
		upsert(t, a, `{"id":"x","n":2}`)
		chs := changesOf(t, a, 1)
		require.Equal(t, lethe.ConflictOutcome{Applied: true}, resolved(t, b, chs[0], lethe.ConflictRule{}))
		// Its own change back, or one applied again: nothing.
		require.Equal(t, lethe.ConflictOutcome{}, resolved(t, a, changesOf(t, b, 0)[0], lethe.ConflictRule{}))
		require.Equal(t, lethe.ConflictOutcome{}, resolved(t, b, changesOf(t, a, 0)[0], lethe.ConflictRule{}))
		require.Equal(t, readOrNil(t, a, "x"), readOrNil(t, b, "x"))
	})
	t.Run("a side expired: no loser to keep, the later stands", func(t *testing.T) {
		a, b, clock := twoRegions(t)
		create(t, a, `{"id":"x","n":0}`)
		resolved(t, b, changesOf(t, a, 0)[0], lethe.ConflictRule{})
		upsert(t, a, `{"id":"x","n":1,"ttl":3}`)
		clock.Advance(time.Second)
		won := upsert(t, b, `{"id":"x","n":2}`)
		clock.Advance(10 * time.Second) // a's version expired 7 s ago
		// b's later version reaches a, whose own expired: applied, and the
		// expired version is nobody's loser.
		require.Equal(t, lethe.ConflictOutcome{Conflict: true, Applied: true, Expired: true}, resolved(t, a, changesOf(t, b, 1)[0], lethe.ConflictRule{}))
		// a's expired version reaches b: left out, and not reported.
		require.Equal(t, lethe.ConflictOutcome{Conflict: true, Expired: true}, resolved(t, b, changesOf(t, a, 1)[0], lethe.ConflictRule{}))
		require.Equal(t, string(won.Value), readOrNil(t, a, "x"))
		require.Equal(t, string(won.Value), readOrNil(t, b, "x"))
	})
	t.Run("insert conflict: the later wins in both", func(t *testing.T) {
		a, b, clock := twoRegions(t)
		lost := create(t, a, `{"id":"x","from":"a"}`)
		clock.Advance(time.Millisecond)
		won := create(t, b, `{"id":"x","from":"b"}`)
		out := resolved(t, a, changesOf(t, b, 0)[0], lethe.ConflictRule{})
		require.Equal(t, lethe.ConflictOutcome{Conflict: true, Applied: true, Loser: lost.Value}, out)
		out = resolved(t, b, changesOf(t, a, 0)[0], lethe.ConflictRule{})
		require.Equal(t, lethe.ConflictOutcome{Conflict: true, Loser: lost.Value}, out)
		require.Equal(t, string(won.Value), readOrNil(t, a, "x"))
		require.Equal(t, string(won.Value), readOrNil(t, b, "x"))
	})
	t.Run("replace conflict by path: the higher number wins, then one without loses", func(t *testing.T) {
		rule := lethe.ConflictRule{Path: "/v"}
		a, b, clock := twoRegions(t)
		create(t, a, `{"id":"x","v":1}`)
		resolved(t, b, changesOf(t, a, 0)[0], rule)
		clock.Advance(time.Second)
		won := upsert(t, a, `{"id":"x","v":5}`)
		clock.Advance(time.Second)
		lost := upsert(t, b, `{"id":"x","v":3}`) // later, but a lower number
		require.Equal(t, lethe.ConflictOutcome{Conflict: true, Applied: true, Loser: lost.Value}, resolved(t, b, changesOf(t, a, 1)[0], rule))
		require.Equal(t, lethe.ConflictOutcome{Conflict: true, Loser: lost.Value}, resolved(t, a, changesOf(t, b, 1)[0], rule))
		require.Equal(t, string(won.Value), readOrNil(t, a, "x"))
		require.Equal(t, string(won.Value), readOrNil(t, b, "x"))

		clock.Advance(time.Second)
		c := create(t, a, `{"id":"y","v":"not a number"}`)
		d := create(t, b, `{"id":"y","v":0}`)
		chs := changesOf(t, b, 0)
		require.Equal(t, lethe.ConflictOutcome{Conflict: true, Applied: true, Loser: c.Value}, resolved(t, a, chs[len(chs)-1], rule))
		require.Equal(t, string(d.Value), readOrNil(t, a, "y"))
	})
	t.Run("delete and write: the delete wins in both, earlier or later", func(t *testing.T) {
		for _, deleteLast := range []bool{false, true} {
			a, b, clock := twoRegions(t)
			create(t, a, `{"id":"x","n":1}`)
			resolved(t, b, changesOf(t, a, 0)[0], lethe.ConflictRule{})
			clock.Advance(time.Second)
			var w lethe.ItemResponse
			del := func() {
				_, err := a.DeleteItem(ctx, noPK, "x", nil)
				require.NoError(t, err)
			}
			if deleteLast {
				w = upsert(t, b, `{"id":"x","n":2}`)
				clock.Advance(time.Second)
				del()
			} else {
				del()
				clock.Advance(time.Second)
				w = upsert(t, b, `{"id":"x","n":2}`)
			}
			outB := resolved(t, b, changesOf(t, a, 1)[0], lethe.ConflictRule{})
			outA := resolved(t, a, changesOf(t, b, 1)[0], lethe.ConflictRule{})
			require.Equal(t, lethe.ConflictOutcome{Conflict: true, Applied: true, Loser: w.Value}, outB, "the delete removes b's write")
			require.Equal(t, lethe.ConflictOutcome{Conflict: true, Loser: w.Value}, outA, "b's write loses to a's tombstone")
			require.Empty(t, readOrNil(t, a, "x"))
			require.Empty(t, readOrNil(t, b, "x"))
		}
	})
	t.Run("an older write arriving after a delete loses to its tombstone", func(t *testing.T) {
		a, b, clock := twoRegions(t)
		old := create(t, b, `{"id":"x","n":1}`)
		chs := changesOf(t, b, 0)
		clock.Advance(time.Second)
		create(t, a, `{"id":"x","n":2}`)
		_, err := a.DeleteItem(ctx, noPK, "x", nil)
		require.NoError(t, err)
		require.Equal(t, lethe.ConflictOutcome{Conflict: true, Loser: old.Value}, resolved(t, a, chs[0], lethe.ConflictRule{}))
		require.Empty(t, readOrNil(t, a, "x"))
	})
}

func TestReplicaConflictRuleRefusesBadPaths(t *testing.T) {
	a, b, _ := twoRegions(t)
	create(t, a, `{"id":"x"}`)
	ch := changesOf(t, a, 0)[0]
	for _, path := range []string{"v", "/", "/a//b", "/_etag", "/id/"} {
		_, err := b.ApplyReplicaChangeResolved(ctx, ch, lethe.ConflictRule{Path: path})
		require.ErrorIs(t, err, lethe.ErrBadRequest, path)
		require.ErrorContains(t, err, "conflict resolution path")
	}
	require.Empty(t, readOrNil(t, b, "x"), "nothing changed")
	require.Empty(t, changesOf(t, b, 0))
}

func TestWriteRegionsKeepETagsApart(t *testing.T) {
	for _, o := range []lethe.Options{{WriteRegions: -1}, {WriteRegions: 2, WriteRegion: 2}, {WriteRegion: 1}, {WriteRegions: 3, WriteRegion: -1}} {
		_, err := lethe.Open(&o)
		var oe *lethe.OptionError
		require.ErrorAs(t, err, &oe, "%+v", o)
	}
	a, b, _ := twoRegions(t)
	for i := range 20 {
		ra := upsert(t, a, fmt.Sprintf(`{"id":"a%d"}`, i%3))
		rb := upsert(t, b, fmt.Sprintf(`{"id":"b%d"}`, i%3))
		for _, ch := range changesOf(t, a, uint64(i)) {
			resolved(t, b, ch, lethe.ConflictRule{})
		}
		na, err := strconv.ParseUint(ra.ETag, 16, 64)
		require.NoError(t, err)
		nb, err := strconv.ParseUint(rb.ETag, 16, 64)
		require.NoError(t, err)
		// The last 16 bits are the version's generation.
		require.Zero(t, na>>16%2, "region 0's ETags are even: %s", ra.ETag)
		require.Equal(t, uint64(1), nb>>16%2, "region 1's ETags are odd: %s", rb.ETag)
	}
}

// lwwExpect names what a region reports of a change of the other's in
// TestLastWriterWinsDeleteRule, where lost is the version that must lose.
type lwwExpect int

const (
	noChange lwwExpect = iota // no conflict, nothing made: a change of what is gone already
	follows                   // no conflict: the change follows the region's state, and is made
	losesTo                   // a conflict the change loses: lost, the change's version, is left out
	winsOver                  // a conflict the change wins: lost, the region's version, is replaced or deleted
)

// outcome is the ConflictOutcome e names.
func (e lwwExpect) outcome(lost []byte) lethe.ConflictOutcome {
	switch e {
	case follows:
		return lethe.ConflictOutcome{Applied: true}
	case losesTo:
		return lethe.ConflictOutcome{Conflict: true, Loser: lost}
	case winsOver:
		return lethe.ConflictOutcome{Conflict: true, Applied: true, Loser: lost}
	}
	return lethe.ConflictOutcome{}
}

// TestLastWriterWinsDeleteRule plays the cases Cosmos DB documents for
// Last Writer Wins and deletes, under the instant and under a path: a
// delete wins over an insert or a replace concurrent with it, made before
// or after it, whatever the numbers at the path; of two deletes the item
// stays deleted; an item created again after a delete wins over a write
// concurrent with the delete.
func TestLastWriterWinsDeleteRule(t *testing.T) {
	del := func(t *testing.T, c *lethe.Container) {
		t.Helper()
		_, err := c.DeleteItem(ctx, noPK, "x", nil)
		require.NoError(t, err)
	}
	for _, rule := range []lethe.ConflictRule{{}, {Path: "/v"}} {
		for _, tc := range []struct {
			name string
			// base is written in a and applied in b; then run makes the
			// concurrent changes (b's later, with a higher number at the
			// path) and returns the version that must win ("": none) and
			// b's change that must lose (nil: none).
			base bool
			run  func(t *testing.T, a, b *lethe.Container, clock *lethe.ManualClock) (won string, lost []byte)
			// outA and outB are what a and b report of the other's last
			// change.
			outA, outB lwwExpect
		}{{
			name: "insert vs delete",
			run: func(t *testing.T, a, b *lethe.Container, clock *lethe.ManualClock) (string, []byte) {
				create(t, a, `{"id":"x","v":1}`)
				del(t, a)
				clock.Advance(time.Second)
				return "", create(t, b, `{"id":"x","v":9}`).Value
			},
			outA: losesTo,
			outB: winsOver, // a's insert lost to b's, a's delete removes b's
		}, {
			name: "replace vs delete",
			base: true,
			run: func(t *testing.T, a, b *lethe.Container, clock *lethe.ManualClock) (string, []byte) {
				del(t, a)
				clock.Advance(time.Second)
				return "", upsert(t, b, `{"id":"x","v":9}`).Value
			},
			outA: losesTo,
			outB: winsOver,
		}, {
			name: "delete vs delete",
			base: true,
			run: func(t *testing.T, a, b *lethe.Container, clock *lethe.ManualClock) (string, []byte) {
				del(t, a)
				clock.Advance(time.Second)
				del(t, b)
				return "", nil
			},
			outA: noChange,
			outB: noChange,
		}, {
			name: "created again after a delete vs a concurrent replace",
			base: true,
			run: func(t *testing.T, a, b *lethe.Container, clock *lethe.ManualClock) (string, []byte) {
				del(t, a)
				won := create(t, a, `{"id":"x","v":2}`)
				clock.Advance(time.Second)
				return string(won.Value), upsert(t, b, `{"id":"x","v":9}`).Value
			},
			outA: losesTo,
			outB: follows, // after the delete, which removed b's
		}, {
			name: "created again after a delete and patched, alone and in a batch, vs a concurrent replace",
			base: true,
			run: func(t *testing.T, a, b *lethe.Container, clock *lethe.ManualClock) (string, []byte) {
				del(t, a)
				create(t, a, `{"id":"x","v":2}`)
				var ops lethe.PatchOperations
				ops.AppendSet("/p", 1)
				_, err := a.PatchItem(ctx, noPK, "x", ops, nil)
				require.NoError(t, err)
				batch := a.NewTransactionalBatch(noPK)
				batch.PatchItem("x", ops, nil)
				_, err = a.ExecuteTransactionalBatch(ctx, batch, nil)
				require.NoError(t, err)
				clock.Advance(time.Second)
				return readOrNil(t, a, "x"), upsert(t, b, `{"id":"x","v":9}`).Value
			},
			outA: losesTo,
			outB: follows,
		}, {
			name: "created again by a batch after a delete vs a concurrent replace",
			base: true,
			run: func(t *testing.T, a, b *lethe.Container, clock *lethe.ManualClock) (string, []byte) {
				del(t, a)
				batch := a.NewTransactionalBatch(noPK)
				batch.CreateItem([]byte(`{"id":"x","v":2}`), nil)
				_, err := a.ExecuteTransactionalBatch(ctx, batch, nil)
				require.NoError(t, err)
				clock.Advance(time.Second)
				return readOrNil(t, a, "x"), upsert(t, b, `{"id":"x","v":9}`).Value
			},
			outA: losesTo,
			outB: follows,
		}, {
			name: "deleted and created again in one batch vs a concurrent replace",
			base: true,
			run: func(t *testing.T, a, b *lethe.Container, clock *lethe.ManualClock) (string, []byte) {
				batch := a.NewTransactionalBatch(noPK)
				batch.DeleteItem("x", nil)
				batch.CreateItem([]byte(`{"id":"x","v":2}`), nil)
				_, err := a.ExecuteTransactionalBatch(ctx, batch, nil)
				require.NoError(t, err)
				clock.Advance(time.Second)
				return readOrNil(t, a, "x"), upsert(t, b, `{"id":"x","v":9}`).Value
			},
			outA: losesTo,
			outB: winsOver, // the batch made one replace, of a later generation
		}} {
			t.Run(fmt.Sprintf("%s under %q", tc.name, rule.Path), func(t *testing.T) {
				for _, aFirst := range []bool{true, false} {
					a, b, clock := twoRegions(t)
					var fromA, fromB uint64
					if tc.base {
						create(t, a, `{"id":"x","v":0}`)
						resolved(t, b, changesOf(t, a, 0)[0], rule)
						fromA, fromB = 1, 1
						clock.Advance(time.Second)
					}
					won, lost := tc.run(t, a, b, clock)
					chsA, chsB := changesOf(t, a, fromA), changesOf(t, b, fromB)
					var outA, outB lethe.ConflictOutcome
					toA := func() {
						for _, ch := range chsB {
							outA = resolved(t, a, ch, rule)
						}
					}
					toB := func() {
						for i, ch := range chsA {
							out := resolved(t, b, ch, rule)
							if i == 0 && len(chsA) > 1 && tc.base {
								require.Equal(t, winsOver.outcome(lost), out, "a's delete removes b's write")
							}
							outB = out
						}
					}
					if aFirst {
						toB()
						toA()
					} else {
						toA()
						toB()
					}
					require.Equal(t, tc.outA.outcome(lost), outA, "b's change in a")
					require.Equal(t, tc.outB.outcome(lost), outB, "a's last change in b")
					require.Equal(t, won, readOrNil(t, a, "x"))
					require.Equal(t, won, readOrNil(t, b, "x"))
					// Each region's changes back, and again: nothing.
					for _, ch := range changesOf(t, a, 0) {
						require.False(t, resolved(t, b, ch, rule).Applied)
						require.False(t, resolved(t, a, ch, rule).Conflict)
					}
					for _, ch := range changesOf(t, b, 0) {
						require.False(t, resolved(t, a, ch, rule).Applied)
						require.False(t, resolved(t, b, ch, rule).Conflict)
					}
					require.Equal(t, won, readOrNil(t, a, "x"))
					require.Equal(t, won, readOrNil(t, b, "x"))
				}
			})
		}
	}
}
