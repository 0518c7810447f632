//go:build !race

package main

// raceEnabled: the race detector multiplies a process's memory, so tests of
// resident memory do not run under it.
const raceEnabled = false
