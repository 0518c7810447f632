package cosmosrest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConflictsFilesDamaged: a database whose conflicts file, or conflict
// policies file, is damaged is reported by CheckDir and not served by New
// (503), as a damaged ranges file is.
func TestConflictsFilesDamaged(t *testing.T) {
	for _, tc := range []struct{ file, text string }{
		{conflictsFile, `[{"coll":"c","num":1,"partitionKey":"not a key","id":"x","etag":"e","resource":{},"key":"write:1"}]`},
		{conflictsFile, `{`},
		{conflictPoliciesFile, `[1]`},
	} {
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
		if err := os.WriteFile(filepath.Join(dir, dbDirName("good"), tc.file), []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		dbs, _, err := CheckDir(dir)
		if err != nil || len(dbs) != 1 || dbs[0].Err == nil || !strings.Contains(dbs[0].Err.Error(), tc.file) {
			t.Errorf("%s %s: CheckDir %+v %v", tc.file, tc.text, dbs, err)
		}
		h, err = New(Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		h.mu.Lock()
		unavailable := h.unavailableLocked("good")
		h.mu.Unlock()
		if unavailable == nil {
			t.Errorf("%s %s: the database is served", tc.file, tc.text)
		}
		h.Close()
	}
}
