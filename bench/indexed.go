package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/lethedb/lethe"
	"github.com/tidwall/buntdb"
	"github.com/tidwall/gjson"
)

// W7: queries an index can answer, on the W1 store, against BuntDB with
// JSON indexes and against lethe's own scan (the same queries once the
// paths are excluded from its indexing policy). Equality and range: time
// per returned item; TOP 10 ORDER BY and GROUP BY: time per query.

const (
	w7Age              = 40         // age = 40: about 1.4% of the items
	w7ScoreLo, w7Score = 5000, 5100 // 5000 <= score < 5100: about 1%
)

// w7Want counts the W7 answers in the dataset itself.
func (d *dataset) w7Want() (age, score, cities int) {
	seen := map[string]bool{}
	for _, doc := range d.docs {
		if gjson.GetBytes(doc, "age").Int() == w7Age {
			age++
		}
		if s := gjson.GetBytes(doc, "score").Float(); s >= w7ScoreLo && s < w7Score {
			score++
		}
		seen[gjson.GetBytes(doc, "city").Str] = true
	}
	return age, score, len(seen)
}

// timeIt runs fn up to reps times, for at most about a second, after
// warm runs that are not timed (lethe's first filter on a path scans, its
// second makes the index), and returns the time of those first runs and the
// mean of the others.
func timeIt(warm, reps int, fn func() int, want int, what string) (first, mean time.Duration) {
	runtime.GC()
	start := time.Now()
	for range warm {
		if got := fn(); got != want {
			panic(fmt.Sprintf("%s: %d results, want %d", what, got, want))
		}
	}
	first = time.Since(start)
	start = time.Now()
	n := 0
	for n < reps && (n == 0 || time.Since(start) < time.Second) {
		fn()
		n++
	}
	return first, time.Since(start) / time.Duration(n)
}

// phaseW7 runs W7 on a loaded store: lethe's (indexed, then scanning) or
// BuntDB's (with its JSON indexes).
func phaseW7(k storeKind, s store, d *dataset, rec *recorder) {
	age, score, cities := d.w7Want()
	record := func(name string, r [4]time.Duration, build time.Duration) {
		rec.add("W7 equality ns/result", name, float64(r[0].Nanoseconds())/float64(age))
		rec.add("W7 range ns/result", name, float64(r[1].Nanoseconds())/float64(score))
		rec.add("W7 top10 µs", name, float64(r[2].Nanoseconds())/1e3)
		rec.add("W7 group by ms", name, float64(r[3].Nanoseconds())/1e6)
		if build > 0 {
			rec.add("W7 first queries ms", name, float64(build.Nanoseconds())/1e6)
		}
		logf("%-20s W7 equality %.0f ns/result, range %.0f ns/result, top10 %.1f µs, group by %.1f ms, first %v",
			name, float64(r[0].Nanoseconds())/float64(age), float64(r[1].Nanoseconds())/float64(score), float64(r[2].Nanoseconds())/1e3, float64(r[3].Nanoseconds())/1e6, build)
	}
	switch st := s.(type) {
	case *letheStore:
		if k.name != "lethe" {
			return
		}
		count := func(q string) func() int {
			return func() int {
				n := 0
				for _, err := range st.c.QueryItems(bg, q, lethe.NewPartitionKey(), &lethe.QueryOptions{PageSizeHint: 1000}) {
					if err != nil {
						panic(err)
					}
					n++
				}
				return n
			}
		}
		run := func() (r [4]time.Duration, build time.Duration) {
			var f time.Duration
			f, r[0] = timeIt(2, 20, count(fmt.Sprintf(`SELECT * FROM c WHERE c.age = %d`, w7Age)), age, "lethe W7 equality")
			build += f
			f, r[1] = timeIt(2, 20, count(fmt.Sprintf(`SELECT * FROM c WHERE c.score >= %d AND c.score < %d`, w7ScoreLo, w7Score)), score, "lethe W7 range")
			build += f
			_, r[2] = timeIt(1, 200, count(`SELECT TOP 10 * FROM c ORDER BY c.score DESC`), 10, "lethe W7 top10")
			_, r[3] = timeIt(1, 3, count(`SELECT c.city, COUNT(1) AS n FROM c GROUP BY c.city`), cities, "lethe W7 group by")
			return r, build
		}
		r, build := run()
		record("lethe (index)", r, build)
		p, err := st.c.Read(bg)
		if err != nil {
			panic(err)
		}
		p.IndexingPolicy = &lethe.IndexingPolicy{ExcludedPaths: []lethe.IndexPath{{Path: "/age/?"}, {Path: "/score/?"}}}
		if err := st.c.Replace(bg, p); err != nil {
			panic(err)
		}
		r, _ = run()
		record("lethe (scan)", r, 0)
	case *buntStore:
		start := time.Now()
		for _, f := range []string{"age", "score"} {
			if err := st.db.CreateIndex(f, "*", buntdb.IndexJSON(f)); err != nil {
				panic(err)
			}
		}
		build := time.Since(start)
		view := func(fn func(tx *buntdb.Tx) int) func() int {
			return func() (n int) {
				st.db.View(func(tx *buntdb.Tx) error { n = fn(tx); return nil })
				return n
			}
		}
		var r [4]time.Duration
		_, r[0] = timeIt(1, 20, view(func(tx *buntdb.Tx) (n int) {
			tx.AscendEqual("age", fmt.Sprintf(`{"age":%d}`, w7Age), func(k, v string) bool { n++; return true })
			return n
		}), age, "buntdb W7 equality")
		_, r[1] = timeIt(1, 20, view(func(tx *buntdb.Tx) (n int) {
			tx.AscendRange("score", fmt.Sprintf(`{"score":%d}`, w7ScoreLo), fmt.Sprintf(`{"score":%d}`, w7Score), func(k, v string) bool { n++; return true })
			return n
		}), score, "buntdb W7 range")
		_, r[2] = timeIt(1, 200, view(func(tx *buntdb.Tx) (n int) {
			tx.Descend("score", func(k, v string) bool { n++; return n < 10 })
			return n
		}), 10, "buntdb W7 top10")
		_, r[3] = timeIt(1, 3, view(func(tx *buntdb.Tx) int {
			counts := map[string]int{}
			tx.Ascend("", func(k, v string) bool { counts[gjson.Get(v, "city").Str]++; return true })
			return len(counts)
		}), cities, "buntdb W7 group by")
		record("buntdb (json index)", r, build)
	}
}
