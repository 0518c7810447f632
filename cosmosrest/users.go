package cosmosrest

import (
	"bytes"
	"cmp"
	"crypto/rand"
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
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/resid"
	"github.com/lethedb/lethe/internal/vfs"
)

// Users and permissions: REST resources of a database, as the service
// has them. A user is a name; a permission of a user grants All or Read on
// one container or document of the same database (optionally on one
// partition key value of a container), and each create, read, replace,
// list or query of a permission hands out a fresh resource token for it
// (_token), valid for x-ms-documentdb-expiry-seconds (10 to 18,000; one
// hour by default). resourcetoken.go checks the requests that present one.
//
// A durable database keeps its users and permissions in usersFile beside
// its store, rewritten whole (synced, then renamed into place) at every
// change: they are few and small.

// usersFile is the file in a durable database's directory that keeps its
// users and permissions.
const usersFile = "users.json"

// Limits of users and permissions, so that a client cannot grow the
// database's user file without bound.
const (
	maxUsersPerDatabase  = 10_000
	maxPermissionsOfUser = 1_000
)

// user is a user of a database.
type user struct {
	ID    string                 `json:"id"`
	TS    int64                  `json:"ts"`
	Perms map[string]*permission `json:"permissions"`
}

// permission is a permission of a user.
type permission struct {
	ID       string          `json:"id"`
	Mode     string          `json:"mode"`     // "All" or "Read"
	Resource string          `json:"resource"` // as the client gave it
	Coll     string          `json:"coll"`     // the container's id
	Doc      string          `json:"doc"`      // the document's id, "" for the whole container
	PK       json.RawMessage `json:"pk,omitempty"`
	// DocRID is the resource id of the document of a permission made on
	// its _self in a partitioned container without resourcePartitionKey:
	// it names one document in one partition, which the token reaches
	// alone.
	DocRID []byte `json:"docRid,omitempty"`
	TS     int64  `json:"ts"`
	// Nonce is new for every create and replace of the permission, and
	// every token carries it: a token outlives neither a delete (even one
	// followed by a create of the same id) nor a replace.
	Nonce string `json:"nonce"`
	// Orphaned is set when the container the permission names is deleted.
	// The service ties a permission to its container's _rid, so a
	// container created again under the same id is another resource: an
	// orphaned permission reaches nothing until it is replaced.
	Orphaned bool `json:"orphaned,omitempty"`
	// SentMode is Mode as the client spelled it ("all" for All): the
	// service returns what was sent. Empty in files written before it was
	// kept.
	SentMode string `json:"sentMode,omitempty"`
}

// Permission modes.
const (
	modeAll  = "All"
	modeRead = "Read"
)

// loadUsers reads a durable database's users, none when the file is not
// there.
func loadUsers(fsys vfs.FS, dir string) (map[string]*user, error) {
	list, err := readDBFile[*user](fsys, dir, usersFile)
	if err != nil {
		return nil, err
	}
	users := make(map[string]*user, len(list))
	for _, u := range list {
		if u.Perms == nil {
			u.Perms = map[string]*permission{}
		}
		users[u.ID] = u
	}
	return users, nil
}

// saveUsersLocked writes a durable database's users; db.mu is held.
func (db *database) saveUsersLocked() error {
	return writeDBFile(db, usersFile, db.users, func(a, b *user) bool { return a.ID < b.ID })
}

// readDBFile reads the JSON list a durable database keeps in file (its
// users, its scripts), none when the file is not there.
func readDBFile[T any](fsys vfs.FS, dir, file string) ([]T, error) {
	b, err := vfs.ReadFile(fsys, filepath.Join(dir, file))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var list []T
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("%s is damaged: %w", filepath.Join(dir, file), err)
	}
	return list, nil
}

// writeDBFile writes the values of m, in the order less says, as the JSON
// list of a durable database's file (synced, then renamed into place);
// nothing for a database in memory.
func writeDBFile[K comparable, V any](db *database, file string, m map[K]V, less func(a, b V) bool) error {
	if db.path == "" {
		return nil
	}
	list := make([]V, 0, len(m))
	for _, v := range m {
		list = append(list, v)
	}
	sort.Slice(list, func(i, j int) bool { return less(list[i], list[j]) })
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(db.fs, filepath.Join(db.path, file), b)
}

// orphanPermissionsLocked marks orphaned (or, with orphaned false, no
// longer orphaned) every permission on the container coll, and saves the
// users; db.mu is held. On a failed save the users are as before.
func (db *database) orphanPermissionsLocked(coll string, orphaned bool) error {
	saved := copyUsers(db.users)
	for _, u := range db.users {
		for _, p := range u.Perms {
			if p.Coll == coll {
				p.Orphaned = orphaned
			}
		}
	}
	if err := db.saveUsersLocked(); err != nil {
		db.users = saved
		return err
	}
	return nil
}

// copyUsers returns a deep copy of users, to restore when a save fails.
func copyUsers(users map[string]*user) map[string]*user {
	out := make(map[string]*user, len(users))
	for id, u := range users {
		cu := *u
		cu.Perms = make(map[string]*permission, len(u.Perms))
		for pid, p := range u.Perms {
			cp := *p
			cu.Perms[pid] = &cp
		}
		out[id] = &cu
	}
	return out
}

// changeUsers applies change to the database's users under db.mu, saves
// them and answers the request with the success change returns. change
// answers a refusal itself and reports false; when it does, or the save
// fails, the users are as before.
func (q *request) changeUsers(db *database, change func(users map[string]*user) (success, bool)) {
	q.changeSaved(db, "users", func() func() {
		before := copyUsers(db.users)
		return func() { db.users = before }
	}, func() (success, bool) { return change(db.users) }, db.saveUsersLocked)
}

// success is a change's successful answer: its status and JSON body (nil
// for none).
type success struct {
	status int
	body   []byte
}

// changeSaved applies change to what a database keeps in a file of its
// own (its users, its scripts) under db.mu, saves it with save, and
// answers the request with the success change returns. change reports
// false when it refused and has answered the refusal itself. snapshot,
// called first, returns what puts things back as they were: it is called
// when change refuses or the save fails.
func (q *request) changeSaved(db *database, what string, snapshot func() (restore func()), change func() (success, bool), save func() error) {
	db.mu.Lock()
	restore := snapshot()
	done, ok := change()
	if !ok {
		restore()
		db.mu.Unlock()
		return
	}
	if err := save(); err != nil {
		restore()
		db.mu.Unlock()
		q.h.logFailure(q.r, http.StatusInternalServerError, err)
		q.answerError(http.StatusInternalServerError, withDetail(msgInternal, "saving the "+what+": "+err.Error()))
		return
	}
	db.mu.Unlock()
	q.reply(done.status, done.body, 1)
}

func newNonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// userRID and permissionRID derive the resource ids of users and
// permissions, as rid.go derives the others'.
func userRID(db, id string) []byte {
	v := hash64("user", db, id)
	return append(databaseRID(db), byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

func permissionRID(db, user, id string) []byte {
	v := hash64("perm", db, user, id)
	r := userRID(db, user)
	for i := range 8 {
		r = append(r, byte(v>>(8*i)))
	}
	return r
}

func (u *user) etag(db string) string {
	return fmt.Sprintf("%016x", hash64("useretag", db, u.ID, strconv.FormatInt(u.TS, 10)))
}

func (p *permission) etag() string {
	return fmt.Sprintf("%016x", hash64("permetag", p.ID, p.Nonce))
}

// json writes a user's properties, as Cosmos DB does.
func (u *user) json(db *database) []byte {
	rid := userRID(db.id, u.ID)
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	writeJSONString(&b, u.ID)
	fmt.Fprintf(&b, `,"_rid":%q,"_self":"dbs/%s/users/%s/","_etag":%s,"_permissions":"permissions/","_ts":%d}`,
		ridString(rid), ridString(db.rid), ridString(rid), strconv.Quote(quoteETag(u.etag(db.id))), u.TS)
	return b.Bytes()
}

// json writes a permission's properties with a token valid until exp.
func (q *request) permissionJSON(db *database, u *user, p *permission, exp time.Time) []byte {
	rid := permissionRID(db.id, u.ID, p.ID)
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	writeJSONString(&b, p.ID)
	b.WriteString(`,"permissionMode":`)
	writeJSONString(&b, cmp.Or(p.SentMode, p.Mode))
	b.WriteString(`,"resource":`)
	writeJSONString(&b, p.Resource)
	if p.PK != nil {
		b.WriteString(`,"resourcePartitionKey":`)
		b.Write(p.PK)
	}
	fmt.Fprintf(&b, `,"_rid":%q,"_self":"dbs/%s/users/%s/permissions/%s/","_etag":%s,"_ts":%d,"_token":`,
		ridString(rid), ridString(db.rid), ridString(userRID(db.id, u.ID)), ridString(rid), strconv.Quote(quoteETag(p.etag())), p.TS)
	writeJSONString(&b, q.h.mintResourceToken(tokenClaims{DB: db.id, User: u.ID, Perm: p.ID, Nonce: p.Nonce, Exp: exp.Unix()}))
	b.WriteByte('}')
	return b.Bytes()
}

// tokenExpiry reads x-ms-documentdb-expiry-seconds: when the tokens this
// request hands out expire. It answers 400 and returns false when the
// header is not a count of seconds from 10 to 18,000.
func (q *request) tokenExpiry() (time.Time, bool) {
	secs := int64(3600)
	if v := q.r.Header.Get("x-ms-documentdb-expiry-seconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 10 || n > 18000 {
			q.answerError(http.StatusBadRequest, fmt.Sprintf("x-ms-documentdb-expiry-seconds %q is not a validity period from 10 to 18000 seconds", clip(v)))
			return time.Time{}, false
		}
		secs = n
	}
	return time.Now().Add(time.Duration(secs) * time.Second), true
}

// validateResourceID checks the id of a user or permission as the ids of
// databases are checked.
func validateResourceID(kind, id string) error { return resid.Check(kind, id) }

// readUserBody reads the body of a user's create or replace.
func (q *request) readUserBody() (string, bool) {
	var in struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal(q.body, &in); err != nil || in.ID == nil {
		q.answerError(http.StatusBadRequest, bodyMessage(err, "the body must be a JSON object with a string \"id\""))
		return "", false
	}
	if err := validateResourceID("user", *in.ID); err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return "", false
	}
	return *in.ID, true
}

// userChange reads what a create or a replace of a user needs: the
// database and the user's id in the body; false when it has answered a
// refusal.
func (q *request) userChange() (*database, string, bool) {
	db := q.database(subOwnerNotFound)
	if db == nil {
		return nil, "", false
	}
	id, ok := q.readUserBody()
	return db, id, ok
}

// createUser answers POST on a database's users (an upsert with
// x-ms-documentdb-is-upsert).
func (q *request) createUser() {
	db, id, ok := q.userChange()
	if !ok {
		return
	}
	upsert := headerTrue(q.r.Header.Get("x-ms-documentdb-is-upsert"))
	q.changeUsers(db, func(users map[string]*user) (success, bool) {
		if u, ok := users[id]; ok {
			if !upsert {
				q.answerError(http.StatusConflict, msgResourceExists)
				return success{}, false
			}
			return success{http.StatusOK, u.json(db)}, true
		}
		if len(users) >= maxUsersPerDatabase {
			q.answerError(http.StatusBadRequest, fmt.Sprintf("the database has %d users, the most lethe keeps", maxUsersPerDatabase))
			return success{}, false
		}
		u := &user{ID: id, TS: q.instant().Unix(), Perms: map[string]*permission{}}
		users[id] = u
		return success{http.StatusCreated, u.json(db)}, true
	})
}

// findUser finds the request's user under db.mu, or answers 404.
func (q *request) findUserLocked(db *database) *user {
	u := db.users[q.t.user]
	if u == nil {
		q.answerError(http.StatusNotFound, msgResourceNotFound)
	}
	return u
}

func (q *request) readUser() {
	db := q.database(subOwnerNotFound)
	if db == nil {
		return
	}
	q.readUsers(db, func() ([]byte, bool) {
		if u := q.findUserLocked(db); u != nil {
			return u.json(db), true
		}
		return nil, false
	})
}

// readUsers answers a read of a user or a permission: body, called under
// db.mu, returns the resource's JSON, or false when it has answered a
// refusal itself.
func (q *request) readUsers(db *database, body func() ([]byte, bool)) {
	db.mu.Lock()
	out, ok := body()
	db.mu.Unlock()
	if ok {
		q.reply(http.StatusOK, out, 1)
	}
}

// replaceUser answers PUT on a user, with If-Match: its id may change (its
// permissions go with it, and the tokens handed out under the old id stop
// working).
func (q *request) replaceUser() {
	db, id, ok := q.userChange()
	if !ok {
		return
	}
	q.changeUsers(db, func(users map[string]*user) (success, bool) {
		u := q.findUserLocked(db)
		if u == nil || !q.ifMatch(u.etag(db.id)) {
			return success{}, false
		}
		if id != u.ID {
			if _, taken := users[id]; taken {
				q.answerError(http.StatusConflict, msgResourceExists)
				return success{}, false
			}
			delete(users, u.ID)
			u.ID = id
			users[id] = u
		}
		u.TS = q.instant().Unix()
		return success{http.StatusOK, u.json(db)}, true
	})
}

// deleteUser deletes a user and its permissions: their tokens stop
// working at once.
func (q *request) deleteUser() {
	db := q.database(subOwnerNotFound)
	if db == nil {
		return
	}
	q.changeUsers(db, func(users map[string]*user) (success, bool) {
		if u := q.findUserLocked(db); u == nil || !q.ifMatch(u.etag(db.id)) {
			return success{}, false
		}
		delete(users, q.t.user)
		return success{http.StatusNoContent, nil}, true
	})
}

// userDocs returns a database's users, by id, as documents.
func (q *request) userDocs(db *database) []metaDoc {
	db.mu.Lock()
	defer db.mu.Unlock()
	docs := make([]metaDoc, 0, len(db.users))
	for _, u := range db.users {
		docs = append(docs, metaDoc{u.ID, u.json(db)})
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].id < docs[j].id })
	return docs
}

func (q *request) listUsers() {
	db := q.database(subOwnerNotFound)
	if db == nil {
		return
	}
	var docs [][]byte
	for _, d := range q.userDocs(db) {
		docs = append(docs, d.json)
	}
	q.replyFeed(ridString(db.rid), "Users", docs, "", 1)
}

func (q *request) queryUsers() {
	db := q.database(subOwnerNotFound)
	if db == nil {
		return
	}
	q.metaQuery(ridString(db.rid), "Users", q.userDocs(db))
}

// permissionBody is the body of a permission's create or replace.
type permissionBody struct {
	ID       *string         `json:"id"`
	Mode     *string         `json:"permissionMode"`
	Resource *string         `json:"resource"`
	PK       json.RawMessage `json:"resourcePartitionKey"`
}

// readPermissionBody reads and checks a permission's create or replace:
// its resource is a container or a document of the user's database (by
// id), and its partition key, if any, a partition key value.
func (q *request) readPermissionBody(db *database) (*permission, bool) {
	var in permissionBody
	if err := json.Unmarshal(q.body, &in); err != nil || in.ID == nil || in.Mode == nil || in.Resource == nil {
		q.answerError(http.StatusBadRequest, "the body must be a JSON object with the strings \"id\", \"permissionMode\" (All or Read) and \"resource\"")
		return nil, false
	}
	if err := validateResourceID("permission", *in.ID); err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return nil, false
	}
	p := &permission{ID: *in.ID, SentMode: *in.Mode, TS: q.instant().Unix(), Nonce: q.nonce()}
	switch {
	case strings.EqualFold(*in.Mode, modeAll):
		p.Mode = modeAll
	case strings.EqualFold(*in.Mode, modeRead):
		p.Mode = modeRead
	default:
		q.answerError(http.StatusBadRequest, fmt.Sprintf("the permissionMode %q is not All or Read", clip(*in.Mode)))
		return nil, false
	}
	res, f := q.permissionResourceByName(db, *in.Resource)
	switch f {
	case foundFailed:
		return nil, false
	case foundNone:
		// No container has an id with a '/': the permission reaches
		// nothing, and clashes only with one on the same resource.
		p.Resource = strings.Trim(*in.Resource, "/")
		p.Coll, p.Orphaned = p.Resource, true
		return p, true
	}
	coll, doc, err := parsePermissionResource(res, db.id)
	if err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return nil, false
	}
	p.Resource, p.Coll, p.Doc = strings.Trim(*in.Resource, "/"), coll, doc
	if len(in.PK) > 0 && !bytes.Equal(in.PK, []byte("null")) {
		pk, err := parsePKHeader(string(in.PK))
		if err != nil {
			q.answerError(http.StatusBadRequest, "the resourcePartitionKey is not a partition key value: "+err.Error())
			return nil, false
		}
		p.PK = json.RawMessage(pk.String())
	}
	if doc != "" && p.PK == nil {
		// An id is unique only within its partition: a document's
		// permission names its partition key, or it would reach the
		// documents of that id in every partition.
		c, err := db.store.Container(coll)
		if err != nil {
			q.answerError(http.StatusBadRequest, fmt.Sprintf("the resource %q is in no container of the database", clip(*in.Resource)))
			return nil, false
		}
		if props, err := c.Read(q.ctx()); err != nil || len(props.PartitionKeyDefinition.Paths) > 0 {
			if rid := q.h.documentSelfRID(*in.Resource); err == nil && rid != nil {
				p.DocRID = rid
				return p, true
			}
			q.answerError(http.StatusBadRequest, "a document's permission in a partitioned container names the document's partition key in resourcePartitionKey")
			return nil, false
		}
	}
	return p, true
}

// parsePermissionResource checks a permission's resource path: a
// container (dbs/<db>/colls/<c>) or a document (.../docs/<d>) of database
// db, named by ids (escaped as in request paths, or not). It returns the
// container's id and the document's ("" for a container).
func parsePermissionResource(res, db string) (coll, doc string, err error) {
	rt, err := parsePath("/"+strings.Trim(res, "/"), computeGateway)
	if err != nil || (len(rt.segs) != 4 && len(rt.segs) != 6) || rt.segs[0] != "dbs" || rt.segs[2] != "colls" || (len(rt.segs) == 6 && rt.segs[4] != "docs") {
		return "", "", fmt.Errorf("the resource %q is not the path of a container (dbs/<db>/colls/<container>) or of a document (…/docs/<id>)", clip(res))
	}
	if rt.segs[1] != db {
		return "", "", fmt.Errorf("the resource %q is not in the database %q of the user", clip(res), clip(db))
	}
	if len(rt.segs) == 6 {
		doc = rt.segs[5]
	}
	return rt.segs[3], doc, nil
}

// createPermission answers POST on a user's permissions (an upsert with
// x-ms-documentdb-is-upsert).
func (q *request) createPermission() {
	db, exp, p, ok := q.permissionChange()
	if !ok {
		return
	}
	upsert := headerTrue(q.r.Header.Get("x-ms-documentdb-is-upsert"))
	status := http.StatusCreated
	q.changeUsers(db, func(map[string]*user) (success, bool) {
		u := q.findUserLocked(db)
		if u == nil {
			return success{}, false
		}
		if old, ok := u.Perms[p.ID]; ok {
			if !upsert {
				q.answerError(http.StatusConflict, msgResourceExists)
				return success{}, false
			}
			delete(u.Perms, old.ID)
			status = http.StatusOK
		}
		if q.permissionClashLocked(u, p, nil) {
			return success{}, false
		}
		if len(u.Perms) >= maxPermissionsOfUser {
			q.answerError(http.StatusBadRequest, fmt.Sprintf("the user has %d permissions, the most lethe keeps", maxPermissionsOfUser))
			return success{}, false
		}
		u.Perms[p.ID] = p
		return success{status, q.permissionJSON(db, u, p, exp)}, true
	})
}

// permissionChange reads what a create or a replace of a permission
// needs: the database, the expiry of the token it hands out and the
// permission in the body; false when it has answered a refusal.
func (q *request) permissionChange() (*database, time.Time, *permission, bool) {
	db := q.database(subOwnerNotFound)
	if db == nil {
		return nil, time.Time{}, nil, false
	}
	exp, ok := q.tokenExpiry()
	if !ok {
		return nil, time.Time{}, nil, false
	}
	p, ok := q.readPermissionBody(db)
	if !ok {
		return nil, time.Time{}, nil, false
	}
	return db, exp, p, true
}

// permissionClashLocked answers 409, under db.mu, and reports true when a
// permission of u other than except is on p's resource: a user has one
// permission per resource.
func (q *request) permissionClashLocked(u *user, p, except *permission) bool {
	for _, other := range u.Perms {
		if other != except && other.Coll == p.Coll && other.Doc == p.Doc {
			q.answerError(http.StatusConflict, withDetail(msgResourceExists, fmt.Sprintf("the user already has a permission on %q (%q): one permission per resource", clip(p.Resource), clip(other.ID))))
			return true
		}
	}
	return false
}

// findPermissionLocked finds the request's permission under db.mu, or
// answers 404.
func (q *request) findPermissionLocked(db *database) (*user, *permission) {
	u := q.findUserLocked(db)
	if u == nil {
		return nil, nil
	}
	p := u.Perms[q.t.id]
	if p == nil {
		q.answerError(http.StatusNotFound, msgResourceNotFound)
		return nil, nil
	}
	return u, p
}

// readPermission answers GET on a permission, with a new token.
func (q *request) readPermission() {
	db := q.database(subOwnerNotFound)
	if db == nil {
		return
	}
	exp, ok := q.tokenExpiry()
	if !ok {
		return
	}
	q.readUsers(db, func() ([]byte, bool) {
		if u, p := q.findPermissionLocked(db); p != nil {
			return q.permissionJSON(db, u, p, exp), true
		}
		return nil, false
	})
}

// replacePermission answers PUT on a permission: the tokens handed out
// before stop working, and a new one comes back.
func (q *request) replacePermission() {
	db, exp, p, ok := q.permissionChange()
	if !ok {
		return
	}
	q.changeUsers(db, func(map[string]*user) (success, bool) {
		u, old := q.findPermissionLocked(db)
		if old == nil || !q.ifMatch(old.etag()) {
			return success{}, false
		}
		if p.ID != old.ID {
			if _, taken := u.Perms[p.ID]; taken {
				q.answerError(http.StatusConflict, msgResourceExists)
				return success{}, false
			}
		}
		if q.permissionClashLocked(u, p, old) {
			return success{}, false
		}
		delete(u.Perms, old.ID)
		u.Perms[p.ID] = p
		return success{http.StatusOK, q.permissionJSON(db, u, p, exp)}, true
	})
}

func (q *request) deletePermission() {
	db := q.database(subOwnerNotFound)
	if db == nil {
		return
	}
	q.changeUsers(db, func(map[string]*user) (success, bool) {
		u, p := q.findPermissionLocked(db)
		if p == nil || !q.ifMatch(p.etag()) {
			return success{}, false
		}
		delete(u.Perms, p.ID)
		return success{http.StatusNoContent, nil}, true
	})
}

// permissionDocs returns the request's database and its user's
// permissions, by id, each with a new token; ok is false when the answer
// (404, 400) was given.
func (q *request) permissionDocs() (*database, []metaDoc, bool) {
	db := q.database(subOwnerNotFound)
	if db == nil {
		return nil, nil, false
	}
	exp, ok := q.tokenExpiry()
	if !ok {
		return nil, nil, false
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	u := q.findUserLocked(db)
	if u == nil {
		return nil, nil, false
	}
	docs := make([]metaDoc, 0, len(u.Perms))
	for _, p := range u.Perms {
		docs = append(docs, metaDoc{p.ID, q.permissionJSON(db, u, p, exp)})
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].id < docs[j].id })
	return db, docs, true
}

func (q *request) listPermissions() {
	db, docs, ok := q.permissionDocs()
	if !ok {
		return
	}
	var out [][]byte
	for _, d := range docs {
		out = append(out, d.json)
	}
	q.replyFeed(ridString(userRID(db.id, q.t.user)), "Permissions", out, "", 1)
}

func (q *request) queryPermissions() {
	db, docs, ok := q.permissionDocs()
	if !ok {
		return
	}
	q.metaQuery(ridString(userRID(db.id, q.t.user)), "Permissions", docs)
}

// scope is what a permission lets a token's bearer touch.
type scope struct {
	mode     string
	db       string
	coll     string
	document string // the document's id, "" for the whole container
	pk       *lethe.PartitionKey
	docRID   []byte // the document's resource id, when it names its partition (permission.DocRID)
}

// permissionScope returns the current scope of the permission a token
// names, or false when the user, the permission or the same instance of
// it (its nonce) is gone.
func (h *Handler) permissionScope(c tokenClaims) (scope, bool) {
	db, ok := h.lookup(c.DB)
	if !ok {
		return scope{}, false
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	u := db.users[c.User]
	if u == nil {
		return scope{}, false
	}
	p := u.Perms[c.Perm]
	if p == nil || p.Nonce != c.Nonce {
		return scope{}, false
	}
	s := scope{mode: p.Mode, db: db.id, coll: p.Coll, document: p.Doc, docRID: p.DocRID}
	if p.Orphaned {
		s.coll = "" // no container has the empty id: every request is on another resource
	}
	if p.PK != nil {
		pk, err := parsePKHeader(string(p.PK))
		if err != nil {
			return scope{}, false
		}
		s.pk = &pk
	}
	return s, true
}
