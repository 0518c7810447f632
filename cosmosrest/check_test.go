package cosmosrest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckDir: CheckDir reports each database (its id and recovery, or
// why it cannot be opened) and the leftovers New would remove, and
// removes nothing.
func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	h, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	(&request{h: h, w: rec, r: httptest.NewRequest(http.MethodPost, "/dbs", nil), body: []byte(`{"id":"good"}`)}).createDatabase()
	if rec.Code != http.StatusCreated {
		t.Fatal(rec.Code)
	}
	h.Close()
	for _, d := range []string{".tmp-db-1", "db-nometa", "db-damaged"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "db-damaged", metaFile), []byte(`{"id":"other"}`), 0o644)

	dbs, leftovers, err := CheckDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(leftovers) != 2 || leftovers[0] != filepath.Join(dir, ".tmp-db-1") || leftovers[1] != filepath.Join(dir, "db-nometa") {
		t.Errorf("leftovers %v", leftovers)
	}
	if len(dbs) != 2 {
		t.Fatalf("%d databases: %+v", len(dbs), dbs)
	}
	for _, d := range dbs {
		switch d.Dir {
		case filepath.Join(dir, "db-damaged"):
			if d.Err == nil || d.ID != "" {
				t.Errorf("the damaged one: %+v", d)
			}
		case filepath.Join(dir, dbDirName("good")):
			if d.Err != nil || d.ID != "good" || d.Recovery.Segments != 1 {
				t.Errorf("the good one: %+v", d)
			}
		default:
			t.Errorf("unexpected %+v", d)
		}
	}
	for _, d := range []string{".tmp-db-1", "db-nometa"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}
