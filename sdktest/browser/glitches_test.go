package browser

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// open opens the explorer at url and waits until it has connected by
// itself, as it does when the key is filled in, and shows the databases.
func (b *browser) open(url string) {
	b.t.Helper()
	b.do("open the explorer", chromedp.Navigate(url+"/_explorer/"), chromedp.WaitVisible(chromedp.CSS("#connected")), chromedp.WaitVisible(chromedp.CSS("#new-db-id")))
}

// rest runs script in the page with r, the page's own client of the REST
// API (cosmos.js) signed with key, as r(method, segs, {body, headers}), and
// waits for it: the test's way to set up databases, containers and items.
func (b *browser) rest(key, script string) {
	b.t.Helper()
	expr := fmt.Sprintf(`import("./cosmos.js").then(async (m) => {
		const c = new m.Client(%q);
		await c.init();
		const r = (method, segs, o) => c.request(method, segs, o);
		%s;
		return true;
	})`, key, script)
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](expr, chromedp.EvalAwaitPromise)); err != nil {
		b.fail("set up through the REST API", err)
	}
}

// forgetProblems drops the page's problems so far: the browser logs a
// request the server refused, as console errors, when a test meant it.
func (b *browser) forgetProblems() {
	b.mu.Lock()
	b.problems = nil
	b.mu.Unlock()
}

// TestExplorerConnectsByItself: with the key filled in, the page connects
// without a click: the emulator's well-known key, which the server gives
// the page, and a key of the server's own once typed (and Enter pressed)
// in this tab, which the tab remembers until Disconnect.
func TestExplorerConnectsByItself(t *testing.T) {
	t.Run("emulator key", func(t *testing.T) {
		url := startLethe(t)
		b := newBrowser(t)
		b.open(url)
		b.do("disconnect", chromedp.Click(chromedp.CSS(`#account button`)), chromedp.WaitVisible(chromedp.CSS("#connect")))
		// Disconnect stays disconnected, with the key still filled in.
		b.waitFor("the hint", `document.querySelector(".connect p.muted").textContent !== ""`, 10*time.Second)
		if k := eval[string](b, `document.querySelector("#key").value`); k != emulatorKey {
			t.Errorf("after Disconnect the key field holds %q, want the emulator's key", k)
		}
		if eval[bool](b, `document.querySelector("#connected") !== null`) {
			t.Error("Disconnect connected again")
		}
		b.do("connect again", chromedp.Click(chromedp.CSS("#connect")), chromedp.WaitVisible(chromedp.CSS("#connected")))
	})

	t.Run("own key", func(t *testing.T) {
		const key = "bGV0aGUtZXhwbG9yZXItdGVzdC1rZXktMDEyMzQ1Njc4OQ=="
		url := startLethe(t, "-http", "-key", key)
		b := newBrowser(t)
		b.do("open the explorer", chromedp.Navigate(url+"/_explorer/"), chromedp.WaitVisible(chromedp.CSS("#connect")))
		b.waitFor("the hint", `document.querySelector(".connect p.muted").textContent.includes("type it")`, 10*time.Second)
		b.do("type the key and Enter", chromedp.SendKeys(chromedp.CSS("#key"), key+kb.Enter), chromedp.WaitVisible(chromedp.CSS("#connected")))
		b.open(url) // a reload: the tab remembers the key
		b.do("disconnect", chromedp.Click(chromedp.CSS(`#account button`)), chromedp.WaitVisible(chromedp.CSS("#connect")))
		b.do("reload", chromedp.Navigate(url+"/_explorer/"), chromedp.WaitVisible(chromedp.CSS("#connect")))
		b.waitFor("the hint", `document.querySelector(".connect p.muted").textContent.includes("type it")`, 10*time.Second)
		if k := eval[string](b, `document.querySelector("#key").value`); k != "" {
			t.Errorf("after Disconnect and a reload the key field holds %q: the tab must forget the key", k)
		}
	})
}

// nullText is the text nodes of the page that read "null", and whether
// the page's text has the word at all.
const nullText = `(() => {
	const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	const out = [];
	for (let n = w.nextNode(); n; n = w.nextNode()) if (n.data.trim() === "null") out.push(n.parentNode.tagName + "#" + n.parentNode.id);
	if (/\bnull\b/.test(document.body.innerText)) out.push("the word in the page's text");
	return out;
})()`

// TestExplorerNoNullText: no "null" on the Databases page, nor on a
// database's page, with and without anything in them (a child left out
// with null was rendered as the text "null").
func TestExplorerNoNullText(t *testing.T) {
	url := startLethe(t)
	b := newBrowser(t)
	b.open(url)
	check := func(page string) {
		t.Helper()
		if n := eval[[]string](b, nullText); len(n) > 0 {
			b.screenshot("null-" + strings.ReplaceAll(page, " ", "-"))
			t.Errorf("%s: text \"null\" in %q", page, n)
		}
	}
	b.waitFor("the empty list", `document.body.textContent.includes("No database yet.")`, 10*time.Second)
	check("Databases, none")
	b.do("create a database",
		chromedp.SetValue(chromedp.CSS("#new-db-id"), "shop"),
		chromedp.Click(chromedp.CSS("#new-db-create")),
		chromedp.WaitVisible(chromedp.CSS("#new-coll-id")))
	check("a database, no container")
	b.do("create a container",
		chromedp.SetValue(chromedp.CSS("#new-coll-id"), "carts"),
		chromedp.Click(chromedp.CSS("#new-coll-create")),
		chromedp.WaitVisible(chromedp.CSS("#items")))
	b.do("open the database", chromedp.Click(chromedp.CSS(`#tree a[data-db="shop"]:not([data-coll])`)), chromedp.WaitVisible(chromedp.CSS("#new-coll-id")))
	b.waitFor("the container in the list", `document.querySelector("#view table.grid") !== null`, 10*time.Second)
	check("a database, a container")
	b.do("open the Databases page", chromedp.Click(chromedp.CSS(`#tree .tree-head a`)), chromedp.WaitVisible(chromedp.CSS("#new-db-id")))
	b.waitFor("the database in the list", `document.querySelector("#view table.grid") !== null`, 10*time.Second)
	check("Databases, one")
}

// TestExplorerFailedQuery: after a query that succeeded, one that fails
// shows its error and nothing else: the results of the one before go.
func TestExplorerFailedQuery(t *testing.T) {
	url := startLethe(t)
	b := newBrowser(t)
	b.open(url)
	b.rest(emulatorKey, `
		await r("POST", ["dbs"], { body: { id: "d" } });
		await r("POST", ["dbs", "d", "colls"], { body: { id: "c", partitionKey: { paths: ["/pk"], kind: "Hash", version: 2 } } });
		await r("POST", ["dbs", "d", "colls", "c", "docs"], { body: { id: "x", pk: "a" }, headers: { "x-ms-documentdb-partitionkey": '["a"]' } })`)
	b.open(url)
	b.do("open the container", chromedp.Click(chromedp.CSS(`#tree a[data-coll="c"]`)), chromedp.WaitVisible(chromedp.CSS("#items")))
	b.do("open the query tab", chromedp.Click(chromedp.CSS(`button[data-tab="query"]`)), chromedp.WaitVisible(chromedp.CSS("#query-text")))
	b.do("run a query", chromedp.SetValue(chromedp.CSS("#query-text"), "SELECT c.id FROM c"), chromedp.Click(chromedp.CSS("#query-run")))
	b.waitFor("the results", `document.querySelectorAll("#query-results tbody tr").length === 1`, 10*time.Second)

	// Not b.do, which fails on an error notice: the error may already
	// show when the click returns, as it is meant to.
	if err := chromedp.Do(b.ctx, chromedp.SetValue(chromedp.CSS("#query-text"), "SELECT c.id FROM c WHERE"), chromedp.Click(chromedp.CSS("#query-run"))); err != nil {
		b.fail("run a bad query", err)
	}
	b.poll("the error", `document.querySelector("#notice").className === "error"`, 10*time.Second)
	b.forgetProblems() // the refused request, logged by the browser
	const want = "error: 400: SC1002: Syntax error, unexpected end-of-file. (1:25: expected an expression, found end of query)"
	if n := b.notice(); n != want {
		t.Errorf("a bad query: the page shows %q, want the service's error, readable: %q", n, want)
	}
	if out := eval[string](b, `document.querySelector("#query-out").innerHTML`); out != "" {
		b.screenshot("failed-query")
		t.Errorf("after the failed query the page still shows %q", out)
	}

	b.do("run a good query again", chromedp.SetValue(chromedp.CSS("#query-text"), "SELECT c.id FROM c"), chromedp.Click(chromedp.CSS("#query-run")))
	b.waitFor("the results", `document.querySelectorAll("#query-results tbody tr").length === 1`, 10*time.Second)
}

// TestExplorerTTLIgnoredHint: an item with a ttl of its own in a container
// whose time to live is off says, in the items table and in the item's
// view, that its ttl is ignored; the same item in a container with time to
// live on, and an item without a ttl, say nothing of it.
func TestExplorerTTLIgnoredHint(t *testing.T) {
	url := startLethe(t)
	b := newBrowser(t)
	b.open(url)
	b.rest(emulatorKey, `
		const pk = { paths: ["/pk"], kind: "Hash", version: 2 };
		const put = (coll, doc) => r("POST", ["dbs", "d", "colls", coll, "docs"], { body: doc, headers: { "x-ms-documentdb-partitionkey": '["a"]' } });
		await r("POST", ["dbs"], { body: { id: "d" } });
		await r("POST", ["dbs", "d", "colls"], { body: { id: "off", partitionKey: pk } });
		await r("POST", ["dbs", "d", "colls"], { body: { id: "on", partitionKey: pk, defaultTtl: -1 } });
		await put("off", { id: "x", pk: "a", ttl: 60 });
		await put("off", { id: "plain", pk: "a" });
		await put("on", { id: "x", pk: "a", ttl: 60 })`)
	b.open(url)

	// open opens container coll, from the tree.
	open := func(coll string) {
		t.Helper()
		b.do("open container "+coll, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#tree a[data-coll=%q]`, coll))))
		b.waitFor("container "+coll, fmt.Sprintf(`document.querySelector("#view h2")?.textContent.includes(%q) && document.querySelector("#items tbody tr") !== null`, "› "+coll), 10*time.Second)
	}
	// hint is the hint of item id's row and its tooltip, and the item
	// view's hint once View is clicked ("" where there is none).
	hint := func(id string) (row, tip, view string) {
		t.Helper()
		tr := fmt.Sprintf(`#items tr[data-id=%q]`, id)
		b.waitFor("item "+id, fmt.Sprintf(`document.querySelector(%q) !== null`, tr), 10*time.Second)
		row = eval[string](b, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ""`, tr+" .ttl-ignored"))
		tip = eval[string](b, fmt.Sprintf(`document.querySelector(%q)?.title ?? ""`, tr+" .ttl-ignored"))
		eval[bool](b, fmt.Sprintf(`[...document.querySelectorAll(%q)].find(e => e.textContent === "View").click() ?? true`, tr+" button"))
		b.waitFor("the view of item "+id, fmt.Sprintf(`document.querySelector("#item-view")?.checkVisibility() && JSON.parse(document.querySelector("#item-view").textContent).id === %q`, id), 10*time.Second)
		view = eval[string](b, `(e => e && e.checkVisibility() ? e.textContent : "")(document.querySelector("#item-view-hint"))`)
		return row, tip, view
	}

	const want = "ttl 60 ignored: the container's TTL is off"
	open("off")
	row, tip, view := hint("x")
	b.screenshot("11-ttl-ignored")
	if row != want || view != want {
		t.Errorf("ttl 60, the container's TTL off: the row says %q and the view %q, want %q", row, view, want)
	}
	if !strings.Contains(tip, "no item expires, whatever its own ttl says") {
		t.Errorf("the hint's tooltip %q does not give the rule", tip)
	}
	if row, _, view := hint("plain"); row != "" || view != "" {
		t.Errorf("no ttl, the container's TTL off: the row says %q and the view %q, want nothing", row, view)
	}
	open("on")
	if row, _, view := hint("x"); row != "" || view != "" {
		t.Errorf("ttl 60, the container's TTL on: the row says %q and the view %q, want nothing", row, view)
	}
}

// TestExplorerUnpartitionedContainer: a container without a partition key,
// which the server now writes without a partitionKey (as the service
// does), shows in the database's list, opens, and shows its items and
// properties, with no exception in the page.
func TestExplorerUnpartitionedContainer(t *testing.T) {
	url := startLethe(t)
	b := newBrowser(t)
	b.open(url)
	b.rest(emulatorKey, `
		await r("POST", ["dbs"], { body: { id: "d" } });
		await r("POST", ["dbs", "d", "colls"], { body: { id: "plain" } });
		await r("POST", ["dbs", "d", "colls", "plain", "docs"], { body: { id: "x" } })`)
	b.open(url)
	b.do("open the database", chromedp.Click(chromedp.CSS(`#tree a[data-db="d"]:not([data-coll])`)), chromedp.WaitVisible(chromedp.CSS("#new-coll-id")))
	b.waitFor("the container in the list", `document.querySelector("#view table.grid")?.textContent.includes("plain")`, 10*time.Second)
	b.do("open the container", chromedp.Click(chromedp.CSS(`#tree a[data-coll="plain"]`)))
	b.waitFor("its item", `document.querySelector('#items tr[data-id="x"]') !== null`, 10*time.Second)
	if p := b.pageProblems(); len(p) > 0 {
		b.screenshot("unpartitioned")
		t.Errorf("the page's problems: %v", p)
	}
}
