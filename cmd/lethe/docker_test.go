//go:build linux

package main

import (
	"bufio"
	"crypto/tls"
	"debug/elf"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dockerfile reads the repository's Dockerfile.
func dockerfile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// splitArgs splits a command line as the shell does for the Dockerfile's
// build line: on spaces, double quotes grouping.
func splitArgs(s string) []string {
	var args []string
	var cur strings.Builder
	quoted, has := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, has = !quoted, true
		case r == ' ' && !quoted:
			if has {
				args = append(args, cur.String())
			}
			cur.Reset()
			has = false
		default:
			cur.WriteRune(r)
			has = true
		}
	}
	if has {
		args = append(args, cur.String())
	}
	return args
}

// TestDockerfile checks the image's definition: a static build, a
// minimal base, a non-root user, the two ports, the volume for -dir, each
// address on every interface (in a container, the port mapping reaches it
// there).
func TestDockerfile(t *testing.T) {
	d := dockerfile(t)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^RUN cd cmd/lethe && CGO_ENABLED=0 go build .* -o /out/lethe \.$`),
		regexp.MustCompile(`(?m)^FROM gcr\.io/distroless/static-debian12:nonroot$`),
		regexp.MustCompile(`(?m)^USER 65532:65532$`),
		regexp.MustCompile(`(?m)^EXPOSE 8081 8903$`),
		regexp.MustCompile(`(?m)^VOLUME /data$`),
		regexp.MustCompile(`(?m)^ENV .*LETHE_ADDR=0\.0\.0\.0:8081 .*LETHE_COMPUTE_ADDR=0\.0\.0\.0:8903 .*LETHE_DIR=/data`),
		regexp.MustCompile(`(?m)^COPY --from=build --chown=65532:65532 /out/data /data$`),
	} {
		if !want.MatchString(d) {
			t.Errorf("the Dockerfile has no line matching %s", want)
		}
	}
}

// TestImageBinary builds the binary the image holds, as its Dockerfile
// builds it, checks that it is static, and runs it as the image does: as
// a user other than root (when the test may switch to one), configured
// by the image's LETHE_* variables (its addresses moved to free ports of
// the loopback), its data and certificate in the volume's directory.
// No container builder runs here (see the README), so this is the image's
// test.
func TestImageBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	d := dockerfile(t)
	m := regexp.MustCompile(`(?m)^RUN cd cmd/lethe && CGO_ENABLED=0 go build (.*) -o /out/lethe \.$`).FindStringSubmatch(d)
	if m == nil {
		t.Fatal("no build line")
	}
	work := t.TempDir()
	os.Chmod(work, 0o755)
	os.Chmod(filepath.Dir(work), 0o755)
	bin := filepath.Join(work, "lethe")
	args := append([]string{"build"}, splitArgs(strings.ReplaceAll(m[1], "${VERSION}", "v0.0.0-image"))...)
	build := exec.Command("go", append(args, "-o", bin, ".")...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	libs, _ := f.ImportedLibraries()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary asks for a dynamic loader")
		}
	}
	f.Close()
	if len(libs) > 0 {
		t.Errorf("the binary needs %v", libs)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "lethe v0.0.0-image ") {
		t.Errorf("version: %q %v", out, err)
	}

	data := filepath.Join(work, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	env := regexp.MustCompile(`(?m)^ENV (.*)$`).FindStringSubmatch(d)[1]
	cmd.Env = append(os.Environ(), strings.Fields(env)...)
	cmd.Env = append(cmd.Env, "LETHE_ADDR=127.0.0.1:0", "LETHE_COMPUTE_ADDR=127.0.0.1:0", "LETHE_DIR="+data)
	if os.Getuid() == 0 {
		os.Chown(data, 65532, 65532)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	re := regexp.MustCompile(`serving the Cosmos DB REST API" endpoint=(https://\S+/) compute_gateway=https://\S+/ key="the emulator's well-known key" storage=durable dir=` +
		regexp.QuoteMeta(data) + `$`)
	var base string
	timeout := time.After(20 * time.Second)
	for base == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the binary ended before serving")
			}
			if m := re.FindStringSubmatch(l); m != nil {
				base = m[1]
			}
		case <-timeout:
			t.Fatal("no start line")
		}
	}
	go func() {
		for range lines {
		}
	}()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(base + "_explorer/emulator.pem")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the certificate: %d", resp.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(data, certFile)); err != nil {
		t.Errorf("the certificate is not kept in the volume: %v", err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v", err)
	}
}
