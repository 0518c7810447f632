package fulltext

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIndexModel: random additions and removals, checked after each
// against a model that keeps the texts and computes everything by brute
// force: the counts, each term's postings, Containing and TopK (scores,
// the k best, ties included, and whether they are all).
func TestIndexModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	words := strings.Fields("search searching searched index indexes the a cosmos data lethe expire expiring go")
	text := func() string {
		n := rng.IntN(8)
		if rng.IntN(20) == 0 {
			n = 70 + rng.IntN(30) // a long text, counted by a map
		}
		var b strings.Builder
		for range n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteString(" ")
		}
		return b.String()
	}
	x := NewIndex("en-US")
	model := map[int32][]string{} // each document's terms
	for step := range 3000 {
		if len(model) > 0 && rng.IntN(3) == 0 {
			var ds []int32
			for d := range model {
				ds = append(ds, d)
			}
			slices.Sort(ds)
			d := ds[rng.IntN(len(ds))]
			x.Remove(d)
			delete(model, d)
		} else {
			s := text()
			d := x.Add(s)
			_, dup := model[d]
			require.False(t, dup, "step %d: number %d given twice", step, d)
			model[d] = Terms(s, "en-US")
		}
		if step%10 != 0 {
			continue
		}
		total := 0
		for _, ts := range model {
			total += len(ts)
		}
		require.Equal(t, len(model), x.Docs(), "step %d", step)
		require.EqualValues(t, total, x.TotalTerms(), "step %d", step)
		q := Terms(words[rng.IntN(len(words))]+" "+words[rng.IntN(len(words))], "en-US")
		q = slices.Compact(q)
		for _, term := range q {
			want := map[int32]int{}
			for d, ts := range model {
				if n := count(ts, term); n > 0 {
					want[d] = n
				}
			}
			got := map[int32]int{}
			for _, p := range x.Postings(term) {
				got[p.Doc] = int(p.TF)
				require.Equal(t, int(p.TF), x.TF(p.Doc, term))
			}
			require.Equal(t, want, got, "step %d: postings of %q", step, term)
		}
		var want, got []int32
		for d, ts := range model {
			if len(q) > 0 && !slices.ContainsFunc(q, func(t string) bool { return count(ts, t) == 0 }) {
				want = append(want, d)
			}
		}
		x.Containing(q, func(d int32) { got = append(got, d) })
		slices.Sort(want)
		slices.Sort(got)
		require.Equal(t, want, got, "step %d: containing %q", step, q)

		// TopK against BM25 by brute force, over the documents keep
		// accepts (all, the even ones, or one in five).
		avg := 0.0
		if len(model) > 0 {
			avg = float64(total) / float64(len(model))
		}
		idf := make([]float64, len(q))
		for i, term := range q {
			df := 0
			for _, ts := range model {
				if count(ts, term) > 0 {
					df++
				}
			}
			idf[i] = math.Log(1 + (float64(len(model))-float64(df)+0.5)/(float64(df)+0.5))
		}
		mod := []int32{1, 2, 5}[rng.IntN(3)]
		var scored []Scored
		for d, ts := range model {
			s := 0.0
			for i, term := range q {
				if tf := float64(count(ts, term)); tf > 0 {
					s += idf[i] * tf * 2.2 / (tf + 1.2*(0.25+0.75*float64(len(ts))/avg))
				}
			}
			if s > 0 && d%mod == 0 {
				scored = append(scored, Scored{d, s})
			}
		}
		slices.SortFunc(scored, func(a, b Scored) int {
			if a.Score != b.Score {
				return -cmp.Compare(a.Score, b.Score)
			}
			return int(a.Doc - b.Doc)
		})
		k := 1 + rng.IntN(12)
		best, all := x.TopK(q, idf, avg, k, func(d int32) bool { return d%mod == 0 })
		slices.SortFunc(best, func(a, b Scored) int {
			if a.Score != b.Score {
				return -cmp.Compare(a.Score, b.Score)
			}
			return int(a.Doc - b.Doc)
		})
		wantBest := scored
		if len(scored) > k {
			last := scored[k-1].Score
			n := k
			for n < len(scored) && math.Abs(scored[n].Score-last) < 1e-12 {
				n++
			}
			wantBest = scored[:n]
		}
		require.Equal(t, len(wantBest), len(best), "step %d: top %d of %q", step, k, q)
		for i := range best {
			require.InDelta(t, wantBest[i].Score, best[i].Score, 1e-9, "step %d", step)
		}
		if all {
			require.Len(t, best, len(scored), "step %d: all, yet some are left out", step)
		}
	}
}

func count(ts []string, t string) int {
	n := 0
	for _, w := range ts {
		if w == t {
			n++
		}
	}
	return n
}
