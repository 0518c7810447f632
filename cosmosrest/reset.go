package cosmosrest

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/lethedb/lethe"
)

// resetPath is the path of the reset endpoint (serveReset).
const resetPath = "/_lethe/reset"

// maxControlBody bounds the body of a request to a control endpoint.
const maxControlBody = 64 << 10

// isControlPath reports whether path is the control endpoint base or one
// of its resources (base/…).
func isControlPath(path, base string) bool {
	return path == base || strings.HasPrefix(path, base+"/")
}

// controlRequest authenticates a request to a control endpoint, which
// must be signed as any request of the REST API, with the master key (or
// an Entra ID token as the emulator accepts one) for resource type resType
// and resource link link, and reads its body (at most maxControlBody
// bytes). A resource token is refused with 403 and tokenRefusal. When the
// request is refused, controlRequest has answered it and reports false.
func (h *Handler) controlRequest(w http.ResponseWriter, r *http.Request, deadline time.Time, resType, link, tokenRefusal string) ([]byte, bool) {
	setHeader(w.Header(), "x-ms-request-charge", "0")
	claims, ae := h.authenticate(r, route{resType: resType, link: link}, time.Now())
	if ae != nil {
		refuse(w, r, deadline, false, ae.status, ae.msg)
		return nil, false
	}
	if claims != nil {
		refuse(w, r, deadline, false, http.StatusForbidden, tokenRefusal)
		return nil, false
	}
	return h.readBody(w, r, deadline, maxControlBody, true)
}

// refuseNoControl answers 404 a request to no control resource (below a
// control endpoint's path, but none of its resources).
func refuseNoControl(w http.ResponseWriter, r *http.Request, deadline time.Time) {
	refuse(w, r, deadline, false, http.StatusNotFound, "no such control resource: "+clip(r.URL.Path))
}

// postControl is controlRequest, for resource type resType and link "",
// of a control endpoint that is path alone, served to POST only: any
// other path below it is 404 (refuseNoControl), another method 405. what
// names the endpoint's action in the refusals ("a reset").
func (h *Handler) postControl(w http.ResponseWriter, r *http.Request, deadline time.Time, path, resType, what string) ([]byte, bool) {
	if r.URL.Path != path {
		refuseNoControl(w, r, deadline)
		return nil, false
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		refuse(w, r, deadline, false, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not served on %s: %s is a POST", r.Method, path, what))
		return nil, false
	}
	return h.controlRequest(w, r, deadline, resType, "", what+" takes the master key; a resource token cannot")
}

// resetAnswer is the body of a reset's answer.
type resetAnswer struct {
	// Dropped are the ids of the databases dropped, in order.
	Dropped []string `json:"dropped"`
	// Unavailable are the directories, under Config.Dir, of the databases
	// that could not be opened at start: a reset leaves them as they are.
	Unavailable []string `json:"unavailable,omitempty"`
}

// serveReset serves the reset endpoint, POST /_lethe/reset, signed with
// the master key for the resource type "reset" and the resource link "":
// it drops every database (Reset) and answers 200 with the ids of those
// dropped.
func (h *Handler) serveReset(w http.ResponseWriter, r *http.Request, deadline time.Time) {
	if _, ok := h.postControl(w, r, deadline, resetPath, "reset", "a reset"); !ok {
		return
	}
	dropped, err := h.Reset()
	if errors.Is(err, lethe.ErrClosed) {
		apiError{status: http.StatusServiceUnavailable, msg: withDetail(msgUnavailable, msgShuttingDown)}.write(w)
		return
	}
	if err != nil {
		h.logFailure(r, http.StatusInternalServerError, err)
		apiError{status: http.StatusInternalServerError, msg: withDetail(msgInternal, "resetting: "+err.Error())}.write(w)
		return
	}
	out := resetAnswer{Dropped: dropped}
	h.mu.RLock()
	for name := range h.unavailable {
		out.Unavailable = append(out.Unavailable, name)
	}
	h.mu.RUnlock()
	sort.Strings(out.Unavailable)
	writeControlJSON(w, http.StatusOK, out)
}

// Reset drops every database, as deleting each would: its store is closed
// and, with Config.Dir, its directory removed. It returns the ids of the
// databases dropped, in order (with a failure, the one that failed among
// them). Requests under way on a database dropped
// end as they would had it been deleted. Fault rules (Config.Faults) are
// kept, and so are the databases that could not be opened at start (their
// directories are their owner's to repair). A database that fails to be
// dropped is gone from the handler all the same; Reset goes on with the
// others and returns the first failure. After Close it fails with
// lethe.ErrClosed.
func (h *Handler) Reset() ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, fmt.Errorf("cosmosrest: the handler is closed: %w", lethe.ErrClosed)
	}
	ids := make([]string, 0, len(h.dbs))
	for id := range h.dbs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var first error
	for _, id := range ids {
		if err := h.dropLocked(h.dbs[id]); err != nil && first == nil {
			first = fmt.Errorf("cosmosrest: dropping the database %q: %w", id, err)
		}
	}
	return ids, first
}
