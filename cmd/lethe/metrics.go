package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the command's Prometheus metrics: the requests it served,
// counted as they are answered, and what the stores say of themselves,
// read at every scrape (Container.Stats, Store.Stats, Store.Recovery scan
// nothing). They are served at /metrics on a listener of their own
// (-metrics-addr), without the master key: only there, never on the API's.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	charge   *prometheus.CounterVec
}

func newMetrics(h *cosmosrest.Handler) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lethe_requests_total",
			Help: "Requests served, by operation (kind.verb: docs.create, docs.query, ...) and status code."}, []string{"operation", "status"}),
		charge: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lethe_request_charge_total",
			Help: "Request units charged to requests, by operation."}, []string{"operation"}),
	}
	m.reg.MustRegister(m.requests, m.charge, storeCollector{h},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe counts one request served.
func (m *metrics) observe(s *served) {
	m.requests.WithLabelValues(s.operation, strconv.Itoa(s.status)).Inc()
	if s.charge > 0 {
		m.charge.WithLabelValues(s.operation).Add(s.charge)
	}
}

// serve serves /metrics on addr until stop is called; it returns the
// address it listens on.
func (m *metrics) serve(addr string, logger *slog.Logger) (bound net.Addr, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: newMetricsHandler(m), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("lethe: the metrics listener failed", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return ln.Addr(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// newMetricsHandler serves m at /metrics, and nothing else.
func newMetricsHandler(m *metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	return mux
}

// The stores' metrics, by database and container.
var (
	labelsDB        = []string{"database"}
	labelsContainer = []string{"database", "container"}

	descItems   = prometheus.NewDesc("lethe_items", "Live items.", labelsContainer, nil)
	descBytes   = prometheus.NewDesc("lethe_item_bytes", "The JSON size of the live items, with _ts and _etag.", labelsContainer, nil)
	descExpired = prometheus.NewDesc("lethe_expired_items_pending",
		"Items expired (invisible to every operation) and not yet purged.", labelsContainer, nil)
	descPurgeLag = prometheus.NewDesc("lethe_purge_lag_seconds",
		"Now minus the expiry of the oldest expired item not yet purged; 0 if none.", labelsContainer, nil)
	descPurged = prometheus.NewDesc("lethe_purged_items_total",
		"Expired items removed since the store opened (by the reaper, or a write that replaced one).", labelsContainer, nil)
	descReaperRU = prometheus.NewDesc("lethe_reaper_charge_total",
		"Request units the reaper spent purging, out of the throughput users left.", labelsContainer, nil)
	descThrottled = prometheus.NewDesc("lethe_throttled_total", "User operations refused with 429.", labelsContainer, nil)
	descFeed      = prometheus.NewDesc("lethe_change_feed_changes", "Changes the change feed holds.", labelsContainer, nil)

	descLogBytes    = prometheus.NewDesc("lethe_log_bytes_total", "Bytes written to the database's write-ahead log since it opened.", labelsDB, nil)
	descLogSyncs    = prometheus.NewDesc("lethe_log_fsyncs_total", "Fsyncs of the database's write-ahead log since it opened.", labelsDB, nil)
	descCheckpoints = prometheus.NewDesc("lethe_checkpoints_total", "Snapshots of the database written since it opened.", labelsDB, nil)
	descLogFailed   = prometheus.NewDesc("lethe_log_failed",
		"1 if the database's log failed (its disk full or failing): it refuses writes until the server restarts, or, when its disk was full, until there is room again.", labelsDB, nil)
	descRecovery = prometheus.NewDesc("lethe_recovery_seconds",
		"How long the database's recovery took when the server started (0 in memory).", labelsDB, nil)
	descRecovered = prometheus.NewDesc("lethe_recovered_items", "Live items its recovery brought back.", labelsDB, nil)
	descTorn      = prometheus.NewDesc("lethe_recovery_torn_bytes",
		"Bytes of a torn end of the log its recovery cut off (a write never acknowledged).", labelsDB, nil)
)

// storeCollector reads the stores' figures at each scrape. It is an
// unchecked collector: its series come and go with databases and
// containers.
type storeCollector struct{ h *cosmosrest.Handler }

func (storeCollector) Describe(chan<- *prometheus.Desc) {}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for _, db := range c.h.DatabaseIDs() {
		st, ok := c.h.Store(db)
		if !ok {
			continue // deleted meanwhile
		}
		ss, ri := st.Stats(), st.Recovery()
		counter(descLogBytes, float64(ss.LogBytes), db)
		counter(descLogSyncs, float64(ss.LogSyncs), db)
		counter(descCheckpoints, float64(ss.Checkpoints), db)
		gauge(descLogFailed, bool01(ss.LogFailed), db)
		gauge(descRecovery, ri.Duration.Seconds(), db)
		gauge(descRecovered, float64(ri.Items), db)
		gauge(descTorn, float64(ri.TornBytes), db)
		for _, id := range st.ContainerIDs() {
			ct, err := st.Container(id)
			if err != nil {
				continue
			}
			cs := ct.Stats()
			gauge(descItems, float64(cs.Items), db, id)
			gauge(descBytes, float64(cs.Bytes), db, id)
			gauge(descExpired, float64(cs.ExpiredPending), db, id)
			gauge(descPurgeLag, cs.PurgeLag.Seconds(), db, id)
			counter(descPurged, float64(cs.Purged), db, id)
			counter(descReaperRU, cs.ReaperCharge, db, id)
			counter(descThrottled, float64(cs.Throttled), db, id)
			gauge(descFeed, float64(cs.FeedChanges), db, id)
		}
	}
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
