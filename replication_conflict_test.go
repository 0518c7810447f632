package lethe_test

import (
	"fmt"
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
// and how far it has read each other region's changes.
type region struct {
	dir string
	s   *lethe.Store
	c   *lethe.Container
	pos map[int]uint64
}

// conflictModel drives two or three regions that all take writes and
// exchange their changes (their own, and those they applied from others)
// in random batches, in random order, and checks that once every change
// has been delivered they hold the same items.
type conflictModel struct {
	t       *testing.T
	rng     *rand.Rand
	clock   *lethe.ManualClock
	props   lethe.ContainerProperties
	rule    lethe.ConflictRule
	regions []*region
	losers  int
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

// write makes a random change in a random region.
func (m *conflictModel) write() {
	r := m.rng
	c := m.regions[r.IntN(len(m.regions))].c
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
	var err error
	switch r.IntN(5) {
	case 0:
		_, err = c.CreateItem(ctx, pk, []byte(doc), nil)
	case 1:
		_, err = c.ReplaceItem(ctx, pk, id, []byte(doc), nil)
	case 2:
		_, err = c.DeleteItem(ctx, pk, id, nil)
	case 3:
		var ops lethe.PatchOperations
		ops.AppendIncrement("/n", 1)
		_, err = c.PatchItem(ctx, pk, id, ops, nil)
	default:
		_, err = c.UpsertItem(ctx, pk, []byte(doc), nil)
	}
	if err != nil {
		require.Contains(m.t, []int{404, 409}, status(err), "%v", err)
	}
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
			out, err := dst.c.ApplyReplicaChangeResolved(ctx, ch, m.rule)
			require.NoError(m.t, err)
			if out.Conflict {
				m.losers++
				if out.Loser != nil {
					require.Contains(m.t, string(out.Loser), fmt.Sprintf(`"id":%q`, ch.ID))
				}
			}
		}
		dst.pos[from] = last
	}
	return any
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

// converged checks that every region shows the same items, as of now.
func (m *conflictModel) converged(what string) {
	t := m.t
	pk := lethe.NewPartitionKeyString("p")
	base := m.regions[0].c
	for _, id := range replIDs[:3] {
		want, werr := base.ReadItem(ctx, pk, id, nil)
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
			losers := 0
			for seed := range 20 {
				t.Run(fmt.Sprint(seed), func(t *testing.T) {
					m := &conflictModel{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 46)), clock: lethe.NewManualClock(t0), rule: tc.rule}
					m.props = lethe.ContainerProperties{ID: "c", DefaultTimeToLive: tc.def,
						PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}},
						ChangeFeedPolicy:       &lethe.ChangeFeedPolicy{}}
					for i := range tc.regions {
						g := &region{pos: map[int]uint64{}}
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
							switch x := m.rng.IntN(10); {
							case x < 5:
								m.write()
							case x < 7:
								m.clock.Advance(time.Duration(m.rng.IntN(1500)) * time.Millisecond)
							default:
								from := m.rng.IntN(tc.regions)
								to := (from + 1 + m.rng.IntN(tc.regions-1)) % tc.regions
								m.ship(from, to, 1+m.rng.IntN(2))
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
				})
			}
			require.NotZero(t, losers, "the model makes conflicts")
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
	t.Run("delete and write: the later wins in both", func(t *testing.T) {
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
			require.True(t, outA.Conflict && outB.Conflict)
			if deleteLast {
				require.Equal(t, lethe.ConflictOutcome{Conflict: true, Applied: true, Loser: w.Value}, outB)
				require.Equal(t, lethe.ConflictOutcome{Conflict: true, Loser: w.Value}, outA)
				require.Empty(t, readOrNil(t, a, "x"))
				require.Empty(t, readOrNil(t, b, "x"))
			} else {
				require.Equal(t, lethe.ConflictOutcome{Conflict: true}, outB, "the delete loses")
				require.Equal(t, lethe.ConflictOutcome{Conflict: true, Applied: true}, outA, "over a's tombstone")
				require.Equal(t, string(w.Value), readOrNil(t, a, "x"))
				require.Equal(t, string(w.Value), readOrNil(t, b, "x"))
			}
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
		require.Zero(t, na%2, "region 0's ETags are even: %s", ra.ETag)
		require.Equal(t, uint64(1), nb%2, "region 1's ETags are odd: %s", rb.ETag)
	}
}
