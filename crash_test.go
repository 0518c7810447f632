package lethe_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/lethetesting"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The crash test: TestCrash runs its own test binary again as a child
// (TestCrashChild) that writes to a durable store with many goroutines, and
// kills it with SIGKILL at a random moment; then it reopens the directory
// and checks what came back against what the child said it tried and what
// the store acknowledged.
//
// The child says, on standard output, one line at a time (each one write,
// so lines never interleave):
//
//	ready T                                  the containers exist; writes begin
//	try G N KIND CONTAINER PK ID VER TTL T   goroutine G's N-th call, begun at T
//	ack G N T ETAG                           it succeeded; it returned at T
//	fail G N STATUS "ERROR"                  it failed, changing nothing
//	try settings T / ack settings T          the change of the ttl container's default
//	try checkpoint T / ack checkpoint T      Store.Checkpoint (the checkpoint variant)
//
// T is Unix nanoseconds of the real clock, which the child's store reads
// too: a write's _ts lies between its try and its ack (or the kill), so the
// checks know when each item expires within those bounds. Each goroutine
// owns its keys and calls one at a time, so the writes to a key are ordered,
// and at most one of them (its goroutine's last) is in flight at the kill.
//
// The child's store syncs as the seed says, mostly SyncAlways: under every
// policy an acknowledged write is written to the operating system, which
// keeps it when only the process dies.
//
// LETHE_CRASH_SOAK=N runs N iterations, alternating the variants (without
// and with checkpoints); LETHE_CRASH_SEED=S starts the seeds at S, to run
// a failed iteration's plan again (its timing differs).

const (
	crashEnv      = "LETHE_CRASH_CHILD" // "SEED:CHECKPOINT:DIR", set for the child only
	crashWriters  = 16
	crashKeys     = 6 // keys per goroutine per container
	crashD0       = 2 // the ttl container's default TTL at the start
	crashLifetime = 30 * time.Second
	// crashMargin widens every expiry bound: the bounds come from the same
	// clock the store reads, so the margin covers only its granularity and
	// a small step.
	crashMargin = int64(250 * time.Millisecond)
	crashNever  = int64(math.MaxInt64)
)

// The containers: partitioned with expiry only of items' own ttl;
// unpartitioned with a default TTL (changed during the run) and a change
// feed; unpartitioned without expiry, where items' ttls mean nothing.
func crashContainers() []lethe.ContainerProperties {
	return []lethe.ContainerProperties{
		{ID: "part", DefaultTimeToLive: lethe.TTLNever, PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/tenant"}}},
		{ID: "ttl", DefaultTimeToLive: crashD0, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}},
		{ID: "plain", Throughput: 10_000_000},
	}
}

// crashTTLs are the items' ttls; 0 means none (the item inherits).
var crashTTLs = []int{0, 0, 0, -1, 1, 2, 3, 3600}

// crashPlan is what a seed decides, for the parent and the child alike.
type crashPlan struct {
	seed          uint64
	checkpoint    bool
	sync          lethe.SyncPolicy // mostly SyncAlways; the others keep writes too when only the process dies
	newDefault    lethe.TTL        // the ttl container's default after the change
	settingsAfter time.Duration    // when the child changes it, after ready
	killAfter     time.Duration    // when the parent kills the child, after its first acknowledged write
	recoverAfter  time.Duration    // how long the parent waits before reopening
}

func newCrashPlan(seed uint64, checkpoint, soak bool) crashPlan {
	rng := rand.New(rand.NewPCG(seed, 0x6c657468))
	p := crashPlan{seed: seed, checkpoint: checkpoint}
	p.newDefault = []lethe.TTL{1, 5, 3600}[rng.IntN(3)]
	p.sync = []lethe.SyncPolicy{lethe.SyncAlways, lethe.SyncAlways, lethe.SyncAlways, lethe.SyncEverySecond, lethe.SyncNever}[rng.IntN(5)]
	p.settingsAfter = time.Duration(rng.IntN(300)) * time.Millisecond
	p.killAfter = time.Duration(50+rng.IntN(350)) * time.Millisecond
	if soak && rng.IntN(5) == 0 {
		// Longer runs, in which short ttls expire while the child runs
		// and its reaper logs purges.
		p.killAfter = time.Duration(400+rng.IntN(2100)) * time.Millisecond
	}
	switch r := rng.IntN(10); {
	case r < 4:
	case r < 8 || !soak:
		p.recoverAfter = time.Duration(rng.IntN(1000)) * time.Millisecond
	default: // every short ttl runs out while the store is closed
		p.recoverAfter = time.Duration(1000+rng.IntN(2500)) * time.Millisecond
	}
	return p
}

// crashOut writes the child's lines, each in one write.
type crashOut struct {
	mu  sync.Mutex
	buf []byte
}

func (o *crashOut) line(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = fmt.Appendf(o.buf[:0], format, args...)
	o.buf = append(o.buf, '\n')
	if _, err := os.Stdout.Write(o.buf); err != nil {
		os.Exit(4) // the parent has gone
	}
}

// TestCrashChild is the child of TestCrash; it runs only when TestCrash
// starts it, and never returns: it writes until it is killed.
func TestCrashChild(t *testing.T) {
	t.Parallel()
	spec := os.Getenv(crashEnv)
	if spec == "" {
		t.Skip("the child process of TestCrash")
	}
	parts := strings.SplitN(spec, ":", 3)
	require.Len(t, parts, 3)
	seed, err := strconv.ParseUint(parts[0], 10, 64)
	require.NoError(t, err)
	plan := newCrashPlan(seed, parts[1] == "1", false)
	dir := parts[2]

	s, err := lethe.Open(&lethe.Options{Dir: dir, Sync: plan.sync})
	require.NoError(t, err)
	var containers []*lethe.Container
	for _, props := range crashContainers() {
		containers = append(containers, mustContainer(t, s, props))
	}
	out := &crashOut{}
	out.line("ready %d", time.Now().UnixNano())
	for g := range crashWriters {
		go crashWriter(out, containers, seed, g)
	}
	go func() {
		time.Sleep(plan.settingsAfter)
		c := containers[1]
		props, err := c.Read(ctx)
		if err == nil {
			props.DefaultTimeToLive = plan.newDefault
			out.line("try settings %d", time.Now().UnixNano())
			err = c.Replace(ctx, props)
		}
		if err != nil {
			out.line("fail settings %q", err)
			return
		}
		out.line("ack settings %d", time.Now().UnixNano())
	}()
	if plan.checkpoint {
		go func() {
			rng := rand.New(rand.NewPCG(seed, 99))
			for {
				time.Sleep(time.Duration(rng.IntN(10)) * time.Millisecond)
				out.line("try checkpoint %d", time.Now().UnixNano())
				if err := s.Checkpoint(ctx); err != nil {
					out.line("fail checkpoint %q", err)
					continue
				}
				out.line("ack checkpoint %d", time.Now().UnixNano())
			}
		}()
	}
	time.Sleep(crashLifetime)
	out.line("lived too long")
	os.Exit(3)
}

// crashWriter is goroutine g of the child: it creates, upserts and deletes
// its own keys, one call at a time, until the child is killed.
func crashWriter(out *crashOut, containers []*lethe.Container, seed uint64, g int) {
	rng := rand.New(rand.NewPCG(seed, uint64(g)+1))
	ids := []string{"part", "ttl", "plain"}
	vers := map[string]int{}
	for n := 0; ; n++ {
		ci, j := rng.IntN(3), rng.IntN(crashKeys)
		c := containers[ci]
		id, pkText, pk, tenant := fmt.Sprintf("g%d-k%d", g, j), "-", lethe.NewPartitionKey(), ""
		if ci == 0 {
			// The same ids in every goroutine's partitions.
			id, pkText = fmt.Sprintf("k%d", j), fmt.Sprintf("t%d-%d", g, j%2)
			pk, tenant = pkS(pkText), fmt.Sprintf(`,"tenant":%q`, pkText)
		}
		key := ids[ci] + "/" + pkText + "/" + id
		vers[key]++
		ver := vers[key]
		kind := []string{"create", "create", "upsert", "upsert", "upsert", "delete"}[rng.IntN(6)]
		ttl := crashTTLs[rng.IntN(len(crashTTLs))]
		ttlField := ""
		if ttl != 0 {
			ttlField = fmt.Sprintf(`,"ttl":%d`, ttl)
		}
		pad := rng.IntN(200)
		if rng.IntN(20) == 0 {
			pad = rng.IntN(8000)
		}
		doc := fmt.Appendf(nil, `{"id":%q%s,"g":%d,"v":%d%s,"pad":%q}`, id, tenant, g, ver, ttlField, strings.Repeat("x", pad))

		out.line("try %d %d %s %s %s %s %d %d %d", g, n, kind, ids[ci], pkText, id, ver, ttl, time.Now().UnixNano())
		var (
			r   lethe.ItemResponse
			err error
		)
		switch kind {
		case "create":
			r, err = c.CreateItem(ctx, pk, doc, nil)
		case "upsert":
			r, err = c.UpsertItem(ctx, pk, doc, nil)
		case "delete":
			r, err = c.DeleteItem(ctx, pk, id, nil)
		}
		if err != nil {
			out.line("fail %d %d %d %q", g, n, status(err), err)
			continue
		}
		etag := r.ETag
		if etag == "" {
			etag = "-"
		}
		out.line("ack %d %d %d %s", g, n, time.Now().UnixNano(), etag)
	}
}

// crashKey names an item: its container, partition key ("-": none) and id.
type crashKey struct{ cont, pk, id string }

func (k crashKey) partitionKey() lethe.PartitionKey {
	if k.pk == "-" {
		return lethe.NewPartitionKey()
	}
	return pkS(k.pk)
}

// crashOp is one call the child tried.
type crashOp struct {
	g, n       int
	kind       string // create, upsert or delete
	key        crashKey
	ver, ttl   int
	tried, end int64  // when it began; when it returned (the kill, if it did not)
	state      string // "tried" (in flight at the kill), "ack" or "fail"
	status     int
	etag       string
}

// crashLog is what the child said.
type crashLog struct {
	ops                        map[[2]int]*crashOp
	byKey                      map[crashKey][]*crashOp
	keys                       []crashKey
	settingsTried, settingsEnd int64 // 0 if never tried
	settingsAcked              bool
	checkpointsAcked           int
	checkpointInFlight         bool
	acked                      int // item calls acknowledged
	failed                     int
	maxETag                    string
}

func parseCrashLog(t *testing.T, lines []string, killed int64) *crashLog {
	t.Helper()
	l := &crashLog{ops: map[[2]int]*crashOp{}, byKey: map[crashKey][]*crashOp{}}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "%q", s)
		return n
	}
	for _, line := range lines {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || f[0] == "ready":
		case f[0] == "try" && f[1] == "settings":
			l.settingsTried, l.settingsEnd = num(f[2]), killed
		case f[0] == "ack" && f[1] == "settings":
			l.settingsEnd, l.settingsAcked = num(f[2]), true
		case f[0] == "try" && f[1] == "checkpoint":
			l.checkpointInFlight = true
		case f[0] == "ack" && f[1] == "checkpoint":
			l.checkpointInFlight = false
			l.checkpointsAcked++
		case f[0] == "fail" && (f[1] == "settings" || f[1] == "checkpoint"):
			t.Fatalf("the child's %s failed: %s", f[1], line)
		case f[0] == "try" && len(f) == 10:
			op := &crashOp{g: int(num(f[1])), n: int(num(f[2])), kind: f[3], key: crashKey{f[4], f[5], f[6]},
				ver: int(num(f[7])), ttl: int(num(f[8])), tried: num(f[9]), end: killed, state: "tried"}
			l.ops[[2]int{op.g, op.n}] = op
			if l.byKey[op.key] == nil {
				l.keys = append(l.keys, op.key)
			}
			l.byKey[op.key] = append(l.byKey[op.key], op)
		case (f[0] == "ack" && len(f) == 5) || (f[0] == "fail" && len(f) >= 4):
			op := l.ops[[2]int{int(num(f[1])), int(num(f[2]))}]
			require.NotNil(t, op, "no try for %q", line)
			require.Equal(t, "tried", op.state, "%q", line)
			op.state = f[0]
			if f[0] == "ack" {
				op.end, op.etag = num(f[3]), f[4]
				l.acked++
				if op.etag != "-" {
					l.maxETag = max(l.maxETag, op.etag)
				}
			} else {
				op.status = int(num(f[3]))
				l.failed++
				// Conflicts and missing items are the store's answers;
				// anything else is a failure of the store.
				require.Contains(t, []int{404, 409, 429}, op.status, "%q", line)
			}
		default:
			t.Fatalf("the child said %q", line)
		}
	}
	// Each goroutine calls one at a time: only its last call can be in
	// flight.
	last := map[int]int{}
	for k := range l.ops {
		last[k[0]] = max(last[k[0]], k[1])
	}
	for k, op := range l.ops {
		if op.state == "tried" {
			require.Equal(t, last[k[0]], k[1], "goroutine %d: call %d has no answer, yet it went on", k[0], k[1])
		}
	}
	return l
}

// crashStats add up over the iterations.
type crashStats struct {
	iterations, kills          int
	bySync                     [3]int // iterations under each SyncPolicy
	acked, failed, inFlight    int    // item calls
	keys                       int    // keys checked
	ackedLast                  int    // keys whose last acknowledged call was checked
	present, expired, deleted  int    // what those keys showed: the write, expired, deleted
	inFlightSeen, inFlightLost int    // in-flight calls whose effect recovery shows, or not
	ambiguous                  int    // keys whose expiry fell within the margin
	checkpoints                int    // checkpoints acknowledged
	killsInCheckpoint          int    // kills while a checkpoint was under way
	snapshotsLoaded, torn      int
	settingsApplied            int
}

func (s crashStats) String() string {
	return fmt.Sprintf("%d iterations (SyncAlways %d, SyncEverySecond %d, SyncNever %d), %d kills; item calls: %d acknowledged, %d refused (404/409), %d in flight at the kill; "+
		"%d keys checked, %d of them after an acknowledged call: %d present at the version written, %d gone by expiry, %d deleted, %d expiry within the margin; "+
		"in-flight calls: %d recovered, %d not; %d checkpoints acknowledged, %d kills during a checkpoint, %d recoveries from a snapshot, %d torn tails; default changed in %d",
		s.iterations, s.bySync[0], s.bySync[1], s.bySync[2], s.kills, s.acked, s.failed, s.inFlight, s.keys, s.ackedLast, s.present, s.expired, s.deleted, s.ambiguous,
		s.inFlightSeen, s.inFlightLost, s.checkpoints, s.killsInCheckpoint, s.snapshotsLoaded, s.torn, s.settingsApplied)
}

// TestCrash kills a child writing to a durable store at a random moment and
// checks what recovery brings back (see the top of this file). It runs
// alone: a child forked while a parallel test closes a store holds the
// store's LOCK flock until it execs, and the test's reopen finds the
// directory in use (as the tests that run go list do, deps_test.go).
func TestCrash(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in the child")
	}
	iterations, soak := 6, false
	if testing.Short() {
		iterations = 2
	}
	if v := os.Getenv("LETHE_CRASH_SOAK"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "LETHE_CRASH_SOAK")
		iterations, soak = n, true
	}
	base := uint64(time.Now().UnixNano())
	if v := os.Getenv("LETHE_CRASH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "LETHE_CRASH_SEED")
		base = n
	}
	var total crashStats
	for i := range iterations {
		plan := newCrashPlan(base+uint64(i), i%2 == 1, soak)
		ok := t.Run(fmt.Sprintf("seed=%d/checkpoint=%v/%v", plan.seed, plan.checkpoint, plan.sync), func(t *testing.T) {
			crashIteration(t, plan, &total)
		})
		if !ok {
			t.Logf("to run its plan again: LETHE_CRASH_SEED=%d LETHE_CRASH_SOAK=2 (soak %v)", plan.seed-uint64(i%2), soak)
			if !soak {
				break
			}
		}
	}
	t.Logf("crash test: %v", total)
}

func crashIteration(t *testing.T, plan crashPlan, total *crashStats) {
	dir := t.TempDir()
	checkpoint := "0"
	if plan.checkpoint {
		checkpoint = "1"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%s:%s", crashEnv, plan.seed, checkpoint, dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	// The kill comes killAfter the first acknowledged write.
	var lines []string
	acked, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		first := acked
		r := bufio.NewReaderSize(stdout, 1<<16)
		for {
			line, err := r.ReadString('\n')
			if err != nil { // a line without its newline was cut by the kill
				return
			}
			if first != nil && strings.HasPrefix(line, "ack ") {
				close(first)
				first = nil
			}
			lines = append(lines, strings.TrimSuffix(line, "\n"))
		}
	}()
	select {
	case <-acked:
	case <-done:
	case <-time.After(time.Minute):
	}
	time.Sleep(plan.killAfter)
	_ = cmd.Process.Kill() // fails if the child has exited, which the check below reports
	<-done
	_ = cmd.Wait()
	killed := time.Now().UnixNano()
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "ready ") || cmd.ProcessState.ExitCode() != -1 {
		tail := lines[max(0, len(lines)-20):]
		t.Fatalf("the child did not run until killed (%v):\n%s\nstderr:\n%s", cmd.ProcessState, strings.Join(tail, "\n"), stderr.String())
	}
	log := parseCrashLog(t, lines, killed)
	total.iterations++
	total.bySync[plan.sync]++
	total.kills++
	total.acked += log.acked
	total.failed += log.failed
	total.checkpoints += log.checkpointsAcked
	if log.checkpointInFlight {
		total.killsInCheckpoint++
	}
	for _, op := range log.ops {
		if op.state == "tried" {
			total.inFlight++
		}
	}
	require.NotZero(t, log.acked, "nothing was acknowledged before the kill")
	if plan.recoverAfter > 0 {
		time.Sleep(plan.recoverAfter)
	}

	// The first open recovers from the crash; the second, after one more
	// write, must find the same.
	seen := map[crashKey]int{}
	after := ""
	for pass := range 2 {
		began := time.Now().UnixNano() // before Open: recovery reads the clock after
		s, st := crashRecover(t, dir, plan, log, seen, pass)
		if pass == 0 {
			if st.Snapshot != "" {
				total.snapshotsLoaded++
			}
			if st.TornBytes > 0 {
				total.torn++
			}
			total.add(crashCheckKeys(t, s, log, seen, pass, plan, began))
		} else {
			crashCheckKeys(t, s, log, seen, pass, plan, began)
		}
		c, err := s.Container("plain")
		require.NoError(t, err)
		if after != "" {
			assert.True(t, readable(t, c, lethe.NewPartitionKey(), after), "the write after the first recovery")
		}
		after = fmt.Sprint("after-", pass)
		r, err := c.CreateItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":%q}`, after), nil)
		require.NoError(t, err)
		assert.Greater(t, r.ETag, log.maxETag, "the write sequence continues after every write acknowledged or recovered")
		log.maxETag = r.ETag
		require.NoError(t, s.Close())
	}
}

func (s *crashStats) add(o crashStats) {
	s.keys += o.keys
	s.ackedLast += o.ackedLast
	s.present += o.present
	s.expired += o.expired
	s.deleted += o.deleted
	s.ambiguous += o.ambiguous
	s.inFlightSeen += o.inFlightSeen
	s.inFlightLost += o.inFlightLost
	s.settingsApplied += o.settingsApplied
}

// crashRecover opens the store the child left and checks the recovery as a
// whole: the files, the containers' settings, the figures, the invariants.
func crashRecover(t *testing.T, dir string, plan crashPlan, log *crashLog, seen map[crashKey]int, pass int) (*lethe.Store, lethe.RecoveryInfo) {
	t.Helper()
	before := lethetesting.DirNames(t, dir)
	var lastSeg string
	var lastSize int64
	for _, n := range before {
		if strings.HasPrefix(n, "wal-") {
			lastSeg = n
		}
	}
	if lastSeg != "" {
		fi, err := os.Stat(filepath.Join(dir, lastSeg))
		require.NoError(t, err)
		lastSize = fi.Size()
	}
	s, err := lethe.Open(&lethe.Options{Dir: dir, Reaper: lethe.ReaperOptions{Disabled: true}})
	require.NoError(t, err, "pass %d: files %v", pass, before)
	t.Cleanup(func() { s.Close() })
	rec := s.Recovery()
	where := fmt.Sprintf("pass %d: files %v: %+v", pass, before, rec)

	// The figures.
	assert.GreaterOrEqual(t, rec.Segments, 1, where)
	assert.Positive(t, rec.Duration, where)
	assert.GreaterOrEqual(t, rec.Expired, int64(0), where)
	if rec.TornBytes > 0 {
		assert.Equal(t, lastSeg, rec.TornFile, where)
		assert.LessOrEqual(t, rec.TornBytes, lastSize, where)
	} else {
		assert.Zero(t, rec.TornBytes, where)
		assert.Empty(t, rec.TornFile, where)
	}
	if pass > 0 {
		assert.Zero(t, rec.TornBytes, "the first recovery repaired the tail: %s", where)
	}
	switch {
	case !plan.checkpoint:
		assert.Empty(t, rec.Snapshot, where)
		// Every acknowledged call is a frame of the log, after the
		// containers' creations (and the reaper's purges).
		frames := int64(log.acked + 3)
		if log.settingsAcked {
			frames++
		}
		assert.GreaterOrEqual(t, rec.Frames, frames, where)
	case log.checkpointsAcked > 0:
		assert.NotEmpty(t, rec.Snapshot, "a checkpoint was acknowledged: %s", where)
	}
	for _, n := range lethetesting.DirNames(t, dir) {
		assert.False(t, strings.HasSuffix(n, ".tmp"), "%s left after recovery: %s", n, where)
	}

	// The containers and their settings.
	mem, err := lethe.Open(&lethe.Options{Reaper: lethe.ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	defer mem.Close()
	require.Equal(t, []string{"part", "plain", "ttl"}, s.ContainerIDs(), where)
	var items, purged int64
	for _, props := range crashContainers() {
		want, err := mustContainer(t, mem, props).Read(ctx)
		require.NoError(t, err)
		c, err := s.Container(props.ID)
		require.NoError(t, err)
		got, err := c.Read(ctx)
		require.NoError(t, err)
		if props.ID == "ttl" {
			switch {
			case log.settingsAcked:
				want.DefaultTimeToLive = plan.newDefault
			case log.settingsTried != 0 && got.DefaultTimeToLive == plan.newDefault:
				want.DefaultTimeToLive = plan.newDefault // in flight, and made
			}
		}
		assert.Equal(t, want, got, "the settings of %s: %s", props.ID, where)
		lethe.CheckInvariants(t, c, fmt.Sprintf("%s after recovery, %s", props.ID, where))
		if props.ChangeFeedPolicy != nil {
			crashCheckFeed(t, c, where)
		}
		st := c.Stats()
		items += st.Items + st.ExpiredPending
		purged += st.Purged
	}
	assert.Equal(t, rec.Items, items, "the items recovered are those the containers hold: %s", where)
	assert.Equal(t, rec.Expired, purged, "the items dropped at recovery count as purged: %s", where)
	return s, rec
}

// crashCheckFeed checks that replaying c's all-versions-and-deletes feed
// from the beginning gives its live items. The clock runs meanwhile, so
// items may expire between the feed's read and the query's: the live items
// must lie between the replay before the query and the replay after it.
func crashCheckFeed(t *testing.T, c *lethe.Container, where string) {
	t.Helper()
	replica := map[string]string{}
	replay := func(o lethe.ChangeFeedOptions) string {
		items, tok := readAll(t, c, o)
		for _, x := range decodeChanges(t, items) {
			if x.Metadata.OperationType == "delete" {
				_, ok := replica[x.Metadata.ID]
				require.True(t, ok, "the feed deletes %q, which it never made: %s", x.Metadata.ID, where)
				delete(replica, x.Metadata.ID)
				continue
			}
			replica[x.Current["id"].(string)] = x.Current["_etag"].(string)
		}
		return tok
	}
	tok := replay(lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes})
	before := maps.Clone(replica)
	live := map[string]string{}
	for doc, err := range c.QueryItems(ctx, "SELECT c.id, c._etag FROM c", lethe.NewPartitionKey(), nil) {
		require.NoError(t, err)
		var m map[string]string
		require.NoError(t, json.Unmarshal(doc, &m))
		live[m["id"]] = m["_etag"]
	}
	replay(lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, Continuation: tok})
	for id, etag := range live {
		assert.Equal(t, etag, before[id], "item %q is live but not in the feed's replay: %s", id, where)
	}
	for id, etag := range replica {
		assert.Equal(t, etag, live[id], "item %q is in the feed's replay but not live: %s", id, where)
	}
}

// crashOutcome is one state a key may be in after recovery: absent (op nil
// or a delete), or op's write, which expires within [expLo, expHi].
type crashOutcome struct {
	op           *crashOp
	expLo, expHi int64
}

func (o crashOutcome) write() bool { return o.op != nil && o.op.kind != "delete" }

// crashExpiry returns the bounds of when op's write expires, never if it
// does not, given whether the ttl container's default was changed.
func crashExpiry(op *crashOp, log *crashLog, changed bool, d1 lethe.TTL) (lo, hi int64) {
	sec := int64(time.Second)
	w0, w1 := op.tried, op.end
	switch {
	case op.key.cont == "plain" || op.ttl == -1:
		return crashNever, crashNever
	case op.ttl > 0:
		return w0 + int64(op.ttl)*sec, w1 + int64(op.ttl)*sec
	case op.key.cont == "part": // inherits -1
		return crashNever, crashNever
	}
	// Inherits the ttl container's default.
	d0, dn := crashD0*sec, int64(d1)*sec
	if !changed {
		return w0 + d0, w1 + d0
	}
	x0, x1 := log.settingsTried, log.settingsEnd
	lo, hi = crashNever, math.MinInt64
	if w0+d0 <= x1 { // may have expired under the old default: for good
		lo, hi = min(lo, w0+d0), max(hi, w1+d0)
	}
	if w1+d0 > x0 { // may follow the new default
		lo, hi = min(lo, w0+dn), max(hi, w1+dn)
	}
	return lo, hi
}

// crashItem is what recovery shows of an item.
type crashItem struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	G      int    `json:"g"`
	V      int    `json:"v"`
	TTL    *int   `json:"ttl"`
	ETag   string `json:"_etag"`
}

// crashCheckKeys checks every key against what the child did: each shows
// its last acknowledged write or the call in flight after it, nothing
// older and nothing never tried, and not once it expired. seen holds what
// the first pass found (the version, 0 for absent), which the second must
// find again unless it expired since.
func crashCheckKeys(t *testing.T, s *lethe.Store, log *crashLog, seen map[crashKey]int, pass int, plan crashPlan, began int64) (st crashStats) {
	t.Helper()
	opened := time.Now().UnixNano() // after Open: every read comes later
	ttlc, err := s.Container("ttl")
	require.NoError(t, err)
	props, err := ttlc.Read(ctx)
	require.NoError(t, err)
	changed := props.DefaultTimeToLive == plan.newDefault && log.settingsTried != 0
	if changed {
		st.settingsApplied++
	}

	// Everything recovery shows, by key.
	found := map[crashKey]crashItem{}
	etags := map[string]crashKey{}
	for _, cid := range s.ContainerIDs() {
		c, err := s.Container(cid)
		require.NoError(t, err)
		for doc, err := range c.QueryItems(ctx, "SELECT * FROM c", lethe.NewPartitionKey(), nil) {
			require.NoError(t, err)
			var it crashItem
			require.NoError(t, json.Unmarshal(doc, &it), "%s", doc)
			k := crashKey{cid, "-", it.ID}
			if cid == "part" {
				k.pk = it.Tenant
			}
			if strings.HasPrefix(it.ID, "after-") {
				continue
			}
			if prev, dup := etags[it.ETag]; dup {
				t.Errorf("pass %d: %v and %v share the _etag %s", pass, prev, k, it.ETag)
			}
			etags[it.ETag] = k
			log.maxETag = max(log.maxETag, it.ETag) // the next write's must be greater
			require.NotNil(t, log.byKey[k], "pass %d: %v (%s) was never written", pass, k, doc)
			found[k] = it
		}
	}
	checked := time.Now().UnixNano() // the queries ran before

	// Recovery read the clock after began: what had expired a margin
	// before then is gone, from memory too. What shows was read after
	// opened, and must be live then; what is missing must have been able
	// to expire by checked.
	for _, k := range log.keys {
		ops := log.byKey[k]
		st.keys++
		var last, inFlight *crashOp
		for _, op := range ops {
			switch op.state {
			case "ack":
				last = op
			case "tried":
				inFlight = op
			}
		}
		if inFlight != nil {
			require.Same(t, inFlight, ops[len(ops)-1], "%v: an in-flight call is the last", k)
		}
		outcomes := []crashOutcome{{op: last}}
		if inFlight != nil {
			outcomes = append(outcomes, crashOutcome{op: inFlight})
		}
		for i := range outcomes {
			if outcomes[i].write() {
				outcomes[i].expLo, outcomes[i].expHi = crashExpiry(outcomes[i].op, log, changed, plan.newDefault)
			}
		}
		history := func() string {
			var b strings.Builder
			shown := ops[max(0, len(ops)-12):]
			if len(shown) < len(ops) {
				fmt.Fprintf(&b, "\n  (%d earlier calls)", len(ops)-len(shown))
			}
			for _, op := range shown {
				fmt.Fprintf(&b, "\n  %s v%d ttl %d %s [%d, %d] %s %d", op.kind, op.ver, op.ttl, op.state, op.tried, op.end, op.etag, op.status)
			}
			return fmt.Sprintf("pass %d: %v (changed %v, recovery began %d, opened %d, checked %d, settings [%d, %d]):%s",
				pass, k, changed, began, opened, checked, log.settingsTried, log.settingsEnd, b.String())
		}

		it, present := found[k]
		c, err := s.Container(k.cont)
		require.NoError(t, err)
		var match *crashOutcome
		for i := range outcomes {
			o := &outcomes[i]
			switch {
			case present && o.write() && o.op.ver == it.V:
				match = o
			case !present && !o.write():
				match = o
			case !present && o.write() && o.expLo-crashMargin <= checked:
				match = o // expired, or may have
			}
		}
		if match == nil {
			if present {
				t.Errorf("%s\nshows version %d, which is neither the last acknowledged write nor the one in flight", history(), it.V)
			} else {
				t.Errorf("%s\nis missing", history())
			}
			continue
		}
		if present {
			op := match.op
			if match.expHi != crashNever && match.expHi+crashMargin <= opened {
				t.Errorf("%s\nversion %d shows, yet it expired by %d", history(), it.V, match.expHi)
			}
			var ttl int
			if it.TTL != nil {
				ttl = *it.TTL
			}
			assert.Equal(t, op.ttl, ttl, "%s\nthe ttl of version %d", history(), it.V)
			assert.Equal(t, op.g, it.G, history())
			if op.state == "ack" {
				assert.Equal(t, op.etag, it.ETag, "%s\nthe _etag acknowledged", history())
			}
		} else if lethe.StoredIn(c, k.partitionKey(), k.id) {
			// Stored but not live: it expired after recovery began (the
			// reaper is off), which dropped what had expired before.
			ok := false
			for _, o := range outcomes {
				ok = ok || (o.write() && o.expHi+crashMargin > began)
			}
			if !ok {
				t.Errorf("%s\nrecovery kept an item that expired before it began, or one deleted", history())
			}
		}
		if got, ok := seen[k]; pass > 0 && ok {
			switch {
			case present && got != it.V:
				t.Errorf("%s\nthe second recovery shows version %d, the first showed %d", history(), it.V, got)
			case !present && got != 0:
				expired := false
				for _, o := range outcomes {
					expired = expired || (o.write() && o.op.ver == got && o.expLo-crashMargin <= checked)
				}
				if !expired {
					t.Errorf("%s\nthe second recovery lost version %d, which the first showed", history(), got)
				}
			}
		}
		if present {
			seen[k] = it.V
		} else {
			seen[k] = 0
		}

		if last != nil {
			st.ackedLast++
			switch {
			case present && match.op == last:
				st.present++
			case !present && last.kind == "delete":
				st.deleted++
			case !present:
				st.expired++
			}
		}
		if inFlight != nil {
			fo, lo := outcomes[len(outcomes)-1], outcomes[0]
			switch {
			case present && match.op == inFlight:
				st.inFlightSeen++
			case present:
				st.inFlightLost++
			case fo.write() && fo.expLo-crashMargin > checked:
				st.inFlightLost++ // absent: neither written nor expired
			case !fo.write() && lo.write() && lo.expLo-crashMargin > checked:
				st.inFlightSeen++ // absent: deleted
			}
		}
		for _, o := range outcomes {
			if o.write() && o.expLo != crashNever && o.expLo-crashMargin <= checked && o.expHi+crashMargin > began {
				st.ambiguous++
				break
			}
		}
	}
	return st
}
