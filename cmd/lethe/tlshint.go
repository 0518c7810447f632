package main

import (
	"bytes"
	"io"
	"log"
	"log/slog"
	"sync"
	"time"
)

// certHintEvery is how often at most the server logs certHint: a client
// that does not trust the certificate retries (azcosmos for about 10 s),
// and each attempt is a refused handshake.
const certHintEvery = time.Minute

// certHint is what the server logs when a client refused its certificate.
const certHint = "lethe: a client refused the server's certificate: it does not trust it" +
	" (or reached the server under a name the certificate does not hold)." +
	" Have the client trust the certificate served at " + pemPath +
	" (kept in -dir as " + certFile + "; in memory, new at every start):" +
	" docs/connect.md shows how for each SDK"

// certRefusals are the TLS alerts a client sends when it does not trust
// the server's certificate, as the server's handshake error spells them:
// Go's clients send "bad certificate"; OpenSSL's (Node, Python, curl,
// .NET on Linux) "unknown certificate authority" and Java's "unknown
// certificate", both of which the second covers.
var certRefusals = [][]byte{
	[]byte("remote error: tls: bad certificate"),
	[]byte("remote error: tls: unknown certificate"),
}

// serverErrorLog returns the log of the HTTP servers' own errors
// (http.Server.ErrorLog): every line at warn on l, as slog.NewLogLogger
// logs them, and after a handshake that a client ended because it refused
// the certificate, certHint, at most once every certHintEvery.
func serverErrorLog(l *slog.Logger) *log.Logger {
	return log.New(&certHints{out: slog.NewLogLogger(l.Handler(), slog.LevelWarn).Writer(), log: l, now: time.Now}, "", 0)
}

// certHints passes the lines the servers log to out, and logs certHint on
// log after a line that says a client refused the certificate, unless it
// did so less than certHintEvery before.
type certHints struct {
	out io.Writer
	log *slog.Logger
	now func() time.Time

	mu   sync.Mutex
	last time.Time // when certHint was last logged; zero: never
}

func (h *certHints) Write(p []byte) (int, error) {
	n, err := h.out.Write(p)
	if refusedCertificate(p) && h.due() {
		h.log.Warn(certHint)
	}
	return n, err
}

// due reports whether certHint is to be logged now, and if so notes it.
func (h *certHints) due() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if !h.last.IsZero() && now.Sub(h.last) < certHintEvery {
		return false
	}
	h.last = now
	return true
}

// refusedCertificate reports whether line is a handshake error in which
// the client refused the server's certificate.
func refusedCertificate(line []byte) bool {
	if !bytes.Contains(line, []byte("TLS handshake error")) {
		return false
	}
	for _, r := range certRefusals {
		if bytes.Contains(line, r) {
			return true
		}
	}
	return false
}
