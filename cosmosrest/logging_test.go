package cosmosrest

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lethedb/lethe"
)

// TestLogFailures: a request that fails on the server's side (a store's
// 503, its disk failing; a 500) is logged at error with the request and
// the cause; a client's error, a 429 or a 404, is not.
func TestLogFailures(t *testing.T) {
	var out bytes.Buffer
	h, err := New(Config{Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, tc := range []struct {
		err    error
		logged bool
	}{
		{&lethe.Error{StatusCode: 503, Message: "the disk failed", Err: syscall.EIO}, true},
		{errors.New("something broke"), true},
		{&lethe.Error{StatusCode: 429, Message: "too many"}, false},
		{&lethe.Error{StatusCode: 404, Message: "not there"}, false},
		{&lethe.Error{StatusCode: 400, Message: "bad"}, false},
	} {
		out.Reset()
		q := &request{h: h, w: httptest.NewRecorder(), r: httptest.NewRequest(http.MethodPost, "/dbs/d/colls/c/docs", nil)}
		q.fail(tc.err, 0, 0)
		line := out.String()
		if !tc.logged {
			if line != "" {
				t.Errorf("%v logged: %s", tc.err, line)
			}
			continue
		}
		for _, want := range []string{"level=ERROR", "failed on the server's side", "method=POST", "path=/dbs/d/colls/c/docs", tc.err.Error()} {
			if !strings.Contains(line, want) {
				t.Errorf("%v: %q lacks %q", tc.err, line, want)
			}
		}
	}
}

// TestLogRecovery: a database whose log had a torn end is named in the
// warning its store logs at New; with debug on, every database's recovery
// is logged.
func TestLogRecovery(t *testing.T) {
	dir := t.TempDir()
	h, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	q := &request{h: h, w: rec, r: httptest.NewRequest(http.MethodPost, "/dbs", nil), body: []byte(`{"id":"torn db"}`)}
	q.createDatabase()
	if rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	// A torn end is what a crash leaves (a segment a store closed is
	// sealed in its manifest): tear a copy taken while the server runs.
	crashed := t.TempDir()
	copyTree(t, dir, crashed)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	dir = crashed
	segs, _ := filepath.Glob(filepath.Join(dir, dbDirName("torn db"), "store", "wal-*.log"))
	if len(segs) == 0 {
		t.Fatal("no log segment")
	}
	last := segs[len(segs)-1]
	b, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(last, append(b, 9, 9), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	h, err = New(Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, want := range []string{`level=WARN msg="lethe: recovery cut a torn end off the log`, `database="torn db"`, "bytes=2",
		`level=DEBUG msg="cosmosrest: database recovered" database="torn db"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("log %q lacks %q", out.String(), want)
		}
	}
}

// copyTree copies the directory from into to, as a crash would leave it
// (the lock files left out).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if d.Name() == "LOCK" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
