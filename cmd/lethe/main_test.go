//go:build unix

package main

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the command on free ports of the loopback and returns its
// base URL, its log and its result.
func start(t *testing.T, args ...string) (string, *syncBuffer, chan error) {
	t.Helper()
	return startWith(t, append([]string{"-addr", "127.0.0.1:0", "-compute-addr", "127.0.0.1:0"}, args...)...)
}

// startWith is start with args alone; it returns once the server logged
// that it is ready, in text or JSON, with its endpoint.
func startWith(t *testing.T, args ...string) (string, *syncBuffer, chan error) {
	t.Helper()
	var logs syncBuffer
	logOutput = &logs
	t.Cleanup(func() { logOutput = io.Discard })
	done := make(chan error, 1)
	go func() { done <- run(args) }()
	ready := regexp.MustCompile(`msg"?[=:]"lethe: ready"`)
	endpoint := regexp.MustCompile(`"?endpoint"?[=:]"?(https?://[^ "]+/)`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if text := logs.String(); ready.MatchString(text) {
			m := endpoint.FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("no endpoint; log: %s", text)
			}
			return m[1], &logs, done
		}
		select {
		case err := <-done:
			t.Fatalf("run ended: %v; log: %s", err, logs.String())
		default:
		}
	}
	t.Fatalf("no start line; log: %q", logs.String())
	return "", nil, nil
}

func signed(t *testing.T, method, url, typ, link string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := cosmosrest.SignRequest(cosmosrest.EmulatorKey, method, typ, link, date)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", auth)
	return req
}

func TestServeTLSAndShutDownGracefully(t *testing.T) {
	base, logs, done := start(t)
	if !strings.HasPrefix(base, "https://127.0.0.1:") || !strings.Contains(logs.String(), `key="the emulator's well-known key" storage=memory`) {
		t.Fatalf("start line: %q", logs.String())
	}
	// The certificate is self-signed, for localhost and 127.0.0.1.
	var certOK bool
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			leaf := cs.PeerCertificates[0]
			certOK = leaf.VerifyHostname("localhost") == nil && leaf.VerifyHostname("127.0.0.1") == nil
			return nil
		},
	}}}
	resp, err := client.Do(signed(t, "GET", base+"dbs", "dbs", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !certOK {
		t.Fatalf("GET /dbs: %d, certificate for localhost and 127.0.0.1: %v", resp.StatusCode, certOK)
	}

	// A request under way when the signal comes is finished.
	pr, pw := io.Pipe()
	result := make(chan int, 1)
	go func() {
		resp, err := client.Do(signed(t, "POST", base+"dbs", "dbs", "", pr))
		if err != nil {
			result <- -1
			return
		}
		resp.Body.Close()
		result <- resp.StatusCode
	}()
	if _, err := pw.Write([]byte(`{"id":`)); err != nil {
		t.Fatal(err)
	}
	// The pipe write returned once the client read it, after it sent the
	// headers; give the server time to read them (the connection is then
	// active, and Shutdown waits for it).
	time.Sleep(300 * time.Millisecond)
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := pw.Write([]byte(`"late"}`)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if code := <-result; code != http.StatusCreated {
		t.Fatalf("the request under way at shutdown: %d, want 201", code)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no shutdown")
	}
	if !strings.Contains(logs.String(), "shutting down") {
		t.Errorf("log: %q", logs.String())
	}
}

// TestComputeGateway checks the second listener: the same data, the
// compute gateway's reading of paths (an id with a trailing space, escaped
// once, reaches its document there, not through the routing gateway), and
// none with -compute-addr "".
func TestComputeGateway(t *testing.T) {
	base, logs, done := start(t, "-http")
	m := regexp.MustCompile(`compute_gateway=(http://[^ ]+/)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no compute gateway line: %q", logs.String())
	}
	compute := m[1]
	for _, r := range []struct {
		url, typ, link, body string
		want                 int
	}{
		{base + "dbs", "dbs", "", `{"id":"db"}`, http.StatusCreated},
		{compute + "dbs/db/colls", "colls", "dbs/db", `{"id":"c"}`, http.StatusCreated},
		{base + "dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", `{"id":"Test "}`, http.StatusCreated},
		{compute + "dbs/db/colls/c/docs/Test%20", "docs", "dbs/db/colls/c/docs/Test ", "", http.StatusOK},
		{base + "dbs/db/colls/c/docs/Test%20", "docs", "dbs/db/colls/c/docs/Test ", "", http.StatusUnauthorized},
	} {
		method, body := "GET", io.Reader(nil)
		if r.body != "" {
			method, body = "POST", strings.NewReader(r.body)
		}
		resp, err := http.DefaultClient.Do(signed(t, method, r.url, r.typ, r.link, body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != r.want {
			t.Errorf("%s %s: %d, want %d", method, r.url, resp.StatusCode, r.want)
		}
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	_, logs, done = start(t, "-http", "-compute-addr", "")
	if strings.Contains(logs.String(), "compute_gateway") {
		t.Errorf("-compute-addr \"\" served one: %q", logs.String())
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestFlags(t *testing.T) {
	base, logs, done := start(t, "-http", "-key", "dGhpcyBpcyBub3QgdGhlIGtleQ==", "-dir", t.TempDir())
	if !strings.HasPrefix(base, "http://") || !strings.Contains(logs.String(), `key="the one given (-key, LETHE_KEY), not shown" storage=durable dir=/`) ||
		strings.Contains(logs.String(), "dGhpcyBpcyBub3QgdGhlIGtleQ==") {
		t.Fatalf("start line: %q", logs.String())
	}
	resp, err := http.DefaultClient.Do(signed(t, "GET", base+"dbs", "dbs", "", nil)) // signed with the emulator's key
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the emulator's key under -key: %d, want 401", resp.StatusCode)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-key", "not base64!"}); err == nil {
		t.Error("a bad key was accepted")
	}
	if err := run([]string{"extra"}); err == nil {
		t.Error("an extra argument was accepted")
	}
}
