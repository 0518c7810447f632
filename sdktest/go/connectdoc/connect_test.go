//go:build unix

// Package connectdoc holds TestConnectDoc, in a package of its own: it has
// no in-process form, as the tests of package sdktest have.
package connectdoc

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"go/format"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestConnectDoc runs the Go program of docs/connect.md, as written but
// for the server's port, against cmd/lethe started as a user starts it (in
// memory, HTTPS), in a directory holding the certificate downloaded from
// /_explorer/emulator.pem as the document says: so that the document
// cannot drift from what connects.
func TestConnectDoc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/lethe and a program")
	}
	src := docBlock(t, filepath.Join("..", "..", "..", "docs", "connect.md"), "sdktest/go/connectdoc/connect_test.go", "go")
	if formatted, err := format.Source([]byte(src)); err != nil || string(formatted) != src {
		t.Fatalf("the program is not gofmt'd (%v):\n%s", err, formatted)
	}
	const endpoint = "https://localhost:8081/"
	if strings.Count(src, endpoint) != 1 {
		t.Fatalf("the program does not name %s once:\n%s", endpoint, src)
	}

	// The program, built in this module (its go.sum has azcosmos), from a
	// directory the go command's ./... skips.
	pkg, err := os.MkdirTemp(".", "_connect")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pkg) })
	addr := startCommand(t, buildLethe(t))
	port := addr[strings.LastIndex(addr, ":")+1:]
	src = strings.Replace(src, endpoint, "https://localhost:"+port+"/", 1)
	if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(t.TempDir(), "connect")
	if out, err := exec.Command("go", "build", "-o", prog, "./"+filepath.Base(pkg)).CombinedOutput(); err != nil {
		t.Fatalf("building the document's program: %v\n%s", err, out)
	}

	run := func(dir string) (string, error) {
		cmd := exec.Command(prog)
		cmd.Dir = dir
		cmd.WaitDelay = time.Second
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// Without the certificate, it stops at once: no emulator.pem.
	if out, err := run(t.TempDir()); err == nil || !strings.Contains(out, "emulator.pem") {
		t.Fatalf("without emulator.pem: %v: %s", err, out)
	}
	// With it, as curl -k downloads it, it connects and creates its database.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "emulator.pem"), downloadCert(t, addr), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(dir)
	if err != nil || strings.TrimSpace(out) != "created database hello" {
		t.Fatalf("the document's program: %v: %s", err, out)
	}
}

// buildLethe builds cmd/lethe (a module of its own) into a temporary
// directory and returns the binary's path.
func buildLethe(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lethe")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..", "..", "cmd", "lethe")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/lethe: %v\n%s", err, out)
	}
	return bin
}

// docBlock returns the code of the fenced block of language lang that
// follows, in the markdown file path, the comment line naming the test
// tester ("<!-- tested: tester ... -->"); the test fails unless there is
// exactly one.
func docBlock(t *testing.T, path, tester, lang string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "<!-- tested: "+tester+" ") {
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "```"+lang {
			t.Fatalf("%s:%d: no ```%s block after the mark", path, i+1, lang)
		}
		var code strings.Builder
		for j := i + 2; ; j++ {
			if j >= len(lines) {
				t.Fatalf("%s:%d: the block does not end", path, i+2)
			}
			if lines[j] == "```" {
				break
			}
			code.WriteString(lines[j] + "\n")
		}
		blocks = append(blocks, code.String())
	}
	if len(blocks) != 1 {
		t.Fatalf("%s: %d blocks marked for %s, want 1", path, len(blocks), tester)
	}
	return blocks[0]
}

// startCommand runs the lethe binary bin in memory on free ports of
// 127.0.0.1 and returns the address ("127.0.0.1:port") of the first https
// URL its log names, the API's in the start line; SIGTERM stops it when
// the test ends.
func startCommand(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-compute-addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log bytes.Buffer
	found := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		url := regexp.MustCompile(`https://([0-9.]+:[0-9]+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := url.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-read
		if err := cmd.Wait(); err != nil {
			mu.Lock()
			defer mu.Unlock()
			t.Errorf("cmd/lethe after SIGTERM: %v\n%s", err, log.String())
		}
	})
	select {
	case addr := <-found:
		return addr
	case <-read:
		t.Fatalf("cmd/lethe ended before it served: %s", log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("cmd/lethe named no https URL in 30 s: %s", log.String())
	}
	return ""
}

// downloadCert fetches the server's certificate from /_explorer/emulator.pem
// without verifying it, as curl -k does.
func downloadCert(t *testing.T, addr string) []byte {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := hc.Get("https://" + addr + "/_explorer/emulator.pem")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.HasPrefix(b, []byte("-----BEGIN CERTIFICATE-----")) {
		t.Fatalf("GET emulator.pem: %d %v: %q", resp.StatusCode, err, b)
	}
	return b
}
