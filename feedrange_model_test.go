package lethe_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/epk"
	"github.com/stretchr/testify/require"
)

// TestFeedRangeModel: writes, deletes and TTL expiries interleaved with
// reads by feed range whose ranges split as the service's do (a range
// replaced by its two halves, each resuming from the range's
// continuation), checked against a model: every change of the
// all-versions-and-deletes feed (expiries included) is read exactly once
// over the readers' lineages, each from the range its key lies in; and a
// query read page by page by token, over ranges that split between pages
// while the clock moves on (items expire), never returns an item expired
// at its page's instant, repeats none, and returns every item live
// throughout it exactly once.
func TestFeedRangeModel(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { feedRangeModel(t, seed) })
	}
}

// rangeModelItem is what the model knows of an item.
type rangeModelItem struct {
	pk      string
	n       int
	expires time.Time // zero: never
}

func (m rangeModelItem) liveAt(now time.Time) bool {
	return m.expires.IsZero() || now.Before(m.expires)
}

// feedReader reads the change feed of one range of a lineage.
type feedReader struct {
	fr   lethe.FeedRange
	cont string
}

func feedRangeModel(t *testing.T, seed uint64) {
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 46))
	s, clock := newStore(t)
	def := lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "m", PartitionKeyDefinition: def, DefaultTimeToLive: lethe.TTLNever, ChangeFeedPolicy: &lethe.ChangeFeedPolicy{}})
	keyOf := func(pk string) string { return lethe.EffectivePartitionKey(def, lethe.NewPartitionKeyString(pk)) }
	model := map[string]rangeModelItem{}
	readers := []*feedReader{{fr: lethe.FeedRange{MaxExclusive: epk.Max}}}
	readCount := map[uint64]int{}

	splitRange := func(fr lethe.FeedRange) (lethe.FeedRange, lethe.FeedRange, bool) {
		mid, ok := epk.Mid(2, false, fr.MinInclusive, fr.MaxExclusive)
		return lethe.FeedRange{MinInclusive: fr.MinInclusive, MaxExclusive: mid}, lethe.FeedRange{MinInclusive: mid, MaxExclusive: fr.MaxExclusive}, ok
	}
	readFeeds := func() {
		for _, rd := range readers {
			for {
				page, err := c.ReadChangeFeed(ctx, &lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, FeedRange: &rd.fr, Continuation: rd.cont, MaxItemCount: 1 + int32(r.IntN(5))})
				require.NoError(t, err)
				rd.cont = page.ContinuationToken
				if len(page.Items) == 0 {
					break
				}
				for _, item := range page.Items {
					var ch struct {
						Current, Previous struct{ PK string }
						Metadata          struct {
							LSN          uint64
							PartitionKey map[string]string
						}
					}
					require.NoError(t, json.Unmarshal(item, &ch), "%s", item)
					pk := ch.Current.PK + ch.Previous.PK
					if pk == "" {
						pk = ch.Metadata.PartitionKey["pk"]
					}
					if k := keyOf(pk); !epk.InRange(k, rd.fr.MinInclusive, rd.fr.MaxExclusive) {
						t.Fatalf("change %d of key %s read in range %v", ch.Metadata.LSN, pk, rd.fr)
					}
					readCount[ch.Metadata.LSN]++
				}
			}
		}
		// Some ranges split; their halves go on from the range's continuation.
		var next []*feedReader
		for _, rd := range readers {
			if a, b, ok := splitRange(rd.fr); ok && len(readers) < 16 && r.IntN(4) == 0 {
				next = append(next, &feedReader{fr: a, cont: rd.cont}, &feedReader{fr: b, cont: rd.cont})
				continue
			}
			next = append(next, rd)
		}
		readers = next
	}

	runQuery := func(text string, keeps func(rangeModelItem) bool) {
		start := clock.Now()
		type part struct {
			fr    lethe.FeedRange
			token string
		}
		queue := []part{{fr: lethe.FeedRange{MaxExclusive: epk.Max}}}
		seen := map[string]int{}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			page, err := c.NewQueryItemsPager(text, lethe.NewPartitionKey(), &lethe.QueryOptions{FeedRange: &p.fr, PageSizeHint: 3, ContinuationToken: p.token}).NextPage(ctx)
			require.NoError(t, err)
			now := clock.Now()
			for _, item := range page.Items {
				var doc struct {
					ID, PK string
				}
				require.NoError(t, json.Unmarshal(item, &doc))
				m, ok := model[doc.ID]
				if !ok || !m.liveAt(now) || !keeps(m) {
					t.Fatalf("%s: item %s is not live at its page's instant, or not the query's (%v, %+v)", text, doc.ID, ok, m)
				}
				if !epk.InRange(keyOf(doc.PK), p.fr.MinInclusive, p.fr.MaxExclusive) {
					t.Fatalf("%s: item %s outside its page's range %v", text, doc.ID, p.fr)
				}
				seen[doc.ID]++
			}
			if page.ContinuationToken != "" {
				if a, b, ok := splitRange(p.fr); ok && len(queue) < 16 && r.IntN(3) == 0 {
					queue = append(queue, part{a, page.ContinuationToken}, part{b, page.ContinuationToken})
				} else {
					queue = append(queue, part{p.fr, page.ContinuationToken})
				}
			}
			if r.IntN(4) == 0 {
				clock.Advance(time.Duration(r.IntN(1500)) * time.Millisecond)
			}
		}
		end := clock.Now()
		for id, n := range seen {
			if n > 1 {
				t.Fatalf("%s: item %s returned %d times", text, id, n)
			}
		}
		for id, m := range model {
			if m.liveAt(start) && m.liveAt(end) && keeps(m) && seen[id] != 1 {
				t.Fatalf("%s: item %s, live throughout, returned %d times", text, id, seen[id])
			}
		}
	}

	for step := range 400 {
		now := clock.Now()
		id := fmt.Sprintf("i%d", r.IntN(60))
		switch op := r.IntN(10); {
		case op < 5:
			m := rangeModelItem{pk: model[id].pk, n: r.IntN(1000)}
			if cur, ok := model[id]; !ok || !cur.liveAt(now) {
				m.pk = fmt.Sprintf("k%d", r.IntN(12))
			}
			doc := map[string]any{"id": id, "pk": m.pk, "n": m.n}
			if r.IntN(3) == 0 {
				ttl := 1 + r.IntN(5)
				doc["ttl"] = ttl
				m.expires = now.Add(time.Duration(ttl) * time.Second)
			}
			b, _ := json.Marshal(doc)
			_, err := c.UpsertItem(ctx, lethe.NewPartitionKeyString(m.pk), b, nil)
			require.NoError(t, err)
			model[id] = m
		case op < 7:
			if cur, ok := model[id]; ok && cur.liveAt(now) {
				_, err := c.DeleteItem(ctx, lethe.NewPartitionKeyString(cur.pk), id, nil)
				require.NoError(t, err)
				delete(model, id)
			}
		case op < 9:
			clock.Advance(time.Duration(r.IntN(1200)) * time.Millisecond)
		default:
			readFeeds()
			if step%3 == 0 {
				all := func(rangeModelItem) bool { return true }
				switch r.IntN(3) {
				case 0:
					runQuery("SELECT * FROM c", all)
				case 1:
					runQuery("SELECT * FROM c WHERE c.n >= 100", func(m rangeModelItem) bool { return m.n >= 100 })
				default:
					runQuery("SELECT * FROM c ORDER BY c.n", all)
				}
			}
		}
	}
	clock.Advance(10 * time.Second) // every ttl has passed: the expiries are in the feed
	readFeeds()

	// The whole feed, read once from the beginning, is what the lineages read.
	all, _ := readAll(t, c, lethe.ChangeFeedOptions{Mode: lethe.ChangeFeedModeAllVersionsAndDeletes, MaxItemCount: 1000})
	for _, item := range all {
		var ch struct{ Metadata struct{ LSN uint64 } }
		require.NoError(t, json.Unmarshal(item, &ch))
		if readCount[ch.Metadata.LSN] != 1 {
			t.Fatalf("change %d read %d times over the lineages (%d ranges now)", ch.Metadata.LSN, readCount[ch.Metadata.LSN], len(readers))
		}
		delete(readCount, ch.Metadata.LSN)
	}
	if len(readCount) != 0 {
		t.Fatalf("the lineages read %d changes the whole feed does not hold", len(readCount))
	}
	t.Logf("%d changes, %d ranges at the end", len(all), len(readers))
}
