//go:build !race

package lethe_test

// The rest of the randomized model tests' rounds and seeds: tests that run
// one goroutine through long random sequences, checking the whole store
// after each step, which the race detector makes ten times slower and has
// little to find in. Their first rounds run under it, in the tests whose
// names these extend; these run without it, as .ci/test does them
// (go test -run 'WithoutRace$'), so that every round still runs in CI.

import "testing"

// TestModelWithoutRace runs TestModel's rounds from modelRaceRounds to 40.
func TestModelWithoutRace(t *testing.T) {
	t.Parallel()
	skipShort(t)
	runModelRounds(t, modelRaceRounds, 40, 1000, false)
}

// TestModelDurableWithoutRace runs TestModelDurable's rounds from
// modelDurableRaceRounds to 12.
func TestModelDurableWithoutRace(t *testing.T) {
	t.Parallel()
	skipShort(t)
	runModelRounds(t, modelDurableRaceRounds, 12, 400, true)
}

// TestChangeFeedModelWithoutRace runs TestChangeFeedModel's seeds from
// feedModelRaceSeeds to 20.
func TestChangeFeedModelWithoutRace(t *testing.T) {
	t.Parallel()
	feedModelSeeds(t, feedModelRaceSeeds, 20, false)
}

// TestChangeFeedModelDurableWithoutRace runs TestChangeFeedModelDurable's
// seeds from feedModelRaceSeeds to 12.
func TestChangeFeedModelDurableWithoutRace(t *testing.T) {
	t.Parallel()
	feedModelSeeds(t, feedModelRaceSeeds, 12, true)
}

// TestReaperRandomWorkloadsWithoutRace is TestReaperRandomWorkloads with
// 20 workloads.
func TestReaperRandomWorkloadsWithoutRace(t *testing.T) {
	t.Parallel()
	runReaperWorkloads(t, 20)
}

// TestQueryJoinPagesWithoutRace is TestQueryJoinPages with 6 page sizes
// for each query and budget.
func TestQueryJoinPagesWithoutRace(t *testing.T) {
	t.Parallel()
	runQueryJoinPages(t, 6)
}

// skipShort skips a test that runs the rest of a model test's rounds
// under -short, which runs only the first ones.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("the rest of the rounds: not with -short")
	}
}
