package cosmosrest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest/internal/replication"
)

// Consistency levels, as the service spells them in the account resource
// and in x-ms-consistency-level, strongest first.
const (
	Strong           = "Strong"
	BoundedStaleness = "BoundedStaleness"
	Session          = "Session"
	ConsistentPrefix = "ConsistentPrefix"
	Eventual         = "Eventual"
)

// levels ranks the consistency levels: a lower rank is stronger.
var levels = map[string]int{Strong: 0, BoundedStaleness: 1, Session: 2, ConsistentPrefix: 3, Eventual: 4}

// levelOf returns the level of a header's value, as the service reads it
// (case-insensitively), and false when it names none.
func levelOf(v string) (string, bool) {
	for l := range levels {
		if strings.EqualFold(v, l) {
			return l, true
		}
	}
	return "", false
}

// RegionConfig is one region of an AccountConfig.
type RegionConfig struct {
	// Name is the region's name, as the account resource lists it and
	// the SDKs' preferred regions name it ("East US").
	Name string
	// Writable makes the region accept writes: the account's write region
	// (exactly one is writable), or, with MultipleWriteLocations, one of
	// its write regions (at least one).
	Writable bool
	// Endpoint is the region's endpoint as the account resource
	// advertises it: a URL ("https://east.example/"), or ":port", the
	// host a request came to with that port (so that "localhost" is
	// answered with the loopback address, as a one-region front does).
	// "" is the request's own endpoint, which suits only one region.
	Endpoint string
}

// AccountConfig configures an Account: its regions and how they
// replicate.
type AccountConfig struct {
	// Config is the configuration of every region's Handler. With Dir,
	// each region keeps its databases in a subdirectory of its own,
	// Dir/<region's slug> (RegionSlug); every region shares Faults and
	// Clock, the account's one clock.
	Config
	// Regions are the account's regions, in the order of their failover
	// priority: at least one, with distinct names (and slugs), exactly one
	// writable.
	Regions []RegionConfig
	// MultipleWriteLocations makes every writable region accept writes at
	// once. Writes to one item in two regions within the lag conflict, and
	// every region keeps the same winner, by the container's
	// conflictResolutionPolicy (conflicts.go). Strong is refused with it,
	// as the service refuses it.
	MultipleWriteLocations bool
	// Consistency is the account's default consistency level (Strong,
	// BoundedStaleness, Session, ConsistentPrefix or Eventual); "" means
	// Session for several regions (the service's default) and Strong for
	// one (what a one-region front advertises).
	Consistency string
	// MaxStalenessPrefix and MaxIntervalInSeconds bound a BoundedStaleness
	// account's read regions: at most that many changes, or that many
	// seconds, behind the write region. 0 means the service's defaults,
	// 100 changes and 5 seconds.
	MaxStalenessPrefix   int
	MaxIntervalInSeconds int
	// Lag is the replication lag of one change from region from to region
	// to, called once per change (it may draw from a seeded random source
	// of its own, under the account's lock); nil means none, every change
	// delivered at once.
	Lag func(from, to string) time.Duration
	// RegionChanged, when set, is called after a region is taken down or
	// brought up (down is "" when it comes up), outside the account's
	// locks: cmd/lethe closes and reopens the region's listener for
	// RegionRefuse.
	RegionChanged func(region string, down RegionDownMode)
}

// RegionDownMode is how a region that is down fails its requests.
type RegionDownMode string

const (
	// RegionRefuse drops every connection (as a refused one: the
	// in-process transport and cmd/lethe's closed listener refuse it).
	RegionRefuse RegionDownMode = "refuse"
	// RegionUnavailable answers every request 503.
	RegionUnavailable RegionDownMode = "unavailable"
	// RegionTimeout holds every request until its client gives up (or the
	// region comes up: it is then served).
	RegionTimeout RegionDownMode = "timeout"
)

// ErrRegion is wrapped by the errors of a request about regions that the
// account cannot honour: an unknown region, a failover to a region that
// is down.
var ErrRegion = errors.New("cosmosrest: region")

// RegionSlug returns the name of region name's subdirectory of
// AccountConfig.Dir: its letters and digits lowercased, every other run
// of characters one '-' ("East US" is "east-us").
func RegionSlug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return b.String()
}

// Account is a Cosmos DB account of several regions, each served by a
// Handler of its own over its own stores (its replica). Metadata
// (databases, containers, users, permissions, scripts, offers, splits and
// resets) is account-wide: a change accepted in any region is made in
// every region before it is answered. Items are written in the write
// region and replicated to the others, in order, each change after the
// lag from the write region (Lag), through each replica's one write path
// (lethe.Container.ApplyReplicaChange), keeping its instant and ETag: an
// item expires at the same instant in every region.
type Account struct {
	cfg     AccountConfig
	multi   bool // several write regions
	level   string
	bound   replication.Bound
	regions []*regionNode
	byName  map[string]*regionNode
	sched   *replication.Scheduler[shipped]

	// topo is held for reading by each data request while it is served,
	// and for writing by a failover, which moves the write region, and by
	// an account-wide change of containers (fanout).
	topo sync.RWMutex
	// meta serializes the account-wide requests, so that every region
	// makes them in the same order.
	meta sync.Mutex
	// beforeReplay, when set (by tests), runs in fanout before each
	// region replays an account-wide change, with the region's name.
	beforeReplay atomic.Pointer[func(region string)]

	mu     sync.Mutex // guards hub, the regions' state, repl and gens
	hub    *regionNode
	repl   map[srcKey]*collRepl
	gens   map[collKey]uint64 // each container's incarnation: forget ends one
	floors map[srcKey]uint64  // keepFloorsLocked
	closed bool

	wake chan struct{} // a change was sent: the delivery loop looks again
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the delivery loop has stopped
}

// regionNode is one region of an Account.
type regionNode struct {
	acct     *Account
	idx      int // its place in the account's regions
	name     string
	endpoint string
	writable bool // with MultipleWriteLocations: it accepts writes
	h        *Handler

	// deliver serializes the delivery of changes to the region, so that
	// they are applied in order.
	deliver sync.Mutex
	// conflicts counts the replicated changes that conflicted with the
	// region's version (several write regions).
	conflicts atomic.Int64

	// Guarded by acct.mu:
	down     RegionDownMode // "" when up
	up       chan struct{}  // closed when the region comes up; nil when up
	progress map[srcKey]uint64
	// recv is, with several write regions, the write sequence number of
	// the latest write of region src (by index) of a container that the
	// region has received from another (applied or not): it has received
	// every earlier one of that region too, as each region's writes reach
	// every other in their order (account_feed.go).
	recv map[srcKey]uint64
}

// collKey names a container of the account.
type collKey struct{ db, coll string }

// srcKey names a container as written by one region: the region whose
// feed is read (Account.repl), or whose writes a session token counts (a
// region's progress: always 0 when one region writes, whichever it is).
type srcKey struct {
	src int
	k   collKey
}

// NewAccount returns an account of the regions cfg names, each region's
// Handler made as New makes one from cfg.Config. Bad configuration (no
// region, two of one name, not exactly one writable, several write
// regions, Strong with several write regions, an unknown consistency
// level, a negative bound) is an error and opens nothing.
func NewAccount(cfg AccountConfig) (*Account, error) {
	a := &Account{cfg: cfg, multi: cfg.MultipleWriteLocations, byName: map[string]*regionNode{}, repl: map[srcKey]*collRepl{}, gens: map[collKey]uint64{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if err := a.check(); err != nil {
		return nil, err
	}
	for i, rc := range cfg.Regions {
		c := cfg.Config
		if c.Dir != "" {
			c.Dir = filepath.Join(cfg.Dir, RegionSlug(rc.Name))
		}
		if a.multi {
			c.writeRegions, c.writeRegion = len(cfg.Regions), i
		}
		h, err := New(c)
		if err != nil {
			for _, n := range a.regions {
				_ = n.h.Close()
			}
			return nil, fmt.Errorf("cosmosrest: region %q: %w", rc.Name, err)
		}
		n := &regionNode{acct: a, idx: i, name: rc.Name, endpoint: rc.Endpoint, writable: rc.Writable, h: h, progress: map[srcKey]uint64{}, recv: map[srcKey]uint64{}}
		h.region = n
		if i > 0 {
			// The instant of the containers found on disk (collTS): the
			// same in every region, as their ETags must be.
			h.start = a.regions[0].h.start
		}
		a.regions = append(a.regions, n)
		a.byName[rc.Name] = n
		if rc.Writable && a.hub == nil {
			a.hub = n
		}
	}
	if err := a.loadState(); err != nil {
		for _, n := range a.regions {
			_ = n.h.Close()
		}
		return nil, err
	}
	a.sched = replication.New[shipped](cfg.Lag, a.bound)
	a.startCursors()
	if cfg.Clock == nil {
		go a.loop()
	} else {
		close(a.done)
	}
	return a, nil
}

// maxStalenessInterval is the largest MaxIntervalInSeconds, the
// service's: one day.
const maxStalenessInterval = 86400

// check checks a's configuration and sets its level and bound.
func (a *Account) check() error {
	cfg := &a.cfg
	if len(cfg.Regions) == 0 {
		return errors.New("cosmosrest: an account needs at least one region")
	}
	if cfg.NoChangeFeed {
		return errors.New("cosmosrest: an account replicates through each container's change feed: NoChangeFeed is refused")
	}
	slugs := map[string]string{}
	writable := 0
	for _, r := range cfg.Regions {
		s := RegionSlug(r.Name)
		if s == "" {
			return fmt.Errorf("cosmosrest: the region name %q has no letter or digit", r.Name)
		}
		if other, ok := slugs[s]; ok {
			return fmt.Errorf("cosmosrest: the regions %q and %q have one name (%q)", other, r.Name, s)
		}
		slugs[s] = r.Name
		if r.Writable {
			writable++
		}
	}
	switch {
	case cfg.MultipleWriteLocations && writable == 0:
		return errors.New("cosmosrest: an account of several write regions needs at least one writable region")
	case !cfg.MultipleWriteLocations && writable != 1:
		return fmt.Errorf("cosmosrest: an account has exactly one write region, not %d (MultipleWriteLocations allows several)", writable)
	}
	switch l, ok := levelOf(cfg.Consistency); {
	case cfg.Consistency == "" && len(cfg.Regions) == 1:
		a.level = Strong
	case cfg.Consistency == "":
		a.level = Session
	case !ok:
		return fmt.Errorf("cosmosrest: %q is not a consistency level (Strong, BoundedStaleness, Session, ConsistentPrefix or Eventual)", cfg.Consistency)
	default:
		a.level = l
	}
	if a.level == Strong && cfg.MultipleWriteLocations && len(cfg.Regions) > 1 {
		return errors.New("cosmosrest: Strong consistency is not offered with several write regions, as the service does not offer it")
	}
	if cfg.MaxStalenessPrefix < 0 || cfg.MaxIntervalInSeconds < 0 {
		return fmt.Errorf("cosmosrest: the staleness bounds must not be negative (prefix %d, interval %d s)", cfg.MaxStalenessPrefix, cfg.MaxIntervalInSeconds)
	}
	if cfg.MaxIntervalInSeconds > maxStalenessInterval {
		return fmt.Errorf("cosmosrest: the staleness interval %d s is above the service's largest, %d s (max-interval)", cfg.MaxIntervalInSeconds, maxStalenessInterval)
	}
	if cfg.MaxStalenessPrefix == 0 {
		cfg.MaxStalenessPrefix = 100
	}
	if cfg.MaxIntervalInSeconds == 0 {
		cfg.MaxIntervalInSeconds = 5
	}
	if a.level == BoundedStaleness {
		a.bound = replication.Bound{MaxVersions: cfg.MaxStalenessPrefix, MaxAge: time.Duration(cfg.MaxIntervalInSeconds) * time.Second}
	}
	return nil
}

// Region returns the Handler of the region named name, nil if the
// account has none.
func (a *Account) Region(name string) *Handler {
	if n, ok := a.byName[name]; ok {
		return n.h
	}
	return nil
}

// Regions returns the names of the account's regions, in their order.
func (a *Account) Regions() []string {
	out := make([]string, len(a.regions))
	for i, n := range a.regions {
		out[i] = n.name
	}
	return out
}

// WriteRegion returns the name of the account's write region: with
// MultipleWriteLocations, the first writable region.
func (a *Account) WriteRegion() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hub.name
}

// Consistency returns the account's default consistency level.
func (a *Account) Consistency() string { return a.level }

// Close delivers every change not yet delivered (to every region, up or
// down: with Dir, the next NewAccount finds the replicas consistent),
// stops the delivery, and closes every region's Handler. Close is
// idempotent.
func (a *Account) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	close(a.stop)
	for _, n := range a.regions {
		// A request held by a region down (RegionTimeout) is answered, as
		// the handlers answer every request once closed: 503.
		n.down = ""
		if n.up != nil {
			close(n.up)
			n.up = nil
		}
	}
	a.mu.Unlock()
	<-a.done
	// An account-wide change under way is made in every region before
	// they close: with Dir, the next NewAccount finds them alike.
	a.meta.Lock()
	defer a.meta.Unlock()
	a.topo.Lock()
	for _, n := range a.regions {
		if n.acceptsWrites() {
			a.collectAll(n)
		}
	}
	for _, n := range a.regions {
		a.catchUp(n)
	}
	a.topo.Unlock()
	var first error
	for _, n := range a.regions {
		if err := n.h.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// hubNode returns the write region (with several, the first).
func (a *Account) hubNode() *regionNode {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hub
}

// replayKey marks, in its context, a request an account replays in its
// other regions.
type replayKey struct{}

// nonceKey holds, in a request's context, the nonce an account-wide
// request gives what it makes (a permission, a script) in every region,
// so that a resource token minted in one region holds in every other.
type nonceKey struct{}

// nonce returns the nonce of what request q makes: its account's, or a
// new one.
func (q *request) nonce() string {
	if v, ok := q.r.Context().Value(nonceKey{}).(string); ok {
		return v
	}
	return newNonce()
}

// instantKey holds, in a request's context, the instant of the
// account-wide change it makes, by the answering region's clock, so that
// what it makes has the same _ts (and ETag) in every region.
type instantKey struct{}

// instant returns the instant of the change request q makes: its
// account's, or the handler's clock's now.
func (q *request) instant() time.Time {
	if v, ok := q.r.Context().Value(instantKey{}).(time.Time); ok {
		return v
	}
	return q.h.now()
}

func replaying(r *http.Request) bool { return r.Context().Value(replayKey{}) != nil }

// unreachable answers a request to a region that is down as the region's
// mode says, and reports whether it did. A request of the regions'
// control endpoint is always served.
func (n *regionNode) unreachable(w http.ResponseWriter, r *http.Request) bool {
	if replaying(r) || isControlPath(r.URL.Path, regionsPath) {
		return false
	}
	for {
		a := n.acct
		a.mu.Lock()
		mode, up := n.down, n.up
		a.mu.Unlock()
		switch mode {
		case "":
			return false
		case RegionRefuse:
			panic(http.ErrAbortHandler)
		case RegionUnavailable:
			w.Header().Set("Connection", "close")
			apiError{status: http.StatusServiceUnavailable, msg: withDetail(msgUnavailable, "the region "+n.name+" is down")}.write(w)
			return true
		}
		select {
		case <-up:
		case <-r.Context().Done():
			panic(http.ErrAbortHandler)
		}
	}
}

// serveControl serves the regions' control endpoint, and the reset and
// split endpoints, made in every region (fanout). It reports false for
// any other path.
func (n *regionNode) serveControl(w http.ResponseWriter, r *http.Request, deadline time.Time, g gateway) bool {
	switch {
	case replaying(r):
		return false
	case isControlPath(r.URL.Path, regionsPath):
		n.acct.serveRegions(w, r, deadline)
		return true
	case !isControlPath(r.URL.Path, resetPath) && !isControlPath(r.URL.Path, splitPath):
		return false
	}
	body, ok := n.h.readBody(w, r, deadline, maxControlBody, true)
	if !ok {
		return true
	}
	reset := isControlPath(r.URL.Path, resetPath)
	n.acct.fanout(n, w, r, body, g, reset, nil, func(w http.ResponseWriter, r *http.Request) {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if reset {
			n.h.serveReset(w, r, deadline)
		} else {
			n.h.serveSplit(w, r, deadline)
		}
	}, func() {
		if reset {
			n.acct.forget(func(collKey) bool { return true })
		}
	})
	return true
}

// serve serves a request of the REST API in region n, by the account's
// rules: metadata changes in every region, item writes in the write region
// only (403 substatus 3 elsewhere), reads by the consistency level.
func (n *regionNode) serve(q *request, g gateway) {
	a := n.acct
	if replaying(q.r) {
		q.serve()
		return
	}
	if accountWide(q) {
		a.fanout(n, q.w, q.r, q.body, g, structural(q), replacedContainer(q), func(w http.ResponseWriter, r *http.Request) {
			q.w, q.r = w, r
			q.serve()
		}, func() { a.forgetDeleted(q) })
		return
	}
	write := itemWrite(q)
	level := a.level
	if write || itemRead(q) {
		var ok bool
		if level, ok = n.consistency(q); !ok {
			return
		}
	}
	a.topo.RLock()
	defer a.topo.RUnlock()
	a.mu.Lock()
	hub := a.hub
	a.mu.Unlock()
	a.deliverDue(n)
	switch {
	case write && !n.acceptsWrites():
		apiError{status: http.StatusForbidden, sub: subWriteForbidden, msg: msgWriteForbidden}.write(q.w)
		return
	case write || !itemRead(q) || (!a.multi && n == hub):
	case level == Strong:
		a.collect(hub, collKey{q.t.db, q.t.coll})
		a.catchUp(n)
	case level == Session && !n.sessionAvailable(q):
		apiError{status: http.StatusNotFound, sub: subReadSessionNotAvailable, msg: msgReadSessionNotAvailable}.write(q.w)
		return
	}
	q.serve()
	if write {
		a.wrote(n, collKey{q.t.db, q.t.coll})
	}
}

// acceptsWrites reports whether region n accepts writes: it is the write
// region, or one of them.
func (n *regionNode) acceptsWrites() bool {
	if n.acct.multi {
		return n.writable
	}
	return n == n.acct.hubNode()
}

// Substatus codes and messages of the account's refusals, as the service
// sends them.
const (
	subWriteForbidden          = 3    // 403: the region does not accept writes
	subReadSessionNotAvailable = 1002 // 404: the region is behind the session token

	msgWriteForbidden          = "The requested operation cannot be performed at this region"
	msgReadSessionNotAvailable = "The read session is not available for the input session token."
)

// consistency returns the consistency level item request q reads at: the
// account's, or the weaker one its x-ms-consistency-level asks for. A
// level that is unknown or stronger than the account's is refused with
// 400, as the service refuses it, and consistency reports false.
func (n *regionNode) consistency(q *request) (string, bool) {
	v := q.r.Header.Get("x-ms-consistency-level")
	if v == "" {
		return n.acct.level, true
	}
	l, ok := levelOf(v)
	switch {
	case !ok:
		q.answerError(http.StatusBadRequest, fmt.Sprintf("the x-ms-consistency-level %q is not a consistency level (Strong, BoundedStaleness, Session, ConsistentPrefix or Eventual)", clip(v)))
		return "", false
	case levels[l] < levels[n.acct.level]:
		q.answerError(http.StatusBadRequest, fmt.Sprintf("ConsistencyLevel %s specified in the request is invalid when service is configured with consistency level %s. Ensure the request consistency level is not stronger than the service consistency level.", l, n.acct.level))
		return "", false
	}
	return l, true
}

// accountWide reports whether request q changes the account's metadata:
// a create, replace or delete of anything but items (queries and reads of
// metadata are served by the region alone).
func accountWide(q *request) bool {
	switch q.r.Method {
	case http.MethodGet, http.MethodHead:
		return false
	}
	switch q.t.kind {
	case tDocuments, tDocument, tPartitionDelete, tPKRanges, tPKRange, tConflicts, tConflict, tAccount, tUnsupported, tUnknown:
		return false
	case tSproc:
		return q.r.Method != http.MethodPost // a POST runs it
	}
	return !isQueryRequest(q.r)
}

// itemWrite reports whether request q writes items: a create, upsert,
// replace, patch or delete of a document, a batch, a bulk request, a
// partition key delete, a stored procedure's run.
func itemWrite(q *request) bool {
	switch q.t.kind {
	case tDocuments:
		return q.r.Method == http.MethodPost && !isQueryRequest(q.r)
	case tDocument:
		return q.r.Method != http.MethodGet && q.r.Method != http.MethodHead
	case tPartitionDelete, tSproc:
		return q.r.Method == http.MethodPost
	}
	return false
}

// itemRead reports whether request q reads items: a point read, a read
// of the feed, a query, the change feed.
func itemRead(q *request) bool {
	return (q.t.kind == tDocuments || q.t.kind == tDocument) && !itemWrite(q)
}

// fanout serves an account-wide request: in region from first (local,
// writing to w, given r with the request's nonce), then, when that
// succeeded, replayed in every other region, as the same request (its
// body, its signature, its nonce); done runs after it, when it succeeded.
// The client is answered after the replays: when a region fails what the
// first made, the regions have diverged, and the client is answered 503
// naming the region (and the failure is logged). A request that makes,
// deletes or replaces containers (exclusive, structural) holds topo for
// writing throughout, so that no item request reaches a container some
// regions have and others not yet (or no longer), or have changed and
// others not yet. A request that replaces container replaced (non-nil)
// holds its expiries in every other region (holdReplaced) until the
// replays are made, so that no reaper purges meanwhile what the change,
// made as of the first region's instant, keeps alive.
func (a *Account) fanout(from *regionNode, w http.ResponseWriter, r *http.Request, body []byte, g gateway, exclusive bool, replaced *collKey, local func(http.ResponseWriter, *http.Request), done func()) {
	a.meta.Lock()
	defer a.meta.Unlock()
	if exclusive {
		a.topo.Lock()
		defer a.topo.Unlock()
	}
	if replaced != nil {
		defer a.holdReplaced(from, *replaced)()
	}
	ctx := context.WithValue(r.Context(), nonceKey{}, newNonce())
	r = r.WithContext(context.WithValue(ctx, instantKey{}, from.h.now()))
	sw := &bufferWriter{header: w.Header().Clone(), status: http.StatusOK}
	local(sw, r)
	if sw.status < 200 || sw.status > 299 {
		sw.flush(w)
		return
	}
	var failed []string
	for _, n := range a.regions {
		if n == from {
			continue
		}
		if f := a.beforeReplay.Load(); f != nil {
			(*f)(n.name)
		}
		r2 := r.Clone(context.WithValue(r.Context(), replayKey{}, true))
		r2.Body = io.NopCloser(bytes.NewReader(body))
		r2.ContentLength = int64(len(body))
		// A precondition is the client's, met where it was answered: a
		// region is to make what that region made.
		r2.Header.Del("If-Match")
		rec := &statusWriter{ResponseWriter: discard{header: http.Header{}}, status: http.StatusOK}
		n.h.serve(rec, r2, g)
		if rec.status < 200 || rec.status > 299 {
			n.h.cfg.Logger.Error("cosmosrest: a region failed an account-wide change the others made",
				"region", n.name, "method", r.Method, "path", r.URL.Path, "status", rec.status)
			failed = append(failed, fmt.Sprintf("%s (%d)", n.name, rec.status))
		}
	}
	done()
	if len(failed) > 0 {
		apiError{status: http.StatusServiceUnavailable, msg: withDetail(msgUnavailable, fmt.Sprintf(
			"the region %s made the change and the region(s) %s failed it: the account's regions differ", from.name, strings.Join(failed, ", ")))}.write(w)
		return
	}
	sw.flush(w)
}

// bufferWriter is a ResponseWriter that keeps its answer until flush.
type bufferWriter struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (b *bufferWriter) Header() http.Header { return b.header }

func (b *bufferWriter) WriteHeader(code int) {
	if !b.wrote {
		b.status, b.wrote = code, true
	}
}

func (b *bufferWriter) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

// flush writes the answer kept to w, its headers in place of w's.
func (b *bufferWriter) flush(w http.ResponseWriter) {
	hdr := w.Header()
	clear(hdr)
	for k, v := range b.header {
		hdr[k] = v
	}
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body.Bytes())
}

// structural reports whether account-wide request q makes, deletes or
// replaces containers: a create or delete of a database or a container,
// or a container's replace. A replace changes what items are seen (its
// defaultTtl) as of the answering region's instant, so no region may
// answer an item request between that instant and its replay there: what
// it showed expired meanwhile would be seen again (the seed rule).
func structural(q *request) bool {
	switch q.r.Method {
	case http.MethodPost, http.MethodDelete:
		return q.t.kind == tDatabase || q.t.kind == tDatabases || q.t.kind == tContainer || q.t.kind == tContainers
	case http.MethodPut:
		return q.t.kind == tContainer
	}
	return false
}

// replacedContainer returns the container account-wide request q
// replaces, or nil when it replaces none.
func replacedContainer(q *request) *collKey {
	if q.r.Method != http.MethodPut || q.t.kind != tContainer {
		return nil
	}
	return &collKey{q.t.db, q.t.coll}
}

// holdReplaced holds the expiries of container k in every region but
// from at that region's now (lethe.Container.HoldExpiries), and returns
// what releases them all. The holds are placed before the change's
// instant is taken, so that no region's reaper can have purged an item
// expiring after it; a region lacking the container holds nothing.
func (a *Account) holdReplaced(from *regionNode, k collKey) (release func()) {
	var releases []func()
	for _, n := range a.regions {
		if n == from {
			continue
		}
		if c, ok := n.storeContainer(k); ok {
			releases = append(releases, c.HoldExpiries(n.h.now()))
		}
	}
	return func() {
		for _, r := range releases {
			r()
		}
	}
}

// forgetDeleted forgets the replication state of the containers an
// account-wide request deleted: a container, or every container of a
// database.
func (a *Account) forgetDeleted(q *request) {
	if q.r.Method != http.MethodDelete {
		return
	}
	switch q.t.kind {
	case tDatabase:
		a.forget(func(k collKey) bool { return k.db == q.t.db })
	case tContainer:
		a.forget(func(k collKey) bool { return k == collKey{q.t.db, q.t.coll} })
	}
}

// statusWriter is a ResponseWriter that notes the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the writer underneath.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// discard is a ResponseWriter that keeps nothing.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}

// knownRegion returns the region named name, or an error wrapping
// ErrRegion.
func (a *Account) knownRegion(name string) (*regionNode, error) {
	n, ok := a.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w: the account has no region %q (it has %s)", ErrRegion, name, strings.Join(a.Regions(), ", "))
	}
	return n, nil
}

// storeContainer returns container k of region n's stores, or false when
// the region has no such container.
func (n *regionNode) storeContainer(k collKey) (*lethe.Container, bool) {
	d, ok := n.h.lookup(k.db)
	if !ok {
		return nil, false
	}
	c, err := d.store.Container(k.coll)
	return c, err == nil
}
