package cosmosrest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/resid"
	"github.com/lethedb/lethe/internal/vfs"
)

// database is one database: a lethe store.
type database struct {
	id    string
	rid   []byte
	ts    int64        // created, Unix seconds
	store *lethe.Store // owned by the database
	path  string       // its directory, "" in memory
	fs    vfs.FS       // the file system of path

	mu      sync.Mutex
	collTS  map[string]int64         // when this handler created or last replaced each container
	offerTS int64                    // when the database's offer was made or last replaced
	users   map[string]*user         // its users and their permissions (users.go)
	scripts map[scriptKey]*scriptRes // its containers' scripts (scripts.go)

	docRIDs docRIDIndexes // its containers' documents by resource id (ridpath.go)
	confl   conflictState // its containers' conflict policies and conflicts (conflicts.go)
	ranges  sync.Map      // container id → its *rangeLayout (pkranges.go)
	// rangesMu serializes the changes of ranges that rangesFile keeps
	// (rangesfile.go); rangesStale, which it guards, says that the file
	// may hold a layout ranges has not.
	rangesMu    sync.Mutex
	rangesStale bool
}

// metaFile is the file, in a durable database's directory, that names it.
const metaFile = "database.json"

type dbMeta struct {
	ID string `json:"id"`
	TS int64  `json:"ts"`
	// The database's shared throughput (its offer), which the store does
	// not keep: manual or autoscale, or neither.
	Throughput             int32 `json:"throughput,omitempty"`
	AutoscaleMaxThroughput int32 `json:"autoscaleMaxThroughput,omitempty"`
}

// dbDirName is the directory of the database id under Config.Dir: a hash,
// since ids may hold any character but / \ ? #.
func dbDirName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "db-" + hex.EncodeToString(sum[:16])
}

// openDir opens every database under Config.Dir, and removes what an
// interrupted create or delete left.
func (h *Handler) openDir() error {
	fsys := h.fs
	if err := vfs.MkdirAllDurable(fsys, h.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("cosmosrest: %w", err)
	}
	lock, err := fsys.Lock(h.cfg.Dir)
	if err != nil {
		return fmt.Errorf("cosmosrest: %s: %w", h.cfg.Dir, err)
	}
	h.lock = lock
	names, err := fsys.List(h.cfg.Dir)
	if err != nil {
		h.closeAll()
		return fmt.Errorf("cosmosrest: %w", err)
	}
	for _, name := range names {
		full := filepath.Join(h.cfg.Dir, name)
		if strings.HasPrefix(name, ".tmp-db-") {
			_ = vfs.RemoveAll(fsys, full)
			continue
		}
		if !strings.HasPrefix(name, "db-") {
			continue
		}
		if _, err := fsys.List(full); err != nil {
			continue // not a directory
		}
		b, err := vfs.ReadFile(fsys, filepath.Join(full, metaFile))
		if errors.Is(err, os.ErrNotExist) {
			_ = removeDatabaseDir(fsys, h.cfg.Dir, full) // a delete that was interrupted
			continue
		}
		if err := h.openDatabase(full, b, err); err != nil {
			// One database that cannot be opened does not stop the others:
			// it is served as unavailable, its directory left as it is.
			h.unavailable[name] = err
			h.cfg.Logger.Error("cosmosrest: a database cannot be opened: its requests get 503", "dir", full, "err", err)
		}
	}
	return nil
}

// openDatabase opens the database of directory full whose meta file
// holds b (or could not be read: readErr).
func (h *Handler) openDatabase(full string, b []byte, readErr error) error {
	if readErr != nil {
		return readErr
	}
	var m dbMeta
	if err := json.Unmarshal(b, &m); err != nil || m.ID == "" || dbDirName(m.ID) != filepath.Base(full) {
		return fmt.Errorf("%s is damaged", filepath.Join(full, metaFile))
	}
	st, err := lethe.Open(h.storeOptions(m.ID, filepath.Join(full, "store"), m.Throughput, m.AutoscaleMaxThroughput))
	if err != nil {
		return fmt.Errorf("database %q: %w", m.ID, err)
	}
	ri := st.Recovery()
	h.cfg.Logger.Debug("cosmosrest: database recovered", "database", m.ID, "dir", full, "snapshot", ri.Snapshot,
		"segments", ri.Segments, "items", ri.Items, "expired", ri.Expired, "duration", ri.Duration)
	users, err := loadUsers(h.fs, full)
	if err != nil {
		_ = st.Close()
		return fmt.Errorf("database %q: %w", m.ID, err)
	}
	scripts, err := loadScripts(h.fs, full)
	if err != nil {
		_ = st.Close()
		return fmt.Errorf("database %q: %w", m.ID, err)
	}
	dropOrphanScripts(scripts, st.ContainerIDs())
	layouts, orphans, err := loadLayouts(h.fs, full, st)
	if err != nil {
		_ = st.Close()
		return fmt.Errorf("database %q: %w", m.ID, err)
	}
	policies, conflicts, legacy, err := loadConflicts(h.fs, full)
	if err != nil {
		_ = st.Close()
		return fmt.Errorf("database %q: %w", m.ID, err)
	}
	db := &database{id: m.ID, rid: databaseRID(m.ID), ts: m.TS, store: st, path: full, fs: h.fs, collTS: map[string]int64{}, offerTS: m.TS, users: users, scripts: scripts, rangesStale: orphans}
	db.confl.policies, db.confl.feeds, db.confl.legacy = policies, conflicts, legacy
	for id, l := range layouts {
		db.ranges.Store(id, l)
	}
	h.dbs[m.ID] = db
	return nil
}

// unavailableLocked returns why database id could not be opened at start,
// or nil. h.mu must be held.
func (h *Handler) unavailableLocked(id string) error {
	return h.unavailable[dbDirName(id)]
}

// writeUnavailable answers a request on database id, which could not be
// opened at start for cause, with 503.
func writeUnavailable(w http.ResponseWriter, id string, cause error) {
	apiError{status: http.StatusServiceUnavailable, msg: withDetail(msgUnavailable, fmt.Sprintf("the database %q is unavailable: it could not be opened at start: %v", clip(id), cause))}.write(w)
}

// closeAll undoes a failed openDir.
func (h *Handler) closeAll() {
	for id, db := range h.dbs {
		db.closeConflictLog()
		_ = db.store.Close()
		delete(h.dbs, id)
	}
	if h.lock != nil {
		_ = h.lock.Close()
		h.lock = nil
	}
}

// storeOptions are the options of database id's store: in dir ("" in
// memory), with the database's shared throughput, logging with the
// database's id, on the handler's file system.
func (h *Handler) storeOptions(id, dir string, throughput, autoscaleMax int32) *lethe.Options {
	opts := &lethe.Options{Dir: dir, Sync: h.cfg.Sync, Clock: h.cfg.Clock, Reaper: h.cfg.Reaper,
		Throughput: throughput, AutoscaleMaxThroughput: autoscaleMax, Logger: h.cfg.Logger.With("database", id),
		WriteRegions: h.cfg.writeRegions, WriteRegion: h.cfg.writeRegion}
	if dir != "" {
		vfs.SetOptionsFS(opts, h.fs)
	}
	return opts
}

// validateDatabaseID checks a database id by the rule lethe checks
// container ids with (internal/resid).
func validateDatabaseID(id string) error { return resid.Check("database", id) }

// lookup returns the database id, or nil.
func (h *Handler) lookup(id string) (*database, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, false
	}
	db := h.dbs[id]
	return db, db != nil
}

// database finds the request's database, or answers 404 (substatus
// sub) or 503 and returns nil.
func (q *request) database(sub int) *database {
	if db, ok := q.h.lookup(q.t.db); ok {
		return db
	}
	if q.h.isClosed() {
		q.answerError(http.StatusServiceUnavailable, withDetail(msgUnavailable, msgShuttingDown))
		return nil
	}
	q.h.mu.RLock()
	cause := q.h.unavailableLocked(q.t.db)
	q.h.mu.RUnlock()
	if cause != nil {
		writeUnavailable(q.w, q.t.db, cause)
		return nil
	}
	apiError{status: http.StatusNotFound, msg: notFoundMessage(sub), sub: sub}.write(q.w)
	return nil
}

func (db *database) etag() string {
	return fmt.Sprintf("%016x", hash64("dbetag", db.id, strconv.FormatInt(db.ts, 10)))
}

// json writes the database's properties, as Cosmos DB does.
func (db *database) json() []byte {
	rid := ridString(db.rid)
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	writeJSONString(&b, db.id)
	fmt.Fprintf(&b, `,"_rid":%q,"_self":"dbs/%s/","_etag":%s,"_colls":"colls/","_users":"users/","_ts":%d}`,
		rid, ridString(db.rid), strconv.Quote(quoteETag(db.etag())), db.ts)
	return b.Bytes()
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s)
	b.Write(enc)
}

func (q *request) createDatabase() {
	var in struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal(q.body, &in); err != nil || in.ID == nil {
		q.answerError(http.StatusBadRequest, bodyMessage(err, "the body must be a JSON object with a string \"id\""))
		return
	}
	id := *in.ID
	err := validateDatabaseID(id)
	var throughput, autoscaleMax int32
	if err == nil {
		throughput, autoscaleMax, err = q.throughput()
	}
	if err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return
	}
	h := q.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		q.answerError(http.StatusServiceUnavailable, withDetail(msgUnavailable, msgShuttingDown))
		return
	}
	if _, ok := h.dbs[id]; ok {
		q.answerError(http.StatusConflict, msgResourceExists)
		return
	}
	if cause := h.unavailableLocked(id); cause != nil { // its directory is there, kept for its owner to repair
		writeUnavailable(q.w, id, cause)
		return
	}
	db := &database{id: id, rid: databaseRID(id), ts: q.instant().Unix(), fs: h.fs, collTS: map[string]int64{}, users: map[string]*user{}, scripts: map[scriptKey]*scriptRes{}}
	db.offerTS = db.ts
	if h.cfg.Dir == "" {
		db.store, err = lethe.Open(h.storeOptions(id, "", throughput, autoscaleMax))
	} else {
		db.path, err = h.createDatabaseDir(db, throughput, autoscaleMax)
		if err == nil {
			db.store, err = lethe.Open(h.storeOptions(id, filepath.Join(db.path, "store"), throughput, autoscaleMax))
			if err == nil && db.store.Stats().LogFailed {
				// The disk takes no writes (full, or failing): the new
				// store opened read-only, so the database could hold nothing.
				_ = db.store.Close()
				err = errDiskRefusesWrites
			}
			if err != nil {
				_ = removeDatabaseDir(h.fs, h.cfg.Dir, db.path)
			}
		}
	}
	if errors.Is(err, errDiskRefusesWrites) {
		h.logFailure(q.r, http.StatusServiceUnavailable, err)
		q.answerError(http.StatusServiceUnavailable, withDetail(msgUnavailable, "creating the database: "+err.Error()))
		return
	}
	if err != nil {
		h.logFailure(q.r, http.StatusInternalServerError, err)
		q.answerError(http.StatusInternalServerError, withDetail(msgInternal, "creating the database: "+err.Error()))
		return
	}
	h.dbs[id] = db
	setHeader(q.w.Header(), "etag", quoteETag(db.etag()))
	q.reply(http.StatusCreated, db.json(), 2)
}

// errDiskRefusesWrites is why a database cannot be created on a disk that
// takes no writes.
var errDiskRefusesWrites = errors.New("the disk holding the data directory takes no writes (full or failing): make room on it and retry")

// createDatabaseDir makes a durable database's directory, its meta file
// written and synced in a temporary directory first, then renamed into
// place, so that a crash leaves either nothing or a whole directory.
func (h *Handler) createDatabaseDir(db *database, throughput, autoscaleMax int32) (string, error) {
	fsys := h.fs
	name := dbDirName(db.id)
	final := filepath.Join(h.cfg.Dir, name)
	tmp := filepath.Join(h.cfg.Dir, ".tmp-"+name)
	_ = vfs.RemoveAll(fsys, tmp)
	_ = vfs.RemoveAll(fsys, final) // what a failed delete may have left
	if err := fsys.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	meta, _ := json.Marshal(dbMeta{ID: db.id, TS: db.ts, Throughput: throughput, AutoscaleMaxThroughput: autoscaleMax})
	err := vfs.WriteFile(fsys, filepath.Join(tmp, metaFile), meta)
	if err == nil {
		err = fsys.SyncDir(tmp)
	}
	if err == nil {
		err = fsys.Rename(tmp, final)
	}
	if err != nil {
		_ = vfs.RemoveAll(fsys, tmp)
		return "", err
	}
	if err := fsys.SyncDir(h.cfg.Dir); err != nil {
		return final, err
	}
	return final, nil
}

// replaceDatabaseThroughput changes a database's shared throughput. A
// durable database's meta file is replaced first (written and synced
// beside it, then renamed over it), so that the store is changed only once
// the next start would find the new setting.
func (q *request) replaceDatabaseThroughput(db *database, throughput, autoscaleMax int32) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.path != "" {
		meta, _ := json.Marshal(dbMeta{ID: db.id, TS: db.ts, Throughput: throughput, AutoscaleMaxThroughput: autoscaleMax})
		if err := vfs.WriteFileAtomic(q.h.fs, filepath.Join(db.path, metaFile), meta); err != nil {
			return err
		}
	}
	// Not bound to the request: the file is replaced already.
	if err := db.store.ReplaceThroughput(context.Background(), throughput, autoscaleMax); err != nil {
		return err
	}
	db.offerTS = q.instant().Unix()
	return nil
}

// removeDatabaseDir removes a durable database's directory: its meta file
// first, so that a crash part way leaves a directory that the next New
// recognizes as deleted.
func removeDatabaseDir(fsys vfs.FS, parent, path string) error {
	if err := fsys.Remove(filepath.Join(path, metaFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := fsys.SyncDir(path); err != nil {
		return err
	}
	if err := vfs.RemoveAll(fsys, path); err != nil {
		return err
	}
	return fsys.SyncDir(parent)
}

func (q *request) readDatabase() {
	db := q.database(0)
	if db == nil {
		return
	}
	setHeader(q.w.Header(), "etag", quoteETag(db.etag()))
	q.reply(http.StatusOK, db.json(), 1)
}

func (q *request) deleteDatabase() {
	h := q.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		q.answerError(http.StatusServiceUnavailable, withDetail(msgUnavailable, msgShuttingDown))
		return
	}
	db, ok := h.dbs[q.t.db]
	if cause := h.unavailableLocked(q.t.db); !ok && cause != nil {
		writeUnavailable(q.w, q.t.db, cause)
		return
	}
	if !ok {
		q.answerError(http.StatusNotFound, msgResourceNotFound)
		return
	}
	if err := h.dropLocked(db); err != nil {
		h.logFailure(q.r, http.StatusInternalServerError, err)
		q.answerError(http.StatusInternalServerError, withDetail(msgInternal, "deleting the database: "+err.Error()))
		return
	}
	q.reply(http.StatusNoContent, nil, 2)
}

// dropLocked drops db from the handler (h.mu held): it is gone for every
// request at once, its store is closed and a durable one's directory
// removed. The error is the close's or the removal's; db is gone either way.
func (h *Handler) dropLocked(db *database) error {
	delete(h.dbs, db.id)
	db.closeConflictLog()
	if err := db.store.Close(); err != nil {
		return err
	}
	if db.path != "" {
		return removeDatabaseDir(h.fs, h.cfg.Dir, db.path)
	}
	return nil
}

// databases returns the databases, by id.
func (h *Handler) databases() []*database {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]*database, 0, len(h.dbs))
	for _, db := range h.dbs {
		out = append(out, db)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (q *request) listDatabases() {
	var docs [][]byte
	for _, db := range q.h.databases() {
		docs = append(docs, db.json())
	}
	q.replyFeed("", "Databases", docs, "", 1)
}

func (q *request) queryDatabases() {
	var docs []metaDoc
	for _, db := range q.h.databases() {
		docs = append(docs, metaDoc{db.id, db.json()})
	}
	q.metaQuery("", "Databases", docs)
}

// replyFeed writes a feed: {"_rid":…,"<name>":[…],"_count":n}, with its
// continuation token if any.
func (q *request) replyFeed(rid, name string, docs [][]byte, continuation string, charge float64) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"_rid":%q,%q:[`, rid, name)
	for i, d := range docs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(d)
	}
	fmt.Fprintf(&b, `],"_count":%d}`, len(docs))
	hdr := q.w.Header()
	setHeader(hdr, "x-ms-item-count", strconv.Itoa(len(docs)))
	if continuation != "" {
		setHeader(hdr, "x-ms-continuation", continuation)
	}
	q.reply(http.StatusOK, b.Bytes(), charge)
}

// ctx is the request's context.
func (q *request) ctx() context.Context { return q.r.Context() }
