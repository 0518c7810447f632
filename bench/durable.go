package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethedb/lethe"
	"github.com/tidwall/buntdb"
	bolt "go.etcd.io/bbolt"
)

// The durable workloads, run only when -w names them:
//
//	D1  durable inserts: 1, 8 and 64 writers, each inserting the same items
//	    per writer into a fresh store on a fresh directory, every insert
//	    acknowledged under the store's sync policy; items/s.
//	D2  recovery: the time to reopen a store of N items, and its bytes on
//	    disk per item.

// durableConfig is what D1 and D2 need beyond config.
type durableConfig struct {
	stores  []durableKind
	writers []int
	perW    int           // D1: items per writer
	warm    int           // D1: warm-up items in all, split among the writers
	limit   time.Duration // D1: a measurement stops after this long
	dir     string        // where the stores' directories are made
	chunk   int           // D2: items per session when lethe's log-only store is loaded
}

// durableStore is what D1 and D2 need of a durable store: insert must be
// safe for concurrent use, and returns once the item is durable under the
// store's policy.
type durableStore interface {
	insert(id string, doc []byte, ttl time.Duration)
	close()
}

type durableKind struct {
	name   string // in tables
	flag   string // in -dstores
	synced bool   // every acknowledged write is synced: compared with lethe SyncAlways, else with lethe SyncEverySecond
	open   func(dir string) durableStore
}

var durableStores = []durableKind{
	{"lethe SyncAlways", "lethe-always", true, func(dir string) durableStore { return letheDurable{openLetheDurable(dir, lethe.SyncAlways)} }},
	{"lethe SyncEverySecond", "lethe-everysec", false, func(dir string) durableStore { return letheDurable{openLetheDurable(dir, lethe.SyncEverySecond)} }},
	{"buntdb Always", "buntdb-always", true, func(dir string) durableStore { return openBuntDurable(dir, buntdb.Always) }},
	{"buntdb EverySecond", "buntdb-everysec", false, func(dir string) durableStore { return openBuntDurable(dir, buntdb.EverySecond) }},
	{"bbolt Update", "bbolt", true, func(dir string) durableStore { return openBolt(dir, false) }},
	{"bbolt Batch", "bbolt-batch", true, func(dir string) durableStore { return openBolt(dir, true) }},
}

const (
	letheAlways   = "lethe SyncAlways"
	letheEverySec = "lethe SyncEverySecond"
)

// ---- lethe, durable ----

// openLetheDurable opens (or reopens) a durable lethe store in dir with its
// one container.
func openLetheDurable(dir string, sync lethe.SyncPolicy) *letheStore {
	st, err := lethe.Open(&lethe.Options{Dir: dir, Sync: sync})
	if err != nil {
		panic(err)
	}
	c, err := st.Container("users")
	if err != nil {
		c, err = st.CreateContainer(bg, lethe.ContainerProperties{ID: "users", DefaultTimeToLive: lethe.TTLNever})
	}
	if err != nil {
		panic(err)
	}
	return &letheStore{st: st, c: c}
}

// letheDurable is lethe as a durableStore: insert as in stores.go, and a
// failure to close is fatal.
type letheDurable struct{ *letheStore }

func (s letheDurable) close() { s.closeErr() }

func (s *letheStore) closeErr() {
	if err := s.st.Close(); err != nil {
		panic(err)
	}
}

// ---- BuntDB, on a file ----

type buntDurable struct{ buntStore }

func openBuntDurable(dir string, policy buntdb.SyncPolicy) durableStore {
	db, err := buntdb.Open(filepath.Join(dir, "bunt.db"))
	if err != nil {
		panic(err)
	}
	var cfg buntdb.Config
	if err := db.ReadConfig(&cfg); err != nil {
		panic(err)
	}
	cfg.SyncPolicy = policy
	if err := db.SetConfig(cfg); err != nil {
		panic(err)
	}
	return &buntDurable{buntStore{db}}
}

func (s *buntDurable) close() {
	if err := s.db.Close(); err != nil {
		panic(err)
	}
}

// ---- bbolt ----

var boltBucket = []byte("users")

type boltStore struct {
	db    *bolt.DB
	batch bool
}

func openBolt(dir string, batch bool) durableStore {
	db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o600, nil)
	if err != nil {
		panic(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltBucket)
		return err
	}); err != nil {
		panic(err)
	}
	return &boltStore{db, batch}
}

// insert puts one item in its own transaction (Update), or through Batch,
// which commits the calls of concurrent goroutines together (it may run a
// function more than once: Put is idempotent). bbolt has no TTL.
func (s *boltStore) insert(id string, doc []byte, _ time.Duration) {
	put := func(tx *bolt.Tx) error { return tx.Bucket(boltBucket).Put([]byte(id), doc) }
	var err error
	if s.batch {
		err = s.db.Batch(put)
	} else {
		err = s.db.Update(put)
	}
	if err != nil {
		panic(err)
	}
}

// putMany puts items [from, to) in one transaction (D2's load).
func (s *boltStore) putMany(d *dataset, from, to int) {
	if err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltBucket)
		for i := from; i < to; i++ {
			if err := b.Put([]byte(d.ids[i]), d.docs[i]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		panic(err)
	}
}

func (s *boltStore) close() {
	if err := s.db.Close(); err != nil {
		panic(err)
	}
}

// ---- D1 ----

// warmDoc is document i with "warm-" in place of "user-" in its id (the
// same length), so that warm-up items never collide with measured ones.
func warmDoc(d *dataset, i int) (string, []byte) {
	doc := append([]byte(nil), d.docs[i]...)
	const at = len(`{"id":"`)
	if string(doc[at:at+5]) != "user-" {
		panic("unexpected document layout: " + string(doc[:20]))
	}
	copy(doc[at:], "warm-")
	return "warm-" + strings.TrimPrefix(d.ids[i], "user-"), doc
}

// tempDir makes a fresh directory for one store.
func tempDir(base, name string) string {
	dir, err := os.MkdirTemp(base, "lethe-bench-"+strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(name)+"-")
	if err != nil {
		panic(err)
	}
	return dir
}

// dirBytes adds up the sizes of the files in dir whose names match.
func dirBytes(dir string, match func(name string) bool) (total int64, files int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && match(e.Name()) {
			fi, err := e.Info()
			if err != nil {
				panic(err)
			}
			total += fi.Size()
			files++
		}
	}
	return total, files
}

// phaseD1 measures durable inserts on w writers into a fresh store of kind
// k: a warm-up of dc.warm items split among the writers, a GC, then each
// writer inserts its dc.perW items; the figure is items/s over all writers,
// until the last one is acknowledged. A measurement that reaches dc.limit
// stops its writers and counts what they had inserted.
func phaseD1(k durableKind, w int, d *dataset, dc durableConfig, rec *recorder) {
	dir := tempDir(dc.dir, k.flag)
	defer os.RemoveAll(dir)
	s := k.open(dir)
	run := func(per int, item func(j, t int) (string, []byte, time.Duration), stop *atomic.Bool) int64 {
		var wg sync.WaitGroup
		var done atomic.Int64
		for j := range w {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := 0
				for t := range per {
					if stop != nil && stop.Load() {
						break
					}
					id, doc, ttl := item(j, t)
					s.insert(id, doc, ttl)
					n++
				}
				done.Add(int64(n))
			}()
		}
		wg.Wait()
		return done.Load()
	}
	warmPer := dc.warm / w
	warmIDs := make([]string, w*warmPer)
	warmDocs := make([][]byte, w*warmPer)
	for i := range warmIDs {
		warmIDs[i], warmDocs[i] = warmDoc(d, i)
	}
	run(warmPer, func(j, t int) (string, []byte, time.Duration) {
		i := j*warmPer + t
		return warmIDs[i], warmDocs[i], d.ttls[i]
	}, nil)
	runtime.GC()
	var stop atomic.Bool
	timer := time.AfterFunc(dc.limit, func() { stop.Store(true) })
	start := time.Now()
	n := run(dc.perW, func(j, t int) (string, []byte, time.Duration) {
		i := j*dc.perW + t
		return d.ids[i], d.docs[i], d.ttls[i]
	}, &stop)
	el := time.Since(start)
	timer.Stop()
	s.close()
	want := int64(w * dc.perW)
	if n < want {
		rec.note("D1: %s with %d writers reached the %v limit after %d of its %d items; its figure is over those", k.name, w, dc.limit, n, want)
	}
	rate := float64(n) / el.Seconds()
	rec.add(fmt.Sprintf("D1 items/s %dw", w), k.name, rate)
	logf("%-22s D1 %2d writers: %d items in %v: %.0f items/s", k.name, w, n, el.Round(time.Millisecond), rate)
}

// ---- D2 ----

// D2's rows.
const (
	d2LogOnly    = "lethe, log only"
	d2OneSession = "lethe, as one session left it"
	d2Checkpoint = "lethe, after Checkpoint"
	d2Bunt       = "buntdb (AOF)"
	d2Bolt       = "bbolt (1000 items per Update)"
)

// loadLethe inserts the first n items of d into a lethe store in dir under
// SyncNever, on 8 writers, opening and closing the store every chunk items.
func loadLethe(dir string, d *dataset, n, chunk int) {
	for from := 0; from < n; from += chunk {
		to := min(from+chunk, n)
		s := openLetheDurable(dir, lethe.SyncNever)
		const g = 8
		var wg sync.WaitGroup
		for j := range g {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := from + j; i < to; i += g {
					s.insert(d.ids[i], d.docs[i], d.ttls[i])
				}
			}()
		}
		wg.Wait()
		s.closeErr()
		settle()
	}
}

// reopenLethe opens the lethe store in dir, timing Open and measuring its
// costs, and checks that it holds n items.
func reopenLethe(dir string, n int) (*letheStore, time.Duration, lethe.RecoveryInfo, phaseCost) {
	settle()
	u := readUsage()
	start := time.Now()
	st, err := lethe.Open(&lethe.Options{Dir: dir, Sync: lethe.SyncNever})
	el := time.Since(start)
	cost := readUsage().since(u)
	if err != nil {
		panic(err)
	}
	c, err := st.Container("users")
	if err != nil {
		panic(err)
	}
	s := &letheStore{st: st, c: c}
	ri := st.Recovery()
	if got := s.present(); got != n || ri.Items != int64(n) {
		panic(fmt.Sprintf("lethe D2: %d items after reopening (recovery: %+v), want %d", got, ri, n))
	}
	return s, el, ri, cost
}

func isLog(name string) bool {
	return strings.HasPrefix(name, "wal-") && strings.HasSuffix(name, ".log")
}
func isSnap(name string) bool {
	return strings.HasPrefix(name, "snap-") && strings.HasSuffix(name, ".db")
}

func recordD2(rec *recorder, row string, n int, open time.Duration, bytes int64, frames int64) {
	rec.add("D2 open s", row, open.Seconds())
	rec.add("D2 items/s", row, float64(n)/open.Seconds())
	rec.add("D2 B/item on disk", row, float64(bytes)/float64(n))
	if frames >= 0 {
		rec.add("D2 log frames replayed", row, float64(frames))
	}
}

// phaseD2 builds stores of the first n items of d and times their reopening.
func phaseD2(n int, d *dataset, dc durableConfig, rec *recorder) {
	// lethe, log only: loaded in sessions of dc.chunk items, each writing
	// less log than makes lethe take a snapshot by itself, so that the
	// directory holds only log segments.
	dir := tempDir(dc.dir, "lethe-d2")
	loadLethe(dir, d, n, dc.chunk)
	logB, segs := dirBytes(dir, isLog)
	s, el, ri, _ := reopenLethe(dir, n)
	if ri.Snapshot != "" {
		rec.note("D2: the log-only lethe store held a snapshot (%s): load it in smaller sessions (-dchunk)", ri.Snapshot)
	}
	recordD2(rec, d2LogOnly, n, el, logB, ri.Frames)
	logf("%-22s D2 %d items, %d segments, %.0f B/item: Open %v (recovery %v, %d frames)", d2LogOnly, n, segs, float64(logB)/float64(n), el.Round(time.Millisecond), ri.Duration.Round(time.Millisecond), ri.Frames)

	// After a Checkpoint: the snapshot alone.
	start := time.Now()
	if err := s.st.Checkpoint(bg); err != nil {
		panic(err)
	}
	cp := time.Since(start)
	s.closeErr()
	snapB, _ := dirBytes(dir, isSnap)
	tailB, _ := dirBytes(dir, isLog)
	s, el, ri, _ = reopenLethe(dir, n)
	s.closeErr()
	rec.add("D2 Checkpoint s", d2Checkpoint, cp.Seconds())
	recordD2(rec, d2Checkpoint, n, el, snapB+tailB, ri.Frames)
	logf("%-22s D2 Checkpoint took %v; snapshot %.0f B/item, log %d B: Open %v (recovery %v, %d frames)", d2Checkpoint, cp.Round(time.Millisecond), float64(snapB)/float64(n), tailB, el.Round(time.Millisecond), ri.Duration.Round(time.Millisecond), ri.Frames)
	os.RemoveAll(dir)

	// As one session left it: loaded in one go, lethe snapshotting by
	// itself as its log grows.
	dir = tempDir(dc.dir, "lethe-d2-one")
	loadLethe(dir, d, n, n)
	snapB, snaps := dirBytes(dir, isSnap)
	logB, segs = dirBytes(dir, isLog)
	s, el, ri, _ = reopenLethe(dir, n)
	s.closeErr()
	recordD2(rec, d2OneSession, n, el, snapB+logB, ri.Frames)
	logf("%-22s D2 %d snapshot(s) %.0f B/item, %d segment(s) %.0f B/item: Open %v (recovery %v, %d frames)", d2OneSession, snaps, float64(snapB)/float64(n), segs, float64(logB)/float64(n), el.Round(time.Millisecond), ri.Duration.Round(time.Millisecond), ri.Frames)
	os.RemoveAll(dir)

	// BuntDB: its append-only file, loaded 1000 items per Update under
	// SyncPolicy Never, then reopened (Open reads the whole file).
	dir = tempDir(dc.dir, "buntdb-d2")
	loadBunt(dir, d, n)
	buntB, _ := dirBytes(dir, func(string) bool { return true })
	settle()
	el, _ = reopenBunt(dir, n)
	recordD2(rec, d2Bunt, n, el, buntB, -1)
	logf("%-22s D2 %.0f B/item: Open %v", d2Bunt, float64(buntB)/float64(n), el.Round(time.Millisecond))
	os.RemoveAll(dir)

	// bbolt: its file's size only; Open maps the file and reads nothing.
	dir = tempDir(dc.dir, "bbolt-d2")
	bs := openBolt(dir, false).(*boltStore)
	for from := 0; from < n; from += 1000 {
		bs.putMany(d, from, min(from+1000, n))
	}
	bs.close()
	boltB, _ := dirBytes(dir, func(string) bool { return true })
	rec.add("D2 B/item on disk", d2Bolt, float64(boltB)/float64(n))
	logf("%-22s D2 %.0f B/item", d2Bolt, float64(boltB)/float64(n))
	os.RemoveAll(dir)
	settle()
}

// loadBunt inserts the first n items of d into a BuntDB file in dir, 1000
// items per Update, under SyncPolicy Never.
func loadBunt(dir string, d *dataset, n int) {
	b := openBuntDurable(dir, buntdb.Never).(*buntDurable)
	for from := 0; from < n; from += 1000 {
		if err := b.db.Update(func(tx *buntdb.Tx) error {
			for i := from; i < min(from+1000, n); i++ {
				var opts *buntdb.SetOptions
				if d.ttls[i] > 0 {
					opts = &buntdb.SetOptions{Expires: true, TTL: d.ttls[i]}
				}
				if _, _, err := tx.Set(d.ids[i], string(d.docs[i]), opts); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			panic(err)
		}
	}
	b.close()
}

// reopenBunt opens the BuntDB file in dir, timing Open (which reads the
// whole file) and measuring its costs, checks that it holds n items and
// closes it.
func reopenBunt(dir string, n int) (time.Duration, phaseCost) {
	u := readUsage()
	start := time.Now()
	db, err := buntdb.Open(filepath.Join(dir, "bunt.db"))
	el := time.Since(start)
	cost := readUsage().since(u)
	if err != nil {
		panic(err)
	}
	if got := (&buntStore{db}).present(); got != n {
		panic(fmt.Sprintf("buntdb D2: %d items after reopening, want %d", got, n))
	}
	db.Close()
	return el, cost
}

// runDurable runs D1 and D2 as cfg says, once.
func runDurable(d *dataset, cfg config, dc durableConfig, rec *recorder) {
	if cfg.workloads["D1"] {
		for _, k := range dc.stores {
			for _, w := range dc.writers {
				phaseD1(k, w, d, dc, rec)
				settle()
			}
		}
	}
	if cfg.workloads["D2"] {
		phaseD2(cfg.n, d, dc, rec)
	}
}
