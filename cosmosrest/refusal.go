package cosmosrest

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxDrain bounds what the front reads, and discards, of the body of a
// request it refuses before reading the body whole (refuse): a body
// announced longer is not read at all.
const maxDrain = 16 << 20

// smallBody is the most of a body, announced by its Content-Length, that
// net/http reads and discards itself before it answers a handler that
// left the body unread (its maxPostHandlerReadBytes): refuse leaves such a
// body to it, and the connection stays open for the client's next request.
const smallBody = 256 << 10

// refuse answers r, whose body has not been read whole (begun: whether
// any of it has been read), with an error, in a way that lets the answer
// reach a client that is still writing the body. Closing a connection
// with part of a body unread makes the kernel reset it, and a client
// still writing then sees the reset instead of the answer (@azure/cosmos
// got ECONNRESET for a 3 MB item, not 413). So over HTTP/1 the answer is
// written and flushed at once, with Connection: close, and then the rest
// of the body is read and discarded, at most maxDrain bytes, until
// deadline (the request's body deadline): memory stays bounded, and a slow
// client holds the connection no longer than a body it had to send whole.
// A body announced longer than maxDrain, or one that the client waits to
// send until told to (Expect: 100-continue) and has not begun, is not
// read: net/http closes the connection after the answer. A body announced
// no longer than smallBody is net/http's to read before the answer, and
// the connection stays open. HTTP/2 needs
// nothing: after a complete answer net/http ends the stream with
// RST_STREAM NO_ERROR, which tells the client to stop sending.
func refuse(w http.ResponseWriter, r *http.Request, deadline time.Time, begun bool, status int, msg string) {
	refuseWith(w, r, deadline, begun, apiError{status: status, msg: msg}.write)
}

// refuseWith is refuse with the answer that write writes.
func refuseWith(w http.ResponseWriter, r *http.Request, deadline time.Time, begun bool, write func(http.ResponseWriter)) {
	if !drainable(r, begun) {
		write(w)
		return
	}
	w.Header().Set("Connection", "close")
	rc := http.NewResponseController(w)
	if rc.EnableFullDuplex() != nil {
		// A writer that cannot answer while the body is unread: read it
		// first.
		drain(rc, r, deadline)
		write(w)
		return
	}
	write(w)
	// A writer that cannot flush sends the answer once the handler
	// returns, after the body, as the fallback above does.
	_ = rc.Flush()
	drain(rc, r, deadline)
}

// drainable reports whether refuse reads what is left of r's body.
func drainable(r *http.Request, begun bool) bool {
	switch {
	case r.Body == nil || r.Body == http.NoBody || r.ProtoMajor != 1:
		return false
	case r.ContentLength > maxDrain, r.ContentLength >= 0 && r.ContentLength <= smallBody:
		return false
	case !begun && strings.EqualFold(r.Header.Get("Expect"), "100-continue"):
		return false
	}
	return true
}

// drain reads and discards r's body, at most maxDrain bytes, until
// deadline.
func drain(rc *http.ResponseController, r *http.Request, deadline time.Time) {
	// A server that cannot set deadlines (ErrNotSupported) keeps its own.
	_ = rc.SetReadDeadline(deadline)
	_, _ = io.CopyN(io.Discard, r.Body, maxDrain)
}

// invalidURLPage is the page http.sys answers an invalid URL with: HTML,
// not the service's JSON, so a client that parses the body fails as it
// does against the emulator (@azure/cosmos throws an error without a
// status code), and one that reads the status gets 400.
const invalidURLPage = "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01//EN\"\"http://www.w3.org/TR/html4/strict.dtd\">\r\n" +
	"<HTML><HEAD><TITLE>Bad Request</TITLE>\r\n" +
	"<META HTTP-EQUIV=\"Content-Type\" Content=\"text/html; charset=us-ascii\"></HEAD>\r\n" +
	"<BODY><h2>Bad Request - Invalid URL</h2>\r\n" +
	"<hr><p>HTTP Error 400. The request URL is invalid.</p>\r\n" +
	"</BODY></HTML>\r\n"

// writeInvalidURL answers with invalidURLPage.
func writeInvalidURL(w http.ResponseWriter) {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=us-ascii")
	hdr.Set("Content-Length", strconv.Itoa(len(invalidURLPage)))
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, invalidURLPage)
}
