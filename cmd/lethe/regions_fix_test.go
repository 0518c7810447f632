package main

import (
	"strings"
	"testing"
)

// TestRegionFlagsRefusedFix: flags an account of regions cannot honour are
// refused before anything opens.
func TestRegionFlagsRefusedFix(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-regions", "A,B", "-changefeed=false"}, "-changefeed=false: the regions"},
	} {
		err := run(append([]string{"-http", "-addr", "127.0.0.1:0", "-compute-addr", ""}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
