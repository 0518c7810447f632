package lethe_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/stretchr/testify/require"
)

// genOf returns the generation the ETag of a version holds.
func genOf(t testing.TB, etag string) uint64 {
	t.Helper()
	g, ok := lethe.ETagGeneration(etag)
	require.True(t, ok, "%q is no ETag of the store's", etag)
	return g
}

// writeRegionPair returns the container c of two stores on clock, write
// regions 0 and 1 of two, reaper off, whose change feeds keep keepA and
// keepB changes (0: the default).
func writeRegionPair(t *testing.T, clock *lethe.ManualClock, keepA, keepB int) (a, b *lethe.Container) {
	t.Helper()
	cs := make([]*lethe.Container, 2)
	for i, keep := range []int{keepA, keepB} {
		s := openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}, WriteRegions: 2, WriteRegion: i})
		cs[i] = mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever,
			ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: keep}})
	}
	return cs[0], cs[1]
}

// TestReplicaRecreateAfterForgottenDelete: a region whose change feed no
// longer keeps an item's delete creates the item again after the delete
// all the same, and the other region, whose feed still keeps it, takes
// the new version: the regions converge.
func TestReplicaRecreateAfterForgottenDelete(t *testing.T) {
	clock := lethe.NewManualClock(t0)
	// a's feed keeps 2 changes, b's the default.
	a, b := writeRegionPair(t, clock, 2, 0)
	var from uint64 // a's last change b holds
	shipAB := func() {
		t.Helper()
		for _, ch := range changesOf(t, a, from) {
			resolved(t, b, ch, lethe.ConflictRule{})
			from = ch.LSN
		}
	}
	create(t, a, `{"id":"x","n":1}`)
	shipAB()
	_, err := a.DeleteItem(ctx, noPK, "x", nil)
	require.NoError(t, err)
	shipAB()
	for _, id := range []string{"y1", "y2"} { // a's feed forgets x's delete
		create(t, a, `{"id":"`+id+`"}`)
		shipAB()
	}
	again := create(t, a, `{"id":"x","n":2}`)
	require.Equal(t, uint64(1), genOf(t, again.ETag), "created again after one delete")
	shipAB()
	require.Equal(t, readOrNil(t, a, "x"), readOrNil(t, b, "x"))
}

// TestTombstonesSurviveRestart: in a store of several write regions, an
// item removed (deleted, alone or in a batch; expired, purged or not) and
// created again after a restart, whose change feed has forgotten the
// removal or which keeps none, takes the generation after the removed
// version's, whether the removal came back from the log (a crash) or
// from a snapshot.
func TestTombstonesSurviveRestart(t *testing.T) {
	t.Parallel()
	removals := []struct {
		name   string
		remove func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock)
	}{
		{"delete", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) {
			_, err := c.DeleteItem(ctx, noPK, "x", nil)
			require.NoError(t, err)
		}},
		{"batch delete", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) {
			b := c.NewTransactionalBatch(noPK)
			b.DeleteItem("x", nil)
			_, err := c.ExecuteTransactionalBatch(ctx, b, nil)
			require.NoError(t, err)
		}},
		{"expiry", func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock) {
			upsert(t, c, `{"id":"x","ttl":1}`)
			clock.Advance(2 * time.Second)
		}},
		{"expiry purged", func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock) {
			upsert(t, c, `{"id":"x","ttl":1}`)
			clock.Advance(2 * time.Second)
			n, err := c.Purge(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, n)
		}},
	}
	feeds := []struct {
		name string
		feed *lethe.ChangeFeedPolicy
	}{{"no feed", nil}, {"a feed of one change", &lethe.ChangeFeedPolicy{MaxChanges: 1}}}
	for _, rm := range removals {
		for _, fd := range feeds {
			for _, snapshot := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s, %s, snapshot %v", rm.name, fd.name, snapshot), func(t *testing.T) {
					t.Parallel()
					dir, clock := t.TempDir(), lethe.NewManualClock(t0)
					o := &lethe.Options{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}, WriteRegions: 2, WriteRegion: 1}
					s, err := lethe.Open(o)
					require.NoError(t, err)
					c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever, ChangeFeedPolicy: fd.feed})
					create(t, c, `{"id":"x"}`)
					_, err = c.DeleteItem(ctx, noPK, "x", nil)
					require.NoError(t, err)
					require.Equal(t, uint64(1), genOf(t, create(t, c, `{"id":"x"}`).ETag))
					rm.remove(t, c, clock)
					create(t, c, `{"id":"y"}`) // the feed forgets the removal
					if snapshot {
						require.NoError(t, s.Checkpoint(ctx))
					}
					crashed := crashCopy(t, s, dir)

					o.Dir = crashed
					s = openStore(t, o)
					c, err = s.Container("c")
					require.NoError(t, err)
					require.Equal(t, uint64(2), genOf(t, create(t, c, `{"id":"x"}`).ETag), "created again after two removals")
					require.NoError(t, s.Checkpoint(ctx))
					_, err = c.DeleteItem(ctx, noPK, "y", nil)
					require.NoError(t, err)
					require.NoError(t, s.Checkpoint(ctx))

					// A store that is the only writer opens the directory,
					// and has no use for its tombstones.
					o.WriteRegions, o.WriteRegion = 0, 0
					require.NoError(t, s.Close())
					openStore(t, o)
				})
			}
		}
	}
}

// TestEveryWriteTakesItsGeneration is the seam of generations: every kind
// of write in a store of several write regions gives its version the
// generation ConflictRule's order says (kept by a replace, upsert or
// patch of a live version, one more after a delete or an expiry, the
// origin's for a replica's change), read from its ETag. The item x starts
// at generation 1 (created, deleted, created again); each case returns
// the ETag of the version it checks. A new kind of write that bypasses
// newGen belongs here, and fails.
func TestEveryWriteTakesItsGeneration(t *testing.T) {
	t.Parallel()
	var patch lethe.PatchOperations
	patch.AppendSet("/p", 1)
	del := func(t *testing.T, c *lethe.Container) {
		t.Helper()
		_, err := c.DeleteItem(ctx, noPK, "x", nil)
		require.NoError(t, err)
	}
	batch := func(t *testing.T, c *lethe.Container, ops func(b *lethe.TransactionalBatch)) string {
		t.Helper()
		b := c.NewTransactionalBatch(noPK)
		ops(&b)
		r, err := c.ExecuteTransactionalBatch(ctx, b, nil)
		require.NoError(t, err)
		require.True(t, r.Success)
		return r.OperationResults[len(r.OperationResults)-1].ETag
	}
	// region1 is a version's ETag as the other write region of two hands
	// it out, of generation gen.
	region1 := func(n, gen uint64) string { return fmt.Sprintf("%016x", (2*n+1)<<16|gen) }
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock) string
		gen  uint64
	}{
		{"create of a new item", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			return create(t, c, `{"id":"new"}`).ETag
		}, 0},
		{"replace", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			r, err := c.ReplaceItem(ctx, noPK, "x", []byte(`{"id":"x","n":2}`), nil)
			require.NoError(t, err)
			return r.ETag
		}, 1},
		{"upsert of the live item", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			return upsert(t, c, `{"id":"x","n":2}`).ETag
		}, 1},
		{"patch", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			r, err := c.PatchItem(ctx, noPK, "x", patch, nil)
			require.NoError(t, err)
			return r.ETag
		}, 1},
		{"create after a delete", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			del(t, c)
			return create(t, c, `{"id":"x","n":2}`).ETag
		}, 2},
		{"upsert after a delete", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			del(t, c)
			return upsert(t, c, `{"id":"x","n":2}`).ETag
		}, 2},
		{"create after an expiry", func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock) string {
			upsert(t, c, `{"id":"x","ttl":1}`)
			clock.Advance(2 * time.Second)
			return create(t, c, `{"id":"x","n":2}`).ETag
		}, 2},
		{"create after an expiry purged", func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock) string {
			upsert(t, c, `{"id":"x","ttl":1}`)
			clock.Advance(2 * time.Second)
			_, err := c.Purge(ctx)
			require.NoError(t, err)
			return create(t, c, `{"id":"x","n":2}`).ETag
		}, 2},
		{"create after ReplaceAt's default expired the item", func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock) string {
			props, err := c.Read(ctx)
			require.NoError(t, err)
			props.DefaultTimeToLive = 1
			require.NoError(t, c.ReplaceAt(ctx, props, clock.Now()))
			clock.Advance(2 * time.Second)
			props.DefaultTimeToLive = lethe.TTLNever
			require.NoError(t, c.ReplaceAt(ctx, props, clock.Now()))
			return create(t, c, `{"id":"x","n":2}`).ETag
		}, 2},
		{"batch create of a new item", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			return batch(t, c, func(b *lethe.TransactionalBatch) { b.CreateItem([]byte(`{"id":"new"}`), nil) })
		}, 0},
		{"batch replace", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			return batch(t, c, func(b *lethe.TransactionalBatch) { b.ReplaceItem("x", []byte(`{"id":"x","n":2}`), nil) })
		}, 1},
		{"batch upsert of the live item", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			return batch(t, c, func(b *lethe.TransactionalBatch) { b.UpsertItem([]byte(`{"id":"x","n":2}`), nil) })
		}, 1},
		{"batch patch", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			return batch(t, c, func(b *lethe.TransactionalBatch) { b.PatchItem("x", patch, nil) })
		}, 1},
		{"batch create after a delete", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			del(t, c)
			return batch(t, c, func(b *lethe.TransactionalBatch) { b.CreateItem([]byte(`{"id":"x","n":2}`), nil) })
		}, 2},
		{"batch delete, then a create", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			batch(t, c, func(b *lethe.TransactionalBatch) { b.DeleteItem("x", nil) })
			return create(t, c, `{"id":"x","n":2}`).ETag
		}, 2},
		{"delete and upsert in one batch", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			return batch(t, c, func(b *lethe.TransactionalBatch) {
				b.DeleteItem("x", nil)
				b.UpsertItem([]byte(`{"id":"x","n":2}`), nil)
			})
		}, 2},
		{"create, delete and create again in one batch", func(t *testing.T, c *lethe.Container, _ *lethe.ManualClock) string {
			return batch(t, c, func(b *lethe.TransactionalBatch) {
				b.DeleteItem("x", nil)
				b.CreateItem([]byte(`{"id":"x","n":2}`), nil)
				b.DeleteItem("x", nil)
				b.CreateItem([]byte(`{"id":"x","n":3}`), nil)
			})
		}, 3},
		{"a replica's write, then a replace", func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock) string {
			etag := region1(1<<20, 5)
			require.NoError(t, c.ApplyReplicaChange(ctx, lethe.ReplicaChange{Kind: lethe.ReplicaWrite, ID: "x",
				Item: []byte(`{"id":"x","n":2}`), Written: clock.Now(), ETag: etag}))
			r, err := c.ReadItem(ctx, noPK, "x", nil)
			require.NoError(t, err)
			require.Equal(t, etag, r.ETag, "stored with the origin's ETag")
			return upsert(t, c, `{"id":"x","n":3}`).ETag
		}, 5},
		{"a replica's write resolved, then a replace", func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock) string {
			cur, err := c.ReadItem(ctx, noPK, "x", nil)
			require.NoError(t, err)
			resolved(t, c, lethe.ReplicaChange{Kind: lethe.ReplicaWrite, ID: "x", Item: []byte(`{"id":"x","n":2}`),
				Written: clock.Now(), ETag: region1(1<<20, 1), Replaces: cur.ETag}, lethe.ConflictRule{})
			return upsert(t, c, `{"id":"x","n":3}`).ETag
		}, 1},
		{"a replica's delete, then a create", func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock) string {
			cur, err := c.ReadItem(ctx, noPK, "x", nil)
			require.NoError(t, err)
			require.NoError(t, c.ApplyReplicaChange(ctx, lethe.ReplicaChange{Kind: lethe.ReplicaDelete, ID: "x",
				Written: clock.Now(), ETag: cur.ETag}))
			return create(t, c, `{"id":"x","n":2}`).ETag
		}, 2},
		{"a replica's delete resolved, then a create", func(t *testing.T, c *lethe.Container, clock *lethe.ManualClock) string {
			cur, err := c.ReadItem(ctx, noPK, "x", nil)
			require.NoError(t, err)
			require.True(t, resolved(t, c, lethe.ReplicaChange{Kind: lethe.ReplicaDelete, ID: "x",
				Written: clock.Now(), ETag: cur.ETag, Replaces: cur.ETag}, lethe.ConflictRule{}).Applied)
			return create(t, c, `{"id":"x","n":2}`).ETag
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := lethe.NewManualClock(t0)
			s := openStore(t, &lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}, WriteRegions: 2})
			c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
			require.Equal(t, uint64(0), genOf(t, create(t, c, `{"id":"x"}`).ETag))
			del(t, c)
			require.Equal(t, uint64(1), genOf(t, create(t, c, `{"id":"x"}`).ETag))
			clock.Advance(time.Second)
			require.Equal(t, tc.gen, genOf(t, tc.run(t, c, clock)))
		})
	}
}

// TestTombstoneOfAnotherPartitionKeyIsDamage: a snapshot's tombstone whose
// partition key value cannot be its container's (a checksum that matches
// bytes the store never wrote) fails Open with a *CorruptionError, in a
// store of several write regions and in one that is the only writer.
func TestTombstoneOfAnotherPartitionKeyIsDamage(t *testing.T) {
	t.Parallel()
	dir, clock := t.TempDir(), lethe.NewManualClock(t0)
	o := &lethe.Options{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}, WriteRegions: 2}
	s, err := lethe.Open(o)
	require.NoError(t, err)
	c := partitioned(t, s, "p", lethe.TTLNever, "/pk")
	pk := pkS("a partition")
	_, err = c.CreateItem(ctx, pk, []byte(`{"id":"x","pk":"a partition"}`), nil)
	require.NoError(t, err)
	_, err = c.DeleteItem(ctx, pk, "x", nil)
	require.NoError(t, err)
	require.NoError(t, s.Checkpoint(ctx))
	require.NoError(t, s.Close())

	snap, data := snapshotIn(t, dir)
	found := false
	eachFrame(data, func(off int, payload []byte) {
		if payload[0] == 'T' {
			// 'T', str "p", then str pk: its first component, a string,
			// says it is longer than the whole key.
			i := bytes.Index(payload, []byte("a partition"))
			require.Positive(t, i)
			payload[i-1] = 0x7f
			binary.LittleEndian.PutUint32(data[off+8:], crc32.Checksum(payload, castagnoli))
			found = true
		}
	})
	require.True(t, found, "the snapshot holds the tombstone")
	require.NoError(t, os.WriteFile(snap, data, 0o644))
	for _, regions := range []int{2, 0} {
		o.WriteRegions = regions
		_, err = lethe.Open(o)
		var ce *lethe.CorruptionError
		require.ErrorAs(t, err, &ce, "WriteRegions %d", regions)
		require.Contains(t, ce.Reason, "tombstone")
	}
}

// snapshotIn returns the path and contents of the snapshot in dir.
func snapshotIn(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	for _, n := range lethetesting.DirNames(t, dir) {
		if strings.HasPrefix(n, "snap-") {
			data, err := os.ReadFile(filepath.Join(dir, n))
			require.NoError(t, err)
			return filepath.Join(dir, n), data
		}
	}
	t.Fatalf("no snapshot in %s", dir)
	return "", nil
}

// eachFrame calls fn with the offset and payload of each frame of a
// file's contents.
func eachFrame(data []byte, fn func(off int, payload []byte)) {
	for off := headerLen(data); off+12 <= len(data); {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		fn(off, data[off+12:off+12+n])
		off += 12 + n
	}
}

// TestSingleWriterKeepsNoTombstones: a store that is the only writer
// writes no tombstone in its snapshots, for an item deleted, expired, or
// expired and purged: its files are as they were before tombstones.
func TestSingleWriterKeepsNoTombstones(t *testing.T) {
	t.Parallel()
	dir, clock := t.TempDir(), lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever})
	create(t, c, `{"id":"deleted"}`)
	_, err := c.DeleteItem(ctx, noPK, "deleted", nil)
	require.NoError(t, err)
	create(t, c, `{"id":"purged","ttl":1}`)
	clock.Advance(2 * time.Second)
	_, err = c.Purge(ctx)
	require.NoError(t, err)
	create(t, c, `{"id":"expired","ttl":1}`)
	create(t, c, `{"id":"kept"}`)
	clock.Advance(2 * time.Second)
	require.NoError(t, s.Checkpoint(ctx))
	require.NoError(t, s.Close())
	_, data := snapshotIn(t, dir)
	kinds := ""
	eachFrame(data, func(_ int, payload []byte) { kinds += string(payload[0]) })
	require.Equal(t, "KPFE", kinds, "a state, the live item, the feed's state, the end")
}

// TestReplicaWriteLosesToForgottenDelete: a write concurrent with a
// delete loses to it in a region whose change feed no longer keeps the
// delete: the region's tombstone of the item still says it was deleted.
func TestReplicaWriteLosesToForgottenDelete(t *testing.T) {
	clock := lethe.NewManualClock(t0)
	a, b := writeRegionPair(t, clock, 0, 2) // a's feed keeps the default, b's 2 changes
	v1 := create(t, a, `{"id":"x","n":1}`)
	for _, ch := range changesOf(t, a, 0) {
		resolved(t, b, ch, lethe.ConflictRule{})
	}
	clock.Advance(time.Second)
	v2, err := a.ReplaceItem(ctx, noPK, "x", []byte(`{"id":"x","n":2}`), nil) // concurrent with b's delete
	require.NoError(t, err)
	_, err = b.DeleteItem(ctx, noPK, "x", nil)
	require.NoError(t, err)
	for _, id := range []string{"y1", "y2"} { // b's feed forgets x's delete
		create(t, b, `{"id":"`+id+`"}`)
	}
	for _, ch := range changesOf(t, a, 0) {
		if ch.ETag != v2.ETag {
			continue
		}
		require.Equal(t, v1.ETag, ch.Replaces)
		out := resolved(t, b, ch, lethe.ConflictRule{})
		require.True(t, out.Conflict, "the replace was made without the delete")
		require.False(t, out.Applied, "a delete wins over every write concurrent with it")
	}
	require.Empty(t, readOrNil(t, b, "x"))
}
