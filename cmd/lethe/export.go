package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// The export format: JSON lines, one record a line, each an object whose
// "kind" says what it is. A header first, then each database, followed by
// its containers, each followed by its live items:
//
//	{"kind":"lethe-export","version":2,"at":"2026-11-25T17:00:00.123456789Z"}
//	{"kind":"database","id":"db","throughput":400}
//	{"kind":"container","database":"db","properties":{"id":"c","defaultTtl":60,"partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}},"throughput":500,"changeFeed":{}}
//	{"kind":"item","database":"db","container":"c","ts":1795000000,"written":"...","expires":"...","ttlLeft":42.5,"item":{...}}
//
// A container's "properties" are its resource as Cosmos DB's REST API
// spells it (id, defaultTtl, partitionKey, indexingPolicy,
// vectorEmbeddingPolicy, fullTextPolicy: see containerResource), without
// system properties; its record says beside them its throughput
// ("throughput" or "autoscaleMaxThroughput", absent: none of its own)
// and its change feed ("changeFeed", with lethe's "maxChanges" and
// "maxBytes", absent: none). Version 1 wrote lethe.ContainerProperties
// with Go's names instead ("ID", "DefaultTimeToLive"); import reads both.
// An item's "item" is its JSON as stored, _ts and _etag included;
// "written" is the instant of its last write, to the nanosecond, from
// which its expiry counts, and "expires" the instant it expires (absent:
// never), "ttlLeft" the seconds it had left at the export's instant "at".
// Import writes each item as of "written", so that its _ts and its expiry
// instant are those it had.
type exportRecord struct {
	Kind string `json:"kind"`

	Version int        `json:"version,omitempty"` // lethe-export
	At      *time.Time `json:"at,omitempty"`

	ID                     string `json:"id,omitempty"` // database
	Throughput             int32  `json:"throughput,omitempty"`
	AutoscaleMaxThroughput int32  `json:"autoscaleMaxThroughput,omitempty"`

	Database   string              `json:"database,omitempty"` // container (and throughput), item
	Properties json.RawMessage     `json:"properties,omitempty"`
	ChangeFeed *changeFeedResource `json:"changeFeed,omitempty"`
	// ConflictPolicy is the container's conflictResolutionPolicy, which
	// the REST front keeps beside its store (absent: the default).
	ConflictPolicy json.RawMessage `json:"conflictResolutionPolicy,omitempty"`

	Container string          `json:"container,omitempty"` // item
	TS        int64           `json:"ts,omitempty"`
	Written   *time.Time      `json:"written,omitempty"`
	Expires   *time.Time      `json:"expires,omitempty"`
	TTLLeft   *float64        `json:"ttlLeft,omitempty"`
	Item      json.RawMessage `json:"item,omitempty"`
}

// defaultConflictPolicy is the conflictResolutionPolicy of a container
// made without one, which export leaves out.
const defaultConflictPolicy = `{"mode":"LastWriterWins","conflictResolutionPath":"/_ts","conflictResolutionProcedure":""}`

// exportVersion is the version of the format export writes; import reads
// it and every one before it (versions 1 and 2).
const exportVersion = 2

func exportTool(args []string) error {
	fs, dir := toolFlags("export", "Usage: lethe export -dir D [-o FILE]\n"+
		"Writes every database, container (its settings) and live item of D as JSON lines, each item with its _ts, the instant\n"+
		"of its last write and of its expiry, so that lethe import brings it back expiring when it would have. The server must be stopped.")
	out := fs.String("o", "", "the file to write (default: standard output)")
	if err := parseTool(fs, dir, args); err != nil {
		return err
	}
	w := toolOutput
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if err := exportDir(w, *dir, time.Now()); err != nil {
		return held("export", err)
	}
	if *out != "" {
		return w.(*os.File).Close()
	}
	return nil
}

// exportDir writes the export of dir, as of the instant now, to w.
func exportDir(w io.Writer, dir string, now time.Time) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	// The stores are read as of one instant: a manual clock, moved on only
	// when a container's throughput makes a read wait.
	clock := lethe.NewManualClock(now)
	h, err := cosmosrest.New(cosmosrest.Config{Dir: dir, Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true}})
	if err != nil {
		return err
	}
	defer h.Close()
	enc := json.NewEncoder(bw)
	at := clock.Now()
	if err := enc.Encode(exportRecord{Kind: "lethe-export", Version: exportVersion, At: &at}); err != nil {
		return err
	}
	ctx := context.Background()
	for _, id := range h.DatabaseIDs() {
		st, ok := h.Store(id)
		if !ok {
			continue
		}
		thr, auto := st.Throughput()
		if err := enc.Encode(exportRecord{Kind: "database", ID: id, Throughput: thr, AutoscaleMaxThroughput: auto}); err != nil {
			return err
		}
		for _, cid := range st.ContainerIDs() {
			c, err := st.Container(cid)
			if err != nil {
				return err
			}
			props, err := c.Read(ctx)
			if err != nil {
				return err
			}
			res, feed := toResource(props)
			text, err := json.Marshal(res)
			if err != nil {
				return err
			}
			rec := exportRecord{Kind: "container", Database: id, Properties: text, ChangeFeed: feed,
				Throughput: props.Throughput, AutoscaleMaxThroughput: props.AutoscaleMaxThroughput}
			if pol, ok := h.ConflictResolutionPolicy(id, cid); ok && string(pol) != defaultConflictPolicy {
				rec.ConflictPolicy = pol
			}
			if err := enc.Encode(rec); err != nil {
				return err
			}
			if err := exportItems(ctx, enc, clock, id, c, props); err != nil {
				return fmt.Errorf("export: database %q, container %q: %w", id, cid, err)
			}
		}
	}
	return bw.Flush()
}

// exportItems writes every live item of c.
func exportItems(ctx context.Context, enc *json.Encoder, clock *lethe.ManualClock, db string, c *lethe.Container, props lethe.ContainerProperties) error {
	p := c.NewQueryItemsPager("SELECT * FROM c", lethe.NewPartitionKey(), nil)
	for p.More() {
		page, err := p.NextPage(ctx)
		var le *lethe.Error
		if errors.As(err, &le) && errors.Is(err, lethe.ErrTooManyRequests) {
			clock.Advance(le.RetryAfter) // the pager stays where it was
			continue
		}
		if err != nil {
			return err
		}
		for _, doc := range page.Items {
			if err := exportItem(ctx, enc, clock, db, c, props, doc); err != nil {
				return err
			}
		}
	}
	return nil
}

// itemFields are the members of an item that its expiry depends on.
type itemFields struct {
	ID  string          `json:"id"`
	TS  int64           `json:"_ts"`
	TTL json.RawMessage `json:"ttl"`
}

func exportItem(ctx context.Context, enc *json.Encoder, clock *lethe.ManualClock, db string, c *lethe.Container, props lethe.ContainerProperties, doc []byte) error {
	var f itemFields
	if err := json.Unmarshal(doc, &f); err != nil {
		return fmt.Errorf("an item is not readable: %v", err)
	}
	pk, err := partitionKeyOf(props.PartitionKeyDefinition, doc)
	if err != nil {
		return fmt.Errorf("item %q: %v", f.ID, err)
	}
	exp, expires, err := c.ItemExpiry(ctx, pk, f.ID)
	if errors.Is(err, lethe.ErrNotFound) {
		return nil // expired, or deleted, since the page was read
	}
	if err != nil {
		return fmt.Errorf("item %q: %v", f.ID, err)
	}
	rec := exportRecord{Kind: "item", Database: db, Container: props.ID, TS: f.TS, Item: doc}
	written := time.Unix(f.TS, 0).UTC()
	if expires {
		ttl := effectiveTTL(f.TTL, props.DefaultTimeToLive)
		written = exp.Add(-time.Duration(ttl) * time.Second).UTC()
		exp = exp.UTC()
		left := exp.Sub(clock.Now()).Seconds()
		rec.Expires, rec.TTLLeft = &exp, &left
	}
	rec.Written = &written
	return enc.Encode(rec)
}

// effectiveTTL is the time to live, in seconds, that an item expires by:
// its own ttl if positive, else its container's default. It is called
// for items that expire, for which one of them is positive.
func effectiveTTL(own json.RawMessage, def lethe.TTL) int64 {
	var n json.Number
	if err := json.Unmarshal(own, &n); err == nil {
		if v, err := n.Int64(); err == nil && v > 0 {
			return v
		}
	}
	return int64(def)
}

// partitionKeyOf returns an item's partition key value, read from it at
// the paths of def, as Cosmos DB reads it.
func partitionKeyOf(def lethe.PartitionKeyDefinition, doc []byte) (lethe.PartitionKey, error) {
	pk := lethe.NewPartitionKey()
	if len(def.Paths) == 0 {
		return pk, nil
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var root any
	if err := d.Decode(&root); err != nil {
		return pk, err
	}
	for _, path := range def.Paths {
		v, ok := root, true
		for _, seg := range pathSegments(path) {
			m, isObj := v.(map[string]any)
			if !isObj {
				ok = false
				break
			}
			if v, ok = m[seg]; !ok {
				break
			}
		}
		switch x := v.(type) {
		case nil:
			if ok {
				pk = pk.AppendNull()
			} else {
				pk = pk.AppendNone()
			}
		case string:
			pk = pk.AppendString(x)
		case bool:
			pk = pk.AppendBool(x)
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				return pk, fmt.Errorf("the partition key value %s: %v", x, err)
			}
			pk = pk.AppendNumber(f)
		default: // absent, or an object or an array: no value
			pk = pk.AppendNone()
		}
	}
	return pk, nil
}

// pathSegments splits a partition key path ("/a/b", `/"a/b"/c`) into its
// names.
func pathSegments(path string) []string {
	var segs []string
	rest := strings.TrimPrefix(path, "/")
	for rest != "" {
		if rest[0] == '"' {
			if end := strings.IndexByte(rest[1:], '"'); end >= 0 {
				segs = append(segs, rest[1:1+end])
				rest = strings.TrimPrefix(rest[2+end:], "/")
				continue
			}
		}
		seg, after, _ := strings.Cut(rest, "/")
		segs = append(segs, seg)
		rest = after
	}
	return segs
}
