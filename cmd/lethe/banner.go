package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// connectDocs is where lethe's documentation says more on connecting to
// it and trusting its certificate.
const connectDocs = "https://github.com/lethedb/lethe/blob/main/docs/connect.md"

// banner is what the server's start tells its user: where it serves and
// with which key, where it keeps the data, where the data explorer and the
// certificate are, and how to trust the certificate.
type banner struct {
	endpoint string // the routing gateway's URL
	regions  []any  // with -regions: each region's name and URL
	compute  string // the compute gateway's URL; "": none
	metrics  string // the metrics' URL; "": none
	custom   bool   // the key is not the emulator's
	dir      string // the data directory; "": in memory
	tls      bool
	certFile string // the certificate's file; "": none (made for this run)
	keepCert string // a directory to suggest for -cert-dir; "": none
}

// log writes the banner to l, one record a line (about 9 of them): each a
// fixed message and its values as attributes, so that the text format
// shows URLs and commands to paste, and the JSON format the same as
// fields. The last one, "lethe: ready", says that the server answers.
func (b banner) log(l *slog.Logger) {
	serving := []any{"endpoint", b.endpoint}
	if b.compute != "" {
		serving = append(serving, "compute_gateway", b.compute)
	}
	if b.custom {
		serving = append(serving, "key", "the one given (-key, LETHE_KEY), not shown")
	} else {
		serving = append(serving, "key", "the emulator's well-known key")
	}
	if b.dir == "" {
		serving = append(serving, "storage", "memory")
	} else {
		serving = append(serving, "storage", "durable", "dir", b.dir)
	}
	l.Info("lethe: serving the Cosmos DB REST API", serving...)
	if len(b.regions) > 0 {
		l.Info("lethe: regions", b.regions...)
	}
	l.Info("lethe: data explorer", "url", b.endpoint+"_explorer/")
	if b.metrics != "" {
		l.Info("lethe: serving metrics", "url", b.metrics)
	}
	if b.tls {
		pemURL := b.endpoint + pemPath[1:]
		file := b.certFile
		if file == "" {
			file = "lethe.pem"
			l.Info("lethe: certificate", "url", pemURL, "get", "curl -k -o lethe.pem "+pemURL)
		} else {
			l.Info("lethe: certificate", "url", pemURL, "file", file)
		}
		if b.keepCert != "" {
			l.Info("lethe: to keep the certificate across restarts", "flag", "-cert-dir "+b.keepCert, "env", envName("cert-dir")+"="+b.keepCert)
		}
		const trust = "lethe: to trust the certificate"
		l.Info(trust, "for", "Debian, Ubuntu (as root)", "run", "cp "+file+" /usr/local/share/ca-certificates/lethe.crt && update-ca-certificates")
		l.Info(trust, "for", "Node.js", "env", "NODE_EXTRA_CA_CERTS="+file)
		l.Info(trust, "for", "Go", "env", "SSL_CERT_FILE="+file, "or", "add it to the RootCAs (an x509.CertPool) of a tls.Config")
	}
	l.Info("lethe: more on connecting", "docs", connectDocs)
	l.Info("lethe: ready")
}

// configCertDir is the directory the banner suggests for -cert-dir: lethe
// in the user's configuration directory (os.UserConfigDir), or
// ~/.config/lethe if there is none.
func configCertDir() string {
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "lethe")
	}
	return "~/.config/lethe"
}

// displayURL is the URL of a listener on the address actual, opened for
// the address flag (-addr, -compute-addr) says, as a user pastes it: the
// host the flag names (localhost, not the address it resolved to; and
// localhost for none or an unspecified one, 0.0.0.0 or ::), the port the
// listener has (the real one for :0).
func displayURL(scheme, flag string, actual net.Addr) string {
	host, _, err := net.SplitHostPort(flag)
	if ip := net.ParseIP(host); err != nil || host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	_, port, err := net.SplitHostPort(actual.String())
	if err != nil {
		port = actual.String()
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/"
}

// absPath is path made absolute, so that a command naming it works from
// any directory; path as it is if it cannot be.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// computeDefault is the compute gateway's address when -compute-addr is
// not given: -addr's host on the emulator's port 8903 when -addr is on the
// emulator's 8081 (as the emulator, and the SDKs' emulator tests, have
// them), else none, so that a second server on another -addr does not
// reach for the first one's compute gateway.
func computeDefault(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "8081" {
		return ""
	}
	return net.JoinHostPort(host, "8903")
}

// listenError is a failure to listen on the address of a flag; when the
// address is taken, it says what to set instead.
type listenError struct {
	flag, addr, hint string
	err              error
}

func (e *listenError) Error() string {
	msg := fmt.Sprintf("-%s (%s) %s: %v", e.flag, envName(e.flag), e.addr, e.err)
	if errors.Is(e.err, syscall.EADDRINUSE) {
		msg += ": " + e.hint
	}
	return msg
}

func (e *listenError) Unwrap() error { return e.err }

// listen listens on addr, the address of flag; hint says what to do
// should another have it.
func listen(flag, addr, hint string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &listenError{flag: flag, addr: addr, hint: hint, err: err}
	}
	return ln, nil
}
