package lethe_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	mdFence   = regexp.MustCompile("(?s)```.*?```")
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.*)$`)
	mdScheme  = regexp.MustCompile(`^[a-z]+:`)
)

// TestDocLinks checks every relative link of README.md, BENCHMARKS.md and
// docs/: the file it names exists, and its #anchor is a heading there, by
// GitHub's rule for heading anchors. So moving a section or a file cannot
// leave a dead link behind.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "README.md", "BENCHMARKS.md")
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(mdFence.ReplaceAllString(string(text), ""), -1) {
			target := m[1]
			if mdScheme.MatchString(target) {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %s: no such file", f, target)
				continue
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			anchors, err := mdAnchors(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors[frag] {
				t.Errorf("%s: link %s: %s has no such heading", f, target, dest)
			}
		}
	}
}

// mdAnchors returns the anchors GitHub gives the headings of a Markdown
// file: lower case, spaces as hyphens, punctuation other than hyphens and
// underscores dropped, and -1, -2, ... after a repeated one.
func mdAnchors(path string) (map[string]bool, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	anchors, seen := map[string]bool{}, map[string]int{}
	for _, m := range mdHeading.FindAllStringSubmatch(mdFence.ReplaceAllString(string(text), ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		s := b.String()
		if n := seen[s]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			anchors[s] = true
		}
		seen[s]++
	}
	return anchors, nil
}

// addWords adds to words every word of src, a word being what the
// regular expression [A-Za-z_][A-Za-z0-9_]* matches: a run of ASCII
// letters, digits and underscores, less the digits it starts with. (A
// scan, not the expression itself, which the race detector makes take
// seconds over the repository's source.)
func addWords(words map[string]bool, src []byte) {
	for _, run := range bytes.FieldsFunc(src, func(r rune) bool {
		return !(r == '_' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	}) {
		if w := bytes.TrimLeft(run, "0123456789"); len(w) > 0 {
			words[string(w)] = true
		}
	}
}

var (
	archTicked = regexp.MustCompile("`([^`\n]+)`")
	archGoFile = regexp.MustCompile(`\b[A-Za-z0-9_]+\.go\b`)
	archIdent  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
	archDir    = regexp.MustCompile(`^(internal|cmd|cosmosrest|lethetest|sdktest|bench|examples|docs)(/[A-Za-z0-9_.-]+)*/?$`)
)

// TestArchitectureNames keeps docs/architecture.md true to the source:
// every package, directory or path it names exists, every Go file it names is
// in the repository, and every identifier it quotes (a function, a type, a
// method as Type.method) is still a word of some Go file.
func TestArchitectureNames(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	files, words := map[string]bool{}, map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			files[d.Name()] = true
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			addWords(words, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, f := range archGoFile.FindAllString(text, -1) {
		if !files[f] {
			t.Errorf("docs/architecture.md names %s: no such Go file", f)
		}
	}
	for _, m := range archTicked.FindAllStringSubmatch(text, -1) {
		name := m[1]
		switch {
		case archDir.MatchString(name):
			if _, err := os.Stat(name); err != nil {
				t.Errorf("docs/architecture.md names %s: no such file or directory", name)
			}
		case strings.HasSuffix(name, ".go"): // a file: checked above
		case archIdent.MatchString(name):
			for _, part := range strings.Split(name, ".") {
				if !words[part] {
					t.Errorf("docs/architecture.md names %s: %s is in no Go file", name, part)
				}
			}
		}
	}
}
