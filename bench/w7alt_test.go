package main

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/tidwall/buntdb"
)

// TestW7Alternating loads lethe and BuntDB with the same 1M items, then
// times W7's equality and range (and lethe's count of the equality), the
// stores' queries alternating in rotated order, 15 rounds, and prints each
// figure's minimum, median and maximum per result: on a shared, noisy
// machine, the two stores then meet the same noise. About 5 minutes; it
// runs only with LETHE_W7ALT=1:
//
//	LETHE_W7ALT=1 go test -v -run TestW7Alternating -timeout 30m .
func TestW7Alternating(t *testing.T) {
	if os.Getenv("LETHE_W7ALT") == "" {
		t.Skip("set LETHE_W7ALT=1 to run (about 5 minutes)")
	}
	d := newDataset(1_000_000, 1)
	age, score, _ := d.w7Want()
	ls := openLethe(storeOpts{}).(*letheStore)
	bs := openBunt(storeOpts{}).(*buntStore)
	for i := range d.docs {
		ls.insert(d.ids[i], d.docs[i], d.ttls[i])
		bs.insert(d.ids[i], d.docs[i], d.ttls[i])
	}
	for _, f := range []string{"age", "score"} {
		if err := bs.db.CreateIndex(f, "*", buntdb.IndexJSON(f)); err != nil {
			t.Fatal(err)
		}
	}
	lq := func(q string) func() int {
		return func() int {
			n := 0
			for _, err := range ls.c.QueryItems(bg, q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 1000}) {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			return n
		}
	}
	eqL := lq(fmt.Sprintf(`SELECT * FROM c WHERE c.age = %d`, w7Age))
	rgL := lq(fmt.Sprintf(`SELECT * FROM c WHERE c.score >= %d AND c.score < %d`, w7ScoreLo, w7Score))
	cntL := lq(fmt.Sprintf(`SELECT VALUE COUNT(1) FROM c WHERE c.age = %d`, w7Age))
	eqB := func() (n int) {
		bs.db.View(func(tx *buntdb.Tx) error {
			return tx.AscendEqual("age", fmt.Sprintf(`{"age":%d}`, w7Age), func(k, v string) bool { n++; return true })
		})
		return n
	}
	rgB := func() (n int) {
		bs.db.View(func(tx *buntdb.Tx) error {
			return tx.AscendRange("score", fmt.Sprintf(`{"score":%d}`, w7ScoreLo), fmt.Sprintf(`{"score":%d}`, w7Score), func(k, v string) bool { n++; return true })
		})
		return n
	}
	for range 2 {
		eqL()
		rgL()
		cntL()
	}
	figs := []struct {
		name string
		fn   func() int
		per  int
	}{{"lethe equality", eqL, age}, {"buntdb equality", eqB, age}, {"lethe range", rgL, score}, {"buntdb range", rgB, score}, {"lethe count", cntL, age}}
	ts := make([][]float64, len(figs))
	for r := range 15 {
		for k := range figs {
			f := figs[(k+r)%len(figs)]
			start := time.Now()
			f.fn()
			ts[(k+r)%len(figs)] = append(ts[(k+r)%len(figs)], float64(time.Since(start).Nanoseconds())/float64(f.per))
		}
	}
	for i, f := range figs {
		slices.Sort(ts[i])
		fmt.Printf("%-16s min %6.0f  median %6.0f  max %6.0f ns/result\n", f.name, ts[i][0], ts[i][len(ts[i])/2], ts[i][len(ts[i])-1])
	}
}
