//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// runTool runs lethe with args and returns what it printed.
func runTool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	toolOutput = &out
	t.Cleanup(func() { toolOutput = os.Stdout })
	err := run(args)
	return out.String(), err
}

// fill makes, in dir, through a handler on clock, the database db (400
// RU/s shared) with the container c (default TTL 100 s, partitioned by
// /pk, 500 RU/s of its own) holding four items, and the container h
// (hierarchical key, no TTL, an indexing policy) holding one.
func fill(t *testing.T, dir string, clock *lethe.ManualClock) {
	t.Helper()
	if err := fillOpen(t, dir, clock).Close(); err != nil {
		t.Fatal(err)
	}
}

// fillOpen is fill, leaving the handler open.
func fillOpen(t *testing.T, dir string, clock *lethe.ManualClock) *cosmosrest.Handler {
	t.Helper()
	h, err := cosmosrest.New(cosmosrest.Config{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := createDatabase(h, exportRecord{ID: "db", Throughput: 400}); err != nil {
		t.Fatal(err)
	}
	st, _ := h.Store("db")
	ctx := context.Background()
	c, err := st.CreateContainer(ctx, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 100, Throughput: 500,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
	if err != nil {
		t.Fatal(err)
	}
	hc, err := st.CreateContainer(ctx, lethe.ContainerProperties{ID: "h",
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/t", "/u/v"}},
		IndexingPolicy: &lethe.IndexingPolicy{IndexingMode: lethe.IndexingModeConsistent, ExcludedPaths: []lethe.IndexPath{{Path: "/u/*"}},
			CompositeIndexes: [][]lethe.CompositeIndex{{{Path: "/t"}, {Path: "/n", Order: lethe.CompositeIndexDescending}}}}})
	if err != nil {
		t.Fatal(err)
	}
	put := func(c *lethe.Container, pk lethe.PartitionKey, doc string) {
		if _, err := c.CreateItem(ctx, pk, []byte(doc), nil); err != nil {
			t.Fatal(err)
		}
	}
	put(c, lethe.NewPartitionKeyString("p"), `{"id":"gone","pk":"p","ttl":1}`) // expired before the export
	put(c, lethe.NewPartitionKeyString("p"), `{"id":"inherits","pk":"p","n":1}`)
	clock.Advance(1500 * time.Millisecond)
	put(c, lethe.NewPartitionKeyNumber(7), `{"id":"own","pk":7,"ttl":1000}`)
	clock.Advance(333 * time.Microsecond)
	put(c, lethe.NewPartitionKey().AppendNone(), `{"id":"never","ttl":-1}`)
	put(hc, lethe.NewPartitionKeyString("a").AppendBool(true), `{"id":"deep","t":"a","u":{"v":true}}`)
	return h
}

// snapshot describes what a data directory serves at clock's instant
// (nil: now): each container's properties, each item's JSON and expiry
// instant.
func snapshot(t *testing.T, dir string, clock lethe.Clock) map[string]string {
	t.Helper()
	h, err := cosmosrest.New(cosmosrest.Config{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	out := map[string]string{}
	for _, id := range h.DatabaseIDs() {
		st, _ := h.Store(id)
		thr, auto := st.Throughput()
		out[id] = fmt.Sprint(thr, auto)
		for _, cid := range st.ContainerIDs() {
			c, _ := st.Container(cid)
			p, _ := c.Read(ctx)
			b, _ := json.Marshal(p)
			out[id+"/"+cid] = string(b)
			for doc, err := range c.QueryItems(ctx, "SELECT * FROM c", lethe.NewPartitionKey(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				var f itemFields
				json.Unmarshal(doc, &f)
				pk, _ := partitionKeyOf(p.PartitionKeyDefinition, doc)
				exp, ok, err := c.ItemExpiry(ctx, pk, f.ID)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				json.Unmarshal(doc, &m)
				delete(m, "_etag")
				b, _ := json.Marshal(m)
				out[id+"/"+cid+"/"+f.ID] = fmt.Sprintf("%s expires %v %d", b, ok, exp.UnixNano())
			}
		}
	}
	return out
}

// TestExportImport: what export writes, import brings back into another
// directory: the databases with their throughput, the containers with
// their settings, every live item with its JSON, its _ts and its expiry
// to the nanosecond; an item expired before the export is not in it, one
// expired since is left out; import refuses a directory with databases.
func TestExportImport(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	start := time.Now().Add(-10 * time.Second).Truncate(time.Second).Add(123456789) // a fraction of a second
	fill(t, src, lethe.NewManualClock(start))
	want := snapshot(t, src, nil)
	if _, ok := want["db/c/gone"]; ok {
		t.Fatal("the expired item is live")
	}

	file := filepath.Join(t.TempDir(), "export.jsonl")
	if _, err := runTool(t, "export", "-dir", src, "-o", file); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimSpace(string(text)), "\n")
	if len(lines) != 1+1+2+4 || !strings.Contains(lines[0], `"kind":"lethe-export"`) {
		t.Fatalf("export: %d lines:\n%s", len(lines), text)
	}
	// The containers in the names of Cosmos DB's REST resources.
	for _, want := range []string{`"properties":{"id":"c","defaultTtl":100,"partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}},"changeFeed":{"maxChanges":1048576,"maxBytes":268435456}`,
		`"throughput":500`, `"indexingPolicy":{"indexingMode":"consistent","excludedPaths":[{"path":"/u/*"}],"compositeIndexes":[[{"path":"/t"},{"path":"/n","order":"descending"}]]}`} {
		if !strings.Contains(string(text), want) {
			t.Errorf("export lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(string(text), `"ID"`) || strings.Contains(string(text), "DefaultTimeToLive") {
		t.Errorf("export in Go's names:\n%s", text)
	}
	var own exportRecord
	for _, l := range lines {
		if strings.Contains(l, `"id":"own"`) {
			json.Unmarshal([]byte(l), &own)
		}
	}
	wantWritten := start.Add(1500 * time.Millisecond)
	if own.Written == nil || !own.Written.Equal(wantWritten) || own.Expires == nil || !own.Expires.Equal(wantWritten.Add(1000*time.Second)) ||
		own.TTLLeft == nil || *own.TTLLeft < 900 || *own.TTLLeft > 1000 || own.TS != wantWritten.Unix() {
		t.Errorf("the item own: %+v (written %v)", own, own.Written)
	}

	out, err := runTool(t, "import", "-dir", dst, "-i", file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "imported 1 databases, 4 items") {
		t.Errorf("import said %q", out)
	}
	got := snapshot(t, dst, nil)
	if len(got) != len(want) {
		t.Errorf("imported %d things, want %d:\n%v\n%v", len(got), len(want), got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], v)
		}
	}

	// Into a directory with databases: refused, nothing changed.
	if _, err := runTool(t, "import", "-dir", dst, "-i", file); err == nil || !strings.Contains(err.Error(), "already holds databases") {
		t.Errorf("a second import: %v", err)
	}

	// An item that expired between the export and the import is left out.
	dbs, items, err := readExport(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	n, expired, err := importAll(t.TempDir(), dbs, items, start.Add(101*time.Second))
	if err != nil || n != 3 || expired != 1 {
		t.Errorf("import after the first expiry: %d written, %d expired, %v", n, expired, err)
	}
}

// TestImportVersion1: import reads the format export wrote before it
// spoke the REST resources' names (version 1: lethe.ContainerProperties
// with Go's names), testdata/export-v1.jsonl, which that export wrote of
// what fill makes: it brings back what fill made.
func TestImportVersion1(t *testing.T) {
	start := time.Date(2026, 11, 25, 17, 0, 0, 123456789, time.UTC)
	at := start.Add(2 * time.Second) // the file's "at"
	src := t.TempDir()
	fill(t, src, lethe.NewManualClock(start))
	want := snapshot(t, src, lethe.NewManualClock(at))

	f, err := os.Open(filepath.Join("testdata", "export-v1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dbs, items, err := readExport(f)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if n, expired, err := importAll(dst, dbs, items, at); err != nil || n != 4 || expired != 0 {
		t.Fatalf("import: %d written, %d expired, %v", n, expired, err)
	}
	got := snapshot(t, dst, lethe.NewManualClock(at))
	if len(got) != len(want) {
		t.Errorf("imported %d things, want %d:\n%v\n%v", len(got), len(want), got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], v)
		}
	}
}

// TestImportBadInput: input that is not an export is refused, naming the
// line.
func TestImportBadInput(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "empty",
		`{"kind":"database","id":"d"}`: "header",
		"{\"kind\":\"lethe-export\",\"version\":1}\nnot json":                                                                                            "line 2",
		"{\"kind\":\"lethe-export\",\"version\":9}":                                                                                                      "version",
		"{\"kind\":\"lethe-export\",\"version\":1}\n{\"kind\":\"container\",\"database\":\"x\",\"properties\":{}}":                                       "line 2 (container)",
		"{\"kind\":\"lethe-export\",\"version\":1}\n{\"kind\":\"database\",\"id\":\"d\"}\n{\"kind\":\"item\",\"database\":\"d\",\"container\":\"c\"}":    "line 3 (item)",
		"{\"kind\":\"lethe-export\",\"version\":1}\n{\"kind\":\"table\"}":                                                                                "not a kind",
		"{\"kind\":\"lethe-export\",\"version\":2}\n{\"kind\":\"database\",\"id\":\"d\"}\n{\"kind\":\"container\",\"database\":\"d\",\"properties\":[]}": "line 3 (container): its properties",
	} {
		_, _, err := readExport(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", in, err, want)
		}
	}
}

// TestCheckTool: check reports each database's recovery and what it would
// repair, changes no file, fails on a damaged database and on a directory
// in use, as export and import do, saying to stop the server.
func TestCheckTool(t *testing.T) {
	// A torn end is what a crash leaves (a segment a store closed is sealed
	// in its manifest): check a copy of the directory taken while it runs.
	running := t.TempDir()
	h := fillOpen(t, running, lethe.NewManualClock(time.Now().Add(-10*time.Second)))
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(running)); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	locks, _ := filepath.Glob(filepath.Join(dir, "*", "*", "LOCK"))
	locks = append(locks, filepath.Join(dir, "LOCK"))
	for _, l := range locks {
		os.Remove(l)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "db-*", "store", "wal-*.log"))
	last := segs[len(segs)-1]
	b, _ := os.ReadFile(last)
	os.WriteFile(last, append(b, 1, 2, 3), 0o644)
	before := treeOf(t, dir)

	out, err := runTool(t, "check", "-dir", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{`database "db"`, "ok: snapshot none, 1 log segments", "checksums good", "would recover 4 live items",
		"would drop 1 items expired by now", "would cut 3 bytes off the end of " + filepath.Base(last)} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	if after := treeOf(t, dir); !equalTrees(before, after) {
		t.Error("check changed the directory")
	}

	// A damaged meta file: reported, exit status 1.
	os.MkdirAll(filepath.Join(dir, "db-0000"), 0o755)
	os.WriteFile(filepath.Join(dir, "db-0000", "database.json"), []byte("{"), 0o644)
	out, err = runTool(t, "check", "-dir", dir)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 databases damaged") || !strings.Contains(out, "DAMAGED") {
		t.Errorf("a damaged database: %v\n%s", err, out)
	}
	os.RemoveAll(filepath.Join(dir, "db-0000"))

	// In use by a server.
	h, err = cosmosrest.New(cosmosrest.Config{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// Each tool on it says to stop the server.
	file := filepath.Join(t.TempDir(), "export.jsonl")
	os.WriteFile(file, []byte("{\"kind\":\"lethe-export\",\"version\":2}\n"), 0o644)
	for _, tool := range [][]string{{"check"}, {"export", "-o", os.DevNull}, {"import", "-i", file}} {
		_, err := runTool(t, append(tool, "-dir", dir)...)
		if !errors.Is(err, lethe.ErrLocked) || !strings.Contains(err.Error(), "stop the server (or whatever else holds it) first") ||
			!strings.HasPrefix(err.Error(), tool[0]+": ") {
			t.Errorf("%s on a directory in use: %v", tool[0], err)
		}
	}
	if _, err := runTool(t, "check"); err == nil || !strings.Contains(err.Error(), "-dir is required") {
		t.Errorf("no -dir: %v", err)
	}
}

func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(path)
			tree[path] = string(b)
		}
		return nil
	})
	return tree
}

func equalTrees(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestVersion: lethe version names the command's version, the Go release
// and the platform.
func TestVersion(t *testing.T) {
	out, err := runTool(t, "version")
	if err != nil || !strings.HasPrefix(out, "lethe ") || !strings.HasSuffix(out, " "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+"\n") {
		t.Errorf("version: %q %v", out, err)
	}
	version = "v9.9.9"
	defer func() { version = "" }()
	if out, _ := runTool(t, "version"); !strings.HasPrefix(out, "lethe v9.9.9 ") {
		t.Errorf("version with -X: %q", out)
	}
}

// TestVersionOf: the version, from Go's record of the build, or what -X
// set, or both; "devel" only with a commit.
func TestVersionOf(t *testing.T) {
	const rev = "7c5e653abcdef0123456789abcdef0123456789a"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name              string
		bi                *debug.BuildInfo
		xVersion, xCommit string
		want              string
	}{
		{"module version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "", "", "v1.2.3"},
		{"checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")}, "", "", "devel (commit 7c5e653abcde)"},
		{"modified checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")}, "", "", "devel (commit 7c5e653abcde, modified)"},
		{"pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201220011-7c5e653abcde+dirty"}, Settings: vcs("true")}, "", "",
			"v0.0.0-20261201220011-7c5e653abcde+dirty (commit 7c5e653abcde, modified)"},
		{"go run, -X commit", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", rev, "devel (commit 7c5e653abcde)"},
		{"-X version", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")}, "v2.0.0", "", "v2.0.0 (commit 7c5e653abcde)"},
		{"-X devel", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel", "", "(no version or commit recorded)"},
		{"no build info, -X", nil, "v9.9.9", "", "v9.9.9"},
		{"nothing", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "", "(no version or commit recorded)"},
		{"no build info", nil, "", "", "(no version or commit recorded)"},
	} {
		if got := versionOf(tc.bi, tc.xVersion, tc.xCommit); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
