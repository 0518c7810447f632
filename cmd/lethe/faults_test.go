//go:build unix

package main

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
)

// TestFaultEndpoint: a rule set through /_lethe/faults makes the next
// matching request fail, and -faults=false serves no endpoint.
func TestFaultEndpoint(t *testing.T) {
	for _, on := range []bool{true, false} {
		args := []string{"-http", "-compute-addr", ""}
		if !on {
			args = append(args, "-faults=false")
		}
		base, _, done := start(t, args...)
		rule := `{"id":"down","condition":{"operationType":"MetadataDatabaseAccount"},"result":{"statusCode":503},"hitLimit":1}`
		resp, err := http.DefaultClient.Do(signed(t, "POST", base+"_lethe/faults", "faults", "", strings.NewReader(rule)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if (resp.StatusCode == http.StatusCreated) != on {
			t.Errorf("faults %v: POST: %d", on, resp.StatusCode)
		}
		for i, want := range map[bool][]int{true: {503, 200}, false: {200, 200}}[on] {
			resp, err := http.DefaultClient.Do(signed(t, "GET", base, "", "", nil))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("faults %v: account read %d: %d, want %d", on, i, resp.StatusCode, want)
			}
		}
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
