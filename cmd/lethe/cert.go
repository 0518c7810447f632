package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// The files in which a directory (-cert-dir, else -dir) keeps the
// server's certificate and its private key, so that clients that trust
// the certificate once keep trusting it across restarts.
const (
	certFile    = "lethe-cert.pem"
	certKeyFile = "lethe-key.pem"
)

// pemPath is where the server hands out its certificate, where the
// emulator hands out its own: clients download it and add it to their
// trust store.
const pemPath = "/_explorer/emulator.pem"

// certRenewBefore is how long before it expires a kept certificate is
// replaced by a new one at start.
const certRenewBefore = 30 * 24 * time.Hour

// loadCertificate returns the server's certificate and its PEM text:
//   - certPath and keyPath given (-cert, -certkey): the user's own, as it is;
//   - else certDir given (-cert-dir): the one kept in certDir, whether the
//     databases are in memory or not;
//   - else dir given (-dir): the one kept in dir;
//   - else one made for this run.
//
// file is the certificate's file, "" for one made for this run (the
// banner names it). See keptCertificate for how a directory keeps it.
func loadCertificate(certPath, keyPath, certDir, dir string) (cert tls.Certificate, certPEM []byte, file string, err error) {
	switch {
	case (certPath == "") != (keyPath == ""):
		return tls.Certificate{}, nil, "", errors.New("-cert and -certkey go together: give both or neither")
	case certPath != "":
		cert, certPEM, err = readCertificate(certPath, keyPath)
		return cert, certPEM, certPath, err
	case certDir != "":
		cert, certPEM, err = keptCertificate(certDir, true)
		return cert, certPEM, filepath.Join(certDir, certFile), err
	case dir != "":
		cert, certPEM, err = keptCertificate(dir, false)
		return cert, certPEM, filepath.Join(dir, certFile), err
	}
	cert, certPEM, err = newCertificate()
	return cert, certPEM, "", err
}

// keptCertificate returns the certificate kept in dir, made and kept there
// the first time (and again when it nears its end), dir made (0700) if
// missing. Files that do not make a certificate and its key (one torn, or
// one run's certificate beside another's key) are an error, or with
// replace (a directory for the certificate alone) replaced by a new pair.
//
// Servers starting at once with one dir take turns (lockDir): each serves
// the pair the files hold when it is done. Each file is written whole
// and renamed into place, the key first, so that a reader never finds
// part of a file, and finds a new certificate only beside its key.
func keptCertificate(dir string, replace bool) (tls.Certificate, []byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("the certificate's directory: %w", err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("the certificate's directory %s: %w", dir, err)
	}
	defer unlock()
	certPath, keyPath := filepath.Join(dir, certFile), filepath.Join(dir, certKeyFile)
	cert, certPEM, err := readCertificate(certPath, keyPath)
	var pairErr *pairError
	switch {
	case err == nil && time.Until(cert.Leaf.NotAfter) > certRenewBefore:
		return cert, certPEM, nil
	case err == nil, errors.Is(err, fs.ErrNotExist), replace && errors.As(err, &pairErr):
		// Made the first time, renewed, or replaced.
	default:
		return tls.Certificate{}, nil, err
	}
	cert, certPEM, keyPEM, err := makeCertificate()
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	// The key first: a certificate file is never there without its key.
	if err := writeFileSynced(keyPath, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, nil, err
	}
	if err := writeFileSynced(certPath, certPEM, 0o644); err != nil {
		return tls.Certificate{}, nil, err
	}
	return cert, certPEM, nil
}

// pairError is the error of readCertificate when the files it read do not
// make a certificate and its key: either is not PEM, is torn, or the key
// is not the certificate's.
type pairError struct {
	certPath, keyPath string
	err               error
}

func (e *pairError) Error() string {
	return fmt.Sprintf("the certificate %s and key %s: %v", e.certPath, e.keyPath, e.err)
}

func (e *pairError) Unwrap() error { return e.err }

// readCertificate reads a PEM certificate (chain) and its private key.
func readCertificate(certPath, keyPath string) (tls.Certificate, []byte, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("the certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("the certificate's key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, &pairError{certPath: certPath, keyPath: keyPath, err: err}
	}
	return cert, certPEM, nil
}

// newCertificate makes a certificate for this run alone.
func newCertificate() (tls.Certificate, []byte, error) {
	cert, certPEM, _, err := makeCertificate()
	return cert, certPEM, err
}

// makeCertificate makes a self-signed ECDSA P-256 certificate for
// localhost, 127.0.0.1 and ::1 (and the machine's name), valid for a year
// from now, and returns it with its PEM and its key's PEM.
func makeCertificate() (cert tls.Certificate, certPEM, keyPEM []byte, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return cert, nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return cert, nil, nil, err
	}
	names := []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
		names = append(names, h)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"lethe"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              names,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return cert, nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return cert, nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	return cert, certPEM, keyPEM, err
}

// writeFileSynced writes a file whole, through a temporary file of its
// own (in the same directory) renamed into place once synced, so that a
// crash, or another writer at once, leaves the old file or a new one,
// never part of one.
func writeFileSynced(path string, data []byte, perm os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// withCertificate serves the certificate's PEM at pemPath, without
// authorization (as the emulator serves its own), and every other request
// with h.
func withCertificate(h http.Handler, certPEM []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != pemPath {
			h.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Header().Set("Content-Disposition", `attachment; filename="emulator.pem"`)
		w.Write(certPEM)
	})
}
