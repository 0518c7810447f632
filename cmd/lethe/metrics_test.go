//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// scrape returns the text of a GET of url, which must answer 200 unsigned.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// value returns the value of the series name{labels} in a scrape (labels
// in the order Prometheus writes them: by name), or fails.
func value(t *testing.T, text, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no series %s in:\n%s", series, grepLethe(text))
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func grepLethe(text string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "lethe_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestMetricsEndpoint: -metrics-addr serves /metrics on a listener of its
// own, unsigned: the requests by operation and status, their charge, each
// durable database's log bytes, fsyncs and recovery; the API's listener
// does not serve it, and without the flag there is no such listener.
func TestMetricsEndpoint(t *testing.T) {
	base, logs, done := start(t, "-http", "-metrics-addr", "127.0.0.1:0", "-dir", t.TempDir())
	m := regexp.MustCompile(`msg="lethe: serving metrics" url=(http://\S+/metrics)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no metrics line: %s", logs.String())
	}
	metricsURL := m[1]
	for _, r := range []struct{ method, url, typ, link, body string }{
		{"POST", base + "dbs", "dbs", "", `{"id":"db"}`},
		{"POST", base + "dbs/db/colls", "colls", "dbs/db", `{"id":"c","partitionKey":{"paths":["/id"],"kind":"Hash"}}`},
		{"GET", base + "dbs/nope", "dbs", "dbs/nope", ""},
	} {
		resp, err := http.DefaultClient.Do(signed(t, r.method, r.url, r.typ, r.link, strings.NewReader(r.body)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	text := scrape(t, metricsURL)
	for series, want := range map[string]float64{
		`lethe_requests_total{operation="dbs.create",status="201"}`:   1,
		`lethe_requests_total{operation="colls.create",status="201"}`: 1,
		`lethe_requests_total{operation="dbs.read",status="404"}`:     1,
		`lethe_items{container="c",database="db"}`:                    0,
		`lethe_log_failed{database="db"}`:                             0,
	} {
		if got := value(t, text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	for _, series := range []string{`lethe_request_charge_total{operation="dbs.create"}`, `lethe_log_bytes_total{database="db"}`, `lethe_log_fsyncs_total{database="db"}`} {
		if value(t, text, series) <= 0 {
			t.Errorf("%s is not positive", series)
		}
	}
	value(t, text, `lethe_recovery_seconds{database="db"}`)
	if !strings.Contains(text, "go_goroutines") {
		t.Error("no Go runtime metrics")
	}
	// Not on the API's listener.
	resp, err := http.Get(base + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK || strings.Contains(string(b), "lethe_requests_total") {
		t.Errorf("the API's listener served /metrics: %d", resp.StatusCode)
	}
	stop(t, done)

	_, logs, done = start(t, "-http")
	stop(t, done)
	if strings.Contains(logs.String(), "metrics") {
		t.Errorf("metrics served without -metrics-addr: %s", logs.String())
	}
}

// TestMetricsStores: the stores' figures under a manual clock: items,
// expired items awaiting purge and the purge lag as they expire, the
// purged count and the reaper's request units once purged.
func TestMetricsStores(t *testing.T) {
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	h, err := cosmosrest.New(cosmosrest.Config{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, signed(t, "POST", "http://x/dbs", "dbs", "", strings.NewReader(`{"id":"db"}`)))
	if rec.Code != http.StatusCreated {
		t.Fatalf("create database: %d", rec.Code)
	}
	st, _ := h.Store("db")
	ctx := context.Background()
	c, err := st.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := c.CreateItem(ctx, lethe.NewPartitionKey(), fmt.Appendf(nil, `{"id":"i%d","ttl":%d}`, i, 5*(i+1)), nil); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(newMetricsHandler(newMetrics(h)))
	defer srv.Close()
	check := func(when string, want map[string]float64) {
		t.Helper()
		text := scrape(t, srv.URL+"/metrics")
		for name, v := range want {
			series := name + `{container="c",database="db"}`
			if got := value(t, text, series); got != v {
				t.Errorf("%s: %s = %v, want %v", when, series, got, v)
			}
		}
	}
	check("at first", map[string]float64{"lethe_items": 3, "lethe_expired_items_pending": 0, "lethe_purge_lag_seconds": 0, "lethe_purged_items_total": 0})
	clock.Advance(12 * time.Second) // i0 expired at 5 s, i1 at 10 s
	check("12 s on", map[string]float64{"lethe_items": 1, "lethe_expired_items_pending": 2, "lethe_purge_lag_seconds": 7})
	if _, err := h.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	check("purged", map[string]float64{"lethe_items": 1, "lethe_expired_items_pending": 0, "lethe_purge_lag_seconds": 0, "lethe_purged_items_total": 2})
	if v := value(t, scrape(t, srv.URL+"/metrics"), `lethe_reaper_charge_total{container="c",database="db"}`); v <= 0 {
		t.Errorf("reaper charge %v after a purge", v)
	}
}
