package cosmosrest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/lethedb/lethe/cosmosrest/internal/script"
	"github.com/lethedb/lethe/internal/vfs"
)

// Server-side scripts as REST resources of a container: stored
// procedures (sprocs), triggers and user-defined functions (udfs), each an
// id and a JavaScript body (a trigger also its triggerType, Pre or Post,
// and triggerOperation). They are created, read, replaced, deleted, listed
// and queried as the service has them, with _rid, _self, _etag and _ts;
// sprocexec.go runs them.
//
// A durable database keeps the scripts of all its containers in
// scriptsFile beside its store, rewritten whole (synced, then renamed into
// place) at every change, as users.go keeps users: they are few (at most
// the service's quotas per container) and small (at most
// script.MaxBodySize each). Deleting a container deletes its scripts.

// scriptsFile is the file in a durable database's directory that keeps
// the scripts of its containers.
const scriptsFile = "scripts.json"

// scriptKind is the kind of a script: its feed's path segment.
type scriptKind string

// The kinds of scripts.
const (
	kindSproc   scriptKind = "sprocs"
	kindTrigger scriptKind = "triggers"
	kindUDF     scriptKind = "udfs"
)

// scriptKinds describe each kind: its feed's name in a list, its quota per
// container (those the front's x-ms-resource-quota announces), its _rid's
// type nibble and its name in messages.
var scriptKinds = map[scriptKind]struct {
	feed  string
	quota int
	tag   byte
	noun  string
}{
	kindSproc:   {"StoredProcedures", 100, 0x8, "stored procedure"},
	kindTrigger: {"Triggers", 25, 0x7, "trigger"},
	kindUDF:     {"UserDefinedFunctions", 25, 0x6, "user-defined function"},
}

// scriptRes is a script of a container.
type scriptRes struct {
	Coll      string     `json:"coll"`
	Kind      scriptKind `json:"kind"`
	ID        string     `json:"id"`
	Body      string     `json:"body"`
	Type      string     `json:"triggerType,omitempty"`
	Operation string     `json:"triggerOperation,omitempty"`
	// SentType and SentOperation are Type and Operation as the client
	// spelled them ("pre" for Pre): the service returns what was sent.
	// Empty in files written before they were kept.
	SentType      string `json:"sentTriggerType,omitempty"`
	SentOperation string `json:"sentTriggerOperation,omitempty"`
	TS            int64  `json:"ts"`
	// Nonce is new for every create and replace: the script's version,
	// which its ETag and its compiled program's cache key derive from.
	Nonce string `json:"nonce"`
}

// scriptKey names a script in a database.
type scriptKey struct {
	coll string
	kind scriptKind
	id   string
}

func (s *scriptRes) key() scriptKey { return scriptKey{s.Coll, s.Kind, s.ID} }

// Trigger types and operations, as the service spells them.
var (
	triggerTypes      = []string{"Pre", "Post"}
	triggerOperations = []string{"All", "Create", "Update", "Delete", "Replace", "Upsert"}
)

// loadScripts reads a durable database's scripts, none when the file is
// not there.
func loadScripts(fsys vfs.FS, dir string) (map[scriptKey]*scriptRes, error) {
	list, err := readDBFile[*scriptRes](fsys, dir, scriptsFile)
	if err != nil {
		return nil, err
	}
	scripts := make(map[scriptKey]*scriptRes, len(list))
	for _, s := range list {
		if _, ok := scriptKinds[s.Kind]; !ok {
			return nil, fmt.Errorf("%s is damaged: a script of kind %q", filepath.Join(dir, scriptsFile), s.Kind)
		}
		scripts[s.key()] = s
	}
	return scripts, nil
}

// saveScriptsLocked writes a durable database's scripts; db.mu is held.
func (db *database) saveScriptsLocked() error {
	return writeDBFile(db, scriptsFile, db.scripts, func(a, b *scriptRes) bool {
		return a.Coll < b.Coll || a.Coll == b.Coll && (a.Kind < b.Kind || a.Kind == b.Kind && a.ID < b.ID)
	})
}

// dropScripts deletes the scripts of container coll, which was deleted.
func (db *database) dropScripts(coll string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	n := len(db.scripts)
	for k := range db.scripts {
		if k.coll == coll {
			delete(db.scripts, k)
		}
	}
	if len(db.scripts) == n {
		return nil
	}
	return db.saveScriptsLocked()
}

// dropOrphanScripts deletes from scripts, as read at start, those of
// containers that are not among ids: a crash after a container's delete
// and before the removal of its scripts was saved leaves them in the
// file, and a container created again under the same id must not have
// them. The file is rewritten at the next change.
func dropOrphanScripts(scripts map[scriptKey]*scriptRes, ids []string) {
	live := make(map[string]bool, len(ids))
	for _, id := range ids {
		live[id] = true
	}
	for k := range scripts {
		if !live[k.coll] {
			delete(scripts, k)
		}
	}
}

// scriptRID is the _rid of a script: its container's, then 8 bytes of its
// own whose last nibble is its kind's.
func scriptRID(db, coll string, kind scriptKind, id string) []byte {
	v := hash64("script", string(kind), id)
	r := containerRID(db, coll)
	for i := range 8 {
		r = append(r, byte(v>>(8*i)))
	}
	r[15] = r[15]&0x0F | scriptKinds[kind].tag<<4
	return r
}

func (s *scriptRes) etag() string {
	return fmt.Sprintf("%016x", hash64("scriptetag", s.ID, s.Nonce))
}

// json writes a script's properties, as the service does.
func (s *scriptRes) json(db *database) []byte {
	rid := scriptRID(db.id, s.Coll, s.Kind, s.ID)
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	writeJSONString(&b, s.ID)
	b.WriteString(`,"body":`)
	writeJSONString(&b, s.Body)
	if s.Kind == kindTrigger {
		b.WriteString(`,"triggerType":`)
		writeJSONString(&b, cmp.Or(s.SentType, s.Type))
		b.WriteString(`,"triggerOperation":`)
		writeJSONString(&b, cmp.Or(s.SentOperation, s.Operation))
	}
	fmt.Fprintf(&b, `,"_rid":%q,"_self":"dbs/%s/colls/%s/%s/%s/","_etag":%s,"_ts":%d}`,
		ridString(rid), ridString(db.rid), ridString(containerRID(db.id, s.Coll)), s.Kind, ridString(rid), strconv.Quote(quoteETag(s.etag())), s.TS)
	return b.Bytes()
}

// readScriptBody reads and checks the body of a script's create or
// replace. A UDF's body must compile; a stored procedure's or a trigger's
// need not, as the service refuses such a body when it runs (then 400),
// not when it is stored ("serverScript() { … }" in the JS SDK's trigger
// specs): only its size is checked.
func (q *request) readScriptBody(kind scriptKind) (*scriptRes, bool) {
	var in struct {
		ID        *string `json:"id"`
		Body      *string `json:"body"`
		Type      *string `json:"triggerType"`
		Operation *string `json:"triggerOperation"`
	}
	noun := scriptKinds[kind].noun
	if err := json.Unmarshal(q.body, &in); err != nil || in.ID == nil || in.Body == nil {
		q.answerError(http.StatusBadRequest, bodyMessage(err, fmt.Sprintf("the body of a %s must be a JSON object with the strings \"id\" and \"body\"", noun)))
		return nil, false
	}
	if err := validateResourceID(noun, *in.ID); err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return nil, false
	}
	s := &scriptRes{Coll: q.t.coll, Kind: kind, ID: *in.ID, Body: *in.Body, TS: q.instant().Unix(), Nonce: q.nonce()}
	if kind == kindTrigger {
		var ok bool
		if s.Type, ok = oneOf(in.Type, triggerTypes); !ok {
			q.answerError(http.StatusBadRequest, fmt.Sprintf("the trigger's triggerType must be one of %s", strings.Join(triggerTypes, ", ")))
			return nil, false
		}
		if s.Operation, ok = oneOf(in.Operation, triggerOperations); !ok {
			q.answerError(http.StatusBadRequest, fmt.Sprintf("the trigger's triggerOperation must be one of %s", strings.Join(triggerOperations, ", ")))
			return nil, false
		}
		s.SentType, s.SentOperation = *in.Type, *in.Operation
	}
	check := script.CheckSize
	if kind == kindUDF {
		check = func(body string) error { _, err := script.Compile(body); return err }
	}
	if err := check(s.Body); err != nil {
		q.answerError(http.StatusBadRequest, withDetail(msgPayloadInvalid, fmt.Sprintf("the %s's body: %v", noun, err)))
		return nil, false
	}
	return s, true
}

// oneOf returns the value of values that v names, case-insensitively.
func oneOf(v *string, values []string) (string, bool) {
	if v == nil {
		return "", false
	}
	for _, s := range values {
		if strings.EqualFold(*v, s) {
			return s, true
		}
	}
	return "", false
}

// scriptKindOf returns the kind of script a request addresses.
func scriptKindOf(t target) scriptKind {
	switch t.kind {
	case tSprocs, tSproc:
		return kindSproc
	case tTriggers, tTrigger:
		return kindTrigger
	}
	return kindUDF
}

// changeScripts applies change to the database's scripts under db.mu,
// after checking that the request's container exists, saves them and
// answers the request with the success change returns. change answers a
// refusal itself and reports false; when it does, or the save fails, the
// scripts are as before.
func (q *request) changeScripts(change func(db *database, scripts map[scriptKey]*scriptRes) (success, bool)) {
	db, c := q.container(subOwnerNotFound)
	if c == nil {
		return
	}
	q.changeSaved(db, "scripts", func() func() {
		before := make(map[scriptKey]*scriptRes, len(db.scripts))
		for k, s := range db.scripts {
			cs := *s
			before[k] = &cs
		}
		return func() { db.scripts = before }
	}, func() (success, bool) {
		// The container is looked up again under db.mu: a delete that
		// ran since the lookup above dropped its scripts (under db.mu,
		// after the store let it go), and a script added now would
		// outlive it.
		if _, err := db.store.Container(q.t.coll); err != nil {
			q.fail(err, 0, subOwnerNotFound)
			return success{}, false
		}
		return change(db, db.scripts)
	}, db.saveScriptsLocked)
}

// createScript answers POST on a container's sprocs, triggers or udfs (an
// upsert with x-ms-documentdb-is-upsert).
func (q *request) createScript() {
	kind := scriptKindOf(q.t)
	s, ok := q.readScriptBody(kind)
	if !ok {
		return
	}
	upsert := headerTrue(q.r.Header.Get("x-ms-documentdb-is-upsert"))
	q.changeScripts(func(db *database, scripts map[scriptKey]*scriptRes) (success, bool) {
		status := http.StatusCreated
		if _, ok := scripts[s.key()]; ok {
			if !upsert {
				q.answerError(http.StatusConflict, msgResourceExists)
				return success{}, false
			}
			status = http.StatusOK
		} else if n := countScripts(scripts, s.Coll, kind); n >= scriptKinds[kind].quota {
			q.answerError(http.StatusForbidden, fmt.Sprintf("The container has %d %ss, its quota (x-ms-resource-quota).", n, scriptKinds[kind].noun))
			return success{}, false
		}
		scripts[s.key()] = s
		setHeader(q.w.Header(), "etag", quoteETag(s.etag()))
		return success{status, s.json(db)}, true
	})
}

// scriptCounts returns how many UDFs, stored procedures and triggers
// container coll has, for x-ms-resource-usage.
func (db *database) scriptCounts(coll string) (udfs, sprocs, triggers int) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return countScripts(db.scripts, coll, kindUDF), countScripts(db.scripts, coll, kindSproc), countScripts(db.scripts, coll, kindTrigger)
}

func countScripts(scripts map[scriptKey]*scriptRes, coll string, kind scriptKind) int {
	n := 0
	for k := range scripts {
		if k.coll == coll && k.kind == kind {
			n++
		}
	}
	return n
}

// lookupScript returns the script the request addresses, or nil.
func (db *database) lookupScript(t target, kind scriptKind) *scriptRes {
	db.mu.Lock()
	defer db.mu.Unlock()
	if s := db.scripts[scriptKey{t.coll, kind, t.id}]; s != nil {
		cs := *s
		return &cs
	}
	return nil
}

// findScript finds the script the request addresses in an existing
// container, or answers 404.
func (q *request) findScript() (*database, *scriptRes) {
	db, c := q.container(subOwnerNotFound)
	if c == nil {
		return nil, nil
	}
	s := db.lookupScript(q.t, scriptKindOf(q.t))
	if s == nil {
		q.answerError(http.StatusNotFound, msgResourceNotFound)
		return nil, nil
	}
	return db, s
}

func (q *request) readScript() {
	db, s := q.findScript()
	if s == nil {
		return
	}
	if inm := q.r.Header.Get("If-None-Match"); inm != "" && (inm == "*" || inm == quoteETag(s.etag())) {
		setHeader(q.w.Header(), "etag", quoteETag(s.etag()))
		q.reply(http.StatusNotModified, nil, 1)
		return
	}
	setHeader(q.w.Header(), "etag", quoteETag(s.etag()))
	q.reply(http.StatusOK, s.json(db), 1)
}

// replaceScript answers PUT on a script: its id may change.
func (q *request) replaceScript() {
	kind := scriptKindOf(q.t)
	s, ok := q.readScriptBody(kind)
	if !ok {
		return
	}
	q.changeScripts(func(db *database, scripts map[scriptKey]*scriptRes) (success, bool) {
		old := scripts[scriptKey{q.t.coll, kind, q.t.id}]
		if old == nil {
			q.answerError(http.StatusNotFound, msgResourceNotFound)
			return success{}, false
		}
		if !q.ifMatch(old.etag()) {
			return success{}, false
		}
		if s.ID != old.ID {
			if _, taken := scripts[s.key()]; taken {
				q.answerError(http.StatusConflict, msgResourceExists)
				return success{}, false
			}
		}
		delete(scripts, old.key())
		scripts[s.key()] = s
		setHeader(q.w.Header(), "etag", quoteETag(s.etag()))
		return success{http.StatusOK, s.json(db)}, true
	})
}

func (q *request) deleteScript() {
	kind := scriptKindOf(q.t)
	q.changeScripts(func(db *database, scripts map[scriptKey]*scriptRes) (success, bool) {
		k := scriptKey{q.t.coll, kind, q.t.id}
		old := scripts[k]
		if old == nil {
			q.answerError(http.StatusNotFound, msgResourceNotFound)
			return success{}, false
		}
		if !q.ifMatch(old.etag()) {
			return success{}, false
		}
		delete(scripts, k)
		return success{http.StatusNoContent, nil}, true
	})
}

// scriptDocs returns the scripts of the request's kind in its container,
// by id, or answers 404 and returns false.
func (q *request) scriptDocs() (*database, []metaDoc, bool) {
	db, c := q.container(subOwnerNotFound)
	if c == nil {
		return nil, nil, false
	}
	kind := scriptKindOf(q.t)
	db.mu.Lock()
	defer db.mu.Unlock()
	var docs []metaDoc
	for k, s := range db.scripts {
		if k.coll == q.t.coll && k.kind == kind {
			docs = append(docs, metaDoc{s.ID, s.json(db)})
		}
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].id < docs[j].id })
	return db, docs, true
}

func (q *request) listScripts() {
	db, docs, ok := q.scriptDocs()
	if !ok {
		return
	}
	out := make([][]byte, len(docs))
	for i, d := range docs {
		out[i] = d.json
	}
	q.replyFeed(ridString(containerRID(db.id, q.t.coll)), scriptKinds[scriptKindOf(q.t)].feed, out, "", 1)
}

func (q *request) queryScripts() {
	db, docs, ok := q.scriptDocs()
	if !ok {
		return
	}
	q.metaQuery(ridString(containerRID(db.id, q.t.coll)), scriptKinds[scriptKindOf(q.t)].feed, docs)
}
