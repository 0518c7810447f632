package lethe

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/lethedb/lethe/internal/manifest"
	"github.com/lethedb/lethe/internal/vfs"
)

// The manifest: what a durable store's directory must contain, so that a
// file that goes missing, is cut short or is swapped for another store's
// fails Open with a *CorruptionError naming it, instead of opening as a
// store that silently lacks what the file held. Its encoding and the
// checks of its own bytes are internal/manifest's (whose *manifest.Error
// readManifest turns into a *CorruptionError naming the file); what the
// store checks the directory's files against is here.
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

// manifestName is the manifest's file name (internal/manifest).
const manifestName = manifest.Name

// itemCounts returns how many items each container holds now.
func (s *Store) itemCounts() []manifest.ItemCount {
	var counts []manifest.ItemCount
	for _, c := range s.containerList() {
		counts = append(counts, manifest.ItemCount{ID: c.id, Created: c.created, N: c.itemCount()})
	}
	return counts
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
// none, and a *CorruptionError naming it if it is damaged.
func readManifest(fsys vfs.FS, dir string) (*manifest.Manifest, error) {
	m, err := manifest.Read(fsys, dir)
	if me, ok := err.(*manifest.Error); ok {
		return nil, &CorruptionError{File: filepath.Join(dir, manifestName), Reason: me.Reason}
	}
	return m, err
}

// writeManifest replaces the directory's manifest with m, durably, and
// keeps m as the store's.
func (s *Store) writeManifest(m manifest.Manifest) error {
	m.Store = s.storeID.String()
	m.Sealed = slices.DeleteFunc(m.Sealed, func(x manifest.Sealed) bool { return x.N < m.Snapshot })
	data, err := m.Encode()
	if err != nil {
		return err
	}
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
	m.Sealed = append(slices.Clone(m.Sealed), manifest.Sealed{N: w.seg, Size: w.segSize})
	m.Log = w.seg
	m.Seq = max(m.Seq, w.writtenSeq)
	m.Items = s.itemCounts()
	return s.writeManifest(m)
}

// checkManifest checks what recovery found against the manifest m (nil:
// none): the snapshot it names, the segments up to its log, and the write
// sequence it records. from is the snapshot loaded (0: none) and segs the
// segments replayed.
func (r *replayer) checkManifest(dir string, m *manifest.Manifest, from uint64, segs []uint64) error {
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
