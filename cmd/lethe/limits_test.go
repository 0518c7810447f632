//go:build unix

package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestMain serves as the command itself when LETHE_TEST_SERVE holds its
// arguments, so that a test can measure a server in a process of its own.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("LETHE_TEST_SERVE"); ok {
		if err := run(strings.Fields(args)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestLimitFlagsRefuseNoLimit(t *testing.T) {
	for _, args := range [][]string{
		{"-max-conns", "0"},
		{"-max-header-bytes", "100"},
		{"-read-timeout", "0s"},
	} {
		if err := run(append([]string{"-http", "-addr", "127.0.0.1:0", "-compute-addr", ""}, args...)); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v, want an error naming %s", args, err, args[0])
		}
	}
}

func TestHeaderLimit(t *testing.T) {
	base, _, done := start(t, "-http")
	for _, tc := range []struct {
		size int
		want int
	}{
		{defaultMaxHeaderBytes - 2<<10, http.StatusUnauthorized}, // read, then refused unsigned
		{defaultMaxHeaderBytes + 8<<10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		req, err := http.NewRequest("GET", base+"dbs", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-ms-session-token", strings.Repeat("0", tc.size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("a header of %d bytes: %d, want %d", tc.size, resp.StatusCode, tc.want)
		}
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// chanListener is a net.Listener whose connections come from a channel.
type chanListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}
func (l *chanListener) Close() error   { close(l.closed); return nil }
func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{} }

func TestConnSlotsShareACap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slots := newConnSlots(2)
		a := &chanListener{conns: make(chan net.Conn, 3), closed: make(chan struct{})}
		b := &chanListener{conns: make(chan net.Conn, 3), closed: make(chan struct{})}
		la, lb := slots.listener(a), slots.listener(b)
		for range 3 {
			c1, c2 := net.Pipe()
			defer c2.Close()
			a.conns <- c1
		}
		b.conns <- nil
		first, err := la.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := la.Accept(); err != nil {
			t.Fatal(err)
		}
		accepted := make(chan net.Conn, 2)
		go func() {
			c, _ := la.Accept()
			accepted <- c
		}()
		go func() {
			c, _ := lb.Accept()
			accepted <- c
		}()
		synctest.Wait()
		if len(accepted) != 0 {
			t.Fatal("a third connection was accepted under a cap of 2")
		}
		first.Close()
		first.Close() // a second Close frees nothing more
		synctest.Wait()
		if len(accepted) != 1 {
			t.Fatalf("%d connections accepted after one closed, want 1", len(accepted))
		}
		la.Close()
		lb.Close()
		synctest.Wait()
		if len(accepted) != 2 {
			t.Fatal("Close did not end a wait for a slot")
		}
	})
}

// residentBytes returns the resident memory of process pid.
func residentBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS in %s", b)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// TestConnectionFootprint measures the server's resident memory, in a
// process of its own, with 2,000 TLS connections open: idle ones (HTTP/1.1
// after a request, HTTP/2 after the preface), then hostile ones stalled in
// the middle of a request header or of an HTTP/2 frame.
func TestConnectionFootprint(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures resident memory of 2,000 connections: not in -short or under -race")
	}
	const conns = 2000
	for _, tc := range []struct {
		name  string
		open  func(c *tls.Conn) error
		limit int64
	}{
		{"idle", func(c *tls.Conn) error {
			if c.ConnectionState().NegotiatedProtocol == "h2" {
				_, err := c.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"))
				return err
			}
			fmt.Fprintf(c, "GET /_explorer/emulator.pem HTTP/1.1\r\nHost: localhost\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}, 200 << 20},
		{"stalled", func(c *tls.Conn) error {
			if c.ConnectionState().NegotiatedProtocol == "h2" { // a HEADERS frame of 1 MiB-1 announced, 900 KB sent
				_, err := c.Write(append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00\x0f\xff\xff\x01\x04\x00\x00\x00\x01"), make([]byte, 900_000)...))
				return err
			}
			_, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: localhost\r\nX-A: %s", strings.Repeat("a", defaultMaxHeaderBytes-2<<10))
			return err
		}, 256 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "LETHE_TEST_SERVE=-addr 127.0.0.1:0 -compute-addr=")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			// A server that never prints its endpoint is killed, so that
			// the scan below ends rather than waiting for good.
			startup := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
			sc := bufio.NewScanner(stderr)
			var addr string
			for addr == "" && sc.Scan() {
				if m := regexp.MustCompile(`endpoint=https://([^/ ]+)/`).FindStringSubmatch(sc.Text()); m != nil {
					addr = m[1]
				}
			}
			startup.Stop()
			if addr == "" {
				t.Fatal("the server did not start")
			}
			go func() {
				for sc.Scan() {
				}
			}()
			before := residentBytes(t, cmd.Process.Pid)
			var open []*tls.Conn
			defer func() {
				for _, c := range open {
					c.Close()
				}
			}()
			for i := range conns {
				proto := []string{"http/1.1"}
				if i%2 == 1 {
					proto = []string{"h2"}
				}
				c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: proto})
				if err != nil {
					t.Fatalf("connection %d: %v", i, err)
				}
				open = append(open, c)
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if err := tc.open(c); err != nil {
					t.Fatalf("connection %d: %v", i, err)
				}
			}
			// The server reads what was sent: wait until its memory stops growing.
			after := residentBytes(t, cmd.Process.Pid)
			for range 50 {
				time.Sleep(100 * time.Millisecond)
				now := residentBytes(t, cmd.Process.Pid)
				if now <= after {
					break
				}
				after = now
			}
			t.Logf("%d %s TLS connections: resident %d MB (idle server %d MB), %d KB a connection",
				conns, tc.name, after>>20, before>>20, (after-before)/conns>>10)
			if after > tc.limit {
				t.Errorf("resident %d MB with %d %s connections, over %d MB", after>>20, conns, tc.name, tc.limit>>20)
			}
		})
	}
}
