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

// TestVectorIndexSlashInName: a vector index the policy declares on /s/v
// indexes s.v, not the property "s/v": once it is built, a query ordered
// by the distance of c["s/v"] is not answered from it. (y's vector at
// "s/v" is the query's, and at s.v far from it; the others' the other way
// round, and there are more of them than the index's candidates.)
func TestVectorIndexSlashInName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(&Options{Reaper: ReaperOptions{Disabled: true}})
	require.NoError(t, err)
	defer s.Close()
	c, err := s.CreateContainer(ctx, ContainerProperties{ID: "c",
		VectorEmbeddingPolicy: &VectorEmbeddingPolicy{VectorEmbeddings: []VectorEmbedding{
			{Path: "/s/v", DataType: VectorDataTypeFloat32, DistanceFunction: VectorDistanceFunctionEuclidean, Dimensions: 2}}},
		IndexingPolicy: &IndexingPolicy{VectorIndexes: []VectorIndex{{Path: "/s/v", Type: VectorIndexTypeFlat}}}})
	require.NoError(t, err)
	docs := []string{`{"id":"y","s":{"v":[0,1]},"s/v":[1,0]}`}
	for i := range 100 { // more than the index's list of candidates
		docs = append(docs, fmt.Sprintf(`{"id":"x%d","s":{"v":[1,0]},"s/v":[0,1]}`, i))
	}
	for _, doc := range docs {
		_, err := c.CreateItem(ctx, NewPartitionKey(), []byte(doc), nil)
		require.NoError(t, err)
	}
	top := func(q string) string {
		o := &QueryOptions{QueryParameters: []QueryParameter{{Name: "@q", Value: []float64{1, 0}}}}
		page, err := c.NewQueryItemsPager(q, NewPartitionKey(), o).NextPage(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, page.Items)
		return string(page.Items[0])
	}
	const nested = `SELECT TOP 1 VALUE c.id FROM c ORDER BY VectorDistance(c.s.v, @q)`
	deadline := time.Now().Add(10 * time.Second)
	for {
		require.NotEqual(t, `"y"`, top(nested))
		c.mu.Lock()
		built := c.mu.indexes.vector["s/v"] != nil
		c.mu.Unlock()
		if built {
			break
		}
		require.True(t, time.Now().Before(deadline), "the vector index of /s/v was not built")
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, `"y"`, top(`SELECT TOP 1 VALUE c.id FROM c ORDER BY VectorDistance(c["s/v"], @q)`))
	require.NotEqual(t, `"y"`, top(nested))
}
