package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
	"github.com/prometheus/client_golang/prometheus"
)

// regionFlags are the flags of an account of several regions.
type regionFlags struct {
	regions     *string
	writeRegion *string
	multiWrite  *bool
	consistency *string
	lag         *string
	lagJitter   *time.Duration
	lagSeed     *uint64
	maxPrefix   *int
	maxInterval *int
}

func addRegionFlags(fs *flag.FlagSet) *regionFlags {
	return &regionFlags{
		regions:     fs.String("regions", "", `the account's regions, comma-separated ("East US,West US"), each served on its own port: -addr's port, then the next ones ("": one region, as the emulator)`),
		writeRegion: fs.String("write-region", "", "the region that accepts writes (default: the first of -regions)"),
		multiWrite:  fs.Bool("multi-write", false, "every region of -regions accepts writes; writes to one item in two regions within the lag conflict, decided everywhere by the container's conflictResolutionPolicy"),
		consistency: fs.String("consistency", "", "the account's default consistency level: Strong, BoundedStaleness, Session, ConsistentPrefix or Eventual (default: Session with -regions, else Strong)"),
		lag:         fs.String("lag", "", `the replication lag: one duration for every pair of regions ("200ms"), and/or "from>to=duration" entries ("200ms,East US>West US=1s")`),
		lagJitter:   fs.Duration("lag-jitter", 0, "a random extra lag of each change, uniform from 0 to this, drawn from -lag-seed"),
		lagSeed:     fs.Uint64("lag-seed", 1, "the seed of -lag-jitter's draws"),
		maxPrefix:   fs.Int("max-staleness-prefix", 0, "BoundedStaleness: how many changes a read region may lag at most (0: the service's 100)"),
		maxInterval: fs.Int("max-interval", 0, "BoundedStaleness: how many seconds a read region may lag at most (0: the service's 5)"),
	}
}

// names returns the regions -regions names, trimmed; none without it.
func (f *regionFlags) names() []string {
	var out []string
	for n := range strings.SplitSeq(*f.regions, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// check refuses region flags given without -regions, which would be
// ignored, and -changefeed=false with -regions (an account replicates
// through the change feeds).
func (f *regionFlags) check(fs *flag.FlagSet) error {
	if len(f.names()) > 0 {
		if feed := fs.Lookup("changefeed"); feed != nil && feed.Value.String() == "false" {
			return errors.New("-changefeed=false: the regions of -regions replicate through each container's change feed")
		}
		if *f.lagJitter < 0 || *f.lagJitter > maxLagJitter {
			return fmt.Errorf("-lag-jitter %v: from 0 to %v", *f.lagJitter, maxLagJitter)
		}
		return nil
	}
	for _, name := range []string{"write-region", "multi-write", "consistency", "lag", "lag-jitter", "lag-seed", "max-staleness-prefix", "max-interval"} {
		if isSet(fs, name) {
			return fmt.Errorf("-%s is for an account of several regions: give -regions", name)
		}
	}
	return nil
}

// parseLag reads -lag: its default and its "from>to" entries, each pair of
// regions known.
func parseLag(spec string, regions []string) (time.Duration, map[[2]string]time.Duration, error) {
	known := map[string]bool{}
	for _, r := range regions {
		known[r] = true
	}
	var def time.Duration
	table := map[[2]string]time.Duration{}
	for entry := range strings.SplitSeq(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		pair, value, hasPair := strings.Cut(entry, "=")
		if !hasPair {
			value = pair
		}
		d, err := time.ParseDuration(strings.TrimSpace(value))
		if err != nil || d < 0 {
			return 0, nil, fmt.Errorf("-lag %q: %q is not a duration of 0 or more", spec, value)
		}
		if !hasPair {
			def = d
			continue
		}
		from, to, ok := strings.Cut(pair, ">")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || !known[from] || !known[to] || from == to {
			return 0, nil, fmt.Errorf("-lag %q: %q does not name two regions of -regions as from>to", spec, pair)
		}
		table[[2]string{from, to}] = d
	}
	return def, table, nil
}

// maxLagJitter is the largest -lag-jitter.
const maxLagJitter = 24 * time.Hour

// lagFunc is the lag of each change: the table's for its pair, else def,
// plus a draw from 0 to jitter (at most maxLagJitter); a sum past the
// largest duration is the largest.
func lagFunc(def time.Duration, table map[[2]string]time.Duration, jitter time.Duration, seed uint64) func(from, to string) time.Duration {
	rnd := rand.New(rand.NewPCG(seed, seed))
	jitter = min(jitter, maxLagJitter)
	return func(from, to string) time.Duration {
		d, ok := table[[2]string{from, to}]
		if !ok {
			d = def
		}
		if jitter > 0 {
			j := time.Duration(rnd.Int64N(int64(jitter) + 1))
			if d > math.MaxInt64-j {
				return math.MaxInt64
			}
			d += j
		}
		return d
	}
}

// regionAddrs returns the address of each of n regions: addr's port, then
// the next ones; every one ":0" (a port of the system's choice) when
// addr's is.
func regionAddrs(addr string, n int) ([]string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-addr %q: %v", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p+n-1 > 65535 {
		return nil, fmt.Errorf("-addr %q: the port of the first of %d regions leaves no room for the others", addr, n)
	}
	out := make([]string, n)
	for i := range out {
		q := p + i
		if p == 0 {
			q = 0
		}
		out[i] = net.JoinHostPort(host, strconv.Itoa(q))
	}
	return out, nil
}

// regionServers serve an account's regions, each on its own listener,
// which a region taken down with cosmosrest.RegionRefuse closes (its
// connections are then refused) and its coming up opens again.
type regionServers struct {
	acct   *cosmosrest.Account
	names  []string
	logger *slog.Logger
	serve  func(*http.Server, net.Listener) error
	wrap   func(net.Listener) net.Listener // the connection slots

	mu        sync.Mutex
	addrs     []string // the listeners' addresses, ports resolved
	listeners []net.Listener
	servers   []*http.Server
	errc      chan<- error
	stopped   bool
}

// openRegions listens on every region's address and makes the account.
func openRegions(f *regionFlags, cfg cosmosrest.Config, addr string, logger *slog.Logger) (*regionServers, error) {
	names := f.names()
	addrs, err := regionAddrs(addr, len(names))
	if err != nil {
		return nil, err
	}
	def, table, err := parseLag(*f.lag, names)
	if err != nil {
		return nil, err
	}
	write := *f.writeRegion
	switch {
	case write != "" && *f.multiWrite:
		return nil, errors.New("-write-region names the one write region: with -multi-write every region writes")
	case write == "":
		write = names[0]
	}
	rs := &regionServers{names: names, logger: logger}
	acfg := cosmosrest.AccountConfig{Config: cfg, Consistency: *f.consistency, MultipleWriteLocations: *f.multiWrite,
		MaxStalenessPrefix: *f.maxPrefix, MaxIntervalInSeconds: *f.maxInterval,
		Lag: lagFunc(def, table, *f.lagJitter, *f.lagSeed), RegionChanged: rs.changed}
	found := false
	for i, name := range names {
		ln, err := listen("addr", addrs[i], fmt.Sprintf("another server has it: region %q is served on -addr's port plus %d; set -addr to another address", name, i))
		if err != nil {
			rs.closeListeners()
			return nil, err
		}
		rs.listeners = append(rs.listeners, ln)
		rs.addrs = append(rs.addrs, ln.Addr().String())
		acfg.Regions = append(acfg.Regions, cosmosrest.RegionConfig{Name: name, Writable: name == write || *f.multiWrite, Endpoint: ":" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)})
		found = found || name == write
	}
	if !found {
		rs.closeListeners()
		return nil, fmt.Errorf("-write-region %q is not one of -regions", write)
	}
	if rs.acct, err = cosmosrest.NewAccount(acfg); err != nil {
		rs.closeListeners()
		return nil, err
	}
	return rs, nil
}

func (rs *regionServers) closeListeners() {
	for _, ln := range rs.listeners {
		if ln != nil {
			ln.Close()
		}
	}
}

// start serves every region with the server newServer makes for its
// handler; a server that stops on its own reports to errc.
func (rs *regionServers) start(newServer func(*cosmosrest.Handler) *http.Server, wrap func(net.Listener) net.Listener, serve func(*http.Server, net.Listener) error, errc chan<- error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.wrap, rs.serve, rs.errc = wrap, serve, errc
	for i, name := range rs.names {
		rs.servers = append(rs.servers, newServer(rs.acct.Region(name)))
		rs.listeners[i] = wrap(rs.listeners[i])
		rs.run(i)
	}
}

// run serves region i on its listener. rs.mu is held.
func (rs *regionServers) run(i int) {
	s, ln := rs.servers[i], rs.listeners[i]
	go func() {
		err := rs.serve(s, ln)
		rs.mu.Lock()
		ours := rs.stopped || rs.listeners[i] != ln // closed for a shutdown, or for the region's refusal
		rs.mu.Unlock()
		if !ours {
			rs.errc <- err
		}
	}()
}

// changed closes the listener of a region going down refusing
// connections, and opens it again when the region comes up.
func (rs *regionServers) changed(name string, down cosmosrest.RegionDownMode) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.stopped || rs.servers == nil {
		return
	}
	for i, n := range rs.names {
		if n != name {
			continue
		}
		switch {
		case down == cosmosrest.RegionRefuse && rs.listeners[i] != nil:
			ln := rs.listeners[i]
			rs.listeners[i] = nil
			ln.Close()
		case down != cosmosrest.RegionRefuse && rs.listeners[i] == nil:
			ln, err := net.Listen("tcp", rs.addrs[i])
			if err != nil {
				rs.logger.Error("lethe: the region could not listen again", "region", name, "addr", rs.addrs[i], "err", err)
				return
			}
			rs.listeners[i] = rs.wrap(ln)
			rs.run(i)
		}
	}
}

// shutdown stops every region's server gracefully, then closes the
// account. Requests held by a region down in timeout mode are answered
// 503 first: the servers wait for the requests they serve.
func (rs *regionServers) shutdown(ctx context.Context) error {
	rs.mu.Lock()
	rs.stopped = true
	servers := rs.servers
	rs.mu.Unlock()
	rs.acct.ReleaseHeld()
	var first error
	for _, s := range servers {
		if err := s.Shutdown(ctx); err != nil && first == nil {
			first = fmt.Errorf("shutdown: %w", err)
		}
	}
	return errors.Join(first, rs.acct.Close())
}

// close closes every server and the account at once.
func (rs *regionServers) close() {
	rs.mu.Lock()
	rs.stopped = true
	servers := rs.servers
	rs.mu.Unlock()
	for _, s := range servers {
		s.Close()
	}
	rs.closeListeners()
	rs.acct.Close()
}

// endpoints returns each region's name and URL, for the banner.
func (rs *regionServers) endpoints(scheme, addr string) []any {
	var out []any
	for i, name := range rs.names {
		out = append(out, name, displayURL(scheme, addr, addrOf(rs.addrs[i])))
	}
	return out
}

// addrOf is a resolved address as a net.Addr.
type addrOf string

func (a addrOf) Network() string { return "tcp" }
func (a addrOf) String() string  { return string(a) }

// The regions' metrics (with -regions), by region.
var (
	labelsRegion = []string{"region"}

	descRegionUp      = prometheus.NewDesc("lethe_region_up", "1 if the region serves requests, 0 if it was taken down.", labelsRegion, nil)
	descRegionWrite   = prometheus.NewDesc("lethe_region_write", "1 if the region accepts writes.", labelsRegion, nil)
	descRegionPending = prometheus.NewDesc("lethe_region_pending_changes", "Changes sent to the region and not yet applied.", labelsRegion, nil)
	descRegionLag     = prometheus.NewDesc("lethe_region_replication_lag_seconds",
		"How long ago the oldest change not yet applied in the region was written; 0 if none.", labelsRegion, nil)
	descRegionConflicts = prometheus.NewDesc("lethe_region_conflicts_total",
		"Replicated changes that conflicted with the region's version of their item (several write regions).", labelsRegion, nil)
)

// regionCollector reads an account's regions at each scrape.
type regionCollector struct{ a *cosmosrest.Account }

func (regionCollector) Describe(chan<- *prometheus.Desc) {}

func (c regionCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.a.Status() {
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, st.Name)
		}
		gauge(descRegionUp, bool01(st.Down == ""))
		gauge(descRegionWrite, bool01(st.Write))
		gauge(descRegionPending, float64(st.Pending))
		gauge(descRegionLag, float64(st.LagMS)/1000)
		ch <- prometheus.MustNewConstMetric(descRegionConflicts, prometheus.CounterValue, float64(st.Conflicts), st.Name)
	}
}
