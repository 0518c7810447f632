package vfstest

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

func writeFile(t *testing.T, p *PowerFS, name string, data []byte, sync bool) {
	t.Helper()
	f, err := p.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func contents(p *PowerFS, name string) (string, bool) {
	data, _, err := p.Map(name)
	if err != nil {
		return "", false
	}
	return string(data), true
}

// TestPowerFSKeepsSynced: what was synced, contents and names, survives
// every cut; what was not may not.
func TestPowerFSKeepsSynced(t *testing.T) {
	lost := map[string]bool{}
	for seed := range uint64(200) {
		p := NewPowerFS(seed)
		if err := p.MkdirAll("/d", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := p.SyncDir("/"); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, "/d/kept", []byte("synced"), true)
		if err := p.SyncDir("/d"); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, "/d/unsynced", []byte("maybe"), false)
		writeFile(t, p, "/d/nameless", []byte("synced, its name not"), true)
		f, _ := p.OpenFile("/d/kept", os.O_WRONLY, 0)
		f.Truncate(6)
		f.Close()
		p.Restart()
		if got, ok := contents(p, "/d/kept"); !ok || got != "synced" {
			t.Fatalf("seed %d: /d/kept = %q, %v", seed, got, ok)
		}
		for _, name := range []string{"/d/unsynced", "/d/nameless"} {
			if got, ok := contents(p, name); !ok {
				lost[name+" gone"] = true
			} else if got == "" {
				lost[name+" empty"] = true
			}
		}
	}
	for _, want := range []string{"/d/unsynced gone", "/d/unsynced empty", "/d/nameless gone"} {
		if !lost[want] {
			t.Errorf("in 200 cuts, never %s", want)
		}
	}
}

// TestPowerFSTears: an unsynced write of many sectors comes back whole,
// absent, cut at a sector boundary, or cut there and padded with zeros.
func TestPowerFSTears(t *testing.T) {
	data := bytes.Repeat([]byte{'x'}, 4*SectorSize+100)
	seen := map[string]bool{}
	for seed := range uint64(300) {
		p := NewPowerFS(seed)
		writeFile(t, p, "/f", []byte("head"), true)
		p.SyncDir("/")
		f, _ := p.OpenFile("/f", os.O_WRONLY, 0)
		f.Write(nil)
		f.Close()
		f, _ = p.OpenFile("/f", os.O_WRONLY, 0)
		f.Write([]byte("head"))
		f.Write(data)
		p.Restart()
		got, _ := contents(p, "/f")
		body := got[4:]
		switch {
		case len(body) == 0:
			seen["none"] = true
		case body == string(data):
			seen["whole"] = true
		case (4+len(bytes.TrimRight([]byte(body), "\x00")))%SectorSize == 0 && len(body) == len(data):
			seen["zeros"] = true
		case (4+len(body))%SectorSize == 0 && bytes.Count([]byte(body), []byte{'x'}) == len(body):
			seen["torn"] = true
		default:
			t.Fatalf("seed %d: a state no disk leaves: %q", seed, got)
		}
	}
	for _, want := range []string{"none", "whole", "zeros", "torn"} {
		if !seen[want] {
			t.Errorf("in 300 cuts, never %s", want)
		}
	}
}

// TestPowerFSReplays: a seed makes the same choices again, and a cut at a
// sync fails that sync and every operation after it.
func TestPowerFSReplays(t *testing.T) {
	run := func(seed uint64) string {
		p := NewPowerFS(seed)
		p.MkdirAll("/a/b", 0o755)
		for i := range 20 {
			writeFile(t, p, "/a/b/f"+string(rune('a'+i)), bytes.Repeat([]byte{byte(i)}, 700*i), i%3 == 0)
			if i%5 == 0 {
				p.Rename("/a/b/fa", "/a/b/g"+string(rune('a'+i)))
			}
		}
		p.CutAtSync(1)
		if err := p.SyncDir("/a"); !errors.Is(err, ErrPowerCut) {
			t.Fatalf("the sync at the cut returned %v", err)
		}
		if _, err := p.List("/a"); !errors.Is(err, ErrPowerCut) {
			t.Fatalf("after the cut, List returned %v", err)
		}
		p.Restart()
		return p.String()
	}
	for seed := range uint64(20) {
		if a, b := run(seed), run(seed); a != b {
			t.Fatalf("seed %d replays differently:\n%s\n%s", seed, a, b)
		}
	}
}
