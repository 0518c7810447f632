package cosmosrest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/logfile"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
)

// durableDB opens a front on dir with the database "db" (made if it is
// not there) and returns the front and the database.
func durableDB(tb testing.TB, dir string) (*Handler, *database) {
	tb.Helper()
	h, err := New(Config{Dir: dir})
	if err != nil {
		tb.Fatal(err)
	}
	if _, ok := h.lookup("db"); !ok {
		rec := httptest.NewRecorder()
		(&request{h: h, w: rec, r: httptest.NewRequest(http.MethodPost, "/dbs", nil), body: []byte(`{"id":"db"}`)}).createDatabase()
		if rec.Code != http.StatusCreated {
			tb.Fatal(rec.Code, rec.Body)
		}
	}
	db, _ := h.lookup("db")
	return h, db
}

// writeOldConflicts writes, in the database directory of "db" under dir,
// the conflicts file of before the log: n conflicts of the container c,
// numbered 1 to n, and a handled mark.
func writeOldConflicts(tb testing.TB, dir string, n int) {
	tb.Helper()
	list := []savedConflict{{Coll: "c", Num: uint64(n), Key: "write:handled"}}
	for i := 1; i <= n; i++ {
		list = append(list, savedConflict{Coll: "c", Num: uint64(i), PK: `["x"]`, ID: fmt.Sprintf("conflict%d", i), ETag: `"e"`,
			Resource: json.RawMessage(fmt.Sprintf(`{"id":"conflict%d"}`, i)), Key: fmt.Sprintf("write:%d", i)})
	}
	b, err := json.Marshal(list)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, dbDirName("db"), conflictsFile), b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkConflictRecord records a conflict in a durable database that
// holds n, and deletes its oldest, keeping n: the cost of recording the
// n-th conflict.
func BenchmarkConflictRecord(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			h, _ := durableDB(b, dir)
			h.Close()
			writeOldConflicts(b, dir, n)
			h, db := durableDB(b, dir)
			defer h.Close()
			pk := lethe.NewPartitionKeyString("x")
			paths := []string{"/pk"}
			loser := []byte(`{"id":"x","pk":"x","v":1}`)
			record := func(i int) {
				if err := db.addConflict("c", paths, pk, "x", "replace", loser, uint64(i), 1_700_000_000, fmt.Sprintf("write:new%d", i), []uint64{0, 1}); err != nil {
					b.Fatal(err)
				}
				db.confl.mu.Lock()
				oldest := db.confl.feeds["c"].conflicts[0].idValue
				db.confl.mu.Unlock()
				if _, ok, err := db.findConflict("c", oldest, true); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
			record(-1) // the first change after a start writes the feeds whole
			b.ResetTimer()
			for i := range b.N {
				record(i)
			}
		})
	}
}

// recordN records conflicts keyed "write:<from>" to "write:<from+n-1>"
// in db's container c, each with the ends given (nil: waiting for the
// feed of region 1 to pass 5 before its mark may be pruned); it returns
// their ids.
func recordN(tb testing.TB, db *database, from, n int, ends []uint64) []string {
	tb.Helper()
	if ends == nil {
		ends = []uint64{0, 5}
	}
	var ids []string
	for i := from; i < from+n; i++ {
		if err := db.addConflict("c", []string{"/pk"}, lethe.NewPartitionKeyString("x"), "x", "replace", []byte(`{"id":"x","pk":"x"}`), uint64(i), 1_700_000_000, fmt.Sprintf("write:%d", i), ends); err != nil {
			tb.Fatal(err)
		}
		db.confl.mu.Lock()
		f := db.confl.feeds["c"]
		ids = append(ids, f.conflicts[len(f.conflicts)-1].idValue)
		db.confl.mu.Unlock()
	}
	return ids
}

// feedState returns db's conflicts of the container c (their ids, in
// order), how many changes it holds handled, and its last number.
func feedState(db *database) (ids []string, handled int, next uint64) {
	db.confl.mu.Lock()
	defer db.confl.mu.Unlock()
	f := db.confl.feeds["c"]
	if f == nil {
		return nil, 0, 0
	}
	for _, c := range f.conflicts {
		ids = append(ids, c.idValue)
	}
	return ids, len(f.handled), f.next
}

// TestConflictLogReadsOldFile: a conflicts file written before the log is
// read (its conflicts, its handled mark, its numbers), and the first
// change writes the log and removes the file; after a restart the log
// holds it all.
func TestConflictLogReadsOldFile(t *testing.T) {
	dir := t.TempDir()
	h, _ := durableDB(t, dir)
	h.Close()
	writeOldConflicts(t, dir, 3)
	h, db := durableDB(t, dir)
	ids, handled, next := feedState(db)
	if fmt.Sprint(ids) != "[conflict1 conflict2 conflict3]" || handled != 4 || next != 3 {
		t.Fatalf("read from the old file: %v, %d handled, next %d", ids, handled, next)
	}
	added := recordN(t, db, 10, 1, nil)
	h.Close()
	dbDir := filepath.Join(dir, dbDirName("db"))
	if _, err := os.Stat(filepath.Join(dbDir, conflictsFile)); !os.IsNotExist(err) {
		t.Errorf("the old file is still there: %v", err)
	}
	h, db = durableDB(t, dir)
	defer func() { h.Close() }()
	ids, handled, next = feedState(db)
	if want := fmt.Sprint([]string{"conflict1", "conflict2", "conflict3", added[0]}); fmt.Sprint(ids) != want || handled != 5 || next != 4 {
		t.Errorf("after a restart: %v, %d handled, next %d; want %s, 5, 4", ids, handled, next, want)
	}
	if !db.conflictHandled("c", 0, 0, "write:handled") {
		t.Error("the old file's handled mark is lost")
	}
	// An old file left beside the log (a crash before its removal) is not
	// read, and goes at the next compaction.
	h.Close()
	writeOldConflicts(t, dir, 7)
	h, db = durableDB(t, dir)
	if ids, _, _ = feedState(db); len(ids) != 4 {
		t.Errorf("with a log, the old file was read: %v", ids)
	}
	recordN(t, db, 20, 1, nil)
	if _, err := os.Stat(filepath.Join(dbDir, conflictsFile)); !os.IsNotExist(err) {
		t.Errorf("the old file left beside the log is still there: %v", err)
	}
}

// TestConflictLogCompacts: a feed whose conflicts are recorded and deleted
// keeps a log of the size of what it holds, not of what it was ever
// given; the handled marks whose positions the region passed are pruned,
// the others kept, across a restart, and a change up to those positions
// is known as handled.
func TestConflictLogCompacts(t *testing.T) {
	dir := t.TempDir()
	h, db := durableDB(t, dir)
	churn := func(from int) {
		for i := from; i < from+300; i++ {
			id := recordN(t, db, i, 1, nil)[0]
			if _, ok, err := db.findConflict("c", id, true); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
	}
	churn(0)
	if _, handled, _ := feedState(db); handled != 300 {
		t.Fatalf("%d handled, want 300: region 1's feed has not passed them", handled)
	}
	db.applied("c", 1, 2, 5) // region 1's feed passes them
	churn(300)
	kept := recordN(t, db, 600, 1, []uint64{0, 6})
	path := filepath.Join(dir, dbDirName("db"), conflictLogFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 100<<10 {
		t.Errorf("the log holds %d bytes after 600 conflicts deleted", st.Size())
	}
	if _, handled, _ := feedState(db); handled > 2*minConflictLog {
		t.Errorf("%d handled in memory, want the passed ones pruned", handled)
	}
	h.Close()
	h, db = durableDB(t, dir)
	defer h.Close()
	ids, handled, next := feedState(db)
	if fmt.Sprint(ids) != fmt.Sprint(kept) || handled > 2*minConflictLog || next != 601 {
		t.Errorf("after a restart: %v, %d handled, next %d; want %v, the pruned ones gone, 601", ids, handled, next, kept)
	}
	if !db.conflictHandled("c", 1, 5, "write:3") || db.conflictHandled("c", 1, 6, "write:3") {
		t.Error("a change at region 1's position 5 is not known handled, or one after it is")
	}
	if !db.conflictHandled("c", 1, 7, "write:600") {
		t.Error("a kept conflict's change is not known handled")
	}
}

// TestConflictLogPowerCut: a power cut at any sync of the conflicts log
// (an append, a compaction) loses no conflict, and no delete, that was
// acknowledged, and gives no number again; the log is read after it.
func TestConflictLogPowerCut(t *testing.T) {
	for seed := range uint64(3) {
		for cut := 1; cut < 260; cut += 9 {
			pfs := vfstest.NewPowerFS(seed)
			cfg := Config{Dir: "/data"}
			vfs.SetConfigFS(&cfg, pfs)
			open := func() (*Handler, *database) {
				h, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				db, ok := h.lookup("db")
				if !ok {
					t.Fatalf("seed %d cut %d: the database is gone: %v", seed, cut, h.unavailable)
				}
				return h, db
			}
			h, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			(&request{h: h, w: rec, r: httptest.NewRequest(http.MethodPost, "/dbs", nil), body: []byte(`{"id":"db"}`)}).createDatabase()
			if rec.Code != http.StatusCreated {
				t.Fatal(rec.Code)
			}
			db, _ := h.lookup("db")
			pfs.CutAtSync(cut)
			present := map[string]bool{} // acknowledged: recorded (true) or deleted (false)
			keys := map[string]string{}
			var live []string
			var last uint64
		ops:
			for i := range 200 {
				key := fmt.Sprintf("write:%d", i)
				if err := db.addConflict("c", []string{"/pk"}, lethe.NewPartitionKeyString("x"), "x", "create", []byte(`{"id":"x","pk":"x"}`), uint64(i), 1, key, []uint64{0, 9}); err != nil {
					break
				}
				ids, _, next := feedState(db)
				id := ids[len(ids)-1]
				present[id], keys[id], last = true, key, next
				live = append(live, id)
				if i%3 == 2 {
					victim := live[0]
					live = live[1:]
					if _, _, err := db.findConflict("c", victim, true); err != nil {
						delete(present, victim) // either way
						break ops
					}
					present[victim] = false
				}
			}
			h.Close()
			pfs.Restart()
			h, db = open()
			for id, want := range present {
				if _, got, _ := db.findConflict("c", id, false); got != want {
					t.Errorf("seed %d cut %d: the conflict %s, acknowledged %v, is there: %v", seed, cut, id, want, got)
				}
				if !db.conflictHandled("c", 0, 0, keys[id]) {
					t.Errorf("seed %d cut %d: the change of the conflict %s is no longer handled", seed, cut, id)
				}
			}
			if _, _, next := feedState(db); next < last {
				t.Errorf("seed %d cut %d: the last number is %d after the cut, %d was given", seed, cut, next, last)
			}
			// The log takes changes again, and keeps them.
			id := recordN(t, db, 1000, 1, nil)[0]
			h.Close()
			pfs.Restart()
			h, db = open()
			if _, ok, _ := db.findConflict("c", id, false); !ok {
				t.Errorf("seed %d cut %d: a conflict recorded after the cut is lost", seed, cut)
			}
			h.Close()
		}
	}
}

// TestConflictLogDamaged: a conflicts log damaged before its end (a frame
// whose checksum fails with frames after it, a record that is not one)
// is an error naming the file: CheckDir reports it and the database is
// not served; a torn last frame is cut off.
func TestConflictLogDamaged(t *testing.T) {
	frames := func(recs ...conflictRecord) []byte {
		b := append([]byte(conflictLogMagic), conflictLogVersion)
		for _, r := range recs {
			var err error
			if b, err = appendConflictFrame(b, r); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	add := func(n uint64) conflictRecord {
		return conflictRecord{Op: "add", savedConflict: savedConflict{Coll: "c", Num: n, PK: `["x"]`, ID: fmt.Sprint("conflict", n), ETag: `"e"`, Resource: json.RawMessage(`{}`), Key: fmt.Sprint("write:", n)}}
	}
	good := frames(add(1), add(2), add(3))
	flipped := bytes.Clone(good)
	flipped[len(frames(add(1)))+logfile.FrameHeaderSize+3] ^= 1 // in the second frame's payload
	torn := good[:len(good)-5]
	for _, tc := range []struct {
		name string
		log  []byte
		want []string // nil: damaged
	}{
		{"a checksum fails before the end", flipped, nil},
		{"an unknown record", frames(add(1), conflictRecord{Op: "what", savedConflict: savedConflict{Coll: "c"}}), nil},
		{"a bad header", append([]byte("LETHEXXX\x01"), good[len(conflictLogMagic)+1:]...), nil},
		{"a torn last frame", torn, []string{"conflict1", "conflict2"}},
		{"zeros at the end", append(bytes.Clone(good), make([]byte, 700)...), []string{"conflict1", "conflict2", "conflict3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h, _ := durableDB(t, dir)
			h.Close()
			if err := os.WriteFile(filepath.Join(dir, dbDirName("db"), conflictLogFile), tc.log, 0o644); err != nil {
				t.Fatal(err)
			}
			dbs, _, err := CheckDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if damaged := dbs[0].Err != nil && strings.Contains(dbs[0].Err.Error(), conflictLogFile); damaged != (tc.want == nil) {
				t.Errorf("CheckDir: %v", dbs[0].Err)
			}
			h, err = New(Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			db, ok := h.lookup("db")
			if ok != (tc.want != nil) {
				t.Fatalf("served: %v (%v)", ok, h.unavailable)
			}
			if !ok {
				return
			}
			if ids, _, _ := feedState(db); fmt.Sprint(ids) != fmt.Sprint(tc.want) {
				t.Errorf("the feed: %v, want %v", ids, tc.want)
			}
		})
	}
}

// TestConflictLogFailedAppend: a conflict whose append fails stays in the
// feed, and the next change writes the log whole with it.
func TestConflictLogFailedAppend(t *testing.T) {
	dir := t.TempDir()
	efs := vfstest.NewErrorFS(vfs.OS)
	cfg := Config{Dir: dir}
	vfs.SetConfigFS(&cfg, efs)
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	(&request{h: h, w: rec, r: httptest.NewRequest(http.MethodPost, "/dbs", nil), body: []byte(`{"id":"db"}`)}).createDatabase()
	db, _ := h.lookup("db")
	recordN(t, db, 0, 1, nil) // the log is written whole, and open
	efs.Inject(vfstest.Fault{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC})
	if err := db.addConflict("c", []string{"/pk"}, lethe.NewPartitionKeyString("x"), "x", "create", []byte(`{"id":"x","pk":"x"}`), 1, 1, "write:failed", []uint64{0, 5}); err == nil {
		t.Fatal("the append did not fail")
	}
	recordN(t, db, 2, 1, nil)
	h.Close()
	h, db = durableDB(t, dir)
	defer h.Close()
	if ids, _, _ := feedState(db); len(ids) != 3 || !db.conflictHandled("c", 0, 0, "write:failed") {
		t.Errorf("after a failed append and a restart: %v", ids)
	}
}
