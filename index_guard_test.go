package lethe

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestIndexPagerDoesNotPinDroppedIndex: a pager over an index's candidates,
// kept after a policy change drops the index, does not keep the dropped
// index's tree alive (a caller may keep a pager as long as it likes: the
// store keeps none), and its later pages still return the items listed
// that are live at their instant, once each.
func TestIndexPagerDoesNotPinDroppedIndex(t *testing.T) {
	ctx := context.Background()
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := Open(&Options{Clock: clock, Reaper: ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	defer s.Close()
	c, err := s.CreateContainer(ctx, ContainerProperties{ID: "c", DefaultTimeToLive: TTLNever})
	require.NoError(t, err)
	for i := range 30 {
		_, err := c.CreateItem(ctx, NewPartitionKey(), fmt.Appendf(nil, `{"id":"i%02d","g":%d}`, i, i%2), nil)
		require.NoError(t, err)
	}
	const q = `SELECT * FROM c WHERE c.g = 0`
	for range 2 { // the first filter scans, the second makes the index
		for _, err := range c.QueryItems(ctx, q, NewPartitionKey(), nil) {
			require.NoError(t, err)
		}
	}
	collected := make(chan struct{})
	func() { // no reference to the index outlives this function
		idx := c.madeIndex([]string{"g"})
		require.NotNil(t, idx, "the index of g is made")
		runtime.AddCleanup(idx.t, func(ch chan struct{}) { close(ch) }, collected)
	}()

	p := c.NewQueryItemsPager(q, NewPartitionKey(), &QueryOptions{PageSizeHint: 4})
	page, err := p.NextPage(ctx)
	require.NoError(t, err)
	require.Len(t, page.Items, 4)
	require.NotNil(t, p.ip, "the pager pages over the index's candidates")
	require.NotZero(t, p.ip.guard.gen, "the pager keeps a guard of the index")

	props, err := c.Read(ctx)
	require.NoError(t, err)
	props.IndexingPolicy = &IndexingPolicy{IndexingMode: IndexingModeConsistent, ExcludedPaths: []IndexPath{{Path: "/g/?"}}}
	require.NoError(t, c.Replace(ctx, props))
	require.Nil(t, c.madeIndex([]string{"g"}), "the policy change dropped the index")
	_, err = c.DeleteItem(ctx, NewPartitionKey(), "i10", nil)
	require.NoError(t, err)

	freed := false
	for i := 0; i < 10 && !freed; i++ {
		runtime.GC()
		select { // cleanups run on their own goroutine, after the cycle
		case <-collected:
			freed = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	require.True(t, freed, "the dropped index's tree is still reachable from the pager")

	var got []string
	for p.More() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		for _, item := range page.Items {
			var d struct{ ID string }
			require.NoError(t, json.Unmarshal(item, &d))
			got = append(got, d.ID)
		}
	}
	require.Equal(t, []string{"i08", "i12", "i14", "i16", "i18", "i20", "i22", "i24", "i26", "i28"}, got)
	runtime.KeepAlive(p)
}
