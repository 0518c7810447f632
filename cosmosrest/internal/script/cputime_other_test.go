//go:build !unix

package script

import "time"

var processStart = time.Now()

// processCPU returns the wall-clock time since the package's tests
// started: where the process's CPU time is not at hand, the wall clock
// stands in for it.
func processCPU() time.Duration { return time.Since(processStart) }
