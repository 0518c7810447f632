//go:build unix

package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestRequestLog: with -log-level debug -log-format json, every request
// is one JSON line with its method, resource, operation, status,
// substatus, request charge, duration and activity id, as the response
// said them; at the default level there are none.
func TestRequestLog(t *testing.T) {
	base, logs, done := start(t, "-http", "-log-level", "debug", "-log-format", "json")
	resp, err := http.DefaultClient.Do(signed(t, "POST", base+"dbs", "dbs", "", strings.NewReader(`{"id":"db"}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp404, err := http.DefaultClient.Do(signed(t, "GET", base+"dbs/nope", "dbs", "dbs/nope", nil))
	if err != nil {
		t.Fatal(err)
	}
	resp404.Body.Close()
	stop(t, done)

	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d request lines, want 2: %s", len(lines), logs.String())
	}
	for i, want := range []struct {
		resp             *http.Response
		method, resource string
		op               string
	}{
		{resp, "POST", "/dbs", "dbs.create"},
		{resp404, "GET", "/dbs/nope", "dbs.read"},
	} {
		l := lines[i]
		sub := want.resp.Header.Get("x-ms-substatus")
		if sub == "" {
			sub = "0"
		}
		for k, v := range map[string]any{"level": "DEBUG", "method": want.method, "resource": want.resource, "operation": want.op,
			"status": float64(want.resp.StatusCode), "activity": want.resp.Header.Get("x-ms-activity-id")} {
			if l[k] != v {
				t.Errorf("line %d: %s = %v, want %v (%v)", i, k, l[k], v, l)
			}
		}
		if got, _ := json.Marshal(l["substatus"]); string(got) != sub {
			t.Errorf("line %d: substatus %s, want %s", i, got, sub)
		}
		if _, ok := l["ru"].(float64); !ok {
			t.Errorf("line %d: no ru: %v", i, l)
		}
		if d, ok := l["duration"].(float64); !ok || d <= 0 {
			t.Errorf("line %d: duration %v", i, l["duration"])
		}
	}
	if lines[0]["ru"].(float64) <= 0 {
		t.Errorf("no charge logged for a create: %v", lines[0])
	}

	// At info, no request lines; the start line as before.
	base, logs, done = start(t, "-http")
	resp, err = http.DefaultClient.Do(signed(t, "GET", base+"dbs", "dbs", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	stop(t, done)
	if strings.Contains(logs.String(), "msg=request") {
		t.Errorf("request logged at info: %s", logs.String())
	}
	if !strings.Contains(logs.String(), `level=INFO msg="lethe: serving the Cosmos DB REST API" endpoint=http://127.0.0.1:`) {
		t.Errorf("start line: %s", logs.String())
	}
}

// TestLogFlags: a level or a format that does not exist is refused.
func TestLogFlags(t *testing.T) {
	for _, args := range [][]string{{"-log-level", "loud"}, {"-log-format", "xml"}} {
		if err := run(args); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestOperation: the operation label of each kind of request.
func TestOperation(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		header       []string
		want         string
	}{
		{"GET", "/", nil, "account.list"},
		{"GET", "/dbs", nil, "dbs.list"},
		{"POST", "/dbs", nil, "dbs.create"},
		{"GET", "/dbs/d", nil, "dbs.read"},
		{"DELETE", "/dbs/d", nil, "dbs.delete"},
		{"PUT", "/dbs/d/colls/c", nil, "colls.replace"},
		{"POST", "/dbs/d/colls/c/docs", nil, "docs.create"},
		{"POST", "/dbs/d/colls/c/docs", []string{"x-ms-documentdb-is-upsert", "True"}, "docs.upsert"},
		{"POST", "/dbs/d/colls/c/docs", []string{"Content-Type", "application/query+json"}, "docs.query"},
		{"POST", "/dbs/d/colls/c/docs", []string{"x-ms-documentdb-isquery", "true"}, "docs.query"},
		{"POST", "/dbs/d/colls/c/docs", []string{"x-ms-cosmos-is-batch-request", "true"}, "docs.bulk"},
		{"POST", "/dbs/d/colls/c/docs", []string{"x-ms-cosmos-is-batch-request", "true", "x-ms-cosmos-batch-atomic", "true"}, "docs.batch"},
		{"GET", "/dbs/d/colls/c/docs", []string{"A-IM", "Incremental feed"}, "docs.changefeed"},
		{"GET", "/dbs/d/colls/c/docs/i", nil, "docs.read"},
		{"PATCH", "/dbs/d/colls/c/docs/i", nil, "docs.patch"},
		{"POST", "/dbs/d/colls/c/sprocs/s", nil, "sprocs.execute"},
		{"GET", "/dbs/d/colls/c/pkranges", nil, "pkranges.list"},
		{"GET", "/offers/o", nil, "offers.read"},
		{"GET", "/_explorer/emulator.pem", nil, "other.read"},
		{"OPTIONS", "/dbs", nil, "dbs.other"},
	} {
		r, _ := http.NewRequest(tc.method, "http://x"+tc.path, nil)
		for i := 0; i < len(tc.header); i += 2 {
			r.Header.Set(tc.header[i], tc.header[i+1])
		}
		if got := operation(r); got != tc.want {
			t.Errorf("%s %s %v: %s, want %s", tc.method, tc.path, tc.header, got, tc.want)
		}
	}
}
