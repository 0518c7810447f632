package cosmosrest_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// rawRequest is a request written by hand on a socket, as a slow client
// writes it.
type rawRequest struct {
	method, path    string
	resType, link   string    // what the signature covers
	key             string    // signs with it; "" means the emulator's
	chunked         bool      // Transfer-Encoding: chunked, else Content-Length
	size            int       // of the body
	header          string    // more header lines, each ending in \r\n
	date            time.Time // x-ms-date; zero means now
	noConnectionEnd bool      // leave out Connection: close
}

// head returns the request's header block.
func (q rawRequest) head(t *testing.T) string {
	t.Helper()
	key := q.key
	if key == "" {
		key = cosmosrest.EmulatorKey
	}
	when := q.date
	if when.IsZero() {
		when = time.Now()
	}
	date := when.UTC().Format(http.TimeFormat)
	auth, err := cosmosrest.SignRequest(key, q.method, q.resType, q.link, date)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: lethe\r\nx-ms-date: %s\r\nx-ms-version: 2020-11-05\r\nAuthorization: %s\r\n", q.method, q.path, date, auth)
	b.WriteString("Content-Type: application/json\r\nx-ms-documentdb-partitionkey: [\"a\"]\r\n")
	if !q.noConnectionEnd {
		b.WriteString("Connection: close\r\n")
	}
	if q.chunked {
		b.WriteString("Transfer-Encoding: chunked\r\n")
	} else {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", q.size)
	}
	b.WriteString(q.header + "\r\n")
	return b.String()
}

// bigItem returns a document of n bytes in partition "a".
func bigItem(n int) []byte {
	const head, tail = `{"id":"big","pk":"a","s":"`, `"}`
	b := make([]byte, n)
	copy(b, head)
	for i := len(head); i < n-len(tail); i++ {
		b[i] = 'x'
	}
	copy(b[n-len(tail):], tail)
	return b
}

// slowChunk and slowPause pace the raw writer: 32 KiB every 10 ms, so that
// writing 3 MB takes about a second, twice as long as net/http waits
// between answering and closing a connection (rstAvoidanceDelay, 500 ms),
// as a client on a loaded machine writes.
const (
	slowChunk = 32 << 10
	slowPause = 10 * time.Millisecond
)

// writeSlowly writes the body of q in small chunks with pauses.
func writeSlowly(conn net.Conn, q rawRequest) error {
	body := bigItem(q.size)
	for len(body) > 0 {
		n := min(slowChunk, len(body))
		var err error
		if q.chunked {
			_, err = fmt.Fprintf(conn, "%x\r\n%s\r\n", n, body[:n])
		} else {
			_, err = conn.Write(body[:n])
		}
		if err != nil {
			return err
		}
		body = body[n:]
		time.Sleep(slowPause) // the pace of a slow client, not a wait for the server
	}
	if q.chunked {
		_, err := io.WriteString(conn, "0\r\n\r\n")
		return err
	}
	return nil
}

// rawServer serves h over plain HTTP or TLS, HTTP/1.1, and returns a
// dialer of raw connections to it.
func rawServer(t *testing.T, h http.Handler, useTLS bool) func() net.Conn {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if useTLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	return func() net.Conn {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if useTLS {
			pool := x509.NewCertPool()
			pool.AddCert(srv.Certificate())
			conn = tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: "example.com", NextProtos: []string{"http/1.1"}})
		}
		// A safety net: every exchange here ends in seconds.
		_ = conn.SetDeadline(time.Now().Add(time.Minute))
		t.Cleanup(func() { conn.Close() })
		return conn
	}
}

// checkErrorBody checks that b is Cosmos DB's error body for status.
func checkErrorBody(t *testing.T, status int, b []byte, msgPrefix string) {
	t.Helper()
	if bytes.HasPrefix(b, []byte("<!DOCTYPE HTML")) {
		// http.sys's page, in front of the routing gateway: its message
		// is in the HTML.
		if status != 400 || !bytes.Contains(b, []byte(msgPrefix)) {
			t.Errorf("status %d, page %s, want 400 and %q", status, b, msgPrefix)
		}
		return
	}
	var e struct{ Code, Message string }
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	codes := map[int]string{400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 413: "RequestEntityTooLarge"}
	if e.Code != codes[status] || !strings.HasPrefix(e.Message, msgPrefix) {
		t.Errorf("body %s, want code %s and a message starting %q", b, codes[status], msgPrefix)
	}
}

// TestRefusalReachesSlowWriter: a client that writes a large body slowly,
// in small chunks with pauses, and reads the answer only once it has
// written the whole body (as a loaded client does) reads the refusal
// every time, over HTTP/1.1 with and without TLS: the body's whole write
// succeeds, the answer is the refusal with Cosmos DB's body, and the
// connection then ends cleanly, never with a reset. Before, the server
// answered and closed with the body unread: the client's writes failed
// with ECONNRESET (or EPIPE) and the answer was lost, as @azure/cosmos
// lost it.
func TestRefusalReachesSlowWriter(t *testing.T) {
	h, c := testServer(t, cosmosrest.Config{Faults: &cosmosrest.Faults{}})
	createDBColl(t, c)
	docs := rawRequest{method: "POST", path: "/dbs/db/colls/c/docs", resType: "docs", link: "dbs/db/colls/c"}
	with := func(q rawRequest, f func(*rawRequest)) rawRequest { f(&q); return q }
	cases := []struct {
		name   string
		req    rawRequest
		status int
		msg    string // the start of the answer's message
	}{
		{"3 MB item", with(docs, func(q *rawRequest) { q.size = 3 << 20 }), 413, `Message: {"Errors":["Request size is too large"]}`},
		{"10 MB item", with(docs, func(q *rawRequest) { q.size = 10 << 20 }), 413, `Message: {"Errors":["Request size is too large"]}`},
		{"3 MB item, chunked", with(docs, func(q *rawRequest) { q.size, q.chunked = 3<<20, true }), 413, `Message: {"Errors":["Request size is too large"]}`},
		{"10 MB item, chunked", with(docs, func(q *rawRequest) { q.size, q.chunked = 10<<20, true }), 413, `Message: {"Errors":["Request size is too large"]}`},
		{"3 MB item, wrong key", with(docs, func(q *rawRequest) { q.size, q.key = 3<<20, "b3RoZXIta2V5" }), 401, "The input authorization token can't serve the request"},
		{"3 MB item, chunked, wrong key", with(docs, func(q *rawRequest) { q.size, q.chunked, q.key = 3<<20, true, "b3RoZXIta2V5" }), 401, "The input authorization token"},
		{"3 MB item, signed for another link", with(docs, func(q *rawRequest) { q.size, q.link = 3<<20, "dbs/db/colls/other" }), 401, "The input authorization token"},
		{"3 MB item, dated an hour ago", with(docs, func(q *rawRequest) { q.size, q.date = 3<<20, time.Now().Add(-time.Hour) }), 403, "The authorization token is not valid at the current time"},
		{"3 MB body, control character in the path", with(docs, func(q *rawRequest) { q.size, q.path = 3<<20, "/dbs/db/colls/c/docs/a%01b" }), 400, "HTTP Error 400. The request URL is invalid."},
		{"3 MB body, fault rules", with(docs, func(q *rawRequest) { q.size, q.path, q.resType, q.link = 3<<20, "/_lethe/faults", "faults", "" }), 413, `Message: {"Errors":["Request size is too large"]}`},
		{"3 MB body, fault rules, wrong key", with(docs, func(q *rawRequest) {
			q.size, q.path, q.resType, q.link, q.key = 3<<20, "/_lethe/faults", "faults", "", "b3RoZXIta2V5"
		}), 401, "The input authorization token"},
		{"3 MB body, no such fault control resource", with(docs, func(q *rawRequest) { q.size, q.path = 3<<20, "/_lethe/faults/a/b" }), 404, "no such control resource"},
		{"3 MB body, reset, wrong key", with(docs, func(q *rawRequest) {
			q.size, q.path, q.resType, q.link, q.key = 3<<20, "/_lethe/reset", "reset", "", "b3RoZXIta2V5"
		}), 401, "The input authorization token"},
		{"3 MB body, reset", with(docs, func(q *rawRequest) { q.size, q.path, q.resType, q.link = 3<<20, "/_lethe/reset", "reset", "" }), 413, `Message: {"Errors":["Request size is too large"]}`},
		{"3 MB body, reset, GET", with(docs, func(q *rawRequest) {
			q.size, q.method, q.path, q.resType, q.link = 3<<20, "GET", "/_lethe/reset", "reset", ""
		}), 405, ""},
	}
	// All at once, as many as there are (t.Parallel would run two at a
	// time on two cores): each spends its time in its writer's pauses.
	var wg sync.WaitGroup
	for _, useTLS := range []bool{false, true} {
		dial := rawServer(t, h, useTLS)
		for _, tc := range cases {
			wg.Go(func() {
				t.Run(fmt.Sprintf("%s/tls=%v", tc.name, useTLS), func(t *testing.T) {
					conn := dial()
					if _, err := io.WriteString(conn, tc.req.head(t)); err != nil {
						t.Fatal(err)
					}
					if err := writeSlowly(conn, tc.req); err != nil {
						t.Fatalf("writing the body: %v (the server reset the connection)", err)
					}
					br := bufio.NewReader(conn)
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Fatalf("reading the answer: %v", err)
					}
					b, err := io.ReadAll(resp.Body)
					if err != nil {
						t.Fatalf("reading the answer's body: %v", err)
					}
					if resp.StatusCode != tc.status {
						t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
					}
					checkErrorBody(t, tc.status, b, tc.msg)
					if _, err := br.ReadByte(); err != io.EOF {
						t.Errorf("after the answer: %v, want the connection's clean end (EOF)", err)
					}
				})
			})
		}
	}
	wg.Wait()
}

// TestRefusalBeforeBody: a refusal is answered as soon as it is known,
// before the body arrives, so that a client that reads while it writes,
// or waits for the answer, gets it at once; the body that follows is read
// until the request's body deadline and no longer, so that a client
// sending a large body slowly does not hold the connection past it. A
// client waiting for 100 Continue is sent the refusal and nothing asks it
// for its body; nor is a body announced over the drain's bound read: the
// connection closes after the answer.
func TestRefusalBeforeBody(t *testing.T) {
	const path, resType, link, otherKey = "/dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", "b3RoZXIta2V5"
	for _, tc := range []struct {
		name        string
		bodyTimeout time.Duration
		req         rawRequest
		status      int
		// ends: the server ends the connection after the answer without
		// waiting for the body (or once the body's deadline has passed)
		ends bool
	}{
		// The answer comes long before the body's deadline, while the
		// server waits for the body.
		{"wrong key", time.Minute, rawRequest{method: "POST", path: path, resType: resType, link: link, size: 3 << 20, key: otherKey}, 401, false},
		{"over the limit", time.Minute, rawRequest{method: "POST", path: path, resType: resType, link: link, size: 3 << 20}, 413, false},
		{"100-continue", time.Minute, rawRequest{method: "POST", path: path, resType: resType, link: link, size: 3 << 20, key: otherKey, header: "Expect: 100-continue\r\n", noConnectionEnd: true}, 401, true},
		{"over the drain's bound", time.Minute, rawRequest{method: "POST", path: path, resType: resType, link: link, size: 20 << 20, noConnectionEnd: true}, 413, true},
		{"stalled after the answer", 300 * time.Millisecond, rawRequest{method: "POST", path: path, resType: resType, link: link, size: 3 << 20, key: otherKey}, 401, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := cosmosrest.New(cosmosrest.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			cosmosrest.SetBodyTimeout(h, tc.bodyTimeout)
			conn := rawServer(t, h, false)()
			if _, err := io.WriteString(conn, tc.req.head(t)); err != nil {
				t.Fatal(err)
			}
			// The client writes no more: it waits for the answer.
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			checkErrorBody(t, tc.status, b, "")
			if !resp.Close {
				t.Errorf("the answer does not close the connection (Connection: %q)", resp.Header.Get("Connection"))
			}
			if !tc.ends {
				return
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the answer: %v, want the connection's end (EOF)", err)
			}
		})
	}
}

// TestRefusalOverHTTP2: over HTTP/2 a refusal before the body needs no
// drain: the answer is whole, then the stream is reset with NO_ERROR,
// which the client takes as a request to stop sending. A Go client
// writing 3 MB slowly gets the 413 and the 401 at once, long before it
// has sent its body.
func TestRefusalOverHTTP2(t *testing.T) {
	h, err := cosmosrest.New(cosmosrest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name   string
		key    string
		status int
	}{
		{"over the limit", cosmosrest.EmulatorKey, 413},
		{"wrong key", "b3RoZXIta2V5", 401},
	} {
		body := &slowReader{data: bigItem(3 << 20)}
		req, err := http.NewRequest("POST", srv.URL+"/dbs/db/colls/c/docs", body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 3 << 20
		date := time.Now().UTC().Format(http.TimeFormat)
		auth, err := cosmosrest.SignRequest(tc.key, "POST", "docs", "dbs/db/colls/c", date)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-ms-date", date)
		req.Header.Set("Authorization", auth)
		// The answer, whole, comes long before the body's deadline (a
		// minute): the server does not wait for the rest of the body.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := srv.Client().Do(req.WithContext(ctx))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if sent := body.sent.Load(); sent >= 1<<20 {
			t.Errorf("%s: the answer came once %d bytes of the body were sent, not at once", tc.name, sent)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: reading the answer: %v", tc.name, err)
		}
		if resp.ProtoMajor != 2 || resp.StatusCode != tc.status {
			t.Fatalf("%s: %s %d, want HTTP/2 %d: %s", tc.name, resp.Proto, resp.StatusCode, tc.status, b)
		}
		checkErrorBody(t, tc.status, b, "")
	}
}

// slowReader is a request body that arrives slowly, in small chunks with
// pauses.
type slowReader struct {
	data []byte
	sent atomic.Int64 // how much has been read
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(slowPause) // the pace of a slow client
	n := copy(p[:min(len(p), slowChunk)], r.data)
	r.data = r.data[n:]
	r.sent.Add(int64(n))
	return n, nil
}

// TestBodyOfGET: a GET or DELETE that carries a large body is answered,
// its body read and dropped, and a slow writer reads the answer.
func TestBodyOfGET(t *testing.T) {
	h, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	dial := rawServer(t, h, false)
	for _, tc := range []struct {
		req    rawRequest
		status int
	}{
		{rawRequest{method: "GET", path: "/dbs/db", resType: "dbs", link: "dbs/db", size: 1 << 20}, 200},
		{rawRequest{method: "GET", path: "/dbs/db", resType: "dbs", link: "dbs/db", size: 3 << 20}, 413},
		{rawRequest{method: "DELETE", path: "/dbs/none", resType: "dbs", link: "dbs/none", size: 1 << 20, chunked: true}, 404},
	} {
		conn := dial()
		if _, err := io.WriteString(conn, tc.req.head(t)); err != nil {
			t.Fatal(err)
		}
		if err := writeSlowly(conn, tc.req); err != nil {
			t.Fatalf("%s %d: writing the body: %v", tc.req.method, tc.req.size, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s %d: %v", tc.req.method, tc.req.size, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status {
			t.Errorf("%s %d: status %d, want %d: %s", tc.req.method, tc.req.size, resp.StatusCode, tc.status, b)
		}
	}
	if r := c.do("GET", "/dbs/db", bytes.Repeat([]byte("x"), 100)); r.status != 200 {
		t.Errorf("a GET with a small body: %d %s", r.status, r.body)
	}
}

// TestRefusalDiscards: what the server reads of a refused body it
// discards: eight clients sending 10 MB each, refused with 401, make the
// process allocate a few MB in all, not the 80 MB they sent.
func TestRefusalDiscards(t *testing.T) {
	h, err := cosmosrest.New(cosmosrest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	dial := rawServer(t, h, false)
	const clients, size = 8, 10 << 20
	req := rawRequest{method: "POST", path: "/dbs/db/colls/c/docs", resType: "docs", link: "dbs/db/colls/c", size: size, key: "b3RoZXIta2V5"}
	body := bigItem(size)
	conns := make([]net.Conn, clients)
	heads := make([]string, clients)
	for i := range conns {
		conns[i], heads[i] = dial(), req.head(t)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	errs := make([]error, clients)
	for i, conn := range conns {
		wg.Go(func() {
			errs[i] = func() error {
				if _, err := io.WriteString(conn, heads[i]); err != nil {
					return err
				}
				if _, err := conn.Write(body); err != nil {
					return err
				}
				br := bufio.NewReader(conn)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					return err
				}
				if _, err := io.ReadAll(resp.Body); err != nil {
					return err
				}
				if resp.StatusCode != 401 {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				if _, err := br.ReadByte(); err != io.EOF { // the server has read the whole body
					return fmt.Errorf("after the answer: %v", err)
				}
				return nil
			}()
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	for i, err := range errs {
		if err != nil {
			t.Errorf("client %d: %v", i, err)
		}
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d clients sent %d MB each, refused: %d KB allocated", clients, size>>20, alloc>>10)
	if alloc > 16<<20 {
		t.Errorf("%d MB allocated while discarding %d MB", alloc>>20, clients*size>>20)
	}
}

// hidden hides the connection's writer from http.ResponseController, as
// a middleware without Unwrap does.
type hidden struct{ http.ResponseWriter }

// TestRefusalBehindMiddleware: behind a middleware whose writer cannot
// answer before the body is read (no Unwrap, so no full duplex), a
// refusal is answered once the body has been read and discarded: a slow
// writer still reads it.
func TestRefusalBehindMiddleware(t *testing.T) {
	h, err := cosmosrest.New(cosmosrest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	dial := rawServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(hidden{w}, r) }), false)
	var wg sync.WaitGroup
	for _, tc := range []struct {
		req    rawRequest
		status int
	}{
		{rawRequest{method: "POST", path: "/dbs/db/colls/c/docs", resType: "docs", link: "dbs/db/colls/c", size: 3 << 20}, 413},
		{rawRequest{method: "POST", path: "/dbs/db/colls/c/docs", resType: "docs", link: "dbs/db/colls/c", size: 3 << 20, key: "b3RoZXIta2V5"}, 401},
	} {
		conn := dial()
		wg.Go(func() {
			if _, err := io.WriteString(conn, tc.req.head(t)); err != nil {
				t.Error(err)
				return
			}
			if err := writeSlowly(conn, tc.req); err != nil {
				t.Errorf("%d: writing the body: %v", tc.status, err)
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Errorf("%d: %v", tc.status, err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
		})
	}
	wg.Wait()
}

// TestRefusalOfSmallBodyKeepsConnection: a refusal of a request whose body
// is small (a 1 KB document signed with another key) leaves the connection
// open, as before refusals closed it: the client's next request on it is
// answered.
func TestRefusalOfSmallBodyKeepsConnection(t *testing.T) {
	t.Parallel()
	const path, resType, link, otherKey = "/dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", "b3RoZXIta2V5"
	h, err := cosmosrest.New(cosmosrest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	conn := rawServer(t, h, false)()
	br := bufio.NewReader(conn)
	for i := range 2 {
		q := rawRequest{method: "POST", path: path, resType: resType, link: link, size: 1 << 10, key: otherKey, noConnectionEnd: true}
		if _, err := io.WriteString(conn, q.head(t)); err != nil {
			t.Fatal(err)
		}
		if err := writeSlowly(conn, q); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d on one connection: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("request %d: status %d, want 401: %s", i, resp.StatusCode, b)
		}
		if resp.Close {
			t.Fatalf("request %d: a refusal of a 1 KB body closes the connection", i)
		}
	}
}
