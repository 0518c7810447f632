package lethe

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/lethedb/lethe/internal/vfs"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWALLostTickets: the tickets of the writes a full disk refused stay
// refused once the log heals and its end passes them, for a waiter that
// wakes late (wait) and for a container's queue of pending changes
// (durable, lostIn): a heal never turns a refused write into a durable
// one.
func TestWALLostTickets(t *testing.T) {
	t.Parallel()
	efs := vfstest.NewErrorFS(vfs.OS)
	w, err := openWAL(efs, t.TempDir(), newStoreID(), 1, SyncAlways, nil, nil)
	require.NoError(t, err)
	defer w.close()
	w.retryEvery = 0
	add := func() (uint64, error) { return w.addContainer(frameSettings, 1, 0, []byte("{}")) }

	kept, err := add()
	require.NoError(t, err)
	require.NoError(t, w.wait(kept))
	efs.SetFull(true)
	refused, err := add()
	require.NoError(t, err, "appended: the write fails at the disk")
	require.ErrorIs(t, w.wait(refused), syscall.ENOSPC)
	_, err = add()
	require.Error(t, err, "still full: the retry fails")

	efs.SetFull(false)
	healed, err := add()
	require.NoError(t, err, "with room, the log heals")
	require.NoError(t, w.wait(healed))
	require.Greater(t, healed, refused)

	assert.Error(t, w.wait(refused), "a refused write stays refused")
	end, lost, failed := w.durable()
	require.NoError(t, failed)
	assert.GreaterOrEqual(t, end, refused)
	assert.Error(t, lostIn(lost, refused))
	assert.NoError(t, lostIn(lost, kept))
	assert.NoError(t, lostIn(lost, healed))
}

// TestRecordArena: records copied into the arena read back as written,
// after many more, and lie side by side, many to a block; a large one is
// copied on its own.
func TestRecordArena(t *testing.T) {
	t.Parallel()
	var a recordArena
	var recs []record
	var want []string
	total := 0
	for i := range 5000 {
		b := []byte(strings.Repeat(strconv.Itoa(i), 1+i%50))
		recs = append(recs, a.copy(b))
		want = append(want, string(b))
		total += len(b)
		b[0] = 'x' // the arena holds a copy
	}
	blocks := 1
	for i, rec := range recs {
		require.Equal(t, want[i], string(rec), "record %d", i)
		if i > 0 && unsafe.Pointer(unsafe.StringData(string(rec))) != unsafe.Add(unsafe.Pointer(unsafe.StringData(string(recs[i-1]))), len(recs[i-1])) {
			blocks++
		}
	}
	const longest = 4 * 50 // a block is left when the next record does not fit
	assert.LessOrEqual(t, blocks, total/(arenaBlock-longest)+1, "%d bytes of records in blocks of %d", total, arenaBlock)
	big := make([]byte, arenaBlock)
	rec := a.copy(big)
	assert.Len(t, string(rec), arenaBlock)
	assert.Equal(t, blocks, a.made, "blocks made as records came, none reserved")
}

// TestRecordArenaReserve: records copied after reserve land in the blocks
// reserved, allocating nothing more, and read back as written.
func TestRecordArenaReserve(t *testing.T) {
	b := []byte(strings.Repeat("r", 300))
	const size = 1000 * 300
	blocks := size / arenaBlock
	fits := blocks * (arenaBlock / len(b)) // the records the reserved blocks hold
	recs := make([]record, fits)
	var a recordArena
	allocs := testing.AllocsPerRun(3, func() {
		a = recordArena{}
		a.reserve(size)
		for i := range recs {
			recs[i] = a.copy(b)
		}
	})
	assert.InDelta(t, float64(blocks+1), allocs, 1, "the blocks and their list, then none for %d records", fits)
	assert.Zero(t, a.made, "no block made on demand")
	assert.Empty(t, a.free, "every block reserved used")
	for _, rec := range recs {
		require.Equal(t, string(b), string(rec))
	}
	a.copy(b)
	assert.Equal(t, 1, a.made, "past the reserve, a block is made")
}
