//go:build unix

package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestRangeFlags: -min-ranges (and its LETHE_MIN_RANGES) and
// -range-throughput reach the handler: a container created has the ranges
// they give it; a negative value stops the command with the handler's
// error.
func TestRangeFlags(t *testing.T) {
	for _, tc := range []struct {
		args, env []string
		offer     string
		want      int
	}{
		{[]string{"-min-ranges", "3"}, nil, "", 3},
		{nil, []string{"LETHE_MIN_RANGES", "2"}, "", 2},
		{[]string{"-range-throughput", "6000"}, nil, "30000", 5},
		{nil, nil, "40000", 4},
	} {
		t.Run(strings.Join(append(tc.args, tc.env...), " "), func(t *testing.T) {
			rangesOf(t, tc.args, tc.env, tc.offer, tc.want)
		})
	}
	for _, args := range [][]string{{"-min-ranges", "-1"}, {"-range-throughput", "-5"}} {
		if err := run(append([]string{"-http", "-addr", "127.0.0.1:0"}, args...)); err == nil || !strings.Contains(err.Error(), "range") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// rangesOf starts the command with args and the variable env, creates a
// container (at throughput offer, if any) and checks that it has want
// ranges.
func rangesOf(t *testing.T, args, env []string, offer string, want int) {
	t.Helper()
	if env != nil {
		t.Setenv(env[0], env[1])
	}
	base, _, done := start(t, append([]string{"-http"}, args...)...)
	do := func(method, path, typ, link, body string, hdr ...string) *http.Response {
		t.Helper()
		req := signed(t, method, base+path, typ, link, strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	do("POST", "dbs", "dbs", "", `{"id":"db"}`).Body.Close()
	var hdr []string
	if offer != "" {
		hdr = []string{"x-ms-offer-throughput", offer}
	}
	created := do("POST", "dbs/db/colls", "colls", "dbs/db", `{"id":"c","partitionKey":{"paths":["/pk"]}}`, hdr...)
	created.Body.Close()
	if created.StatusCode != http.StatusCreated {
		t.Fatalf("%v: create: %d", args, created.StatusCode)
	}
	r := do("GET", "dbs/db/colls/c/pkranges", "pkranges", "dbs/db/colls/c", "")
	var feed struct{ PartitionKeyRanges []json.RawMessage }
	if err := json.NewDecoder(r.Body).Decode(&feed); err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if len(feed.PartitionKeyRanges) != want {
		t.Errorf("%v %v: %d ranges, want %d", args, env, len(feed.PartitionKeyRanges), want)
	}
	stop(t, done)
}
