// Package browser tests the data explorer that cmd/lethe serves at
// /_explorer/ in a real browser: headless Chromium from the system's
// packages (/usr/bin/chromium, or $LETHE_CHROMIUM), driven with chromedp,
// against the command built from this tree and started as a user starts it.
// It is a module of its own so that the root module keeps its
// requirements. Screenshots of every page the test visits go to
// $LETHE_SCREENSHOTS, or to screenshots/ beside this file.
package browser

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// emulatorKey is the Cosmos DB emulator's well-known key, lethe's default:
// the page must come with it filled in, and connect with it by itself.
const emulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// chromium finds the system's Chromium. In CI (CI set), a missing browser
// fails the test; elsewhere it skips it.
func chromium(t *testing.T) string {
	for _, p := range []string{os.Getenv("LETHE_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium: apt-get install -y chromium")
	}
	t.Skip("no Chromium (apt-get install -y chromium, or set LETHE_CHROMIUM)")
	return ""
}

// startLethe builds cmd/lethe and starts it over HTTPS on a free port of
// 127.0.0.1, without the compute gateway, and returns its address, taken
// from its start line. It is stopped with SIGTERM when the test ends.
func startLethe(t *testing.T, args ...string) string {
	t.Helper()
	return startLetheFor(t, regexp.MustCompile(`https?://127\.0\.0\.1:[0-9]+`), args...)[0]
}

// startLetheFor starts cmd/lethe as startLethe does and returns the
// submatches of the first line of its log that matches re.
func startLetheFor(t *testing.T, re *regexp.Regexp, args ...string) []string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lethe")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..", "cmd", "lethe") // a module of its own
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/lethe: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-compute-addr", ""}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	found := make(chan []string, 1)
	var log strings.Builder
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m:
				default:
				}
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("lethe printed no line matching %s in 30 s:\n%s", re, log.String())
		return nil
	}
}

// browser is one tab of a headless Chromium, with the test's helpers.
type browser struct {
	t        *testing.T
	ctx      context.Context
	shots    string
	mu       sync.Mutex
	problems []string // exceptions and console errors of the page
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.IgnoreCertErrors, // lethe's self-signed certificate
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting Chromium: %v", err)
	}
	b := &browser{t: t, ctx: ctx, shots: os.Getenv("LETHE_SCREENSHOTS")}
	if b.shots == "" {
		b.shots = "screenshots"
	}
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	b.listen()
	return b
}

// tab opens another tab of b's browser, with the same helpers.
func (b *browser) tab() *browser {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // opens the tab
		b.t.Fatalf("opening a tab: %v", err)
	}
	tab := &browser{t: b.t, ctx: ctx, shots: b.shots}
	tab.listen()
	return tab
}

// listen collects the page's exceptions and console errors in b.problems.
func (b *browser) listen() {
	err := chromedp.Listen(b.ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = "exception: " + ev.ExceptionDetails.Text
			if ex := ev.ExceptionDetails.Exception; ex != nil {
				msg += " " + ex.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				msg = "console.error"
				for _, a := range ev.Args {
					msg += " " + string(a.Value) + a.Description
				}
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.problems = append(b.problems, msg)
			b.mu.Unlock()
		}
	})
	if err != nil {
		b.t.Fatal(err)
	}
}

// do runs actions with a bound, and fails the test, with what the page
// shows as its error, if one fails.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(what, err)
	}
	b.checkPage(what)
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	b.screenshot("failed")
	b.t.Fatalf("%s: %v (page notice: %q; page problems: %v)", what, err, b.notice(), b.pageProblems())
}

// checkPage fails the test if the page has thrown or logged an error, or
// shows one.
func (b *browser) checkPage(what string) {
	b.t.Helper()
	if p := b.pageProblems(); len(p) > 0 {
		b.screenshot("failed")
		b.t.Fatalf("%s: the page had errors: %v", what, p)
	}
	if n := b.notice(); strings.HasPrefix(n, "error:") {
		b.screenshot("failed")
		b.t.Fatalf("%s: the page shows an error: %s", what, n)
	}
}

func (b *browser) pageProblems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.problems)
}

// notice is the page's notice, "error: …" for an error.
func (b *browser) notice() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](
		`(n => n ? (n.className === "error" ? "error: " : "") + n.textContent : "")(document.querySelector("#notice"))`))
	return s
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail("evaluate "+expr, err)
	}
	return v
}

// waitFor waits until a JavaScript expression is truthy, and checks that
// the page shows no error.
func (b *browser) waitFor(what, expr string, limit time.Duration) {
	b.t.Helper()
	b.poll(what, expr, limit)
	b.checkPage(what)
}

// poll waits until a JavaScript expression is truthy.
func (b *browser) poll(what, expr string, limit time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, limit+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(limit), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		b.fail("waiting for "+what, err)
	}
}

// screenshot saves the whole page as name.png in the screenshots folder.
func (b *browser) screenshot(name string) {
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	abs, _ := filepath.Abs(p)
	b.t.Logf("screenshot: %s", abs)
}

// TestExplorer drives the data explorer as a person would: open it, which
// connects with the emulator key the server gives it, create a database, a container and items with
// short times to live, watch an item count down and vanish, run a query,
// look at the expiry chart, the reaper and the change feed, and change the
// container's time to live and throughput. Expiry runs on real time here,
// with generous bounds.
func TestExplorer(t *testing.T) {
	url := startLethe(t)
	b := newBrowser(t)

	// The page connects by itself, with the key the server gives it: the
	// emulator's (TestExplorerConnectsByItself checks the key).
	b.do("open the explorer", chromedp.Navigate(url+"/_explorer/"), chromedp.WaitVisible(chromedp.CSS("#connected")), chromedp.WaitVisible(chromedp.CSS("#new-db-id")))
	b.screenshot("01-connect")
	b.do("create a database",
		chromedp.SetValue(chromedp.CSS("#new-db-id"), "shop"),
		chromedp.Click(chromedp.CSS("#new-db-create")),
		chromedp.WaitVisible(chromedp.CSS("#new-coll-id")))
	b.waitFor("the database in the tree", `document.querySelector('#tree a[data-db="shop"]') !== null`, 10*time.Second)

	// A container: partition key /pk, items live an hour by default, 400 RU/s.
	b.do("fill the new container",
		chromedp.SetValue(chromedp.CSS("#new-coll-id"), "carts"),
		chromedp.SetValue(chromedp.CSS("#new-coll-pk"), "/pk"),
		chromedp.SetValue(chromedp.CSS("#new-coll-ttl-mode"), "seconds"),
		chromedp.SetValue(chromedp.CSS("#new-coll-ttl"), "3600"),
		chromedp.SetValue(chromedp.CSS("#new-coll-throughput"), "400"))
	b.screenshot("02-database")
	b.do("create the container", chromedp.Click(chromedp.CSS("#new-coll-create")), chromedp.WaitVisible(chromedp.CSS("#items")))
	b.waitFor("the container in the tree", `document.querySelector('#tree a[data-coll="carts"]') !== null`, 10*time.Second)

	// Items through the page's editor: one that lives a few seconds
	// (created last, so its countdown is watched from its start), one 90 s,
	// one 30 min, one forever, one on the container's default.
	b.do("open the item editor", chromedp.Click(chromedp.CSS("#new-item")), chromedp.WaitVisible(chromedp.CSS("#item-json")))
	for _, doc := range []string{
		`{"id":"soon","pk":"a","ttl":90}`,
		`{"id":"later","pk":"b","ttl":1800}`,
		`{"id":"forever","pk":"a","ttl":-1}`,
		`{"id":"default","pk":"c"}`,
		`{"id":"short","pk":"a","ttl":6}`,
	} {
		id := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(doc)[1]
		b.do("create item "+id, chromedp.SetValue(chromedp.CSS("#item-json"), doc), chromedp.Click(chromedp.CSS("#item-create")))
		b.waitFor("item "+id+" in the table", fmt.Sprintf(`document.querySelector('#items tr[data-id=%q]') !== null`, id), 10*time.Second)
	}

	// The short item counts down, live.
	left := func(id string) int {
		s := eval[string](b, fmt.Sprintf(`document.querySelector('#items tr[data-id=%q] td.left').dataset.seconds`, id))
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("time left of %s: %q", id, s)
		}
		return n
	}
	first := left("short")
	if first < 1 || first > 6 {
		t.Fatalf("the item with ttl 6 has %d s left just after its creation", first)
	}
	if f := eval[string](b, `document.querySelector('#items tr[data-id="forever"] td.left').textContent`); f != "never" {
		t.Errorf("the item with ttl -1 shows %q left, want never", f)
	}
	if d := left("default"); d < 3500 || d > 3600 {
		t.Errorf("the item on the container's default (3600 s) has %d s left", d)
	}
	b.screenshot("03-items")
	b.waitFor("the countdown to go down", fmt.Sprintf(`+document.querySelector('#items tr[data-id="short"] td.left').dataset.seconds < %d`, first), 5*time.Second)
	if second := left("short"); second >= first {
		t.Fatalf("the countdown went from %d to %d", first, second)
	}
	// It vanishes when it expires (6 s after its write, within a second
	// for _ts's rounding, checked by the page with the server).
	b.waitFor("the short item to vanish", `document.querySelector('#items tr[data-id="short"]') === null`, 20*time.Second)
	if n := eval[int](b, `document.querySelectorAll('#items tbody tr').length`); n != 4 {
		t.Errorf("%d rows after the expiry, want 4", n)
	}
	b.screenshot("04-items-after-expiry")

	// A query: results, request charge, query metrics.
	b.do("open the query tab", chromedp.Click(chromedp.CSS(`button[data-tab="query"]`)), chromedp.WaitVisible(chromedp.CSS("#query-text")))
	b.do("run a query",
		chromedp.SetValue(chromedp.CSS("#query-text"), "SELECT c.id, c.ttl FROM c WHERE c.ttl > 0 ORDER BY c.id"),
		chromedp.Click(chromedp.CSS("#query-run")))
	b.waitFor("the results", `document.querySelector("#query-results") !== null`, 10*time.Second)
	rows := eval[[]string](b, `[...document.querySelectorAll("#query-results tbody tr")].map(tr => [...tr.cells].map(td => td.textContent).join(","))`)
	if want := []string{"later,1800", "soon,90"}; !slices.Equal(rows, want) {
		t.Errorf("query results %q, want %q", rows, want)
	}
	if h := eval[[]string](b, `[...document.querySelectorAll("#query-results thead th")].map(th => th.textContent)`); !slices.Equal(h, []string{"id", "ttl"}) {
		t.Errorf("result columns %q", h)
	}
	charge := eval[string](b, `document.querySelector("#query-charge").textContent`)
	if ru, err := strconv.ParseFloat(strings.TrimSuffix(charge, " RU"), 64); err != nil || ru <= 0 {
		t.Errorf("request charge %q", charge)
	}
	metrics := eval[string](b, `document.querySelector("#query-metrics") ? document.querySelector("#query-metrics").textContent : ""`)
	if !strings.Contains(metrics, "retrievedDocumentCount") || !strings.Contains(metrics, "totalExecutionTimeInMs") {
		t.Errorf("query metrics %q", metrics)
	}
	b.screenshot("05-query")

	// The expiry chart: "soon" in the next 5 minutes, "later" and "default"
	// beyond, "forever" never.
	b.do("open the expiries tab", chromedp.Click(chromedp.CSS(`button[data-tab="expiries"]`)))
	b.waitFor("the chart's bars", `document.querySelectorAll("#expiry-chart rect.bar").length > 0`, 10*time.Second)
	bars := eval[int](b, `[...document.querySelectorAll("#expiry-chart rect.bar")].filter(r => r.getBBox().height > 0).length`)
	if bars != 1 {
		t.Errorf("%d bars drawn over the next 5 minutes, want 1 (the item with 90 s)", bars)
	}
	if c := eval[string](b, `document.querySelector("#chart-caption").textContent`); !strings.Contains(c, "4 items: 1 expire within 5 min, 2 later, 1 never") {
		t.Errorf("chart caption %q", c)
	}
	b.screenshot("06-expiries")
	b.do("show the next hour", chromedp.Click(chromedp.CSS(`button[data-range="1 hour"]`)))
	b.waitFor("three bars over the next hour", `document.querySelectorAll("#expiry-chart rect.bar").length === 3`, 5*time.Second)
	b.screenshot("06b-expiries-1h")

	// The reaper purged the short item, on spare throughput, and says so.
	b.do("open the reaper tab", chromedp.Click(chromedp.CSS(`button[data-tab="reaper"]`)))
	// The tab first shows the reaper's figures the page already has, with
	// the item count unknown ("?") until its own first load answers: wait
	// for that load too.
	b.waitFor("the purge", `document.querySelector("#reaper-purged")?.textContent === "1" && document.querySelector("#reaper-items")?.textContent !== "?"`, 20*time.Second)
	if s := eval[string](b, `document.querySelector("#reaper-backlog").textContent + "|" + document.querySelector("#reaper-items").textContent`); s != "0|4" {
		t.Errorf("backlog|items %q, want 0|4", s)
	}
	if s := eval[string](b, `document.querySelector("#reaper-charge").textContent`); s == "0 RU" || !strings.HasSuffix(s, " RU") {
		t.Errorf("RU spent purging %q", s)
	}
	b.screenshot("07-reaper")

	// The change feed: five creates and the expiry, marked.
	b.do("open the change feed tab", chromedp.Click(chromedp.CSS(`button[data-tab="feed"]`)))
	b.waitFor("the expiry in the feed", `document.querySelector("#feed tr.expired") !== null`, 10*time.Second)
	feed := eval[[]string](b, `[...document.querySelectorAll("#feed tbody tr")].map(tr => tr.cells[2].textContent.split(" ")[0] + " " + tr.cells[3].textContent)`)
	if want := []string{"expired short", "create short", "create default", "create forever", "create later", "create soon"}; !slices.Equal(feed, want) {
		t.Errorf("change feed, newest first: %q, want %q", feed, want)
	}
	b.screenshot("08-change-feed")

	// Settings: the default time to live and the throughput, changed and
	// read back from the server.
	b.do("open the settings tab", chromedp.Click(chromedp.CSS(`button[data-tab="settings"]`)), chromedp.WaitVisible(chromedp.CSS("#ttl-save")))
	b.do("set the default TTL",
		chromedp.SetValue(chromedp.CSS("#ttl-mode"), "seconds"),
		chromedp.SetValue(chromedp.CSS("#ttl"), "7200"),
		chromedp.Click(chromedp.CSS("#ttl-save")))
	b.waitFor("the new default TTL", `document.querySelector("#coll-ttl")?.textContent === "default TTL: 7200 s"`, 10*time.Second)
	b.waitFor("the throughput field", `document.querySelector("#throughput") !== null && document.querySelector("#throughput").value === "400"`, 10*time.Second)
	b.do("set the throughput", chromedp.SetValue(chromedp.CSS("#throughput"), "500"), chromedp.Click(chromedp.CSS("#throughput-save")))
	b.waitFor("the new throughput", `document.querySelector("#throughput") !== null && document.querySelector("#throughput").value === "500" && document.body.textContent.includes("Manual: 500 RU/s.")`, 10*time.Second)
	b.screenshot("09-settings")

	// Back to the items: the default item's countdown follows the new default.
	b.do("open the items tab", chromedp.Click(chromedp.CSS(`button[data-tab="items"]`)), chromedp.WaitVisible(chromedp.CSS("#items")))
	b.waitFor("the default item", `document.querySelector('#items tr[data-id="default"]') !== null`, 10*time.Second)
	if d := left("default"); d < 7100 || d > 7200 {
		t.Errorf("after the change of default, the item on it has %d s left, want about 7200", d)
	}
	b.checkPage("the end")
}

// TestExplorerOwnKey: with a key of its own (and plain HTTP on a loopback
// address, where the page can still sign), the server does not give the
// key to the page; a wrong key is refused by the REST API with 401, the
// right one connects.
func TestExplorerOwnKey(t *testing.T) {
	const key = "bGV0aGUtZXhwbG9yZXItdGVzdC1rZXktMDEyMzQ1Njc4OQ=="
	url := startLethe(t, "-http", "-key", key)
	if !strings.HasPrefix(url, "http://") {
		t.Fatalf("lethe -http serves %s", url)
	}
	b := newBrowser(t)
	b.do("open the explorer", chromedp.Navigate(url+"/_explorer/"), chromedp.WaitVisible(chromedp.CSS("#connect")))
	b.waitFor("the hint", `document.querySelector(".connect p.muted").textContent !== ""`, 10*time.Second)
	if v := eval[string](b, `document.querySelector("#key").value`); v != "" {
		t.Fatalf("the key field holds %q: the server's own key must not be given to the page", v)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#key"), emulatorKey), chromedp.Click(chromedp.CSS("#connect"))); err != nil {
		b.fail("connect with a wrong key", err)
	}
	b.poll("the refusal", `document.querySelector("#notice").className === "error"`, 10*time.Second)
	if n := b.notice(); !strings.HasPrefix(n, "error: 401") {
		t.Errorf("a wrong key: the page shows %q, want the REST API's 401", n)
	}
	b.screenshot("10-wrong-key")
	b.mu.Lock()
	b.problems = nil // the browser logs the refused request; that was the point
	b.mu.Unlock()
	b.do("connect with the right key",
		chromedp.SetValue(chromedp.CSS("#key"), key),
		chromedp.Click(chromedp.CSS("#connect")),
		chromedp.WaitVisible(chromedp.CSS("#connected")))
}
