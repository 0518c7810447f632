//go:build !unix

package main

// lockDir takes no lock where there is no flock: two servers starting at
// the same moment with one certificate directory may each make a
// certificate, and serve it; the next start serves the one the files
// hold (with -cert-dir, a mismatched pair replaced).
func lockDir(string) (unlock func(), err error) {
	return func() {}, nil
}
