package explorer

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w
}

// TestConfigKey: config.json names the key only when it is the emulator's
// well-known one; any other key stays on the server.
func TestConfigKey(t *testing.T) {
	for _, tc := range []struct {
		name, key, want string
	}{
		{"emulator key", cosmosrest.EmulatorKey, cosmosrest.EmulatorKey},
		{"own key", "c2VjcmV0LWtleS1vZi10aGlzLWFjY291bnQ=", ""},
		{"empty key", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := get(t, New(tc.key), "GET", Prefix+"config.json")
			var cfg struct{ Key string }
			if err := json.Unmarshal(w.Body.Bytes(), &cfg); err != nil || w.Code != 200 {
				t.Fatalf("config.json: %d %q %v", w.Code, w.Body, err)
			}
			if cfg.Key != tc.want {
				t.Errorf("key %q, want %q", cfg.Key, tc.want)
			}
			if tc.want == "" && tc.key != "" && strings.Contains(w.Body.String(), tc.key) {
				t.Errorf("config.json shows the server's own key: %s", w.Body)
			}
		})
	}
}

// TestMount: the explorer's files under Prefix, with their types and a
// policy that keeps the page to its own origin; the prefix without its
// slash redirected; everything else to the API.
func TestMount(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-API", "1")
		w.WriteHeader(http.StatusTeapot)
	})
	h := Mount(api, cosmosrest.EmulatorKey)
	for _, tc := range []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/_explorer/", 200, "text/html; charset=utf-8"},
		{"GET", "/_explorer/index.html", 200, "text/html; charset=utf-8"},
		{"HEAD", "/_explorer/index.html", 200, "text/html; charset=utf-8"},
		{"GET", "/_explorer/app.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/_explorer/cosmos.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/_explorer/chart.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/_explorer/explorer.css", 200, "text/css; charset=utf-8"},
		{"GET", "/_explorer/config.json", 200, "application/json"},
		{"GET", "/_explorer/missing.js", 404, ""},
		{"GET", "/_explorer/emulator.pem", 404, ""}, // the command serves it before the explorer, over HTTPS
		{"POST", "/_explorer/index.html", 405, ""},
		{"GET", "/_explorer", 301, ""},
		{"GET", "/dbs", 418, ""},
		{"GET", "/", 418, ""},
	} {
		w := get(t, h, tc.method, tc.path)
		if w.Code != tc.status {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, w.Code, tc.status)
			continue
		}
		if tc.status == 418 != (w.Header().Get("X-API") == "1") {
			t.Errorf("%s %s: served by the API: %v", tc.method, tc.path, w.Header().Get("X-API") == "1")
		}
		if tc.status != 200 {
			continue
		}
		if ct := w.Header().Get("Content-Type"); ct != tc.ctype {
			t.Errorf("%s %s: Content-Type %q, want %q", tc.method, tc.path, ct, tc.ctype)
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("%s %s: Content-Security-Policy %q", tc.method, tc.path, csp)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("ETag") == "" {
			t.Errorf("%s %s: headers %v", tc.method, tc.path, w.Header())
		}
	}
	if loc := get(t, h, "GET", "/_explorer").Header().Get("Location"); loc != "/_explorer/" {
		t.Errorf("redirect to %q", loc)
	}
}

// TestOffline: the page loads nothing from elsewhere (no CDN, no font
// service): no asset names an absolute URL but the SVG namespace, and
// everything index.html and the modules load is embedded.
func TestOffline(t *testing.T) {
	h := New(cosmosrest.EmulatorKey)
	url := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^\s"'` + "`" + `)]*`)
	err := fs.WalkDir(webFS, "web", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(webFS, name)
		if err != nil {
			return err
		}
		for _, u := range url.FindAllString(string(b), -1) {
			if u != "http://www.w3.org/2000/svg" {
				t.Errorf("%s names %s", name, u)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"|from "\./([^"]+)"`)
	for _, page := range []string{"index.html", "app.js"} {
		for _, m := range refs.FindAllStringSubmatch(string(h.assets[page].body), -1) {
			ref := m[1] + m[2]
			if strings.HasPrefix(ref, "data:") || ref == "#" {
				continue
			}
			if _, ok := h.assets[ref]; !ok {
				t.Errorf("%s loads %s, which is not embedded", page, ref)
			}
		}
	}
}

// TestQueryEveryRange: the query tab's Query (web/query.js), run by node
// with the page's Client against a server, reads a query over every
// partition key range of a container of several, one after another, page
// by page, each item once; over one partition key, that partition only;
// an aggregate, once per range; and a range split while it is read, from
// its continuation over its children, each item still once.
func TestQueryEveryRange(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node to run the page's modules")
	}
	api, err := cosmosrest.New(cosmosrest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	srv := httptest.NewServer(Mount(api, cosmosrest.EmulatorKey))
	t.Cleanup(srv.Close)
	cmd := exec.Command(node, "testdata/query.mjs")
	cmd.Env = append(os.Environ(), "LETHE_URL="+srv.URL, "LETHE_KEY="+cosmosrest.EmulatorKey)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	type read struct {
		Docs       []json.RawMessage
		Ranges     []string
		Pages      int
		RangeCount int
	}
	var res struct{ All, Key, Count, Split read }
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var want []string
	for i := range 60 {
		want = append(want, strconv.Itoa(i))
	}
	ids := func(r read) []string {
		var out []string
		for _, d := range r.Docs {
			var doc struct{ ID string }
			if err := json.Unmarshal(d, &doc); err != nil {
				t.Fatal(err)
			}
			out = append(out, doc.ID)
		}
		slices.SortFunc(out, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
		return out
	}
	distinct := func(ranges []string) []string {
		out := slices.Clone(ranges)
		slices.Sort(out)
		return slices.Compact(out)
	}
	if got := ids(res.All); !slices.Equal(got, want) {
		t.Errorf("every range: %v", got)
	}
	if r := distinct(res.All.Ranges); !slices.Equal(r, []string{"0", "1", "2", "3"}) || res.All.RangeCount != 4 || res.All.Pages < 9 {
		t.Errorf("every range: from the ranges %v of %d, in %d pages", r, res.All.RangeCount, res.All.Pages)
	}
	if got := ids(res.Key); !slices.Equal(got, []string{"3"}) || !slices.Equal(res.Key.Ranges, []string{""}) {
		t.Errorf("one partition key: %v from %v", got, res.Key.Ranges)
	}
	sum := 0
	for _, d := range res.Count.Docs {
		n, _ := strconv.Atoi(string(d))
		sum += n
	}
	if len(res.Count.Docs) != 4 || sum != 60 {
		t.Errorf("COUNT(1) over every range: %s", res.Count.Docs)
	}
	if got := ids(res.Split); !slices.Equal(got, want) {
		t.Errorf("a range split while read: %v", got)
	}
	if r := distinct(res.Split.Ranges); !slices.Equal(r, []string{"0", "1", "2", "3", "4", "5"}) || res.Split.RangeCount != 5 {
		t.Errorf("a range split while read: from the ranges %v of %d", r, res.Split.RangeCount)
	}
}
