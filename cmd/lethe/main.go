// Command lethe serves the Azure Cosmos DB for NoSQL REST API over lethe
// stores, as the Cosmos DB emulator does: on https://localhost:8081/ with a
// self-signed certificate made at start, under the emulator's well-known
// key, so that the official SDKs connect to it unchanged. It is a module
// of its own (its metrics library stays out of lethe's requirements): run
// it from this directory, or with go -C cmd/lethe from the repository's.
//
//	go run .                                    # in memory, https://localhost:8081/
//	go run . -dir data                          # durable: each database a store under data/
//	go run . -http -addr :8080                  # plain HTTP
//	go run . -key <base64 key>                  # another master key
//	go run . -changefeed=false                  # containers without a change feed
//	go run . -cert c.pem -certkey k.pem         # your own certificate
//	go run . -cert-dir ~/.config/lethe          # in memory, the same certificate at every start
//	go run . -compute-addr ""                   # no compute gateway on :8903
//	go run . -addr :9081 -compute-addr :9903    # a second server beside the first
//	go run . -faults=false                      # no fault injection endpoint
//	go run . -max-conns 512                     # at most 512 connections at once
//	go run . -min-ranges 4                      # every partitioned container in 4 ranges
//
// Like the emulator, it serves the same data twice: as the routing gateway on
// -addr and as the compute gateway on -compute-addr, which read ids in
// request paths differently (see cosmosrest.Handler.ComputeGateway). The
// compute gateway follows -addr: by default it is on -addr's host at port
// 8903 when -addr is at port 8081 (as the emulator's are), and there is
// none for another -addr unless -compute-addr gives one. An address taken
// is an error naming the flag to set.
//
// At start it logs, a line each, where it serves (URLs to paste), the key
// (the emulator's well-known key, or that one was given: never its value),
// the storage, the data explorer's URL, the certificate's URL and file
// (in memory without -cert-dir, how to keep it across restarts instead),
// how to trust the certificate (system-wide, Node.js, Go), where the docs
// are, and last "lethe: ready". Each line is a fixed message with its
// values as attributes: in JSON (-log-format json), fields.
//
// Every container created keeps a change feed, as in Cosmos DB, bounded by
// -changefeed-max-changes and -changefeed-max-bytes.
//
// A partitioned container has partition key ranges as the service gives
// them: one a 10,000 RU/s of its own throughput (-range-throughput), one
// without; -min-ranges gives every partitioned container at least that
// many, so that tests exercise the SDKs' cross-range paths
// (cosmosrest.RangeConfig).
//
// SDK clients must trust the server's certificate, which it serves, as the
// emulator does, at /_explorer/emulator.pem:
//
//	curl -k https://localhost:8081/_explorer/emulator.pem > lethe.crt
//	cp lethe.crt /usr/local/share/ca-certificates/ && update-ca-certificates
//
// With -dir, the certificate is kept in the directory (lethe-cert.pem,
// lethe-key.pem) and served again at the next start, so that clients trust
// it once; in memory, it is made anew at every start, unless -cert-dir
// names a directory to keep it in (made, 0700, if missing; it wins over
// -dir for the certificate, and files there that do not make a pair are
// replaced). Servers starting at once with one such directory take turns
// with it and serve the pair it holds. -cert and -certkey (PEM files)
// serve the user's own instead, whatever -cert-dir says. The certificate
// names localhost, 127.0.0.1, ::1 and the machine's host name.
//
// Authorization: requests signed with the master key (type=master), and
// Microsoft Entra ID tokens as the emulator accepts them (type=aad, a JWT
// whose signature segment is the account key, base64url-encoded: the
// token the SDKs' emulator tests build). Other Entra ID tokens and resource
// tokens are refused with 401.
//
// Fault injection: POST /_lethe/faults, signed with the master key, adds a
// rule that makes matching requests fail as Cosmos DB fails (429 with a
// retry-after, 503, 408, 410, 500) or wait; see cosmosrest.Faults and the
// cosmosrest package documentation for its shape. -faults=false turns the
// endpoint and the rules off.
// What one client may hold is bounded: -max-conns connections at once over
// both gateways (2048; more wait in the backlog), -max-header-bytes of
// request header (32 KiB; 431 above it), -read-timeout to read a request
// and its body (1 minute), HTTP/2 frames of 16 KiB. An idle TLS connection
// costs the server about 40 KB; one stalled in the middle of its header or
// of a frame at most what these limits allow.
//
// Logs (log/slog, on standard error): -log-format text or json;
// -log-level info logs the start and the stop, warn and error what an
// operator must know (a torn end of a log cut at start, a disk full or
// failing, a failed checkpoint, a request failed on the server's side),
// debug one line per request besides: method, resource, operation,
// status, substatus, request charge, duration and activity id.
//
// Metrics: -metrics-addr serves /metrics in Prometheus's text format, on
// that listener alone, plain HTTP and without the master key: requests by
// operation and status and their request units, each container's items,
// expired items awaiting purge, purge lag, purged items, reaper RU and
// 429s, each database's log bytes, fsyncs, checkpoints and recovery.
//
// Every flag is also an environment variable, LETHE_ and its name in upper
// case, - as _ (LETHE_LOG_LEVEL); the command line wins. -help lists both.
//
// Tools in the same binary, on a data directory the server is not using:
//
//	lethe check -dir D     # every checksum; what the start would recover, cut or remove; changes nothing
//	lethe export -dir D    # JSON lines: databases, containers, live items with _ts and expiry instants
//	lethe import -dir D    # what export wrote, into a directory without databases
//	lethe version          # the module's version, or the commit built ("devel (commit ...)")
//
// Export writes containers in the names of Cosmos DB's REST resources (id,
// defaultTtl, partitionKey, indexingPolicy); import reads that and the
// format of older exports, with Go's names. On a directory a server holds,
// each tool says to stop the server first. A build Go does not stamp with
// its commit (go run) takes it from -ldflags:
//
//	go run -ldflags "-X main.commit=$(git rev-parse HEAD)" . version
//
// The Dockerfile at the repository's root builds the static binary into a
// distroless image, run as a non-root user, with the volume /data.
//
// SIGINT or SIGTERM stops the server gracefully: it finishes the requests
// under way, then closes the stores.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cmd/lethe/internal/explorer"
	"github.com/lethedb/lethe/cosmosrest"
)

func main() {
	log.SetFlags(0)
	if err := run(os.Args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		log.Fatalf("lethe: %v", err)
	}
}

// isSet reports whether the flag name of fs was set, on the command line
// or in the environment.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func run(args []string) error {
	if tool, ok := toolName(args); ok {
		return tool(args[1:])
	}
	fs := flag.NewFlagSet("lethe", flag.ContinueOnError)
	fs.SetOutput(helpOutput)
	addr := fs.String("addr", "localhost:8081", "the address to listen on")
	computeAddr := fs.String("compute-addr", "", "the address of the compute gateway, which reads ids in request paths as the emulator's port 8903 does (default: -addr's host on port 8903 when -addr is on port 8081, else none; \"\": none)")
	key := fs.String("key", cosmosrest.EmulatorKey, "the account's master key, base64 (default: the emulator's well-known key, "+cosmosrest.EmulatorKey+")")
	dir := fs.String("dir", "", "a directory to keep the databases in, durably (default: in memory)")
	plain := fs.Bool("http", false, "serve plain HTTP instead of HTTPS")
	certPath := fs.String("cert", "", "the server's certificate (chain), PEM; with -certkey (default: one made by lethe, kept in -cert-dir or -dir if given)")
	certKeyPath := fs.String("certkey", "", "the private key of -cert, PEM")
	certDir := fs.String("cert-dir", "", "a directory to keep the certificate lethe makes in ("+certFile+", "+certKeyFile+"), made if missing, so that clients trust it once, in memory too; it wins over -dir for the certificate, -cert over it (default: -dir if given, else a new certificate at every start)")
	feed := fs.Bool("changefeed", true, "give every container created a change feed, as Cosmos DB does")
	feedChanges := fs.Int("changefeed-max-changes", 0, "how many changes each container's change feed keeps (0: lethe's default, 1048576)")
	faults := fs.Bool("faults", true, "apply fault injection rules, set at /_lethe/faults with requests signed with the master key")
	feedBytes := fs.Int64("changefeed-max-bytes", 0, "how many bytes of changes each container's change feed keeps (0: lethe's default, 256 MiB)")
	minRanges := fs.Int("min-ranges", 0, "the fewest partition key ranges a partitioned container has, whatever its throughput, to exercise several ranges in tests (0: 1)")
	rangeRU := fs.Int("range-throughput", 0, "the RU/s of one partition key range when a container with throughput of its own is created: its throughput divided by this, rounded up, ranges (0: the service's 10000)")
	lim := limitFlags(fs)
	logf := addLogFlags(fs)
	rf := addRegionFlags(fs)
	metricsAddr := fs.String("metrics-addr", "", "an address to serve Prometheus metrics on, at /metrics, plain HTTP without the master key (\"\": none); never the API's")
	fs.Usage = usage(fs, "Usage: lethe [flags]\n       lethe check|export|import|version [flags]  (lethe <tool> -help)")
	if err := fromEnv(fs, os.LookupEnv); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := lim.check(); err != nil {
		return err
	}
	if err := rf.check(fs); err != nil {
		return err
	}
	logger, err := logf.logger()
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if !isSet(fs, "compute-addr") {
		*computeAddr = computeDefault(*addr)
	}

	cfg := cosmosrest.Config{Key: *key, Dir: *dir,
		ChangeFeed:   &lethe.ChangeFeedPolicy{MaxChanges: *feedChanges, MaxBytes: *feedBytes},
		NoChangeFeed: !*feed, Faults: faultRules(*faults), Logger: logger,
		Ranges: cosmosrest.RangeConfig{Min: *minRanges, Throughput: int32(min(*rangeRU, math.MaxInt32))}}
	var h *cosmosrest.Handler
	var rs *regionServers // with -regions
	if len(rf.names()) > 0 {
		if rs, err = openRegions(rf, cfg, *addr, logger); err != nil {
			return err
		}
		defer rs.close()
		h = rs.acct.Region(rs.acct.Regions()[0])
	} else {
		if h, err = cosmosrest.New(cfg); err != nil {
			return err
		}
		defer h.Close()
	}

	srv := &http.Server{
		Handler:     explorer.Mount(h, *key), // the data explorer at /_explorer/
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    serverErrorLog(logger), // with a hint when a client refuses the certificate
	}
	lim.apply(srv)
	scheme := "http"
	if *plain && (*certPath != "" || *certKeyPath != "") {
		return errors.New("-cert and -certkey are for HTTPS: drop -http")
	}
	if *plain && *certDir != "" {
		return errors.New("-cert-dir is for HTTPS: drop -http")
	}
	servedCert := "" // the certificate's file, "" for one made for this run
	var certPEM []byte
	if !*plain {
		cert, pem, file, err := loadCertificate(*certPath, *certKeyPath, *certDir, *dir)
		if err != nil {
			return err
		}
		certPEM = pem
		servedCert = file
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		srv.Handler = withCertificate(srv.Handler, certPEM)
		scheme = "https"
	}
	var ln net.Listener
	if rs == nil {
		if ln, err = listen("addr", *addr, "another server has it: set -addr to another address"); err != nil {
			return err
		}
	} else {
		ln = rs.listeners[0]
	}
	obs := []func(*served){}
	if o := logRequests(logger); o != nil {
		obs = append(obs, o)
	}
	ban := banner{endpoint: displayURL(scheme, *addr, ln.Addr()), custom: *key != cosmosrest.EmulatorKey, tls: !*plain}
	if rs != nil {
		ban.regions = rs.endpoints(scheme, *addr)
	}
	if *metricsAddr != "" {
		m := newMetrics(h)
		if rs != nil {
			m.reg.MustRegister(regionCollector{rs.acct})
		}
		maddr, stopMetrics, err := m.serve(*metricsAddr, logger)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopMetrics()
		obs = append(obs, m.observe)
		ban.metrics = displayURL("http", *metricsAddr, maddr) + "metrics"
	}
	srv.Handler = observe(srv.Handler, obs...)
	// The compute gateway: the same data, its own reading of request paths.
	var csrv *http.Server
	var cln net.Listener
	if *computeAddr != "" {
		if cln, err = listen("compute-addr", *computeAddr, `another server has it: set -compute-addr to another address, or -compute-addr "" for none`); err != nil {
			ln.Close()
			return err
		}
		ban.compute = displayURL(scheme, *computeAddr, cln.Addr())
		csrv = &http.Server{Handler: observe(h.ComputeGateway(), obs...), IdleTimeout: srv.IdleTimeout, ErrorLog: srv.ErrorLog,
			TLSConfig: srv.TLSConfig.Clone()} // each server sets up its own HTTP/2 in its TLS config
		lim.apply(csrv)
	}

	if *dir != "" {
		ban.dir = absPath(*dir)
	}
	switch {
	case *plain:
	case servedCert != "":
		ban.certFile = absPath(servedCert)
	default:
		ban.keepCert = configCertDir()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var servers []*http.Server
	var listeners []net.Listener
	if rs == nil {
		servers, listeners = []*http.Server{srv}, []net.Listener{ln}
	}
	if csrv != nil {
		servers, listeners = append(servers, csrv), append(listeners, cln)
	}
	slots := newConnSlots(lim.maxConns) // one count over both gateways
	for i := range listeners {
		listeners[i] = slots.listener(listeners[i])
	}
	serve := func(s *http.Server, ln net.Listener) error {
		if *plain {
			return s.Serve(ln)
		}
		return s.ServeTLS(ln, "", "")
	}
	errc := make(chan error, len(servers)+len(rf.names()))
	for i, s := range servers {
		go func() { errc <- serve(s, listeners[i]) }()
	}
	if rs != nil {
		// Each region's server is made as the first one (srv), with the
		// region's handler.
		rs.start(func(rh *cosmosrest.Handler) *http.Server {
			var x http.Handler = explorer.Mount(rh, *key)
			if certPEM != nil {
				x = withCertificate(x, certPEM)
			}
			s := &http.Server{Handler: observe(x, obs...), IdleTimeout: srv.IdleTimeout, ErrorLog: srv.ErrorLog, TLSConfig: srv.TLSConfig.Clone()}
			lim.apply(s)
			return s
		}, slots.listener, serve, errc)
	}
	ban.log(logger)
	select {
	case err := <-errc:
		for _, s := range servers {
			s.Close()
		}
		return err
	case <-ctx.Done():
	}
	stop() // a second signal ends the process at once
	logger.Info("lethe: shutting down: finishing the requests under way")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range servers {
		if err := s.Shutdown(shutdownCtx); err != nil {
			return fmt.Errorf("shutdown: %w", err)
		}
	}
	for range servers {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	if rs != nil {
		return rs.shutdown(shutdownCtx)
	}
	return h.Close()
}
