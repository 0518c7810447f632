package lethe_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/stretchr/testify/require"
)

// The fuzzers of recovery: any bytes in a log segment or a snapshot must
// make Open fail with a *CorruptionError, or succeed with a store whose
// invariants hold, that reads, and that opens again the same.
//
// The fuzzed bytes are laid out as the mode says (mode&3): as the whole
// file; after a valid file header; or after a valid header as a sequence
// of payloads (mode&3 is 2 or 3), each a uvarint length and that many bytes, which the
// harness frames with their lengths and checksums, so that the fuzzer
// reaches the decoding of the frames' payloads.

const (
	fuzzRaw = iota
	fuzzAfterHeader
	fuzzFramed
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fuzzFile lays out data as mode says, for a file that starts with magic.
func fuzzFile(magic string, mode byte, data []byte) []byte {
	switch mode & 3 {
	case fuzzRaw:
		return data
	case fuzzAfterHeader:
		return append([]byte(magic+"\x03"), data...)
	}
	out := []byte(magic + "\x03")
	for len(data) > 0 {
		n, k := binary.Uvarint(data)
		if k <= 0 {
			return append(out, data...)
		}
		data = data[k:]
		n = min(n, uint64(len(data)))
		payload := data[:n]
		data = data[n:]
		var h [12]byte
		binary.LittleEndian.PutUint32(h[0:], uint32(n))
		binary.LittleEndian.PutUint32(h[4:], ^uint32(n))
		binary.LittleEndian.PutUint32(h[8:], crc32.Checksum(payload, castagnoli))
		out = append(append(out, h[:]...), payload...)
	}
	return out
}

// unframe turns a file's frames into the framed layout of fuzzFile.
func unframe(file []byte) []byte {
	var out []byte
	for off := headerLen(file); off+12 <= len(file); {
		n := int(binary.LittleEndian.Uint32(file[off:]))
		if off+12+n > len(file) {
			break
		}
		out = binary.AppendUvarint(out, uint64(n))
		out = append(out, file[off+12:off+12+n]...)
		off += 12 + n
	}
	return out
}

// headerLen returns the size of a file's header: 9 bytes up to format 3,
// 33 from format 4 (the store's id and the file's number follow).
func headerLen(file []byte) int {
	if len(file) > 8 && file[8] >= 4 {
		return 33
	}
	return 9
}

// fuzzFiles are the files of a small store, for the seeds and the fuzzed
// directories: its whole log from the start (log), and a snapshot with the
// segment after it (snap, after).
type fuzzFiles struct{ log, snap, after []byte }

func makeFuzzFiles(t testing.TB) fuzzFiles {
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 10, Throughput: 1000})
	p := partitioned(t, s, "p", lethe.TTLNever, "/tenant", "/user")
	pp, err := p.Read(ctx)
	require.NoError(t, err)
	pp.ChangeFeedPolicy = &lethe.ChangeFeedPolicy{MaxChanges: 100} // its changes are logged for the feed
	require.NoError(t, p.Replace(ctx, pp))
	d := mustContainer(t, s, lethe.ContainerProperties{ID: "d"})
	write := func(round int) {
		for i := range 6 {
			ttl := []string{"", `,"ttl":5`, `,"ttl":-1`}[i%3]
			upsert(t, c, fmt.Sprintf(`{"id":"i%d","round":%d%s}`, i, round, ttl))
			pk := pkS(fmt.Sprint("t", i%2)).AppendString(fmt.Sprint("u", i%3))
			_, err := p.UpsertItem(ctx, pk, fmt.Appendf(nil, `{"id":"x%d","tenant":"t%d","user":"u%d","n":[%d,{"a":null}]%s}`, i, i%2, i%3, round, ttl), nil)
			require.NoError(t, err)
		}
		_, err := c.DeleteItem(ctx, lethe.NewPartitionKey(), "i1", nil)
		require.NoError(t, err)
		_, err = p.DeleteItem(ctx, pkS("t0").AppendString("u0"), "x0", nil)
		require.NoError(t, err)
		setDefault(t, c, lethe.TTL(20+round))
	}
	write(0)
	create(t, d, `{"id":"gone"}`)
	clock.Advance(6 * time.Second)
	_, err = c.Purge(ctx)
	require.NoError(t, err)
	_, err = p.ReadChangeFeed(ctx, nil) // finds p's expiries, and logs them
	require.NoError(t, err)
	require.NoError(t, s.Close())
	var files fuzzFiles
	files.log, err = os.ReadFile(filepath.Join(dir, "wal-0000000000000001.log"))
	require.NoError(t, err)
	// The deletion of d, as the store logs it (DeleteContainer would start
	// a snapshot that trims the log).
	for rest := unframe(files.log); len(rest) > 0; {
		n, k := binary.Uvarint(rest)
		payload := rest[k : k+int(n)]
		rest = rest[k+int(n):]
		if payload[0] == 'C' && strings.Contains(string(payload), `"ID":"d"`) {
			seq, _ := binary.Uvarint(payload[1:])
			drop := binary.AppendUvarint([]byte{'D'}, seq)
			drop = binary.AppendVarint(drop, clock.Now().UnixNano())
			drop = append(binary.AppendUvarint(drop, 1), 'd')
			files.log = append(files.log, fuzzFile("", fuzzFramed, append(binary.AppendUvarint(nil, uint64(len(drop))), drop...))[1:]...)
		}
	}

	s = openDurable(t, dir, clock)
	c, err = s.Container("c")
	require.NoError(t, err)
	p, err = s.Container("p")
	require.NoError(t, err)
	write(1)
	require.NoError(t, s.Checkpoint(ctx))
	upsert(t, c, `{"id":"later","ttl":100}`)
	require.NoError(t, s.Close())
	for _, name := range lethetesting.DirNames(t, dir) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		switch {
		case strings.HasPrefix(name, "snap-"):
			files.snap = data
		case strings.HasPrefix(name, "wal-"):
			files.after = data
		}
	}
	require.NotNil(t, files.snap)
	return files
}

// addSeeds adds file, as it is, after its header, and framed.
func addSeeds(f *testing.F, file []byte, flags byte) {
	f.Add(flags, file) // fuzzRaw
	f.Add(flags|fuzzAfterHeader, file[9:])
	f.Add(flags|fuzzFramed, unframe(file))
	f.Add(flags|fuzzAfterHeader, file[9:len(file)-3])
}

// FuzzRecoverLog fuzzes a log segment. Mode 4 puts an empty segment after
// it, so that it is not the last; mode 8 puts a snapshot before it.
func FuzzRecoverLog(f *testing.F) {
	files := makeFuzzFiles(f)
	addSeeds(f, files.log, 0)
	addSeeds(f, files.log, 4)
	addSeeds(f, files.after, 8)
	f.Add(byte(fuzzRaw), []byte{})
	f.Add(byte(fuzzRaw|4), []byte("LETHEW"))
	f.Fuzz(func(t *testing.T, mode byte, data []byte) {
		dir := t.TempDir()
		seg := uint64(1)
		if mode&8 != 0 {
			seg = 7
			writeFuzzFile(t, dir, "snap-0000000000000007.db", files.snap)
		}
		writeFuzzFile(t, dir, fmt.Sprintf("wal-%016x.log", seg), fuzzFile("LETHEWAL", mode, data))
		if mode&4 != 0 {
			writeFuzzFile(t, dir, fmt.Sprintf("wal-%016x.log", seg+1), []byte("LETHEWAL\x01"))
		}
		checkFuzzedOpen(t, dir)
	})
}

// FuzzRecoverSnapshot fuzzes a snapshot. The segment after it holds the
// changes that followed it, or with mode 4 nothing.
func FuzzRecoverSnapshot(f *testing.F) {
	files := makeFuzzFiles(f)
	addSeeds(f, files.snap, 0)
	addSeeds(f, files.snap, 4)
	f.Fuzz(func(t *testing.T, mode byte, data []byte) {
		dir := t.TempDir()
		writeFuzzFile(t, dir, "snap-0000000000000003.db", fuzzFile("LETHESNP", mode, data))
		after := files.after
		if mode&4 != 0 {
			after = []byte("LETHEWAL\x01")
		}
		writeFuzzFile(t, dir, "wal-0000000000000003.log", after)
		checkFuzzedOpen(t, dir)
	})
}

func writeFuzzFile(t *testing.T, dir, name string, data []byte) {
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
}

// checkFuzzedOpen opens the store in dir: it must fail with a
// *CorruptionError naming a file of dir (or dir), or succeed with a store whose
// invariants hold, that reads, and that opens again the same.
func checkFuzzedOpen(t *testing.T, dir string) {
	clock := lethe.NewManualClock(t0.Add(10 * time.Second))
	s, err := fuzzOpen(t, dir, clock)
	if err != nil {
		var ce *lethe.CorruptionError
		if !errors.As(err, &ce) {
			t.Fatalf("Open failed, not with a *CorruptionError: %v", err)
		}
		if (ce.File != dir && filepath.Dir(ce.File) != dir) || ce.Reason == "" || ce.Offset < 0 {
			t.Fatalf("a CorruptionError that does not say where: %+v", ce)
		}
		if fi, err := os.Stat(ce.File); err == nil && ce.Offset > fi.Size() {
			t.Fatalf("a CorruptionError past the end of %s (%d bytes): %v", ce.File, fi.Size(), ce)
		}
		return
	}
	first := fuzzState(t, s)
	require.NoError(t, s.Close())
	s, err = fuzzOpen(t, dir, clock)
	require.NoError(t, err, "a store that opened once must open again")
	defer s.Close()
	require.Equal(t, first, fuzzState(t, s), "the second open finds what the first did")
}

// fuzzOpen opens dir, failing t if Open hangs.
func fuzzOpen(t *testing.T, dir string, clock *lethe.ManualClock) (*lethe.Store, error) {
	type result struct {
		s   *lethe.Store
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := lethe.Open(&lethe.Options{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(30 * time.Second):
		t.Fatal("Open hangs")
		return nil, nil
	}
}

// fuzzState checks the invariants of every container of s, reads all of
// it, and returns what it read.
func fuzzState(t *testing.T, s *lethe.Store) []string {
	var state []string
	for _, id := range s.ContainerIDs() {
		c, err := s.Container(id)
		require.NoError(t, err)
		lethe.CheckInvariants(t, c, "after a fuzzed recovery")
		props, err := c.Read(ctx)
		require.NoError(t, err)
		st := c.Stats()
		feed := "no feed"
		if fp := props.ChangeFeedPolicy; fp != nil {
			feed = fmt.Sprintf("feed %+v", *fp)
			props.ChangeFeedPolicy = nil
		}
		state = append(state, fmt.Sprintf("%+v %s %d %d", props, feed, st.Items, st.ExpiredPending))
		for item, err := range c.QueryItems(ctx, "SELECT * FROM c", lethe.NewPartitionKey(), nil) {
			require.NoError(t, err, "container %s", id)
			state = append(state, string(item))
		}
	}
	return state
}

// TestRecoverDuplicateSequence: two items of a container that share a write
// sequence number and an instant (which the store never writes; damage
// with intact checksums) would share one place in the expiry index: Open
// refuses them rather than lose one from it.
func TestRecoverDuplicateSequence(t *testing.T) {
	t.Parallel()
	files := makeFuzzFiles(t)
	var payloads [][]byte
	for rest := unframe(files.log); len(rest) > 0; {
		n, k := binary.Uvarint(rest)
		payloads = append(payloads, rest[k:k+int(n)])
		rest = rest[k+int(n):]
	}
	// The writes of "c" without a ttl of their own: their expiry index
	// entries are (last write, sequence number).
	var inherit [][]byte
	for _, p := range payloads {
		if p[0] == 'P' && p[1] == 1 && p[2] == 'c' {
			rec := p[3:]
			if binary.LittleEndian.Uint32(rec[8:]) == 0 { // the ttl

				inherit = append(inherit, rec)
			}
		}
	}
	require.GreaterOrEqual(t, len(inherit), 2)
	require.Equal(t, inherit[0][:8], inherit[1][:8], "written at the same instant")
	etag := func(rec []byte) []byte { // the sequence number, in hex
		at := 28 + int(binary.LittleEndian.Uint16(rec[16:])) + int(binary.LittleEndian.Uint16(rec[18:]))
		return rec[at : at+16]
	}
	copy(etag(inherit[1]), etag(inherit[0]))
	var data []byte
	for _, p := range payloads {
		data = binary.AppendUvarint(data, uint64(len(p)))
		data = append(data, p...)
	}
	log := fuzzFile("LETHEWAL", fuzzFramed, data)
	for _, tail := range [][]byte{nil, log[9 : 9+20]} {
		// With a torn frame at its end too, which Open must leave as it
		// is when it fails.
		dir := t.TempDir()
		file := append(slices.Clip(log), tail...)
		writeFuzzFile(t, dir, "wal-0000000000000001.log", file)
		_, err := lethe.Open(&lethe.Options{Dir: dir, Clock: lethe.NewManualClock(t0), Reaper: lethe.ReaperOptions{Disabled: true}})
		var ce *lethe.CorruptionError
		require.ErrorAs(t, err, &ce)
		require.Contains(t, ce.Reason, "share the write sequence number")
		after, err := os.ReadFile(filepath.Join(dir, "wal-0000000000000001.log"))
		require.NoError(t, err)
		require.Equal(t, file, after, "a failed Open changes nothing")
	}
}

// TestRecoverFormat1 opens a log of format 1, whose records kept the write
// sequence number in their header and "_ts" and "_etag" at the end of the
// document: the items come back as they were, the store goes on writing in
// the current format, and opens again with both.
func TestRecoverFormat1(t *testing.T) {
	t.Parallel()
	written := t0.Add(-time.Minute).UnixNano()
	v1record := func(id, doc string, ttl int32, seq uint64) []byte {
		var h [28]byte
		binary.LittleEndian.PutUint64(h[0:], uint64(written))
		binary.LittleEndian.PutUint64(h[8:], seq)
		binary.LittleEndian.PutUint32(h[16:], uint32(ttl))
		binary.LittleEndian.PutUint32(h[20:], uint32(len(doc)-1))
		binary.LittleEndian.PutUint16(h[26:], uint16(len(id)))
		tail := fmt.Sprintf(`,"_ts":%d,"_etag":"%016x"}`, written/1e9, seq)
		return append(append(h[:], id...), doc[:len(doc)-1]+tail...)
	}
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	var data []byte
	frame := func(p []byte) { data = append(binary.AppendUvarint(data, uint64(len(p))), p...) }
	frame(str(binary.AppendVarint(binary.AppendUvarint([]byte{'C'}, 1), written), `{"ID":"c","DefaultTimeToLive":3600}`))
	frame(append(str([]byte{'P'}, "c"), v1record("a", `{"id":"a","v":[1,{"w":"x"}]}`, 0, 2)...))
	frame(append(str([]byte{'P'}, "c"), v1record("b", `{"id":"b","ttl":-1}`, -1, 3)...))
	file := fuzzFile("LETHEWAL", fuzzFramed, data)
	file[len("LETHEWAL")] = 1
	dir := t.TempDir()
	writeFuzzFile(t, dir, "wal-0000000000000001.log", file)

	check := func(s *lethe.Store) {
		c, err := s.Container("c")
		require.NoError(t, err)
		a, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "a", nil)
		require.NoError(t, err)
		require.JSONEq(t, fmt.Sprintf(`{"id":"a","v":[1,{"w":"x"}],"_ts":%d,"_etag":"0000000000000002"}`, written/1e9), string(a.Value))
		require.Equal(t, "0000000000000002", a.ETag)
		b, err := c.ReadItem(ctx, lethe.NewPartitionKey(), "b", nil)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf(`{"id":"b","ttl":-1,"_ts":%d,"_etag":"0000000000000003"}`, written/1e9), string(b.Value))
		n := 0
		for item, err := range c.QueryItems(ctx, "SELECT VALUE c._etag FROM c WHERE c._ts > 0 ORDER BY c.id", lethe.NewPartitionKey(), nil) {
			require.NoError(t, err)
			require.Equal(t, []string{`"0000000000000002"`, `"0000000000000003"`, `"0000000000000004"`}[n], string(item))
			n++
		}
	}
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	c, err := s.Container("c")
	require.NoError(t, err)
	create(t, c, `{"id":"c"}`) // sequence numbers go on after the old log's
	check(s)
	require.NoError(t, s.Close())
	s = openDurable(t, dir, clock)
	check(s)
	require.NoError(t, s.Checkpoint(ctx))
	require.NoError(t, s.Close())
	check(openDurable(t, dir, clock))
}
