package manifest

import (
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/lethedb/lethe/internal/logfile"
	"github.com/lethedb/lethe/internal/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// golden is the manifests of testdata/*.MANIFEST, whose bytes the
// store's encoder wrote before this package held it.
var golden = map[string]Manifest{
	"full.MANIFEST": {
		Store: "00112233445566778899aabbccddeeff", Snapshot: 3, Log: 5,
		Sealed: []Sealed{{N: 3, Size: 4096}, {N: 4, Size: 33}}, Seq: 812,
		Items: []ItemCount{{ID: `a"<b>`, Created: 2, N: 7}, {ID: "z", Created: 9, N: 0}},
	},
	"empty.MANIFEST": {Store: "ffeeddccbbaa99887766554433221100"},
}

// TestGolden: Encode writes the bytes the store wrote before, and Decode
// reads them back as they were.
func TestGolden(t *testing.T) {
	for name, m := range golden {
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", name))
			require.NoError(t, err)
			got, err := m.Encode()
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
			back, merr := Decode(want)
			require.Nil(t, merr)
			assert.Equal(t, m, *back)
		})
	}
}

// withSum is body followed by its checksum line, as Encode writes it.
func withSum(body string) []byte {
	return fmt.Appendf([]byte(body), "\n%08x\n", crc32.Checksum([]byte(body), logfile.Castagnoli))
}

// TestDecodeDamage: each kind of damage is an *Error saying what is
// wrong.
func TestDecodeDamage(t *testing.T) {
	good, err := (&Manifest{Store: "00112233445566778899aabbccddeeff", Log: 1}).Encode()
	require.NoError(t, err)
	flipped := append([]byte(nil), good...)
	flipped[3] ^= 1
	for _, tc := range []struct {
		name   string
		data   []byte
		reason string
	}{
		{"empty", nil, "the manifest's checksum does not match"},
		{"no checksum line", good[:len(good)-10], "the manifest's checksum does not match"},
		{"checksum cut short", good[:len(good)-3], "the manifest's checksum does not match"},
		{"a bit flipped", flipped, "the manifest's checksum does not match"},
		{"not JSON", withSum(`store=1`), "the manifest is not readable: invalid character 's' looking for beginning of value"},
		{"an unknown field", withSum(`{"store":"00112233445566778899aabbccddeeff","extra":1}`), `the manifest is not readable: json: unknown field "extra"`},
		{"a field of the wrong type", withSum(`{"store":"00112233445566778899aabbccddeeff","log":"1"}`), "the manifest is not readable: json: cannot unmarshal string into Go struct field Manifest.log of type uint64"},
		{"no store id", withSum(`{"log":1}`), `the manifest's store id "" is not 32 hex digits`},
		{"a short store id", withSum(`{"store":"0011"}`), `the manifest's store id "0011" is not 32 hex digits`},
		{"a store id of 15 bytes", withSum(`{"store":"00112233445566778899aabbccddee"}`), `the manifest's store id "00112233445566778899aabbccddee" is not 32 hex digits`},
		{"a store id of 17 bytes", withSum(`{"store":"00112233445566778899aabbccddeeff00"}`), `the manifest's store id "00112233445566778899aabbccddeeff00" is not 32 hex digits`},
		{"a store id not hex", withSum(`{"store":"0011223344556677889900aabbccddzz"}`), `the manifest's store id "0011223344556677889900aabbccddzz" is not 32 hex digits`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, merr := Decode(tc.data)
			assert.Nil(t, m)
			require.NotNil(t, merr)
			assert.Equal(t, tc.reason, merr.Error())
		})
	}
}

// TestDecodeChecksumLine: the checksum is 8 lowercase hex digits on the
// second line, the final newline optional.
func TestDecodeChecksumLine(t *testing.T) {
	good := withSum(`{"store":"00112233445566778899aabbccddeeff","log":2}`)
	m, merr := Decode(good[:len(good)-1])
	require.Nil(t, merr, "without the final newline")
	assert.Equal(t, uint64(2), m.Log)
	upper := append([]byte(nil), good...)
	for i := len(upper) - 9; i < len(upper)-1; i++ {
		if upper[i] >= 'a' && upper[i] <= 'f' {
			upper[i] -= 'a' - 'A'
		}
	}
	require.NotEqual(t, string(good), string(upper), "the checksum has a letter")
	_, merr = Decode(upper)
	require.NotNil(t, merr, "a checksum in capitals")
}

// TestRead: no MANIFEST is nil and no error; a damaged one is an *Error;
// one that cannot be read is that error.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	m, err := Read(vfs.OS, dir)
	require.NoError(t, err)
	assert.Nil(t, m)

	want := golden["full.MANIFEST"]
	data, err := want.Encode()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, Name), data, 0o644))
	m, err = Read(vfs.OS, dir)
	require.NoError(t, err)
	assert.Equal(t, want, *m)

	require.NoError(t, os.WriteFile(filepath.Join(dir, Name), data[1:], 0o644))
	_, err = Read(vfs.OS, dir)
	var merr *Error
	require.ErrorAs(t, err, &merr)
	assert.Equal(t, "the manifest's checksum does not match", merr.Reason)

	other := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(other, Name), 0o755))
	_, err = Read(vfs.OS, other)
	require.Error(t, err)
	assert.NotErrorAs(t, err, &merr, "an I/O error is not damage")
}

// TestID: the store id decoded.
func TestID(t *testing.T) {
	m := golden["full.MANIFEST"]
	assert.Equal(t, [16]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}, m.ID())
}

// TestSealedSize: the size of a segment recorded sealed, none for others
// or a nil manifest.
func TestSealedSize(t *testing.T) {
	m := golden["full.MANIFEST"]
	for _, tc := range []struct {
		m    *Manifest
		n    uint64
		size int64
		ok   bool
	}{
		{&m, 3, 4096, true},
		{&m, 4, 33, true},
		{&m, 5, 0, false},
		{nil, 3, 0, false},
	} {
		size, ok := tc.m.SealedSize(tc.n)
		assert.Equal(t, tc.size, size, "segment %d", tc.n)
		assert.Equal(t, tc.ok, ok, "segment %d", tc.n)
	}
}

// TestExpectedItems: the count of the container of that id and creation,
// bounded by MaxItemsHint; 0 for others or a nil manifest.
func TestExpectedItems(t *testing.T) {
	m := Manifest{Items: []ItemCount{{ID: "a", Created: 2, N: 7}, {ID: "big", Created: 1, N: math.MaxInt}}}
	for _, tc := range []struct {
		m       *Manifest
		id      string
		created uint64
		want    int
	}{
		{&m, "a", 2, 7},
		{&m, "a", 3, 0},
		{&m, "b", 2, 0},
		{&m, "big", 1, MaxItemsHint},
		{nil, "a", 2, 0},
	} {
		assert.Equal(t, tc.want, tc.m.ExpectedItems(tc.id, tc.created), "%s created at %d", tc.id, tc.created)
	}
}
