//go:build unix

package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// stop ends a command started by start, as SIGTERM does.
func stop(t *testing.T, done chan error) {
	t.Helper()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// downloadPEM fetches the certificate from the server without trusting it,
// unsigned, as a user does with curl -k, and checks that it is the one the
// server presents.
func downloadPEM(t *testing.T, base string) []byte {
	t.Helper()
	var presented []byte
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			presented = cs.PeerCertificates[0].Raw
			return nil
		},
	}}}
	resp, err := client.Get(base + "_explorer/emulator.pem")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-pem-file" {
		t.Fatalf("GET emulator.pem: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	block, rest := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("emulator.pem is not one PEM certificate: %q", b)
	}
	if !bytes.Equal(block.Bytes, presented) {
		t.Fatal("emulator.pem is not the certificate the server presents")
	}
	return b
}

// trusting is a client that trusts only the certificate pemText.
func trusting(t *testing.T, pemText []byte) *http.Client {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemText) {
		t.Fatal("not a certificate")
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func TestCertificateServedAndTrusted(t *testing.T) {
	base, _, done := start(t)
	pemText := downloadPEM(t, base)
	// A client that trusts the downloaded certificate, and nothing else,
	// reaches the server under every name the SDKs use.
	port := base[strings.LastIndex(base, ":")+1:]
	c := trusting(t, pemText)
	for _, host := range []string{"https://127.0.0.1:" + port, "https://localhost:" + port} {
		resp, err := c.Do(signed(t, "GET", host+"dbs", "dbs", "", nil))
		if err != nil {
			t.Fatalf("%s with the downloaded certificate trusted: %v", host, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", host, resp.StatusCode)
		}
	}
	// Only GET and HEAD.
	resp, err := c.Post(base+"_explorer/emulator.pem", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST emulator.pem: %d", resp.StatusCode)
	}
	stop(t, done)

	// In memory, every start makes a new certificate.
	base, _, done = start(t)
	if again := downloadPEM(t, base); bytes.Equal(again, pemText) {
		t.Error("two in-memory starts served the same certificate")
	}
	stop(t, done)
}

func TestCertificateKeptInDir(t *testing.T) {
	dir := t.TempDir()
	base, _, done := start(t, "-dir", dir)
	first := downloadPEM(t, base)
	stop(t, done)
	st, err := os.Stat(filepath.Join(dir, certKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", st, err)
	}
	kept, err := os.ReadFile(filepath.Join(dir, certFile))
	if err != nil || !bytes.Equal(kept, first) {
		t.Fatalf("kept certificate differs from the served one (%v)", err)
	}
	// The next start serves the same certificate: clients trust it once.
	base, _, done = start(t, "-dir", dir)
	if again := downloadPEM(t, base); !bytes.Equal(again, first) {
		t.Error("a restart on the same -dir changed the certificate")
	}
	stop(t, done)

	// A damaged kept certificate is an error, not silently replaced.
	if err := os.WriteFile(filepath.Join(dir, certFile), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-addr", "127.0.0.1:0", "-dir", dir}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a damaged certificate in -dir: %v", err)
	}
}

func TestCertificateFlags(t *testing.T) {
	dir := t.TempDir()
	_, certPEM, keyPEM, err := makeCertificate()
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	if err := os.WriteFile(certPath, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	base, _, done := start(t, "-cert", certPath, "-certkey", keyPath)
	if got := downloadPEM(t, base); !bytes.Equal(got, certPEM) {
		t.Error("-cert: another certificate was served")
	}
	stop(t, done)

	for _, args := range [][]string{
		{"-cert", certPath},
		{"-certkey", keyPath},
		{"-http", "-cert", certPath, "-certkey", keyPath},
		{"-cert", keyPath, "-certkey", certPath},
		{"-cert", filepath.Join(dir, "none.pem"), "-certkey", keyPath},
	} {
		if err := run(append([]string{"-addr", "127.0.0.1:0"}, args...)); err == nil {
			t.Errorf("%v was accepted", args)
		}
	}
}
