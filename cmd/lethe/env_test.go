//go:build unix

package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestEnvName: the variable of each kind of flag name.
func TestEnvName(t *testing.T) {
	for name, want := range map[string]string{"addr": "LETHE_ADDR", "log-level": "LETHE_LOG_LEVEL",
		"changefeed-max-bytes": "LETHE_CHANGEFEED_MAX_BYTES", "http": "LETHE_HTTP"} {
		if got := envName(name); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

// TestEnv: the command takes its flags from LETHE_* variables, the
// command line winning; a bad value names its variable; other LETHE_
// variables are ignored.
func TestEnv(t *testing.T) {
	t.Setenv("LETHE_HTTP", "true")
	t.Setenv("LETHE_KEY", "dGhpcyBpcyBub3QgdGhlIGtleQ==")
	t.Setenv("LETHE_DIR", t.TempDir())
	t.Setenv("LETHE_NOT_A_FLAG", "whatever")
	base, logs, done := start(t)
	stop(t, done)
	if !strings.HasPrefix(base, "http://") || !strings.Contains(logs.String(), "key=\"the one given") || !strings.Contains(logs.String(), "storage=durable dir=") {
		t.Errorf("the environment was not read: %s", logs.String())
	}

	base, logs, done = start(t, "-http=false", "-dir", "")
	stop(t, done)
	if !strings.HasPrefix(base, "https://") || !strings.Contains(logs.String(), "storage=memory") {
		t.Errorf("the command line did not win: %s", logs.String())
	}

	t.Setenv("LETHE_CHANGEFEED_MAX_CHANGES", "many")
	if err := run(nil); err == nil || !strings.Contains(err.Error(), "LETHE_CHANGEFEED_MAX_CHANGES") {
		t.Errorf("a bad value: %v", err)
	}
}

// TestHelp: -help lists every flag with its variable.
func TestHelp(t *testing.T) {
	fs := flag.NewFlagSet("lethe", flag.ContinueOnError)
	fs.String("log-level", "info", "the least level logged")
	fs.Bool("http", false, "plain HTTP")
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.Usage = usage(fs, "Usage: lethe [flags]")
	if err := fs.Parse([]string{"-help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	for _, want := range []string{"Usage: lethe [flags]", "LETHE_<FLAG>", "-log-level string  (env LETHE_LOG_LEVEL)",
		`the least level logged (default "info")`, "-http  (env LETHE_HTTP)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-help lacks %q:\n%s", want, out.String())
		}
	}
}
