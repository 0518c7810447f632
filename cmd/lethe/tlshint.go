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
const certHint = "lethe: a client broke off the TLS handshake, most likely because it does not trust" +
	" the server's certificate (or reached the server under a name the certificate does not hold)." +
	" Have the client trust the certificate served at " + pemPath +
	" (kept as " + certFile + " in -cert-dir or -dir; without either, new at every start, unless -cert gives one):" +
	" " + connectDocs + " shows how for each SDK"

// certRefusals are how the server's handshake error spells a client's
// refusal of the certificate. Go's clients send the alert "bad
// certificate". OpenSSL's (Python, curl, .NET on Linux) send "unknown
// certificate authority" over TLS 1.2 (the second entry, which also
// matches the alert "unknown certificate"), and over TLS 1.3 send it
// unencrypted after the server's encrypted flight, which crypto/tls reads
// as "bad record MAC" (go.dev/issue/76767). Node's and Java's clients
// (Java 17's, here) hang up without an alert: EOF, as any probe that
// connects and hangs up, so they get no hint (their own errors say
// "self-signed certificate" and "PKIX path building failed").
var certRefusals = [][]byte{
	[]byte("remote error: tls: bad certificate"),
	[]byte("remote error: tls: unknown certificate"),
	[]byte("local error: tls: bad record MAC"),
}

// serverErrorLog returns the log of the HTTP servers' own errors
// (http.Server.ErrorLog): every line at warn on l, as slog.NewLogLogger
// logs them, and after a handshake that a client broke off as it does when
// it refuses the certificate, certHint, at most once every certHintEvery.
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
