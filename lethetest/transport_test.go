package lethetest_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lethedb/lethe/lethetest"
)

// TestTransportHeaderNames: the response's header is the one the handler
// had when it wrote the status, its names in Go's canonical form as
// net/http's client reads them off the wire, so that Header.Get finds a
// name the handler held in lower case (as cosmosrest sends x-ms-* names),
// and a header set after the status is not in it.
func TestTransportHeaderNames(t *testing.T) {
	tr := lethetest.NewTransport(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		continuation, etag := "x-ms-continuation", "etag" // held as cosmosrest holds them
		w.Header()[continuation] = []string{"next"}
		w.Header()[etag] = []string{`"1"`}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Header().Set("x-ms-late", "1")
		w.Header()[continuation][0] = "changed"
		_, _ = w.Write([]byte("{}"))
	}))
	resp, err := tr.Do(httptest.NewRequest("GET", "https://localhost:8081/", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	want := http.Header{
		"X-Ms-Continuation": {"next"},
		"Etag":              {`"1"`},
		"Content-Type":      {"application/json"},
		"Content-Length":    {"2"},
	}
	if len(resp.Header) != len(want) {
		t.Errorf("header %v, want %v", resp.Header, want)
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v[0] {
			t.Errorf("%s: %q, want %q (header %v)", k, got, v[0], resp.Header)
		}
	}
}
