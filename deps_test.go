package lethe_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The tests of this file start go list, so they do not run in parallel: a
// child forked while a parallel test closes a durable store holds its
// LOCK flock until it execs, and that test's reopen finds the directory in
// use.

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

// TestNoPrometheusDependency keeps Prometheus's client, which cmd/lethe
// (a module of its own) serves its metrics with, out of lethe and
// cosmosrest, and out of the root module's requirements altogether.
func TestNoPrometheusDependency(t *testing.T) {
	for _, args := range [][]string{{"list", "-deps", ".", "./cosmosrest"}, {"list", "-m", "all"}} {
		out, err := exec.Command("go", args...).Output()
		if err != nil {
			t.Skipf("go %v: %v", args, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/prometheus/") {
				t.Fatalf("go %v lists %s", args, dep)
			}
		}
	}
}

// TestNoJavaScriptEngineDependency keeps goja, the JavaScript engine that
// the REST front runs server-side scripts with (internal/script), out of
// the packages a program that imports lethe must build.
func TestNoJavaScriptEngineDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/dop251/") || strings.HasPrefix(dep, "github.com/dlclark/") || dep == "github.com/lethedb/lethe/internal/script" {
			t.Fatalf("package lethe depends on %s", dep)
		}
	}
}
