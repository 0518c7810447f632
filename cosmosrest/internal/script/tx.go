package script

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lethedb/lethe/internal/query"
)

// Store is the partition an execution runs in, as the caller (the REST
// front) gives it. Its methods see the partition as committed; the Tx's
// overlay adds what the execution wrote.
type Store interface {
	// Read returns the live item id of the partition, with its system
	// properties (as Decorate adds them), and its ETag; a missing or
	// expired item is an *OpError of status 404.
	Read(ctx context.Context, id string) (doc []byte, etag string, charge float64, err error)
	// Query runs a query over the partition's items and returns every
	// result, each decorated.
	Query(ctx context.Context, text string, params map[string]any) (results [][]byte, charge float64, err error)
	// Check says why doc may not be written in the partition (its
	// partition key is another), or nil.
	Check(doc []byte) error
	// Decorate returns doc with the system properties the script sees
	// (_rid, _self, _attachments).
	Decorate(doc []byte) []byte
	// Links returns the container's link by ids (dbs/<db>/colls/<c>) and
	// its _self.
	Links() (name, self string)
	// Now is the stores' clock.
	Now() time.Time
}

// OpError is the failure of one operation of a script, with the status
// code the script sees (err.number) and the service's message.
type OpError struct {
	Status  int
	Message string
}

func (e *OpError) Error() string { return e.Message }

// OpKind is the kind of a write a Tx commits.
type OpKind int

// The writes a Tx commits.
const (
	OpCreate OpKind = iota
	OpReplace
	OpDelete
)

// Op is one write of a committed Tx: a create of an id that was not there
// when the execution first touched it, or a replace or delete of one that
// was, IfMatch its ETag then (so that a concurrent write in between makes
// the commit fail, not vanish).
type Op struct {
	Kind    OpKind
	ID      string
	Doc     []byte // the item, for a create or replace, without system properties
	IfMatch string
}

// Tx is the transaction of an execution: its writes in an overlay over
// the Store, committed together by the caller (Ops) or dropped.
type Tx struct {
	st       Store
	ctx      context.Context
	readOnly bool
	maxOps   int
	maxBytes int

	entries map[string]*entry
	order   []string // the ids written, in the order first written
	// seen holds the items read and not written, as first read: a write
	// starts from that version (its IfMatch is that version's ETag, so
	// that a read-modify-write never loses a concurrent write). A read
	// reads the store again, and so never returns an item that expired
	// since.
	seen   map[string]*entry
	bytes  int
	charge float64
	seq    int
	// links maps the _self of each document handed to the script to its
	// id, so that a script can name a document by its _self.
	links map[string]string
}

// entry is an item the execution wrote.
type entry struct {
	doc     []byte // as the script sees it (decorated); nil when deleted
	existed bool   // the item was live when first written
	base    string // its ETag then
}

// TxOptions bound a Tx.
type TxOptions struct {
	// ReadOnly refuses every write (a Read resource token).
	ReadOnly bool
	// MaxOps is the most distinct items the transaction may write, and
	// MaxBytes the most bytes of items: a write past them is not accepted
	// (the script's call returns false), as the transactional batch that
	// commits them has the same limits.
	MaxOps, MaxBytes int
}

// NewTx returns a transaction over st.
func NewTx(ctx context.Context, st Store, o TxOptions) *Tx {
	return &Tx{st: st, ctx: ctx, readOnly: o.ReadOnly, maxOps: o.MaxOps, maxBytes: o.MaxBytes, entries: map[string]*entry{}, seen: map[string]*entry{}, links: map[string]string{}}
}

// Charge returns the request units the transaction's reads and queries
// cost so far.
func (t *Tx) Charge() float64 { return t.charge }

// Ops returns the writes to commit, in the order the items were first
// written.
func (t *Tx) Ops() []Op {
	var ops []Op
	for _, id := range t.order {
		e := t.entries[id]
		switch {
		case e.doc != nil && e.existed:
			ops = append(ops, Op{Kind: OpReplace, ID: id, Doc: stripSystem(e.doc), IfMatch: e.base})
		case e.doc != nil:
			ops = append(ops, Op{Kind: OpCreate, ID: id, Doc: stripSystem(e.doc)})
		case e.existed:
			ops = append(ops, Op{Kind: OpDelete, ID: id, IfMatch: e.base})
		}
	}
	return ops
}

var (
	errNotFound      = &OpError{http.StatusNotFound, "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found"}
	errConflict      = &OpError{http.StatusConflict, "Resource with specified id or name already exists."}
	errPrecondition  = &OpError{http.StatusPreconditionFailed, "Operation cannot be performed because one of the specified precondition is not met."}
	errNotAccepted   = &OpError{http.StatusTooManyRequests, "the transaction holds as many writes as one execution may commit"}
	errReadOnlyWrite = &OpError{http.StatusForbidden, "Insufficient permissions provided in the authorization header for the corresponding request. Please retry with another authorization header. (the resource token's permission is Read: a script it runs does not write)"}
)

// read returns the item id as the execution sees it.
func (t *Tx) read(id string) ([]byte, string, error) {
	if e, ok := t.entries[id]; ok {
		if e.doc == nil {
			return nil, "", errNotFound
		}
		return e.doc, etagOf(e.doc), nil
	}
	e, err := t.observe(id, true)
	if err != nil {
		return nil, "", err
	}
	if e.doc == nil {
		return nil, "", errNotFound
	}
	return e.doc, e.base, nil
}

// observe returns the item id as the execution first read it or, with
// fresh, as it is now (so that a read never returns an item that expired
// since), keeping the first version it read.
func (t *Tx) observe(id string, fresh bool) (*entry, error) {
	if e, ok := t.seen[id]; ok && !fresh {
		return e, nil
	}
	doc, etag, charge, err := t.st.Read(t.ctx, id)
	t.charge += charge
	var oe *OpError
	var e *entry
	switch {
	case err == nil:
		e = &entry{doc: t.see(doc), existed: true, base: etag}
	case asOpError(err, &oe) && oe.Status == http.StatusNotFound:
		e = &entry{}
	default:
		return nil, err
	}
	if _, ok := t.seen[id]; !ok && len(t.seen) < maxSeen {
		t.seen[id] = e
	}
	return e, nil
}

// maxSeen bounds the items a Tx remembers having read.
const maxSeen = 10_000

// see records the _self of a document handed to the script.
func (t *Tx) see(doc []byte) []byte {
	var sys struct {
		ID   string `json:"id"`
		Self string `json:"_self"`
	}
	if json.Unmarshal(doc, &sys) == nil && sys.Self != "" && len(t.links) < 100_000 {
		t.links[trimSlash(sys.Self)] = sys.ID
	}
	return doc
}

// See records the _self of doc, a document handed to the script other
// than through the Tx (a merge procedure's conflictingItems), so that the
// script may name it by its link, and returns doc.
func (t *Tx) See(doc []byte) []byte { return t.see(doc) }

// WriteKind is the kind of a write a script asks for.
type WriteKind int

// The writes a script asks for.
const (
	WriteCreate WriteKind = iota
	WriteUpsert
	WriteReplace
	WriteDelete
)

// Write applies the write of a request that runs triggers, as a script's
// write: the item as written (nil for a delete), or the operation's
// failure (an *OpError, ErrNotAccepted, or the Store's).
func (t *Tx) Write(kind WriteKind, id string, doc []byte, ifMatch string) ([]byte, error) {
	return t.write(kind, id, doc, ifMatch)
}

// ErrNotAccepted is a write past a Tx's limits (TxOptions.MaxOps,
// MaxBytes).
var ErrNotAccepted = errNotAccepted

// write applies one write to the overlay and returns the item as written
// (nil for a delete). It returns errNotAccepted when the transaction is
// full, and the operation's failure otherwise.
func (t *Tx) write(kind WriteKind, id string, doc []byte, ifMatch string) ([]byte, error) {
	if t.readOnly {
		return nil, errReadOnlyWrite
	}
	if doc != nil {
		if err := t.st.Check(doc); err != nil {
			return nil, err
		}
	}
	e, touched := t.entries[id]
	if !touched {
		first, err := t.observe(id, false)
		if err != nil {
			return nil, err
		}
		cp := *first
		e = &cp
	}
	live := e.doc != nil
	switch {
	case kind == WriteCreate && live:
		return nil, errConflict
	case (kind == WriteReplace || kind == WriteDelete) && !live:
		return nil, errNotFound
	case ifMatch != "" && (!live || strings.Trim(ifMatch, `"`) != strings.Trim(etagOf(e.doc), `"`)):
		return nil, errPrecondition
	}
	size := len(doc)
	if !touched && (len(t.order) >= t.maxOps || t.bytes+size > t.maxBytes) || touched && t.bytes+size > t.maxBytes {
		return nil, errNotAccepted
	}
	if !touched {
		t.entries[id] = e
		t.order = append(t.order, id)
		delete(t.seen, id)
	}
	t.bytes += size
	if kind == WriteDelete {
		e.doc = nil
		return nil, nil
	}
	t.seq++
	e.doc = t.see(t.st.Decorate(withSystem(doc, t.st.Now().Unix(), fmt.Sprintf("\"pending-%d\"", t.seq))))
	return e.doc, nil
}

// query runs a query over the partition as the execution sees it: the
// Store's query when nothing was written, else the query engine over the
// partition's items with the overlay applied.
func (t *Tx) query(text string, params map[string]any) ([][]byte, error) {
	if len(t.order) == 0 {
		res, charge, err := t.st.Query(t.ctx, text, params)
		t.charge += charge
		for _, d := range res {
			t.see(d)
		}
		return res, err
	}
	parsed, err := query.Parse(text)
	if err != nil {
		return nil, &OpError{http.StatusBadRequest, err.Error()}
	}
	all, charge, err := t.st.Query(t.ctx, "SELECT * FROM c", nil)
	t.charge += charge
	if err != nil {
		return nil, err
	}
	docs := make([]query.Doc, 0, len(all)+len(t.order))
	for _, d := range all {
		id := idOf(d)
		if _, written := t.entries[id]; !written {
			docs = append(docs, query.Doc{ID: id, JSON: d})
		}
	}
	for _, id := range t.order {
		if d := t.entries[id].doc; d != nil {
			docs = append(docs, query.Doc{ID: id, JSON: d})
		}
	}
	res, err := query.Exec(t.ctx, parsed, params, docs, t.st.Now())
	if err != nil {
		return nil, &OpError{http.StatusBadRequest, err.Error()}
	}
	for _, d := range res.Items {
		t.see(d)
	}
	return res.Items, nil
}

// resolve returns the id of the document a link names: by ids
// (dbs/<db>/colls/<c>/docs/<id>) or by its _self.
func (t *Tx) resolve(link string) (string, error) {
	link = trimSlash(link)
	name, self := t.st.Links()
	if id, ok := bytes.CutPrefix([]byte(link), []byte(trimSlash(name)+"/docs/")); ok && len(id) > 0 {
		return string(id), nil
	}
	if id, ok := t.links[link]; ok {
		return id, nil
	}
	if _, ok := bytes.CutPrefix([]byte(link), []byte(trimSlash(self)+"/docs/")); ok {
		return "", errNotFound
	}
	return "", &OpError{http.StatusBadRequest, fmt.Sprintf("the link %q is not that of a document of the collection %s", clip(link), name)}
}

// checkCollection checks a collection link a script passes.
func (t *Tx) checkCollection(link string) error {
	link = trimSlash(link)
	name, self := t.st.Links()
	if link == trimSlash(name) || link == trimSlash(self) {
		return nil
	}
	return &OpError{http.StatusBadRequest, fmt.Sprintf("the link %q is not that of the collection the script runs in (%s)", clip(link), name)}
}

func trimSlash(s string) string {
	for len(s) > 0 && s[0] == '/' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// newID returns a random UUID, for a created document without an id.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0F | 0x40
	b[8] = b[8]&0x3F | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func asOpError(err error, target **OpError) bool {
	oe, ok := err.(*OpError)
	if ok {
		*target = oe
	}
	return ok
}

// decode reads a document as an ordered list of members.
func decode(doc []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	err := json.Unmarshal(doc, &m)
	return m, err
}

func idOf(doc []byte) string {
	var d struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(doc, &d)
	return d.ID
}

func etagOf(doc []byte) string {
	var d struct {
		ETag string `json:"_etag"`
	}
	_ = json.Unmarshal(doc, &d)
	return d.ETag
}

// systemMembers are the members the store, not the script, writes.
var systemMembers = []string{"_rid", "_self", "_etag", "_ts", "_attachments"}

// stripSystem returns doc without its system properties.
func stripSystem(doc []byte) []byte {
	m, err := decode(doc)
	if err != nil {
		return doc
	}
	for _, k := range systemMembers {
		delete(m, k)
	}
	out, _ := json.Marshal(m)
	return out
}

// withSystem returns doc with the _ts and _etag of a pending write.
func withSystem(doc []byte, ts int64, etag string) []byte {
	m, err := decode(doc)
	if err != nil {
		return doc
	}
	for _, k := range systemMembers {
		delete(m, k)
	}
	m["_ts"] = json.RawMessage(strconv.FormatInt(ts, 10))
	m["_etag"], _ = json.Marshal(etag)
	out, _ := json.Marshal(m)
	return out
}
