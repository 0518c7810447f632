package lethe

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/lethedb/lethe/internal/vfs"
)

// The manifest: what a durable store's directory must contain, so that a
// file that goes missing, is cut short or is swapped for another store's
// fails Open with a *CorruptionError naming it, instead of opening as a
// store that silently lacks what the file held.
//
// MANIFEST is a small JSON document on one line, then the CRC-32C
// (Castagnoli) of that line in 8 hex digits on the next, replaced whole
// (vfs.WriteFileAtomic):
//
//	store     the store's id: 32 hex digits, drawn at random when the
//	          directory is first opened; every file of format 4 carries it
//	          in its header, with its own number (format.go)
//	snapshot  the number of the newest snapshot, 0 for none: that snapshot
//	          (or a newer one) must be there
//	log       the number of a log segment that must be there, with every
//	          segment from the snapshot's on
//	sealed    the segments that are written to their end, each with its
//	          size: they must have exactly that size
//	seq       the highest write sequence number the files held: recovery
//	          must reach it
//	items     how many items (live or expired) each container held when
//	          the manifest was written, with its id and creation sequence
//	          number: recovery sizes the container's tables from it before
//	          its items arrive (a hint only: a log after it may add or
//	          remove items; a manifest without it, of an older store,
//	          sizes them from a snapshot's items counted first, or not at
//	          all from a log)
//
// It is written when a store opens (once its new segment is durable: the
// segments recovered are then sealed), after each snapshot (before the
// files the snapshot replaces are removed) and when a store closes (its
// last segment sealed). So after a clean Close every byte of the log is
// accounted for; after a crash, everything but the tail of the segment
// written since the store last opened or took a snapshot, whose torn end
// recovery cuts off (format.go). A directory with no MANIFEST and files of
// format 4 is damaged (the manifest was removed); one with no MANIFEST and
// only files of older formats is an older store's, given a manifest at
// Open. While a store runs, its log checks at every commit that its
// segment still has its name (vfs.File.Gone): a segment removed or
// replaced stops the writes, which fail with ErrUnavailable naming it.

const manifestName = "MANIFEST"

// manifest is the contents of MANIFEST.
type manifest struct {
	Store    string      `json:"store"`
	Snapshot uint64      `json:"snapshot"`
	Log      uint64      `json:"log"`
	Sealed   []sealed    `json:"sealed,omitempty"`
	Seq      uint64      `json:"seq"`
	Items    []itemCount `json:"items,omitempty"`
}

// itemCount is how many items a container held, for the manifest.
type itemCount struct {
	ID      string `json:"id"`
	Created uint64 `json:"created"` // the container's creation sequence number: one created again under the id gets no hint
	N       int    `json:"n"`
}

// itemCounts returns how many items each container holds now.
func (s *Store) itemCounts() []itemCount {
	var counts []itemCount
	for _, c := range s.containerList() {
		counts = append(counts, itemCount{ID: c.id, Created: c.created, N: c.itemCount()})
	}
	return counts
}

// expectedItems returns how many items the container id created at
// sequence number created held when m was written, 0 if m does not say,
// and at most maxItemsHint: the count only sizes tables, so a manifest
// that claims absurdly many (its checksum right, its numbers not) costs at
// most that much room, never a failed allocation (and recovery bounds it
// again by what the files can hold: replayer.reserve).
func (m *manifest) expectedItems(id string, created uint64) int {
	if m == nil {
		return 0
	}
	for _, ic := range m.Items {
		if ic.ID == id && ic.Created == created {
			return min(ic.N, maxItemsHint)
		}
	}
	return 0
}

// maxItemsHint bounds the tables recovery sizes ahead from a manifest's
// count: 16M items, a few hundred MB of room; a larger container's tables
// grow as its items arrive, as without a count.
const maxItemsHint = 1 << 24

// sealed is a log segment written to its end, and its size.
type sealed struct {
	N    uint64 `json:"n"`
	Size int64  `json:"size"`
}

// storeID is a store's identity, in its manifest and its files' headers.
type storeID [16]byte

func newStoreID() storeID {
	var id storeID
	rand.Read(id[:])
	return id
}

func (id storeID) String() string { return hex.EncodeToString(id[:]) }

// readManifest reads the directory's manifest; it returns nil if there is
// none.
func readManifest(fsys vfs.FS, dir string) (*manifest, error) {
	path := filepath.Join(dir, manifestName)
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	body, sum, ok := bytes.Cut(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if !ok || string(sum) != fmt.Sprintf("%08x", crc32.Checksum(body, castagnoli)) {
		return nil, &CorruptionError{File: path, Reason: "the manifest's checksum does not match"}
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, &CorruptionError{File: path, Reason: fmt.Sprintf("the manifest is not readable: %v", err)}
	}
	if b, err := hex.DecodeString(m.Store); err != nil || len(b) != len(storeID{}) {
		return nil, &CorruptionError{File: path, Reason: fmt.Sprintf("the manifest's store id %q is not 32 hex digits", m.Store)}
	}
	return &m, nil
}

// id returns the manifest's store id.
func (m *manifest) id() storeID {
	var id storeID
	hex.Decode(id[:], []byte(m.Store))
	return id
}

// sealedSize returns the size the manifest records for segment n, if it
// records it sealed.
func (m *manifest) sealedSize(n uint64) (int64, bool) {
	if m == nil {
		return 0, false
	}
	for _, s := range m.Sealed {
		if s.N == n {
			return s.Size, true
		}
	}
	return 0, false
}

// writeManifest replaces the directory's manifest with m, durably, and
// keeps m as the store's.
func (s *Store) writeManifest(m manifest) error {
	m.Store = s.storeID.String()
	m.Sealed = slices.DeleteFunc(m.Sealed, func(x sealed) bool { return x.N < m.Snapshot })
	data, err := json.Marshal(&m)
	if err != nil {
		return err
	}
	data = fmt.Appendf(data, "\n%08x\n", crc32.Checksum(data, castagnoli))
	if err := vfs.WriteFileAtomic(s.opts.fs, filepath.Join(s.opts.Dir, manifestName), data); err != nil {
		return err
	}
	s.manifest = m
	return nil
}

// sealManifest records, once the log is closed, its last segment sealed
// at its size and the highest write sequence number logged.
func (s *Store) sealManifest() error {
	w := s.wal
	m := s.manifest
	m.Sealed = append(slices.Clone(m.Sealed), sealed{N: w.seg, Size: w.segSize})
	m.Log = w.seg
	m.Seq = max(m.Seq, w.writtenSeq)
	m.Items = s.itemCounts()
	return s.writeManifest(m)
}

// checkManifest checks what recovery found against the manifest m (nil:
// none): the snapshot it names, the segments up to its log, and the write
// sequence it records. from is the snapshot loaded (0: none) and segs the
// segments replayed.
func (r *replayer) checkManifest(dir string, m *manifest, from uint64, segs []uint64) error {
	if m == nil {
		return nil
	}
	if m.Snapshot > from {
		return &CorruptionError{File: filepath.Join(dir, snapshotName(m.Snapshot)), Reason: "the snapshot that MANIFEST records is missing"}
	}
	if m.Log >= max(from, 1) {
		last := uint64(0)
		if len(segs) > 0 {
			last = segs[len(segs)-1]
		}
		if last < m.Log {
			missing := max(last+1, from, 1)
			return &CorruptionError{File: filepath.Join(dir, segmentName(missing)), Reason: fmt.Sprintf("the log segment is missing: MANIFEST records the log up to segment %d", m.Log)}
		}
	}
	if r.maxSeq < m.Seq {
		return &CorruptionError{File: dir, Reason: fmt.Sprintf("the files hold writes up to sequence number %d, MANIFEST records %d: a log segment or snapshot was cut short or replaced by an older one", r.maxSeq, m.Seq)}
	}
	return nil
}
