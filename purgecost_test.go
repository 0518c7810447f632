package lethe_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lethedb/lethe"
)

// TestPurgeCost is not a check: it writes n items that expire at one
// instant (BenchmarkPurge's) and purges them with Container.Purge, for
// counting instructions per purged item under valgrind by the difference
// of two runs' totals: with LETHE_PURGECOST_PART=setup it only writes
// them; with =paced it purges them a batch at a time, in working memory
// kept from batch to batch, with a MaxHold that bounds each batch (as while
// users are served; at a second, every batch is BatchSize). With LETHE_PURGECOST_SPREAD=1 the items are written 1 µs
// apart, so that they expire at distinct instants, as bench/ W4's do. It
// runs only with LETHE_PURGECOST=n:
//
//	CGO_ENABLED=0 go test -c -o lethe.test . &&
//	for part in setup all; do LETHE_PURGECOST=200000 LETHE_PURGECOST_PART=$part GOMAXPROCS=1 \
//	  GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind ./lethe.test -test.run TestPurgeCost 2>&1 | grep Collected; done
//
// (the second total less the first, over n, is the cost of one purge).
func TestPurgeCost(t *testing.T) {
	t.Parallel()
	n, _ := strconv.Atoi(os.Getenv("LETHE_PURGECOST"))
	if n <= 0 {
		t.Skip("LETHE_PURGECOST=n not set")
	}
	clock := lethe.NewManualClock(time.Unix(1_700_000_000, 0))
	part := os.Getenv("LETHE_PURGECOST_PART")
	hold := time.Duration(0)
	if part == "paced" {
		hold = lethe.MaxReaperMaxHold - 1
	}
	s, _ := lethe.Open(&lethe.Options{Clock: clock, Reaper: lethe.ReaperOptions{Disabled: true, MaxHold: hold}})
	defer s.Close()
	c, _ := s.CreateContainer(context.Background(), lethe.ContainerProperties{ID: "c", DefaultTimeToLive: 1})
	spread := os.Getenv("LETHE_PURGECOST_SPREAD") == "1"
	for i := range n {
		if spread {
			clock.Advance(time.Microsecond)
		}
		c.CreateItem(context.Background(), lethe.NewPartitionKey(), benchDoc("u"+strconv.Itoa(i), ""), nil)
	}
	clock.Advance(time.Second)
	switch part {
	case "setup":
		return
	case "paced":
		got := 0
		scratch := lethe.NewReapScratch(s) // kept, as the reaper keeps it
		for got < n {
			got += lethe.ReapWith(c, clock.Now(), false, scratch)
		}
		return
	}
	if got, _ := c.Purge(context.Background()); got != n {
		t.Fatalf("purged %d of %d", got, n)
	}
}
