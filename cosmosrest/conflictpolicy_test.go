package cosmosrest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/cosmosrest"
)

// policyOf returns a container's conflictResolutionPolicy as a read
// returns it.
func policyOf(t *testing.T, r response) string {
	t.Helper()
	var m struct {
		P json.RawMessage `json:"conflictResolutionPolicy"`
	}
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatal(err)
	}
	return string(m.P)
}

// TestConflictPolicy: a container's conflictResolutionPolicy is checked as
// the service checks it (with its texts), returned as set (the defaults
// filled in), and cannot change.
func TestConflictPolicy(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	const lwwTS = `{"mode":"LastWriterWins","conflictResolutionPath":"/_ts","conflictResolutionProcedure":""}`
	for i, tc := range []struct {
		policy any
		want   string // the policy read back, or the 400's text
		ok     bool
	}{
		{nil, lwwTS, true},
		{map[string]any{"mode": "LastWriterWins"}, lwwTS, true},
		{map[string]any{"mode": "LastWriterWins", "conflictResolutionPath": ""}, lwwTS, true},
		{map[string]any{"mode": "LastWriterWins", "conflictResolutionPath": "/score"}, `{"mode":"LastWriterWins","conflictResolutionPath":"/score","conflictResolutionProcedure":""}`, true},
		{map[string]any{"mode": "Custom", "conflictResolutionProcedure": "dbs/db/colls/c/sprocs/merge"}, `{"mode":"Custom","conflictResolutionPath":"","conflictResolutionProcedure":"dbs/db/colls/c/sprocs/merge"}`, true},
		{map[string]any{"mode": "Custom"}, `{"mode":"Custom","conflictResolutionPath":"","conflictResolutionProcedure":""}`, true},
		{map[string]any{"mode": "LastWriterWins", "conflictResolutionPath": "/a/b"}, "Invalid path '/a/b' for last writer wins conflict resolution", false},
		{map[string]any{"mode": "LastWriterWins", "conflictResolutionPath": "someText"}, "Invalid path 'someText' for last writer wins conflict resolution", false},
		{map[string]any{"mode": "LastWriterWins", "conflictResolutionPath": "/_etag"}, "Invalid path '/_etag'", false},
		{map[string]any{"mode": "LastWriterWins", "conflictResolutionProcedure": "x"}, "LastWriterWins conflict resolution mode should not have conflict resolution procedure set.", false},
		{map[string]any{"mode": "Custom", "conflictResolutionPath": "/mypath"}, "Custom conflict resolution mode should not have conflict resolution path set.", false},
		{map[string]any{"mode": "Newest"}, "neither LastWriterWins nor Custom", false},
	} {
		body := map[string]any{"id": fmt.Sprint("c", i), "partitionKey": map[string]any{"paths": []string{"/pk"}}}
		if tc.policy != nil {
			body["conflictResolutionPolicy"] = tc.policy
		}
		r := c.do("POST", "/dbs/db/colls", body)
		if !tc.ok {
			if r.status != 400 || !strings.Contains(string(r.body), tc.want) {
				t.Errorf("%v: %d %s, want 400 with %q", tc.policy, r.status, r.body, tc.want)
			}
			if r := c.do("GET", fmt.Sprint("/dbs/db/colls/c", i), nil); r.status != 404 {
				t.Errorf("%v: a container refused exists: %d", tc.policy, r.status)
			}
			continue
		}
		if r.status != 201 || policyOf(t, r) != tc.want {
			t.Errorf("%v: created %d %s, want %s", tc.policy, r.status, policyOf(t, r), tc.want)
			continue
		}
		if got := policyOf(t, must(t, c.do("GET", fmt.Sprint("/dbs/db/colls/c", i), nil), 200)); got != tc.want {
			t.Errorf("%v: read %s, want %s", tc.policy, got, tc.want)
		}
	}

	// A replace keeps the policy: sent back as read, or left out; a
	// replace that changes it is refused, as the service refuses it.
	read := must(t, c.do("GET", "/dbs/db/colls/c3", nil), 200).json(t)
	must(t, c.do("PUT", "/dbs/db/colls/c3", read), 200)
	delete(read, "conflictResolutionPolicy")
	must(t, c.do("PUT", "/dbs/db/colls/c3", read), 200)
	read["conflictResolutionPolicy"] = map[string]any{"mode": "LastWriterWins", "conflictResolutionPath": "/other"}
	if r := c.do("PUT", "/dbs/db/colls/c3", read); r.status != 400 || !strings.Contains(string(r.body), "Updating conflict resolution policy is currently not supported") {
		t.Errorf("a replace changing the policy: %d %s", r.status, r.body)
	}
	read["conflictResolutionPolicy"] = map[string]any{"mode": "LastWriterWins", "conflictResolutionPath": "/a/b"}
	if r := c.do("PUT", "/dbs/db/colls/c3", read); r.status != 400 || !strings.Contains(string(r.body), "Invalid path '/a/b'") {
		t.Errorf("a replace with a bad policy: %d %s", r.status, r.body)
	}
	if got := policyOf(t, must(t, c.do("GET", "/dbs/db/colls/c3", nil), 200)); !strings.Contains(got, `"/score"`) {
		t.Errorf("after the refused replaces: %s", got)
	}
	// A container deleted and made again under its id has the new one's.
	must(t, c.do("DELETE", "/dbs/db/colls/c3", nil), 204)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "c3", "partitionKey": map[string]any{"paths": []string{"/pk"}}}), 201)
	if got := policyOf(t, must(t, c.do("GET", "/dbs/db/colls/c3", nil), 200)); got != lwwTS {
		t.Errorf("made again: %s", got)
	}
}

// TestConflictPolicyDurable: with Dir, a container's policy is kept across
// a restart; a deleted container's is not.
func TestConflictPolicyDurable(t *testing.T) {
	dir := t.TempDir()
	h, err := cosmosrest.New(cosmosrest.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	c := &client{t: t, srv: srv, key: cosmosrest.EmulatorKey}
	createDB(t, c, "db")
	custom := map[string]any{"mode": "Custom", "conflictResolutionProcedure": "dbs/db/colls/a/sprocs/m"}
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "a", "conflictResolutionPolicy": custom}), 201)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "b", "conflictResolutionPolicy": map[string]any{"conflictResolutionPath": "/n"}}), 201)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "gone", "conflictResolutionPolicy": map[string]any{"conflictResolutionPath": "/n"}}), 201)
	must(t, c.do("DELETE", "/dbs/db/colls/gone", nil), 204)
	// Made again before the restart, without a policy.
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "again", "conflictResolutionPolicy": map[string]any{"conflictResolutionPath": "/n"}}), 201)
	must(t, c.do("DELETE", "/dbs/db/colls/again", nil), 204)
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "again"}), 201)
	srv.Close()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h2, err := cosmosrest.New(cosmosrest.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewTLSServer(h2)
	t.Cleanup(func() { srv2.Close(); h2.Close() })
	c2 := &client{t: t, srv: srv2, key: cosmosrest.EmulatorKey}
	for coll, want := range map[string]string{
		"a": `{"mode":"Custom","conflictResolutionPath":"","conflictResolutionProcedure":"dbs/db/colls/a/sprocs/m"}`,
		"b": `{"mode":"LastWriterWins","conflictResolutionPath":"/n","conflictResolutionProcedure":""}`,
	} {
		if got := policyOf(t, must(t, c2.do("GET", "/dbs/db/colls/"+coll, nil), 200)); got != want {
			t.Errorf("%s after a restart: %s, want %s", coll, got, want)
		}
	}
	if got := policyOf(t, must(t, c2.do("GET", "/dbs/db/colls/again", nil), 200)); !strings.Contains(got, `"/_ts"`) {
		t.Errorf("a container made again before a restart has the deleted one's policy after it: %s", got)
	}
	must(t, c2.do("POST", "/dbs/db/colls", map[string]any{"id": "gone"}), 201)
	if got := policyOf(t, must(t, c2.do("GET", "/dbs/db/colls/gone", nil), 200)); !strings.Contains(got, `"/_ts"`) {
		t.Errorf("a container made again after a restart has the deleted one's policy: %s", got)
	}
}

// TestHandlerConflictResolutionPolicy: the policy as a tool reads it and
// sets it on a container made through the store (cmd/lethe's export and
// import).
func TestHandlerConflictResolutionPolicy(t *testing.T) {
	h, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "a", "conflictResolutionPolicy": map[string]any{"conflictResolutionPath": "/n"}}), 201)
	got, ok := h.ConflictResolutionPolicy("db", "a")
	if want := `{"mode":"LastWriterWins","conflictResolutionPath":"/n","conflictResolutionProcedure":""}`; !ok || string(got) != want {
		t.Errorf("ConflictResolutionPolicy: %s %v, want %s", got, ok, want)
	}
	if _, ok := h.ConflictResolutionPolicy("db", "none"); ok {
		t.Error("a policy of no container")
	}
	st, _ := h.Store("db")
	if _, err := st.CreateContainer(context.Background(), lethe.ContainerProperties{ID: "b"}); err != nil {
		t.Fatal(err)
	}
	custom := `{"mode":"Custom","conflictResolutionPath":"","conflictResolutionProcedure":"dbs/db/colls/b/sprocs/m"}`
	if err := h.SetConflictResolutionPolicy("db", "b", json.RawMessage(custom)); err != nil {
		t.Fatal(err)
	}
	if got := policyOf(t, must(t, c.do("GET", "/dbs/db/colls/b", nil), 200)); got != custom {
		t.Errorf("set: %s", got)
	}
	for _, bad := range []struct{ coll, policy string }{{"b", `{"mode":"Custom","conflictResolutionPath":"/x"}`}, {"b", `[]`}, {"none", custom}} {
		if err := h.SetConflictResolutionPolicy("db", bad.coll, json.RawMessage(bad.policy)); err == nil {
			t.Errorf("%s on %s: no error", bad.policy, bad.coll)
		}
	}
	if got := policyOf(t, must(t, c.do("GET", "/dbs/db/colls/b", nil), 200)); got != custom {
		t.Errorf("after the refused sets: %s", got)
	}
}
