package cosmosrest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// testServer serves a Handler over TLS for one test.
func testServer(t *testing.T, cfg cosmosrest.Config) (*cosmosrest.Handler, *client) {
	t.Helper()
	h, err := cosmosrest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(func() {
		srv.Close()
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	key := cfg.Key
	if key == "" {
		key = cosmosrest.EmulatorKey
	}
	return h, &client{t: t, srv: srv, key: key}
}

// computeClient serves h's compute gateway over TLS for one test and
// returns a client of it.
func computeClient(t *testing.T, h *cosmosrest.Handler, key string) *client {
	t.Helper()
	srv := httptest.NewTLSServer(h.ComputeGateway())
	t.Cleanup(srv.Close)
	return &client{t: t, srv: srv, key: key}
}

// client speaks the REST API without an SDK, signing its requests.
type client struct {
	t   *testing.T
	srv *httptest.Server
	key string
}

// resource returns the resource type and link a path's signature covers,
// by the REST API's rule (written here independently of the handler).
func resource(path string) (string, string) {
	p := strings.Trim(path, "/")
	if p == "" {
		return "", ""
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil {
			panic(err)
		}
		segs[i] = u
	}
	if len(segs) == 2 && segs[0] == "offers" { // addressed by resource id, signed lowercased
		return "offers", strings.ToLower(segs[1])
	}
	if len(segs)%2 == 0 {
		return segs[len(segs)-2], strings.Join(segs, "/")
	}
	return segs[len(segs)-1], strings.Join(segs[:len(segs)-1], "/")
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a map.
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

// do sends a signed request; body is []byte, a string, or marshaled to JSON.
// hdr adds headers (an empty value removes one).
func (c *client) do(method, path string, body any, hdr ...string) response {
	c.t.Helper()
	typ, link := resource(path)
	return c.doAs(method, path, typ, link, body, hdr...)
}

// doAs is do with the signature over resource type typ and link, for
// requests whose path is not escaped as resource assumes.
func (c *client) doAs(method, path, typ, link string, body any, hdr ...string) response {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, c.srv.URL+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := cosmosrest.SignRequest(c.key, method, typ, link, date)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-11-05")
	req.Header.Set("Authorization", auth)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	return c.send(req)
}

func (c *client) send(req *http.Request) response {
	c.t.Helper()
	resp, err := c.srv.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

// must checks a response's status.
func must(t *testing.T, r response, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if r.header.Get("x-ms-activity-id") == "" {
		t.Errorf("no x-ms-activity-id")
	}
	if r.header.Get("x-ms-request-charge") == "" {
		t.Errorf("no x-ms-request-charge")
	}
	return r
}

// query sends a query to a container's documents.
func (c *client) query(coll, q string, params []map[string]any, hdr ...string) response {
	c.t.Helper()
	body := map[string]any{"query": q, "parameters": params}
	if params == nil {
		body["parameters"] = []any{}
	}
	h := append([]string{"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"}, hdr...)
	return c.do("POST", coll+"/docs", body, h...)
}

// documents returns a feed's Documents, each as raw JSON.
func documents(t *testing.T, r response, name string) []json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	var docs []json.RawMessage
	if err := json.Unmarshal(m[name], &docs); err != nil {
		t.Fatalf("%s in %q: %v", name, r.body, err)
	}
	return docs
}

// direct serves one signed request with h itself, without a server.
func direct(t *testing.T, h http.Handler, method, path string) response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	date := time.Now().UTC().Format(http.TimeFormat)
	typ, link := resource(path)
	auth, err := cosmosrest.SignRequest(cosmosrest.EmulatorKey, method, typ, link, date)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", auth)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return response{w.Code, w.Header(), w.Body.Bytes()}
}
