package lethe_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVectorQueries: VectorDistance compares by the distance function of
// the path's embedding in the container's policy (/doc/vec: euclidean,
// int8), orders most similar first, accepts items whose vectors do not fit
// the policy (Cosmos DB does not refuse them; VectorDistance is undefined
// for them), and never returns an expired item, purged or not.
func TestVectorQueries(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	props := vectorProps("vectors")
	props.DefaultTimeToLive = lethe.TTLNever
	c := mustContainer(t, s, props)
	for _, doc := range []string{
		`{"id":"1","pk":"a","embedding":[1,0,0],"doc":{"vec":[1,2]}}`,
		`{"id":"2","pk":"a","embedding":[0.5,0.5,0],"doc":{"vec":[10,20]}}`,
		`{"id":"3","pk":"b","embedding":[0.9,0.1,0],"doc":{"vec":[2,2]},"ttl":60}`,
		`{"id":"4","pk":"b","embedding":[1,0],"doc":{"vec":[1.5,2]}}`,  // 2 dimensions where the policy says 3: kept
		`{"id":"5","pk":"b","embedding":"none","doc":{"vec":[300,2]}}`, // not a vector, nor an int8 one: kept
		`{"id":"6","pk":"a","embedding":[-1,0,0],"doc":{"vec":[-5,-5]}}`,
	} {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString(doc[16:17]), []byte(doc), nil)
		require.NoError(t, err, doc)
	}
	run := func(q string, pk lethe.PartitionKey) []string {
		t.Helper()
		got, _ := queryAll(t, c, q, []lethe.QueryParameter{{Name: "@q", Value: []float64{1, 0, 0}}, {Name: "@p", Value: []int{1, 2}}}, pk)
		for i := range got {
			got[i] = strings.Trim(got[i], `"`)
		}
		return got
	}
	all := lethe.NewPartitionKey()
	// /embedding: cosine, most similar first.
	assert.Equal(t, []string{"1", "3", "2", "6", "4", "5"}, run(`SELECT VALUE c.id FROM c ORDER BY VectorDistance(c.embedding, @q)`, all))
	assert.Equal(t, []string{"1", "3"}, run(`SELECT TOP 2 VALUE c.id FROM c ORDER BY VectorDistance(c.embedding, @q)`, all))
	assert.Equal(t, []string{"3", "4", "5"}, run(`SELECT VALUE c.id FROM c ORDER BY VectorDistance(c.embedding, @q)`, lethe.NewPartitionKeyString("b")))
	// /doc/vec: euclidean, smallest first; int8, so 1.5 and 300 are not elements.
	assert.Equal(t, []string{"1", "3", "6", "2", "4", "5"}, run(`SELECT VALUE c.id FROM c ORDER BY VectorDistance(c.doc.vec, @p)`, all))
	assert.Equal(t, []string{"1", "3", "6", "2"}, run(`SELECT VALUE c.id FROM c WHERE IS_DEFINED(VectorDistance(c.doc.vec, @p)) ORDER BY VectorDistance(c.doc.vec, @p)`, all))
	// The options override the policy.
	assert.Equal(t, []string{"5", "2", "3", "4", "1", "6"}, run(`SELECT VALUE c.id FROM c ORDER BY VectorDistance(c.doc.vec, @p, false, {"distanceFunction": "dotproduct", "dataType": "float32"})`, all))
	got := run(`SELECT c.id, VectorDistance(c.embedding, @q) AS score FROM c WHERE c.id = "3"`, all)
	assert.Equal(t, []string{`{"id":"3","score":0.9938837}`}, got)

	// Item 3 expires: never a result, whether the reaper has purged it or not.
	clock.Advance(time.Minute)
	assert.Equal(t, []string{"1", "2"}, run(`SELECT TOP 2 VALUE c.id FROM c ORDER BY VectorDistance(c.embedding, @q)`, all))
	assert.Equal(t, []string{"4", "5"}, run(`SELECT VALUE c.id FROM c ORDER BY VectorDistance(c.embedding, @q)`, lethe.NewPartitionKeyString("b")))
	n, err := c.Purge(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	assert.Equal(t, []string{"1", "2"}, run(`SELECT TOP 2 VALUE c.id FROM c ORDER BY VectorDistance(c.embedding, @q)`, all))
}

// TestRankQueries: ORDER BY RANK FullTextScore and RRF in a container:
// FullTextScore's statistics are those of all the container's live items,
// whatever partition the query reads (a term common in another partition
// weighs less), and expired items are neither results nor counted.
func TestRankQueries(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	props := vectorProps("ranked")
	props.DefaultTimeToLive = lethe.TTLNever
	c := mustContainer(t, s, props)
	for _, doc := range []string{
		`{"id":"1","pk":"a","title":"red fox","embedding":[1,0,0]}`,
		`{"id":"2","pk":"a","title":"brown bear","embedding":[0,1,0]}`,
		`{"id":"3","pk":"b","title":"red red red","ttl":60}`,
		`{"id":"4","pk":"b","title":"red apples","embedding":[0.9,0.1,0]}`,
		`{"id":"5","pk":"b","title":"red cars","ttl":60}`,
		`{"id":"6","pk":"b","title":"red roses","ttl":60}`,
	} {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString(doc[16:17]), []byte(doc), nil)
		require.NoError(t, err, doc)
	}
	run := func(q string, pk lethe.PartitionKey) []string {
		t.Helper()
		got, _ := queryAll(t, c, q, []lethe.QueryParameter{{Name: "@q", Value: []float64{1, 0, 0}}}, pk)
		for i := range got {
			got[i] = strings.Trim(got[i], `"`)
		}
		return got
	}
	a := lethe.NewPartitionKeyString("a")
	// In partition a, "bear" is as rare as "red" is there; but red is in
	// five of the six items of the container, bear in one: bear first.
	assert.Equal(t, []string{"2", "1"}, run(`SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.title, "red", "bear")`, a))
	assert.Equal(t, []string{"3", "1", "4", "5", "6", "2"}, run(`SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.title, "red")`, lethe.NewPartitionKey()))
	assert.Equal(t, []string{"1", "4", "2", "3", "5", "6"}, run(`SELECT VALUE c.id FROM c ORDER BY RANK RRF(VectorDistance(c.embedding, @q), FullTextScore(c.title, "fox"))`, lethe.NewPartitionKey()))

	// Three red items expire: not results, not counted; red is now in two
	// of three items, so the red fox comes first, then the bear.
	clock.Advance(time.Minute)
	assert.Equal(t, []string{"1", "4", "2"}, run(`SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.title, "red")`, lethe.NewPartitionKey()))
	assert.Equal(t, []string{"1", "4", "2"}, run(`SELECT TOP 5 VALUE c.id FROM c ORDER BY RANK RRF(VectorDistance(c.embedding, @q), FullTextScore(c.title, "red"))`, lethe.NewPartitionKey()))
	_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString("b"), []byte(`{"id":"7","pk":"b","title":"apples"}`), nil)
	require.NoError(t, err)
	_, err = c.Purge(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"7", "4", "1", "2"}, run(`SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.title, "apple")`, lethe.NewPartitionKey()))
}
