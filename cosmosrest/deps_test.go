package cosmosrest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoPrometheusDependency keeps Prometheus's client, which cmd/lethe
// (a module of its own) serves its metrics with, out of cosmosrest, and
// out of this module's requirements altogether.
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
