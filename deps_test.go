package lethe_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoHTTPDependency keeps net/http out of the packages a program that
// imports lethe must build: it pulls in some 190 packages.
func TestNoHTTPDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "net/http" {
			t.Fatal("package lethe depends on net/http")
		}
	}
}
