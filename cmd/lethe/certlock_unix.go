//go:build unix

package main

import (
	"os"
	"syscall"
)

// lockDir waits for, then takes, an exclusive flock on the directory dir
// itself (no lock file left in it), and returns what lets go of it. Other
// servers keeping their certificate in dir, in this process or another,
// wait for it in turn; the lock goes with the process.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing the file lets go of its flock
}
