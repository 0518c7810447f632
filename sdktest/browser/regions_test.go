package browser

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// startAccount starts cmd/lethe serving an account of the regions names
// (-regions), with args, and returns each region's URL by name, read from
// the start banner's regions line.
func startAccount(t *testing.T, names []string, args ...string) map[string]string {
	t.Helper()
	line := startLetheFor(t, regexp.MustCompile(`msg="lethe: regions" (.*)$`), append([]string{"-regions", strings.Join(names, ",")}, args...)...)[1]
	urls := map[string]string{}
	for _, m := range regexp.MustCompile(`"([^"]+)"=(https?://[^ ]+)`).FindAllStringSubmatch(line, -1) {
		urls[m[1]] = strings.TrimSuffix(m[2], "/")
	}
	if len(urls) != len(names) {
		t.Fatalf("the banner names the regions %v: %s", urls, line)
	}
	return urls
}

// regionRow is a row of the explorer's regions table: its data
// attributes, and the text of its cells.
type regionRow struct {
	Name      string   `json:"name"`
	State     string   `json:"state"`
	Down      string   `json:"down"`
	Write     bool     `json:"write"`
	Pending   int      `json:"pending"`
	LagMS     int64    `json:"lagMs"`
	Conflicts int64    `json:"conflicts"`
	Cells     []string `json:"cells"`
}

// regions reads the page's regions table, by region name.
func (b *browser) regions() map[string]regionRow {
	b.t.Helper()
	rows := eval[[]regionRow](b, `[...document.querySelectorAll("#regions-table tbody tr")].map((tr) => ({
		name: tr.dataset.region, state: tr.dataset.state, down: tr.dataset.down, write: tr.dataset.write === "true",
		pending: +tr.dataset.pending, lagMs: +tr.dataset.lagMs, conflicts: +tr.dataset.conflicts,
		cells: [...tr.cells].map((td) => td.textContent),
	}))`)
	out := map[string]regionRow{}
	for _, r := range rows {
		out[r.Name] = r
	}
	return out
}

// regionIs is a JavaScript condition on the row of region name in the
// regions table.
func regionIs(name, cond string) string {
	return fmt.Sprintf(`((tr) => tr !== null && (%s))(document.querySelector('#regions-table tr[data-region=%q]'))`, cond, name)
}

// lagText is how the regions table shows a lag under a minute.
var lagText = regexp.MustCompile(`^[0-9]+\.[0-9] s$`)

// lagSeconds reads a lag as the regions table shows it, in seconds.
func lagSeconds(s string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSuffix(s, " s"), 64)
	return f
}

// TestExplorerRegions: an account of three regions, one write region,
// changes reaching the others after an hour. The Databases page shows the
// regions in their order, each with its endpoint and state, and, without a
// reload, the changes on their way to the read regions and their lag
// growing; then a region taken down (503), shown down with its mode; then a
// failover, the new write region caught up and the one down still behind.
func TestExplorerRegions(t *testing.T) {
	names := []string{"East US", "West US", "North Europe"}
	urls := startAccount(t, names, "-lag", "1h")
	b := newBrowser(t)
	b.open(urls["East US"])
	b.waitFor("the regions", `document.querySelectorAll("#regions-table tbody tr").length === 3`, 10*time.Second)
	if got := eval[[]string](b, `[...document.querySelectorAll("#regions-table tbody tr")].map((tr) => tr.dataset.region)`); strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("the regions table lists %q, want %q", got, names)
	}
	rows := b.regions()
	for _, name := range names {
		r := rows[name]
		if r.Cells[1] != urls[name]+"/" {
			t.Errorf("%s: endpoint %q, want %q", name, r.Cells[1], urls[name]+"/")
		}
		wantState := "up"
		if name == "East US" {
			wantState = "upwrite"
		}
		if r.State != "up" || r.Write != (name == "East US") || r.Cells[2] != wantState || r.Pending != 0 || r.Cells[3] != "0" || r.Cells[4] != "—" {
			t.Errorf("%s at start: %+v", name, r)
		}
	}
	if c := rows["East US"].Cells[0]; c != "East US (this page)" {
		t.Errorf("the page's own region reads %q", c)
	}
	if c := eval[string](b, `document.querySelector("#regions-caption").textContent`); c != "Session consistency; East US is the write region." {
		t.Errorf("regions caption %q", c)
	}
	if c := eval[string](b, `document.querySelector("#connected").textContent`); !strings.HasSuffix(c, "(East US)") {
		t.Errorf("the header reads %q", c)
	}

	// A write in East US: on its way to the two others for an hour.
	b.rest(emulatorKey, `
		await r("POST", ["dbs"], { body: { id: "d" } });
		await r("POST", ["dbs", "d", "colls"], { body: { id: "c", partitionKey: { paths: ["/pk"], kind: "Hash", version: 2 } } });
		await r("POST", ["dbs", "d", "colls", "c", "docs"], { body: { id: "x", pk: "a" }, headers: { "x-ms-documentdb-partitionkey": '["a"]' } });`)
	for _, name := range []string{"West US", "North Europe"} {
		b.waitFor(name+" behind by a second", regionIs(name, `tr.dataset.pending === "1" && +tr.dataset.lagMs >= 1000`), 15*time.Second)
	}
	rows = b.regions()
	for _, name := range []string{"West US", "North Europe"} {
		if r := rows[name]; r.Cells[3] != "1" || !lagText.MatchString(r.Cells[4]) || lagSeconds(r.Cells[4]) < 1 {
			t.Errorf("%s behind: pending %q, lag %q", name, r.Cells[3], r.Cells[4])
		}
	}
	if r := rows["East US"]; r.Pending != 0 || r.Cells[4] != "—" {
		t.Errorf("the write region: %+v", r)
	}
	b.screenshot("regions-lag")

	// West US taken down (503): shown down, with its mode, still behind.
	b.rest(emulatorKey, `await r("POST", ["_lethe", "regions", "West US", "down"], { sign: ["regions", "West US"], body: { mode: "unavailable" } });`)
	b.waitFor("West US down", regionIs("West US", `tr.dataset.state === "down"`), 10*time.Second)
	if r := b.regions()["West US"]; r.Down != "unavailable" || r.Cells[2] != "down: unavailable" || r.Pending != 1 {
		t.Errorf("West US down: %+v", r)
	}

	// A failover to North Europe: the write region moves, North Europe has
	// everything East US wrote; West US, down, is still behind.
	b.rest(emulatorKey, `await r("POST", ["_lethe", "regions", "North Europe", "failover"], { sign: ["regions", "North Europe"] });`)
	b.waitFor("North Europe the write region", regionIs("North Europe", `tr.dataset.write === "true"`), 10*time.Second)
	rows = b.regions()
	if r := rows["North Europe"]; r.Cells[2] != "upwrite" || r.Pending != 0 || r.Cells[4] != "—" {
		t.Errorf("North Europe after the failover: %+v", r)
	}
	if r := rows["East US"]; r.Write || r.Cells[2] != "up" {
		t.Errorf("East US after the failover: %+v", r)
	}
	if r := rows["West US"]; r.State != "down" || r.Write || r.Pending != 1 || !lagText.MatchString(r.Cells[4]) {
		t.Errorf("West US after the failover: %+v", r)
	}
	if c := eval[string](b, `document.querySelector("#regions-caption").textContent`); c != "Session consistency; North Europe is the write region." {
		t.Errorf("regions caption after the failover %q", c)
	}
	b.screenshot("regions-failover")
}

// TestExplorerConflicts: an account of three write regions, changes
// replicated after 3 s, a container whose policy is Custom without a
// procedure. An item created in East US, then in West US within the lag,
// conflicts: West US's, the later, wins everywhere, and East US's conflicts
// feed holds East US's version, which the Conflicts tab lists and shows;
// the regions table counts the conflicts of each region.
func TestExplorerConflicts(t *testing.T) {
	names := []string{"East US", "West US", "North Europe"}
	urls := startAccount(t, names, "-multi-write", "-lag", "3s", "-consistency", "Eventual")
	east := newBrowser(t)
	east.open(urls["East US"])
	west := east.tab()
	west.open(urls["West US"])
	east.rest(emulatorKey, `
		await r("POST", ["dbs"], { body: { id: "app" } });
		await r("POST", ["dbs", "app", "colls"], { body: { id: "carts", partitionKey: { paths: ["/user"], kind: "Hash", version: 2 }, conflictResolutionPolicy: { mode: "Custom" } } });
		await r("POST", ["dbs", "app", "colls", "carts", "docs"], { body: { id: "x", user: "ann", v: "east" }, headers: { "x-ms-documentdb-partitionkey": '["ann"]' } });`)
	west.rest(emulatorKey, `
		await r("POST", ["dbs", "app", "colls", "carts", "docs"], { body: { id: "x", user: "ann", v: "west" }, headers: { "x-ms-documentdb-partitionkey": '["ann"]' } });`)

	east.open(urls["East US"])
	east.waitFor("the regions", `document.querySelectorAll("#regions-table tbody tr").length === 3`, 10*time.Second)
	for _, r := range east.regions() {
		if r.State != "up" || !r.Write || r.Cells[2] != "upwrite" {
			t.Errorf("%s of a multi-write account: %+v", r.Name, r)
		}
	}
	if c := eval[string](east, `document.querySelector("#regions-caption").textContent`); c != "Eventual consistency; every region accepts writes." {
		t.Errorf("regions caption %q", c)
	}
	east.do("open the container", chromedp.Click(chromedp.CSS(`#tree a[data-coll="carts"]`)), chromedp.WaitVisible(chromedp.CSS("#items")))
	east.do("open the conflicts tab", chromedp.Click(chromedp.CSS(`button[data-tab="conflicts"]`)), chromedp.WaitVisible(chromedp.CSS("#conflicts")))
	east.waitFor("the conflict", `document.querySelectorAll("#conflicts tbody tr").length === 1`, 20*time.Second)
	row := eval[[]string](east, `[...document.querySelector("#conflicts tbody tr").cells].map((td) => td.textContent)`)
	if row[1] != "create" || row[2] != "document" || row[3] != "x" || row[4] != `["ann"]` || row[6] == "" {
		t.Errorf("the conflict's row: %q", row)
	}
	if c := eval[string](east, `document.querySelector("#conflict-count").textContent`); c != "1 conflict" {
		t.Errorf("conflict count %q", c)
	}
	if p := eval[string](east, `document.querySelector("#conflict-policy").textContent`); !strings.HasPrefix(p, "Custom without a procedure") {
		t.Errorf("the policy reads %q", p)
	}
	east.do("view the conflict", chromedp.Click(chromedp.CSS(`#conflicts tbody tr button`)), chromedp.WaitVisible(chromedp.CSS("#conflict-view")))
	view := eval[string](east, `document.querySelector("#conflict-view").textContent`)
	if !strings.Contains(view, `"v": "east"`) || !strings.Contains(view, `"id": "x"`) || !strings.Contains(view, `"_etag"`) {
		t.Errorf("the conflict's content:\n%s", view)
	}
	east.screenshot("conflicts")

	// The regions count the conflicts each met: East US and West US each
	// met the other's create.
	east.do("open the Databases page", chromedp.Click(chromedp.CSS(`.tree-head a`)), chromedp.WaitVisible(chromedp.CSS("#regions-table")))
	for _, name := range []string{"East US", "West US"} {
		east.waitFor(name+"'s conflict counted", regionIs(name, `tr.dataset.conflicts === "1" && tr.cells[5].textContent === "1"`), 10*time.Second)
	}
	east.screenshot("regions-conflicts")
}

// TestExplorerOneRegion: an account of one region shows no regions and no
// Conflicts tab, and asks for no regions: the page is as it always was.
func TestExplorerOneRegion(t *testing.T) {
	url := startLethe(t)
	b := newBrowser(t)
	b.open(url)
	b.rest(emulatorKey, `
		await r("POST", ["dbs"], { body: { id: "d" } });
		await r("POST", ["dbs", "d", "colls"], { body: { id: "c", partitionKey: { paths: ["/pk"], kind: "Hash", version: 2 } } });`)
	b.open(url)
	b.waitFor("the database", `document.querySelector('#view a') !== null`, 10*time.Second)
	if eval[bool](b, `document.querySelector("#regions") !== null`) {
		t.Error("an account of one region shows regions")
	}
	if c := eval[string](b, `document.querySelector("#connected").textContent`); c != "connected to "+strings.TrimPrefix(url, "https://") {
		t.Errorf("the header reads %q", c)
	}
	b.do("open the container", chromedp.Click(chromedp.CSS(`#tree a[data-coll="c"]`)), chromedp.WaitVisible(chromedp.CSS("#items")))
	tabs := eval[[]string](b, `[...document.querySelectorAll(".tabs button")].map((b) => b.dataset.tab)`)
	if strings.Join(tabs, ",") != "items,query,expiries,reaper,feed,settings" {
		t.Errorf("the container's tabs: %q", tabs)
	}
	if n := eval[int](b, `performance.getEntriesByType("resource").filter((e) => e.name.includes("/_lethe/")).length`); n != 0 {
		t.Errorf("the page made %d requests to /_lethe/", n)
	}
}
