package logfile

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frameOf returns a whole frame of payload p.
func frameOf(p string) []byte {
	b, start := BeginFrame(nil)
	return EndFrame(append(b, p...), start)
}

// TestReadFrame: a whole frame reads back as its payload, and each kind of
// damage says what it is and whether a crash while writing it (Torn)
// explains it.
func TestReadFrame(t *testing.T) {
	whole := frameOf("Phello")
	payload, ferr := ReadFrame(append(whole, frameOf("Xnext")...))
	require.Nil(t, ferr)
	assert.Equal(t, "Phello", string(payload))

	lengthOf := func(n uint32) []byte {
		b := make([]byte, FrameHeaderSize+8)
		binary.LittleEndian.PutUint32(b, n)
		binary.LittleEndian.PutUint32(b[4:], ^n)
		return b
	}
	badSum := func(b []byte) []byte { b[FrameHeaderSize]++; return b }
	for _, tc := range []struct {
		name   string
		b      []byte
		reason string
		torn   bool
	}{
		{"short header", whole[:FrameHeaderSize-1], "the file ends inside a frame header", true},
		{"empty", nil, "the file ends inside a frame header", true},
		{"damaged length", func() []byte { b := frameOf("Phello"); b[4]++; return b }(), "the frame's length is damaged", false},
		{"zero length", lengthOf(0), "the frame's length 0 is out of range", false},
		{"length past the bound", lengthOf(MaxPayload + 1), "the frame's length 268435457 is out of range", false},
		{"short payload", whole[:len(whole)-1], "the file ends inside a frame", true},
		{"checksum at the end", badSum(frameOf("Phello")), "the frame's checksum does not match", true},
		{"checksum before more", append(badSum(frameOf("Phello")), 0), "the frame's checksum does not match", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload, ferr := ReadFrame(tc.b)
			require.NotNil(t, ferr)
			assert.Nil(t, payload)
			assert.Equal(t, tc.reason, ferr.Reason)
			assert.Equal(t, tc.torn, ferr.Torn)
			assert.Equal(t, "offset 0: "+tc.reason, ferr.Error())
		})
	}
}

// TestPutFrameHeader: a frame whose header is put before its payload,
// checksummed in pieces, reads back as the payload.
func TestPutFrameHeader(t *testing.T) {
	pieces := []string{"F", "container", "entries"}
	var crc uint32
	n := 0
	for _, p := range pieces {
		crc = crc32.Update(crc, Castagnoli, []byte(p))
		n += len(p)
	}
	b := make([]byte, FrameHeaderSize)
	PutFrameHeader(b, n, crc)
	for _, p := range pieces {
		b = append(b, p...)
	}
	assert.Equal(t, frameOf("Fcontainerentries"), b)
	payload, ferr := ReadFrame(b)
	require.Nil(t, ferr)
	assert.Equal(t, "Fcontainerentries", string(payload))
}

// TestReadHeader: the header AppendHeader writes reads back; one of an
// older format has only a version; each kind of damage says what it is.
func TestReadHeader(t *testing.T) {
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	full := AppendHeader(nil, WALMagic, id, 42)
	require.Len(t, full, HeaderSizeV4)
	h, herr := ReadHeader(append(full, frameOf("P")...), WALMagic)
	require.Nil(t, herr)
	assert.Equal(t, Header{Version: Version, ID: id, N: 42}, h)

	h, herr = ReadHeader([]byte(SnapMagic+"\x03rest"), SnapMagic)
	require.Nil(t, herr)
	assert.Equal(t, Header{Version: 3}, h)

	for _, tc := range []struct {
		name    string
		data    []byte
		version byte // the version read, 0 if none
		offset  int64
		reason  string
		torn    bool
	}{
		{"shorter than the magic", []byte("LETHE"), 0, 0, "the file is shorter than its header", true},
		{"another kind of file", AppendHeader(nil, SnapMagic, id, 1), 0, 0, `the file does not start with "LETHEWAL"`, false},
		{"version 0", []byte(WALMagic + "\x00"), 0, 8, "unknown format version 0 (this lethe reads 1 to 5)", false},
		{"version 6", []byte(WALMagic + "\x06"), 0, 8, "unknown format version 6 (this lethe reads 1 to 5)", false},
		{"version 5 cut short", full[:HeaderSizeV4-1], Version, 0, "the file is shorter than its header", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, herr := ReadHeader(tc.data, WALMagic)
			require.NotNil(t, herr)
			assert.Equal(t, tc.version, h.Version)
			assert.Equal(t, tc.offset, herr.Offset)
			assert.Equal(t, tc.reason, herr.Reason)
			assert.Equal(t, tc.torn, herr.Torn)
		})
	}
}

// TestHeaderSize: from format 4 the header holds the id and the number, older
// ones only the magic and the version.
func TestHeaderSize(t *testing.T) {
	for v, want := range map[byte]int{1: 9, 2: 9, 3: 9, 4: 33, 5: 33} {
		assert.Equal(t, want, HeaderSize(v), "version %d", v)
	}
}

// TestZeroTail: zeros from a sector boundary to the end are what a power
// cut leaves; zeros that start inside the last sector are not.
func TestZeroTail(t *testing.T) {
	data := func(n, zerosFrom int) []byte {
		b := make([]byte, n)
		for i := range zerosFrom {
			b[i] = 1
		}
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		off  int
		want bool
	}{
		{"all zeros after off", data(100, 10), 10, true},
		{"nothing after off", data(10, 10), 10, true},
		{"zeros from a sector boundary", data(2*SectorSize, SectorSize), 10, true},
		{"zeros from inside the last sector", data(2*SectorSize, SectorSize+1), 10, false},
		{"no zeros at the end", data(2*SectorSize, 2*SectorSize), 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ZeroTail(tc.data, tc.off))
		})
	}
}
