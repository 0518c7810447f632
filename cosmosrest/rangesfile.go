package cosmosrest

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/epk"
	"github.com/lethedb/lethe/internal/vfs"
)

// Durable partition key ranges. A container's layout is computed from its
// throughput and the RangeConfig when it is created (newLayout), and so
// again at every start, until a split or a replace of its throughput makes
// it one the computation would not give: from then on it is kept
// (rangeLayout.kept) in rangesFile beside the database's store, rewritten
// whole (synced, then renamed into place) at each such change, before the
// change is seen, as users.go keeps users. A start reads it back: the same
// ids, bounds, parents, next id and version (the /pkranges etag), so that
// continuations and session tokens naming the ranges still work. A
// directory without the file has the computed layouts, as before it was
// kept.

// rangesFile is the file in a durable database's directory that keeps the
// partition key range layouts of its containers that are kept.
const rangesFile = "ranges.json"

// savedLayout is a container's layout as rangesFile holds it.
type savedLayout struct {
	Coll   string       `json:"coll"`
	LSN    uint64       `json:"lsn"`
	Next   int          `json:"next"`
	Ranges []savedRange `json:"ranges"`
}

// savedRange is one range of a savedLayout.
type savedRange struct {
	ID      int      `json:"id"`
	Min     string   `json:"minInclusive"`
	Max     string   `json:"maxExclusive"`
	Parents []string `json:"parents"`
}

// saved returns l, container coll's, as rangesFile holds it.
func (l *rangeLayout) saved(coll string) *savedLayout {
	s := &savedLayout{Coll: coll, LSN: l.lsn, Next: l.next, Ranges: make([]savedRange, len(l.ranges))}
	for i, r := range l.ranges {
		s.Ranges[i] = savedRange{ID: r.num, Min: r.lo, Max: r.hi, Parents: r.parents}
	}
	return s
}

// layout returns the layout s holds, of a container whose partition key
// definition is def, or why it is not one: ranges in order that cover the
// space from epk.Min to epk.Max without a gap, ids below the next id and
// each once, parents that are gone.
func (s *savedLayout) layout(def lethe.PartitionKeyDefinition) (*rangeLayout, error) {
	l := &rangeLayout{lsn: s.LSN, next: s.Next, version: def.Version, multi: isMulti(def), kept: true}
	ids := map[int]bool{}
	lo := epk.Min
	for _, r := range s.Ranges {
		if r.ID < 0 || r.ID >= s.Next || ids[r.ID] || r.Min != lo || r.Max <= r.Min {
			return nil, fmt.Errorf("the range %d of the container %q is not a range of its layout", r.ID, s.Coll)
		}
		ids[r.ID] = true
		lo = r.Max
		id := strconv.Itoa(r.ID)
		parents := r.Parents
		if parents == nil {
			parents = []string{}
		}
		l.ranges = append(l.ranges, pkRange{id: id, num: r.ID, lo: r.Min, hi: r.Max, parents: parents, header: []string{id}})
	}
	for _, r := range s.Ranges {
		for _, p := range r.Parents {
			if n, err := strconv.Atoi(p); err != nil || n < 0 || n >= s.Next || ids[n] {
				return nil, fmt.Errorf("the range %d of the container %q has a parent %q that is not a range gone", r.ID, s.Coll, clip(p))
			}
		}
	}
	if lo != epk.Max || s.LSN == 0 {
		return nil, fmt.Errorf("the ranges of the container %q do not cover its partition key space", s.Coll)
	}
	return l, nil
}

// loadLayouts reads the kept layouts of a durable database's containers,
// whose store is st, by container id; none when the file is not there. It
// reports whether the file holds containers st has not (a crash after a
// container's delete, before the file was saved without it), which the
// next save drops.
func loadLayouts(fsys vfs.FS, dir string, st *lethe.Store) (layouts map[string]*rangeLayout, orphans bool, err error) {
	list, err := readDBFile[*savedLayout](fsys, dir, rangesFile)
	if err != nil {
		return nil, false, err
	}
	layouts = map[string]*rangeLayout{}
	for _, s := range list {
		c, err := st.Container(s.Coll)
		if err != nil {
			orphans = true
			continue
		}
		p, err := c.Read(context.Background())
		if err != nil {
			return nil, false, err
		}
		l, err := s.layout(p.PartitionKeyDefinition)
		if err != nil {
			return nil, false, fmt.Errorf("%s is damaged: %w", filepath.Join(dir, rangesFile), err)
		}
		layouts[s.Coll] = l
	}
	return layouts, orphans, nil
}

// checkLayouts checks, as loadLayouts would read it, the ranges file of
// the durable database in dir (CheckDir): without its store, the
// layouts' own consistency.
func checkLayouts(fsys vfs.FS, dir string) error {
	list, err := readDBFile[*savedLayout](fsys, dir, rangesFile)
	for _, s := range list {
		if _, err := s.layout(lethe.PartitionKeyDefinition{}); err != nil {
			return fmt.Errorf("%s is damaged: %w", filepath.Join(dir, rangesFile), err)
		}
	}
	return err
}

// changeLayout replaces the layout of container coll (properties p) by
// what change makes of it, kept: written to rangesFile first, with a
// durable database, so that the change is seen only once the next start
// would find it. A failed change or write changes nothing.
func (db *database) changeLayout(coll string, p lethe.ContainerProperties, cfg RangeConfig, change func(*rangeLayout) (*rangeLayout, error)) error {
	db.rangesMu.Lock()
	defer db.rangesMu.Unlock()
	cur, ok := db.ranges.Load(coll)
	if !ok {
		cur = newLayout(p, cfg)
	}
	changed, err := change(cur.(*rangeLayout))
	if err != nil {
		return err
	}
	next := *changed // change may return the layout readers have, never changed in place
	next.kept = true
	if err := db.saveLayoutsLocked(coll, &next); err != nil {
		return err
	}
	db.ranges.Store(coll, &next)
	return nil
}

// setLayout gives container coll the layout l, when it is created, or
// none (l nil), when it is deleted. A deleted container's kept layout
// stays in rangesFile (a start drops it, the container being gone) until
// the file is saved again: at the next change, or when a container is
// created while the file may hold another's layout of its id. A failed
// save is retried then.
func (db *database) setLayout(coll string, l *rangeLayout) error {
	db.rangesMu.Lock()
	defer db.rangesMu.Unlock()
	if old, ok := db.ranges.Load(coll); ok && old.(*rangeLayout).kept {
		db.rangesStale = true
	}
	if l == nil {
		db.ranges.Delete(coll)
		return nil
	}
	db.ranges.Store(coll, l)
	if !db.rangesStale {
		return nil
	}
	return db.saveLayoutsLocked(coll, l)
}

// saveLayoutsLocked writes the kept layouts of db's containers, with
// coll's as l (nil: none), to rangesFile; db.rangesMu is held. Nothing
// for a database in memory.
func (db *database) saveLayoutsLocked(coll string, l *rangeLayout) error {
	if db.path == "" {
		return nil
	}
	m := map[string]*savedLayout{}
	db.ranges.Range(func(k, v any) bool {
		if id, lay := k.(string), v.(*rangeLayout); lay.kept && id != coll {
			m[id] = lay.saved(id)
		}
		return true
	})
	if l != nil && l.kept {
		m[coll] = l.saved(coll)
	}
	if err := writeDBFile(db, rangesFile, m, func(a, b *savedLayout) bool { return a.Coll < b.Coll }); err != nil {
		return err
	}
	db.rangesStale = false
	return nil
}
