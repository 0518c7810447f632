//go:build unix

package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// TestBanner: the start's lines, in text and as JSON fields: the
// endpoints, the key (never a custom one), the storage, the explorer, the
// certificate's URL and file and the ways to trust it (HTTPS alone), the
// docs, and last the ready line.
func TestBanner(t *testing.T) {
	const pem = "https://localhost:8081/_explorer/emulator.pem"
	for _, tc := range []struct {
		name string
		b    banner
		text []string            // the text lines, each without its time and level
		json []map[string]string // the JSON records, without time and level
	}{{
		name: "defaults",
		b:    banner{endpoint: "https://localhost:8081/", compute: "https://localhost:8903/", tls: true},
		text: []string{
			`msg="lethe: serving the Cosmos DB REST API" endpoint=https://localhost:8081/ compute_gateway=https://localhost:8903/ key="the emulator's well-known key" storage=memory`,
			`msg="lethe: data explorer" url=https://localhost:8081/_explorer/`,
			`msg="lethe: certificate" url=` + pem + ` get="curl -k -o lethe.pem ` + pem + `"`,
			`msg="lethe: to trust the certificate" for="Debian, Ubuntu (as root)" run="cp lethe.pem /usr/local/share/ca-certificates/lethe.crt && update-ca-certificates"`,
			`msg="lethe: to trust the certificate" for=Node.js env="NODE_EXTRA_CA_CERTS=lethe.pem"`,
			`msg="lethe: to trust the certificate" for=Go env="SSL_CERT_FILE=lethe.pem" or="add it to the RootCAs (an x509.CertPool) of a tls.Config"`,
			`msg="lethe: more on connecting" docs=` + connectDocs,
			`msg="lethe: ready"`,
		},
		json: []map[string]string{
			{"msg": "lethe: serving the Cosmos DB REST API", "endpoint": "https://localhost:8081/", "compute_gateway": "https://localhost:8903/",
				"key": "the emulator's well-known key", "storage": "memory"},
			{"msg": "lethe: data explorer", "url": "https://localhost:8081/_explorer/"},
			{"msg": "lethe: certificate", "url": pem, "get": "curl -k -o lethe.pem " + pem},
			{"msg": "lethe: to trust the certificate", "for": "Debian, Ubuntu (as root)", "run": "cp lethe.pem /usr/local/share/ca-certificates/lethe.crt && update-ca-certificates"},
			{"msg": "lethe: to trust the certificate", "for": "Node.js", "env": "NODE_EXTRA_CA_CERTS=lethe.pem"},
			{"msg": "lethe: to trust the certificate", "for": "Go", "env": "SSL_CERT_FILE=lethe.pem", "or": "add it to the RootCAs (an x509.CertPool) of a tls.Config"},
			{"msg": "lethe: more on connecting", "docs": connectDocs},
			{"msg": "lethe: ready"},
		},
	}, {
		name: "durable, its certificate in the directory",
		b:    banner{endpoint: "https://localhost:8081/", tls: true, dir: "/data", certFile: "/data/lethe-cert.pem"},
		text: []string{
			`msg="lethe: serving the Cosmos DB REST API" endpoint=https://localhost:8081/ key="the emulator's well-known key" storage=durable dir=/data`,
			`msg="lethe: data explorer" url=https://localhost:8081/_explorer/`,
			`msg="lethe: certificate" url=` + pem + ` file=/data/lethe-cert.pem`,
			`msg="lethe: to trust the certificate" for="Debian, Ubuntu (as root)" run="cp /data/lethe-cert.pem /usr/local/share/ca-certificates/lethe.crt && update-ca-certificates"`,
			`msg="lethe: to trust the certificate" for=Node.js env="NODE_EXTRA_CA_CERTS=/data/lethe-cert.pem"`,
			`msg="lethe: to trust the certificate" for=Go env="SSL_CERT_FILE=/data/lethe-cert.pem" or="add it to the RootCAs (an x509.CertPool) of a tls.Config"`,
			`msg="lethe: more on connecting" docs=` + connectDocs,
			`msg="lethe: ready"`,
		},
		json: []map[string]string{
			{"msg": "lethe: serving the Cosmos DB REST API", "endpoint": "https://localhost:8081/", "key": "the emulator's well-known key", "storage": "durable", "dir": "/data"},
			{"msg": "lethe: data explorer", "url": "https://localhost:8081/_explorer/"},
			{"msg": "lethe: certificate", "url": pem, "file": "/data/lethe-cert.pem"},
			{"msg": "lethe: to trust the certificate", "for": "Debian, Ubuntu (as root)", "run": "cp /data/lethe-cert.pem /usr/local/share/ca-certificates/lethe.crt && update-ca-certificates"},
			{"msg": "lethe: to trust the certificate", "for": "Node.js", "env": "NODE_EXTRA_CA_CERTS=/data/lethe-cert.pem"},
			{"msg": "lethe: to trust the certificate", "for": "Go", "env": "SSL_CERT_FILE=/data/lethe-cert.pem", "or": "add it to the RootCAs (an x509.CertPool) of a tls.Config"},
			{"msg": "lethe: more on connecting", "docs": connectDocs},
			{"msg": "lethe: ready"},
		},
	}, {
		name: "plain HTTP, a custom key, metrics",
		b:    banner{endpoint: "http://127.0.0.1:9000/", custom: true, metrics: "http://localhost:9100/metrics"},
		text: []string{
			`msg="lethe: serving the Cosmos DB REST API" endpoint=http://127.0.0.1:9000/ key="the one given (-key, LETHE_KEY), not shown" storage=memory`,
			`msg="lethe: data explorer" url=http://127.0.0.1:9000/_explorer/`,
			`msg="lethe: serving metrics" url=http://localhost:9100/metrics`,
			`msg="lethe: more on connecting" docs=` + connectDocs,
			`msg="lethe: ready"`,
		},
		json: []map[string]string{
			{"msg": "lethe: serving the Cosmos DB REST API", "endpoint": "http://127.0.0.1:9000/", "key": "the one given (-key, LETHE_KEY), not shown", "storage": "memory"},
			{"msg": "lethe: data explorer", "url": "http://127.0.0.1:9000/_explorer/"},
			{"msg": "lethe: serving metrics", "url": "http://localhost:9100/metrics"},
			{"msg": "lethe: more on connecting", "docs": connectDocs},
			{"msg": "lethe: ready"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var text, js bytes.Buffer
			noTime := func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey || a.Key == slog.LevelKey {
					return slog.Attr{}
				}
				return a
			}
			tc.b.log(slog.New(slog.NewTextHandler(&text, &slog.HandlerOptions{ReplaceAttr: noTime})))
			tc.b.log(slog.New(slog.NewJSONHandler(&js, &slog.HandlerOptions{ReplaceAttr: noTime})))
			if got := strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n"); !equalLines(got, tc.text) {
				t.Errorf("text:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.text, "\n"))
			}
			var got []map[string]string
			for _, line := range strings.Split(strings.TrimSuffix(js.String(), "\n"), "\n") {
				var m map[string]string
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				got = append(got, m)
			}
			if g, w := mustJSON(t, got), mustJSON(t, tc.json); g != w {
				t.Errorf("JSON:\n%s\nwant:\n%s", g, w)
			}
		})
	}
}

func equalLines(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDisplayURL: the URL to paste for a listener: the flag's host (or
// localhost), the listener's port.
func TestDisplayURL(t *testing.T) {
	tcp := func(ip string, port int) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: port} }
	for _, tc := range []struct {
		flag   string
		actual net.Addr
		want   string
	}{
		{"localhost:8081", tcp("127.0.0.1", 8081), "https://localhost:8081/"},
		{"localhost:0", tcp("127.0.0.1", 40123), "https://localhost:40123/"},
		{":8081", tcp("::", 8081), "https://localhost:8081/"},
		{"0.0.0.0:8081", tcp("0.0.0.0", 8081), "https://localhost:8081/"},
		{"[::]:0", tcp("::", 5555), "https://localhost:5555/"},
		{"127.0.0.1:0", tcp("127.0.0.1", 4444), "https://127.0.0.1:4444/"},
		{"[::1]:0", tcp("::1", 4444), "https://[::1]:4444/"},
		{"myhost:8081", tcp("10.0.0.7", 8081), "https://myhost:8081/"},
	} {
		if got := displayURL("https", tc.flag, tc.actual); got != tc.want {
			t.Errorf("%s on %v: %s, want %s", tc.flag, tc.actual, got, tc.want)
		}
	}
}

// TestComputeDefault: the compute gateway follows -addr: at 8903 when
// -addr is at the emulator's 8081, else none.
func TestComputeDefault(t *testing.T) {
	for addr, want := range map[string]string{
		"localhost:8081": "localhost:8903",
		"0.0.0.0:8081":   "0.0.0.0:8903",
		":8081":          ":8903",
		"[::1]:8081":     "[::1]:8903",
		"localhost:8082": "",
		"127.0.0.1:0":    "",
		"nonsense":       "",
	} {
		if got := computeDefault(addr); got != want {
			t.Errorf("-addr %s: %q, want %q", addr, got, want)
		}
	}
}

// TestTwoServers: two servers on other -addr than the default, without
// -compute-addr, both start (neither reaches for the compute gateway's
// port 8903) and both answer.
func TestTwoServers(t *testing.T) {
	base1, logs1, done1 := startWith(t, "-http", "-addr", "127.0.0.1:0")
	base2, logs2, done2 := startWith(t, "-http", "-addr", "127.0.0.1:0")
	for _, s := range []struct {
		base string
		logs *syncBuffer
	}{{base1, logs1}, {base2, logs2}} {
		resp, err := http.DefaultClient.Do(signed(t, "GET", s.base+"dbs", "dbs", "", nil))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %sdbs: %d", s.base, resp.StatusCode)
		}
		if strings.Contains(s.logs.String(), "compute_gateway") {
			t.Errorf("a compute gateway without -compute-addr: %s", s.logs.String())
		}
	}
	if base1 == base2 {
		t.Fatalf("both on %s", base1)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for _, done := range []chan error{done1, done2} {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestAddressTaken: an address another has is an error naming the flag
// to set, for -addr and for -compute-addr; nothing serves.
func TestAddressTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-addr", addr}, "-addr (LETHE_ADDR) " + addr + ": listen tcp " + addr + ": bind: address already in use: another server has it: set -addr to another address"},
		{[]string{"-addr", "127.0.0.1:0", "-compute-addr", addr}, "-compute-addr (LETHE_COMPUTE_ADDR) " + addr +
			": listen tcp " + addr + `: bind: address already in use: another server has it: set -compute-addr to another address, or -compute-addr "" for none`},
	} {
		err := run(append([]string{"-http"}, tc.args...))
		var le *listenError
		if err == nil || err.Error() != tc.want || !errors.As(err, &le) || !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("%v: %v\nwant %s", tc.args, err, tc.want)
		}
	}
}

// TestServedBanner: what the banner of a running server says is so: its
// endpoint, explorer and certificate answer, and the certificate's file
// is what the server serves.
func TestServedBanner(t *testing.T) {
	dir := t.TempDir()
	base, logs, done := start(t, "-dir", dir)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	file := filepath.Join(dir, certFile)
	for _, want := range []string{"endpoint=" + base + " ", "url=" + base + "_explorer/\n", "url=" + base + "_explorer/emulator.pem file=" + file + "\n",
		`env="NODE_EXTRA_CA_CERTS=` + file + `"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the banner lacks %q:\n%s", want, logs.String())
		}
	}
	for _, u := range []string{base + "_explorer/", base + "_explorer/emulator.pem"} {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", u, resp.StatusCode)
		}
		if strings.HasSuffix(u, ".pem") {
			if kept, err := os.ReadFile(file); err != nil || !bytes.Equal(kept, body) {
				t.Errorf("the banner's file %s is not the certificate served: %v", file, err)
			}
		}
	}
	stop(t, done)
}

// TestHelpKeyDefault: -help says the key's default once, in words and
// with its value; every flag's default at most once.
func TestHelpKeyDefault(t *testing.T) {
	var out bytes.Buffer
	helpOutput = &out
	defer func() { helpOutput = os.Stderr }()
	if err := run([]string{"-help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	text := out.String()
	if n := strings.Count(text, cosmosrest.EmulatorKey); n != 1 {
		t.Errorf("the key's value %d times:\n%s", n, text)
	}
	for _, entry := range strings.Split(text, "\n  -")[1:] {
		if n := strings.Count(entry, "(default"); n > 1 {
			t.Errorf("a default said %d times: -%s", n, entry)
		}
	}
	if !strings.Contains(text, "(default: the emulator's well-known key, "+cosmosrest.EmulatorKey+")\n") {
		t.Errorf("the key's default:\n%s", text)
	}
}
