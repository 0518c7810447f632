package lethe

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestFileFormatDoc keeps docs/file-format.md, the format's reference, in
// step with format.go and record.go: every frame kind the code writes is
// described there, the version table reaches the version written, and the
// record layout ends its header where recordHeader does.
func TestFileFormatDoc(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("docs/file-format.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, kind := range []byte{frameContainer, frameSettings, frameDrop, framePut, frameRemove, frameBatch,
		frameState, frameEnd, framePutFeed, frameRemoveFeed, frameExpire, frameFeed, frameTomb} {
		if !strings.Contains(doc, fmt.Sprintf("\n'%c' ", kind)) {
			t.Errorf("docs/file-format.md describes no frame of kind %q", kind)
		}
	}
	if !strings.Contains(doc, fmt.Sprintf("\n| %d | ", walVersion)) {
		t.Errorf("docs/file-format.md's version table has no row for version %d, the one written", walVersion)
	}
	if strings.Contains(doc, fmt.Sprintf("\n| %d | ", walVersion+1)) {
		t.Errorf("docs/file-format.md describes version %d, which is not written", walVersion+1)
	}
	if !strings.Contains(doc, fmt.Sprintf("\n%d            the partition key value", recordHeader)) {
		t.Errorf("docs/file-format.md's record layout does not end its header at %d bytes (recordHeader)", recordHeader)
	}
}
