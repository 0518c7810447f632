package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// TestExportImportConflictPolicy: export keeps a container's conflict
// resolution policy that is not the default, and import gives it back.
func TestExportImportConflictPolicy(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	h, err := cosmosrest.New(cosmosrest.Config{Dir: src})
	if err != nil {
		t.Fatal(err)
	}
	if err := createDatabase(h, exportRecord{ID: "db"}); err != nil {
		t.Fatal(err)
	}
	st, _ := h.Store("db")
	for _, id := range []string{"custom", "plain"} {
		if _, err := st.CreateContainer(context.Background(), lethe.ContainerProperties{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	const custom = `{"mode":"Custom","conflictResolutionPath":"","conflictResolutionProcedure":"dbs/db/colls/custom/sprocs/merge"}`
	if err := h.SetConflictResolutionPolicy("db", "custom", json.RawMessage(custom)); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "export.jsonl")
	if _, err := runTool(t, "export", "-dir", src, "-o", file); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(file)
	if strings.Count(string(text), "conflictResolutionPolicy") != 1 {
		t.Errorf("the export keeps %d policies, want the one not the default:\n%s", strings.Count(string(text), "conflictResolutionPolicy"), text)
	}
	if _, err := runTool(t, "import", "-dir", dst, "-i", file); err != nil {
		t.Fatal(err)
	}
	h2, err := cosmosrest.New(cosmosrest.Config{Dir: dst})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	for coll, want := range map[string]string{"custom": custom, "plain": defaultConflictPolicy} {
		if got, ok := h2.ConflictResolutionPolicy("db", coll); !ok || string(got) != want {
			t.Errorf("%s imported with %s, want %s", coll, got, want)
		}
	}
}
