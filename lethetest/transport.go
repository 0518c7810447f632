package lethetest

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
)

// Transport is an azcore policy.Transporter that serves every request
// through an http.Handler in the calling goroutine: no listener, no
// connection, no TLS. Give it to any azcosmos client through
// azcosmos.ClientOptions.ClientOptions.Transport; the client's requests
// reach the handler exactly as they would over HTTPS (same headers, same
// signatures, same bodies), and its answers come back as responses of the
// network would.
//
// The host of a request's URL is not looked at: whatever endpoint the
// client was given, and whatever endpoint the account then advertises
// (cosmosrest names the loopback address for "localhost"), every request
// stays in the process. A request to an https:// URL is served as one
// that came over TLS, so that the account advertises https:// again.
//
// A Transport is safe for concurrent use.
type Transport struct {
	h        http.Handler
	requests atomic.Int64
	// refused, when set, says which requests find their host refusing
	// connections (a region down, RegionRefuse).
	refused func(*http.Request) bool
}

// NewTransport returns a Transport serving through h, typically a
// *cosmosrest.Handler.
func NewTransport(h http.Handler) *Transport { return &Transport{h: h} }

// Requests returns how many requests the transport has served: every
// attempt of the SDK counts, retries included.
func (t *Transport) Requests() int64 { return t.requests.Load() }

// tlsState marks a request as one that came over TLS; the handler only
// looks at whether there is one.
var tlsState = &tls.ConnectionState{HandshakeComplete: true, Version: tls.VersionTLS13}

// errAborted is returned when the handler aborts the response (panics
// with http.ErrAbortHandler), as a server would drop the connection.
var errAborted = errors.New("lethetest: the handler aborted the response")

// Do serves req through the handler and returns its response. It fails
// only as a network would: when req's context is done before or while it
// is served, or when the handler aborts.
func (t *Transport) Do(req *http.Request) (resp *http.Response, err error) {
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t.requests.Add(1)
	if t.refused != nil && t.refused(req) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	in := *req // a shallow copy, as a server's request is its own
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = "pipe"
	if in.Body == nil {
		in.Body = http.NoBody
	}
	if req.URL.Scheme == "https" {
		in.TLS = tlsState
	}
	w := &recorder{header: make(http.Header, 12)}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				resp, err = nil, errAborted
				return
			}
			panic(v)
		}
	}()
	t.h.ServeHTTP(w, &in)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.WriteHeader(http.StatusOK) // when the handler did not
	if w.sent.Get("Content-Length") == "" {
		w.sent.Set("Content-Length", strconv.Itoa(w.body.Len()))
	}
	return &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          w,
		ContentLength: int64(w.body.Len()),
		Request:       req,
		TLS:           in.TLS,
	}, nil
}

// recorder is the handler's http.ResponseWriter, and then the response's
// body.
type recorder struct {
	header http.Header
	status int
	// sent is the header as a client reads it: copied when the status is
	// written, as a server sends it then, with each name in Go's canonical
	// form, as net/http's client reads names off the wire (cosmosrest
	// writes x-ms-* names in lower case, and http.Header.Get looks up the
	// canonical form).
	sent http.Header
	body bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		if code < 100 || code > 999 {
			panic(fmt.Sprintf("lethetest: invalid status code %d", code))
		}
		w.status = code
		w.sent = make(http.Header, len(w.header))
		for k, v := range w.header {
			w.sent[http.CanonicalHeaderKey(k)] = slices.Clone(v)
		}
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK) // when the handler did not
	return w.body.Write(b)
}

// Read reads the response's body.
func (w *recorder) Read(p []byte) (int, error) { return w.body.Read(p) }

// Close closes the response's body.
func (w *recorder) Close() error { return nil }

var _ io.ReadCloser = (*recorder)(nil)
