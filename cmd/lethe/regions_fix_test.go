package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestRegionFlagsRefusedFix: flags an account of regions cannot honour,
// or that would be ignored, are refused before anything opens.
func TestRegionFlagsRefusedFix(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-regions", "A,B", "-changefeed=false"}, "-changefeed=false: the regions"},
		{[]string{"-regions", "A,B", "-lag-jitter", "2562047h47m16.854775807s"}, "-lag-jitter"},
		{[]string{"-regions", "A,B", "-lag-jitter", "25h"}, "from 0 to 24h"},
		{[]string{"-consistency", "Eventual"}, "give -regions"},
		{[]string{"-consistency", "Linear"}, "give -regions"},
		{[]string{"-lag-seed", "7"}, "give -regions"},
		{[]string{"-regions", "A", "-consistency", "Linear"}, "not a consistency level"},
		{[]string{"-regions", "A,B", "-consistency", "BoundedStaleness", "-max-interval", "9223372037"}, "(max-interval)"},
	} {
		err := run(append([]string{"-http", "-addr", "127.0.0.1:0", "-compute-addr", ""}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

// TestLagFuncBounds: the largest jitter draws no panic, and a lag plus
// its jitter past the largest duration is the largest.
func TestLagFuncBounds(t *testing.T) {
	for _, tc := range []struct {
		name        string
		def, jitter time.Duration
		atLeast     time.Duration
	}{
		{"largest jitter", 0, math.MaxInt64, 0},
		{"largest lag and jitter", math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{"near the largest", math.MaxInt64 - 1, time.Hour, math.MaxInt64 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lagFunc(tc.def, nil, tc.jitter, 1)
			for range 100 {
				if d := f("East US", "West US"); d < tc.atLeast || d < 0 {
					t.Fatalf("lag %v, want at least %v", d, tc.atLeast)
				}
			}
		})
	}
}
