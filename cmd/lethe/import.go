package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

func importTool(args []string) error {
	fs, dir := toolFlags("import", "Usage: lethe import -dir D [-i FILE]\n"+
		"Reads what lethe export wrote and creates its databases, containers and items in D, which must hold none of them.\n"+
		"Each item is written as of its last write: its _ts and the instant it expires are those it had; items expired since\n"+
		"the export are left out. The server must be stopped.")
	in := fs.String("i", "", "the file to read (default: standard input)")
	if err := parseTool(fs, dir, args); err != nil {
		return err
	}
	r := toolInput
	if *in != "" {
		f, err := os.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	dbs, items, err := readExport(r)
	if err != nil {
		return err
	}
	n, expired, err := importAll(*dir, dbs, items, time.Now())
	if err != nil {
		return held("import", err)
	}
	_, err = fmt.Fprintf(toolOutput, "imported %d databases, %d items into %s; left out %d items expired since the export\n", len(dbs), n, *dir, expired)
	return err
}

// importDatabase is a database of an export, with its containers.
type importDatabase struct {
	rec        exportRecord
	containers []lethe.ContainerProperties
	policies   map[string]json.RawMessage // the containers' conflict resolution policies that are not the default
}

// readExport reads an export whole: its databases in order, and its items.
func readExport(r io.Reader) ([]*importDatabase, []exportRecord, error) {
	var dbs []*importDatabase
	var items []exportRecord
	byID := map[string]*importDatabase{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	line, version := 0, 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var rec exportRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, nil, fmt.Errorf("import: line %d: %v", line, err)
		}
		bad := func(why string) error { return fmt.Errorf("import: line %d (%s): %s", line, rec.Kind, why) }
		switch {
		case line == 1 && rec.Kind != "lethe-export":
			return nil, nil, errors.New("import: the input does not start with lethe export's header")
		case rec.Kind == "lethe-export":
			if line != 1 || rec.Version < 1 || rec.Version > exportVersion {
				return nil, nil, bad(fmt.Sprintf("a header of version %d, not first or not 1 to %d", rec.Version, exportVersion))
			}
			version = rec.Version
		case rec.Kind == "database":
			if rec.ID == "" || byID[rec.ID] != nil {
				return nil, nil, bad("no id, or one seen before")
			}
			db := &importDatabase{rec: rec}
			dbs, byID[rec.ID] = append(dbs, db), db
		case rec.Kind == "container":
			db := byID[rec.Database]
			if db == nil || len(rec.Properties) == 0 {
				return nil, nil, bad("no properties, or a database not seen before")
			}
			p, err := containerOf(rec, version)
			if err != nil {
				return nil, nil, bad("its properties: " + err.Error())
			}
			db.containers = append(db.containers, p)
			if len(rec.ConflictPolicy) > 0 {
				if db.policies == nil {
					db.policies = map[string]json.RawMessage{}
				}
				db.policies[p.ID] = rec.ConflictPolicy
			}
		case rec.Kind == "item":
			db := byID[rec.Database]
			if db == nil || !slices.ContainsFunc(db.containers, func(p lethe.ContainerProperties) bool { return p.ID == rec.Container }) {
				return nil, nil, bad("an item of a container not seen before")
			}
			if rec.Written == nil || len(rec.Item) == 0 {
				return nil, nil, bad("no item, or no instant of its last write")
			}
			items = append(items, rec)
		default:
			return nil, nil, bad("not a kind of record of an export")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("import: line %d: %w", line+1, err)
	}
	if line == 0 {
		return nil, nil, errors.New("import: the input is empty")
	}
	return dbs, items, nil
}

// importAll creates dbs and writes items in dir, and returns how many
// items it wrote, and how many it left out as expired by now.
//
// Each item is written through lethe's one write path with the store's
// clock (a lethe.ManualClock, the stores' only source of time) set to the
// instant of its last write, items in the order they were written: so
// its _ts, the instant its expiry counts from, and the change feed's
// record of the write are those of the original write, and nothing in
// the store ever sees time go back. The containers are created at the
// first of those instants, before any item, without throughput of their
// own, which they get back once the items are in (a throughput budget
// under a clock that replays history would throttle what the original
// writes spread over real time).
func importAll(dir string, dbs []*importDatabase, items []exportRecord, now time.Time) (written, expired int, err error) {
	slices.SortStableFunc(items, func(a, b exportRecord) int { return a.Written.Compare(*b.Written) })
	first := now
	if len(items) > 0 && items[0].Written.Before(now) {
		first = *items[0].Written
	}
	clock := lethe.NewManualClock(first)
	h, err := cosmosrest.New(cosmosrest.Config{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	if err != nil {
		return 0, 0, err
	}
	defer h.Close()
	if ids := h.DatabaseIDs(); len(ids) > 0 {
		return 0, 0, fmt.Errorf("import: %s already holds databases (%s): import into a directory without any", dir, strings.Join(ids, ", "))
	}
	ctx := context.Background()
	containers := map[[2]string]*lethe.Container{}
	props := map[[2]string]lethe.ContainerProperties{}
	for _, db := range dbs {
		if err := createDatabase(h, db.rec); err != nil {
			return 0, 0, err
		}
		st, _ := h.Store(db.rec.ID)
		for _, p := range db.containers {
			bare := p
			bare.Throughput, bare.AutoscaleMaxThroughput = 0, 0
			c, err := st.CreateContainer(ctx, bare)
			if err != nil {
				return 0, 0, fmt.Errorf("import: database %q, container %q: %w", db.rec.ID, p.ID, err)
			}
			if pol := db.policies[p.ID]; pol != nil {
				if err := h.SetConflictResolutionPolicy(db.rec.ID, p.ID, pol); err != nil {
					return 0, 0, fmt.Errorf("import: database %q, container %q: %w", db.rec.ID, p.ID, err)
				}
			}
			key := [2]string{db.rec.ID, p.ID}
			containers[key], props[key] = c, p
		}
	}
	for _, it := range items {
		key := [2]string{it.Database, it.Container}
		if it.Expires != nil && !it.Expires.After(now) {
			expired++
			continue
		}
		if it.Written.After(clock.Now()) {
			clock.Set(*it.Written)
		}
		pk, err := partitionKeyOf(props[key].PartitionKeyDefinition, it.Item)
		if err == nil {
			_, err = containers[key].CreateItem(ctx, pk, it.Item, &lethe.ItemOptions{NoContentResponseOnWrite: true})
		}
		if err != nil {
			return written, expired, fmt.Errorf("import: database %q, container %q, an item written at %s: %w", it.Database, it.Container, it.Written.Format(time.RFC3339Nano), err)
		}
		written++
	}
	if now.After(clock.Now()) {
		clock.Set(now)
	}
	for key, p := range props {
		if p.Throughput != 0 || p.AutoscaleMaxThroughput != 0 {
			if err := containers[key].Replace(ctx, p); err != nil {
				return written, expired, fmt.Errorf("import: database %q, container %q: its throughput: %w", key[0], key[1], err)
			}
		}
	}
	return written, expired, h.Close()
}

// createDatabase creates a database, with its throughput, through the
// REST API in process (it is the front that keeps a database's files).
func createDatabase(h *cosmosrest.Handler, rec exportRecord) error {
	body, _ := json.Marshal(map[string]string{"id": rec.ID})
	req := httptest.NewRequest(http.MethodPost, "/dbs", strings.NewReader(string(body)))
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := cosmosrest.SignRequest(cosmosrest.EmulatorKey, http.MethodPost, "dbs", "", date)
	if err != nil {
		return err
	}
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", auth)
	switch {
	case rec.AutoscaleMaxThroughput != 0:
		req.Header.Set("x-ms-cosmos-offer-autopilot-settings", fmt.Sprintf(`{"maxThroughput":%d}`, rec.AutoscaleMaxThroughput))
	case rec.Throughput != 0:
		req.Header.Set("x-ms-offer-throughput", strconv.Itoa(int(rec.Throughput)))
	}
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, req)
	if rw.Code != http.StatusCreated {
		return fmt.Errorf("import: database %q: %d %s", rec.ID, rw.Code, strings.TrimSpace(rw.Body.String()))
	}
	return nil
}
