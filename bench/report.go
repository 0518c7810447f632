package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
)

type metricDef struct {
	key   string
	lower bool   // lower is better
	floor string // the floor the figure is compared with; "": no ratios
}

const (
	mapFloor   = "map+RWMutex"
	btreeFloor = "btree+map"
)

type section struct {
	title   string
	note    string
	metrics []metricDef
}

var sections = []section{
	{"W1: insert with a TTL mix (⅓ 1 h, ⅓ 2 h, ⅓ none)", "heap: HeapAlloc after minus before (each after runtime.GC), minus N×(len(id)+len(json)), per item. 2g: the same inserts from 2 goroutines at once (each every other item) into a fresh store, wall time per item.", []metricDef{
		{"W1 insert ns/op", true, mapFloor},
		{"W1 insert ns/op 2g", true, mapFloor},
		{"W1 heap B/item beyond raw", true, mapFloor},
	}},
	{"W2: point reads of random live ids", "lethe's ReadItem returns a fresh copy of the item; the others return the value they store (no copy).", []metricDef{
		{"W2 read ns/op 1g", true, mapFloor},
		{"W2 read Mops/s 1g", false, mapFloor},
		{"W2 read ns/op 2g", true, mapFloor},
		{"W2 read Mops/s 2g", false, mapFloor},
	}},
	{"W3: half the items expired, not purged", "expired returned: share of reads of expired ids that returned the item (must be 0; the map floor has no TTL). live read: one goroutine.", []metricDef{
		{"W3 expired reads returned %", true, ""},
		{"W3 live read ns/op", true, btreeFloor},
	}},
	{"W4: purge of N expired items", "from the instant all N are expired until none is physically present; first purge: until the count first drops.", []metricDef{
		{"W4 purge s", true, btreeFloor},
		{"W4 purge items/s", false, btreeFloor},
		{"W4 first purge ms", true, ""},
	}},
	{"W5: read latency, one reader on a fixed schedule, while N/2 expired items are purged", "latency from each read's intended start (no coordinated omission), reads intended in the window after the expiry; >1ms: total own duration of reads that took over 1 ms; preemptions: involuntary context switches of the reader's OS thread during the whole run (the OS took its core away).", []metricDef{
		{"W5 purge p50 µs", true, btreeFloor},
		{"W5 purge p99 µs", true, btreeFloor},
		{"W5 purge p99.9 µs", true, btreeFloor},
		{"W5 purge max µs", true, btreeFloor},
		{"W5 purge time in reads >1ms ms", true, ""},
		{"W5 purge reader preemptions", true, ""},
	}},
	{"W5 idle: the same reader with nothing expiring", "", []metricDef{
		{"W5 idle p50 µs", true, mapFloor},
		{"W5 idle p99 µs", true, mapFloor},
		{"W5 idle p99.9 µs", true, mapFloor},
		{"W5 idle max µs", true, mapFloor},
		{"W5 idle time in reads >1ms ms", true, ""},
		{"W5 idle reader preemptions", true, ""},
	}},
	{"W6: filtered scan, status = \"" + queryStatus + "\"", "time per item in the store (N), all matches counted and checked.", []metricDef{
		{"W6 scan ns/item", true, mapFloor},
	}},
	{"W7: queries an index answers", "lethe (index): the default indexing policy, the index made by the second filter on its path, the first scanning (\"first queries\": the first two equality and range queries, all four together); lethe (scan): the same queries with /age/? and /score/? excluded; BuntDB with JSON indexes on age and score (\"first queries\": making them). Equality age = 40 and range 5000 <= score < 5100: time per result (SELECT *, every result read); TOP 10 ORDER BY score DESC and GROUP BY city with COUNT: time per query. Counts checked against the data.", []metricDef{
		{"W7 equality ns/result", true, ""},
		{"W7 range ns/result", true, ""},
		{"W7 top10 µs", true, ""},
		{"W7 group by ms", true, ""},
		{"W7 first queries ms", true, ""},
	}},
}

var peerNames = []string{"buntdb", "ttlcache", "go-cache", "buntdb (json index)"}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (r *recorder) med(metric, store string) (float64, bool) {
	v, ok := r.vals[metric][store]
	if !ok {
		return 0, false
	}
	return median(v), true
}

func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "–"
	case a >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func ratio(v, ref float64, ok bool) string {
	if !ok || ref == 0 || math.IsNaN(ref) {
		return "–"
	}
	q := v / ref
	if q != 0 && math.Abs(q) < 0.1 {
		return fmt.Sprintf("%.1g×", q)
	}
	if math.Abs(q) >= 1000 {
		return fmt.Sprintf("%.3g×", q)
	}
	return fmt.Sprintf("%.2f×", q)
}

// spread returns " ±x%": half the range of a metric's values over the
// runs, as a share of their median; "" with fewer than two runs.
func (r *recorder) spread(metric, store string) string {
	v := r.vals[metric][store]
	if len(v) < 2 {
		return ""
	}
	m := median(v)
	if m == 0 {
		return ""
	}
	return fmt.Sprintf(" ±%.0f%%", 100*(slices.Max(v)-slices.Min(v))/2/math.Abs(m))
}

// bestPeer returns the best peer median of metric.
func (r *recorder) bestPeer(m metricDef) (float64, string, bool) {
	best, name, found := 0.0, "", false
	for _, p := range peerNames {
		v, ok := r.med(m.key, p)
		if !ok {
			continue
		}
		if !found || (m.lower && v < best) || (!m.lower && v > best) {
			best, name, found = v, p, true
		}
	}
	return best, name, found
}

func report(w io.Writer, rec *recorder, cfg config, d *dataset, runs int, kinds []storeKind, dc durableConfig, fc frontConfig) {
	fmt.Fprintf(w, "## Results\n\n")
	fmt.Fprintf(w, "`go run . %s` — N = %d, %d run(s), medians; %s, GOMAXPROCS %d, %s/%s.\n", strings.Join(os.Args[1:], " "), cfg.n, runs, runtime.Version(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "Items: %d bytes of JSON on average, ids like `%s`. Each cell: median, then, with several runs, ±the spread (half the range of the runs, as a share of the median), then the ratio to the best peer (BuntDB, ttlcache, go-cache) and to the floor (%s or %s, as the column says).\n\n", int(d.raw)/cfg.n-len(d.ids[0]), d.ids[0], mapFloor, btreeFloor)
	fmt.Fprintf(w, "Every store is measured after the same warm-up (a throwaway store of its kind, built and read) and a forced GC that returns free memory to the OS. The order of the stores in each run:\n\n")
	for i, o := range rec.orders {
		fmt.Fprintf(w, "%d. %s\n", i+1, o)
	}
	fmt.Fprintln(w)
	if bi, ok := debug.ReadBuildInfo(); ok {
		var deps []string
		for _, m := range bi.Deps {
			for _, p := range []string{"tidwall/buntdb", "jellydator/ttlcache", "patrickmn/go-cache", "google/btree", "tidwall/gjson", "go.etcd.io/bbolt"} {
				if strings.Contains(m.Path, p) {
					deps = append(deps, m.Path+" "+m.Version)
				}
			}
		}
		fmt.Fprintf(w, "Peers: %s.\n\n", strings.Join(deps, ", "))
	}
	var names []string
	for _, k := range kinds {
		names = append(names, k.name)
		switch k.name {
		case "buntdb":
			names = append(names, "buntdb (json index)")
		case "lethe":
			names = append(names, "lethe (index)", "lethe (scan)")
		}
	}
	for _, sec := range sections {
		any := false
		for _, m := range sec.metrics {
			if len(rec.vals[m.key]) > 0 {
				any = true
			}
		}
		if !any {
			continue
		}
		fmt.Fprintf(w, "### %s\n\n", sec.title)
		if sec.note != "" {
			fmt.Fprintf(w, "%s\n\n", sec.note)
		}
		fmt.Fprintf(w, "| store |")
		for _, m := range sec.metrics {
			dir := "lower is better"
			if !m.lower {
				dir = "higher is better"
			}
			fl := ""
			if m.floor != "" {
				fl = "; ×peer ×" + m.floor
			}
			fmt.Fprintf(w, " %s (%s%s) |", strings.TrimPrefix(m.key, sec.metrics[0].key[:3]), dir, fl)
		}
		fmt.Fprintf(w, "\n|---|")
		for range sec.metrics {
			fmt.Fprintf(w, "---|")
		}
		fmt.Fprintln(w)
		for _, name := range names {
			has := false
			for _, m := range sec.metrics {
				if _, ok := rec.vals[m.key][name]; ok {
					has = true
				}
			}
			if !has {
				continue
			}
			fmt.Fprintf(w, "| %s |", name)
			for _, m := range sec.metrics {
				v, ok := rec.med(m.key, name)
				if !ok {
					fmt.Fprintf(w, " n/a |")
					continue
				}
				cell := fmtNum(v) + rec.spread(m.key, name)
				if m.floor != "" {
					bp, _, okp := rec.bestPeer(m)
					fv, okf := rec.med(m.key, m.floor)
					cell += " (" + ratio(v, bp, okp) + " " + ratio(v, fv, okf) + ")"
				}
				fmt.Fprintf(w, " %s |", cell)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
	reportDurable(w, rec, cfg, d, dc)
	reportFront(w, rec, cfg, fc)
	goals(w, rec, cfg.n)
	if len(rec.notes) > 0 {
		fmt.Fprintf(w, "### Notes from the runs\n\n")
		for _, n := range rec.notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "### All runs\n\n| metric | store | values |\n|---|---|---|\n")
	for _, sec := range sections {
		for _, m := range sec.metrics {
			for _, name := range names {
				if v, ok := rec.vals[m.key][name]; ok {
					var s []string
					for _, x := range v {
						s = append(s, fmtNum(x))
					}
					fmt.Fprintf(w, "| %s | %s | %s |\n", m.key, name, strings.Join(s, ", "))
				}
			}
		}
	}
	var dnames []string
	for _, k := range durableStores {
		dnames = append(dnames, k.name)
	}
	for _, m := range append(durableMetrics(dc), frontMetrics(fc)...) {
		for _, name := range append(dnames, append(d2Rows, floorName, frontName)...) {
			if v, ok := rec.vals[m][name]; ok {
				var s []string
				for _, x := range v {
					s = append(s, fmtNum(x))
				}
				fmt.Fprintf(w, "| %s | %s | %s |\n", m, name, strings.Join(s, ", "))
			}
		}
	}
	fmt.Fprintln(w)
}

// goals prints lethe's goals, met or missed, from the medians.
func goals(w io.Writer, rec *recorder, n int) {
	type goal struct {
		text   string
		ok     bool
		detail string
		known  bool
	}
	var gs []goal
	get := func(m, s string) (float64, bool) { return rec.med(m, s) }
	for _, variant := range []string{"lethe", "lethe+append"} {
		how := ""
		if variant != "lethe" {
			how = ", ReadItemAppend"
		}
		for _, g := range []string{"1g", "2g"} {
			l, ok := get("W2 read ns/op "+g, variant)
			if !ok {
				continue
			}
			if f, ok := get("W2 read ns/op "+g, mapFloor); ok {
				gs = append(gs, goal{"W2 (" + g + how + ") within 1.3× of the map+RWMutex floor", l <= 1.3*f, fmt.Sprintf("%.2f×", l/f), true})
			}
			if bp, name, ok := rec.bestPeer(metricDef{key: "W2 read ns/op " + g, lower: true}); ok {
				gs = append(gs, goal{"W2 (" + g + how + ") faster than every peer", l < bp, fmt.Sprintf("%.2f× the best peer (%s)", l/bp, name), true})
			}
		}
	}
	// The goals of the second performance issue, against go-cache on its
	// own ground.
	for _, g := range []string{"1g", "2g"} {
		gc, ok := get("W2 read ns/op "+g, "go-cache")
		if !ok {
			continue
		}
		if l, ok := get("W2 read ns/op "+g, "lethe"); ok {
			detail := fmt.Sprintf("%.2f× (%.0f vs %.0f ns)", l/gc, l, gc)
			if cp, ok := get("W2 read ns/op "+g, "go-cache+copy"); ok {
				detail += fmt.Sprintf("; go-cache with a copy: %.0f ns, lethe %.2f× that", cp, l/cp)
			}
			gs = append(gs, goal{"W2 (" + g + ") ReadItem, with its copy, no slower than go-cache's Get", l <= gc, detail, true})
		}
		if l, ok := get("W2 read ns/op "+g, "lethe+append"); ok {
			gs = append(gs, goal{"W2 (" + g + ") ReadItemAppend at least 20% faster than go-cache's Get", l <= 0.8*gc, fmt.Sprintf("%.2f× (%.0f vs %.0f ns)", l/gc, l, gc), true})
		}
	}
	if l, ok := get("W4 purge items/s", "lethe"); ok {
		if gc, ok := get("W4 purge items/s", "go-cache"); ok {
			gs = append(gs, goal{"W4 purge at least as fast as go-cache's janitor", l >= gc, fmt.Sprintf("%.2f× (%.2fM vs %.2fM items/s)", l/gc, l/1e6, gc/1e6), true})
		}
	}
	if m, ok := get("W1 heap B/item beyond raw", "lethe"); ok {
		gc, _ := get("W1 heap B/item beyond raw", "go-cache")
		gs = append(gs, goal{"memory at or below go-cache's per item beyond the raw id and JSON", m <= gc, fmt.Sprintf("%.0f B vs %.0f B", m, gc), true})
	}
	if l1, ok := get("W1 insert ns/op", "lethe"); ok {
		if l2, ok := get("W1 insert ns/op 2g", "lethe"); ok {
			detail := fmt.Sprintf("%.0f ns/op with 2 goroutines vs %.0f with 1 (%.2f×)", l2, l1, l1/l2)
			if g1, ok := get("W1 insert ns/op", "go-cache"); ok {
				if g2, ok := get("W1 insert ns/op 2g", "go-cache"); ok {
					detail += fmt.Sprintf("; go-cache %.2f×", g1/g2)
				}
			}
			gs = append(gs, goal{"W1 inserts scale to 2 goroutines (1.5× the throughput of one) where go-cache's single lock cannot", l1/l2 >= 1.5, detail, true})
		}
	}
	if l, ok := get("W1 insert ns/op", "lethe"); ok {
		for _, p := range []string{"buntdb", "ttlcache"} {
			if v, ok := get("W1 insert ns/op", p); ok {
				gs = append(gs, goal{"W1 faster than " + p, l < v, fmt.Sprintf("%.2f×", l/v), true})
			}
		}
		if f, ok := get("W1 insert ns/op", mapFloor); ok {
			gs = append(gs, goal{"W1 within 2.5× of the floor", l <= 2.5*f, fmt.Sprintf("%.2f×", l/f), true})
		}
		m, _ := get("W1 heap B/item beyond raw", "lethe")
		gs = append(gs, goal{"memory ≤ 150 B/item beyond raw id and JSON", m <= 150, fmt.Sprintf("%.0f B", m), true})
	}
	if v, ok := get("W4 purge items/s", "lethe"); ok {
		gs = append(gs, goal{"W4 ≥ 1,000,000 items/s", v >= 1e6, fmt.Sprintf("%.0f items/s", v), true})
	}
	if v, ok := get("W5 purge max µs", "lethe"); ok {
		gs = append(gs, goal{"W5 max read latency during purge < 1 ms", v < 1000, fmt.Sprintf("%.0f µs", v), true})
		p, _ := get("W5 purge p99 µs", "lethe")
		if i, ok := get("W5 idle p99 µs", "lethe"); ok {
			gs = append(gs, goal{"W5 p99 during purge within 2× of idle p99", p <= 2*i, fmt.Sprintf("%.1f µs vs %.1f µs idle (%.2f×)", p, i, p/i), true})
		}
	}
	if v, ok := get("W3 expired reads returned %", "lethe"); ok {
		gs = append(gs, goal{"W3 hides every expired item", v == 0, fmt.Sprintf("%.1f%% returned", v), true})
	}
	if l, ok := get("D1 items/s 64w", letheAlways); ok {
		if b, ok := get("D1 items/s 64w", "buntdb Always"); ok {
			gs = append(gs, goal{"D1, 64 writers: lethe SyncAlways at least 10× BuntDB Always", l >= 10*b, fmt.Sprintf("%.1f× (%.0f vs %.0f items/s)", l/b, l, b), true})
		}
	}
	for _, row := range []string{d2LogOnly, d2Checkpoint} {
		v, ok := get("D2 open s", row)
		if !ok {
			continue
		}
		text, detail := "D2 recovery of 1,000,000 items in under 2 s ("+strings.TrimPrefix(row, "lethe, ")+")", fmt.Sprintf("%.2f s", v)
		if n != 1_000_000 {
			v *= 1e6 / float64(n)
			detail = fmt.Sprintf("%.2f s for %d items: %.2f s scaled to 1,000,000", v*float64(n)/1e6, n, v)
		}
		gs = append(gs, goal{text, v < 2, detail, true})
	}
	if l, ok := get("F1 read ops/s 16c", frontName); ok {
		if f, ok := get("F1 read ops/s 16c", floorName); ok {
			gs = append(gs, goal{"F1, 16 clients: point reads through the REST front at ≥ 50% of the floor's throughput", l >= 0.5*f, fmt.Sprintf("%.0f%% (%.0f vs %.0f reads/s)", 100*l/f, l, f), true})
		}
	}
	for _, c := range []string{"1c", "16c"} {
		if v, ok := get("F1 read p99 µs "+c, frontName); ok {
			detail := fmt.Sprintf("%.0f µs", v)
			if f, ok := get("F1 read p99 µs "+c, floorName); ok {
				detail += fmt.Sprintf(" (the floor's: %.0f µs)", f)
			}
			gs = append(gs, goal{"F1, " + strings.TrimSuffix(c, "c") + " client(s): read p99 through the REST front < 2 ms", v < 2000, detail, true})
		}
	}
	if len(gs) == 0 {
		return
	}
	fmt.Fprintf(w, "### lethe's goals\n\n| goal | result | figure |\n|---|---|---|\n")
	for _, g := range gs {
		res := "met"
		if !g.ok {
			res = "**missed**"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", g.text, res, g.detail)
	}
	fmt.Fprintln(w)
}

// d2Rows are D2's rows, in order.
var d2Rows = []string{d2LogOnly, d2OneSession, d2Checkpoint, d2Bunt, d2Bolt}

// durableMetrics are the keys D1 and D2 record, in order.
func durableMetrics(dc durableConfig) []string {
	var ms []string
	for _, w := range dc.writers {
		ms = append(ms, fmt.Sprintf("D1 items/s %dw", w))
	}
	return append(ms, "D2 open s", "D2 items/s", "D2 B/item on disk", "D2 log frames replayed", "D2 Checkpoint s")
}

// reportDurable prints D1's and D2's tables, if they ran.
func reportDurable(w io.Writer, rec *recorder, cfg config, d *dataset, dc durableConfig) {
	if cfg.workloads["D1"] {
		fmt.Fprintf(w, "### D1: durable inserts, items/s\n\n")
		fmt.Fprintf(w, "Each store on a fresh directory in %s; each writer inserts %d items (the usual items, %d bytes of JSON on average), one insert per call, acknowledged under the store's policy; a warm-up of %d items on the same writers and a GC first; at most %v per measurement. "+
			"×lethe: the ratio to lethe in the same run, to lethe SyncAlways for stores that sync every acknowledged write (BuntDB Always, bbolt), to lethe SyncEverySecond for BuntDB EverySecond.\n\n",
			dirName(dc.dir), dc.perW, int(d.raw)/cfg.n-len(d.ids[0]), dc.warm, dc.limit)
		fmt.Fprintf(w, "| store |")
		for _, wr := range dc.writers {
			fmt.Fprintf(w, " %d writer%s (higher is better; ×lethe) |", wr, plural(wr))
		}
		fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(dc.writers)))
		for _, k := range dc.stores {
			fmt.Fprintf(w, "| %s |", k.name)
			ref := letheEverySec
			if k.synced {
				ref = letheAlways
			}
			for _, wr := range dc.writers {
				m := fmt.Sprintf("D1 items/s %dw", wr)
				v, ok := rec.med(m, k.name)
				if !ok {
					fmt.Fprintf(w, " n/a |")
					continue
				}
				l, okl := rec.med(m, ref)
				fmt.Fprintf(w, " %s (%s) |", fmtNum(v), ratio(v, l, okl))
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
	if cfg.workloads["D2"] {
		fmt.Fprintf(w, "### D2: recovery of %d items\n\n", cfg.n)
		fmt.Fprintf(w, "Open: the wall time of lethe.Open or buntdb.Open on the store's directory, after a GC, until every item is back in memory (bbolt maps its file and reads on demand: not comparable). "+
			"Log only: loaded under SyncNever in sessions of %d items, each writing less log than starts a snapshot by itself; as one session left it: loaded in one session, snapshotting by itself as its log grew; after Checkpoint: the log-only store reopened, Checkpoint, closed. "+
			"On disk: the store's files over N (raw id and JSON: %d B/item). ×: the ratio to lethe, log only.\n\n", dc.chunk, int(d.raw)/cfg.n)
		fmt.Fprintf(w, "| store, state | Open s (lower is better; ×) | items/s recovered (higher is better) | on disk B/item (lower is better; ×) | log frames replayed | Checkpoint s |\n|---|---|---|---|---|---|\n")
		cell := func(m, row string, ratios bool) string {
			v, ok := rec.med(m, row)
			if !ok {
				return "–"
			}
			s := fmtNum(v)
			if ratios {
				l, okl := rec.med(m, d2LogOnly)
				s += " (" + ratio(v, l, okl) + ")"
			}
			return s
		}
		frames := func(row string) string {
			if v, ok := rec.med("D2 log frames replayed", row); ok {
				return fmt.Sprintf("%.0f", v)
			}
			return "–"
		}
		for _, row := range d2Rows {
			if _, ok := rec.vals["D2 B/item on disk"][row]; !ok {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", row, cell("D2 open s", row, true), cell("D2 items/s", row, false),
				cell("D2 B/item on disk", row, true), frames(row), cell("D2 Checkpoint s", row, false))
		}
		fmt.Fprintln(w)
	}
}

func dirName(dir string) string {
	if dir == "" {
		return "the system's temporary directory (" + os.TempDir() + ")"
	}
	return dir
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// reportFront prints F1's table, if it ran.
func reportFront(w io.Writer, rec *recorder, cfg config, fc frontConfig) {
	if !cfg.workloads["F1"] {
		return
	}
	fmt.Fprintf(w, "### F1: point reads and creates through the REST front, azcosmos v1.5.0\n\n")
	fmt.Fprintf(w, "Each point: a warm-up of %v on each server, then %v on each of the given number of clients (goroutines sharing one azcosmos client), in %d slices, the floor's and the front's alternating; each client calls ReadItem of a random one of the N preloaded items, or CreateItem of a new one (the SDK's default: no content in the response), one call at a time. "+
		"Both servers are httptest.NewTLSServer in this process, on the same cores as the clients. "+
		"lethe front: cosmosrest, in memory, a container partitioned by /id; floor: a net/http handler answering every request with one fixed 250-byte document. "+
		"Latency: each call's own time (the clients are closed-loop); ×floor: the ratio to the floor at the same clients; conns: TLS connections the server accepted during the point.\n\n", fc.warm, fc.dur, max(fc.slices, 1))
	fmt.Fprintf(w, "| clients | server | reads/s (higher is better; ×floor) | read p50 µs | read p99 µs | read conns | creates/s (higher is better; ×floor) | create p50 µs | create p99 µs | create conns |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range fc.clients {
		for _, name := range []string{floorName, frontName} {
			fmt.Fprintf(w, "| %d | %s |", c, name)
			for _, op := range frontOps {
				key := func(m string) string { return fmt.Sprintf("F1 %s %s %dc", op, m, c) }
				v, ok := rec.med(key("ops/s"), name)
				if !ok {
					fmt.Fprintf(w, " n/a | n/a | n/a | n/a |")
					continue
				}
				f, okf := rec.med(key("ops/s"), floorName)
				p50, _ := rec.med(key("p50 µs"), name)
				p99, _ := rec.med(key("p99 µs"), name)
				conns, _ := rec.med(key("conns"), name)
				fmt.Fprintf(w, " %s (%s) | %s | %s | %.0f |", fmtNum(v), ratio(v, f, okf), fmtNum(p50), fmtNum(p99), conns)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
}
