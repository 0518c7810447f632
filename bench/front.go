package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethedb/lethe/cosmosrest"
)

// F1, run only when -w names it: point reads and creates through lethe's
// Cosmos DB REST front (package cosmosrest) with the official Go SDK
// (azcosmos), against a floor. Both are served in this process by
// httptest.NewTLSServer (HTTP/1.1 over TLS: httptest offers only
// http/1.1 unless told otherwise), and each has an azcosmos client on a
// transport cloned from the server's own client (trusting its certificate)
// that keeps enough idle connections for every client.
//
//	lethe front  cosmosrest.Handler, in memory, one database and one
//	             container partitioned by /id (defaultTtl -1: the items'
//	             ttl applies), preloaded with the N usual items through the
//	             SDK.
//	floor        a net/http handler that answers GET / with an account and
//	             every other request with one fixed 250-byte document
//	             (201 and no body for a create that asks for
//	             return=minimal, as the SDK's CreateItem does by default).
//
// The floor is the cost of the SDK, the TLS connection and net/http on
// both sides, with no store and no Cosmos DB server logic: the front's
// ratio to it is what the front adds.

// frontConfig is what F1 needs beyond config.
type frontConfig struct {
	clients []int         // concurrent clients (goroutines), one point each
	dur     time.Duration // each point is measured for this long
	warm    time.Duration // after a warm-up of this long, on the same clients
	slices  int           // the measurement is split into this many slices, the floor's and the front's alternating
	profile string        // "": none; else a CPU profile of the front's measured reads at profC clients is written here
	profC   int
}

const (
	frontName = "lethe front"
	floorName = "floor (fixed 250 B)"
)

var frontOps = []string{"read", "create"}

// frontTarget is one server and an SDK client of it.
type frontTarget struct {
	name   string
	srv    *httptest.Server
	client *azcosmos.Client
	cc     *azcosmos.ContainerClient
	conns  atomic.Int64 // connections the server accepted
	proto  atomic.Value // the protocol of the requests, e.g. "HTTP/1.1"
	close  func()
}

// startTarget serves h over TLS and makes an SDK client of it.
func startTarget(name string, h http.Handler, maxClients int) *frontTarget {
	t := &frontTarget{name: name}
	t.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t.proto.Load() == nil {
			t.proto.Store(r.Proto)
		}
		h.ServeHTTP(w, r)
	}))
	t.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			t.conns.Add(1)
		}
	}
	t.srv.StartTLS()
	// The server's client keeps net/http's default of 2 idle connections
	// per host: with more clients than that, most calls would close their
	// connection and the next would pay a new TLS handshake (over three
	// quarters of the CPU at 16 clients). Keep 100, as the SDK's own
	// default transport does, or twice the clients: a call that finds no
	// idle connection dials one, and when another frees up first the new
	// one joins the pool, which then briefly holds more than one per
	// client (with exactly one per client, 64 clients still closed and
	// redialled dozens of connections a point).
	tr := t.srv.Client().Transport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = max(2*maxClients, 100)
	cred, err := azcosmos.NewKeyCredential(cosmosrest.EmulatorKey)
	if err != nil {
		panic(err)
	}
	t.client, err = azcosmos.NewClientWithKey(t.srv.URL, cred, &azcosmos.ClientOptions{
		ClientOptions: azcore.ClientOptions{Transport: &http.Client{Transport: tr}},
	})
	if err != nil {
		panic(err)
	}
	t.cc, err = t.client.NewContainer(frontDB, frontColl)
	if err != nil {
		panic(err)
	}
	t.close = func() {
		t.client.Close()
		tr.CloseIdleConnections()
		t.srv.Close()
	}
	return t
}

const (
	frontDB   = "bench"
	frontColl = "users"
)

// startFront starts the lethe front with the first n items of d.
func startFront(d *dataset, n, maxClients int) *frontTarget {
	h, err := cosmosrest.New(cosmosrest.Config{})
	if err != nil {
		panic(err)
	}
	t := startTarget(frontName, h, maxClients)
	inner := t.close
	t.close = func() {
		inner()
		if err := h.Close(); err != nil {
			panic(err)
		}
	}
	ctx := context.Background()
	if _, err := t.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: frontDB}, nil); err != nil {
		panic(err)
	}
	db, err := t.client.NewDatabase(frontDB)
	if err != nil {
		panic(err)
	}
	ttl := int32(-1)
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID:                     frontColl,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}},
		DefaultTimeToLive:      &ttl,
	}, nil); err != nil {
		panic(err)
	}
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if _, err := t.cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(d.ids[i]), d.docs[i], nil); err != nil {
					panic(fmt.Sprintf("preload %s: %v", d.ids[i], err))
				}
			}
		})
	}
	wg.Wait()
	logf("F1: preloaded %d items through the front in %v", n, time.Since(start).Round(time.Millisecond))
	return t
}

// floorDoc is the floor's one document: 250 bytes of JSON with the system
// properties Cosmos DB returns.
var floorDoc = func() []byte {
	head := `{"id":"user-12345678","name":"ada lovelace","bio":"`
	tail := `","_rid":"AAAAAAAAAAABAAAAAAAAAA==","_self":"dbs/AAAAAA==/colls/AAAAAAAAAAA=/docs/AAAAAAAAAAABAAAAAAAAAA==/","_etag":"0000000000000001","_attachments":"attachments/","_ts":1700000000}`
	pad := 250 - len(head) - len(tail)
	if pad < 0 {
		panic("floor document over 250 bytes")
	}
	return []byte(head + strings.Repeat("x", pad) + tail)
}()

// floorHandler is the floor: an account on GET / (what the SDK reads
// before its first request: the regions, pointing back at this server,
// and the consistency), and floorDoc for everything else, with the
// headers the SDK reads of a point operation.
func floorHandler() http.Handler {
	docLen := strconv.Itoa(len(floorDoc))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("x-ms-request-charge", "1")
		hdr.Set("x-ms-activity-id", "00000000-0000-4000-8000-000000000000")
		if r.URL.Path == "/" {
			loc := fmt.Sprintf(`{"name":"South Central US","databaseAccountEndpoint":"https://%s/"}`, r.Host)
			body := `{"id":"floor","_rid":"floor","writableLocations":[` + loc + `],"readableLocations":[` + loc + `],"enableMultipleWriteLocations":false,"userConsistencyPolicy":{"defaultConsistencyLevel":"Session"}}`
			hdr.Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(body))
			return
		}
		hdr.Set("etag", `"0000000000000001"`)
		hdr.Set("x-ms-session-token", "0:-1#1")
		status := http.StatusOK
		if r.Method == http.MethodPost {
			status = http.StatusCreated
			if strings.Contains(r.Header.Get("Prefer"), "return=minimal") {
				hdr.Set("Content-Length", "0")
				w.WriteHeader(status)
				return
			}
		}
		hdr.Set("Content-Type", "application/json")
		hdr.Set("Content-Length", docLen)
		w.WriteHeader(status)
		_, _ = w.Write(floorDoc)
	})
}

// frontSeq numbers the created items, so that every create has a new id.
var frontSeq atomic.Int64

// createBody returns item i of d under a new id.
func createBody(d *dataset, i int, id string) []byte {
	rest := d.docs[i][len(`{"id":`)+len(strconv.Quote(d.ids[i])):]
	b := make([]byte, 0, len(id)+len(rest)+10)
	b = append(b, `{"id":`...)
	b = strconv.AppendQuote(b, id)
	return append(b, rest...)
}

// frontResult is one measured point.
type frontResult struct {
	ops   int
	el    time.Duration
	lat   []time.Duration // sorted
	conns int64           // connections the server accepted meanwhile
}

// merge adds the calls of o (another slice of the same point) to r; r.lat
// must be sorted again after.
func (r *frontResult) merge(o frontResult) {
	r.ops += o.ops
	r.el += o.el
	r.lat = append(r.lat, o.lat...)
	r.conns += o.conns
}

func (r frontResult) perSec() float64 { return float64(r.ops) / r.el.Seconds() }

// quantile returns the q-quantile of the sorted latencies, in µs.
func (r frontResult) quantile(q float64) float64 {
	if len(r.lat) == 0 {
		return 0
	}
	i := min(int(q*float64(len(r.lat))), len(r.lat)-1)
	return float64(r.lat[i].Nanoseconds()) / 1e3
}

// frontRun runs op ("read" or "create") on t with the given number of
// clients, each on its own goroutine, until dur has passed (limit > 0:
// or until limit operations in all have started). Reads are of random
// items among the first n of d.
func frontRun(t *frontTarget, d *dataset, n int, op string, clients int, dur time.Duration, limit int64) frontResult {
	ctx := context.Background()
	lats := make([][]time.Duration, clients)
	var started atomic.Int64
	conns := t.conns.Load()
	start := time.Now()
	deadline := start.Add(dur)
	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), uint64(start.UnixNano())))
			lat := make([]time.Duration, 0, 1024)
			for {
				if limit > 0 && started.Add(1) > limit {
					break
				}
				i := r.IntN(n)
				t0 := time.Now()
				if limit <= 0 && !t0.Before(deadline) {
					break
				}
				switch op {
				case "read":
					resp, err := t.cc.ReadItem(ctx, azcosmos.NewPartitionKeyString(d.ids[i]), d.ids[i], nil)
					if err != nil {
						panic(fmt.Sprintf("F1 %s: read %s: %v", t.name, d.ids[i], err))
					}
					if !bytes.Contains(resp.Value, []byte(`"_etag"`)) {
						panic(fmt.Sprintf("F1 %s: read %s: %q", t.name, d.ids[i], resp.Value))
					}
				case "create":
					id := "f1-" + strconv.FormatInt(frontSeq.Add(1), 10)
					if _, err := t.cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(id), createBody(d, i, id), nil); err != nil {
						panic(fmt.Sprintf("F1 %s: create %s: %v", t.name, id, err))
					}
				default:
					panic("F1: unknown operation " + op)
				}
				lat = append(lat, time.Since(t0))
			}
			lats[g] = lat
		})
	}
	wg.Wait()
	res := frontResult{el: time.Since(start), conns: t.conns.Load() - conns}
	for _, l := range lats {
		res.lat = append(res.lat, l...)
	}
	res.ops = len(res.lat)
	slices.Sort(res.lat)
	return res
}

// runFront runs F1: both servers up, then for each client count and each
// operation a warm-up of each (the floor first), then fc.slices
// alternating slices of the measurement, floor then front, so that both
// see the same moments of a shared machine. With fc.profile, the front's
// reads at fc.profC clients run once more, for fc.dur, under the CPU
// profiler (not in the table).
func runFront(d *dataset, cfg config, fc frontConfig, rec *recorder) {
	maxClients := slices.Max(fc.clients)
	front := startFront(d, cfg.n, maxClients)
	defer front.close()
	floor := startTarget(floorName, floorHandler(), maxClients)
	defer floor.close()
	targets := []*frontTarget{floor, front}
	k := max(fc.slices, 1)
	for _, c := range fc.clients {
		for _, op := range frontOps {
			for _, t := range targets {
				frontRun(t, d, cfg.n, op, c, fc.warm, 0)
			}
			res := make([]frontResult, len(targets))
			for range k {
				for i, t := range targets {
					res[i].merge(frontRun(t, d, cfg.n, op, c, fc.dur/time.Duration(k), 0))
				}
			}
			for i, t := range targets {
				r := res[i]
				slices.Sort(r.lat)
				recordFront(rec, t.name, op, c, r)
				logf("F1 %-20s %-6s %2d client(s): %.0f ops/s, p50 %.0f µs, p99 %.0f µs, %d new connection(s)",
					t.name, op, c, r.perSec(), r.quantile(0.5), r.quantile(0.99), r.conns)
			}
			if fc.profile != "" && op == "read" && c == fc.profC {
				startProfile(fc.profile)
				r := frontRun(front, d, cfg.n, op, c, fc.dur, 0)
				pprof.StopCPUProfile()
				logf("F1: wrote %s: %s reads, %d client(s), %.0f ops/s", fc.profile, front.name, c, r.perSec())
			}
		}
	}
	for _, t := range targets {
		if p, ok := t.proto.Load().(string); ok {
			rec.note("F1: %s served %s over TLS", t.name, p)
		}
	}
}

// startProfile starts a CPU profile into the file name.
func startProfile(name string) {
	f, err := os.Create(name)
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
}

func recordFront(rec *recorder, name, op string, c int, r frontResult) {
	rec.add(fmt.Sprintf("F1 %s ops/s %dc", op, c), name, r.perSec())
	rec.add(fmt.Sprintf("F1 %s p50 µs %dc", op, c), name, r.quantile(0.5))
	rec.add(fmt.Sprintf("F1 %s p99 µs %dc", op, c), name, r.quantile(0.99))
	rec.add(fmt.Sprintf("F1 %s conns %dc", op, c), name, float64(r.conns))
}

// frontMetrics are the keys F1 records, in order.
func frontMetrics(fc frontConfig) []string {
	var ms []string
	for _, op := range frontOps {
		for _, c := range fc.clients {
			for _, m := range []string{"ops/s", "p50 µs", "p99 µs", "conns"} {
				ms = append(ms, fmt.Sprintf("F1 %s %s %dc", op, m, c))
			}
		}
	}
	return ms
}
