package main

// The growth mode (-sizes): W1, W2, W4 and recovery at several sizes, each
// figure beside what explains a step in it: the garbage collector's work,
// the heap's size, the page faults and the CPU time of the measured part.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// usage is a reading of the process's costs so far.
type usage struct {
	at             time.Time
	gcs            uint32
	pause          time.Duration // stop-the-world pauses of the GC
	gcCPU          float64       // CPU seconds of the GC, less its idle-time marking
	cpu            time.Duration // user + system CPU time of the process
	heap           uint64        // HeapInuse
	minflt, majflt int64
}

var gcCPUMetrics = []metrics.Sample{
	{Name: "/cpu/classes/gc/total:cpu-seconds"},
	{Name: "/cpu/classes/gc/mark/idle:cpu-seconds"},
}

func readUsage() usage {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	metrics.Read(gcCPUMetrics)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return usage{
		at:     time.Now(),
		gcs:    ms.NumGC,
		pause:  time.Duration(ms.PauseTotalNs),
		gcCPU:  gcCPUMetrics[0].Value.Float64() - gcCPUMetrics[1].Value.Float64(),
		cpu:    time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		heap:   ms.HeapInuse,
		minflt: ru.Minflt,
		majflt: ru.Majflt,
	}
}

// phaseCost is what a measured part cost the process: wall time, GC cycles,
// their pauses and CPU, the process's CPU, the heap in use at its end and
// the page faults taken.
type phaseCost struct {
	el             time.Duration
	gcs            uint32
	pause          time.Duration
	gcCPU          float64
	cpu            time.Duration
	heap           uint64
	minflt, majflt int64
}

// since returns the costs from the earlier reading b to u.
func (u usage) since(b usage) phaseCost {
	return phaseCost{
		el:     u.at.Sub(b.at),
		gcs:    u.gcs - b.gcs,
		pause:  u.pause - b.pause,
		gcCPU:  u.gcCPU - b.gcCPU,
		cpu:    u.cpu - b.cpu,
		heap:   u.heap,
		minflt: u.minflt - b.minflt,
		majflt: u.majflt - b.majflt,
	}
}

// growthConfig is what the growth mode needs beyond config.
type growthConfig struct {
	sizes              []int
	w1, w2, w4, recov  bool
	dir                string // where recovery's stores are made ("": the system's temporary directory)
	runs, warm         int
	order              string
	seed               uint64
	loadStart, loadEnd string
}

// growthSample is one measurement: its figure as shown, its cost per item
// in ns (what the medians are taken of), the process's costs, and how many
// items (or reads) they are spread over.
type growthSample struct {
	figure  string
	perItem float64
	cost    phaseCost
	ops     int
}

// cpuPerItem is the process's CPU time per item, in ns.
func (s growthSample) cpuPerItem() float64 {
	return float64(s.cost.cpu.Nanoseconds()) / float64(s.ops)
}

type growthKey struct {
	wl, store string
	n         int
}

// The growth mode's workloads, in the order of the report.
var growthWorkloads = []struct{ key, title, note string }{
	{"W1", "W1: inserts of the W1 mix into a fresh store", "figure: ns per insert, and the heap the store keeps per item beyond the raw id and JSON (after runtime.GC)."},
	{"W2", "W2: point reads of random live ids, one goroutine", "figure: ns per read (lethe: ReadItem, a fresh copy; lethe+append: ReadItemAppend into one buffer; the others: the stored value); min(max(2N, 200k), 2M) reads."},
	{"W4", "W4: purge of N items expired at one instant", "figure: from the expiry until none is present, items/s, and until the count first dropped (a store that purges on a tick, as BuntDB's and go-cache's do every second, waits up to a tick: at small N that wait is most of the figure); the costs are over the whole span."},
	{"R", "Recovery: Open of a durable store of N items", "lethe, one session: loaded in one session under SyncNever on 8 writers, as lethe's own snapshots left it; lethe, snapshot: reopened after a Checkpoint; buntdb: its append-only file (1000 items per Update, SyncPolicy Never). The costs are Open's alone."},
}

// runGrowth runs the growth mode and writes its tables to w.
func runGrowth(w io.Writer, kinds []storeKind, cfg config, gc growthConfig) {
	gc.loadStart = loadAvg()
	rec := newRecorder() // for the workloads' notes
	samples := map[growthKey][]growthSample{}
	var heapBase uint64 // the heap in use with the data set alone
	add := func(wl, store string, n int, s growthSample) {
		s.cost.heap -= min(heapBase, s.cost.heap)
		k := growthKey{wl, store, n}
		samples[k] = append(samples[k], s)
	}
	var d *dataset
	for _, n := range gc.sizes {
		// Each size has a data set of its own, as a run with -n has (the
		// same items: a smaller set is a prefix of a larger), so that the
		// heap the GC paces itself by is the same.
		d = nil
		settle()
		logf("generating %d items", n)
		d = newDataset(n, 1)
		settle()
		heapBase = readUsage().heap
		c := cfg
		c.n = n
		c.reads = min(max(2*n, 200_000), 2_000_000)
		for r := range gc.runs {
			for _, k := range runOrder(kinds, gc.order, r, gc.seed) {
				logf("%d items, run %d/%d: %s", n, r+1, gc.runs, k.name)
				settle()
				warmUp(k, d, c, gc.warm)
				settle()
				growthStore(k, d, c, gc, rec, add)
			}
			if gc.recov {
				growthRecovery(kinds, d, gc, add)
			}
		}
	}
	gc.loadEnd = loadAvg()
	reportGrowth(w, kinds, gc, samples, rec, d)
}

// growthStore measures W1, W2 and W4 (as gc says) on stores of kind k
// holding the items of d.
func growthStore(k storeKind, d *dataset, cfg config, gc growthConfig, rec *recorder, add func(string, string, int, growthSample)) {
	n := len(d.ids)
	insertNs := 0.0
	if gc.w1 || gc.w2 || gc.w4 {
		before := heapAlloc()
		s := k.open(storeOpts{cleanup: cfg.cleanup})
		u := readUsage()
		for i := range n {
			s.insert(d.ids[i], d.docs[i], d.ttls[i])
		}
		cost := readUsage().since(u)
		after := heapAlloc()
		if got := s.present(); got != n {
			panic(fmt.Sprintf("%s: %d items present after inserting %d", k.name, got, n))
		}
		insertNs = float64(cost.el.Nanoseconds()) / float64(n)
		if gc.w1 {
			beyond := (float64(after) - float64(before) - float64(d.raw)) / float64(n)
			add("W1", k.name, n, growthSample{fmt.Sprintf("%.0f ns, %.0f B/item", insertNs, beyond), insertNs, cost, n})
			logf("%-12s W1 %d items: %.0f ns/op, %.0f B/item beyond raw, %d GCs", k.name, n, insertNs, beyond, cost.gcs)
		}
		if gc.w2 {
			order := readOrder(cfg.reads, nil, n, 100)
			runtime.GC()
			u := readUsage()
			var sum int64
			for _, j := range order {
				l, ok := s.get(d.ids[j])
				if !ok {
					panic(fmt.Sprintf("%s: a read of a live id missed", k.name))
				}
				sum += int64(l)
			}
			cost := readUsage().since(u)
			sink.Add(sum)
			ns := float64(cost.el.Nanoseconds()) / float64(len(order))
			add("W2", k.name, n, growthSample{fmt.Sprintf("%.0f ns", ns), ns, cost, len(order)})
			logf("%-12s W2 %d items: %.0f ns/op", k.name, n, ns)
		}
		s.close()
	}
	if gc.w4 && k.ttl {
		settle()
		if res, ok := purgeAll(k, d, cfg, rec, insertNs); ok {
			ns := float64(res.el.Nanoseconds()) / float64(n)
			add("W4", k.name, n, growthSample{fmt.Sprintf("%s, %s items/s (first after %s)", fmtSeconds(res.el), fmtNum(float64(n)/res.el.Seconds()), fmtSeconds(res.first)), ns, res.cost, n})
		}
	}
}

// growthRecovery measures the recovery of lethe's and BuntDB's durable
// stores of the items of d, for those of them among kinds.
func growthRecovery(kinds []storeKind, d *dataset, gc growthConfig, add func(string, string, int, growthSample)) {
	n := len(d.ids)
	has := func(name string) bool {
		return slices.ContainsFunc(kinds, func(k storeKind) bool { return k.name == name })
	}
	sample := func(el time.Duration, cost phaseCost) growthSample {
		return growthSample{fmtSeconds(el), float64(el.Nanoseconds()) / float64(n), cost, n}
	}
	if has("lethe") {
		dir := tempDir(gc.dir, "lethe-growth")
		loadLethe(dir, d, n, n)
		s, el, _, cost := reopenLethe(dir, n)
		add("R", "lethe, one session", n, sample(el, cost))
		logf("%-12s recovery of %d items, one session: %v", "lethe", n, el.Round(time.Millisecond))
		if err := s.st.Checkpoint(bg); err != nil {
			panic(err)
		}
		s.closeErr()
		s, el, _, cost = reopenLethe(dir, n)
		s.closeErr()
		add("R", "lethe, snapshot", n, sample(el, cost))
		logf("%-12s recovery of %d items, snapshot: %v", "lethe", n, el.Round(time.Millisecond))
		os.RemoveAll(dir)
		settle()
	}
	if has("buntdb") {
		dir := tempDir(gc.dir, "buntdb-growth")
		loadBunt(dir, d, n)
		settle()
		el, cost := reopenBunt(dir, n)
		add("R", "buntdb", n, sample(el, cost))
		logf("%-12s recovery of %d items: %v", "buntdb", n, el.Round(time.Millisecond))
		os.RemoveAll(dir)
		settle()
	}
}

// reportGrowth writes the growth tables: per workload, every store at every
// size with its costs; then the cost per item of each against size.
func reportGrowth(w io.Writer, kinds []storeKind, gc growthConfig, samples map[growthKey][]growthSample, rec *recorder, d *dataset) {
	fmt.Fprintf(w, "## Growth: W1, W2, W4 and recovery against N\n\n")
	fmt.Fprintf(w, "`go run . %s` — sizes %s, %d run(s) (medians by cost per item); %s, GOMAXPROCS %d, %s/%s.\n\n",
		strings.Join(os.Args[1:], " "), joinInts(gc.sizes), gc.runs, runtime.Version(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "Machine: %s; caches %s; memory %s. Load average (1, 5, 15 min) at the start: %s; at the end: %s.\n\n",
		cpuModel(), cacheSizes(), memTotal(), gc.loadStart, gc.loadEnd)
	fmt.Fprintf(w, "Average item: %d bytes of JSON, id %d bytes. Wall time against CPU time says how much of the machine the process had: a measured part on one goroutine that took more wall time than CPU time waited for a core. Costs are those of the measured part alone, for the whole process: GCs (cycles completed), GC CPU (the collector's CPU seconds, less its marking on idle processors: runtime/metrics), pauses (stop-the-world), CPU (user + system, all threads), heap (HeapInuse at the end, less that of the data set alone: what the store holds, and garbage not yet collected), faults (minor: pages first touched or given back and taken again; major: read from disk).\n\n",
		int(d.raw)/len(d.ids)-len(d.ids[0]), len(d.ids[0]))

	var rows []string // store names in order of first appearance
	for _, gw := range growthWorkloads {
		for _, k := range storeOrder(kinds, gw.key) {
			for _, n := range gc.sizes {
				if _, ok := samples[growthKey{gw.key, k, n}]; ok && !slices.Contains(rows, gw.key+"\x00"+k) {
					rows = append(rows, gw.key+"\x00"+k)
				}
			}
		}
	}

	// Cost per item against size: wall time, then CPU time.
	for _, t := range []struct {
		title string
		v     func(growthSample) float64
	}{
		{"Wall time per item (ns) against N", func(s growthSample) float64 { return s.perItem }},
		{"CPU time per item (ns, all the process's threads) against N", growthSample.cpuPerItem},
	} {
		fmt.Fprintf(w, "### %s\n\n| workload | store |", t.title)
		for _, n := range gc.sizes {
			fmt.Fprintf(w, " %s |", fmtCount(n))
		}
		fmt.Fprintf(w, " largest ÷ smallest |\n|---|---|%s---|\n", strings.Repeat("---|", len(gc.sizes)))
		for _, row := range rows {
			wl, store, _ := strings.Cut(row, "\x00")
			fmt.Fprintf(w, "| %s | %s |", wl, store)
			var first, last float64
			for _, n := range gc.sizes {
				s, ok := medianSample(samples[growthKey{wl, store, n}])
				if !ok {
					fmt.Fprintf(w, " – |")
					continue
				}
				v := t.v(s)
				if first == 0 {
					first = v
				}
				last = v
				fmt.Fprintf(w, " %s |", fmtNum(v))
			}
			if first > 0 {
				fmt.Fprintf(w, " %.2f× |\n", last/first)
			} else {
				fmt.Fprintf(w, " |\n")
			}
		}
		fmt.Fprintln(w)
	}

	for _, gw := range growthWorkloads {
		var any bool
		for _, row := range rows {
			if strings.HasPrefix(row, gw.key+"\x00") {
				any = true
			}
		}
		if !any {
			continue
		}
		fmt.Fprintf(w, "### %s\n\n%s\n\n", gw.title, gw.note)
		fmt.Fprintf(w, "| store | N | figure | ns/item | GCs | GC CPU s | pauses ms | CPU s | heap MiB | minor faults | per item | major faults |\n")
		fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, row := range rows {
			wl, store, _ := strings.Cut(row, "\x00")
			if wl != gw.key {
				continue
			}
			for _, n := range gc.sizes {
				s, ok := medianSample(samples[growthKey{wl, store, n}])
				if !ok {
					continue
				}
				c := s.cost
				fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %.2f | %.1f | %.2f | %.0f | %d | %.3f | %d |\n",
					store, fmtCount(n), s.figure, fmtNum(s.perItem), c.gcs, c.gcCPU, float64(c.pause.Microseconds())/1e3,
					c.cpu.Seconds(), float64(c.heap)/(1<<20), c.minflt, float64(c.minflt)/float64(n), c.majflt)
			}
		}
		fmt.Fprintln(w)
	}
	if len(rec.notes) > 0 {
		fmt.Fprintf(w, "Notes:\n\n")
		for _, n := range rec.notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
		fmt.Fprintln(w)
	}
}

// storeOrder returns the row names of workload wl for the stores of kinds.
func storeOrder(kinds []storeKind, wl string) []string {
	if wl != "R" {
		var out []string
		for _, k := range kinds {
			out = append(out, k.name)
		}
		return out
	}
	return []string{"lethe, one session", "lethe, snapshot", "buntdb"}
}

// medianSample returns the sample of median cost per item (the lower
// middle one of an even count).
func medianSample(ss []growthSample) (growthSample, bool) {
	if len(ss) == 0 {
		return growthSample{}, false
	}
	ss = slices.Clone(ss)
	slices.SortFunc(ss, func(a, b growthSample) int {
		switch {
		case a.perItem < b.perItem:
			return -1
		case a.perItem > b.perItem:
			return 1
		}
		return 0
	})
	return ss[(len(ss)-1)/2], true
}

// parseSizes parses -sizes: item counts, comma-separated, ascending.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(f, "_", ""))
		if err != nil || n < 10 || n > 50_000_000 {
			return nil, fmt.Errorf("bad size %q: use 10 to 50000000 items", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no sizes in %q", s)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func joinInts(v []int) string {
	var s []string
	for _, n := range v {
		s = append(s, fmtCount(n))
	}
	return strings.Join(s, ", ")
}

// fmtCount writes n as 10k, 1M and so on where it is round.
func fmtCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

func fmtSeconds(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1e3)
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// loadAvg returns /proc/loadavg's three load averages, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], ", ")
	}
	return "unknown"
}

// cpuModel returns /proc/cpuinfo's model name, or "unknown CPU".
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// cacheSizes describes the first CPU's caches from sysfs, or "unknown".
func cacheSizes() string {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	var out []string
	for _, dir := range dirs {
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(dir, name))
			return strings.TrimSpace(string(b))
		}
		kind := read("type")
		if kind == "Instruction" {
			continue
		}
		out = append(out, "L"+read("level")+" "+read("size"))
	}
	if len(out) == 0 {
		return "unknown"
	}
	return strings.Join(out, ", ")
}

// memTotal returns /proc/meminfo's MemTotal in GiB, or "unknown".
func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err == nil {
				return fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	return "unknown"
}
