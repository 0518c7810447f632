package lethe_test

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withChecksum is body and the line of its CRC-32C, as a MANIFEST.
func withChecksum(body string) []byte {
	return fmt.Appendf(nil, "%s\n%08x\n", body, crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli)))
}

// TestManifestDamaged: a MANIFEST whose own bytes are damaged fails Open
// and Check with a *CorruptionError naming it and saying what is wrong
// (internal/manifest's reason), and Open changes nothing in the
// directory.
func TestManifestDamaged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		damage func(data []byte) []byte
		reason string
	}{
		{"a bit flipped", func(d []byte) []byte { d[2] ^= 1; return d }, "the manifest's checksum does not match"},
		{"cut short", func(d []byte) []byte { return d[:len(d)/2] }, "the manifest's checksum does not match"},
		{"emptied", func([]byte) []byte { return nil }, "the manifest's checksum does not match"},
		{"its store id cut, the checksum made again", func([]byte) []byte { return withChecksum(`{"store":"0011","log":1}`) }, `the manifest's store id "0011" is not 32 hex digits`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := openDurable(t, dir, lethe.NewManualClock(t0))
			writeSome(t, mustContainer(t, s, lethe.ContainerProperties{ID: "c"}), "a", 3)
			require.NoError(t, s.Close())
			path := filepath.Join(dir, "MANIFEST")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			damaged := tc.damage(data)
			require.NoError(t, os.WriteFile(path, damaged, 0o644))

			ce := openErr(t, dir)
			assert.Equal(t, path, ce.File)
			assert.Equal(t, tc.reason, ce.Reason)
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(damaged), string(after), "Open left the manifest as it was")

			_, err = lethe.Check(dir)
			var cce *lethe.CorruptionError
			require.True(t, errors.As(err, &cce), "%v", err)
			assert.Equal(t, path, cce.File)
			assert.Equal(t, tc.reason, cce.Reason)
		})
	}
}
