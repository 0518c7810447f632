package lethe

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckSequence: the log segments recovery replays follow the snapshot
// (or, without one, start at 1) and each other without a gap; the error
// names the first file missing.
func TestCheckSequence(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		from    uint64
		segs    []uint64
		missing string // the file the error names, "" for none
		reason  string
	}{
		{"empty directory", 0, nil, "", ""},
		{"segments from 1", 0, []uint64{1, 2, 3}, "", ""},
		{"a snapshot and its segments", 4, []uint64{4, 5}, "", ""},
		{"a gap", 0, []uint64{1, 2, 4}, segmentName(3), "this log segment is missing"},
		{"a gap after a snapshot", 4, []uint64{4, 6}, segmentName(5), "this log segment is missing"},
		{"no snapshot before segment 3", 0, []uint64{3, 4}, snapshotName(3), "the snapshot that the log segments follow is missing"},
		{"a snapshot without its segment", 4, []uint64{5}, segmentName(4), "the log segment that follows the snapshot is missing"},
		{"a snapshot without segments", 4, nil, segmentName(4), "the log segment that follows the snapshot is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkSequence(dir, tc.from, tc.segs)
			if tc.missing == "" {
				require.NoError(t, err)
				return
			}
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, filepath.Join(dir, tc.missing), ce.File)
			assert.Equal(t, tc.reason, ce.Reason)
		})
	}
}
