//go:build !race

package lethe

// The white-box tests' part of withoutrace_test.go: the full length of a
// randomized test that runs one goroutine and a shorter sequence under the
// race detector.

import "testing"

// TestIDTableWithoutRace is TestIDTable at 20,000 steps in each hash space.
func TestIDTableWithoutRace(t *testing.T) {
	t.Parallel()
	runIDTable(t, 20000)
}

// TestIndexPagesModelWithoutRace is TestIndexPagesModel for 6 rounds.
func TestIndexPagesModelWithoutRace(t *testing.T) {
	t.Parallel()
	runIndexPagesModel(t, 6)
}
