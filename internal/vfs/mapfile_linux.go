package vfs

import (
	"os"
	"syscall"
)

// mapFile returns the contents of the file at path, mapped read-only, and a
// function that unmaps them: recovery reads the file system's cache in
// place rather than copying a file as large as the store onto the heap.
// Nothing read from the mapping may be kept after release (records are
// copied out). The directory lock keeps other stores from changing the
// file meanwhile.
func mapFile(path string) (data []byte, release func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := fi.Size()
	if size == 0 || int64(int(size)) != size {
		data, err := os.ReadFile(path)
		return data, func() {}, err
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		data, err := os.ReadFile(path) // a file system that cannot map
		return data, func() {}, err
	}
	return data, func() { syscall.Munmap(data) }, nil
}
