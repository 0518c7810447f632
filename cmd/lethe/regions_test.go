package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// regionURLs reads each region's URL from the banner.
func regionURLs(t *testing.T, logs string) map[string]string {
	t.Helper()
	line := regexp.MustCompile(`msg="lethe: regions"(.*)`).FindStringSubmatch(logs)
	if line == nil {
		t.Fatalf("no regions in the banner: %s", logs)
	}
	out := map[string]string{}
	// A name of one word is not quoted.
	for _, m := range regexp.MustCompile(`(?:"([^"]+)"|(\S+))=(http\S+/)`).FindAllStringSubmatch(line[1], -1) {
		out[m[1]+m[2]] = m[3]
	}
	return out
}

// do sends a signed request and returns its status and body.
func do(t *testing.T, method, url, typ, link, body string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := signed(t, method, url, typ, link, rd)
	req.Header.Set("x-ms-version", "2020-11-05")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestRegions: -regions serves each region on its own port, the banner
// lists them, the account resource names them, and a region taken down
// refusing connections closes its port until it comes up.
func TestRegions(t *testing.T) {
	_, logs, done := start(t, "-http", "-regions", "East US, West US", "-lag", "1h", "-consistency", "Eventual", "-metrics-addr", "127.0.0.1:0")
	urls := regionURLs(t, logs.String())
	east, west := urls["East US"], urls["West US"]
	if east == "" || west == "" || east == west {
		t.Fatalf("region URLs %v", urls)
	}
	status, body, _ := do(t, "GET", west, "", "", "")
	if status != 200 || !strings.Contains(body, `"writableLocations":[{"name":"East US","databaseAccountEndpoint":"`+east+`"}]`) ||
		!strings.Contains(body, `{"name":"West US","databaseAccountEndpoint":"`+west+`"}`) || !strings.Contains(body, `"defaultConsistencyLevel":"Eventual"`) {
		t.Fatalf("the account resource in West US: %d %s", status, body)
	}
	if status, body, _ := do(t, "POST", west+"dbs", "dbs", "", `{"id":"db"}`); status != 201 {
		t.Fatalf("creating a database in West US: %d %s", status, body)
	}
	if status, _, _ := do(t, "GET", east+"dbs/db", "dbs", "dbs/db", ""); status != 200 {
		t.Fatalf("the database in East US: %d", status)
	}
	if status, body, _ := do(t, "POST", east+"dbs/db/colls", "colls", "dbs/db", `{"id":"c","partitionKey":{"paths":["/pk"]}}`); status != 201 {
		t.Fatalf("creating a container: %d %s", status, body)
	}
	if status, body, _ := do(t, "POST", east+"dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", `{"id":"x","pk":"x"}`, "x-ms-documentdb-partitionkey", `["x"]`); status != 201 {
		t.Fatalf("a write in East US: %d %s", status, body)
	}
	// /metrics: the change waits for West US, an hour away.
	metrics := regexp.MustCompile(`msg="lethe: serving metrics" url=(http://\S+/metrics)`).FindStringSubmatch(logs.String())
	if metrics == nil {
		t.Fatalf("no metrics URL: %s", logs.String())
	}
	text := scrape(t, metrics[1])
	if value(t, text, `lethe_region_pending_changes{region="West US"}`) != 1 || value(t, text, `lethe_region_write{region="East US"}`) != 1 ||
		value(t, text, `lethe_region_up{region="West US"}`) != 1 || value(t, text, `lethe_region_conflicts_total{region="West US"}`) != 0 {
		t.Errorf("the regions' metrics:\n%s", grepLethe(text))
	}
	if status, body, _ := do(t, "POST", west+"_lethe/regions/West%20US/down", "regions", "West US", `{"mode":"refuse"}`); status != 200 {
		t.Fatalf("taking West US down: %d %s", status, body)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	if resp, err := client.Do(signed(t, "GET", west, "", "", nil)); err == nil {
		resp.Body.Close()
		t.Fatalf("West US down answered %d", resp.StatusCode)
	} else if !strings.Contains(err.Error(), "refused") {
		t.Errorf("West US down: %v, want a refused connection", err)
	}
	if status, body, _ := do(t, "POST", east+"_lethe/regions/West%20US/up", "regions", "West US", ""); status != 200 {
		t.Fatalf("bringing West US up: %d %s", status, body)
	}
	if status, _, _ := do(t, "GET", west+"dbs/db", "dbs", "dbs/db", ""); status != 200 {
		t.Fatalf("West US up again: %d", status)
	}
	stop(t, done)
}

func TestRegionFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-lag", "1s"}, "give -regions"},
		{[]string{"-regions", "A,B", "-write-region", "C"}, "not one of -regions"},
		{[]string{"-regions", "A,B", "-write-region", "A", "-multi-write"}, "every region writes"},
		{[]string{"-multi-write"}, "give -regions"},
		{[]string{"-regions", "A,B", "-multi-write", "-consistency", "Strong"}, "not offered"},
		{[]string{"-regions", "A,B", "-lag", "A>C=1s"}, "does not name two regions"},
		{[]string{"-regions", "A,B", "-lag", "soon"}, "not a duration"},
		{[]string{"-regions", "A,B", "-consistency", "Linear"}, "not a consistency level"},
		{[]string{"-regions", "A,B", "-addr", "localhost:65535"}, "no room"},
	} {
		err := run(append([]string{"-http", "-addr", "127.0.0.1:0", "-compute-addr", ""}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

func TestParseLag(t *testing.T) {
	def, table, err := parseLag("200ms, East US>West US=1s", []string{"East US", "West US"})
	if err != nil || def != 200*time.Millisecond || table[[2]string{"East US", "West US"}] != time.Second || len(table) != 1 {
		t.Fatalf("parseLag: %v %v %v", def, table, err)
	}
	lag := lagFunc(def, table, 0, 1)
	if lag("East US", "West US") != time.Second || lag("West US", "East US") != 200*time.Millisecond {
		t.Error("lagFunc does not follow the table")
	}
	jittered := lagFunc(time.Second, nil, time.Second, 7)
	again := lagFunc(time.Second, nil, time.Second, 7)
	varied := false
	for range 20 {
		a, b := jittered("x", "y"), again("x", "y")
		if a != b || a < time.Second || a > 2*time.Second {
			t.Fatalf("seeded jitter: %v and %v", a, b)
		}
		varied = varied || a != time.Second
	}
	if !varied {
		t.Error("the jitter never drew anything")
	}
}

// TestRegionsMultiWrite: with -multi-write every region accepts writes,
// and the account resource says so.
func TestRegionsMultiWrite(t *testing.T) {
	_, logs, done := start(t, "-http", "-regions", "A,B", "-multi-write", "-lag", "1h")
	urls := regionURLs(t, logs.String())
	status, body, _ := do(t, "GET", urls["B"], "", "", "")
	if status != 200 || !strings.Contains(body, `"enableMultipleWriteLocations":true`) || !strings.Contains(body, `{"name":"B","databaseAccountEndpoint":"`+urls["B"]+`"}],"readableLocations"`) {
		t.Fatalf("the account resource: %d %s", status, body)
	}
	if status, body, _ := do(t, "POST", urls["B"]+"dbs", "dbs", "", `{"id":"db"}`); status != 201 {
		t.Fatalf("creating a database: %d %s", status, body)
	}
	if status, body, _ := do(t, "POST", urls["B"]+"dbs/db/colls", "colls", "dbs/db", `{"id":"c","partitionKey":{"paths":["/pk"]}}`); status != 201 {
		t.Fatalf("creating a container: %d %s", status, body)
	}
	if status, body, _ := do(t, "POST", urls["B"]+"dbs/db/colls/c/docs", "docs", "dbs/db/colls/c", `{"id":"x","pk":"x"}`, "x-ms-documentdb-partitionkey", `["x"]`); status != 201 {
		t.Fatalf("a write in B: %d %s", status, body)
	}
	stop(t, done)
}
