package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/buntdb"
)

// config is what one run needs.
type config struct {
	n         int
	reads     int           // reads per goroutine in W2 and W3
	interval  time.Duration // W5: one read per interval
	window    time.Duration // W5: how long reads go on after expiry (and the idle run's length)
	cleanup   time.Duration // go-cache's janitor interval
	workloads map[string]bool
}

// recorder collects the figures of all runs: metric -> store -> values.
type recorder struct {
	mu     sync.Mutex
	vals   map[string]map[string][]float64
	series map[string][]point // W5 latency over time, last run
	notes  []string
	orders []string // the order of the stores in each run
}

type point struct{ t, us float64 }

func newRecorder() *recorder {
	return &recorder{vals: map[string]map[string][]float64{}, series: map[string][]point{}}
}

func (r *recorder) add(metric, store string, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.vals[metric]
	if m == nil {
		m = map[string][]float64{}
		r.vals[metric] = m
	}
	m[store] = append(m[store], v)
}

func (r *recorder) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.notes, msg) {
		r.notes = append(r.notes, msg)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// sink keeps read results alive.
var sink atomic.Int64

// runStore runs the selected workloads on one store kind.
func runStore(k storeKind, d *dataset, cfg config, rec *recorder) {
	w := cfg.workloads
	insertNs := 0.0
	if w["W1"] || w["W2"] || w["W5"] || w["W6"] || w["W7"] {
		insertNs = phaseLoaded(k, d, cfg, rec)
	}
	if w["W3"] {
		phaseW3(k, d, cfg, rec)
	}
	if w["W4"] && k.ttl {
		phaseW4(k, d, cfg, rec, insertNs)
	}
	if w["W5"] && k.ttl {
		phaseW5Purge(k, d, cfg, rec, insertNs)
	}
	if w["W1"] {
		settle()
		phaseW1Parallel(k, d, cfg, rec, 2)
	}
}

// phaseW1Parallel measures the W1 inserts made by g goroutines at once,
// each inserting every g-th item, into a fresh store: the insert
// throughput a store reaches on g cores.
func phaseW1Parallel(k storeKind, d *dataset, cfg config, rec *recorder, g int) {
	n := len(d.ids)
	s := k.open(storeOpts{cleanup: cfg.cleanup})
	defer s.close()
	var wg sync.WaitGroup
	start := time.Now()
	for w := range g {
		wg.Go(func() {
			for i := w; i < n; i += g {
				s.insert(d.ids[i], d.docs[i], d.ttls[i])
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	if got := s.present(); got != n {
		panic(fmt.Sprintf("%s: %d items present after inserting %d from %d goroutines", k.name, got, n, g))
	}
	ns := float64(el.Nanoseconds()) / float64(n)
	rec.add(fmt.Sprintf("W1 insert ns/op %dg", g), k.name, ns)
	logf("%-12s W1 %d goroutines: %.0f ns/op", k.name, g, ns)
}

// phaseLoaded builds a store of the W1 mix: W1, then W2, W5 idle and W6 on it.
func phaseLoaded(k storeKind, d *dataset, cfg config, rec *recorder) float64 {
	n := len(d.ids)
	before := heapAlloc()
	s := k.open(storeOpts{cleanup: cfg.cleanup})
	start := time.Now()
	for i := range n {
		s.insert(d.ids[i], d.docs[i], d.ttls[i])
	}
	el := time.Since(start)
	after := heapAlloc()
	insertNs := float64(el.Nanoseconds()) / float64(n)
	if cfg.workloads["W1"] {
		rec.add("W1 insert ns/op", k.name, insertNs)
		rec.add("W1 heap B/item beyond raw", k.name, (float64(after)-float64(before)-float64(d.raw))/float64(n))
		logf("%-12s W1 %.0f ns/op, %.0f B/item beyond raw", k.name, insertNs, (float64(after)-float64(before)-float64(d.raw))/float64(n))
	}
	if got := s.present(); got != n {
		panic(fmt.Sprintf("%s: %d items present after inserting %d", k.name, got, n))
	}
	if cfg.workloads["W2"] {
		for _, g := range []int{1, 2} {
			ns, ops := pointReads(s, d.ids, nil, g, cfg.reads, true)
			rec.add(fmt.Sprintf("W2 read ns/op %dg", g), k.name, ns)
			rec.add(fmt.Sprintf("W2 read Mops/s %dg", g), k.name, ops/1e6)
			logf("%-12s W2 %d goroutine(s): %.0f ns/op, %.2f Mops/s", k.name, g, ns, ops/1e6)
		}
	}
	if cfg.workloads["W5"] {
		runtime.GC()
		res := readOnSchedule(s, d.ids, nil, cfg.interval, func() time.Time {
			time.Sleep(200 * time.Millisecond)
			return time.Now()
		}, cfg.window)
		recordW5(rec, "idle", k.name, res)
	}
	if cfg.workloads["W6"] {
		want := d.countStatus(queryStatus)
		runScan := func(name string, sc scanner) {
			runtime.GC()
			start := time.Now()
			got := sc.scan(queryStatus)
			el := time.Since(start)
			if got != want {
				panic(fmt.Sprintf("%s: W6 found %d items, want %d", name, got, want))
			}
			rec.add("W6 scan ns/item", name, float64(el.Nanoseconds())/float64(n))
			logf("%-12s W6 %.0f ns/item (%d matches)", name, float64(el.Nanoseconds())/float64(n), got)
		}
		if sc, ok := s.(scanner); ok {
			runScan(k.name, sc)
		}
		if b, ok := s.(*buntStore); ok {
			if err := b.db.CreateIndex("status", "*", buntdb.IndexJSON("status")); err != nil {
				panic(err)
			}
			runScan("buntdb (json index)", buntIndexed{b})
		}
	}
	if cfg.workloads["W7"] {
		phaseW7(k, s, d, rec)
	}
	s.close()
	return insertNs
}

// pointReads reads random ids (from sel, or all) on g goroutines, reads
// each, and returns ns per operation (per goroutine) and operations per
// second (all goroutines). With must, a miss panics.
func pointReads(s store, ids []string, sel []int32, g, reads int, must bool) (nsPerOp, opsPerSec float64) {
	orders := make([][]int32, g)
	for i := range orders {
		orders[i] = readOrder(reads, sel, len(ids), uint64(100+i))
	}
	runtime.GC()
	var wg sync.WaitGroup
	var missed atomic.Int64
	start := time.Now()
	for i := range g {
		wg.Add(1)
		go func(order []int32) {
			defer wg.Done()
			var sum, miss int64
			for _, j := range order {
				n, ok := s.get(ids[j])
				if !ok {
					miss++
				}
				sum += int64(n)
			}
			sink.Add(sum)
			missed.Add(miss)
		}(orders[i])
	}
	wg.Wait()
	el := time.Since(start)
	if must && missed.Load() > 0 {
		panic(fmt.Sprintf("%d reads of live ids missed", missed.Load()))
	}
	total := float64(g * reads)
	return float64(el.Nanoseconds()) * float64(g) / total, total / el.Seconds()
}

// phaseW3: half the items expired but still physically present.
func phaseW3(k storeKind, d *dataset, cfg config, rec *recorder) {
	n := len(d.ids)
	s := k.open(storeOpts{noPurge: true, manual: true, cleanup: cfg.cleanup})
	defer s.close()
	var live, expired []int32
	for i := range n {
		if i%2 == 0 {
			s.insert(d.ids[i], d.withTTL(i, 1), time.Second)
			expired = append(expired, int32(i))
		} else {
			s.insert(d.ids[i], d.docs[i], d.ttls[i])
			live = append(live, int32(i))
		}
	}
	if e, ok := s.(shortExpirer); ok {
		e.elapse(2 * time.Second)
	} else {
		time.Sleep(1100 * time.Millisecond)
	}
	if got := s.present(); got != n {
		rec.note("W3: %s purged expired items although its cleanup was off (%d of %d present)", k.name, got, n)
	}
	// Hiding: read expired ids; any hit is a failure.
	check := min(len(expired), 10000)
	hits := 0
	for _, j := range expired[:check] {
		if _, ok := s.get(d.ids[j]); ok {
			hits++
		}
	}
	rec.add("W3 expired reads returned %", k.name, 100*float64(hits)/float64(check))
	ns, _ := pointReads(s, d.ids, live, 1, cfg.reads, true)
	rec.add("W3 live read ns/op", k.name, ns)
	logf("%-12s W3 %d/%d expired returned, live reads %.0f ns/op", k.name, hits, check, ns)
}

// deadline estimates when the items of an insert of n items starting now can
// all expire at once: after the insert, with a margin.
func deadline(n int, insertNs float64) time.Time {
	if insertNs <= 0 {
		insertNs = 5000
	}
	est := time.Duration(float64(n) * insertNs * 2.5)
	margin := time.Second
	if n < 100_000 {
		margin = 200 * time.Millisecond
	}
	return time.Now().Add(est + margin)
}

// expire waits for the items inserted to expire at dl and returns the
// instant they all are expired.
func expire(s store, dl time.Time) time.Time {
	if e, ok := s.(expirer); ok {
		return e.expireAt(dl)
	}
	time.Sleep(time.Until(dl))
	return dl
}

// ttlUntil is the TTL that makes an item inserted now expire at dl.
func ttlUntil(dl time.Time) time.Duration {
	return max(time.Until(dl), time.Nanosecond)
}

// phaseW4: N items all expire at one instant; time until all are gone.
func phaseW4(k storeKind, d *dataset, cfg config, rec *recorder, insertNs float64) {
	res, ok := purgeAll(k, d, cfg, rec, insertNs)
	if !ok {
		return
	}
	n := len(d.ids)
	rec.add("W4 purge s", k.name, res.el.Seconds())
	rec.add("W4 purge items/s", k.name, float64(n)/res.el.Seconds())
	rec.add("W4 first purge ms", k.name, float64(res.first.Milliseconds()))
}

// purgeResult is what purgeAll measured: from the common expiry until every
// item is gone (el), until the count first dropped (first), and the
// process's costs over el.
type purgeResult struct {
	el, first time.Duration
	cost      phaseCost
}

// purgeAll inserts the items of d into a fresh store of kind k so that all
// expire at one instant, and measures their purge (W4). ok is false, with
// a note in rec, when the figure is left out.
func purgeAll(k storeKind, d *dataset, cfg config, rec *recorder, insertNs float64) (res purgeResult, ok bool) {
	n := len(d.ids)
	s := k.open(storeOpts{cleanup: cfg.cleanup})
	defer s.close()
	dl := deadline(n, insertNs)
	for i := range n {
		s.insert(d.ids[i], d.withTTL(i, 0), ttlUntil(dl))
	}
	if time.Now().After(dl) {
		rec.note("W4: %s's insert overran the common expiry instant by %v: that run's figure is left out", k.name, time.Since(dl).Round(time.Millisecond))
		return res, false
	}
	runtime.GC()
	e := expire(s, dl)
	u := readUsage()
	var first time.Time
	gone := false
	// Two minutes per million items, at least two: BuntDB's purge of a
	// million took over a minute on the shared machine.
	wait := max(2*time.Minute, time.Duration(n)*120*time.Microsecond)
	limit := time.Now().Add(wait)
	for time.Now().Before(limit) {
		t := time.Now()
		c := s.present()
		cost := time.Since(t)
		if c < n && first.IsZero() {
			first = t
		}
		if c == 0 {
			gone = true
			break
		}
		// Counting costs some stores time: lethe's first Stats after the
		// expiry reads the size of every newly expired item, taking each
		// shard's lock a few thousand items at a time. Look at most a
		// sixth of the time, every millisecond near the end, and at least
		// every 10 ms: the first count's cost (a few hundred ms for lethe)
		// must not delay the look that sees the purge done.
		time.Sleep(min(max(time.Millisecond, 5*cost), 10*time.Millisecond))
	}
	if !gone {
		rec.note("W4: %s did not purge all items within %v", k.name, wait)
		return res, false
	}
	res = purgeResult{el: time.Since(e), first: first.Sub(e), cost: readUsage().since(u)}
	if ls, ok := s.(*letheStore); ok {
		if st := ls.c.Stats(); st.Purged != int64(n) || st.ExpiredPending != 0 {
			panic(fmt.Sprintf("lethe W4: stats %+v", st))
		}
	}
	logf("%-12s W4 all %d gone %v after expiry (first purge after %v): %.0f items/s", k.name, n, res.el.Round(time.Millisecond), res.first.Round(time.Millisecond), float64(n)/res.el.Seconds())
	return res, true
}

// phaseW5Purge: a reader on a schedule while half the items are purged.
func phaseW5Purge(k storeKind, d *dataset, cfg config, rec *recorder, insertNs float64) {
	n := len(d.ids)
	s := k.open(storeOpts{cleanup: cfg.cleanup})
	defer s.close()
	dl := deadline(n, insertNs)
	var live []int32
	for i := range n {
		if i%2 == 0 {
			s.insert(d.ids[i], d.withTTL(i, 0), ttlUntil(dl))
			continue
		}
		live = append(live, int32(i))
		switch i % 3 {
		case 0:
			s.insert(d.ids[i], d.withTTL(i, 3600), time.Hour)
		case 1:
			s.insert(d.ids[i], d.withTTL(i, 7200), 2*time.Hour)
		default:
			s.insert(d.ids[i], d.withTTL(i, -1), 0)
		}
	}
	if time.Now().After(dl) {
		rec.note("W5: %s's insert overran the common expiry instant by %v: that run's figure is left out", k.name, time.Since(dl).Round(time.Millisecond))
		return
	}
	runtime.GC()
	res := readOnSchedule(s, d.ids, live, cfg.interval, func() time.Time { return expire(s, dl) }, cfg.window)
	left := s.present()
	if left != n-n/2 {
		rec.note("W5: %s had not purged every expired item %v after expiry (%d of %d left)", k.name, cfg.window, left-(n-n/2), n/2)
	}
	recordW5(rec, "purge", k.name, res)
	rec.mu.Lock()
	rec.series[k.name] = res.series
	rec.mu.Unlock()
}

// scheduleResult is what readOnSchedule measured after the reference instant.
type scheduleResult struct {
	lat      []int64 // latency from intended start, ns, of reads intended after ref
	slowOwn  time.Duration
	slowN    int
	behind   bool // the reader never caught up with its schedule
	switches int  // times the OS preempted the reader's thread (-1: unknown)
	series   []point
}

// readOnSchedule reads random ids (from sel, or all) on one goroutine, one
// read every interval, and measures each from its intended start, so that a
// stall counts for every read it delays (no coordinated omission). mark runs
// on the calling goroutine meanwhile and returns the reference instant (the
// expiry); reads go on for window after it and are summarized from it on.
func readOnSchedule(s store, ids []string, sel []int32, interval time.Duration, mark func() time.Time, window time.Duration) scheduleResult {
	order := readOrder(1<<20, sel, len(ids), 42)
	var stop atomic.Bool
	type raw struct {
		intended []int64 // since t0
		lat      []int64
		slowOwn  time.Duration
		slowN    int
		switches int
		stopAt   int64 // since t0
	}
	out := make(chan raw)
	t0 := time.Now()
	go func() {
		// One OS thread for the reader, so that its involuntary context
		// switches (the OS taking the core away) can be counted.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r := raw{intended: make([]int64, 0, 1<<22), lat: make([]int64, 0, 1<<22)}
		cs0 := involuntarySwitches()
		iv := int64(interval)
		var sum int64
		for i := int64(0); ; i++ {
			if i&1023 == 0 && stop.Load() {
				break
			}
			next := i * iv
			now := int64(time.Since(t0))
			for now < next {
				now = int64(time.Since(t0))
			}
			n, _ := s.get(ids[order[i&(1<<20-1)]])
			sum += int64(n)
			end := int64(time.Since(t0))
			if own := time.Duration(end - now); own > time.Millisecond {
				r.slowOwn += own
				r.slowN++
			}
			r.intended = append(r.intended, next)
			r.lat = append(r.lat, end-next)
		}
		sink.Add(sum)
		r.stopAt = int64(time.Since(t0))
		r.switches = involuntarySwitches() - cs0
		out <- r
	}()
	ref := mark()
	time.Sleep(time.Until(ref.Add(window)))
	stop.Store(true)
	r := <-out
	// Reads the schedule called for but that never started because the
	// reader was stuck when told to stop count too, each with its latency
	// so far (a lower bound), so that a stall at the end is not dropped.
	iv := int64(interval)
	for next := int64(len(r.intended)) * iv; next < r.stopAt; next += iv {
		r.intended = append(r.intended, next)
		r.lat = append(r.lat, r.stopAt-next)
	}
	refOff := int64(ref.Sub(t0))
	res := scheduleResult{slowOwn: r.slowOwn, slowN: r.slowN, switches: r.switches}
	const bin = int64(10 * time.Millisecond)
	cur, binMax := int64(math.MinInt64), int64(0)
	flush := func() {
		if cur != math.MinInt64 {
			res.series = append(res.series, point{float64(cur*bin) / 1e9, float64(binMax) / 1e3})
		}
	}
	for i, at := range r.intended {
		if at >= refOff {
			res.lat = append(res.lat, r.lat[i])
		}
		b := at - refOff
		if b < 0 {
			b -= bin - 1 // round toward minus infinity
		}
		b /= bin
		if b != cur {
			flush()
			cur, binMax = b, 0
		}
		binMax = max(binMax, r.lat[i])
	}
	flush()
	if len(r.lat) > 0 {
		// Behind: the last reads ran more than 100 ms late.
		res.behind = r.lat[len(r.lat)-1] > int64(100*time.Millisecond)
	}
	return res
}

func recordW5(rec *recorder, mode, name string, res scheduleResult) {
	if len(res.lat) == 0 {
		rec.note("W5 %s: %s made no reads", mode, name)
		return
	}
	slices.Sort(res.lat)
	pct := func(p float64) float64 {
		i := int(p * float64(len(res.lat)-1))
		return float64(res.lat[i]) / 1e3
	}
	rec.add("W5 "+mode+" p50 µs", name, pct(0.50))
	rec.add("W5 "+mode+" p99 µs", name, pct(0.99))
	rec.add("W5 "+mode+" p99.9 µs", name, pct(0.999))
	rec.add("W5 "+mode+" max µs", name, float64(res.lat[len(res.lat)-1])/1e3)
	rec.add("W5 "+mode+" time in reads >1ms ms", name, float64(res.slowOwn.Microseconds())/1e3)
	if res.behind {
		rec.note("W5 %s: %s could not keep up with one read per interval", mode, name)
	}
	rec.add("W5 "+mode+" reader preemptions", name, float64(res.switches))
	logf("%-12s W5 %s: %d reads, p50 %.1f µs p99 %.1f µs p99.9 %.1f µs max %.1f µs, %d reads over 1 ms (%v), reader thread preempted %d times",
		name, mode, len(res.lat), pct(.5), pct(.99), pct(.999), float64(res.lat[len(res.lat)-1])/1e3, res.slowN, res.slowOwn, res.switches)
}

// involuntarySwitches returns how often the OS has preempted the calling
// thread, from /proc/thread-self/status, or -1 where that is unknown.
func involuntarySwitches() int {
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "nonvoluntary_ctxt_switches:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err == nil {
				return n
			}
		}
	}
	return -1
}
