//go:build unix

package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
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
		// OpenSSL's (Python, curl, .NET on Linux), over TLS 1.2 and 1.3.
		{"http: TLS handshake error from 127.0.0.1:50413: remote error: tls: unknown certificate authority", true},
		{"http: TLS handshake error from 127.0.0.1:50420: local error: tls: bad record MAC", true},
		// The alert certificate_unknown.
		{"http: TLS handshake error from [::1]:50414: remote error: tls: unknown certificate", true},
		// Not about trusting the certificate.
		// Node's and Java's, as well as any probe that hangs up: no hint.
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
	hints := func() int { return strings.Count(logs.String(), "does not trust the server's certificate") }

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

// TestCertHintLogged: a client that does not trust the certificate makes
// the server log the hint once for its three attempts: crypto/tls's
// default client (azcosmos's), and curl (OpenSSL's, where there is one).
func TestCertHintLogged(t *testing.T) {
	for _, tc := range []struct {
		name    string                  // and the program it runs, if not "go"
		connect func(addr string) error // fails as the client refuses the certificate
		logged  string                  // the handshake error the server logs
	}{
		{"go", func(addr string) error {
			_, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "localhost"})
			if !errors.As(err, new(x509.UnknownAuthorityError)) {
				return fmt.Errorf("want x509.UnknownAuthorityError, got %v", err)
			}
			return nil
		}, "remote error: tls: bad certificate"},
		{"curl", func(addr string) error {
			err := exec.Command("curl", "-s", "-o", "/dev/null", "https://"+addr+"/").Run()
			if e, ok := err.(*exec.ExitError); !ok || e.ExitCode() != 60 { // 60: the peer's certificate was not verified
				return fmt.Errorf("want exit status 60, got %v", err)
			}
			return nil
		}, "local error: tls: bad record MAC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "go" {
				if _, err := exec.LookPath(tc.name); err != nil {
					t.Skip(err)
				}
			}
			base, logs, done := start(t)
			addr := strings.TrimSuffix(strings.TrimPrefix(base, "https://"), "/")
			for range 3 {
				if err := tc.connect(addr); err != nil {
					t.Fatalf("a client without the certificate: %v", err)
				}
			}
			for deadline := time.Now().Add(10 * time.Second); strings.Count(logs.String(), tc.logged) < 3; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("3 handshake errors %q were not logged: %s", tc.logged, logs.String())
				}
			}
			if n := strings.Count(logs.String(), "does not trust the server's certificate"); n != 1 {
				t.Errorf("%d hints for 3 refused handshakes: %s", n, logs.String())
			}
			stop(t, done)
		})
	}
}
