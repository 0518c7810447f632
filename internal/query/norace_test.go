//go:build !race

package query

// slowdown is how much slower code runs under the race detector, for the
// real-time bounds of tests.
const slowdown = 1
