package lethe_test

import (
	"os"
	"os/exec"
	"slices"
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
// (a module of its own) serves its metrics with, out of lethe, and out of
// the root module's requirements altogether. cosmosrest, a module of its
// own, has a test of its own that keeps it out there.
func TestNoPrometheusDependency(t *testing.T) {
	for _, args := range [][]string{{"list", "-deps", "."}, {"list", "-m", "all"}} {
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
// the REST front runs server-side scripts with (cosmosrest/internal/script),
// out of the packages a program that imports lethe must build.
func TestNoJavaScriptEngineDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/dop251/") || strings.HasPrefix(dep, "github.com/dlclark/") || dep == "github.com/lethedb/lethe/cosmosrest/internal/script" {
			t.Fatalf("package lethe depends on %s", dep)
		}
	}
}

// rootRequirements are the only modules the root go.mod requires directly.
var rootRequirements = []string{"github.com/golang/geo", "github.com/google/btree", "github.com/stretchr/testify"}

// TestRootRequirements keeps the root module's requirements to btree,
// testify and golang/geo (S2, the geometry of the spatial queries:
// internal/geo): go.mod requires those three alone, and every other module
// of the build list (go list -m all) is one that they require. So a
// program that imports lethe downloads no other module graph; the REST
// front and its JavaScript engine are the cosmosrest module's.
func TestRootRequirements(t *testing.T) {
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if direct := directRequirements(string(gomod)); !slices.Equal(direct, rootRequirements) {
		t.Fatalf("go.mod requires %v directly, want %v alone", direct, rootRequirements)
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	graph := goOutput(t, "mod", "graph")
	required := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(graph), "\n") {
		from, to, _ := strings.Cut(line, " ")
		required[from] = append(required[from], to)
	}
	brought := map[string]bool{}
	var bring func(mod string)
	bring = func(mod string) {
		if brought[mod] {
			return
		}
		brought[mod] = true
		for _, next := range required[mod] {
			bring(next)
		}
	}
	for _, mod := range required["github.com/lethedb/lethe"] {
		if path, _, _ := strings.Cut(mod, "@"); slices.Contains(rootRequirements, path) {
			bring(mod)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(goOutput(t, "list", "-m", "all")), "\n")[1:] {
		path, version, _ := strings.Cut(line, " ")
		if !brought[path+"@"+version] {
			t.Errorf("go list -m all lists %s, which none of %v requires", line, rootRequirements)
		}
	}
}

// directRequirements returns the module paths that the go.mod text
// requires without an // indirect comment, in the order it names them.
func directRequirements(gomod string) []string {
	var paths []string
	inBlock := false
	for _, line := range strings.Split(gomod, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			inBlock = true
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inBlock:
			continue
		}
		if fields := strings.Fields(line); len(fields) >= 2 && !strings.HasSuffix(line, "// indirect") {
			paths = append(paths, fields[0])
		}
	}
	return paths
}

// goOutput runs the go command with args and returns its output, failing
// t with what it wrote to stderr if it fails.
func goOutput(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}
