package lethe_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/stretchr/testify/require"
)

// regionUniqueProps are those of a container "c", with a change feed, of
// unique emails and unique handles.
func regionUniqueProps() lethe.ContainerProperties {
	p := uniqueProps(lethe.TTLNever, []string{"/email"}, []string{"/handle"})
	p.ID, p.PartitionKeyDefinition, p.ChangeFeedPolicy = "c", lethe.PartitionKeyDefinition{}, &lethe.ChangeFeedPolicy{}
	return p
}

// uniqueRegions makes regionUniqueProps's container in n stores on one clock,
// each a write region of the same account.
func uniqueRegions(t *testing.T, n int) ([]*lethe.Container, *lethe.ManualClock) {
	t.Helper()
	clock := lethe.NewManualClock(t0)
	cs := make([]*lethe.Container, n)
	for i := range cs {
		s := openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}, WriteRegions: n, WriteRegion: i})
		cs[i] = mustContainer(t, s, regionUniqueProps())
	}
	return cs, clock
}

// shipAll applies to c, under rule, the changes of from after lsn, and
// returns the outcomes and the LSN of from's last change.
func shipAll(t *testing.T, from, to *lethe.Container, lsn uint64, rule lethe.ConflictRule) ([]lethe.ConflictOutcome, uint64) {
	t.Helper()
	var outs []lethe.ConflictOutcome
	for _, ch := range changesOf(t, from, lsn) {
		outs = append(outs, resolved(t, to, ch, rule))
		lsn = ch.LSN
	}
	return outs, lsn
}

// itemIDs returns the ids of c's items, sorted.
func itemIDs(t *testing.T, c *lethe.Container) []string {
	t.Helper()
	var ids []string
	for _, v := range allItems(t, c) {
		ids = append(ids, v.id)
	}
	slices.Sort(ids)
	return ids
}

type idDoc struct{ id, doc string }

// allItems returns c's items, as a query reads them, by id.
func allItems(t *testing.T, c *lethe.Container) []idDoc {
	t.Helper()
	var out []idDoc
	p := c.NewQueryItemsPager("SELECT * FROM c", noPK, nil)
	for p.More() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		for _, it := range page.Items {
			id, _, _ := strings.Cut(strings.TrimPrefix(string(it), `{"id":"`), `"`)
			out = append(out, idDoc{id, string(it)})
		}
	}
	slices.SortFunc(out, func(a, b idDoc) int { return strings.Compare(a.id, b.id) })
	return out
}

// TestReplicaUniqueConflict: two regions create items of different ids
// with the same email; exchanging their changes, each keeps the winner by
// the rule (the later instant, or the higher number at the path) and
// removes the loser, its own or the one arriving, and tells the items the
// change collided with.
func TestReplicaUniqueConflict(t *testing.T) {
	for _, tc := range []struct {
		rule   lethe.ConflictRule
		winner string
	}{
		{lethe.ConflictRule{}, "y"},              // the later
		{lethe.ConflictRule{Path: "/prio"}, "x"}, // the higher priority
	} {
		t.Run("path "+tc.rule.Path, func(t *testing.T) {
			cs, clock := uniqueRegions(t, 2)
			a, b := cs[0], cs[1]
			x := string(create(t, a, `{"id":"x","email":"e","prio":2}`).Value)
			clock.Advance(time.Second)
			y := string(create(t, b, `{"id":"y","email":"e","prio":1}`).Value)
			chA, chB := changesOf(t, a, 0), changesOf(t, b, 0)
			require.Len(t, chA, 1)
			require.Len(t, chB, 1)
			toB := []lethe.ConflictOutcome{resolved(t, b, chA[0], tc.rule)}
			toA := []lethe.ConflictOutcome{resolved(t, a, chB[0], tc.rule)}
			lsnA, lsnB := chA[0].LSN, chB[0].LSN
			won, lost := x, y
			if tc.winner == "y" {
				won, lost = y, x
			}
			// The region that held the winner leaves the loser out; the
			// other removes its own.
			outWon, outLost := toB[0], toA[0] // the outcome of the winner's arrival, of the loser's
			if tc.winner == "y" {
				outWon, outLost = toA[0], toB[0]
			}
			require.Equal(t, lethe.ConflictOutcome{Conflict: true, Applied: true, Colliding: [][]byte{[]byte(lost)}}, outWon)
			require.Equal(t, lethe.ConflictOutcome{Conflict: true, Loser: []byte(lost), Colliding: [][]byte{[]byte(won)}}, outLost)
			// Each region's removal reaches the other as a no-op.
			for range 2 {
				_, lsnA = shipAll(t, a, b, lsnA, tc.rule)
				_, lsnB = shipAll(t, b, a, lsnB, tc.rule)
			}
			for _, c := range cs {
				require.Equal(t, []idDoc{{tc.winner, won}}, allItems(t, c))
				require.NoError(t, lethe.CheckUniqueIndex(c, false))
			}
		})
	}
}

// TestReplicaUniqueConflictWinsOverSeveral: a change colliding with two
// items, on two unique keys, removes both when it is after both, and is
// left out when it is after one of them only; that region then removes
// the one it was after as its own replica did (where that one arrived
// after the change and lost to it).
func TestReplicaUniqueConflictWinsOverSeveral(t *testing.T) {
	rule := lethe.ConflictRule{Path: "/prio"}
	for _, prio := range []int{3, 2} {
		cs, _ := uniqueRegions(t, 2)
		a, b := cs[0], cs[1]
		create(t, a, `{"id":"p","email":"e","handle":"h1","prio":1}`)
		create(t, a, `{"id":"q","email":"f","handle":"h","prio":2}`)
		z := create(t, b, fmt.Sprintf(`{"id":"z","email":"e","handle":"h","prio":%d.5}`, prio-1))
		_, lsn := shipAll(t, a, b, 0, rule)
		outs, _ := shipAll(t, b, a, 0, rule)
		_, _ = shipAll(t, a, b, lsn, rule)
		out := outs[0]
		require.True(t, out.Conflict)
		require.Len(t, out.Colliding, 2)
		want := []string{"q"}
		if prio == 3 {
			want = []string{"z"}
			require.True(t, out.Applied)
		} else {
			require.False(t, out.Applied)
			require.Equal(t, z.Value, out.Loser)
		}
		for _, c := range cs {
			require.Equal(t, want, itemIDs(t, c), "prio %d", prio)
			require.NoError(t, lethe.CheckUniqueIndex(c, false))
		}
	}
}

// TestReplicaUniqueClaimsItsValues: a replica's write, once its unique
// check passed, holds its values as a single write does: a client's write
// of them to another item, checked before the replica's is made, is
// refused.
func TestReplicaUniqueClaimsItsValues(t *testing.T) {
	cs, _ := uniqueRegions(t, 2)
	a, b := cs[0], cs[1]
	create(t, a, `{"id":"x","email":"e"}`)
	ch := changesOf(t, a, 0)[0]
	z := "z"
	for i := 0; lethe.ShardOf(b, noPK, z) == lethe.ShardOf(b, noPK, "x"); i++ {
		z = fmt.Sprintf("z%d", i) // another shard: the replica's write holds x's
	}
	var clientErr error
	done := false
	lethe.SetAfterUniqueCheck(b, func() {
		if !done {
			done = true
			_, clientErr = b.CreateItem(ctx, noPK, []byte(fmt.Sprintf(`{"id":%q,"email":"e"}`, z)), nil)
		}
	})
	out := resolved(t, b, ch, lethe.ConflictRule{})
	require.True(t, done)
	require.Equal(t, 409, status(clientErr))
	require.Equal(t, lethe.ConflictOutcome{Applied: true}, out)
	require.Equal(t, []string{"x"}, itemIDs(t, b))
	require.NoError(t, lethe.CheckUniqueIndex(b, false))
}

// TestReplicaUniqueExpiredHoldsNothing: an expired item holds no unique
// value, whichever side it is on: the replica's expired item does not
// collide with the change, nor does a change expired on arrival with the
// replica's item.
func TestReplicaUniqueExpiredHoldsNothing(t *testing.T) {
	cs, clock := uniqueRegions(t, 2)
	a, b := cs[0], cs[1]
	create(t, b, `{"id":"y","email":"e","handle":"y","ttl":5}`)
	create(t, a, `{"id":"x","email":"e","handle":"x"}`)
	create(t, a, `{"id":"w","email":"f","handle":"w","ttl":5}`)
	create(t, b, `{"id":"v","email":"f","handle":"v"}`)
	clock.Advance(10 * time.Second)
	for _, ch := range changesOf(t, a, 0) {
		require.Equal(t, lethe.ConflictOutcome{Applied: true}, resolved(t, b, ch, lethe.ConflictRule{}), ch.ID)
	}
	require.Equal(t, []string{"v", "x"}, itemIDs(t, b))
	require.NoError(t, lethe.CheckUniqueIndex(b, false))
}

// TestReplicaUniqueWithoutRule: ApplyReplicaChange keeps both items of a
// unique collision; the index holds both, refuses the values to any other
// item while either lives, and frees them once both are gone.
func TestReplicaUniqueWithoutRule(t *testing.T) {
	cs, clock := uniqueRegions(t, 2)
	a, b := cs[0], cs[1]
	create(t, a, `{"id":"x","email":"e"}`)
	clock.Advance(time.Second)
	create(t, b, `{"id":"y","email":"e"}`)
	for _, ch := range changesOf(t, a, 0) {
		require.NoError(t, b.ApplyReplicaChange(ctx, ch))
	}
	require.Equal(t, []string{"x", "y"}, itemIDs(t, b))
	require.NoError(t, lethe.CheckUniqueIndex(b, true))
	require.Error(t, lethe.CheckUniqueIndex(b, false))
	for _, id := range []string{"x", "y"} {
		_, err := b.CreateItem(ctx, noPK, []byte(`{"id":"z","email":"e"}`), nil)
		require.Equal(t, 409, status(err))
		_, err = b.DeleteItem(ctx, noPK, id, nil)
		require.NoError(t, err)
		require.NoError(t, lethe.CheckUniqueIndex(b, false))
	}
	create(t, b, `{"id":"z","email":"e"}`)
	require.NoError(t, lethe.CheckUniqueIndex(b, false))
}

// TestReplicaUniqueConflictIsOneLogRecord: the change that removes its
// loser is one record of a durable store's log: a store cut short anywhere
// in it comes back with the state before it or after, never half of it, its
// unique index whole.
func TestReplicaUniqueConflictIsOneLogRecord(t *testing.T) {
	for _, wins := range []bool{true, false} {
		t.Run(fmt.Sprint("the change wins: ", wins), func(t *testing.T) {
			dirs := []string{t.TempDir(), t.TempDir()}
			clock := lethe.NewManualClock(t0)
			open := func(i int, dir string) (*lethe.Store, *lethe.Container) {
				s, err := lethe.Open(&lethe.Options{Dir: dir, Clock: clock, Sync: lethe.SyncAlways, Reaper: lethe.ReaperOptions{Disabled: true}, WriteRegions: 2, WriteRegion: i})
				require.NoError(t, err)
				c, err := s.Container("c")
				if err != nil {
					c = mustContainer(t, s, regionUniqueProps())
				}
				return s, c
			}
			sa, a := open(0, dirs[0])
			defer sa.Close()
			sb, b := open(1, dirs[1])
			doc := map[*lethe.Container]string{a: `{"id":"x","email":"e"}`, b: `{"id":"y","email":"e"}`}
			first, second := b, a // the later wins: a's x
			if !wins {
				first, second = a, b
			}
			create(t, first, doc[first])
			clock.Advance(time.Second)
			create(t, second, doc[second])
			seg := lethetesting.LastSegment(t, dirs[1])
			before, err := os.Stat(seg)
			require.NoError(t, err)
			lsn, err := b.LastReplicaLSN()
			require.NoError(t, err)
			outs, _ := shipAll(t, a, b, 0, lethe.ConflictRule{})
			require.Equal(t, wins, outs[0].Applied)
			whole := t.TempDir() // as a crash leaves it: the log synced, not sealed
			require.NoError(t, os.CopyFS(whole, os.DirFS(dirs[1])))
			require.NoError(t, sb.Close())
			after, err := os.Stat(lethetesting.LastSegment(t, whole))
			require.NoError(t, err)
			require.Greater(t, after.Size(), before.Size())
			for cut := before.Size(); cut <= after.Size(); cut++ {
				dir := t.TempDir()
				require.NoError(t, os.CopyFS(dir, os.DirFS(whole)))
				require.NoError(t, os.Truncate(lethetesting.LastSegment(t, dir), cut))
				s, c := open(1, dir)
				want, changes := []string{"y"}, 0 // before the step
				if cut == after.Size() {
					changes = 2 // a create and a delete
					if wins {
						want = []string{"x"}
					}
				}
				where := fmt.Sprintf("the log cut at %d of %d..%d", cut, before.Size(), after.Size())
				require.Equal(t, want, itemIDs(t, c), where)
				require.Len(t, changesOf(t, c, lsn), changes, where)
				require.NoError(t, lethe.CheckUniqueIndex(c, false), where)
				require.NoError(t, s.Close())
			}
		})
	}
}

// TestReplicaUniqueConflictsConcurrently: a replica applies colliding
// changes while clients write, batch, delete and query the same values:
// nothing deadlocks or races (-race), and no two live items end sharing a
// unique key's values. (The race of a client's check with a replica's is
// TestReplicaUniqueClaimsItsValues's, made to happen.)
func TestReplicaUniqueConflictsConcurrently(t *testing.T) {
	cs, clock := uniqueRegions(t, 2)
	a, b := cs[0], cs[1]
	for i := range 1000 { // a's items take each email in turn
		if i >= 40 {
			_, err := a.DeleteItem(ctx, noPK, fmt.Sprintf("a%d", i-40), nil)
			require.NoError(t, err)
		}
		create(t, a, fmt.Sprintf(`{"id":"a%d","email":"e%d","handle":"h%d"}`, i, i%40, i))
		clock.Advance(time.Millisecond)
	}
	var chs []lethe.ReplicaChange
	for lsn := uint64(0); ; {
		page := changesOf(t, a, lsn)
		if len(page) == 0 {
			break
		}
		chs, lsn = append(chs, page...), page[len(page)-1].LSN
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g, work := range []func(i int){
		func(i int) {
			_, _ = b.UpsertItem(ctx, noPK, fmt.Appendf(nil, `{"id":"b%d","email":"e%d","handle":"g%d"}`, i%30, i%40, i), nil)
		},
		func(i int) {
			batch := b.NewTransactionalBatch(noPK)
			batch.UpsertItem(fmt.Appendf(nil, `{"id":"c%d","email":"e%d","handle":"k%d"}`, i%20, i%40, i), nil)
			batch.DeleteItem(fmt.Sprintf("c%d", (i+1)%20), nil)
			_, _ = b.ExecuteTransactionalBatch(ctx, batch, nil)
		},
		func(i int) { _, _ = b.DeleteItem(ctx, noPK, fmt.Sprintf("b%d", i%30), nil) },
		func(int) {
			for range b.QueryItems(ctx, "SELECT VALUE COUNT(1) FROM c", noPK, nil) {
			}
		},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ; i++ {
				select {
				case <-done:
					return
				default:
					work(i)
				}
			}
		}()
	}
	collided := 0
	for _, ch := range chs {
		out, err := b.ApplyReplicaChangeResolved(ctx, ch, lethe.ConflictRule{})
		require.NoError(t, err)
		if out.Colliding != nil {
			collided++
		}
		if ch.Kind == lethe.ReplicaDelete {
			runtime.Gosched() // a client may take the email before the next create
		}
	}
	close(done)
	wg.Wait()
	require.NoError(t, lethe.CheckUniqueIndex(b, false))
	t.Logf("%d changes, %d collided", len(chs), collided)
}

// TestReplicaUniqueConflictsConverge: two or three regions create items,
// replace and delete some, whose emails and handles collide; they exchange their
// changes in random batches, in random order, some again. No region ever
// holds two live items sharing a unique key's values, its unique index is
// always its items', and once every change is delivered they hold the
// same items.
func TestReplicaUniqueConflictsConverge(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -lethe.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	rules := []lethe.ConflictRule{{}, {Path: "/prio"}}
	for round := range 40 {
		n := 2 + rng.IntN(2)
		rule := rules[rng.IntN(len(rules))]
		cs, clock := uniqueRegions(t, n)
		pos := make([][]uint64, n) // pos[to][from]
		for i := range pos {
			pos[i] = make([]uint64, n)
		}
		ship := func(from, to int, max int) {
			chs, _, err := cs[from].ReplicaChanges(pos[to][from], max)
			require.NoError(t, err)
			for _, ch := range chs {
				_, err := cs[to].ApplyReplicaChangeResolved(ctx, ch, rule)
				require.NoError(t, err)
				pos[to][from] = ch.LSN
			}
			require.NoError(t, lethe.CheckUniqueIndex(cs[to], false), "seed %d round %d", seed, round)
		}
		for range 30 {
			clock.Advance(time.Duration(rng.IntN(3)) * time.Millisecond)
			switch g := rng.IntN(n); rng.IntN(4) {
			case 0, 1: // a write: a create, or a replace of a live item
				// The numbers at the rule's path grow along each item's
				// history, as ConflictRule asks.
				id := fmt.Sprintf("i%d", rng.IntN(8))
				prio := rng.IntN(4)
				if r, err := cs[g].ReadItem(ctx, noPK, id, nil); err == nil {
					var v struct{ Prio int }
					require.NoError(t, json.Unmarshal(r.Value, &v))
					prio += v.Prio + 1
				}
				doc := fmt.Sprintf(`{"id":%q,"email":"e%d","handle":"h%d","prio":%d}`, id, rng.IntN(3), rng.IntN(3), prio)
				_, err := cs[g].UpsertItem(ctx, noPK, []byte(doc), nil)
				if err != nil {
					require.Equal(t, 409, status(err), "seed %d", seed) // the values are another's here
				}
			case 2:
				_, err := cs[g].DeleteItem(ctx, noPK, fmt.Sprintf("i%d", rng.IntN(8)), nil)
				if err != nil {
					require.Equal(t, 404, status(err), "seed %d", seed)
				}
			default:
				from := rng.IntN(n)
				if to := rng.IntN(n); to != from {
					ship(from, to, 1+rng.IntN(4))
				}
			}
		}
		// Deliver everything, until no region has anything new.
		for settled := false; !settled; {
			settled = true
			for to := range n {
				for from := range n {
					if from == to {
						continue
					}
					last, err := cs[from].LastReplicaLSN()
					require.NoError(t, err)
					if last > pos[to][from] {
						settled = false
						ship(from, to, 0)
					}
				}
			}
		}
		want := allItems(t, cs[0])
		for i, c := range cs[1:] {
			require.Equal(t, want, allItems(t, c), "seed %d round %d: region %d differs from region 0", seed, round, i+1)
		}
	}
}
