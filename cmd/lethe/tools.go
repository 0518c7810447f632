package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// The tools of the same binary: lethe <tool> [flags].
var tools = map[string]func(args []string) error{
	"check":   checkTool,
	"export":  exportTool,
	"import":  importTool,
	"version": versionTool,
}

// toolOutput is where the tools print (standard output; tests replace it),
// toolInput where import reads by default.
var (
	toolOutput io.Writer = os.Stdout
	toolInput  io.Reader = os.Stdin
)

// version and commit are the command's version and the VCS commit it is
// built from, for builds that Go does not stamp with them (go run, a build
// outside a checkout): -ldflags "-X main.version=v1.2.3 -X
// main.commit=$(git rev-parse HEAD)". Else Go's record of the build says
// them (debug.ReadBuildInfo).
var version, commit = "", ""

// toolFlags returns the flag set of a tool, with -dir, and its usage.
func toolFlags(name, synopsis string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("lethe "+name, flag.ContinueOnError)
	fs.SetOutput(helpOutput)
	dir := fs.String("dir", "", "the data directory (as the server's -dir)")
	fs.Usage = usage(fs, synopsis)
	return fs, dir
}

// parseTool reads a tool's flags, from the environment then the command
// line; it requires -dir.
func parseTool(fs *flag.FlagSet, dir *string, args []string) error {
	if err := fromEnv(fs, os.LookupEnv); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments: %v", fs.Name(), fs.Args())
	}
	if *dir == "" {
		return fmt.Errorf("%s: -dir is required", fs.Name())
	}
	return nil
}

func versionTool(args []string) error {
	fs := flag.NewFlagSet("lethe version", flag.ContinueOnError)
	fs.SetOutput(helpOutput)
	fs.Usage = usage(fs, "Usage: lethe version\nPrints the command's version, and the Go release and platform it was built with.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	_, err := fmt.Fprintf(toolOutput, "lethe %s %s %s/%s\n", versionOf(bi, version, commit), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}

// versionOf returns the command's version as bi (nil: none), and the
// version and commit given with -X, say it: the module's version (-X's
// first), then the commit, its first 12 digits, "modified" if the
// checkout had changes (Go's vcs.revision and vcs.modified; -X's if Go
// recorded none). A build of no version is "devel", never without its
// commit.
func versionOf(bi *debug.BuildInfo, xVersion, xCommit string) string {
	v, rev, modified := xVersion, xCommit, false
	if bi != nil {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && s.Value != "":
				rev = s.Value
			case s.Key == "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "(devel)" || v == "devel" {
		v = ""
	}
	if rev == "" {
		if v == "" {
			return "(no version or commit recorded)"
		}
		return v
	}
	if v == "" {
		v = "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += ", modified"
	}
	return fmt.Sprintf("%s (commit %s)", v, rev)
}

// checkTool verifies a data directory without changing it.
func checkTool(args []string) error {
	fs, dir := toolFlags("check", "Usage: lethe check -dir D\n"+
		"Verifies every checksum of every database in D and prints what the server's start would recover and repair; changes nothing.\n"+
		"Exits 1 if a database is damaged. The server must be stopped.")
	if err := parseTool(fs, dir, args); err != nil {
		return err
	}
	dbs, leftovers, err := cosmosrest.CheckDir(*dir)
	if err != nil {
		return held("check", err)
	}
	w := toolOutput
	damaged := 0
	for _, d := range dbs {
		name := fmt.Sprintf("%q", d.ID)
		if d.ID == "" {
			name = "(unknown)"
		}
		if d.Err != nil {
			damaged++
			fmt.Fprintf(w, "database %s (%s): DAMAGED: %v\n", name, d.Dir, d.Err)
			fmt.Fprintf(w, "  the server would serve it as unavailable (or not start); its files are left as they are\n")
			continue
		}
		ri := d.Recovery
		snap := ri.Snapshot
		if snap == "" {
			snap = "none"
		}
		fmt.Fprintf(w, "database %s (%s): ok: snapshot %s, %d log segments, %d log frames, checksums good\n", name, d.Dir, snap, ri.Segments, ri.Frames)
		fmt.Fprintf(w, "  would recover %d live items; would drop %d items expired by now\n", ri.Items, ri.Expired)
		if ri.TornFile != "" || ri.TornBytes > 0 {
			fmt.Fprintf(w, "  would cut %d bytes off the end of %s: a write torn when the server stopped, never acknowledged\n", ri.TornBytes, ri.TornFile)
		}
		for _, f := range ri.Unfinished {
			fmt.Fprintf(w, "  would remove %s: a snapshot that was being written\n", f)
		}
	}
	for _, l := range leftovers {
		fmt.Fprintf(w, "would remove %s: what an interrupted create or delete of a database left\n", l)
	}
	if len(dbs) == 0 {
		fmt.Fprintf(w, "no databases in %s\n", *dir)
	}
	if damaged > 0 {
		return fmt.Errorf("check: %d of %d databases damaged", damaged, len(dbs))
	}
	return nil
}

// held returns err, a tool's error, saying what to do when it is that
// the data directory is held: a tool runs on a directory no server (or
// anything else) has open.
func held(tool string, err error) error {
	if errors.Is(err, lethe.ErrLocked) {
		return fmt.Errorf("%s: %w: stop the server (or whatever else holds it) first", tool, err)
	}
	return err
}

// toolName returns the tool args name, if args start with one.
func toolName(args []string) (func([]string) error, bool) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil, false
	}
	t, ok := tools[args[0]]
	return t, ok
}
