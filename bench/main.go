// Command bench compares lethe with its peers (BuntDB, ttlcache, go-cache)
// and two floors (a map under an RWMutex, and a map plus a btree expiry
// index) on the workloads W1 to W6 described in BENCHMARKS.md, and prints
// markdown tables of the medians over several runs. The durable workloads
// D1 (durable inserts) and D2 (recovery), against BuntDB on a file and
// bbolt, run only when -w names them, and so does F1: point reads and
// creates through lethe's Cosmos DB REST front with the Go SDK, against a
// floor (front.go).
//
//	go run . -n 1000000 -runs 3 -chart latency.png
//	go run . -n 20000 -runs 1 -chart ""   # seconds: what CI runs
//	go run . -w D1,D2 -n 1000000 -runs 1  # durability: minutes
//	go run . -w F1 -n 100000 -runs 1 -chart ""  # the REST front: a minute or two
//	go run . -sizes 10000,100000,1000000,10000000 -runs 1  # growth: W1, W2, W4, recovery against N
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	var (
		n        = flag.Int("n", 1_000_000, "items per store")
		wl       = flag.String("w", "W1,W2,W3,W4,W5,W6", "workloads, comma-separated (W1 to W6; W7, queries an index answers, the durable D1 and D2 and the REST front's F1 run only when named)")
		peers    = flag.String("peers", "lethe,lethe+append,buntdb,ttlcache,go-cache,map,btree", "stores, comma-separated (lethe, lethe+append, buntdb, ttlcache, go-cache, map, btree; also go-cache+copy, go-cache returning a copy of each value read, a yardstick for lethe's ReadItem)")
		runs     = flag.Int("runs", 3, "runs; tables show medians")
		chart    = flag.String("chart", "latency.png", "PNG chart of W5 read latency during the purge (empty: none)")
		reads    = flag.Int("reads", 0, "point reads per goroutine in W2 and W3 (0: 2×n, at least 200000, at most 2000000)")
		interval = flag.Duration("interval", 10*time.Microsecond, "W5: one read per interval")
		window   = flag.Duration("window", 0, "W5: how long reads go on after the expiry (0: 3s, or 500ms when -n is under 100000)")
		cleanup  = flag.Duration("cleanup", time.Second, "go-cache's janitor interval")
		out      = flag.String("o", "", "also write the tables to this file")
		dstores  = flag.String("dstores", "lethe-always,lethe-everysec,buntdb-always,buntdb-everysec,bbolt,bbolt-batch", "D1: durable stores, comma-separated")
		writers  = flag.String("writers", "1,8,64", "D1: concurrent writers, comma-separated")
		dlimit   = flag.Duration("dlimit", 30*time.Second, "D1: the longest one measurement runs; a store still writing then is stopped and measured on what it wrote")
		ddir     = flag.String("ddir", "", "D1, D2: where the stores' directories are made (empty: the system's temporary directory)")
		dchunk   = flag.Int("dchunk", 100_000, "D2: items per session when loading lethe's log-only store (its log must stay under lethe's 64 MiB snapshot threshold)")
		fclients = flag.String("clients", "1,16,64", "F1: concurrent SDK clients, comma-separated")
		fdur     = flag.Duration("fdur", 5*time.Second, "F1: how long each point is measured (on each server)")
		fslices  = flag.Int("fslices", 5, "F1: each point's measurement in this many slices, the floor's and the front's alternating")
		fwarm    = flag.Duration("fwarm", time.Second, "F1: the warm-up before each point, on the same clients")
		fprof    = flag.String("cpuprofile", "", "F1: write a CPU profile of the front's reads at -profclients clients here (the measured part only; with -runs > 1, of the last run)")
		fprofC   = flag.Int("profclients", 16, "F1: the client count -cpuprofile profiles")
		order    = flag.String("order", "rotate", "the order of the stores in each run: rotate (run r starts with the r-th store), reverse (rotate, backwards), given, or shuffle")
		seed     = flag.Uint64("seed", 1, "-order shuffle: the seed")
		warm     = flag.Int("warm", 50_000, "items of the throwaway store each store's warm-up builds and reads before it is measured (0: none)")
		sizes    = flag.String("sizes", "", "growth mode: item counts, comma-separated (e.g. 10000,100000,1000000,10000000): W1, W2, W4 and recovery (D2) at each, with their GC, heap and page-fault costs; -w narrows to some of W1, W2, W4, D2; -peers defaults to lethe,buntdb,ttlcache,go-cache; -n is ignored")
	)
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *sizes != "" && !set["peers"] {
		*peers = "lethe,buntdb,ttlcache,go-cache"
	}

	cfg := config{n: *n, reads: *reads, interval: *interval, window: *window, cleanup: *cleanup, workloads: map[string]bool{}}
	if cfg.window == 0 {
		cfg.window = 3 * time.Second
		if *n < 100_000 {
			cfg.window = 500 * time.Millisecond
		}
	}
	if cfg.reads == 0 {
		cfg.reads = min(max(2**n, 200_000), 2_000_000)
	}
	for _, w := range strings.Split(*wl, ",") {
		w = strings.ToUpper(strings.TrimSpace(w))
		if w == "" {
			continue
		}
		if w != "D1" && w != "D2" && w != "F1" && (len(w) != 2 || w[0] != 'W' || w[1] < '1' || w[1] > '7') {
			fatalf("unknown workload %q: use W1 to W7, D1, D2, F1", w)
		}
		cfg.workloads[w] = true
	}
	var kinds []storeKind
	for _, p := range strings.Split(*peers, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "" {
			continue
		}
		i := slices.IndexFunc(allStores, func(k storeKind) bool {
			return strings.ToLower(k.name) == p || strings.HasPrefix(strings.ToLower(k.name), p+"+")
		})
		if i < 0 {
			fatalf("unknown store %q", p)
		}
		kinds = append(kinds, allStores[i])
	}
	if *n < 10 || *runs < 1 || len(kinds) == 0 {
		fatalf("need -n >= 10, -runs >= 1 and at least one store")
	}
	dc := durableConfig{perW: max(*n/64, 1), warm: min(512, *n), limit: *dlimit, dir: *ddir, chunk: *dchunk}
	for _, name := range strings.Split(*dstores, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		i := slices.IndexFunc(durableStores, func(k durableKind) bool { return k.flag == name })
		if i < 0 {
			fatalf("unknown durable store %q", name)
		}
		dc.stores = append(dc.stores, durableStores[i])
	}
	for _, s := range strings.Split(*writers, ",") {
		w, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || w < 1 || w > 64 {
			fatalf("bad writer count %q: use 1 to 64", s)
		}
		dc.writers = append(dc.writers, w)
	}
	if dc.chunk < 1 || dc.limit <= 0 {
		fatalf("need -dchunk >= 1 and -dlimit > 0")
	}
	fc := frontConfig{dur: *fdur, warm: *fwarm, slices: *fslices, profile: *fprof, profC: *fprofC}
	for _, s := range strings.Split(*fclients, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c < 1 || c > 1024 {
			fatalf("bad client count %q: use 1 to 1024", s)
		}
		fc.clients = append(fc.clients, c)
	}
	if fc.dur <= 0 || fc.warm < 0 || fc.slices < 1 {
		fatalf("need -fdur > 0, -fwarm >= 0 and -fslices >= 1")
	}

	if *order != "rotate" && *order != "reverse" && *order != "given" && *order != "shuffle" {
		fatalf("unknown -order %q: use rotate, reverse, given or shuffle", *order)
	}
	if *warm < 0 {
		fatalf("need -warm >= 0")
	}

	if *sizes != "" {
		gc := growthConfig{runs: *runs, warm: *warm, order: *order, seed: *seed, dir: *ddir}
		var err error
		if gc.sizes, err = parseSizes(*sizes); err != nil {
			fatalf("-sizes: %v", err)
		}
		all := !set["w"]
		gc.w1, gc.w2, gc.w4, gc.recov = all || cfg.workloads["W1"], all || cfg.workloads["W2"], all || cfg.workloads["W4"], all || cfg.workloads["D2"]
		if !gc.w1 && !gc.w2 && !gc.w4 && !gc.recov {
			fatalf("-sizes: -w names none of W1, W2, W4, D2")
		}
		w, closeOut := output(*out)
		defer closeOut()
		runGrowth(w, kinds, cfg, gc)
		return
	}

	logf("generating %d items", *n)
	d := newDataset(*n, 1)
	logf("average item: %d bytes of JSON, id %d bytes", int(d.raw)/(*n)-len(d.ids[0]), len(d.ids[0]))
	rec := newRecorder()
	for r := range *runs {
		run := runOrder(kinds, *order, r, *seed)
		var names []string
		for _, k := range run {
			names = append(names, k.name)
		}
		rec.orders = append(rec.orders, strings.Join(names, ", "))
		for _, k := range run {
			logf("run %d/%d: %s", r+1, *runs, k.name)
			settle()
			warmUp(k, d, cfg, *warm)
			settle()
			runStore(k, d, cfg, rec)
		}
		settle()
		if cfg.workloads["D1"] || cfg.workloads["D2"] {
			logf("run %d/%d: durable", r+1, *runs)
			runDurable(d, cfg, dc, rec)
		}
		if cfg.workloads["F1"] {
			logf("run %d/%d: the REST front", r+1, *runs)
			runFront(d, cfg, fc, rec)
			runtime.GC()
			debug.FreeOSMemory()
		}
	}

	w, closeOut := output(*out)
	defer closeOut()
	report(w, rec, cfg, d, *runs, kinds, dc, fc)
	if *chart != "" && len(rec.series) > 0 {
		if err := drawChart(*chart, rec.series, kinds); err != nil {
			fatalf("chart: %v", err)
		}
		logf("wrote %s", *chart)
	}
}

// output returns where the tables go: stdout, and the file path too
// unless path is "", and what closes that file.
func output(path string) (io.Writer, func()) {
	if path == "" {
		return os.Stdout, func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fatalf("%v", err)
	}
	return io.MultiWriter(os.Stdout, f), func() { f.Close() }
}

// runOrder returns the stores in the order run r measures them: the same
// stores in every run, each first in turn (rotate, reverse) or in a random
// order (shuffle), so that no store always pays for coming first or last.
func runOrder(kinds []storeKind, order string, r int, seed uint64) []storeKind {
	out := slices.Clone(kinds)
	switch order {
	case "rotate":
		k := r % len(out)
		out = append(out[k:], out[:k]...)
	case "reverse":
		slices.Reverse(out)
		k := r % len(out)
		out = append(out[k:], out[:k]...)
	case "shuffle":
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out
}

// settle collects all garbage and returns the free memory to the operating
// system, so that every store starts from the same heap: none inherits the
// garbage of the data's generation or of the store before it, nor memory
// already mapped by another.
func settle() {
	runtime.GC()
	runtime.GC() // the first one's finalizers and sweeping
	debug.FreeOSMemory()
}

// warmUp builds a throwaway store of kind k with the first items of d and
// reads each once, so that each store's code and the runtime's structures
// are warm before it is measured, the first store's as much as the last's.
func warmUp(k storeKind, d *dataset, cfg config, items int) {
	items = min(items, len(d.ids))
	if items == 0 {
		return
	}
	s := k.open(storeOpts{cleanup: cfg.cleanup})
	for i := range items {
		s.insert(d.ids[i], d.docs[i], d.ttls[i])
	}
	for i := range items {
		s.get(d.ids[i])
	}
	s.close()
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(2)
}
