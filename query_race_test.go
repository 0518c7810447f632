//go:build race

package lethe_test

// slowdown is how much slower code runs under the race detector, for the
// real-time bounds of tests (generous: CI machines are shared).
const slowdown = 10
