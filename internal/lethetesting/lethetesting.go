// Package lethetesting holds the helpers lethe's tests share, black-box
// (package lethe_test) and white-box (package lethe) alike, as bbolt's
// internal/btesting does for bbolt's: what a test reads of a store's
// directory and of its pages. It does not import lethe, so that the
// white-box tests can use it; the helpers that open stores are the
// black-box tests' own (helpers_test.go).
package lethetesting

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// DirNames returns the names of the entries of dir, sorted.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// LastSegment returns the path of the last log segment (wal-*.log) of the
// durable store in dir; it fails t if there is none.
func LastSegment(t testing.TB, dir string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	require.NoError(t, err)
	require.NotEmpty(t, names, "no log segment in %s", dir)
	slices.Sort(names)
	return names[len(names)-1]
}

// ReadAll calls next, which reads a page, until a page comes back empty,
// and returns the items of every page in order: a whole change feed or
// query, as a reader pages through it. An error fails t.
func ReadAll[T any](t testing.TB, next func() ([]T, error)) []T {
	t.Helper()
	var out []T
	for {
		page, err := next()
		require.NoError(t, err)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
	}
}
