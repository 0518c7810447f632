package lethe_test

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVectorIndexDifferential: TOP k ORDER BY VectorDistance through a
// container's vector index returns exactly what a scan returns (items,
// projection, order, ties broken alike), for each distance function and
// element type, while items are written, replaced, deleted and expire
// between queries, purged or not; the index is made and used.
func TestVectorIndexDifferential(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dist lethe.VectorDistanceFunction
		typ  lethe.VectorDataType
	}{
		{lethe.VectorDistanceFunctionCosine, lethe.VectorDataTypeFloat32},
		{lethe.VectorDistanceFunctionDotProduct, lethe.VectorDataTypeFloat16},
		{lethe.VectorDistanceFunctionEuclidean, lethe.VectorDataTypeInt8},
	} {
		t.Run(string(tc.dist), func(t *testing.T) {
			seed := rand.Uint64()
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 3))
			const dims = 4
			s, clock := newStore(t)
			c := mustContainer(t, s, oneVectorProps(tc.typ, tc.dist, dims, lethe.VectorIndexTypeFlat))
			// Small integer elements and a few centres make ties and
			// clusters; some items have no vector, or one of another
			// length, or one whose elements do not fit int8.
			centres := make([][]int, 3)
			for i := range centres {
				centres[i] = []int{rng.IntN(9) - 4, rng.IntN(9) - 4, rng.IntN(9) - 4, rng.IntN(9) - 4}
			}
			vec := func() string {
				switch rng.IntN(12) {
				case 0:
					return `"none"`
				case 1:
					return `[1,2]`
				case 2:
					return `[300,1,1,1]`
				case 3:
					return `[0,0,0,0]`
				}
				ctr := centres[rng.IntN(len(centres))]
				b := []byte{'['}
				for d := range dims {
					if d > 0 {
						b = append(b, ',')
					}
					b = strconv.AppendInt(b, int64(ctr[d]+rng.IntN(3)-1), 10)
				}
				return string(append(b, ']'))
			}
			write := func() {
				id, pk := strconv.Itoa(rng.IntN(60)), strconv.Itoa(rng.IntN(3))
				var err error
				switch rng.IntN(6) {
				case 0:
					_, err = c.DeleteItem(ctx, lethe.NewPartitionKeyString(pk), id, nil)
				default:
					ttl := ""
					if rng.IntN(4) == 0 {
						ttl = fmt.Sprintf(`,"ttl":%d`, 1+rng.IntN(5))
					}
					doc := fmt.Sprintf(`{"id":%q,"pk":%q,"n":%d,"v":%s%s}`, id, pk, rng.IntN(100), vec(), ttl)
					_, err = c.UpsertItem(ctx, lethe.NewPartitionKeyString(pk), []byte(doc), nil)
				}
				if err != nil {
					require.ErrorIs(t, err, lethe.ErrNotFound)
				}
			}
			run := func(q string, pk lethe.PartitionKey, params []lethe.QueryParameter) []string {
				t.Helper()
				return queryPages(t, c, q, pk, params, 100)
			}
			for i := range 80 {
				write()
				if i == 0 {
					continue
				}
			}
			for round := range 30 {
				for range rng.IntN(15) {
					write()
				}
				clock.Advance(time.Duration(rng.IntN(2000)) * time.Millisecond)
				if round%7 == 6 {
					_, err := c.Purge(ctx)
					require.NoError(t, err)
				}
				q := []lethe.QueryParameter{{Name: "@q", Value: []int{rng.IntN(9) - 4, rng.IntN(9) - 4, rng.IntN(9) - 4, rng.IntN(9) - 4}}}
				k := []int{1, 3, 10, 25}[rng.IntN(4)]
				pk := lethe.NewPartitionKey()
				if rng.IntN(3) == 0 {
					pk = lethe.NewPartitionKeyString(strconv.Itoa(rng.IntN(3)))
				}
				for _, text := range []string{
					`SELECT TOP %d c.id, c.pk, c.n, VectorDistance(c.v, @q) AS s FROM c ORDER BY VectorDistance(c.v, @q)`,
					`SELECT TOP %d VALUE c.id FROM c ORDER BY VectorDistance(@q, c.v) DESC`,
					`SELECT TOP %d * FROM c ORDER BY VectorDistance(c.v, @q, true)`,
					`SELECT c.id FROM c ORDER BY VectorDistance(c.v, @q) OFFSET 2 LIMIT %d`,
				} {
					text = fmt.Sprintf(text, k)
					indexed := run(text, pk, q)
					lethe.SetUseIndexes(c, false)
					scanned := run(text, pk, q)
					lethe.SetUseIndexes(c, true)
					require.Equal(t, scanned, indexed, "round %d: %s", round, text)
				}
			}
			assert.Equal(t, 1, lethe.VectorIndexCount(c))
		})
	}
}

// queryPages returns the results of q, read in pages of pageSize.
func queryPages(t *testing.T, c *lethe.Container, q string, pk lethe.PartitionKey, params []lethe.QueryParameter, pageSize int32) []string {
	t.Helper()
	p := c.NewQueryItemsPager(q, pk, &lethe.QueryOptions{QueryParameters: params, PageSizeHint: pageSize})
	var out []string
	for p.More() {
		r, err := p.NextPage(ctx)
		require.NoError(t, err, q)
		out = append(out, texts(r.Items)...)
	}
	return out
}

// TestVectorIndexUse: the indexes of the policy's vector indexes alone are
// made, in the background from the container's creation; one is dropped
// when the policy stops declaring it; and a query it cannot answer exactly
// (fewer items with a comparable vector than TOP asks for) is evaluated as
// a scan, undefined items last.
func TestVectorIndexUse(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	props := vectorProps("v")
	c := mustContainer(t, s, props)
	for i, v := range []string{`[1,0,0]`, `[0,1,0]`, `[1,1]`, `"x"`, `[0.9,0.1,0]`} {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString("a"), fmt.Appendf(nil, `{"id":"%d","pk":"a","embedding":%s,"other":%s}`, i, v, v), nil)
		require.NoError(t, err)
	}
	lethe.WaitVectorIndexes(c)
	assert.Equal(t, 2, lethe.VectorIndexCount(c), "/embedding and /doc/vec, not /other")
	params := []lethe.QueryParameter{{Name: "@q", Value: []float64{1, 0, 0}}}
	got, _ := queryAll(t, c, `SELECT TOP 2 VALUE c.id FROM c ORDER BY VectorDistance(c.other, @q)`, params, lethe.NewPartitionKey())
	assert.Equal(t, []string{`"0"`, `"4"`}, got)
	got, _ = queryAll(t, c, `SELECT TOP 2 VALUE c.id FROM c ORDER BY VectorDistance(c.embedding, @q)`, params, lethe.NewPartitionKey())
	assert.Equal(t, []string{`"0"`, `"4"`}, got)
	got, _ = queryAll(t, c, `SELECT TOP 5 VALUE c.id FROM c ORDER BY VectorDistance(c.embedding, @q)`, params, lethe.NewPartitionKey())
	assert.Equal(t, []string{`"0"`, `"4"`, `"1"`, `"2"`, `"3"`}, got)

	props.IndexingPolicy.VectorIndexes = slices.DeleteFunc(props.IndexingPolicy.VectorIndexes, func(v lethe.VectorIndex) bool { return v.Path == "/embedding" })
	err := c.Replace(ctx, props)
	require.NoError(t, err)
	assert.Equal(t, 1, lethe.VectorIndexCount(c), "/embedding's dropped with its policy")
}

// TestVectorIndexBuildWhileWriting: writes made while the vector index is
// being made (between the shards it reads; the index is added to the
// policy of a container that has items) are in it: afterwards, queries
// through it return what scans return.
func TestVectorIndexBuildWhileWriting(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	props := vectorProps("v")
	props.DefaultTimeToLive = lethe.TTLNever
	indexes := props.IndexingPolicy.VectorIndexes
	props.IndexingPolicy.VectorIndexes = nil
	c := mustContainer(t, s, props)
	doc := func(id string, i int, ttl string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"pk":"a","embedding":[%d,%d,1]%s}`, id, i%7, i%5, ttl)
	}
	const n = 300
	for i := range n {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString("a"), doc(fmt.Sprintf("i%d", i), i, ""), nil)
		require.NoError(t, err)
	}
	rounds := writeWhileBuilding(t, c, n, doc) // the two indexes are made at once
	props.IndexingPolicy.VectorIndexes = indexes
	require.NoError(t, c.Replace(ctx, props)) // starts making the indexes
	lethe.WaitVectorIndexes(c)
	lethe.SetAfterBuildShard(c, nil)
	require.Positive(t, rounds())
	require.Equal(t, 2, lethe.VectorIndexCount(c))
	clock.Advance(2 * time.Second) // the items written with "ttl": 1 expire
	query := `SELECT TOP 6 c.id, VectorDistance(c.embedding, @q) AS s FROM c ORDER BY VectorDistance(c.embedding, @q)`
	for _, q := range [][]float64{{1, 2, 3}, {6, 0, 1}, {0, 4, 1}} {
		params := []lethe.QueryParameter{{Name: "@q", Value: q}}
		withIndex, _ := queryAll(t, c, query, params, lethe.NewPartitionKey())
		was := lethe.SetUseIndexes(c, false)
		scan, _ := queryAll(t, c, query, params, lethe.NewPartitionKey())
		lethe.SetUseIndexes(c, was)
		require.Equal(t, scan, withIndex, "%v", q)
	}
}

// TestVectorIndexApproximate: through a diskANN index (a graph), TOP k
// ORDER BY VectorDistance returns k items (or all there are) that a scan
// at the same instant finds live, with the scan's scores, nearest first;
// never an item deleted, replaced or expired (purged or not), while items
// are written between queries and the graph is linked meanwhile. With
// bruteForce it returns exactly what a scan returns.
func TestVectorIndexApproximate(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	const dims = 8
	s, clock := newStore(t)
	c := mustContainer(t, s, oneVectorProps(lethe.VectorDataTypeFloat32, lethe.VectorDistanceFunctionCosine, dims, lethe.VectorIndexTypeDiskANN))
	searches := 0
	lethe.SetAfterGraphSearch(c, func(int) { searches++ })
	t.Cleanup(func() { lethe.SetAfterGraphSearch(c, nil) })
	vec := func() string {
		b := []byte{'['}
		for d := range dims {
			if d > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, float64(rng.IntN(7)-3)+rng.Float64()/4, 'g', 4, 64)
		}
		return string(append(b, ']'))
	}
	write := func() {
		id, pk := strconv.Itoa(rng.IntN(200)), strconv.Itoa(rng.IntN(3))
		var err error
		if rng.IntN(5) == 0 {
			_, err = c.DeleteItem(ctx, lethe.NewPartitionKeyString(pk), id, nil)
		} else {
			ttl := ""
			if rng.IntN(3) == 0 {
				ttl = fmt.Sprintf(`,"ttl":%d`, 1+rng.IntN(5))
			}
			doc := fmt.Sprintf(`{"id":%q,"pk":%q,"v":%s%s}`, id, pk, vec(), ttl)
			_, err = c.UpsertItem(ctx, lethe.NewPartitionKeyString(pk), []byte(doc), nil)
		}
		if err != nil {
			require.ErrorIs(t, err, lethe.ErrNotFound)
		}
	}
	run := func(q string, pk lethe.PartitionKey, params []lethe.QueryParameter) []string {
		t.Helper()
		return queryPages(t, c, q, pk, params, 1000)
	}
	for range 300 {
		write()
	}
	const approx = `SELECT TOP %d c.id, VectorDistance(c.v, @q) AS s FROM c ORDER BY VectorDistance(c.v, @q)`
	for round := range 30 {
		for range rng.IntN(40) {
			write()
		}
		if round%2 == 0 {
			lethe.WaitVectorIndexes(c) // else the graph may be linking the newest
		}
		clock.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
		if round%7 == 6 {
			_, err := c.Purge(ctx)
			require.NoError(t, err)
		}
		qv := make([]float64, dims)
		for d := range qv {
			qv[d] = float64(rng.IntN(7) - 3)
		}
		params := []lethe.QueryParameter{{Name: "@q", Value: qv}}
		k := []int{1, 5, 10, 30}[rng.IntN(4)]
		pk := lethe.NewPartitionKey()
		if rng.IntN(3) == 0 {
			pk = lethe.NewPartitionKeyString(strconv.Itoa(rng.IntN(3)))
		}
		// Every live item with its score, by a scan.
		lethe.SetUseIndexes(c, false)
		all := run(fmt.Sprintf(approx, 1000), pk, params)
		brute := run(fmt.Sprintf(`SELECT TOP %d c.id, VectorDistance(c.v, @q, true) AS s FROM c ORDER BY VectorDistance(c.v, @q, true)`, k), pk, params)
		lethe.SetUseIndexes(c, true)
		live := map[string]int{}
		for i, r := range all {
			live[r] = i
		}
		got := run(fmt.Sprintf(approx, k), pk, params)
		require.Len(t, got, min(k, len(all)), "round %d", round)
		last := -1
		for _, r := range got {
			i, ok := live[r]
			require.True(t, ok, "round %d: %s is not a live item with that score", round, r)
			require.Greater(t, i, last, "round %d: %s out of order", round, r)
			last = i
		}
		require.Equal(t, brute, run(fmt.Sprintf(`SELECT TOP %d c.id, VectorDistance(c.v, @q, true) AS s FROM c ORDER BY VectorDistance(c.v, @q, true)`, k), pk, params), "round %d: bruteForce", round)
		got = run(fmt.Sprintf(`SELECT TOP %d c.id, VectorDistance(c.v, @q) AS s FROM c ORDER BY VectorDistance(c.v, @q, false, {searchListSizeMultiplier: 1})`, k), pk, params)
		require.Len(t, got, min(k, len(all)), "round %d", round)
	}
	require.Positive(t, searches, "the graph answered")
}

// TestVectorIndexRenewal: an index whose removed slots (versions replaced
// or deleted) outnumber its present ones is made anew in the background,
// the old one serving meanwhile; queries return what scans return before,
// during and after.
func TestVectorIndexRenewal(t *testing.T) {
	t.Parallel()
	for _, typ := range []lethe.VectorIndexType{lethe.VectorIndexTypeFlat, lethe.VectorIndexTypeDiskANN} {
		t.Run(string(typ), func(t *testing.T) {
			s, _ := newStore(t)
			c := mustContainer(t, s, oneVectorProps(lethe.VectorDataTypeFloat32, lethe.VectorDistanceFunctionEuclidean, 2, typ))
			query := `SELECT TOP 5 c.id, VectorDistance(c.v, @q, true) AS s FROM c ORDER BY VectorDistance(c.v, @q, true)`
			params := []lethe.QueryParameter{{Name: "@q", Value: []int{1, 2}}}
			check := func() {
				t.Helper()
				indexed, _ := queryAll(t, c, query, params, lethe.NewPartitionKey())
				lethe.SetUseIndexes(c, false)
				scanned, _ := queryAll(t, c, query, params, lethe.NewPartitionKey())
				lethe.SetUseIndexes(c, true)
				require.Equal(t, scanned, indexed)
			}
			for round := range 30 {
				for i := range 50 {
					doc := fmt.Sprintf(`{"id":"%d","pk":"a","v":[%d,%d]}`, i, (i*round)%11, i%7)
					_, err := c.UpsertItem(ctx, lethe.NewPartitionKeyString("a"), []byte(doc), nil)
					require.NoError(t, err)
				}
				check()
			}
			lethe.WaitVectorIndexes(c)
			check()
			removed, present := lethe.VectorIndexSlots(c)
			assert.Equal(t, 50, present)
			assert.Less(t, removed, 1100, "made anew")
		})
	}
}

// TestVectorQueryLetsWritesThrough: a vector query holds no lock while it
// compares (a write made meanwhile, here from the query's own goroutine,
// which would wait for ever if the query held the container's index
// lock, goes through), and sees the items as they were when it began.
func TestVectorQueryLetsWritesThrough(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, oneVectorProps(lethe.VectorDataTypeFloat32, lethe.VectorDistanceFunctionEuclidean, 2, lethe.VectorIndexTypeDiskANN))
	pk := lethe.NewPartitionKeyString("a")
	for i := range 100 {
		_, err := c.UpsertItem(ctx, pk, fmt.Appendf(nil, `{"id":"%d","pk":"a","v":[%d,%d]}`, i, i%10, i/10), nil)
		require.NoError(t, err)
	}
	lethe.WaitVectorIndexes(c)
	wrote := false
	lethe.SetAfterGraphSearch(c, func(int) {
		if wrote {
			return
		}
		wrote = true
		_, err := c.UpsertItem(ctx, pk, []byte(`{"id":"new","pk":"a","v":[0,0]}`), nil)
		require.NoError(t, err)
		_, err = c.DeleteItem(ctx, pk, "0", nil)
		require.NoError(t, err)
	})
	t.Cleanup(func() { lethe.SetAfterGraphSearch(c, nil) })
	query := `SELECT TOP 3 VALUE c.id FROM c ORDER BY VectorDistance(c.v, @q)`
	params := []lethe.QueryParameter{{Name: "@q", Value: []int{0, 0}}}
	got, _ := queryAll(t, c, query, params, lethe.NewPartitionKey())
	require.True(t, wrote)
	assert.Equal(t, []string{`"0"`, `"1"`, `"10"`}, got, "as they were when it began")
	// The write went through: the next query sees it, through the graph
	// (the new item is at the very point of the deleted one) and exactly.
	for _, q := range []string{query, `SELECT TOP 3 VALUE c.id FROM c ORDER BY VectorDistance(c.v, @q, true)`} {
		got, _ = queryAll(t, c, q, params, lethe.NewPartitionKey())
		assert.Equal(t, []string{`"new"`, `"1"`, `"10"`}, got, q)
	}
}

// TestVectorIndexAtOpen: a durable store makes its containers' vector
// indexes in the background when it opens; they hold the items recovered.
func TestVectorIndexAtOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := lethe.NewManualClock(t0)
	s := openDurable(t, dir, clock)
	props := vectorProps("v")
	c := mustContainer(t, s, props)
	pk := lethe.NewPartitionKeyString("a")
	for i := range 50 {
		_, err := c.UpsertItem(ctx, pk, fmt.Appendf(nil, `{"id":"%d","pk":"a","embedding":[%d,%d,1]}`, i, i%7, i%5), nil)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	s = openDurable(t, dir, clock)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	c, err := s.Container("v")
	require.NoError(t, err)
	lethe.WaitVectorIndexes(c)
	require.Equal(t, 2, lethe.VectorIndexCount(c))
	query := `SELECT TOP 5 c.id, VectorDistance(c.embedding, @q) AS s FROM c ORDER BY VectorDistance(c.embedding, @q)`
	params := []lethe.QueryParameter{{Name: "@q", Value: []float64{1, 2, 3}}}
	indexed := queryPages(t, c, query, lethe.NewPartitionKey(), params, 10)
	lethe.SetUseIndexes(c, false)
	scanned := queryPages(t, c, query, lethe.NewPartitionKey(), params, 10)
	lethe.SetUseIndexes(c, true)
	require.Len(t, indexed, 5)
	require.Equal(t, scanned, indexed)
	_, present := lethe.VectorIndexSlots(c)
	require.Equal(t, 50, present, "/embedding's 50 items")
}

// TestVectorScanPruning: an exact vector scan that skips the items whose
// float32 score, with its error bound, shows they cannot enter the top
// (prune) returns exactly what the scan that compares every item in
// float64 returns, and what a scan of the items' JSON returns: the same
// items, scores and order, ties included; for each distance function, on
// random, clustered and adversarial data (exact ties, huge and tiny norms,
// zero vectors, values near float32's limits), with items expiring and
// queries on one partition. Where the processor can prune, it does.
func TestVectorScanPruning(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	// Each kind makes a vector of dims float32 values (as JSON numbers).
	kinds := map[string]func(dims int) []float64{
		"random": func(dims int) []float64 { return randomVec(rng, dims, 1) },
		"clustered": func(dims int) []float64 {
			r := rand.New(rand.NewPCG(uint64(rng.IntN(4)), 0)) // four centres
			v := randomVec(r, dims, 1)
			if rng.IntN(3) > 0 { // the others are the centre itself: ties
				for i := range v {
					v[i] = float64(float32(v[i] + rng.NormFloat64()*0.01))
				}
			}
			return v
		},
		"adversarial": func(dims int) []float64 {
			switch rng.IntN(6) {
			case 0:
				return make([]float64, dims) // zero
			case 1: // near float32's largest: float32 sums overflow
				v := randomVec(rng, dims, 1)
				v[rng.IntN(dims)] = math.MaxFloat32 * float64(1-2*rng.IntN(2))
				return v
			case 2:
				return randomVec(rng, dims, math.Ldexp(1, 30+rng.IntN(40)))
			case 3: // float32 products underflow
				return randomVec(rng, dims, math.Ldexp(1, -70-rng.IntN(50)))
			}
			v := make([]float64, dims) // small integers: exact ties
			for i := range v {
				v[i] = float64(rng.IntN(3) - 1)
			}
			return v
		},
	}
	for _, dist := range []lethe.VectorDistanceFunction{lethe.VectorDistanceFunctionCosine, lethe.VectorDistanceFunctionDotProduct, lethe.VectorDistanceFunctionEuclidean} {
		for _, kind := range slices.Sorted(maps.Keys(kinds)) { // in order: the seed replays the test
			gen := kinds[kind]
			t.Run(string(dist)+"/"+kind, func(t *testing.T) {
				dims := []int{5, 40, 77}[rng.IntN(3)]
				s, clock := newStore(t)
				c := mustContainer(t, s, oneVectorProps(lethe.VectorDataTypeFloat32, dist, dims, lethe.VectorIndexTypeFlat))
				write := func(id int) {
					pk := strconv.Itoa(rng.IntN(3))
					ttl := ""
					if rng.IntN(4) == 0 {
						ttl = fmt.Sprintf(`,"ttl":%d`, 1+rng.IntN(5))
					}
					doc := fmt.Sprintf(`{"id":"%d","pk":%q,"v":%s%s}`, id, pk, jsonVec(gen(dims)), ttl)
					_, err := c.UpsertItem(ctx, lethe.NewPartitionKeyString(pk), []byte(doc), nil)
					require.NoError(t, err)
				}
				for id := range 400 {
					write(id)
				}
				lethe.WaitVectorIndexes(c)
				pruned := 0
				lethe.SetAfterExactScan(c, func(n int) { pruned += n })
				defer lethe.SetAfterExactScan(c, nil)
				for round := range 12 {
					for range 20 {
						write(rng.IntN(450))
					}
					clock.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
					q := []lethe.QueryParameter{{Name: "@q", Value: gen(dims)}}
					pk := lethe.NewPartitionKey()
					if rng.IntN(3) == 0 {
						pk = lethe.NewPartitionKeyString(strconv.Itoa(rng.IntN(3)))
					}
					text := fmt.Sprintf(`SELECT TOP %d c.id, VectorDistance(c.v, @q) AS s FROM c ORDER BY VectorDistance(c.v, @q)`, []int{1, 3, 10}[rng.IntN(3)])
					run := func() []string {
						var out []string
						for item, err := range c.QueryItems(ctx, text, pk, &lethe.QueryOptions{QueryParameters: q}) {
							if err != nil {
								return append(out, err.Error())
							}
							out = append(out, string(item))
						}
						return out
					}
					got := run()
					lethe.SetPruneVectorScans(c, false)
					exact := run()
					lethe.SetPruneVectorScans(c, true)
					lethe.SetUseIndexes(c, false)
					scanned := run()
					lethe.SetUseIndexes(c, true)
					require.Equal(t, exact, got, "round %d: %s", round, text)
					// (A scan refuses the query when any item's score is
					// beyond float32's range, JSON having no Infinity, where
					// the index projects the top items' alone.)
					if len(scanned) != 1 || !strings.Contains(scanned[0], "cannot represent") {
						require.Equal(t, scanned, got, "round %d: %s", round, text)
					}
				}
				t.Logf("dims %d: %d items pruned in 12 queries", dims, pruned)
				if kind == "random" && lethe.FastVectors() {
					assert.Greater(t, pruned, 12*100, "most items pruned")
				}
			})
		}
	}
}

// randomVec returns dims standard normal values times scale, each a float32.
func randomVec(rng *rand.Rand, dims int, scale float64) []float64 {
	v := make([]float64, dims)
	for i := range v {
		v[i] = float64(float32(rng.NormFloat64() * scale))
	}
	return v
}

// jsonVec writes v as a JSON array of float32 values.
func jsonVec(v []float64) string {
	b := []byte{'['}
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, x, 'g', -1, 32)
	}
	return string(append(b, ']'))
}

// oneVectorProps is a container "c" partitioned by /pk whose items' "v" is a
// vector of dims elements of typ, compared by dist, indexed by an index of
// type index. Items never expire but by their own ttl.
func oneVectorProps(typ lethe.VectorDataType, dist lethe.VectorDistanceFunction, dims int, index lethe.VectorIndexType) lethe.ContainerProperties {
	return lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}},
		VectorEmbeddingPolicy: &lethe.VectorEmbeddingPolicy{VectorEmbeddings: []lethe.VectorEmbedding{
			{Path: "/v", DataType: typ, DistanceFunction: dist, Dimensions: uint32(dims)}}},
		IndexingPolicy: &lethe.IndexingPolicy{VectorIndexes: []lethe.VectorIndex{{Path: "/v", Type: index}}},
	}
}
