package browser

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestExplorerQueryEveryRange: in a container of several partition key
// ranges (40,000 RU/s: 4), the query tab's query without a partition key
// reads every range, one after another, and says so; each row names the
// range it came from. With a partition key it reads that partition.
func TestExplorerQueryEveryRange(t *testing.T) {
	url := startLethe(t)
	b := newBrowser(t)
	b.open(url)
	b.rest(emulatorKey, `
		await r("POST", ["dbs"], { body: { id: "d" } });
		await r("POST", ["dbs", "d", "colls"], { body: { id: "c", partitionKey: { paths: ["/pk"], kind: "Hash", version: 2 } }, headers: { "x-ms-offer-throughput": "40000" } });
		for (let i = 0; i < 24; i++) {
			await r("POST", ["dbs", "d", "colls", "c", "docs"], { body: { id: "x" + i, pk: "p" + i }, headers: { "x-ms-documentdb-partitionkey": JSON.stringify(["p" + i]) } });
		}`)
	b.open(url)
	b.do("open the container", chromedp.Click(chromedp.CSS(`#tree a[data-coll="c"]`)), chromedp.WaitVisible(chromedp.CSS("#items")))
	b.do("open the query tab", chromedp.Click(chromedp.CSS(`button[data-tab="query"]`)), chromedp.WaitVisible(chromedp.CSS("#query-text")))
	b.do("run a query", chromedp.SetValue(chromedp.CSS("#query-text"), "SELECT c.id FROM c"), chromedp.Click(chromedp.CSS("#query-run")))
	b.waitFor("the results", `document.querySelector("#query-results") !== null`, 10*time.Second)
	pages := 1
	for eval[bool](b, `document.querySelector("#query-more") !== null`) {
		n := eval[int](b, `document.querySelectorAll("#query-results tbody tr").length`)
		b.do("read more", chromedp.Click(chromedp.CSS("#query-more")))
		b.waitFor("more results", `document.querySelectorAll("#query-results tbody tr").length > `+strconv.Itoa(n), 10*time.Second)
		pages++
	}
	if pages != 4 {
		t.Errorf("the query read %d pages, want one a range", pages)
	}
	rows := eval[[]string](b, `[...document.querySelectorAll("#query-results tbody tr")].map(tr => tr.textContent)`)
	slices.Sort(rows)
	var want []string
	for i := range 24 {
		want = append(want, "x"+strconv.Itoa(i))
	}
	slices.Sort(want)
	if !slices.Equal(rows, want) {
		t.Errorf("the query over every range shows %q, want %q", rows, want)
	}
	ranges := eval[[]string](b, `[...new Set([...document.querySelectorAll("#query-results tbody tr")].map(tr => tr.dataset.range))].sort()`)
	if !slices.Equal(ranges, []string{"0", "1", "2", "3"}) {
		t.Errorf("the rows came from the ranges %q", ranges)
	}
	if s := eval[string](b, `document.querySelector("#query-ranges")?.textContent ?? ""`); s != "4 partition key ranges, read one after another" {
		t.Errorf("the results say %q of the ranges", s)
	}
	b.screenshot("query-every-range")

	b.do("run a query of one partition", chromedp.SetValue(chromedp.CSS("#query-pk"), `"p7"`), chromedp.Click(chromedp.CSS("#query-run")))
	b.waitFor("the partition's result", `document.querySelectorAll("#query-results tbody tr").length === 1 && document.querySelector("#query-ranges") === null`, 10*time.Second)
	if row := eval[string](b, `document.querySelector("#query-results tbody tr").textContent`); row != "x7" {
		t.Errorf("the query of one partition shows %q", row)
	}
}
