// Command bench compares lethe with its peers (BuntDB, ttlcache, go-cache)
// and two floors (a map under an RWMutex, and a map plus a btree expiry
// index) on the workloads W1 to W6 described in BENCHMARKS.md, and prints
// markdown tables of the medians over several runs.
//
//	go run . -n 1000000 -runs 3 -chart latency.png
//	go run . -n 20000 -runs 1 -chart ""   # seconds: what CI runs
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

func main() {
	var (
		n        = flag.Int("n", 1_000_000, "items per store")
		wl       = flag.String("w", "W1,W2,W3,W4,W5,W6", "workloads, comma-separated")
		peers    = flag.String("peers", "lethe,lethe+append,buntdb,ttlcache,go-cache,map,btree", "stores, comma-separated (lethe, lethe+append, buntdb, ttlcache, go-cache, map, btree)")
		runs     = flag.Int("runs", 3, "runs; tables show medians")
		chart    = flag.String("chart", "latency.png", "PNG chart of W5 read latency during the purge (empty: none)")
		reads    = flag.Int("reads", 0, "point reads per goroutine in W2 and W3 (0: 2×n, at least 200000, at most 2000000)")
		interval = flag.Duration("interval", 10*time.Microsecond, "W5: one read per interval")
		window   = flag.Duration("window", 0, "W5: how long reads go on after the expiry (0: 3s, or 500ms when -n is under 100000)")
		cleanup  = flag.Duration("cleanup", time.Second, "go-cache's janitor interval")
		out      = flag.String("o", "", "also write the tables to this file")
	)
	flag.Parse()

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
		if len(w) != 2 || w[0] != 'W' || w[1] < '1' || w[1] > '6' {
			fatalf("unknown workload %q: use W1 to W6", w)
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

	logf("generating %d items", *n)
	d := newDataset(*n, 1)
	logf("average item: %d bytes of JSON, id %d bytes", int(d.raw)/(*n)-len(d.ids[0]), len(d.ids[0]))
	rec := newRecorder()
	for r := range *runs {
		for _, k := range kinds {
			logf("run %d/%d: %s", r+1, *runs, k.name)
			runStore(k, d, cfg, rec)
			runtime.GC()
			debug.FreeOSMemory()
		}
	}

	var w io.Writer = os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fatalf("%v", err)
		}
		defer f.Close()
		w = io.MultiWriter(os.Stdout, f)
	}
	report(w, rec, cfg, d, *runs, kinds)
	if *chart != "" && len(rec.series) > 0 {
		if err := drawChart(*chart, rec.series, kinds); err != nil {
			fatalf("chart: %v", err)
		}
		logf("wrote %s", *chart)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(2)
}
