package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/lethedb/lethe"
)

// The Go benchmarks run W1 and W2 on a smaller set, one store at a time, so
// that a store can be profiled alone:
//
//	go test -run '^$' -bench 'Read/lethe' -cpuprofile cpu.out
//	go tool pprof -top cpu.out

// benchN is the items per store; BENCH_N overrides it.
var benchN = 100_000

var (
	benchOnce sync.Once
	benchData *dataset
)

// items returns benchN, as BENCH_N sets it.
func items() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_N")); err == nil && v > 0 {
		benchN = v
	}
	return benchN
}

func data(tb testing.TB) *dataset {
	benchOnce.Do(func() {
		items()
		benchData = newDataset(benchN, 1)
	})
	return benchData
}

func loaded(tb testing.TB, k storeKind, d *dataset) store {
	s := k.open(storeOpts{cleanup: time.Second})
	for i := range d.ids {
		s.insert(d.ids[i], d.docs[i], d.ttls[i])
	}
	return s
}

func BenchmarkInsert(b *testing.B) {
	d := data(b)
	for _, k := range allStores {
		b.Run(k.name, func(b *testing.B) {
			s := k.open(storeOpts{cleanup: time.Second})
			defer func() { s.close() }()
			b.ReportAllocs()
			j := 0
			for i := 0; b.Loop(); i++ {
				if i%len(d.ids) == 0 && i > 0 {
					b.StopTimer()
					s.close()
					s = k.open(storeOpts{cleanup: time.Second})
					b.StartTimer()
				}
				j = i % len(d.ids)
				s.insert(d.ids[j], d.docs[j], d.ttls[j])
			}
		})
	}
}

func BenchmarkRead(b *testing.B) {
	d := data(b)
	order := readOrder(1<<16, nil, len(d.ids), 3)
	for _, k := range allStores {
		b.Run(k.name, func(b *testing.B) {
			s := loaded(b, k, d)
			defer s.close()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, ok := s.get(d.ids[order[i&(1<<16-1)]]); !ok {
					b.Fatal("miss")
				}
			}
		})
	}
}

func BenchmarkReadParallel(b *testing.B) {
	d := data(b)
	order := readOrder(1<<16, nil, len(d.ids), 3)
	for _, k := range allStores {
		b.Run(k.name, func(b *testing.B) {
			s := loaded(b, k, d)
			defer s.close()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, ok := s.get(d.ids[order[i&(1<<16-1)]]); !ok {
						panic("miss")
					}
					i++
				}
			})
		})
	}
}

// BenchmarkLethePurge purges benchN expired items with the reaper, from the
// instant they expire until none is left: W4 on a smaller set.
func BenchmarkLethePurge(b *testing.B) {
	d := data(b)
	for b.Loop() {
		b.StopTimer()
		s := openLethe(storeOpts{}).(*letheStore)
		for i := range d.ids {
			s.insert(d.ids[i], d.withTTL(i, 0), 0)
		}
		time.Sleep(1100 * time.Millisecond)
		b.StartTimer()
		s.expireAt(time.Now())
		for s.present() > 0 {
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		s.close()
		b.StartTimer()
	}
	b.ReportMetric(float64(benchN), "items/op")
}

// BenchmarkW5Purge runs W5 (a reader on a schedule while N/2 expired items
// are purged) once per store, for -blockprofile and -mutexprofile.
func BenchmarkW5Purge(b *testing.B) {
	d := data(b)
	cfg := config{n: benchN, interval: 10 * time.Microsecond, window: 3 * time.Second, cleanup: time.Second}
	for _, k := range allStores {
		if !k.ttl {
			continue
		}
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				rec := newRecorder()
				phaseW5Purge(k, d, cfg, rec, 3000)
				for _, m := range []string{"p99", "max"} {
					v, _ := rec.med("W5 purge "+m+" µs", k.name)
					b.ReportMetric(v, m+"-µs")
				}
			}
		})
	}
}

// TestSmall runs every workload on a small set, so that the program keeps
// working: the same as `go run . -n 2000 -runs 1 -chart ""`.
func TestSmall(t *testing.T) {
	d := newDataset(2000, 1)
	cfg := config{n: 2000, reads: 20000, interval: 10 * time.Microsecond, window: 300 * time.Millisecond, cleanup: time.Second,
		workloads: map[string]bool{"W1": true, "W2": true, "W3": true, "W4": true, "W5": true, "W6": true}}
	rec := newRecorder()
	for _, k := range allStores {
		runStore(k, d, cfg, rec)
	}
	if v, _ := rec.med("W3 expired reads returned %", "lethe"); v != 0 {
		t.Errorf("lethe returned %.1f%% of expired items", v)
	}
	for _, k := range allStores {
		if _, ok := rec.med("W2 read ns/op 1g", k.name); !ok {
			t.Errorf("no W2 figure for %s", k.name)
		}
	}
}

// TestGrowthSmall runs the growth mode at two small sizes, so that it keeps
// working: as `go run . -sizes 300,1000 -runs 1 -warm 100`.
func TestGrowthSmall(t *testing.T) {
	var kinds []storeKind
	for _, k := range allStores {
		if k.name == "lethe" || k.name == "buntdb" || k.name == "go-cache" {
			kinds = append(kinds, k)
		}
	}
	cfg := config{cleanup: 10 * time.Millisecond, workloads: map[string]bool{}}
	gc := growthConfig{sizes: []int{300, 1000}, w1: true, w2: true, w4: true, recov: true, dir: t.TempDir(), runs: 1, warm: 100, order: "given"}
	var out strings.Builder
	runGrowth(&out, kinds, cfg, gc)
	report := out.String()
	for _, want := range []string{
		"| W1 | lethe |", "| W2 | buntdb |", "| W4 | go-cache |", "| R | lethe, one session |", "| R | lethe, snapshot |", "| R | buntdb |", "| lethe | 1k | ",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("no %q in the report:\n%s", want, report)
		}
	}
	if strings.Contains(report, "Notes:") {
		t.Errorf("the report has notes:\n%s", report)
	}
}

// BenchmarkLetheStats times Container.Stats with N expired items pending
// (reaper off): the call W4 uses to see when the purge is done.
func BenchmarkLetheStats(b *testing.B) {
	d := data(b)
	s := openLethe(storeOpts{noPurge: true}).(*letheStore)
	defer s.close()
	for i := range d.ids {
		s.insert(d.ids[i], d.withTTL(i, 0), 0)
	}
	s.expireAt(time.Now())
	for b.Loop() {
		if st := s.c.Stats(); st.ExpiredPending != int64(len(d.ids)) {
			b.Fatalf("%d pending", st.ExpiredPending)
		}
	}
}

// TestDurableSmall runs D1 and D2 on a small set, so that they keep
// working: as `go run . -w D1,D2 -n 640 -runs 1 -dchunk 200`.
func TestDurableSmall(t *testing.T) {
	d := newDataset(640, 1)
	cfg := config{n: 640, workloads: map[string]bool{"D1": true, "D2": true}}
	dc := durableConfig{stores: durableStores, writers: []int{1, 8, 64}, perW: 10, warm: 64, limit: 10 * time.Second, dir: t.TempDir(), chunk: 200}
	rec := newRecorder()
	runDurable(d, cfg, dc, rec)
	for _, k := range durableStores {
		for _, w := range dc.writers {
			if _, ok := rec.med(fmt.Sprintf("D1 items/s %dw", w), k.name); !ok {
				t.Errorf("no D1 figure for %s, %d writers", k.name, w)
			}
		}
	}
	for _, row := range d2Rows {
		if _, ok := rec.med("D2 B/item on disk", row); !ok {
			t.Errorf("no D2 figure for %s", row)
		}
	}
	if v, _ := rec.med("D2 log frames replayed", d2LogOnly); v < 640 {
		t.Errorf("log-only recovery replayed %.0f frames, want at least 640", v)
	}
	if len(rec.notes) > 0 {
		t.Errorf("notes: %q", rec.notes)
	}
}

// BenchmarkLetheRecovery reopens a durable lethe store of benchN items
// (b.N times), from its log only ("log") and from a snapshot after
// Checkpoint ("snapshot"), for -cpuprofile of recovery. Only Open is timed.
// With BENCH_RECOVERY_DIR set, the stores are built there once and reused
// by later runs, so that builds of different commits can be compared side
// by side; the items themselves are then not in memory while Open runs,
// as in a process that starts:
//
//	BENCH_N=1000000 go test -run '^$' -bench LetheRecovery -benchtime 3x -cpuprofile cpu.out
func BenchmarkLetheRecovery(b *testing.B) {
	n := items()
	base := os.Getenv("BENCH_RECOVERY_DIR")
	if base == "" {
		base = b.TempDir()
	}
	for _, kind := range []string{"log", "snapshot"} {
		b.Run(kind, func(b *testing.B) {
			dir := filepath.Join(base, fmt.Sprintf("%s-%d", kind, n))
			if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
				os.RemoveAll(dir)
				loadLethe(dir, data(b), n, 100_000)
				if kind == "snapshot" {
					s := openLetheDurable(dir, lethe.SyncNever)
					if err := s.st.Checkpoint(bg); err != nil {
						b.Fatal(err)
					}
					s.closeErr()
				}
			}
			b.ReportAllocs()
			// The process's CPU time in Open: less noisy than its wall
			// time on a shared machine; and the CPU time of the thread
			// that called Open, locked to it: its critical path, which
			// its wall time would be with a core for each of its
			// goroutines (recovery reads on one and builds on another).
			// And the garbage collector's share: its cycles, and its CPU
			// time (the runtime's estimate) while Open ran.
			var cpu, thread time.Duration
			var gc gcWork
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for b.Loop() {
				b.StopTimer()
				settle()
				before, beforeThread, beforeGC := cpuTime(), threadCPUTime(), readGCWork()
				b.StartTimer()
				st, err := lethe.Open(&lethe.Options{Dir: dir, Sync: lethe.SyncNever})
				b.StopTimer()
				cpu += cpuTime() - before
				thread += threadCPUTime() - beforeThread
				gc = gc.add(readGCWork().sub(beforeGC))
				if err != nil {
					b.Fatal(err)
				}
				if got := st.Recovery().Items; got != int64(n) {
					b.Fatalf("%d items recovered, want %d", got, n)
				}
				if err := st.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(n), "items/op")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(thread.Nanoseconds())/float64(b.N), "thread-cpu-ns/op")
			b.ReportMetric(float64(gc.cycles)/float64(b.N), "gc-cycles/op")
			b.ReportMetric(gc.cpu*1e9/float64(b.N), "gc-cpu-ns/op")
		})
	}
}

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// gcWork is what the garbage collector has done: its cycles, and its CPU
// time in seconds (runtime/metrics' estimate, marking and pauses).
type gcWork struct {
	cycles uint64
	cpu    float64
}

func (w gcWork) add(v gcWork) gcWork { return gcWork{w.cycles + v.cycles, w.cpu + v.cpu} }
func (w gcWork) sub(v gcWork) gcWork { return gcWork{w.cycles - v.cycles, w.cpu - v.cpu} }

// readGCWork returns the collector's work so far.
func readGCWork() gcWork {
	ms := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(ms)
	return gcWork{ms[0].Value.Uint64(), ms[1].Value.Float64()}
}

// threadCPUTime returns the CPU time (user and system) the calling thread
// has used.
func threadCPUTime() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD, Linux
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkD1 runs D1 once per durable store and writer count on benchN
// items (benchN/64 per writer), for -cpuprofile, -mutexprofile and
// -blockprofile of one store's durable write path:
//
//	BENCH_N=1000000 go test -run '^$' -bench 'D1/lethe-always/64' -benchtime 1x -cpuprofile cpu.out
func BenchmarkD1(b *testing.B) {
	d := data(b)
	for _, k := range durableStores {
		for _, w := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/%d", k.flag, w), func(b *testing.B) {
				dc := durableConfig{perW: max(benchN/64, 1), warm: min(512, benchN), limit: time.Minute, dir: b.TempDir()}
				for b.Loop() {
					rec := newRecorder()
					phaseD1(k, w, d, dc, rec)
					v, _ := rec.med(fmt.Sprintf("D1 items/s %dw", w), k.name)
					b.ReportMetric(v, "items/s")
				}
			})
		}
	}
}

// TestFrontSmall runs F1 tiny (a few hundred calls, 1 and 4 clients), so
// that it keeps working: as `go run . -w F1 -n 300 -runs 1 -clients 1,4
// -fdur 30ms -fwarm 10ms -fslices 3`, plus a bounded run of each operation.
func TestFrontSmall(t *testing.T) {
	d := newDataset(300, 1)
	cfg := config{n: 300, workloads: map[string]bool{"F1": true}}
	fc := frontConfig{clients: []int{1, 4}, dur: 30 * time.Millisecond, warm: 10 * time.Millisecond, slices: 3}
	rec := newRecorder()
	runFront(d, cfg, fc, rec)
	for _, m := range frontMetrics(fc) {
		for _, name := range []string{floorName, frontName} {
			v, ok := rec.med(m, name)
			if !ok {
				t.Errorf("no %q figure for %s", m, name)
			}
			if strings.Contains(m, "ops/s") && v <= 0 {
				t.Errorf("%s: %s = %v", name, m, v)
			}
		}
	}
	for _, name := range []string{floorName, frontName} {
		if !slices.Contains(rec.notes, "F1: "+name+" served HTTP/1.1 over TLS") {
			t.Errorf("notes %q: want %s on HTTP/1.1", rec.notes, name)
		}
	}
	var buf bytes.Buffer
	reportFront(&buf, rec, cfg, fc)
	if !strings.Contains(buf.String(), "| 4 | "+frontName+" |") {
		t.Errorf("F1 table:\n%s", buf.String())
	}

	// A bounded run on each server: exactly the calls asked for, and the
	// created items readable through the front.
	front := startFront(d, 300, 4)
	defer front.close()
	floor := startTarget(floorName, floorHandler(), 4)
	defer floor.close()
	for _, tg := range []*frontTarget{floor, front} {
		for _, op := range frontOps {
			if r := frontRun(tg, d, 300, op, 4, time.Minute, 100); r.ops != 100 {
				t.Errorf("%s %s: %d calls, want 100", tg.name, op, r.ops)
			}
		}
	}
	id := "f1-" + strconv.FormatInt(frontSeq.Load(), 10)
	resp, err := front.cc.ReadItem(t.Context(), azcosmos.NewPartitionKeyString(id), id, nil)
	if err != nil || !bytes.Contains(resp.Value, []byte(`"id":"`+id+`"`)) {
		t.Errorf("read of the last created item %s: %v %q", id, err, resp.Value)
	}
	if len(floorDoc) != 250 {
		t.Errorf("floor document of %d bytes", len(floorDoc))
	}
}
