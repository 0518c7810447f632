// Package manifest is the layout of a durable store's MANIFEST: what the
// directory must contain, its encoding and the checks of its own bytes. It
// knows nothing of the store's other files, nor of paths: its errors say
// what is wrong, and the store turns them into a *lethe.CorruptionError
// naming the file, and checks the files against what it records.
//
// MANIFEST is a small JSON document on one line, then the CRC-32C
// (Castagnoli) of that line in 8 hex digits on the next:
//
//	store     the store's id: 32 hex digits
//	snapshot  the number of the newest snapshot, 0 for none
//	log       the number of a log segment that must be there, with every
//	          segment from the snapshot's on
//	sealed    the segments that are written to their end, each with its
//	          size (left out when there is none)
//	seq       the highest write sequence number the files held
//	items     how many items (live or expired) each container held, with
//	          its id and creation sequence number (left out when there is
//	          none)
package manifest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"

	"github.com/lethedb/lethe/internal/logfile"
	"github.com/lethedb/lethe/internal/vfs"
)

// Name is the manifest's file name in the store's directory.
const Name = "MANIFEST"

// MaxItemsHint bounds the count ExpectedItems returns: 16M items, a few
// hundred MB of room; a larger container's tables grow as its items
// arrive, as without a count.
const MaxItemsHint = 1 << 24

// Manifest is the contents of MANIFEST.
type Manifest struct {
	Store    string      `json:"store"`
	Snapshot uint64      `json:"snapshot"`
	Log      uint64      `json:"log"`
	Sealed   []Sealed    `json:"sealed,omitempty"`
	Seq      uint64      `json:"seq"`
	Items    []ItemCount `json:"items,omitempty"`
}

// Sealed is a log segment written to its end, and its size.
type Sealed struct {
	N    uint64 `json:"n"`
	Size int64  `json:"size"`
}

// ItemCount is how many items a container held.
type ItemCount struct {
	ID      string `json:"id"`
	Created uint64 `json:"created"` // the container's creation sequence number: one created again under the id gets no hint
	N       int    `json:"n"`
}

// Error is damage found in a manifest's bytes: Reason says what is wrong.
type Error struct {
	Reason string
}

// Error returns the reason.
func (e *Error) Error() string { return e.Reason }

// Read reads the manifest of the directory dir; it returns nil, nil if
// there is none, an *Error if its bytes are damaged.
func Read(fsys vfs.FS, dir string) (*Manifest, error) {
	data, err := vfs.ReadFile(fsys, filepath.Join(dir, Name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m, merr := Decode(data)
	if merr != nil {
		return nil, merr
	}
	return m, nil
}

// Decode decodes a manifest's bytes: the checksum must match, the JSON
// have no field unknown and the store id be 32 hex digits.
func Decode(data []byte) (*Manifest, *Error) {
	body, sum, ok := bytes.Cut(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if !ok || string(sum) != fmt.Sprintf("%08x", crc32.Checksum(body, logfile.Castagnoli)) {
		return nil, &Error{Reason: "the manifest's checksum does not match"}
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, &Error{Reason: fmt.Sprintf("the manifest is not readable: %v", err)}
	}
	if b, err := hex.DecodeString(m.Store); err != nil || len(b) != 16 {
		return nil, &Error{Reason: fmt.Sprintf("the manifest's store id %q is not 32 hex digits", m.Store)}
	}
	return &m, nil
}

// Encode returns the manifest's bytes: its JSON line and its checksum's.
func (m *Manifest) Encode() ([]byte, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(data, "\n%08x\n", crc32.Checksum(data, logfile.Castagnoli)), nil
}

// ID returns the manifest's store id, decoded (Decode checked it).
func (m *Manifest) ID() [16]byte {
	var id [16]byte
	hex.Decode(id[:], []byte(m.Store))
	return id
}

// SealedSize returns the size the manifest records for segment n, if it
// records it sealed; a nil m records none.
func (m *Manifest) SealedSize(n uint64) (int64, bool) {
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

// ExpectedItems returns how many items the container id created at
// sequence number created held when m was written, 0 if m (or a nil m)
// does not say, and at most MaxItemsHint: the count only sizes tables, so
// a manifest that claims absurdly many (its checksum right, its numbers
// not) costs at most that much room, never a failed allocation.
func (m *Manifest) ExpectedItems(id string, created uint64) int {
	if m == nil {
		return 0
	}
	for _, ic := range m.Items {
		if ic.ID == id && ic.Created == created {
			return min(ic.N, MaxItemsHint)
		}
	}
	return 0
}
