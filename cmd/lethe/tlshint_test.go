//go:build unix

package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestRefusedCertificate(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		// Go's clients (azcosmos): unknown authority or a name not in the certificate.
		{"http: TLS handshake error from 127.0.0.1:50412: remote error: tls: bad certificate", true},
		// OpenSSL's (Node, Python, curl, .NET on Linux).
		{"http: TLS handshake error from 127.0.0.1:50413: remote error: tls: unknown certificate authority", true},
		// Java's.
		{"http: TLS handshake error from [::1]:50414: remote error: tls: unknown certificate", true},
		// Not about trusting the certificate.
		{"http: TLS handshake error from 127.0.0.1:50415: EOF", false},
		{"http: TLS handshake error from 127.0.0.1:50416: client sent an HTTP request to an HTTPS server", false},
		{"http: TLS handshake error from 127.0.0.1:50417: remote error: tls: expired certificate", false},
		{"http: TLS handshake error from 127.0.0.1:50418: tls: client offered only unsupported versions: [301]", false},
		{"http: panic serving 127.0.0.1:50419: remote error: tls: bad certificate", false},
	} {
		if got := refusedCertificate([]byte(tc.line)); got != tc.want {
			t.Errorf("refusedCertificate(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

func TestCertHintRateLimited(t *testing.T) {
	var logs bytes.Buffer
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := serverErrorLog(slog.New(slog.NewTextHandler(&logs, nil)))
	l.Writer().(*certHints).now = func() time.Time { return now }
	refused := func() {
		l.Printf("http: TLS handshake error from 127.0.0.1:50412: remote error: tls: bad certificate")
	}
	hints := func() int { return strings.Count(logs.String(), "refused the server's certificate") }

	l.Printf("http: TLS handshake error from 127.0.0.1:50411: EOF")
	if hints() != 0 {
		t.Fatalf("a hint after another handshake error: %s", logs.String())
	}
	refused()
	if hints() != 1 || !strings.Contains(logs.String(), pemPath) || !strings.Contains(logs.String(), "docs/connect.md") {
		t.Fatalf("after a refused handshake: %s", logs.String())
	}
	// A client's retries: one hint, while every handshake error is still logged.
	for range 20 {
		now = now.Add(time.Second)
		refused()
	}
	if hints() != 1 {
		t.Fatalf("%d hints for retries within %v", hints(), certHintEvery)
	}
	if n := strings.Count(logs.String(), "remote error: tls: bad certificate"); n != 21 {
		t.Fatalf("%d handshake errors logged, want 21", n)
	}
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("not at warn: %s", logs.String())
	}
	now = now.Add(certHintEvery)
	refused()
	if hints() != 2 {
		t.Fatalf("%d hints %v after the first, want 2", hints(), certHintEvery)
	}
}

// TestCertHintLogged: a client that does not trust the certificate
// (crypto/tls's default, as azcosmos's) makes the server log the hint once
// for its three attempts.
func TestCertHintLogged(t *testing.T) {
	base, logs, done := start(t)
	addr := strings.TrimSuffix(strings.TrimPrefix(base, "https://"), "/")
	for range 3 {
		_, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "localhost"})
		if !errors.As(err, new(x509.UnknownAuthorityError)) {
			t.Fatalf("a client without the certificate: %v", err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); strings.Count(logs.String(), "remote error: tls: bad certificate") < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the refused handshakes were not logged: %s", logs.String())
		}
	}
	if n := strings.Count(logs.String(), "refused the server's certificate"); n != 1 {
		t.Errorf("%d hints for 3 refused handshakes: %s", n, logs.String())
	}
	stop(t, done)
}
