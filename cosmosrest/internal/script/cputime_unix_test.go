//go:build unix

package script

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used so far, in user
// and system mode, over all its threads.
func processCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		panic(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
