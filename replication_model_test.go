package lethe_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/require"
)

// replVersion is an item's state in the hub right after one of its changes:
// what a replica that has applied that change must show.
type replVersion struct {
	pk, id   string
	present  bool
	value    string    // the item as ReadItem returns it
	etag     string    // its _etag; a delete's: the version removed
	exp      time.Time // its expiry; zero: never
	written  time.Time // the change's instant
	replaces string    // the ETag of the live version it replaced
}

func (v replVersion) key() string { return v.pk + "/" + v.id }

// replModel drives a hub container and its replica in another store on the
// same clock: random writes on the hub, shipped to the replica in random
// batches at random times (so with lag), and checks after every step that
// the replica shows exactly what the hub showed after the changes it has
// applied, expiring at the same instants.
type replModel struct {
	t        *testing.T
	rng      *rand.Rand
	clock    *lethe.ManualClock
	props    lethe.ContainerProperties
	hubDir   string // "" in memory
	repDir   string
	hubS     *lethe.Store
	repS     *lethe.Store
	hub, rep *lethe.Container
	versions []replVersion // every hub change, in order
	applied  int           // how many of them the replica has applied
	pos      uint64        // the hub's feed position the replica has reached
	marks    [][2]uint64   // earlier (pos, applied), to apply again from
}

var replPKs, replIDs = []string{"p0", "p1"}, []string{"a", "b", "c", "d"}

func (m *replModel) open(dir string) (*lethe.Store, *lethe.Container) {
	t := m.t
	s, err := lethe.Open(&lethe.Options{Dir: dir, Clock: m.clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	c, err := s.Container(m.props.ID)
	if err != nil {
		c, err = s.CreateContainer(ctx, m.props)
	}
	require.NoError(t, err)
	return s, c
}

// reopen closes a durable store and opens it again.
func (m *replModel) reopen(hub bool) {
	s, dir := m.repS, m.repDir
	if hub {
		s, dir = m.hubS, m.hubDir
	}
	require.NoError(m.t, s.Close())
	s, c := m.open(dir)
	if hub {
		m.hubS, m.hub = s, c
	} else {
		m.repS, m.rep = s, c
	}
}

// write makes a random change on the hub and notes the version it leaves.
func (m *replModel) write() {
	t, r := m.t, m.rng
	pkv, id := replPKs[r.IntN(len(replPKs))], replIDs[r.IntN(len(replIDs))]
	pk := lethe.NewPartitionKeyString(pkv)
	before, err := m.hub.ReadItem(ctx, pk, id, nil)
	if err != nil {
		before = lethe.ItemResponse{}
	}
	doc := fmt.Sprintf(`{"id":%q,"pk":%q,"n":%d,"u":%d`, id, pkv, r.IntN(100), r.IntN(4))
	switch x := r.IntN(6); {
	case x == 0:
		doc += `,"ttl":-1`
	case x <= 2:
		doc += fmt.Sprintf(`,"ttl":%d`, 1+r.IntN(4))
	}
	doc += "}"
	var resp lethe.ItemResponse
	del := false
	switch r.IntN(6) {
	case 0:
		resp, err = m.hub.CreateItem(ctx, pk, []byte(doc), nil)
	case 1:
		resp, err = m.hub.ReplaceItem(ctx, pk, id, []byte(doc), nil)
	case 2:
		del = true
		resp, err = m.hub.DeleteItem(ctx, pk, id, nil)
	case 3:
		var ops lethe.PatchOperations
		ops.AppendIncrement("/n", 1)
		if r.IntN(2) == 0 {
			ops.AppendSet("/ttl", 1+r.IntN(3))
		}
		resp, err = m.hub.PatchItem(ctx, pk, id, ops, nil)
	default:
		resp, err = m.hub.UpsertItem(ctx, pk, []byte(doc), nil)
	}
	if err != nil {
		require.Contains(t, []int{404, 409}, status(err), "%v", err)
		return
	}
	v := replVersion{pk: pkv, id: id, written: m.clock.Now()}
	if resp.StatusCode == 200 || del {
		v.replaces = before.ETag
	}
	if del {
		v.etag = before.ETag
	} else {
		got, err := m.hub.ReadItem(ctx, pk, id, nil)
		require.NoError(t, err)
		v.present, v.value, v.etag = true, string(got.Value), got.ETag
		if exp, ok, err := m.hub.ItemExpiry(ctx, pk, id); err == nil && ok {
			v.exp = exp
		}
	}
	m.versions = append(m.versions, v)
}

// ship applies up to n batches of the hub's changes (of random sizes) to
// the replica; n < 0: all of them.
func (m *replModel) ship(n int) {
	t := m.t
	for ; n != 0; n-- {
		chs, last, err := m.hub.ReplicaChanges(m.pos, 1+m.rng.IntN(4))
		require.NoError(t, err)
		if len(chs) == 0 {
			require.Equal(t, m.pos, last)
			break
		}
		for _, ch := range chs {
			if ch.Kind != lethe.ReplicaExpiry {
				v := m.versions[m.applied]
				kind := lethe.ReplicaWrite
				if !v.present {
					kind = lethe.ReplicaDelete
				}
				require.Equal(t, kind, ch.Kind, "lsn %d", ch.LSN)
				require.Equal(t, lethe.NewPartitionKeyString(v.pk), ch.PartitionKey)
				require.Equal(t, v.id, ch.ID)
				require.Equal(t, v.etag, ch.ETag)
				require.Equal(t, v.replaces, ch.Replaces, "lsn %d", ch.LSN)
				require.True(t, v.written.Equal(ch.Written), "lsn %d: %v, not %v", ch.LSN, ch.Written, v.written)
				m.applied++
			}
			require.NoError(t, m.rep.ApplyReplicaChange(ctx, ch))
		}
		m.pos = last
		m.marks = append(m.marks, [2]uint64{m.pos, uint64(m.applied)})
	}
}

// again applies once more the changes since an earlier position the
// replica had reached, as a replica that lost its position would.
func (m *replModel) again() {
	if len(m.marks) == 0 {
		return
	}
	from := m.marks[m.rng.IntN(len(m.marks))][0]
	for from < m.pos {
		chs, last, err := m.hub.ReplicaChanges(from, 1+m.rng.IntN(4))
		require.NoError(m.t, err)
		for _, ch := range chs {
			if ch.LSN <= m.pos {
				require.NoError(m.t, m.rep.ApplyReplicaChange(ctx, ch))
			}
		}
		from = last
	}
}

// check compares every item of the replica with the version of it the
// changes it applied left in the hub, as of the clock's instant.
func (m *replModel) check(step int) {
	t := m.t
	now := m.clock.Now()
	state := map[string]replVersion{}
	for _, v := range m.versions[:m.applied] {
		state[v.key()] = v
	}
	var want []string
	for _, pkv := range replPKs {
		for _, id := range replIDs {
			pk := lethe.NewPartitionKeyString(pkv)
			v := state[pkv+"/"+id]
			visible := v.present && (v.exp.IsZero() || now.Before(v.exp))
			got, err := m.rep.ReadItem(ctx, pk, id, nil)
			exp, expires, experr := m.rep.ItemExpiry(ctx, pk, id)
			where := fmt.Sprintf("step %d, item %s/%s at %v", step, pkv, id, now.Sub(t0))
			if !visible {
				require.Equal(t, 404, status(err), where)
				require.Equal(t, 404, status(experr), where)
			} else {
				require.NoError(t, err, where)
				require.Equal(t, v.value, string(got.Value), where)
				require.Equal(t, v.etag, got.ETag, where)
				require.NoError(t, experr, where)
				require.Equal(t, !v.exp.IsZero(), expires, where)
				require.True(t, exp.Equal(v.exp), "%s: expires at %v, not %v", where, exp, v.exp)
				want = append(want, v.value)
			}
			if m.applied == len(m.versions) { // caught up: the hub itself agrees
				h, herr := m.hub.ReadItem(ctx, pk, id, nil)
				require.Equal(t, status(herr), status(err), where)
				require.Equal(t, string(h.Value), string(got.Value), where)
			}
		}
	}
	var got []string
	for doc, err := range m.rep.QueryItems(ctx, "SELECT * FROM c", lethe.NewPartitionKey(), nil) {
		require.NoError(t, err)
		got = append(got, string(doc))
	}
	slices.Sort(want)
	slices.Sort(got)
	require.Equal(t, want, got, "step %d: the replica's query", step)
}

// readReplicaFeed reads the replica's own change feed through, which finds
// its expiries as of now.
func (m *replModel) readReplicaFeed() {
	o := &lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, MaxItemCount: 1000}
	for {
		page, err := m.rep.ReadChangeFeed(ctx, o)
		require.NoError(m.t, err)
		if len(page.Items) == 0 {
			return
		}
		o.Continuation = page.ContinuationToken
	}
}

func TestReplicaModel(t *testing.T) {
	unique := &lethe.UniqueKeyPolicy{UniqueKeys: []lethe.UniqueKey{{Paths: []string{"/u"}}}}
	for _, tc := range []struct {
		name    string
		def     lethe.TTL
		unique  bool
		durable bool
	}{
		{name: "ttl off", def: lethe.TTLOff},
		{name: "ttl on", def: lethe.TTLNever},
		{name: "default ttl", def: 3},
		{name: "unique keys", def: 3, unique: true},
		{name: "durable", def: 3, durable: true},
		{name: "durable unique", def: lethe.TTLNever, unique: true, durable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seeds := 12
			if tc.durable {
				seeds = 4
			}
			for seed := range seeds {
				t.Run(fmt.Sprint(seed), func(t *testing.T) {
					m := &replModel{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 45)), clock: lethe.NewManualClock(t0)}
					m.props = lethe.ContainerProperties{ID: "c", DefaultTimeToLive: tc.def,
						PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}},
						ChangeFeedPolicy:       &lethe.ChangeFeedPolicy{}}
					if tc.unique {
						m.props.UniqueKeyPolicy = unique
					}
					if tc.durable {
						m.hubDir, m.repDir = filepath.Join(t.TempDir(), "hub"), filepath.Join(t.TempDir(), "replica")
					}
					m.hubS, m.hub = m.open(m.hubDir)
					m.repS, m.rep = m.open(m.repDir)
					for step := range 250 {
						switch x := m.rng.IntN(100); {
						case x < 50:
							m.write()
						case x < 65:
							m.clock.Advance(time.Duration(m.rng.IntN(2500)) * time.Millisecond)
						case x < 80:
							m.ship(1 + m.rng.IntN(3))
						case x < 85:
							m.ship(-1)
						case x < 88:
							m.again()
						case x < 92:
							m.readReplicaFeed()
						case x < 95:
							_, err := m.rep.Purge(ctx)
							require.NoError(t, err)
						case tc.durable && x < 98:
							m.reopen(false)
						case tc.durable:
							if m.rng.IntN(2) == 0 {
								require.NoError(t, m.hubS.Checkpoint(ctx))
							}
							m.reopen(true)
						}
						m.check(step)
					}
					m.ship(-1)
					m.check(-1)
				})
			}
		})
	}
}
