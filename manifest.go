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
// store checks the directory's files against, and when it writes the
// manifest, is here. Its fields and the rules they carry are in
// docs/file-format.md, "The MANIFEST".

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
