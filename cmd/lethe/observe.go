package main

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// served is what the command learns of one request it served, from the
// request and the response headers the handler set: what the request log
// and the metrics record.
type served struct {
	method    string
	path      string // the resource, as requested
	operation string // its kind and what was done to it (operation)
	status    int
	substatus int
	charge    float64 // request units (x-ms-request-charge)
	duration  time.Duration
	activity  string // x-ms-activity-id
}

// observe wraps h so that every request it serves is passed to each of
// observers, once answered. With no observers it returns h itself.
func observe(h http.Handler, observers ...func(*served)) http.Handler {
	if len(observers) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		hdr := w.Header()
		s := &served{
			method:    r.Method,
			path:      r.URL.Path,
			operation: operation(r),
			status:    sw.status,
			duration:  time.Since(start),
			activity:  responseHeader(hdr, "x-ms-activity-id"),
		}
		if s.status == 0 {
			s.status = http.StatusOK
		}
		s.substatus, _ = strconv.Atoi(responseHeader(hdr, "x-ms-substatus"))
		s.charge, _ = strconv.ParseFloat(responseHeader(hdr, "x-ms-request-charge"), 64)
		for _, o := range observers {
			o(s)
		}
	})
}

// responseHeader returns the value of the response header name, in lower
// case: the REST front sets its x-ms-* names so, as the service sends
// them, where http.Header.Get looks up Go's canonical form.
func responseHeader(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// statusWriter remembers the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// resourceTypes are the kinds of resource of the REST API's paths; any
// other is "other", so that a metric's labels stay few.
var resourceTypes = map[string]bool{
	"dbs": true, "colls": true, "docs": true, "pkranges": true, "users": true, "permissions": true,
	"offers": true, "sprocs": true, "udfs": true, "triggers": true, "conflicts": true,
}

// operation names what a request does, as "kind.verb": the kind of
// resource its path names (dbs, colls, docs, ..., account, or other) and
// the verb (read, list, create, upsert, replace, patch, delete, query,
// batch, bulk, changefeed, execute). The set is small and fixed: it is a
// label of the request metrics.
func operation(r *http.Request) string {
	path := strings.Trim(r.URL.Path, "/")
	kind, feed := "account", true
	if path != "" {
		segs := strings.Split(path, "/")
		if feed = len(segs)%2 == 1; feed {
			kind = segs[len(segs)-1]
		} else {
			kind = segs[len(segs)-2]
		}
		if !resourceTypes[kind] {
			kind = "other"
		}
	}
	h := r.Header
	var verb string
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case !feed:
			verb = "read"
		case h.Get("A-IM") != "":
			verb = "changefeed"
		default:
			verb = "list"
		}
	case http.MethodPost:
		switch {
		case !feed:
			verb = "execute"
		case isQuery(h):
			verb = "query"
		case strings.EqualFold(h.Get("x-ms-cosmos-is-batch-request"), "true"):
			verb = "bulk"
			if strings.EqualFold(h.Get("x-ms-cosmos-batch-atomic"), "true") {
				verb = "batch"
			}
		case strings.EqualFold(h.Get("x-ms-documentdb-is-upsert"), "true"):
			verb = "upsert"
		default:
			verb = "create"
		}
	case http.MethodPut:
		verb = "replace"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = "other"
	}
	return kind + "." + verb
}

// isQuery reports whether a POST is a query, as the REST API marks one.
func isQuery(h http.Header) bool {
	ct := strings.ToLower(h.Get("Content-Type"))
	return strings.HasPrefix(ct, "application/query+json") ||
		strings.EqualFold(h.Get("x-ms-documentdb-isquery"), "true") || strings.EqualFold(h.Get("x-ms-documentdb-query"), "true")
}
