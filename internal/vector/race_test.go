//go:build race

package vector

// raceEnabled: the race detector slows the graph's tests tenfold; they
// make smaller graphs under it.
const raceEnabled = true
