package main

import (
	"math"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

// TestRegionFlagsRefusedFix: flags an account of regions cannot honour,
// or that would be ignored, are refused before anything opens.
func TestRegionFlagsRefusedFix(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-regions", "A,B", "-changefeed=false"}, "-changefeed=false: the regions"},
		{[]string{"-regions", "A,B", "-lag-jitter", "2562047h47m16.854775807s"}, "-lag-jitter"},
		{[]string{"-regions", "A,B", "-lag-jitter", "25h"}, "from 0 to 24h"},
		{[]string{"-consistency", "Eventual"}, "give -regions"},
		{[]string{"-consistency", "Linear"}, "give -regions"},
		{[]string{"-lag-seed", "7"}, "give -regions"},
		{[]string{"-regions", "A", "-consistency", "Linear"}, "not a consistency level"},
		{[]string{"-regions", "A,B", "-consistency", "BoundedStaleness", "-max-interval", "9223372037"}, "(max-interval)"},
	} {
		err := run(append([]string{"-http", "-addr", "127.0.0.1:0", "-compute-addr", ""}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

// TestLagFuncBounds: the largest jitter draws no panic, and a lag plus
// its jitter past the largest duration is the largest.
func TestLagFuncBounds(t *testing.T) {
	for _, tc := range []struct {
		name        string
		def, jitter time.Duration
		atLeast     time.Duration
	}{
		{"largest jitter", 0, math.MaxInt64, 0},
		{"largest lag and jitter", math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{"near the largest", math.MaxInt64 - 1, time.Hour, math.MaxInt64 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lagFunc(tc.def, nil, tc.jitter, 1)
			for range 100 {
				if d := f("East US", "West US"); d < tc.atLeast || d < 0 {
					t.Fatalf("lag %v, want at least %v", d, tc.atLeast)
				}
			}
		})
	}
}

// TestRegionsStopWithHeldRequest: a graceful stop answers 503 a request
// held by a region down in timeout mode, rather than waiting for it until
// its deadline and failing.
func TestRegionsStopWithHeldRequest(t *testing.T) {
	_, logs, done := start(t, "-http", "-regions", "East US, West US")
	urls := regionURLs(t, logs.String())
	west := urls["West US"]
	if status, body, _ := do(t, "POST", west+"_lethe/regions/West%20US/down", "regions", "West US", `{"mode":"timeout"}`); status != 200 {
		t.Fatalf("taking West US down: %d %s", status, body)
	}
	wrote := make(chan struct{})
	held := make(chan int, 1)
	go func() {
		req := signed(t, "GET", west+"dbs", "dbs", "", nil)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { close(wrote) }}))
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			held <- 0
			return
		}
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	<-wrote
	began := time.Now()
	stop(t, done)
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the stop took %v", d)
	}
	if st := <-held; st != http.StatusServiceUnavailable {
		t.Errorf("the held request was answered %d, want 503", st)
	}
}
