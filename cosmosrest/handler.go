package cosmosrest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest/internal/script"
	"github.com/lethedb/lethe/internal/vfs"
)

// EmulatorKey is the Azure Cosmos DB emulator's well-known master key, the
// default of Config.Key. It is public: a handler serving it is open to
// anyone who can reach it.
const EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// MaxRequestSize bounds a request body: a document of lethe.MaxItemSize
// and some room for whitespace. A body that says it is longer
// (Content-Length) is refused with 413 before any of it is read; one that
// grows longer, as soon as it does. What follows of a refused body is read
// and discarded, so that the refusal reaches a client still writing it
// (refuse).
const MaxRequestSize = lethe.MaxItemSize + 64<<10

// bodyReadTimeout bounds the reading of a request body, from the end of
// its header: a 2 MB body must arrive at 35 KB/s at least. A body still
// unread then gets 408 and the connection is closed. It holds whatever
// the server's own ReadTimeout is.
const bodyReadTimeout = time.Minute

// maxResponseBytes is the size past which a query page without an item
// limit (x-ms-max-item-count: -1) stops, as Cosmos DB's pages stop at 4 MB.
const maxResponseBytes = 4 << 20

// queryPageTime is how long a query with x-ms-max-item-count: -1 joins
// pages for one response: the service's time for one page.
const queryPageTime = 5 * time.Second

// paceSlice is how long a query joining pages for one response (with
// x-ms-max-item-count: -1) runs before it gives way to other requests.
const paceSlice = 2 * time.Millisecond

// giveWay lets a long query page that has just run for busy give way to
// other requests: when any was being served, or began, since the page
// last looked (seen, which it updates), it sleeps as long as it ran, so
// that it takes at most half of a core while others are served, and runs
// at full speed alone. A query that holds a core flat out for seconds
// otherwise doubles the tail latency of every short request beside it on
// a small machine (issue 30's worst query: point reads' p99 2.8–3.3× idle
// beside it). The page's time (queryPageTime) counts the sleeps, so a
// paced page is shorter, never longer.
func (h *Handler) giveWay(ctx context.Context, busy time.Duration, seen *uint64) {
	started := h.started.Load()
	others := started != *seen || h.inFlight.Load() > 1
	*seen = started
	if !others {
		return
	}
	h.paced.Add(1)
	t := time.NewTimer(busy)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Config configures a Handler. The zero value serves in memory, under the
// emulator's key, on the system clock.
type Config struct {
	// Key is the account's master key, base64 (as the SDKs take it);
	// "" means EmulatorKey. Every request must be signed with it.
	Key string
	// Dir is "" to keep every database in memory, or a directory in which
	// each database is a durable lethe store of its own, in a
	// subdirectory, reopened by the next New on the same Dir, beside the
	// database's users, scripts and partition key range layouts (JSON
	// files). One handler at a time may have a Dir.
	Dir string
	// Sync is the durable stores' sync policy (lethe.Options.Sync).
	Sync lethe.SyncPolicy
	// Clock is the stores' clock (lethe.Options.Clock): every expiry and
	// _ts comes from it. nil means the system clock. Request dates are
	// always checked against the system clock.
	Clock lethe.Clock
	// Reaper bounds each store's background purge (lethe.Options.Reaper).
	Reaper lethe.ReaperOptions
	// ChangeFeed is the retention of the change feed that every container
	// created through the front keeps, as every Cosmos DB container has a
	// change feed (lethe.ContainerProperties.ChangeFeedPolicy). nil means
	// lethe's defaults (lethe.DefaultChangeFeedMaxChanges changes, at most
	// lethe.DefaultChangeFeedMaxBytes).
	ChangeFeed *lethe.ChangeFeedPolicy
	// NoChangeFeed creates containers without a change feed: writes cost
	// a little less, and change feed requests are refused.
	NoChangeFeed bool
	// AllowOrderByWithoutCompositeIndex runs a query ordered by several
	// paths that no composite index of the container serves, sorting
	// every item, where Cosmos DB refuses it (400, "The order by query
	// does not have a corresponding composite index that it can be served
	// from."), as the front does by default
	// (lethe.QueryOptions.RequireCompositeIndexes).
	AllowOrderByWithoutCompositeIndex bool
	// Faults, when set, are fault injection rules applied to every
	// request after it is authenticated, and the handler serves their
	// control endpoint, /_lethe/faults (see Faults).
	Faults *Faults
	// Logger receives what an operator needs and no response says: each
	// durable database's recovery (debug; a torn end of its log cut off,
	// warn), a store that failed (its disk full or failing: error, from
	// lethe.Options.Logger, which the stores are given), and every request
	// that failed on the server's side, 500 or a store's 503 (error). nil
	// means slog.Default().
	Logger *slog.Logger

	// ScriptTimeout is the time a stored procedure or trigger may run:
	// after it its operations are no longer accepted, and a script that
	// goes on is stopped and its writes dropped. 0 means the service's 5
	// seconds.
	ScriptTimeout time.Duration
	// ScriptMaxHeapGrowth is how much the process's heap may grow while a
	// script runs before the script is stopped (see the package
	// documentation, Server-side JavaScript). 0 means 128 MiB.
	ScriptMaxHeapGrowth uint64

	// Ranges says how many partition key ranges the containers the front
	// creates have (see RangeConfig); the zero value follows the service.
	Ranges RangeConfig

	// fs is the file system of Dir and its stores: vfs.OS unless a test
	// sets another (vfs.SetConfigFS), as lethe.Options does.
	fs vfs.FS
	// writeRegions and writeRegion are the stores' lethe.Options of the
	// same names: set by NewAccount for a region of an account that
	// writes in several.
	writeRegions, writeRegion int
}

func init() {
	vfs.SetConfigFS = func(cfg any, fsys vfs.FS) { cfg.(*Config).fs = fsys }
}

// Handler serves the Azure Cosmos DB for NoSQL REST API over lethe stores,
// one store per database. It is safe for concurrent use. Close it to close
// the stores.
type Handler struct {
	key   []byte
	cfg   Config
	start time.Time
	lsn   atomic.Uint64 // the session token's progress: one more per write
	// inFlight counts the requests being served and started those begun,
	// for giveWay.
	inFlight atomic.Int64
	started  atomic.Uint64
	paced    atomic.Int64 // the times giveWay slept, for tests

	mu     sync.RWMutex // guards dbs and closed; held for writing while a database is created or deleted
	dbs    map[string]*database
	closed bool
	lock   io.Closer // Config.Dir's lock, nil in memory
	fs     vfs.FS    // the file system of Config.Dir

	// unavailable holds, by directory name (dbDirName), the databases of
	// Config.Dir that could not be opened at start and why: their
	// requests get 503. Written by New only.
	unavailable map[string]error

	bodyTimeout time.Duration // bodyReadTimeout; tests shorten it

	programs    *script.Cache // compiled scripts, by version (sprocexec.go)
	functionsMu sync.Mutex
	functions   map[string]*script.Function // UDFs ready for calls, by version (udf.go)
	// scriptSlots bounds the scripts running at once (sprocexec.go).
	scriptSlots chan struct{}

	// region is the handler's region of an Account, nil for a handler of
	// its own (New).
	region *regionNode
}

// New returns a Handler. With Config.Dir it creates the directory if need
// be, takes it (another handler on it, in this process or another, makes
// New fail with lethe.ErrLocked), and opens every database found there. A
// database that cannot be opened (a damaged meta file or store, an
// unreadable directory) does not stop the others: it is logged at error
// (log/slog) and served as unavailable, every request on it answered 503
// with the cause, its directory left untouched for its owner to repair.
func New(cfg Config) (*Handler, error) {
	if cfg.Key == "" {
		cfg.Key = EmulatorKey
	}
	key, err := base64.StdEncoding.DecodeString(cfg.Key)
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("cosmosrest: the key is not base64: %v", err)
	}
	if f := cfg.ChangeFeed; f != nil && (f.MaxChanges < 0 || f.MaxBytes < 0) {
		return nil, fmt.Errorf("cosmosrest: the change feed retention must not be negative (MaxChanges %d, MaxBytes %d); 0 means lethe's default", f.MaxChanges, f.MaxBytes)
	}
	if err := cfg.Ranges.check(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Handler{key: key, cfg: cfg, start: time.Now(), dbs: make(map[string]*database), unavailable: map[string]error{}, bodyTimeout: bodyReadTimeout, fs: cfg.fs,
		programs: script.NewCache(maxCachedPrograms), functions: map[string]*script.Function{}, scriptSlots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))}
	if h.fs == nil {
		h.fs = vfs.OS
	}
	if cfg.Dir != "" {
		if err := h.openDir(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Close closes every database's store. Requests afterwards get 503.
// Close is idempotent.
func (h *Handler) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	var first error
	for _, db := range h.dbs {
		db.closeConflictLog()
		if err := db.store.Close(); err != nil && first == nil {
			first = err
		}
	}
	if h.lock != nil {
		if err := h.lock.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// now reads the stores' clock.
func (h *Handler) now() time.Time {
	if h.cfg.Clock != nil {
		return h.cfg.Clock.Now()
	}
	return time.Now()
}

// ServeHTTP serves one request of the REST API as the emulator's routing
// gateway (its port 8081) does; ComputeGateway serves the same data as its
// compute gateway.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.serve(w, r, routingGateway)
}

// ComputeGateway returns a handler of the same databases that reads request
// paths as the emulator's compute gateway (its port 8903) does: it splits
// the path at '/' and unescapes each segment once, so that any id an SDK
// escapes reaches the document. h itself reads paths as the routing gateway
// does, which unescapes twice and refuses or misreads ids with '/', '\',
// '#', '%' escapes, trailing spaces or control characters (see the package
// documentation). Closing h closes both.
func (h *Handler) ComputeGateway() http.Handler {
	return computeHandler{h}
}

// computeHandler serves a Handler's data as the compute gateway.
type computeHandler struct{ h *Handler }

func (c computeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.h.serve(w, r, computeGateway)
}

// gatewayVersion is the value of x-ms-gatewayversion, shared by every
// response: net/http and the front only ever replace a header's slice,
// never write in it.
var gatewayVersion = []string{"version=2.14.0"}

// serve serves one request of the REST API, read as gateway g reads it.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, g gateway) {
	h.started.Add(1)
	h.inFlight.Add(1)
	defer h.inFlight.Add(-1)
	hdr := w.Header()
	setHeader(hdr, "x-ms-activity-id", newActivityID())
	hdr["x-ms-gatewayversion"] = gatewayVersion
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			h.logFailure(r, http.StatusInternalServerError, fmt.Sprintf("panic: %v\n%s", v, debug.Stack()))
			apiError{status: http.StatusInternalServerError, msg: withDetail(msgInternal, fmt.Sprintf("internal error: %v", v))}.write(w)
		}
	}()

	// Every refusal before the body has been read whole goes through
	// refuse, so that it reaches a client still writing the body.
	deadline := time.Now().Add(h.bodyTimeout)
	if h.region != nil && (h.region.unreachable(w, r) || h.region.serveControl(w, r, deadline, g)) {
		return
	}
	if isControlPath(r.URL.Path, resetPath) {
		h.serveReset(w, r, deadline)
		return
	}
	if h.cfg.Faults != nil && isControlPath(r.URL.Path, faultsPath) {
		h.serveFaults(w, r, deadline)
		return
	}
	if isControlPath(r.URL.Path, splitPath) {
		h.serveSplit(w, r, deadline)
		return
	}
	rt, err := parsePath(requestPath(r.URL), g)
	if err == errInvalidURL {
		refuseWith(w, r, deadline, false, writeInvalidURL)
		return
	}
	if err != nil {
		refuse(w, r, deadline, false, http.StatusBadRequest, err.Error())
		return
	}
	named := rt
	rt, byRID := h.addressedByRID(rt)
	claims, ae := h.authenticate(r, rt, time.Now())
	if ae != nil && byRID {
		// A database not yet created may have a name that reads as a
		// resource id: a request signed over its path by name is one by
		// name.
		if c, nae := h.authenticate(r, named, time.Now()); nae == nil {
			rt, byRID, claims, ae = named, false, c, nil
		}
	}
	if ae != nil {
		refuse(w, r, deadline, false, ae.status, ae.msg)
		return
	}
	// The body of a POST, PUT or PATCH is kept; any other method's is read
	// and dropped, so that the answer does not leave it unread.
	keep := r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch
	body, ok := h.readBody(w, r, deadline, MaxRequestSize, keep)
	if !ok {
		return
	}
	if byRID && claims != nil && h.ridOutsideScope(*claims, rt) {
		apiError{status: http.StatusForbidden, msg: withDetail(msgInsufficientPermissions, "the token's permission is on another resource")}.write(w)
		return
	}
	if byRID {
		q := &request{h: h, w: w, r: r, body: body, rt: rt}
		if !q.resolveRIDs() {
			return
		}
		rt = q.rt
	}
	t := classify(rt)
	readOnly := false
	if claims != nil {
		if ae := h.authorize(*claims, r, t, body); ae != nil {
			apiError{status: ae.status, msg: ae.msg}.write(w)
			return
		}
		s, _ := h.permissionScope(*claims)
		readOnly = s.mode != modeAll
	}
	// A fault is injected only into a request the service would have
	// served: after its authorization; never into an account's replay of
	// a change a region has made (the client's request had its chance).
	if !replaying(r) && h.injectFault(w, r, t) {
		return
	}
	req := &request{h: h, w: w, r: r, body: body, rt: rt, t: t, readOnly: readOnly}
	if h.region != nil {
		h.region.serve(req, g)
		return
	}
	req.serve()
}

// readBody reads r's body, at most limit bytes, until deadline, and
// returns it (nil unless keep: the body is then read and dropped). A
// Content-Length over the limit is refused with 413 before any of the body
// is read; otherwise the buffer grows as the body arrives, so that a slow
// client holds about what it has sent, and a body that grows past the
// limit is refused as soon as it does. When the body cannot be read, its
// refusal is written and readBody reports false.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, deadline time.Time, limit int64, keep bool) ([]byte, bool) {
	// Made only for a refusal: readBody runs for every request.
	tooLarge := func() string {
		return tooLargeMessage(responseHeader(w.Header(), "x-ms-activity-id"), fmt.Sprintf("the request body is over the limit of %d bytes", limit))
	}
	if r.ContentLength > limit {
		refuse(w, r, deadline, false, http.StatusRequestEntityTooLarge, tooLarge())
		return nil, false
	}
	if !keep && (r.Body == nil || r.Body == http.NoBody) {
		return nil, true
	}
	// A server that cannot set deadlines (ErrNotSupported) keeps its own.
	_ = http.NewResponseController(w).SetReadDeadline(deadline)
	var body []byte
	var err error
	if rd := http.MaxBytesReader(w, r.Body, limit); keep {
		body, err = io.ReadAll(rd)
	} else {
		_, err = io.Copy(io.Discard, rd)
	}
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return body, true
	case errors.As(err, &mbe):
		refuse(w, r, deadline, true, http.StatusRequestEntityTooLarge, tooLarge())
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		apiError{status: http.StatusRequestTimeout, msg: withDetail(msgRequestTimeout, fmt.Sprintf("the request body did not arrive within %v", h.bodyTimeout))}.write(w)
	default:
		apiError{status: http.StatusBadRequest, msg: "the request body could not be read: " + err.Error()}.write(w)
	}
	return nil, false
}

// request is one request being served.
type request struct {
	h    *Handler
	w    http.ResponseWriter
	r    *http.Request
	body []byte
	rt   route
	t    target
	// readOnly is set when the request presents a resource token whose
	// permission is Read: a stored procedure it runs does not write.
	readOnly bool
}

// serve answers the request by the routing table (routes): the first
// operation of its target's kind that takes it, or 405.
func (q *request) serve() {
	switch q.t.kind {
	case tUnsupported:
		q.unsupported(fmt.Sprintf("%s resources (%s) are not supported by the lethe REST front", q.rt.resType, q.r.Method))
		return
	case tUnknown:
		q.answerError(http.StatusNotFound, withDetail(msgResourceNotFound, "no resource of the REST API has the path "+strconv.Quote(clip(q.r.URL.Path))))
		return
	}
	rr := &routes[q.t.kind]
	if op := rr.pick(q.r); op.serve != nil {
		op.serve(q)
		return
	}
	q.w.Header().Set("Allow", rr.allow)
	q.answerError(http.StatusMethodNotAllowed, msgMethodNotAllowed)
}

func (q *request) unsupported(msg string) {
	q.answerError(http.StatusBadRequest, msg)
}

// isQueryRequest reports whether a POST to a feed is a query: the SDKs
// mark it with the content type application/query+json and
// x-ms-documentdb-isquery (or x-ms-documentdb-query).
func isQueryRequest(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if len(ct) >= len("application/query+json") && equalFoldPrefix(ct, "application/query+json") {
		return true
	}
	return headerTrue(r.Header.Get("x-ms-documentdb-isquery")) || headerTrue(r.Header.Get("x-ms-documentdb-query"))
}

func equalFoldPrefix(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		a, b := s[i], prefix[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

func headerTrue(v string) bool {
	return len(v) == 4 && equalFoldPrefix(v, "true")
}

// errorBody is the body of every error response, as Cosmos DB writes it.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// AdditionalErrorInfo is JSON text: the query plan, on a refusal of a
	// cross-partition query the gateway cannot serve.
	AdditionalErrorInfo string `json:"additionalErrorInfo,omitempty"`
}

// codes are the error codes of the statuses the front answers.
var codes = map[int]string{
	http.StatusBadRequest:            "BadRequest",
	http.StatusUnauthorized:          "Unauthorized",
	http.StatusForbidden:             "Forbidden",
	http.StatusNotFound:              "NotFound",
	http.StatusMethodNotAllowed:      "MethodNotAllowed",
	http.StatusRequestTimeout:        "RequestTimeout",
	http.StatusConflict:              "Conflict",
	http.StatusPreconditionFailed:    "PreconditionFailed",
	http.StatusRequestEntityTooLarge: "RequestEntityTooLarge",
	http.StatusTooManyRequests:       "TooManyRequests",
	http.StatusInternalServerError:   "InternalServerError",
	http.StatusServiceUnavailable:    "ServiceUnavailable",
}

// Substatus codes the SDKs look at.
const (
	subOwnerNotFound  = 1003 // 404: the database or container of the resource does not exist
	subRUBudgetExceed = 3200 // 429: the request rate is too large
	// subCrossPartitionNotServable is 400: a cross-partition query needs
	// a client's work (the body's additionalErrorInfo holds the plan).
	subCrossPartitionNotServable = 1004
)

// apiError is an error answer of the REST API.
type apiError struct {
	status int     // the HTTP status, 400 to 599
	sub    int     // x-ms-substatus, 0 when there is none
	msg    string  // the body's message
	charge float64 // x-ms-request-charge
	// info is the body's additionalErrorInfo (JSON text), "" for none.
	info string
	// retryAfterMS is a 429's wait (x-ms-retry-after-ms), at least 1 ms;
	// 0 for no such header.
	retryAfterMS int64
}

// write writes e as the response on w: its body's code is its status's.
func (e apiError) write(w http.ResponseWriter) {
	body := errorBody{Code: codes[e.status], Message: e.msg, AdditionalErrorInfo: e.info}
	if body.Code == "" {
		body.Code = http.StatusText(e.status)
	}
	b, _ := json.Marshal(body)
	hdr := w.Header()
	if e.retryAfterMS > 0 {
		setHeader(hdr, "x-ms-retry-after-ms", strconv.FormatInt(e.retryAfterMS, 10))
	}
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(b)))
	setHeader(hdr, "x-ms-request-charge", formatCharge(e.charge))
	setHeader(hdr, "x-ms-substatus", strconv.Itoa(e.sub))
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
}

// answerError answers the request with an error of status and message
// msg, without a substatus or a charge.
func (q *request) answerError(status int, msg string) {
	apiError{status: status, msg: msg}.write(q.w)
}

// fail answers a failed lethe call. notFoundSub is the substatus of a 404.
// A failure on the server's side (500, or a store's 503: its disk) is
// logged at error, with the request and the cause.
func (q *request) fail(err error, charge float64, notFoundSub int) {
	e := q.errorStatus(err, notFoundSub)
	if e.status == http.StatusInternalServerError || (e.status == http.StatusServiceUnavailable && errors.Is(err, lethe.ErrUnavailable)) {
		q.h.logFailure(q.r, e.status, err)
	}
	e.charge = charge
	e.write(q.w)
}

// errorStatus maps a failed lethe call onto its answer. notFoundSub is
// the substatus of a 404.
func (q *request) errorStatus(err error, notFoundSub int) apiError {
	var le *lethe.Error
	switch {
	case errors.As(err, &le):
		e := serviceError(le, notFoundSub, responseHeader(q.w.Header(), "x-ms-activity-id"))
		if le.StatusCode == http.StatusTooManyRequests {
			e.sub = subRUBudgetExceed
			e.retryAfterMS = max(1, int64(math.Ceil(float64(le.RetryAfter)/float64(time.Millisecond))))
		}
		return e
	case errors.Is(err, lethe.ErrClosed):
		if q.h.isClosed() {
			return apiError{status: http.StatusServiceUnavailable, msg: withDetail(msgUnavailable, msgShuttingDown)}
		}
		// The database was deleted while the request was under way.
		return apiError{status: http.StatusNotFound, msg: msgOwnerNotFound, sub: subOwnerNotFound}
	case q.r.Context().Err() != nil:
		return apiError{status: http.StatusRequestTimeout, msg: withDetail(msgRequestTimeout, "the request was cancelled: "+err.Error())}
	}
	return apiError{status: http.StatusInternalServerError, msg: withDetail(msgInternal, err.Error())}
}

// msgShuttingDown is lethe's explanation of a 503 from a closed handler.
const msgShuttingDown = "the server is shutting down"

// logFailure logs, at error, a request that failed on the server's side.
func (h *Handler) logFailure(r *http.Request, status int, err any) {
	h.cfg.Logger.Error("cosmosrest: a request failed on the server's side",
		"method", r.Method, "path", r.URL.Path, "status", status, "err", err)
}

func (h *Handler) isClosed() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.closed
}

func formatCharge(c float64) string {
	return strconv.FormatFloat(c, 'f', -1, 64)
}

// reply writes a successful response with a JSON body (none when body is
// nil).
func (q *request) reply(status int, body []byte, charge float64) {
	hdr := q.w.Header()
	setHeader(hdr, "x-ms-request-charge", formatCharge(charge))
	if body != nil {
		hdr.Set("Content-Type", "application/json")
		hdr.Set("Content-Length", strconv.Itoa(len(body)))
	} else if status != http.StatusNoContent && status != http.StatusNotModified {
		hdr.Set("Content-Length", "0")
	}
	q.w.WriteHeader(status)
	if body != nil {
		_, _ = q.w.Write(body)
	}
}

// sessionToken returns the session token of a response: one partition key
// range ("0"), version -1, and the handler's write progress, in the format
// the SDKs parse ("0:-1#12").
func (h *Handler) sessionToken(write bool) string {
	var n uint64
	if write {
		n = h.lsn.Add(1)
	} else {
		n = h.lsn.Load()
	}
	return "0:-1#" + strconv.FormatUint(n+1, 10)
}

// newActivityID returns a random UUID (version 4).
func newActivityID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0F | 0x40
	b[8] = b[8]&0x3F | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// quoteETag writes an entity tag as HTTP and Cosmos DB do, in double quotes.
func quoteETag(e string) string { return `"` + e + `"` }
