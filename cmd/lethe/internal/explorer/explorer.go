// Package explorer is the data explorer that cmd/lethe serves at
// /_explorer/, where the Cosmos DB emulator serves its own: a page, embedded
// in the binary and working offline, that shows a person what the server
// holds and what lethe does with time.
//
// The page lists databases and containers and edits a container's default
// time to live and throughput; lists items with their _ts and the time
// each has left, counting down, and drops an item when the server no
// longer has it; runs queries (over one partition key, or every partition
// key range of the container, one after another, a range split meanwhile
// read over its children: web/query.js) and shows their results, request
// charge and query metrics; draws when the container's items will expire; shows the
// reaper's backlog, purge lag and request units (the x-ms-lethe-reaper
// header of container reads); and follows the change feed, all versions
// and deletes, expiries marked. In an account of several regions (cmd/lethe
// -regions) it also shows the regions, each one's endpoint, state (up, or
// down and how; write), pending changes, replication lag and conflicts
// (the signed GET /_lethe/regions), and a container's conflicts feed in
// the region the page is served by, each conflict's losing version
// viewable; with one region it shows neither.
//
// It speaks the REST API the SDKs speak, on the same origin: the page signs
// every request in the browser (HMAC-SHA256 with WebCrypto over the
// string-to-sign of the REST API) with the key its user gives, so serving
// it opens no path around the master key. The handler serves static files
// and one of its own, config.json, which names the key only when the
// server runs with the emulator's well-known key (cosmosrest.EmulatorKey),
// public anyway, so that the page connects at once, without a click: that
// gives no one anything, for whoever can reach the page could sign with
// the public key anyway. With another key the user types it (Enter
// connects), and the tab remembers it in its session storage, so that a
// reload connects again, until Disconnect or the tab's end; the page
// stores nothing else.
//
// The page is plain HTML, CSS and JavaScript (web/), with no library and
// no build step: the chart is SVG drawn by hand. WebCrypto needs a secure
// context: HTTPS, or plain HTTP on a loopback address.
package explorer

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// Prefix is the path under which Mount serves the explorer.
const Prefix = "/_explorer/"

//go:embed web
var webFS embed.FS

// asset is one file the explorer serves.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves the explorer's files, at paths relative to Prefix.
type Handler struct {
	assets map[string]asset
}

// New returns a Handler for a server whose master key is key: its
// config.json names key only if it is cosmosrest.EmulatorKey.
func New(key string) *Handler {
	h := &Handler{assets: map[string]asset{}}
	sub, err := fs.Sub(webFS, "web")
	if err != nil {
		panic(err) // the embedded tree always has web/
	}
	err = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, name)
		if err != nil {
			return err
		}
		h.add(name, b)
		return nil
	})
	if err != nil {
		panic(err) // embedded files are always readable
	}
	var cfg struct {
		Key string `json:"key"`
	}
	if key == cosmosrest.EmulatorKey {
		cfg.Key = key
	}
	b, _ := json.Marshal(cfg)
	h.add("config.json", b)
	return h
}

func (h *Handler) add(name string, body []byte) {
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	sum := sha256.Sum256(body)
	h.assets[name] = asset{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// contentSecurityPolicy lets the page load only its own files and talk
// only to its own origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// ServeHTTP serves the file at r.URL.Path with Prefix removed: "" and
// "index.html" are the page.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, Prefix)
	if name == "" {
		name = "index.html"
	}
	a, ok := h.assets[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", a.ctype)
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", a.etag)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Content-Security-Policy", contentSecurityPolicy)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}

// Mount returns a handler that serves the explorer under Prefix (and
// redirects the prefix without its slash to it) and every other request
// with api, for a server whose master key is key.
func Mount(api http.Handler, key string) http.Handler {
	ex := New(key)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, Prefix):
			ex.ServeHTTP(w, r)
		case r.URL.Path == strings.TrimSuffix(Prefix, "/"):
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		default:
			api.ServeHTTP(w, r)
		}
	})
}
