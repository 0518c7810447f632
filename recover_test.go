package lethe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/internal/manifest"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomEntries returns n expiry entries whose instants lie in [base,
// base+spread), with extremes some at the extremes, with write sequence
// numbers from a small space, so that ties of instants and of both come up.
func randomEntries(rng *rand.Rand, n int, base, spread int64, extremes bool) []expiryEntry {
	es := make([]expiryEntry, n)
	for i := range es {
		at := base + rng.Int64N(spread)
		switch r := rng.IntN(50); {
		case extremes && r == 0:
			at = expiredForGood
		case extremes && r == 1:
			at = never
		}
		es[i] = expiryEntry{at: at, rec: sentinelRecord(rng.Uint64N(uint64(n) + 1))}
	}
	return es
}

// TestSortEntries: recovery's radix sort of expiry entries orders them as
// lessEntry does, for every span of instants (one pass of digits to all
// of them, odd and even counts of passes) and with ties.
func TestSortEntries(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, n := range []int{0, 1, 100, 5000, 70_000} {
		for _, spread := range []int64{1, 1000, 1 << 40, math.MaxInt64} {
			base := int64(1_700_000_000) * int64(time.Second)
			if spread == math.MaxInt64 {
				base = math.MinInt64
			}
			es := randomEntries(rng, n, base, spread, true)
			want := slices.Clone(es)
			slices.SortFunc(want, compareEntries)
			sortEntries(es, nil)
			require.Equal(t, want, es, "n %d spread %d", n, spread)
		}
	}
}

// BenchmarkSortEntries sorts a million entries written over an hour, by
// recovery's radix sort and by a comparison sort.
func BenchmarkSortEntries(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	es := randomEntries(rng, 1_000_000, 1_700_000_000*int64(time.Second), int64(time.Hour), false)
	for _, sort := range []struct {
		name string
		fn   func([]expiryEntry)
	}{
		{"radix", func(es []expiryEntry) { sortEntries(es, nil) }},
		{"pdq", func(es []expiryEntry) { slices.SortFunc(es, compareEntries) }},
	} {
		b.Run(sort.name, func(b *testing.B) {
			b.ReportAllocs()
			work := make([]expiryEntry, len(es))
			for b.Loop() {
				b.StopTimer()
				copy(work, es)
				b.StartTimer()
				sort.fn(work)
			}
		})
	}
}

// TestRecoverMany recovers a container large enough that recovery sorts
// and builds its two expiry trees on two goroutines (run it under -race):
// items with their own ttl, inheriting the default and never expiring,
// replaced and deleted, some expired by the time the store reopens, from
// the log alone, from a snapshot, and from a snapshot with a log after it.
// The store holds what it held, live, and its indexes agree.
func TestRecoverMany(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, mode := range []string{"log", "snapshot", "snapshot+log"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			clock := NewManualClock(time.Unix(1_700_000_000, 0))
			open := func() *Store {
				s, err := Open(&Options{Dir: dir, Clock: clock, Sync: SyncNever, Reaper: ReaperOptions{Disabled: true}})
				require.NoError(t, err)
				return s
			}
			s := open()
			c, err := s.CreateContainer(ctx, ContainerProperties{ID: "c", DefaultTimeToLive: 100})
			require.NoError(t, err)
			const n = 30_000
			for i := range n {
				if i%1000 == 0 {
					clock.Advance(time.Second)
				}
				if mode == "snapshot+log" && i == n/2 {
					require.NoError(t, s.Checkpoint(ctx))
				}
				ttl := []string{"", `,"ttl":30`, `,"ttl":300`, `,"ttl":-1`}[i%4]
				_, err := c.UpsertItem(ctx, NewPartitionKey(), fmt.Appendf(nil, `{"id":"i%d"%s}`, i%(n-4000), ttl), nil)
				require.NoError(t, err)
				if i%7 == 0 {
					_, err := c.DeleteItem(ctx, NewPartitionKey(), fmt.Sprintf("i%d", i/7), nil)
					require.True(t, err == nil || errors.Is(err, ErrNotFound), "%v", err)
				}
			}
			if mode == "snapshot" {
				require.NoError(t, s.Checkpoint(ctx))
			}
			clock.Advance(25 * time.Second) // the own ttl 30 items of the first seconds expire
			want := liveRecords(c)
			st := c.Stats()
			require.NoError(t, s.Close())

			s = open()
			defer s.Close()
			c, err = s.Container("c")
			require.NoError(t, err)
			require.Equal(t, want, liveRecords(c))
			require.Equal(t, int64(len(want)), s.Recovery().Items)
			require.Equal(t, st.ExpiredPending, s.Recovery().Expired)
			require.Positive(t, s.Recovery().Expired)
			checkInvariants(t, c, mode)
		})
	}
}

// liveRecords returns the live records of c, by key.
func liveRecords(c *Container) map[string]record {
	now := c.store.clock.now()
	out := map[string]record{}
	for i := range c.shards {
		c.shards[i].items.all(func(rec record) bool {
			if c.rule.live(rec, now) {
				out[rec.key()] = rec
			}
			return true
		})
	}
	return out
}

// TestFramesStopsOnError: frames, which reads on one goroutine and
// replays on the caller's, gives every frame before the first error to
// the replay, in order, and none after; it reports the error of the
// replay or of damage at that frame's offset, and leaves no goroutine
// behind, wherever in a batch the error falls.
func TestFramesStopsOnError(t *testing.T) {
	const n = 8 * framesPerBatch // more than the channel between them holds
	data := appendHeader(nil, walMagic, storeID{}, 1)
	var offs []int64
	for i := range n {
		offs = append(offs, int64(len(data)))
		b, start := beginFrame(data)
		data = endFrame(append(b, 'X', byte(i), byte(i>>8)), start)
	}
	before := runtime.NumGoroutine()
	r := &replayer{version: walVersion, file: "f"}
	for _, at := range []int{0, 1, framesPerBatch - 1, framesPerBatch, framesPerBatch + 1, n - 1} {
		for _, damage := range []bool{false, true} {
			in := data
			if damage {
				in = slices.Clone(data)
				in[offs[at]+frameHeader+1]++ // its checksum fails
			}
			seen := 0
			end, err := r.frames(in, false, func(f *frame) error {
				require.Equal(t, offs[seen], f.off, "the frames come in order")
				if seen == at {
					return errors.New("refused")
				}
				seen++
				return nil
			})
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce, "at %d, damage %v", at, damage)
			require.Equal(t, offs[at], ce.Offset)
			require.Equal(t, offs[at], end)
			require.Equal(t, at, seen, "the frames before the error are replayed")
			want := "refused"
			if damage {
				want = "the frame's checksum does not match"
			}
			require.Equal(t, want, ce.Reason)
		}
	}
	end, err := r.frames(data, false, func(*frame) error { return nil })
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), end)
	for i := 0; runtime.NumGoroutine() > before; i++ {
		require.Less(t, i, 5000, "%d goroutines, %d before: the reading goroutines do not end", runtime.NumGoroutine(), before)
		time.Sleep(time.Millisecond) // they end just after frames returns
	}
}

// TestRecoverySizesTables: recovery makes each shard's id table large
// enough for its share of a container's items before they arrive, so
// that none grows as they load: from the item counts the manifest keeps
// (written at Close), from a snapshot or from a log alone; and, for an
// older store whose manifest keeps none, from a snapshot's items counted
// per container first (countPuts). Each container's count is its own.
func TestRecoverySizesTables(t *testing.T) {
	t.Parallel()
	want := map[string]int{"a": 3000, "b": 40}
	for _, tc := range []struct {
		name       string
		checkpoint bool
		oldFormat  bool // the manifest keeps no item counts
	}{
		{"log", false, false},
		{"snapshot", true, false},
		{"snapshot, older manifest", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(&Options{Dir: dir, Sync: SyncNever})
			require.NoError(t, err)
			for id, n := range want {
				c, err := s.CreateContainer(t.Context(), ContainerProperties{ID: id})
				require.NoError(t, err)
				for i := range n {
					_, err := c.UpsertItem(t.Context(), NewPartitionKey(), []byte(`{"id":"`+strconv.Itoa(i)+`"}`), nil)
					require.NoError(t, err)
				}
			}
			if tc.checkpoint {
				require.NoError(t, s.Checkpoint(t.Context()))
			}
			require.NoError(t, s.Close())

			m, err := readManifest(vfs.OS, dir)
			require.NoError(t, err)
			counts := map[string]int{}
			for _, ic := range m.Items {
				assert.Equal(t, s.containers[ic.ID].created, ic.Created, "container %s", ic.ID)
				counts[ic.ID] = ic.N
			}
			assert.Equal(t, want, counts, "the manifest's item counts")
			if tc.checkpoint {
				snaps, err := filepath.Glob(filepath.Join(dir, "snap-*.db"))
				require.NoError(t, err)
				require.Len(t, snaps, 1)
				data, err := os.ReadFile(snaps[0])
				require.NoError(t, err)
				assert.Equal(t, want, countPuts(data[fileHeaderV4:]))
			}
			if tc.oldFormat {
				m.Items = nil
				writeManifestFile(t, dir, m)
			}

			s, err = Open(&Options{Dir: dir, Sync: SyncNever})
			require.NoError(t, err)
			defer s.Close()
			for id, n := range want {
				c := s.containers[id]
				mean := float64(n) / shardCount
				per := int(mean + 4*math.Sqrt(mean) + 1)
				reserved := per*maxLoadDen/maxLoadNum + 1
				for i := range c.shards {
					if c.shards[i].items.n > per {
						continue // past four standard deviations (the hash seed is random): it may grow
					}
					assert.Equal(t, max(minTableSize, reserved), len(c.shards[i].items.slots), "container %s shard %d grew", id, i)
				}
			}
		})
	}
}

// TestRecoveryReservesRecords: Open's recovery allocates the blocks for
// the records it reads before it reads them (replayer.reserveAhead), from
// the sizes of the snapshot and every segment, sealed or not (the store
// still ran), as the file system gives them, when it reads the first
// file: no block is made as records come, and few are left over. Check's
// (dry) reserves none: its blocks are made as its records come.
func TestRecoveryReservesRecords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		checkpoint bool // a snapshot, then more writes
		running    bool // the last segment not sealed: the store has not closed
	}{
		{"log of sessions", false, false},
		{"snapshot and log", true, false},
		{"log, last segment not sealed", false, true},
		{"snapshot, segment not sealed", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			checkpoint := -1
			if tc.checkpoint {
				checkpoint = 1
			}
			s, n := writeSessions(t, dir, 3, 3000, checkpoint, tc.running)
			if tc.running {
				defer s.Close()
			}
			m, err := readManifest(vfs.OS, dir)
			require.NoError(t, err)
			o, err := Options{Dir: dir}.withDefaults()
			require.NoError(t, err)
			ds := &Store{clock: newStoreClock(nil), opts: o, containers: make(map[string]*Container), storeID: m.ID()}
			dry, _, _, err := ds.recover(dir, m, true)
			require.NoError(t, err)
			require.Equal(t, int64(n), ds.recovery.Items)
			assert.Empty(t, dry.reading.free, "blocks reserved by Check")
			assert.Positive(t, dry.reading.made, "blocks made by Check as the records came")

			ds = &Store{clock: newStoreClock(nil), opts: o, containers: make(map[string]*Container), storeID: m.ID()}
			r, _, _, err := ds.recover(dir, m, false) // nothing to repair or remove: it changes nothing
			require.NoError(t, err)
			require.Equal(t, int64(n), ds.recovery.Items)
			assert.Zero(t, r.reading.made, "blocks made as the records came")
			var read int64 // the bytes of the files read
			if ds.recovery.Snapshot != "" {
				fi, err := os.Stat(filepath.Join(dir, ds.recovery.Snapshot))
				require.NoError(t, err)
				read += fi.Size()
			}
			for _, size := range r.sizes {
				read += size
			}
			assert.Less(t, int64(len(r.reading.free)*arenaBlock), read/8, "blocks left over, of %d bytes read", read)
		})
	}
}

// writeSessions writes a store in dir over sessions opens of it, each
// upserting per items of some 300 bytes to container "c" (made in the
// first), with a checkpoint at the end of session checkpoint (-1: none).
// Each session closes the store, but for running the last, whose store it
// returns open; it returns how many items it wrote.
func writeSessions(t *testing.T, dir string, sessions, per, checkpoint int, running bool) (*Store, int) {
	t.Helper()
	var s *Store
	n := 0
	for session := range sessions {
		var err error
		s, err = Open(&Options{Dir: dir, Sync: SyncNever, Reaper: ReaperOptions{Disabled: true}})
		require.NoError(t, err)
		if session == 0 {
			_, err := s.CreateContainer(t.Context(), ContainerProperties{ID: "c", DefaultTimeToLive: 3600})
			require.NoError(t, err)
		}
		c, err := s.Container("c")
		require.NoError(t, err)
		for range per {
			_, err := c.UpsertItem(t.Context(), NewPartitionKey(), fmt.Appendf(nil, `{"id":"%d","pad":"%0200d"}`, n, n), nil)
			require.NoError(t, err)
			n++
		}
		if session == checkpoint {
			require.NoError(t, s.Checkpoint(t.Context()))
		}
		if session < sessions-1 || !running {
			require.NoError(t, s.Close())
		}
	}
	return s, n
}

// TestRecoveryLyingManifest: a manifest whose checksum is right but whose
// numbers are absurd (a segment sealed at 1 TiB, the first after a snapshot
// or the second of the log; a container of MaxInt items) costs Open and
// Check no more heap than the files can hold (replayer.sizeFiles): what a
// lie about a size makes Open and Check allocate before the size check
// fails them, and what a lie about a count makes them allocate for tables,
// is bounded by the files' size, on top of what the honest manifest costs.
// The lies about sizes still fail with their *CorruptionError.
func TestRecoveryLyingManifest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		snapshot bool
		sealed   int // the index in the manifest's sealed segments of the one whose size it lies about; -1: it lies about the item count
	}{
		{"second segment", false, 1},
		{"segment after a snapshot", true, 0},
		{"item count", false, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			checkpoint := -1
			if tc.snapshot {
				checkpoint = 0
			}
			writeSessions(t, dir, 2, 2000, checkpoint, false)
			var files int64
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "wal-") || strings.HasPrefix(e.Name(), "snap-") {
					fi, err := e.Info()
					require.NoError(t, err)
					files += fi.Size()
				}
			}
			open := func() error {
				s, err := Open(&Options{Dir: dir, Sync: SyncNever, Reaper: ReaperOptions{Disabled: true}})
				if err == nil {
					err = s.Close()
				}
				return err
			}
			check := func() error { _, err := Check(dir); return err }
			honest := [2]uint64{heapAllocated(t, open), heapAllocated(t, check)}
			// Open rewrote the manifest: the lie goes into its own.
			m, err := readManifest(vfs.OS, dir)
			require.NoError(t, err)
			require.Len(t, m.Sealed, 3, "the log's segments, sealed")
			var file string // the file the error names
			if tc.sealed >= 0 {
				m.Sealed[tc.sealed].Size = 1 << 40
				file = filepath.Join(dir, segmentName(m.Sealed[tc.sealed].N))
			} else {
				m.Items[0].N = math.MaxInt
			}
			writeManifestFile(t, dir, m)
			for i, f := range []func() error{open, check} {
				var err error
				got := heapAllocated(t, func() error { err = f(); return nil })
				if file == "" {
					require.NoError(t, err)
				} else {
					var ce *CorruptionError
					require.ErrorAs(t, err, &ce)
					assert.Equal(t, file, ce.File)
					assert.Contains(t, ce.Reason, "MANIFEST records it sealed at 1099511627776")
				}
				assert.Less(t, got, honest[i]+uint64(files)+1<<20, "%s: bytes allocated, %d honestly, files of %d bytes", []string{"Open", "Check"}[i], honest[i], files)
			}
		})
	}
}

// heapAllocated returns the bytes f allocates on the heap (all goroutines'
// while it runs: the tests that call it run alone), failing t if f fails.
func heapAllocated(t *testing.T, f func() error) uint64 {
	t.Helper()
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	require.NoError(t, f())
	metrics.Read(sample)
	return sample[0].Value.Uint64() - before
}

// TestMaxTag: recovery finds the highest write sequence number of the
// item writes it replays by comparing their ETags as strings
// (replayer.maxTag), which orders them as their numbers: across digits and
// letters, lengths of the hex number, and the extremes.
func TestMaxTag(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	seqs := []uint64{0, 1, 9, 10, 15, 16, 0x9f, 0xa0, 0xff, 0x100, 1<<63 - 1, 1 << 63, math.MaxUint64}
	for range 1000 {
		seqs = append(seqs, rng.Uint64()>>rng.IntN(64))
	}
	tag := func(seq uint64) record { return sentinelRecord(seq) }
	for _, a := range seqs {
		for _, b := range seqs[:20] {
			require.Equal(t, a < b, tag(a).etag() < tag(b).etag(), "%d < %d", a, b)
		}
	}
	r := &replayer{maxSeq: 5}
	r.sawSeqs()
	require.Equal(t, uint64(5), r.maxSeq, "no item write: maxSeq stays")
	for _, seq := range seqs {
		if e := tag(seq).etag(); e > r.maxTag {
			r.maxTag = e
		}
	}
	r.sawSeqs()
	require.Equal(t, uint64(math.MaxUint64), r.maxSeq)
}

// TestRecoveryAbsurdItemCount: a manifest whose checksum is right but
// whose item count is absurd (MaxInt, or negative) opens with its items,
// the tables sized by at most what the files can hold, here a few items:
// the count is a hint, not trusted.
func TestRecoveryAbsurdItemCount(t *testing.T) {
	t.Parallel()
	for _, n := range []int{math.MaxInt, -5} {
		dir := t.TempDir()
		s, err := Open(&Options{Dir: dir, Sync: SyncNever})
		require.NoError(t, err)
		c, err := s.CreateContainer(t.Context(), ContainerProperties{ID: "a"})
		require.NoError(t, err)
		_, err = c.UpsertItem(t.Context(), NewPartitionKey(), []byte(`{"id":"x"}`), nil)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		m, err := readManifest(vfs.OS, dir)
		require.NoError(t, err)
		require.Len(t, m.Items, 1)
		m.Items[0].N = n
		writeManifestFile(t, dir, m)

		s, err = Open(&Options{Dir: dir, Sync: SyncNever})
		require.NoError(t, err, "count %d", n)
		r, err := s.containers["a"].ReadItem(t.Context(), NewPartitionKey(), "x", nil)
		require.NoError(t, err)
		assert.Contains(t, string(r.Value), `"id":"x"`)
		for i := range s.containers["a"].shards {
			assert.LessOrEqual(t, len(s.containers["a"].shards[i].items.slots), minTableSize, "count %d", n)
		}
		require.NoError(t, s.Close())
	}
}

// writeManifestFile replaces dir's manifest with m, as a store of
// another version might have written it.
func writeManifestFile(t *testing.T, dir string, m *manifest.Manifest) {
	t.Helper()
	data, err := json.Marshal(m)
	require.NoError(t, err)
	data = fmt.Appendf(data, "\n%08x\n", crc32.Checksum(data, castagnoli))
	require.NoError(t, os.WriteFile(filepath.Join(dir, manifestName), data, 0o644))
}

// TestRecoverDropInBatch: a container dropped and made again under its id
// between two writes of the same batch of frames that recovery prefetches
// (framesPerBatch): the write after is the new container's, not the one
// prefetch found.
func TestRecoverDropInBatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(&Options{Dir: dir, Sync: SyncNever, Reaper: ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	c, err := s.CreateContainer(t.Context(), ContainerProperties{ID: "c"})
	require.NoError(t, err)
	put := func(c *Container, id string) {
		_, err := c.UpsertItem(t.Context(), NewPartitionKey(), []byte(`{"id":"`+id+`"}`), nil)
		require.NoError(t, err)
	}
	// The frames: the container, its items, its drop, the new one, its
	// item; the last three in the batch after the first.
	for i := range framesPerBatch + framesPerBatch/2 - 3 {
		put(c, strconv.Itoa(i))
	}
	put(c, "last")
	// No snapshot, which the drop asks for, may replace the log.
	s.checkpointer.mu.Lock()
	s.checkpointer.closed = true
	s.checkpointer.mu.Unlock()
	require.NoError(t, s.DeleteContainer(t.Context(), "c"))
	c, err = s.CreateContainer(t.Context(), ContainerProperties{ID: "c"})
	require.NoError(t, err)
	put(c, "last")
	require.NoError(t, s.Close())

	s, err = Open(&Options{Dir: dir, Sync: SyncNever, Reaper: ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	defer s.Close()
	require.Empty(t, s.Recovery().Snapshot)
	c, err = s.Container("c")
	require.NoError(t, err)
	assert.Equal(t, int64(1), c.Stats().Items)
	_, err = c.ReadItem(t.Context(), NewPartitionKey(), "last", nil)
	require.NoError(t, err)
}

// TestIsLowerHex: every byte value, alone and among digits.
func TestIsLowerHex(t *testing.T) {
	t.Parallel()
	for c := range 256 {
		want := '0' <= c && c <= '9' || 'a' <= c && c <= 'f'
		require.Equal(t, want, isLowerHex([]byte{byte(c)}), "byte %#x", c)
		require.Equal(t, want, isLowerHex([]byte{'0', 'f', byte(c), '9'}), "byte %#x among digits", c)
	}
	require.True(t, isLowerHex(nil))
	require.True(t, isLowerHex([]byte("0123456789abcdef")))
}
