//go:build unix

package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

// keptFiles reads the pair dir keeps, failing the test unless it is one.
func keptFiles(t *testing.T, dir string) []byte {
	t.Helper()
	_, certPEM, err := readCertificate(filepath.Join(dir, certFile), filepath.Join(dir, certKeyFile))
	if err != nil {
		t.Fatalf("the files left in %s: %v", dir, err)
	}
	return certPEM
}

// TestCertDirInMemory: two in-memory starts with one -cert-dir serve the
// same certificate, so a client that trusts the first's reaches the
// second; the directory is made 0700, the key kept 0600.
func TestCertDirInMemory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config", "lethe")
	base, logs, done := start(t, "-cert-dir", dir)
	first := downloadPEM(t, base)
	stop(t, done)
	if kept := keptFiles(t, dir); !bytes.Equal(kept, first) {
		t.Error("the certificate kept is not the one served")
	}
	if want := "file=" + filepath.Join(dir, certFile) + "\n"; !strings.Contains(logs.String(), want) {
		t.Errorf("the banner lacks %q:\n%s", want, logs.String())
	}
	for name, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, certKeyFile): 0o600, filepath.Join(dir, certFile): 0o644} {
		if st, err := os.Stat(name); err != nil || st.Mode() != want {
			t.Errorf("%s: %v, want %v (%v)", name, st.Mode(), want, err)
		}
	}

	base, _, done = start(t, "-cert-dir", dir)
	resp, err := trusting(t, first).Do(signed(t, "GET", base+"dbs", "dbs", "", nil))
	if err != nil {
		t.Fatalf("a client trusting the first start's certificate, at the second: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET dbs: %d", resp.StatusCode)
	}
	stop(t, done)
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 2 {
		t.Errorf("the directory holds %v (%v), want the two files alone", entries, err)
	}
}

// TestCertDirReplacesDamaged: files in -cert-dir that do not make a
// certificate and its key are replaced by a new pair, which is served and
// kept; files that cannot be read are an error and stay as they are. In
// -dir, a damaged pair stays an error (TestCertificateKeptInDir).
func TestCertDirReplacesDamaged(t *testing.T) {
	_, certA, keyA, err := makeCertificate()
	if err != nil {
		t.Fatal(err)
	}
	_, _, keyB, err := makeCertificate()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		cert, key []byte
	}{
		{"mismatched pair", certA, keyB},
		{"torn certificate", certA[:len(certA)/2], keyA},
		{"torn key", certA, keyA[:len(keyA)/2]},
		{"empty certificate", nil, keyA},
		{"junk", []byte("junk"), []byte("junk")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, certFile), tc.cert)
			writeFile(t, filepath.Join(dir, certKeyFile), tc.key)
			if _, _, _, err := loadCertificate("", "", "", dir); err == nil {
				t.Error("-dir served a damaged pair")
			}
			_, served, _, err := loadCertificate("", "", dir, "")
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(served, tc.cert) {
				t.Error("the damaged certificate was served")
			}
			if kept := keptFiles(t, dir); !bytes.Equal(kept, served) {
				t.Error("the certificate kept is not the one served")
			}
		})
	}

	// The whole server: a mismatched pair is replaced, not served.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, certFile), certA)
	writeFile(t, filepath.Join(dir, certKeyFile), keyB)
	base, _, done := start(t, "-cert-dir", dir)
	if served := downloadPEM(t, base); bytes.Equal(served, certA) || !bytes.Equal(served, keptFiles(t, dir)) {
		t.Error("a mismatched pair in -cert-dir: not replaced by the pair served")
	}
	stop(t, done)

	// A key that cannot be read (a directory in its place): an error,
	// the certificate left as it was.
	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, certFile), certA)
	if err := os.Mkdir(filepath.Join(dir, certKeyFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := loadCertificate("", "", dir, ""); err == nil || !strings.Contains(err.Error(), "key") {
		t.Errorf("an unreadable key: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, certFile)); err != nil || !bytes.Equal(got, certA) {
		t.Errorf("an unreadable key: the certificate changed (%v)", err)
	}
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCertDirConcurrent: loads of one -cert-dir at once all return the
// pair the files hold when they are done, and the files make a pair.
func TestCertDirConcurrent(t *testing.T) {
	const loads = 8
	for round := range 5 {
		dir := filepath.Join(t.TempDir(), "certs")
		if round%2 == 1 { // a pair to renew: all of them replace it at once
			if _, _, _, err := loadCertificate("", "", dir, ""); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, certFile), []byte("junk"))
		}
		var wg sync.WaitGroup
		served := make([][]byte, loads)
		errs := make([]error, loads)
		begin := make(chan struct{})
		for i := range loads {
			wg.Go(func() {
				<-begin
				_, served[i], _, errs[i] = loadCertificate("", "", dir, "")
			})
		}
		close(begin)
		wg.Wait()
		kept := keptFiles(t, dir)
		for i := range loads {
			if errs[i] != nil {
				t.Fatalf("round %d, load %d: %v", round, i, errs[i])
			}
			if !bytes.Equal(served[i], kept) {
				t.Fatalf("round %d, load %d: not the certificate the files hold", round, i)
			}
		}
	}
}

// TestCertDirTwoServers: two servers started at once with one -cert-dir
// both serve the certificate the files hold.
func TestCertDirTwoServers(t *testing.T) {
	dir := t.TempDir()
	var logs syncBuffer
	logOutput = &logs
	t.Cleanup(func() { logOutput = io.Discard })
	dones := []chan error{make(chan error, 1), make(chan error, 1)}
	for _, done := range dones {
		go func() { done <- run([]string{"-addr", "127.0.0.1:0", "-cert-dir", dir}) }()
	}
	endpoint := regexp.MustCompile(`endpoint=(https://[^ ]+/)`)
	var bases [][]string
	for deadline := time.Now().Add(10 * time.Second); len(bases) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not both ready; log: %s", logs.String())
		}
		if text := logs.String(); strings.Count(text, `msg="lethe: ready"`) == 2 {
			bases = endpoint.FindAllStringSubmatch(text, -1)
		}
	}
	kept := keptFiles(t, dir)
	for _, m := range bases {
		if served := downloadPEM(t, m[1]); !bytes.Equal(served, kept) {
			t.Errorf("%s serves another certificate than the files hold", m[1])
		}
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for _, done := range dones {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestCertDirFlags: -cert wins over -cert-dir (which is then not even
// made); -cert-dir wins over -dir for the certificate.
func TestCertDirFlags(t *testing.T) {
	tmp := t.TempDir()
	_, certPEM, keyPEM, err := makeCertificate()
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath, certDir := filepath.Join(tmp, "c.pem"), filepath.Join(tmp, "k.pem"), filepath.Join(tmp, "certs")
	writeFile(t, certPath, certPEM)
	writeFile(t, keyPath, keyPEM)
	base, _, done := start(t, "-cert", certPath, "-certkey", keyPath, "-cert-dir", certDir)
	if got := downloadPEM(t, base); !bytes.Equal(got, certPEM) {
		t.Error("-cert with -cert-dir: another certificate was served")
	}
	stop(t, done)
	if _, err := os.Stat(certDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("-cert with -cert-dir: -cert-dir made (%v)", err)
	}

	dataDir := filepath.Join(tmp, "data")
	base, logs, done := start(t, "-dir", dataDir, "-cert-dir", certDir)
	if got := downloadPEM(t, base); !bytes.Equal(got, keptFiles(t, certDir)) {
		t.Error("-dir with -cert-dir: not the certificate kept in -cert-dir")
	}
	stop(t, done)
	for _, name := range []string{certFile, certKeyFile} {
		if _, err := os.Stat(filepath.Join(dataDir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("-dir with -cert-dir: %s in -dir (%v)", name, err)
		}
	}
	if want := "file=" + filepath.Join(certDir, certFile) + "\n"; !strings.Contains(logs.String(), want) {
		t.Errorf("the banner lacks %q:\n%s", want, logs.String())
	}

	// -cert-dir is for HTTPS, and a directory.
	for _, args := range [][]string{{"-http", "-cert-dir", certDir}, {"-cert-dir", certPath}} {
		if err := run(append([]string{"-addr", "127.0.0.1:0"}, args...)); err == nil {
			t.Errorf("%v was accepted", args)
		}
	}
}

// TestCertDirBanner: in memory without -cert-dir, the banner says in one
// line how to keep the certificate, with the user's configuration
// directory; with -cert-dir or -dir it names the file and says nothing
// of -cert-dir.
func TestCertDirBanner(t *testing.T) {
	var text bytes.Buffer
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == slog.LevelKey {
			return slog.Attr{}
		}
		return a
	}
	banner{endpoint: "https://localhost:8081/", tls: true, keepCert: "/home/u/.config/lethe"}.
		log(slog.New(slog.NewTextHandler(&text, &slog.HandlerOptions{ReplaceAttr: noTime})))
	lines := strings.Split(text.String(), "\n")
	const pem = "https://localhost:8081/_explorer/emulator.pem"
	if len(lines) < 4 || lines[2] != `msg="lethe: certificate" url=`+pem+` get="curl -k -o lethe.pem `+pem+`"` ||
		lines[3] != `msg="lethe: to keep the certificate across restarts" flag="-cert-dir /home/u/.config/lethe" env="LETHE_CERT_DIR=/home/u/.config/lethe"` {
		t.Errorf("banner:\n%s", text.String())
	}
	var js bytes.Buffer
	banner{endpoint: "https://localhost:8081/", tls: true, keepCert: "/home/u/.config/lethe"}.log(slog.New(slog.NewJSONHandler(&js, nil)))
	if want := `"msg":"lethe: to keep the certificate across restarts","flag":"-cert-dir /home/u/.config/lethe","env":"LETHE_CERT_DIR=/home/u/.config/lethe"}`; !strings.Contains(js.String(), want) {
		t.Errorf("JSON banner lacks %s:\n%s", want, js.String())
	}

	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("HOME", config)
	keep := `msg="lethe: to keep the certificate across restarts" flag="-cert-dir ` + filepath.Join(config, "lethe") + `"`
	for _, tc := range []struct {
		args []string
		keep bool
	}{
		{nil, true},
		{[]string{"-cert-dir", filepath.Join(t.TempDir(), "certs")}, false},
		{[]string{"-dir", t.TempDir()}, false},
		{[]string{"-http"}, false},
	} {
		_, logs, done := start(t, tc.args...)
		stop(t, done)
		if got := strings.Contains(logs.String(), keep); got != tc.keep {
			t.Errorf("%v: the line on -cert-dir: %v, want %v:\n%s", tc.args, got, tc.keep, logs.String())
		}
	}
}

// TestWriteFileSyncedConcurrent: writers of one file at once (where
// there is no lock to take turns) each succeed, and leave one of their
// files whole, never a mix.
func TestWriteFileSyncedConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), certFile)
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() { errs[i] = writeFileSynced(path, bytes.Repeat([]byte{byte('a' + i)}, 1<<16), 0o644) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || len(got) != 1<<16 || bytes.Count(got, got[:1]) != len(got) {
		t.Errorf("the file left is not one writer's whole (%d bytes, %v)", len(got), err)
	}
	if entries, err := os.ReadDir(filepath.Dir(path)); err != nil || len(entries) != 1 {
		t.Errorf("left in the directory: %v (%v)", entries, err)
	}
}
