package cosmosrest_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
	"github.com/lethedb/lethe/internal/vfs/vfstest"
)

// durableFront serves a front on the data directory dir with cfg.
func durableFront(t *testing.T, dir string, cfg cosmosrest.Config) (*cosmosrest.Handler, *client) {
	t.Helper()
	cfg.Dir = dir
	h, err := cosmosrest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return serve(t, h)
}

// reopen closes the front h (and its client c's server) and serves a new
// one on the same directory with cfg.
func reopen(t *testing.T, h *cosmosrest.Handler, c *client, dir string, cfg cosmosrest.Config) (*cosmosrest.Handler, *client) {
	t.Helper()
	c.srv.Close()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	return durableFront(t, dir, cfg)
}

// TestRangesSurviveRestart: with Config.Dir a container's ranges after
// splits are the same after a restart: ids, bounds, parents, _rid and
// the feed's etag; the next split takes the next ids; a query's
// continuation from a child resumes there, a document's responses name
// the same range and session token, and the parent is still gone. A
// container deleted and created again has the ranges of its throughput,
// not those of the one before (before a restart or after it), and so
// has every container of a
// directory without the file, as before ranges were kept.
func TestRangesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	h, c := durableFront(t, dir, cosmosrest.Config{})
	createDB(t, c, "db")
	for _, id := range []string{"c", "again", "gone"} {
		must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": id, "partitionKey": map[string]any{"paths": []string{"/pk"}}}, "x-ms-offer-throughput", "40000"), http.StatusCreated)
	}
	for _, pk := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		must(t, c.do("POST", "/dbs/db/colls/c/docs", map[string]any{"id": pk, "pk": pk}, "x-ms-documentdb-partitionkey", `["`+pk+`"]`), http.StatusCreated)
	}
	must(t, split(c, "db", "c", "0"), http.StatusOK)
	must(t, split(c, "db", "c", "5"), http.StatusOK)
	must(t, split(c, "db", "again", "1"), http.StatusOK)
	must(t, c.do("DELETE", "/dbs/db/colls/again", nil), http.StatusNoContent)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "again", "partitionKey": map[string]any{"paths": []string{"/pk"}}}, "x-ms-offer-throughput", "20000"), http.StatusCreated)
	must(t, split(c, "db", "gone", "1"), http.StatusOK)
	must(t, c.do("DELETE", "/dbs/db/colls/gone", nil), http.StatusNoContent)

	before := listRanges(t, c, "/dbs/db/colls/c")
	etag := must(t, c.do("GET", "/dbs/db/colls/c/pkranges", nil), http.StatusOK).header.Get("etag")
	docRange := map[string][2]string{}
	for _, pk := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		r := must(t, c.do("GET", "/dbs/db/colls/c/docs/"+pk, nil, "x-ms-documentdb-partitionkey", `["`+pk+`"]`), http.StatusOK)
		tok := r.header.Get("x-ms-session-token")
		docRange[pk] = [2]string{r.header.Get("x-ms-documentdb-partitionkeyrangeid"), tok[:strings.IndexByte(tok, ':')]}
	}
	first := must(t, c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", "4", "x-ms-max-item-count", "1"), http.StatusOK)
	token := first.header.Get("x-ms-continuation")
	rest := queryPages(t, c, "4", "", "", token)

	h, c = reopen(t, h, c, dir, cosmosrest.Config{})
	// Deleted before the restart, created again after it, and restarted.
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "gone", "partitionKey": map[string]any{"paths": []string{"/pk"}}}, "x-ms-offer-throughput", "20000"), http.StatusCreated)
	h, c = reopen(t, h, c, dir, cosmosrest.Config{})
	if ids := rangeIDs(listRanges(t, c, "/dbs/db/colls/gone")); !reflect.DeepEqual(ids, []string{"0", "1"}) {
		t.Errorf("the container deleted before a restart and created after it has the ranges %v, want those of its throughput", ids)
	}
	if after := listRanges(t, c, "/dbs/db/colls/c"); !reflect.DeepEqual(after, before) {
		t.Errorf("after a restart the ranges are\n%+v\nnot\n%+v", after, before)
	}
	must(t, c.do("GET", "/dbs/db/colls/c/pkranges", nil, "A-IM", "Incremental Feed", "If-None-Match", etag), http.StatusNotModified)
	for pk, want := range docRange {
		r := must(t, c.do("GET", "/dbs/db/colls/c/docs/"+pk, nil, "x-ms-documentdb-partitionkey", `["`+pk+`"]`, "x-ms-session-token", want[1]+":-1#1"), http.StatusOK)
		tok := r.header.Get("x-ms-session-token")
		if got := [2]string{r.header.Get("x-ms-documentdb-partitionkeyrangeid"), tok[:strings.IndexByte(tok, ':')]}; got != want {
			t.Errorf("document %s: range and token's range %v after a restart, %v before", pk, got, want)
		}
	}
	if got := queryPages(t, c, "4", "", "", token); !reflect.DeepEqual(got, rest) {
		t.Errorf("the query resumed after a restart read %v, before it %v", got, rest)
	}
	if r := c.query("/dbs/db/colls/c", "SELECT * FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", "0"); r.status != http.StatusGone {
		t.Errorf("the split range after a restart: %d %s", r.status, r.body)
	}
	if ids := rangeIDs(listRanges(t, c, "/dbs/db/colls/again")); !reflect.DeepEqual(ids, []string{"0", "1"}) {
		t.Errorf("the container created again has the ranges %v, want those of its throughput", ids)
	}
	var children struct{ Children []string }
	if err := json.Unmarshal(must(t, split(c, "db", "c", "1"), http.StatusOK).body, &children); err != nil || !reflect.DeepEqual(children.Children, []string{"8", "9"}) {
		t.Errorf("a split after the restart made %v, want 8 and 9", children.Children)
	}

	// A directory without the file: the ranges of the throughput.
	c.srv.Close()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, dbDir("db"), "ranges.json")); err != nil {
		t.Fatal(err)
	}
	_, c = durableFront(t, dir, cosmosrest.Config{})
	if ids := rangeIDs(listRanges(t, c, "/dbs/db/colls/c")); !reflect.DeepEqual(ids, []string{"0", "1", "2", "3"}) {
		t.Errorf("without the file the ranges are %v", ids)
	}
}

// rangeIDs returns the ids of ranges.
func rangeIDs(ranges []pkRange) []string {
	ids := make([]string, len(ranges))
	for i, r := range ranges {
		ids[i] = r.ID
	}
	return ids
}

// TestRangesFileDamaged: a ranges file that is not a layout (not JSON, a
// gap, an overlap, an id twice or past the next, a parent that is still a
// range, a space not covered) makes its database unavailable (503, as a
// damaged users file does), its directory left as it is for its owner to
// repair, and CheckDir says so; the other databases are served.
func TestRangesFileDamaged(t *testing.T) {
	const ok = `{"id":0,"minInclusive":"","maxExclusive":"80","parents":[]},{"id":1,"minInclusive":"80","maxExclusive":"FF","parents":[]}`
	for _, tc := range []struct{ name, file string }{
		{"not JSON", `[{"coll":"c",`},
		{"a gap", `[{"coll":"c","lsn":2,"next":2,"ranges":[{"id":0,"minInclusive":"","maxExclusive":"70"},{"id":1,"minInclusive":"80","maxExclusive":"FF"}]}]`},
		{"an overlap", `[{"coll":"c","lsn":2,"next":2,"ranges":[{"id":0,"minInclusive":"","maxExclusive":"90"},{"id":1,"minInclusive":"80","maxExclusive":"FF"}]}]`},
		{"an id twice", `[{"coll":"c","lsn":2,"next":2,"ranges":[{"id":1,"minInclusive":"","maxExclusive":"80"},{"id":1,"minInclusive":"80","maxExclusive":"FF"}]}]`},
		{"an id past the next", `[{"coll":"c","lsn":2,"next":1,"ranges":[` + ok + `]}]`},
		{"a live parent", `[{"coll":"c","lsn":2,"next":3,"ranges":[{"id":0,"minInclusive":"","maxExclusive":"80"},{"id":2,"minInclusive":"80","maxExclusive":"FF","parents":["0"]}]}]`},
		{"short of the end", `[{"coll":"c","lsn":2,"next":2,"ranges":[{"id":0,"minInclusive":"","maxExclusive":"80"}]}]`},
		{"no version", `[{"coll":"c","lsn":0,"next":2,"ranges":[` + ok + `]}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h, c := durableFront(t, dir, cosmosrest.Config{})
			for _, db := range []string{"db", "other"} {
				createDB(t, c, db)
				must(t, c.do("POST", "/dbs/"+db+"/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), http.StatusCreated)
			}
			c.srv.Close()
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, dbDir("db"), "ranges.json"), []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			dbs, _, err := cosmosrest.CheckDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dbs {
				if damaged := d.Err != nil && strings.Contains(d.Err.Error(), "ranges.json is damaged"); damaged != (d.ID == "db") {
					t.Errorf("CheckDir: the database %q: %v", d.ID, d.Err)
				}
			}
			_, c = durableFront(t, dir, cosmosrest.Config{})
			r := must(t, c.do("GET", "/dbs/db/colls/c/pkranges", nil), http.StatusServiceUnavailable)
			if !strings.Contains(string(r.body), "ranges.json is damaged") {
				t.Errorf("the 503 does not name the damaged file: %s", r.body)
			}
			must(t, c.do("GET", "/dbs/other/colls/c/pkranges", nil), http.StatusOK)
			if b, err := os.ReadFile(filepath.Join(dir, dbDir("db"), "ranges.json")); err != nil || string(b) != tc.file {
				t.Errorf("the damaged file was changed: %q %v", b, err)
			}
		})
	}
}

// TestSplitFileFails: a split whose layout cannot be written (a full
// disk, a failing rename) fails with 500 and changes nothing, before or
// after a restart; once the disk is well it succeeds.
func TestSplitFileFails(t *testing.T) {
	for _, fault := range []vfstest.Fault{
		{Op: vfstest.OpWrite, N: 1, Err: syscall.ENOSPC},
		{Op: vfstest.OpRename, N: 1, Err: syscall.EIO},
	} {
		t.Run(fault.Op.String(), func(t *testing.T) {
			dir, efs, h, c := faultyFront(t)
			createDB(t, c, "db")
			must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}, "x-ms-offer-throughput", "20000"), http.StatusCreated)
			before := listRanges(t, c, "/dbs/db/colls/c")
			efs.Inject(fault)
			must(t, split(c, "db", "c", "0"), http.StatusInternalServerError)
			if got := listRanges(t, c, "/dbs/db/colls/c"); !reflect.DeepEqual(got, before) {
				t.Errorf("after a failed split the ranges are %+v", got)
			}
			c = restartFront(t, h, c, dir)
			if got := listRanges(t, c, "/dbs/db/colls/c"); !reflect.DeepEqual(got, before) {
				t.Errorf("after a failed split and a restart the ranges are %+v", got)
			}
			must(t, split(c, "db", "c", "0"), http.StatusOK)
		})
	}
}

// TestManyRangesSurviveRestart: a container of the most ranges a
// container is given (1,024) split once more has 1,025, after a restart
// too: the count a container is given at creation does not bound what
// splits make of it.
func TestManyRangesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := cosmosrest.Config{Ranges: cosmosrest.RangeConfig{Min: 1024}}
	h, c := durableFront(t, dir, cfg)
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), http.StatusCreated)
	must(t, split(c, "db", "c", "7"), http.StatusOK)
	_, c = reopen(t, h, c, dir, cfg)
	if n := len(listRanges(t, c, "/dbs/db/colls/c")); n != 1025 {
		t.Errorf("after a restart the container has %d ranges, want 1,025", n)
	}
}

// TestRangesConcurrentChangesSurviveRestart: splits of two containers and
// raises of one's throughput, at once, with Config.Dir: the file keeps
// the last layout of each, whatever the order the changes took, so a
// restart shows the ranges the clients saw last.
func TestRangesConcurrentChangesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	h, c := durableFront(t, dir, cosmosrest.Config{})
	createDB(t, c, "db")
	for _, id := range []string{"a", "b"} {
		must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": id, "partitionKey": map[string]any{"paths": []string{"/pk"}}}, "x-ms-offer-throughput", "10000"), http.StatusCreated)
	}
	offer := offerOf(t, c, must(t, c.do("GET", "/dbs/db/colls/a", nil), http.StatusOK).json(t)["_rid"].(string))
	var wg sync.WaitGroup
	for _, coll := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "0"
			for range 6 {
				children, err := h.SplitPartitionKeyRange("db", coll, id)
				if errors.Is(err, lethe.ErrNotFound) { // split meanwhile by a raise
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				id = children[1]
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, n := range []int{20000, 40000, 80000} {
			if r := replaceOffer(c, offer, map[string]any{"offerThroughput": n}); r.status != http.StatusOK {
				t.Errorf("raising to %d: %d %s", n, r.status, r.body)
			}
		}
	}()
	wg.Wait()
	before := map[string][]pkRange{}
	for _, coll := range []string{"a", "b"} {
		before[coll] = listRanges(t, c, "/dbs/db/colls/"+coll)
	}
	if n := len(before["a"]); n < 8 {
		t.Errorf("raised to 80,000 RU/s, the container has %d ranges", n)
	}
	_, c = reopen(t, h, c, dir, cosmosrest.Config{})
	for _, coll := range []string{"a", "b"} {
		if after := listRanges(t, c, "/dbs/db/colls/"+coll); !reflect.DeepEqual(after, before[coll]) {
			t.Errorf("%s after a restart: %v, before it %v", coll, rangeIDs(after), rangeIDs(before[coll]))
		}
	}
}
