package cosmosrest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lethedb/lethe"
)

// Resource-id addressing. Cosmos DB serves every resource by the path of
// its resource ids as well as by name: dbs/{rid}/colls/{rid}/docs/{rid},
// the _self link each resource carries, and the form the legacy SDKs (the
// Python SDK 3.x, .NET's DocumentClient) use once they have read a
// resource. A path is addressed by resource ids when its database segment
// is one: a database resource id (4 bytes, base64 with '-' for '/', as
// ridString writes it) that is not also the name of a database, which keeps
// its name-based paths. Every id of such a path is then a resource id.
//
// Such a request is signed over the resource type and the last resource
// id of its path, lowercased (the resource's for an item, its owner's for
// a feed: "post\ncolls\n-dwzaa==\n..." for POST dbs/-DWZAA==/colls), as the
// SDKs sign it. Once authenticated, its ids are resolved to the names of
// what they identify, and the request is served and authorized as the same
// request by name would be: a resource token reaches the same resources
// either way. An id that identifies nothing is 404, substatus 1003 when it
// is an owner's (the database of a container, say).
//
// Resource ids are derived from names (rid.go), so they are the same after
// a restart with Config.Dir. Databases, containers, users, permissions and
// scripts are found by deriving the ids of the few the handler has;
// documents, whose ids come from their partition key and id, through a
// per-container index (docRIDIndex).

// addressedByRID reports whether rt addresses resources by their resource
// ids, and returns it with the link such a request is signed over.
func (h *Handler) addressedByRID(rt route) (route, bool) {
	s := rt.segs
	if len(s) < 2 || s[0] != "dbs" {
		return rt, false
	}
	if _, ok := parseRID(s[1], 4); !ok {
		return rt, false
	}
	if _, named := h.lookup(s[1]); named {
		return rt, false
	}
	if n := len(s); n == 6 && s[2] == "colls" && s[4] == "operations" {
		rt.link = strings.ToLower(s[3]) // signed as a request on the container, as parsePath reads it
	} else if n%2 == 0 {
		rt.link = strings.ToLower(s[n-1])
	} else {
		rt.link = strings.ToLower(s[n-2])
	}
	return rt, true
}

// found says what a resource id of a path identified.
type found int

const (
	foundNone   found = iota // nothing: 404
	foundOne                 // a resource, whose name replaced the id
	foundFailed              // the lookup failed, and the failure was answered
)

// resolveRIDs replaces the resource ids of the request's path (q.rt, which
// addressedByRID accepted) by the names of the resources they identify.
// When one identifies nothing, it answers 404 and reports false: the
// resource's own 404 when the path names it, otherwise its owner's
// (substatus 1003).
func (q *request) resolveRIDs() bool {
	segs, at, f := q.namesOf(q.rt.segs)
	switch f {
	case foundFailed:
		return false
	case foundNone:
		sub := subOwnerNotFound
		if n := len(segs); n%2 == 0 && at == n-1 {
			sub = 0
		}
		apiError{status: http.StatusNotFound, msg: notFoundMessage(sub), sub: sub}.write(q.w)
		return false
	}
	q.rt.segs = segs
	return true
}

// namesOf returns the segments of a path by resource ids with each id
// replaced by the name of what it identifies; when one identifies nothing
// (foundNone), at is its index.
func (q *request) namesOf(rids []string) (segs []string, at int, f found) {
	segs = slices.Clone(rids)
	n := len(segs)
	db := q.h.databaseByRID(segs[1])
	if db == nil {
		return segs, 1, foundNone
	}
	segs[1] = db.id
	if n < 4 {
		return segs, 0, foundOne
	}
	switch segs[2] {
	case "colls":
		name, ok := db.containerByRID(segs[3])
		if !ok {
			return segs, 3, foundNone
		}
		segs[3] = name
		if n == 6 {
			return segs, 5, q.resolveContainerChild(db, segs)
		}
	case "users":
		user, perm, ok := db.userByRID(segs[3], segs)
		if !ok {
			return segs, 3, foundNone
		}
		segs[3] = user
		if n == 6 && segs[4] == "permissions" {
			if perm == "" {
				return segs, 5, foundNone
			}
			segs[5] = perm
		}
	}
	return segs, 0, foundOne
}

// permissionResourceByName returns res, the resource of a permission
// being created or replaced in db, as a path by name: a path by resource
// ids (the _self of a container or a document, as the legacy SDKs give
// it) is resolved as a request's path is. foundNone says that res is the
// path by resource ids of a container or document that db does not have:
// the service accepts a permission on any (the legacy Python SDK's suite
// makes one on "a random one"), which then reaches nothing. foundFailed
// says that the lookup failed, and its failure was answered.
func (q *request) permissionResourceByName(db *database, res string) (string, found) {
	rt, err := parsePath("/"+strings.Trim(res, "/"), computeGateway)
	if err != nil {
		return res, foundOne // parsePermissionResource says what is wrong
	}
	if _, byRID := q.h.addressedByRID(rt); !byRID || len(rt.segs) < 4 || rt.segs[2] != "colls" || (len(rt.segs) == 6 && rt.segs[4] != "docs") {
		return res, foundOne
	}
	segs, _, f := q.namesOf(rt.segs)
	switch {
	case f == foundFailed:
		return "", f
	case f == foundNone || segs[1] != db.id:
		return "", foundNone
	}
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/"), foundOne
}

// documentSelfRID returns the document resource id that res, a
// permission's resource, ends with when it is a document's path by
// resource ids (its _self), else nil.
func (h *Handler) documentSelfRID(res string) []byte {
	rt, err := parsePath("/"+strings.Trim(res, "/"), computeGateway)
	if err != nil {
		return nil
	}
	if _, byRID := h.addressedByRID(rt); !byRID || len(rt.segs) != 6 || rt.segs[4] != "docs" {
		return nil
	}
	rid, _ := parseRID(rt.segs[5], 16)
	return rid
}

// resolveContainerChild resolves segs[5], the resource id of a container's
// document, script or partition key range, to its id; segs[1] and segs[3]
// are names already.
func (q *request) resolveContainerChild(db *database, segs []string) found {
	crid := containerRID(db.id, segs[3])
	switch kind := segs[4]; kind {
	case "docs":
		id, f := q.documentByRID(db, segs[3], crid, segs[5])
		if f == foundOne {
			segs[5] = id
		}
		return f
	case "sprocs", "triggers", "udfs":
		rid, ok := parseRID(segs[5], 16)
		if !ok {
			return foundNone
		}
		db.mu.Lock()
		defer db.mu.Unlock()
		for k := range db.scripts {
			if k.coll == segs[3] && k.kind == scriptKind(kind) && bytes.Equal(scriptRID(db.id, k.coll, k.kind, k.id), rid) {
				segs[5] = k.id
				return foundOne
			}
		}
	case "pkranges":
		rid, _ := parseRID(segs[5], 16)
		if n, ok := pkRangeOfRID(crid, rid); ok {
			segs[5] = strconv.Itoa(n) // a range the container has not is the read's own 404
			return foundOne
		}
	case "conflicts":
		// A conflict's id is its resource id.
		if _, ok, _ := db.findConflict(segs[3], segs[5], false); ok {
			return foundOne
		}
	default:
		return foundOne // a kind lethe does not serve: classify says so
	}
	return foundNone
}

// ridOutsideScope reports whether rt, a path by resource ids below a
// container (one of its documents, scripts, conflicts, ranges, …), lies
// outside the container of the permission a resource token c names, or
// names a database or container that does not exist: such a request is
// refused before the rest of its path is looked up, so that a token's
// holder learns nothing of another container's documents from a 404, and
// starts no scan of them (docRIDIndex). A token whose permission is gone
// is left to authorize, which answers 401.
func (h *Handler) ridOutsideScope(c tokenClaims, rt route) bool {
	s := rt.segs
	if len(s) < 5 || s[2] != "colls" {
		return false
	}
	sc, ok := h.permissionScope(c)
	if !ok {
		return false
	}
	db := h.databaseByRID(s[1])
	if db == nil || db.id != sc.db {
		return true
	}
	name, found := db.containerByRID(s[3])
	return !found || name != sc.coll
}

// databaseByRID returns the database whose resource id is s, or nil.
func (h *Handler) databaseByRID(s string) *database {
	rid, ok := parseRID(s, 4)
	if !ok {
		return nil
	}
	for _, db := range h.databases() {
		if bytes.Equal(db.rid, rid) {
			return db
		}
	}
	return nil
}

// containerByRID returns the id of db's container whose resource id is s.
func (db *database) containerByRID(s string) (string, bool) {
	rid, ok := parseRID(s, 8)
	if !ok {
		return "", false
	}
	for _, id := range db.store.ContainerIDs() {
		if bytes.Equal(containerRID(db.id, id), rid) {
			return id, true
		}
	}
	return "", false
}

// userByRID returns the id of db's user whose resource id is s and, when
// segs names one of its permissions (segs[5]), that permission's id ("" if
// it has none of that resource id).
func (db *database) userByRID(s string, segs []string) (user, perm string, ok bool) {
	rid, ok := parseRID(s, 8)
	if !ok {
		return "", "", false
	}
	var prid []byte
	if len(segs) == 6 {
		prid, _ = parseRID(segs[5], 16)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, u := range db.users {
		if !bytes.Equal(userRID(db.id, u.ID), rid) {
			continue
		}
		for _, p := range u.Perms {
			if prid != nil && bytes.Equal(permissionRID(db.id, u.ID, p.ID), prid) {
				return u.ID, p.ID, true
			}
		}
		return u.ID, "", true
	}
	return "", "", false
}

// documentByRID returns the id of the document whose resource id is s in
// container coll (resource id crid) of db. A request that names a
// partition key names the document's: the same id in another partition is
// another document.
func (q *request) documentByRID(db *database, coll string, crid []byte, s string) (string, found) {
	rid, ok := parseRID(s, 16)
	if !ok || !bytes.Equal(rid[:8], crid) {
		return "", foundNone
	}
	c, err := db.store.Container(coll)
	if err != nil {
		return "", foundNone
	}
	p, err := c.Read(q.ctx())
	if err != nil {
		q.fail(err, 0, subOwnerNotFound)
		return "", foundFailed
	}
	id, ok, err := db.docRIDs.index(coll, c).lookup(q.ctx(), p, crid, rid)
	if err != nil {
		q.fail(err, 0, subOwnerNotFound)
		return "", foundFailed
	}
	if !ok {
		return "", foundNone
	}
	if v := q.r.Header.Get("x-ms-documentdb-partitionkey"); v != "" {
		pk, err := parsePKHeader(v)
		if err == nil && len(p.PartitionKeyDefinition.Paths) == 0 && (pk == lethe.NonePartitionKey || pk == lethe.NewPartitionKey()) {
			pk = lethe.NewPartitionKey()
		}
		if err == nil && !bytes.Equal(documentRID(crid, pk.String(), id), rid) {
			return "", foundNone
		}
	}
	return id, foundOne
}

// docRIDIndexes are a database's document indexes, by container id.
type docRIDIndexes struct {
	mu sync.Mutex // guards m; never held while the store is called
	m  map[string]*docRIDIndex
	n  atomic.Int32 // len(m), read without mu by note
}

// index returns the index of container c, whose id is coll: a new one
// when c is not the container it was made for (it was deleted, and
// another made with its id).
func (x *docRIDIndexes) index(coll string, c *lethe.Container) *docRIDIndex {
	x.mu.Lock()
	defer x.mu.Unlock()
	if i := x.m[coll]; i != nil && i.c == c {
		return i
	}
	if x.m == nil {
		x.m = map[string]*docRIDIndex{}
	}
	i := &docRIDIndex{c: c}
	x.m[coll] = i
	x.n.Store(int32(len(x.m)))
	return i
}

// forget drops the index of the container coll, when it is deleted.
func (x *docRIDIndexes) forget(coll string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.m, coll)
	x.n.Store(int32(len(x.m)))
}

// note records that the front returned the document id, of resource id
// rid, of the container coll (withSelf), in the container's index if it
// has one: a client that reads a document by the _self it was given finds
// it without a look at the change feed, or a scan where there is none.
// It costs an atomic load while no container of the database has an
// index.
func (x *docRIDIndexes) note(coll string, rid []byte, id string) {
	if x.n.Load() == 0 {
		return
	}
	x.mu.Lock()
	i := x.m[coll]
	x.mu.Unlock()
	if i == nil {
		return
	}
	i.notesMu.Lock()
	defer i.notesMu.Unlock()
	if i.noted == nil {
		i.noted = map[uint64]string{}
	}
	i.noted[ridKey(rid)] = id
}

// ridKey is what a document index keys a document's resource id by: the
// 8 bytes of its own.
func ridKey(rid []byte) uint64 { return binary.LittleEndian.Uint64(rid[8:]) }

// docRIDIndex maps the resource ids of a container's documents to their
// ids. It is made the first time a document of the container is addressed
// by resource id, by one query of every item, and kept current through the
// container's change feed: a resource id it does not know is looked up
// again after reading the changes made since it last looked, so that a
// document created since is found at the cost of the changes, not of a
// scan. Without a change feed (Config.NoChangeFeed), or when the feed has
// forgotten changes it did not read (ErrChangeFeedTrimmed), an unknown
// resource id costs a new scan (but for the documents the front returned
// meanwhile, which it notes). Deleted and expired documents may stay in
// the map: the request that reads one by id answers 404, as it should. It
// holds 8 bytes and the id of each document, about 50 bytes for short
// ids: 50 MB for a million documents, once one of them is read by resource
// id.
type docRIDIndex struct {
	mu  sync.Mutex
	c   *lethe.Container
	ids map[uint64]string // by the last 8 bytes of the resource id
	// scan is the query of every item while the index is made: a page
	// that fails (429) leaves it to resume at the next lookup.
	scan *lethe.QueryItemsPager
	// feed reads the changes since the index was made; nil when the
	// container has no change feed.
	feed  *lethe.ChangeFeedPager
	built bool
	scans int // the scans begun, for tests

	// noted are the documents the front returned since the last lookup
	// (docRIDIndexes.note). notesMu guards it alone and is never held
	// while the store is called: a procedure's documents are noted while
	// it runs, and a lookup may be scanning the container then.
	notesMu sync.Mutex
	noted   map[uint64]string
}

// lookup returns the id of the document of resource id rid in the
// container (properties p, resource id crid), and whether it has one.
func (x *docRIDIndex) lookup(ctx context.Context, p lethe.ContainerProperties, crid, rid []byte) (string, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.takeNoted()
	key := ridKey(rid)
	if x.built {
		if id, ok := x.ids[key]; ok {
			return id, true, nil
		}
		if err := x.catchUp(ctx, p, crid); err != nil {
			return "", false, err
		}
	}
	if !x.built {
		if err := x.build(ctx, p, crid); err != nil {
			return "", false, err
		}
	}
	id, ok := x.ids[key]
	return id, ok, nil
}

// takeNoted moves the documents noted since the last lookup into the
// index; before the index is begun, the scan that begins it finds them.
func (x *docRIDIndex) takeNoted() {
	x.notesMu.Lock()
	noted := x.noted
	x.noted = nil
	x.notesMu.Unlock()
	if x.ids == nil {
		return
	}
	for k, id := range noted {
		x.ids[k] = id
	}
}

// build reads every item of the container into the index, resuming a
// scan a failure stopped.
func (x *docRIDIndex) build(ctx context.Context, p lethe.ContainerProperties, crid []byte) error {
	if x.scan == nil {
		x.ids, x.feed = map[uint64]string{}, nil
		x.scans++
		if p.ChangeFeedPolicy != nil {
			// The feed's position is taken before the scan, so that
			// what is written while it runs is read after it.
			x.feed = x.c.NewChangeFeedPager(&lethe.ChangeFeedOptions{StartFrom: lethe.ChangeFeedStartFromNow()})
			if _, err := x.feed.NextPage(ctx); err != nil {
				x.feed = nil
				return err
			}
		}
		x.scan = x.c.NewQueryItemsPager("SELECT * FROM c", lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 1000})
	}
	for x.scan.More() {
		page, err := x.scan.NextPage(ctx)
		if err != nil {
			return err
		}
		x.add(page.Items, p.PartitionKeyDefinition.Paths, crid)
	}
	x.scan, x.built = nil, true
	return nil
}

// catchUp reads the changes made since the index last looked, or, when
// they cannot be read, has the index made again.
func (x *docRIDIndex) catchUp(ctx context.Context, p lethe.ContainerProperties, crid []byte) error {
	if x.feed == nil {
		x.built = false
		return nil
	}
	for {
		page, err := x.feed.NextPage(ctx)
		if errors.Is(err, lethe.ErrChangeFeedTrimmed) {
			x.built = false
			return nil
		}
		if err != nil {
			return err
		}
		if len(page.Items) == 0 {
			return nil
		}
		x.add(page.Items, p.PartitionKeyDefinition.Paths, crid)
	}
}

// add indexes the documents docs of a container with the partition key
// paths paths.
func (x *docRIDIndex) add(docs [][]byte, paths []string, crid []byte) {
	for _, doc := range docs {
		id, ok := stringMember(doc, "id")
		if !ok {
			continue
		}
		x.ids[ridKey(documentRID(crid, docPartitionKey(doc, paths).String(), id))] = id
	}
}
