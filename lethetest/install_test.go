package lethetest_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// installBlock matches a block of docs/install.md that TestInstallDoc
// runs: a marker comment naming the file, then a fenced block.
var installBlock = regexp.MustCompile("(?s)<!-- install-test: ([^ ]+) -->\n```[a-z]*\n(.*?)```")

// TestInstallDoc builds a module of its own from docs/install.md's
// blocks, as a user outside the repository would, with the checkout in
// place of ../lethe, runs its test (which must run: a module with no test
// files passes go test too), and builds the server as a tool and runs its
// version command. So the install doc cannot drift from what works.
func TestInstallDoc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module and the server: not in -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(repo, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := installBlock.FindAllSubmatch(doc, -1)
	if len(blocks) != 2 {
		t.Fatalf("docs/install.md has %d install-test blocks, want 2 (go.mod and a test)", len(blocks))
	}
	app := t.TempDir()
	for _, b := range blocks {
		text := strings.ReplaceAll(string(b[2]), "../lethe", repo)
		if err := os.WriteFile(filepath.Join(app, string(b[1])), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	run("mod", "tidy")
	if out := run("test", "-count=1", "./..."); !strings.Contains(out, "ok  \texample.com/app") {
		t.Fatalf("go test in the module: %s", out)
	}
	if out := run("tool", "lethe", "version"); !strings.HasPrefix(out, "lethe ") {
		t.Fatalf("go tool lethe version: %q", out)
	}
}
