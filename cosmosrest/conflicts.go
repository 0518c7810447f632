package cosmosrest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest/internal/script"
	"github.com/lethedb/lethe/internal/vfs"
)

// Conflicts. A container's conflictResolutionPolicy is fixed when it is
// created and decides, in an account of several write regions, what
// becomes of two writes of one item made in two regions within the lag
// (each region applies the other's change with
// lethe.Container.ApplyReplicaChangeResolved):
//
//   - LastWriterWins: a delete wins over the writes concurrent with it
//     (a write made after it, where it was known, wins over both); else
//     the version with the higher number at the policy's path (a property
//     at the item's root; "/_ts", the default, is the versions' instants)
//     wins, in every region; no conflict is recorded.
//   - Custom with a procedure: every region first keeps the Last Writer
//     Wins winner by /_ts; the account's first write region (the arbiter)
//     then runs the merge procedure, (incomingItem, existingItem,
//     isTombstone, conflictingItems), over the item as it was there before
//     the conflict (its existingItem), and commits the procedure's writes
//     as one write, shipped to every region as any: so every region ends
//     with the procedure's result, whichever way round it saw the pair. A
//     procedure that is missing, throws or runs out of its budget commits
//     nothing: the arbiter records the loser in its conflicts feed. Of a
//     unique-key conflict (lethe.ConflictOutcome.Colliding), the
//     procedure gets no existingItem and the colliding items as
//     conflictingItems, restored first if Last Writer Wins removed them.
//   - Custom without a procedure: every region that sees the conflict
//     records the loser in its conflicts feed; the item keeps the Last
//     Writer Wins winner by /_ts, the same in every region.
//
// A region's conflicts feed (GET …/conflicts, its queries, a conflict read
// or deleted by id) holds the conflicts that region recorded. With Dir,
// the policies are kept in conflictPoliciesFile, rewritten whole at each
// change, and the feeds in conflictLogFile (conflictlog.go), beside the
// database's store.

// The modes of a conflict resolution policy, as the service spells them.
const (
	modeLWW    = "LastWriterWins"
	modeCustom = "Custom"
)

// conflictPolicy is a container's conflict resolution policy as the
// service returns it, and as conflictPoliciesFile keeps it (with Coll).
type conflictPolicy struct {
	Coll      string `json:"coll,omitempty"`
	Mode      string `json:"mode"`
	Path      string `json:"conflictResolutionPath"`
	Procedure string `json:"conflictResolutionProcedure"`
}

// defaultConflictPolicy is the policy of a container created without one.
var defaultConflictPolicy = conflictPolicy{Mode: modeLWW, Path: "/_ts"}

// conflictPolicyBody is a conflictResolutionPolicy as a create or replace
// sends it.
type conflictPolicyBody struct {
	Mode      *string `json:"mode"`
	Path      *string `json:"conflictResolutionPath"`
	Procedure *string `json:"conflictResolutionProcedure"`
}

// parseConflictPolicy checks a policy as the service does, with its
// texts: a mode of LastWriterWins (the default) or Custom; LastWriterWins
// with a path of one property from the item's root ("" means /_ts) and no
// procedure; Custom with a procedure (or none) and no path.
func parseConflictPolicy(in *conflictPolicyBody) (conflictPolicy, error) {
	if in == nil {
		return defaultConflictPolicy, nil
	}
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	mode, path, proc := str(in.Mode), str(in.Path), str(in.Procedure)
	switch {
	case mode == "" || strings.EqualFold(mode, modeLWW):
		if proc != "" {
			return conflictPolicy{}, messageError("LastWriterWins conflict resolution mode should not have conflict resolution procedure set.")
		}
		if path == "" {
			path = "/_ts"
		}
		name, ok := strings.CutPrefix(path, "/")
		if !ok || name == "" || strings.Contains(name, "/") || name != "_ts" && (name == "_etag" || frontProperties[name]) {
			return conflictPolicy{}, messageError("Invalid path '" + clip(path) + "' for last writer wins conflict resolution.")
		}
		return conflictPolicy{Mode: modeLWW, Path: path}, nil
	case strings.EqualFold(mode, modeCustom):
		if path != "" {
			return conflictPolicy{}, messageError("Custom conflict resolution mode should not have conflict resolution path set.")
		}
		return conflictPolicy{Mode: modeCustom, Procedure: proc}, nil
	}
	return conflictPolicy{}, fmt.Errorf("the conflict resolution mode %q is neither LastWriterWins nor Custom", clip(mode))
}

// json returns the policy as a container's properties write it.
func (p conflictPolicy) json() []byte {
	p.Coll = ""
	b, _ := json.Marshal(p) // strings: cannot fail
	return b
}

// procedureName returns the name of the policy's procedure, which
// conflictResolutionProcedure gives as a link
// ("dbs/{db}/colls/{coll}/sprocs/{name}") or as a name.
func (p conflictPolicy) procedureName() string {
	if _, name, ok := strings.Cut(p.Procedure, "/sprocs/"); ok {
		return strings.TrimSuffix(name, "/")
	}
	return p.Procedure
}

// conflictPoliciesFile is the file in a durable database's directory that
// keeps the policies of its containers that are not the default.
const conflictPoliciesFile = "conflictpolicies.json"

// conflictState is a database's containers' conflict resolution policies
// and conflicts feeds, and, with Dir, the log that keeps the feeds
// (conflictlog.go).
type conflictState struct {
	mu       sync.Mutex
	policies map[string]conflictPolicy // by container; absent: the default
	feeds    map[string]*conflictFeed  // by container

	log      vfs.File // the conflicts log, open for appending; nil: none
	written  int      // the frames the log held when written whole
	appended int      // the frames appended since
	legacy   bool     // conflictsFile was read at the start
}

// conflictFeed is one container's conflicts feed in one region.
type conflictFeed struct {
	next      uint64         // the number of the last conflict
	conflicts []*conflictRes // by number
	byID      map[string]*conflictRes
	// handled holds the changes whose conflict the region handled
	// (conflictKey), recorded, deleted since, or merged: a change met
	// again (an account's catch-up at start replays its feeds, and a
	// change may reach the region from several write regions) is not
	// handled twice. Each has the ends of the write regions' feeds when
	// it was handled (handledEnds; nil: read from conflictsFile, kept).
	handled map[string][]uint64
	// through holds, by region index, the LSN of the last change of that
	// write region's feed the region applied: every change up to it was
	// handled (changes come from each region in order).
	through []uint64
}

func newConflictFeed() *conflictFeed {
	return &conflictFeed{byID: map[string]*conflictRes{}, handled: map[string][]uint64{}}
}

// add adds conflict c, numbered after every other, and marks its change
// handled.
func (f *conflictFeed) add(c *conflictRes) {
	f.conflicts = append(f.conflicts, c)
	f.byID[c.idValue] = c
	f.handled[c.key] = c.ends
	f.next = max(f.next, c.num)
}

// byNum returns the conflict numbered num, nil if there is none.
func (f *conflictFeed) byNum(num uint64) *conflictRes {
	if i := f.after(num - 1); i < len(f.conflicts) && f.conflicts[i].num == num {
		return f.conflicts[i]
	}
	return nil
}

// after returns the index of the first conflict numbered after num.
func (f *conflictFeed) after(num uint64) int {
	return sort.Search(len(f.conflicts), func(i int) bool { return f.conflicts[i].num > num })
}

// remove removes conflict c from the feed; its change stays handled.
func (f *conflictFeed) remove(c *conflictRes) {
	i := f.after(c.num - 1)
	f.conflicts = append(f.conflicts[:i], f.conflicts[i+1:]...)
	delete(f.byID, c.idValue)
}

// handledAt reports whether the change of the region of index src,
// numbered lsn in its feed, of key conflictKey, was handled.
func (f *conflictFeed) handledAt(src int, lsn uint64, key string) bool {
	if _, ok := f.handled[key]; ok {
		return true
	}
	return src < len(f.through) && lsn <= f.through[src]
}

// prune forgets the handled marks no longer needed: those whose every
// write region's changes, up to where its feed ended when the mark was
// made, were applied since (through). Each of those regions has sent
// every change it held then, so the marked change (if it held it) was
// met again already, and the catch-up at a start replays it at a position
// through covers. A change that reaches a write region only after its mark
// was made there and comes on from it may find the mark gone: see
// docs/regions.md.
func (f *conflictFeed) prune() {
	for key, ends := range f.handled {
		if ends == nil {
			continue
		}
		passed := true
		for src, end := range ends {
			if end > 0 && (src >= len(f.through) || f.through[src] < end) {
				passed = false
				break
			}
		}
		if passed {
			delete(f.handled, key)
		}
	}
}

// conflictKey names a replicated change for conflictFeed.handled: its
// kind and its ETag (a delete's is the removed version's).
func conflictKey(ch lethe.ReplicaChange) string {
	if ch.Kind == lethe.ReplicaDelete {
		return "delete:" + ch.ETag
	}
	return "write:" + ch.ETag
}

// feedLocked returns the conflicts feed of the container coll, made if
// there is none; db.confl.mu is held.
func (db *database) feedLocked(coll string) *conflictFeed {
	if db.confl.feeds == nil {
		db.confl.feeds = map[string]*conflictFeed{}
	}
	f := db.confl.feeds[coll]
	if f == nil {
		f = newConflictFeed()
		db.confl.feeds[coll] = f
	}
	return f
}

// conflictHandled reports whether the region handled the conflict of the
// change key of the container coll before: the change of the region of
// index src numbered lsn in its feed.
func (db *database) conflictHandled(coll string, src int, lsn uint64, key string) bool {
	db.confl.mu.Lock()
	defer db.confl.mu.Unlock()
	f := db.confl.feeds[coll]
	return f != nil && f.handledAt(src, lsn, key)
}

// applied notes that the region applied, and handled, the change of the
// container coll numbered lsn in the feed of the region of index src (of
// regions); kept in memory, saved when the log is written whole.
func (db *database) applied(coll string, src, regions int, lsn uint64) {
	db.confl.mu.Lock()
	defer db.confl.mu.Unlock()
	f := db.feedLocked(coll)
	if len(f.through) < regions {
		f.through = append(f.through, make([]uint64, regions-len(f.through))...)
	}
	f.through[src] = max(f.through[src], lsn)
}

// markHandled notes that the region handled the conflict of the change
// key of the container coll (a merge), ends handledEnds's; saved with
// Dir.
func (db *database) markHandled(coll, key string, ends []uint64) error {
	db.confl.mu.Lock()
	defer db.confl.mu.Unlock()
	db.feedLocked(coll).handled[key] = ends
	return db.appendConflictLocked(conflictRecord{Op: "mark", savedConflict: savedConflict{Coll: coll, Key: key}, Ends: ends})
}

// conflictRes is one conflict of a conflicts feed.
type conflictRes struct {
	num     uint64 // its number in the feed
	pk      lethe.PartitionKey
	json    []byte // the conflict resource
	idValue string // its id
	etag    string // its _etag, quoted
	key     string // its change's conflictKey
	ends    []uint64
}

// conflictsFile is the file in which a durable database kept its
// containers' conflicts feeds before conflictLogFile: read when there is
// no log.
const conflictsFile = "conflicts.json"

// savedConflict is a conflict as conflictsFile keeps it, or with only
// Coll and Key, a change whose conflict was handled and is not in the
// feed (deleted, or merged); conflictLogFile's frames hold it too
// (conflictRecord), with only the fields each needs.
type savedConflict struct {
	Coll     string          `json:"coll"`
	Num      uint64          `json:"num,omitempty"`
	PK       string          `json:"partitionKey,omitempty"` // as lethe.PartitionKey.String writes it
	ID       string          `json:"id,omitempty"`
	ETag     string          `json:"etag,omitempty"`
	Resource json.RawMessage `json:"resource,omitempty"`
	Key      string          `json:"key,omitempty"`
}

// loadConflicts reads the policies and the conflicts feeds a durable
// database keeps, and reports whether conflictsFile is there (the feeds
// are read from it when there is no log; the next compaction removes it). Those of a container that is gone (a
// crash between its delete and the next save) are read too, never served:
// a container made again under its id replaces them, and saves the files.
func loadConflicts(fsys vfs.FS, dir string) (map[string]conflictPolicy, map[string]*conflictFeed, bool, error) {
	list, err := readDBFile[conflictPolicy](fsys, dir, conflictPoliciesFile)
	if err != nil {
		return nil, nil, false, err
	}
	policies := map[string]conflictPolicy{}
	for _, p := range list {
		policies[p.Coll] = p
	}
	feeds, ok, err := readConflictLog(fsys, filepath.Join(dir, conflictLogFile))
	if ok || err != nil {
		// conflictsFile may be left of a crash after the log replaced it.
		_, left := fsys.Size(filepath.Join(dir, conflictsFile))
		return policies, feeds, left == nil, err
	}
	saved, err := readDBFile[savedConflict](fsys, dir, conflictsFile)
	if err != nil {
		return nil, nil, false, err
	}
	feeds = map[string]*conflictFeed{}
	for _, c := range saved {
		f := feeds[c.Coll]
		if f == nil {
			f = newConflictFeed()
			feeds[c.Coll] = f
		}
		f.handled[c.Key] = nil
		f.next = max(f.next, c.Num)
		if c.ID == "" {
			continue // handled, not in the feed
		}
		pk, err := parsePKHeader(c.PK)
		if err != nil || !json.Valid(c.Resource) {
			return nil, nil, false, fmt.Errorf("%s is damaged: the conflict %q of the container %q", filepath.Join(dir, conflictsFile), clip(c.ID), clip(c.Coll))
		}
		f.conflicts = append(f.conflicts, &conflictRes{num: c.Num, pk: pk, json: c.Resource, idValue: c.ID, etag: c.ETag, key: c.Key})
	}
	for _, f := range feeds {
		sort.Slice(f.conflicts, func(i, j int) bool { return f.conflicts[i].num < f.conflicts[j].num })
		for _, c := range f.conflicts {
			f.byID[c.idValue] = c
		}
	}
	return policies, feeds, saved != nil, nil
}

// policy returns container coll's conflict resolution policy.
func (db *database) conflictPolicy(coll string) conflictPolicy {
	db.confl.mu.Lock()
	defer db.confl.mu.Unlock()
	if p, ok := db.confl.policies[coll]; ok {
		return p
	}
	return defaultConflictPolicy
}

// setConflictPolicy gives the container coll, just created, the policy p,
// and clears its conflicts feed (a container of that id that was deleted
// may have left one); with Dir, the policies are saved.
func (db *database) setConflictPolicy(coll string, p conflictPolicy) error {
	db.confl.mu.Lock()
	defer db.confl.mu.Unlock()
	if _, ok := db.confl.feeds[coll]; ok {
		delete(db.confl.feeds, coll)
		if err := db.appendConflictLocked(conflictRecord{Op: "drop", savedConflict: savedConflict{Coll: coll}}); err != nil {
			return err
		}
	}
	_, had := db.confl.policies[coll]
	if p == defaultConflictPolicy {
		if !had {
			return nil
		}
		delete(db.confl.policies, coll)
	} else {
		if db.confl.policies == nil {
			db.confl.policies = map[string]conflictPolicy{}
		}
		p.Coll = coll
		db.confl.policies[coll] = p
	}
	return writeDBFile(db, conflictPoliciesFile, db.confl.policies, func(a, b conflictPolicy) bool { return a.Coll < b.Coll })
}

// dropConflicts forgets the policy and the conflicts of the container
// coll, deleted, and with Dir saves the files without them. A failed save
// leaves them in the files, never served (the container is gone) until a
// container made again under its id replaces them.
func (db *database) dropConflicts(coll string) error {
	db.confl.mu.Lock()
	defer db.confl.mu.Unlock()
	_, hadPolicy := db.confl.policies[coll]
	_, hadFeed := db.confl.feeds[coll]
	delete(db.confl.policies, coll)
	delete(db.confl.feeds, coll)
	var err error
	if hadPolicy {
		err = writeDBFile(db, conflictPoliciesFile, db.confl.policies, func(a, b conflictPolicy) bool { return a.Coll < b.Coll })
	}
	if hadFeed {
		err = errors.Join(err, db.appendConflictLocked(conflictRecord{Op: "drop", savedConflict: savedConflict{Coll: coll}}))
	}
	return err
}

// addConflict records a conflict of the container coll (partition key
// paths paths): the loser, a version of the item (pk, id) with its system
// properties, lost to a concurrent change; op is the loser's operation
// (create, replace or delete); lsn the change's in its origin's feed, key
// its conflictKey, noted handled, ends handledEnds's. With Dir it is
// appended to the conflicts log: a failed save keeps the conflict in
// memory, saved with the log written whole at the next change.
func (db *database) addConflict(coll string, paths []string, pk lethe.PartitionKey, id, op string, loser []byte, lsn uint64, ts int64, key string, ends []uint64) error {
	db.confl.mu.Lock()
	defer db.confl.mu.Unlock()
	f := db.feedLocked(coll)
	num := f.next + 1
	crid := containerRID(db.id, coll)
	rid := binary.BigEndian.AppendUint64(append([]byte(nil), crid...), num)
	rs := ridString(rid)
	if loser == nil {
		loser = []byte(`{"id":` + strconv.Quote(id) + `}`)
	}
	content := db.withSelf(coll, paths, loser)
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	writeJSONString(&b, rs)
	b.WriteString(`,"resourceType":"document","operationType":`)
	writeJSONString(&b, op)
	b.WriteString(`,"resourceId":`)
	writeJSONString(&b, ridString(documentRID(crid, pk.String(), id)))
	b.WriteString(`,"content":`)
	writeJSONString(&b, string(content))
	etag := quoteETag(fmt.Sprintf("%016x", hash64("conflict", rs)))
	fmt.Fprintf(&b, `,"conflict_lsn":%d,"_rid":%q,"_self":"dbs/%s/colls/%s/conflicts/%s/","_ts":%d,"_etag":%q}`,
		lsn, rs, ridString(db.rid), ridString(crid), rs, ts, etag)
	c := &conflictRes{num: num, pk: pk, json: b.Bytes(), idValue: rs, etag: etag, key: key, ends: ends}
	f.add(c)
	return db.appendConflictLocked(conflictRecord{Op: "add", savedConflict: savedConflict{Coll: coll, Num: c.num, PK: pk.String(), ID: rs, ETag: etag, Resource: c.json, Key: key}, Ends: ends})
}

// conflictDocs returns the conflicts of the container coll, oldest first.
func (db *database) conflictDocs(coll string) []metaDoc {
	docs, _ := db.conflictPage(coll, 0, 0)
	return docs
}

// conflictPage returns the conflicts of the container coll numbered after
// after, oldest first, at most limit of them (0: every one), and the
// number of the last when more follow (0: none follow).
func (db *database) conflictPage(coll string, after uint64, limit int) ([]metaDoc, uint64) {
	db.confl.mu.Lock()
	defer db.confl.mu.Unlock()
	f := db.confl.feeds[coll]
	if f == nil {
		return nil, 0
	}
	page := f.conflicts[f.after(after):]
	var last uint64
	if limit > 0 && len(page) > limit {
		page = page[:limit]
		last = page[limit-1].num
	}
	out := make([]metaDoc, len(page))
	for i, c := range page {
		out[i] = metaDoc{c.idValue, c.json}
	}
	return out, last
}

// findConflict returns the conflict id of the container coll, and
// removes it when remove is true (with Dir, appending its delete to the
// conflicts log: the error is the save's).
func (db *database) findConflict(coll, id string, remove bool) (*conflictRes, bool, error) {
	db.confl.mu.Lock()
	defer db.confl.mu.Unlock()
	f := db.confl.feeds[coll]
	if f == nil {
		return nil, false, nil
	}
	c, ok := f.byID[id]
	if !ok || !remove {
		return c, ok, nil
	}
	f.remove(c)
	return c, true, db.appendConflictLocked(conflictRecord{Op: "delete", savedConflict: savedConflict{Coll: coll, Num: c.num}})
}

// readConflicts answers GET on a container's conflicts feed: its
// conflicts, x-ms-max-item-count at a time, the continuation the number
// of the last conflict of the page (a conflict deleted between two pages
// moves none of the others). The container must exist (404 with
// substatus 1003 otherwise).
func (q *request) readConflicts() {
	db, c := q.container(subOwnerNotFound)
	if c == nil {
		return
	}
	limit, ok := q.maxItemCount()
	if !ok {
		return
	}
	var after uint64
	if tok := q.r.Header.Get("x-ms-continuation"); tok != "" {
		n, err := strconv.ParseUint(tok, 10, 64)
		if err != nil {
			q.answerError(http.StatusBadRequest, withDetail(msgBadToken, "the continuation token is not one this feed returned"))
			return
		}
		after = n
	}
	docs, last := db.conflictPage(c.ID(), after, max(limit, 0))
	next := ""
	if last != 0 {
		next = strconv.FormatUint(last, 10)
	}
	out := make([][]byte, len(docs))
	for i, d := range docs {
		out[i] = d.json
	}
	q.replyFeed(ridString(containerRID(db.id, c.ID())), "Conflicts", out, next, 1)
}

// queryConflicts answers a query over a container's conflicts.
func (q *request) queryConflicts() {
	db, c := q.container(subOwnerNotFound)
	if c == nil {
		return
	}
	q.metaQuery(ridString(containerRID(db.id, c.ID())), "Conflicts", db.conflictDocs(c.ID()))
}

// conflict answers a read or delete of one conflict. A delete on a
// partitioned container needs the conflict's partition key
// (x-ms-documentdb-partitionkey), as the service's does: 400 without; a
// partition key that is not the conflict's finds none.
func (q *request) conflict() {
	db, c, p, ok := q.containerProps(subOwnerNotFound)
	if !ok {
		return
	}
	del := q.r.Method == http.MethodDelete
	var pk lethe.PartitionKey
	given := q.r.Header.Get("x-ms-documentdb-partitionkey") != ""
	if del || given {
		if pk, ok = q.partitionKey(p, !del); !ok {
			return
		}
	}
	found, ok, _ := db.findConflict(c.ID(), q.t.id, false)
	if ok && given && len(p.PartitionKeyDefinition.Paths) > 0 && found.pk.String() != pk.String() {
		ok = false
	}
	if !ok {
		apiError{status: http.StatusNotFound, msg: msgEntityNotFound, charge: 1}.write(q.w)
		return
	}
	if del {
		if _, _, err := db.findConflict(c.ID(), q.t.id, true); err != nil {
			q.h.logFailure(q.r, http.StatusInternalServerError, err) // gone from memory: saved again at the next change
		}
		q.reply(http.StatusNoContent, nil, 1)
		return
	}
	setHeader(q.w.Header(), "etag", found.etag)
	q.reply(http.StatusOK, found.json, 1)
}

// applyResolved applies shipped change s to the region's container c in
// an account of several write regions, deciding a conflict by the
// container's policy.
func (n *regionNode) applyResolved(c *lethe.Container, s shipped) error {
	db, ok := n.h.lookup(s.k.db)
	if !ok {
		return nil
	}
	pol := db.conflictPolicy(s.k.coll)
	var rule lethe.ConflictRule
	if pol.Mode == modeLWW {
		rule.Path = pol.Path
	}
	ctx := context.Background()
	out, err := c.ApplyReplicaChangeResolved(ctx, s.ch, rule)
	if err != nil {
		return err
	}
	if pol.Mode != modeLWW {
		// Once the change is handled, its position is: met again (the
		// catch-up at a start), it is known by it.
		defer db.applied(s.k.coll, s.space, len(n.acct.regions), s.ch.LSN)
	}
	if !out.Conflict {
		return nil
	}
	n.conflicts.Add(1)
	switch {
	case out.Expired: // a side had expired: nothing to merge or record
		return nil
	case pol.Mode == modeLWW || db.conflictHandled(s.k.coll, s.space, s.ch.LSN, conflictKey(s.ch)):
		return nil
	case pol.Procedure != "" && n != n.acct.hubNode():
		return nil // the arbiter merges
	case pol.Procedure != "" && out.Colliding != nil:
		// A unique-key conflict: the procedure sees the items the change
		// collided with (conflictingItems), and no existingItem; the
		// items Last Writer Wins removed (the collided ones, or the
		// change's) are restored before it runs.
		m := mergeInput{conflicting: out.Colliding}
		if out.Applied {
			m.restore = out.Colliding
		}
		if n.merge(db, c, pol, s, m) {
			return nil
		}
	case pol.Procedure != "":
		// The merge procedure's existingItem is the region's version
		// before the change: the one the change replaced (nil: a delete,
		// a tombstone), or the one it lost to.
		before, known := out.Loser, true
		if !out.Applied {
			r, err := c.ReadItem(ctx, s.ch.PartitionKey, s.ch.ID, nil)
			before, known = r.Value, err == nil || errors.Is(err, lethe.ErrNotFound)
		}
		if known && n.merge(db, c, pol, s, mergeInput{before: before, tombstone: before == nil}) {
			return nil
		}
	}
	n.recordLoser(db, c, s, out)
	return nil
}

// recordLoser records the loser of a conflict in the region's conflicts
// feed of the container: of a unique-key conflict the change won, the
// items it collided with (and the version it replaced, if that was a
// conflict too).
func (n *regionNode) recordLoser(db *database, c *lethe.Container, s shipped, out lethe.ConflictOutcome) {
	p, err := c.Read(context.Background())
	if err != nil {
		return
	}
	if out.Applied && out.Colliding != nil {
		for _, lost := range out.Colliding {
			id, _ := stringMember(lost, "id")
			n.addLoser(db, c, p.PartitionKeyDefinition.Paths, s, id, madeBy(c, lost, "create"), lost)
		}
		if out.Loser == nil {
			return
		}
	}
	op := "replace"
	if s.ch.Replaces == "" {
		op = "create"
	}
	loser := out.Loser
	switch {
	case !out.Applied && s.ch.Kind == lethe.ReplicaDelete: // the change, a delete, lost
		op, loser = "delete", s.ch.Removed
	case out.Applied && loser == nil: // the region's delete lost
		op = "delete"
	case out.Applied: // the region's version lost: the operation that made it
		op = madeBy(c, loser, op)
	}
	n.addLoser(db, c, p.PartitionKeyDefinition.Paths, s, s.ch.ID, op, loser)
}

// addLoser records loser, the version of the item id that lost the
// conflict of change s, made by op, in the region's conflicts feed of the
// container c (partition key paths paths).
func (n *regionNode) addLoser(db *database, c *lethe.Container, paths []string, s shipped, id, op string, loser []byte) {
	if err := db.addConflict(c.ID(), paths, s.ch.PartitionKey, id, op, loser, s.ch.LSN, n.h.now().Unix(), conflictKey(s.ch), n.handledEnds(s.k)); err != nil {
		n.h.cfg.Logger.Error("cosmosrest: saving the conflicts feed", "region", n.name, "database", db.id, "container", c.ID(), "err", err)
	}
}

// madeBy returns the operation that made version v of an item of c, as
// versionOp finds it by v's _etag, else op.
func madeBy(c *lethe.Container, v []byte, op string) string {
	if etag, ok := stringMember(v, "_etag"); ok {
		if made, ok := versionOp(c, etag); ok {
			return made
		}
	}
	return op
}

// versionOp returns the operation that made the version of ETag etag in
// container c, as the region's change feed holds it, looked for from the
// newest change back: "create" when it replaced no version, "replace"
// otherwise; false when the feed no longer holds it.
func versionOp(c *lethe.Container, etag string) (string, bool) {
	// The version is most often among the last few changes: the windows
	// grow from there.
	window := uint64(4)
	for end := latestLSN(c); end > 0; window = min(2*window, 256) {
		from := end - min(end, window)
		chs, _, err := c.ReplicaChanges(from, int(window))
		if err != nil {
			return "", false
		}
		for _, ch := range slices.Backward(chs) {
			if ch.Kind == lethe.ReplicaWrite && ch.ETag == etag {
				if ch.Replaces == "" {
					return "create", true
				}
				return "replace", true
			}
		}
		end = from
	}
	return "", false
}

// handledEnds returns, by region index, the LSN of the last change of
// container k in the feed of each write region other than n (0 for the
// others): what a handled mark made now waits for before it is pruned
// (conflictFeed.prune).
func (n *regionNode) handledEnds(k collKey) []uint64 {
	ends := make([]uint64, len(n.acct.regions))
	for _, w := range n.acct.regions {
		if w == n || !w.acceptsWrites() {
			continue
		}
		if c, ok := w.storeContainer(k); ok {
			ends[w.idx] = latestLSN(c)
		}
	}
	return ends
}

// mergeInput is what a merge procedure is run over besides the change:
// the item's version before it (nil: none), whether that is a tombstone,
// the items of other ids the change collided with on a unique key, and
// those of them to write back first (Last Writer Wins removed them).
type mergeInput struct {
	before      []byte
	tombstone   bool
	conflicting [][]byte
	restore     [][]byte
}

// merge runs the container's merge procedure in the arbiter on the
// conflict of change s with the item's version m.before (nil: none), and
// commits, as one write, the items restored (the change's to m.before, and
// m.restore) and the procedure's writes; it reports whether it did (false:
// the procedure is missing or failed, and nothing was written). The write
// is shipped to every other region.
func (n *regionNode) merge(db *database, c *lethe.Container, pol conflictPolicy, s shipped, m mergeInput) bool {
	before := m.before
	ctx := context.Background()
	p, err := c.Read(ctx)
	if err != nil {
		return false
	}
	sp := db.lookupScript(target{coll: c.ID(), id: pol.procedureName()}, kindSproc)
	if sp == nil {
		return false
	}
	prog, err := n.h.program(db, sp)
	if err != nil {
		return false
	}
	paths := p.PartitionKeyDefinition.Paths
	var incoming, existing any
	if s.ch.Kind == lethe.ReplicaWrite {
		incoming = json.RawMessage(db.withSelf(c.ID(), paths, s.ch.Item))
	}
	if before != nil {
		existing = json.RawMessage(db.withSelf(c.ID(), paths, before))
	}
	conflicting := make([]json.RawMessage, len(m.conflicting))
	for i, v := range m.conflicting {
		conflicting[i] = db.withSelf(c.ID(), paths, v)
	}
	args, err := json.Marshal([]any{incoming, existing, m.tombstone, conflicting})
	if err != nil {
		return false
	}
	st := &partitionStore{db: db, c: c, paths: paths, pk: s.ch.PartitionKey, now: n.h.now}
	for range maxSprocAttempts {
		tx := script.NewTx(ctx, st, script.TxOptions{MaxOps: lethe.MaxBatchOperations, MaxBytes: lethe.MaxItemSize})
		for _, v := range conflicting {
			tx.See(v)
		}
		var restore error
		if before != nil {
			_, restore = tx.Write(script.WriteUpsert, s.ch.ID, before, "")
		} else if _, _, _, err := st.Read(ctx, s.ch.ID); err == nil {
			_, restore = tx.Write(script.WriteDelete, s.ch.ID, nil, "")
		}
		for _, v := range m.restore {
			if restore == nil {
				id, _ := stringMember(v, "id")
				_, restore = tx.Write(script.WriteUpsert, id, v, "")
			}
		}
		if restore != nil {
			return false
		}
		_, err := script.Run(ctx, prog, &script.Env{Kind: script.Procedure, Tx: tx, Args: args, Response: &script.Message{}, Limits: n.h.scriptLimits()})
		if err != nil {
			n.h.cfg.Logger.Warn("cosmosrest: the merge procedure failed: the conflict goes to the conflicts feed", "region", n.name, "database", db.id, "container", c.ID(), "id", s.ch.ID, "err", err)
			return false
		}
		_, conflict, err := commitOps(ctx, c, s.ch.PartitionKey, tx.Ops(), false)
		if conflict {
			continue // a client wrote the item meanwhile
		}
		if err != nil {
			n.h.cfg.Logger.Warn("cosmosrest: the merge procedure's writes failed: the conflict goes to the conflicts feed", "region", n.name, "database", db.id, "container", c.ID(), "id", s.ch.ID, "err", err)
			return false
		}
		if err := db.markHandled(c.ID(), conflictKey(s.ch), n.handledEnds(s.k)); err != nil {
			n.h.cfg.Logger.Error("cosmosrest: saving the conflicts feed", "region", n.name, "database", db.id, "container", c.ID(), "err", err)
		}
		n.acct.collect(n, s.k) // ship the merge
		return true
	}
	return false
}

// checkConflictPolicyKept checks a replace's policy: the container's
// (cur), for a policy cannot change after creation, as the service's
// cannot; a bad one is refused as at creation.
func checkConflictPolicyKept(in *conflictPolicyBody, cur conflictPolicy) error {
	p, err := parseConflictPolicy(in)
	if err != nil {
		return err
	}
	if p.Mode != cur.Mode || p.Path != cur.Path || p.Procedure != cur.Procedure {
		return messageError("Updating conflict resolution policy is currently not supported.")
	}
	return nil
}

// ConflictResolutionPolicy returns the conflictResolutionPolicy of the
// container coll of the database db, as the container's properties write
// it, and false when there is no such container: what cmd/lethe's export
// keeps.
func (h *Handler) ConflictResolutionPolicy(db, coll string) (json.RawMessage, bool) {
	d, ok := h.lookup(db)
	if !ok {
		return nil, false
	}
	if _, err := d.store.Container(coll); err != nil {
		return nil, false
	}
	return d.conflictPolicy(coll).json(), true
}

// SetConflictResolutionPolicy gives the container coll of the database
// db, just made through its Store (cmd/lethe's import), the policy a
// container create would send (as ConflictResolutionPolicy returns it). A
// bad policy, or a container that does not exist, is an error and changes
// nothing.
func (h *Handler) SetConflictResolutionPolicy(db, coll string, policy json.RawMessage) error {
	d, ok := h.lookup(db)
	if !ok {
		return fmt.Errorf("cosmosrest: no database %q", db)
	}
	if _, err := d.store.Container(coll); err != nil {
		return err
	}
	var in conflictPolicyBody
	if err := json.Unmarshal(policy, &in); err != nil {
		return fmt.Errorf("cosmosrest: the conflict resolution policy is not a JSON object: %w", err)
	}
	p, err := parseConflictPolicy(&in)
	if err != nil {
		return fmt.Errorf("cosmosrest: %w", err)
	}
	return d.setConflictPolicy(coll, p)
}
