package lethe_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vectorProps is a container with two vector paths, two text paths and an
// index on each.
func vectorProps(id string) lethe.ContainerProperties {
	return lethe.ContainerProperties{
		ID:                     id,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}},
		VectorEmbeddingPolicy: &lethe.VectorEmbeddingPolicy{VectorEmbeddings: []lethe.VectorEmbedding{
			{Path: "/embedding", DataType: lethe.VectorDataTypeFloat32, DistanceFunction: lethe.VectorDistanceFunctionCosine, Dimensions: 3},
			{Path: "/doc/vec", DataType: lethe.VectorDataTypeInt8, DistanceFunction: lethe.VectorDistanceFunctionEuclidean, Dimensions: 1024},
		}},
		FullTextPolicy: &lethe.FullTextPolicy{DefaultLanguage: "en-US", FullTextPaths: []lethe.FullTextPath{
			{Path: "/title", Language: "en-US"}, {Path: "/body", Language: "fr-FR"},
		}},
		IndexingPolicy: &lethe.IndexingPolicy{
			IndexingMode:    lethe.IndexingModeConsistent,
			ExcludedPaths:   []lethe.IndexPath{{Path: "/embedding/*"}},
			VectorIndexes:   []lethe.VectorIndex{{Path: "/embedding", Type: lethe.VectorIndexTypeFlat}, {Path: "/doc/vec", Type: lethe.VectorIndexTypeDiskANN}},
			FullTextIndexes: []lethe.FullTextIndex{{Path: "/title"}, {Path: "/body"}},
		},
	}
}

// TestSearchPolicyRules: the vector and full-text policies Cosmos DB accepts
// and the ones it refuses, each refusal a bad request naming what was wrong
// and creating nothing.
func TestSearchPolicyRules(t *testing.T) {
	t.Parallel()
	type change func(p *lethe.ContainerProperties)
	emb := func(f func(e *lethe.VectorEmbedding)) change {
		return func(p *lethe.ContainerProperties) { f(&p.VectorEmbeddingPolicy.VectorEmbeddings[0]) }
	}
	vindex := func(f func(v *lethe.VectorIndex)) change {
		return func(p *lethe.ContainerProperties) { f(&p.IndexingPolicy.VectorIndexes[0]) }
	}
	text := func(f func(fp *lethe.FullTextPolicy)) change {
		return func(p *lethe.ContainerProperties) { f(p.FullTextPolicy) }
	}
	cases := []struct {
		name   string
		change change
		bad    string // a fragment of the refusal; "" if accepted
	}{
		{"as given", func(*lethe.ContainerProperties) {}, ""},
		{"float16", emb(func(e *lethe.VectorEmbedding) { e.DataType = lethe.VectorDataTypeFloat16 }), ""},
		{"uint8", emb(func(e *lethe.VectorEmbedding) { e.DataType = lethe.VectorDataTypeUint8 }), ""},
		{"dot product", emb(func(e *lethe.VectorEmbedding) { e.DistanceFunction = lethe.VectorDistanceFunctionDotProduct }), ""},
		{"data type any case", emb(func(e *lethe.VectorEmbedding) { e.DataType = "Float32" }), ""},
		{"unknown data type", emb(func(e *lethe.VectorEmbedding) { e.DataType = "float64" }), `the data type "float64"`},
		{"unknown distance", emb(func(e *lethe.VectorEmbedding) { e.DistanceFunction = "manhattan" }), `the distance function "manhattan"`},
		{"embedding path without slash", emb(func(e *lethe.VectorEmbedding) { e.Path = "embedding" }), `path "embedding" is invalid`},
		{"embedding path wildcard", emb(func(e *lethe.VectorEmbedding) { e.Path = "/embedding/*" }), "wildcards"},
		{"embedding path in an array", emb(func(e *lethe.VectorEmbedding) { e.Path = "/items/[]/vec" }), "arrays"},
		{"embedding path empty", emb(func(e *lethe.VectorEmbedding) { e.Path = "" }), `path "" is invalid`},
		{"embedding path twice", func(p *lethe.ContainerProperties) {
			p.VectorEmbeddingPolicy.VectorEmbeddings[1].Path = "/embedding"
		}, `lists the path "/embedding" twice`},
		{"flat at 505 dimensions", emb(func(e *lethe.VectorEmbedding) { e.Dimensions = 505 }), ""},
		{"flat above 505 dimensions", emb(func(e *lethe.VectorEmbedding) { e.Dimensions = 506 }), "at most 505 dimensions"},
		{"flat by default dimensions", emb(func(e *lethe.VectorEmbedding) { e.Dimensions = 0 }), "the path's have 1536"},
		{"diskANN at 4096 dimensions", func(p *lethe.ContainerProperties) {
			p.VectorEmbeddingPolicy.VectorEmbeddings[1].Dimensions = 4096
		}, ""},
		{"diskANN above 4096 dimensions", func(p *lethe.ContainerProperties) {
			p.VectorEmbeddingPolicy.VectorEmbeddings[1].Dimensions = 4097
		}, "at most 4096 dimensions"},
		{"quantizedFlat above 4096 dimensions", func(p *lethe.ContainerProperties) {
			p.VectorEmbeddingPolicy.VectorEmbeddings[1].Dimensions = 5000
			p.IndexingPolicy.VectorIndexes[1].Type = lethe.VectorIndexTypeQuantizedFlat
		}, "quantizedFlat, which takes vectors of at most 4096"},
		{"no index, many dimensions", func(p *lethe.ContainerProperties) {
			p.VectorEmbeddingPolicy.VectorEmbeddings[1].Dimensions = 16000
			p.IndexingPolicy.VectorIndexes = p.IndexingPolicy.VectorIndexes[:1]
		}, ""},
		{"index type any case", vindex(func(v *lethe.VectorIndex) { v.Type = "QUANTIZEDFLAT" }), ""},
		{"unknown index type", vindex(func(v *lethe.VectorIndex) { v.Type = "hnsw" }), `the type "hnsw"`},
		{"vector index off the policy", vindex(func(v *lethe.VectorIndex) { v.Path = "/other" }), `Vector Indexing Policy's path::\/other not matching in Embedding's path: the vector index path "/other" is not a path of the container's vector embedding policy`},
		{"nested vector index off the policy", vindex(func(v *lethe.VectorIndex) { v.Path = "/a/b" }), `Vector Indexing Policy's path::\/a\/b not matching in Embedding's path`},
		{"vector index without a policy", func(p *lethe.ContainerProperties) { p.VectorEmbeddingPolicy = nil }, `vector index path "/embedding" is not a path`},
		{"vector index twice", func(p *lethe.ContainerProperties) {
			p.IndexingPolicy.VectorIndexes[1].Path = "/embedding"
		}, `vector index path "/embedding" twice`},
		{"vector path left in the range index", func(p *lethe.ContainerProperties) { p.IndexingPolicy.ExcludedPaths = nil }, ""},
		{"policies without indexes", func(p *lethe.ContainerProperties) { p.IndexingPolicy = nil }, ""},
		{"indexes with mode none", func(p *lethe.ContainerProperties) {
			p.IndexingPolicy.IndexingMode = lethe.IndexingModeNone
			p.IndexingPolicy.ExcludedPaths = nil
		}, "indexing mode is none"},
		{"every preview language", text(func(fp *lethe.FullTextPolicy) {
			for _, l := range []string{"de-DE", "es-ES", "fr-FR", "it-IT", "pt-PT", "pt-BR"} {
				fp.FullTextPaths = append(fp.FullTextPaths, lethe.FullTextPath{Path: "/" + l, Language: l})
			}
		}), ""},
		{"language any case", text(func(fp *lethe.FullTextPolicy) { fp.DefaultLanguage = "en-us" }), ""},
		{"unknown default language", text(func(fp *lethe.FullTextPolicy) { fp.DefaultLanguage = "nl-NL" }), `default language "nl-NL" is not supported`},
		{"unknown path language", text(func(fp *lethe.FullTextPolicy) { fp.FullTextPaths[1].Language = "ja-JP" }), `the full-text path "/body" has the language "ja-JP"`},
		{"text path wildcard", text(func(fp *lethe.FullTextPolicy) { fp.FullTextPaths[0].Path = "/*" }), "wildcards"},
		{"text path twice", text(func(fp *lethe.FullTextPolicy) { fp.FullTextPaths[1].Path = "/title" }), `lists the path "/title" twice`},
		{"text index off the policy", func(p *lethe.ContainerProperties) {
			p.IndexingPolicy.FullTextIndexes = append(p.IndexingPolicy.FullTextIndexes, lethe.FullTextIndex{Path: "/summary"})
		}, `full-text index path "/summary" is not a path of the container's full-text policy`},
		{"text index without a policy", func(p *lethe.ContainerProperties) { p.FullTextPolicy = nil }, `full-text index path "/title" is not a path`},
		{"text index twice", func(p *lethe.ContainerProperties) {
			p.IndexingPolicy.FullTextIndexes[1].Path = "/title"
		}, `full-text index path "/title" twice`},
	}
	s, _ := newStore(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := vectorProps(fmt.Sprint("c", i))
			tc.change(&p)
			_, err := s.CreateContainer(ctx, p)
			if tc.bad == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, lethe.ErrBadRequest)
			assert.Contains(t, err.Error(), tc.bad)
			_, err = s.Container(p.ID)
			assert.ErrorIs(t, err, lethe.ErrNotFound, "a refused container is not created")
		})
	}
}

// TestSearchPolicyDefaults: what a policy leaves out is filled in as Cosmos
// DB documents it, and names in any case are kept in their canonical form.
func TestSearchPolicyDefaults(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c",
		VectorEmbeddingPolicy: &lethe.VectorEmbeddingPolicy{VectorEmbeddings: []lethe.VectorEmbedding{{Path: "/v"}, {Path: "/w", DataType: "INT8", DistanceFunction: "DotProduct", Dimensions: 8}}},
		FullTextPolicy:        &lethe.FullTextPolicy{FullTextPaths: []lethe.FullTextPath{{Path: "/t"}, {Path: "/u", Language: "pt-br"}}},
		IndexingPolicy:        &lethe.IndexingPolicy{VectorIndexes: []lethe.VectorIndex{{Path: "/w", Type: "diskann"}}},
	})
	got, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, &lethe.VectorEmbeddingPolicy{VectorEmbeddings: []lethe.VectorEmbedding{
		{Path: "/v", DataType: lethe.VectorDataTypeFloat32, DistanceFunction: lethe.VectorDistanceFunctionCosine, Dimensions: 1536},
		{Path: "/w", DataType: lethe.VectorDataTypeInt8, DistanceFunction: lethe.VectorDistanceFunctionDotProduct, Dimensions: 8},
	}}, got.VectorEmbeddingPolicy)
	assert.Equal(t, &lethe.FullTextPolicy{DefaultLanguage: "en-US", FullTextPaths: []lethe.FullTextPath{{Path: "/t", Language: "en-US"}, {Path: "/u", Language: "pt-BR"}}}, got.FullTextPolicy)
	assert.Equal(t, []lethe.VectorIndex{{Path: "/w", Type: lethe.VectorIndexTypeDiskANN}}, got.IndexingPolicy.VectorIndexes)

	got.VectorEmbeddingPolicy.VectorEmbeddings[0].Path = "/changed"
	got.FullTextPolicy.FullTextPaths[0].Path = "/changed"
	got.IndexingPolicy.VectorIndexes[0].Path = "/changed"
	again, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, "/v", again.VectorEmbeddingPolicy.VectorEmbeddings[0].Path, "Read returns a copy")
	assert.Equal(t, "/t", again.FullTextPolicy.FullTextPaths[0].Path, "Read returns a copy")
	assert.Equal(t, "/w", again.IndexingPolicy.VectorIndexes[0].Path, "Read returns a copy")
}

// TestSearchPolicyReplace: Replace may add and remove vector paths and
// change the full-text policy, but not change a vector embedding's settings
// or a vector index's type; a refused change leaves the container as it was.
func TestSearchPolicyReplace(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, vectorProps("c"))
	before, err := c.Read(ctx)
	require.NoError(t, err)

	refused := []struct {
		name   string
		change func(p *lethe.ContainerProperties)
		msg    string
	}{
		{"dimensions", func(p *lethe.ContainerProperties) { p.VectorEmbeddingPolicy.VectorEmbeddings[0].Dimensions = 4 },
			`the vector embedding of path "/embedding" cannot be changed (from float32, cosine, 3 dimensions to float32, cosine, 4)`},
		{"data type", func(p *lethe.ContainerProperties) {
			p.VectorEmbeddingPolicy.VectorEmbeddings[1].DataType = lethe.VectorDataTypeUint8
		},
			`the vector embedding of path "/doc/vec" cannot be changed`},
		{"distance", func(p *lethe.ContainerProperties) {
			p.VectorEmbeddingPolicy.VectorEmbeddings[0].DistanceFunction = lethe.VectorDistanceFunctionEuclidean
		}, `the vector embedding of path "/embedding" cannot be changed`},
		{"index type", func(p *lethe.ContainerProperties) {
			p.IndexingPolicy.VectorIndexes[1].Type = lethe.VectorIndexTypeQuantizedFlat
		},
			`Vector Indexing Policy cannot be changed in Collection Replace: the vector index of path "/doc/vec" cannot be changed (from diskANN to quantizedFlat)`},
		// The change is what the service names, before the embedding
		// policy left out (as @azure/cosmos's vector policy spec does).
		{"index type, embedding policy left out", func(p *lethe.ContainerProperties) {
			p.IndexingPolicy.VectorIndexes[1].Type = lethe.VectorIndexTypeQuantizedFlat
			p.VectorEmbeddingPolicy = nil
		},
			`Vector Indexing Policy cannot be changed in Collection Replace: the vector index of path "/doc/vec" cannot be changed (from diskANN to quantizedFlat)`},
		{"invalid", func(p *lethe.ContainerProperties) { p.FullTextPolicy.DefaultLanguage = "xx" }, `default language "xx"`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.Read(ctx)
			require.NoError(t, err)
			tc.change(&p)
			err = c.Replace(ctx, p)
			require.ErrorIs(t, err, lethe.ErrBadRequest)
			assert.Contains(t, err.Error(), tc.msg)
			got, err := c.Read(ctx)
			require.NoError(t, err)
			assert.Equal(t, before, got)
		})
	}

	// Remove the embedding at /embedding with its index, then add it back
	// changed; add a text path; drop the other vector index.
	p := before
	p.VectorEmbeddingPolicy = &lethe.VectorEmbeddingPolicy{VectorEmbeddings: before.VectorEmbeddingPolicy.VectorEmbeddings[1:]}
	p.IndexingPolicy.VectorIndexes = before.IndexingPolicy.VectorIndexes[1:]
	require.NoError(t, c.Replace(ctx, p))
	p, err = c.Read(ctx)
	require.NoError(t, err)
	p.VectorEmbeddingPolicy.VectorEmbeddings = append(p.VectorEmbeddingPolicy.VectorEmbeddings,
		lethe.VectorEmbedding{Path: "/embedding", DataType: lethe.VectorDataTypeUint8, DistanceFunction: lethe.VectorDistanceFunctionDotProduct, Dimensions: 600})
	p.IndexingPolicy.VectorIndexes = []lethe.VectorIndex{{Path: "/embedding", Type: lethe.VectorIndexTypeQuantizedFlat}}
	p.FullTextPolicy.FullTextPaths = append(p.FullTextPolicy.FullTextPaths, lethe.FullTextPath{Path: "/summary", Language: "de-DE"})
	p.FullTextPolicy.DefaultLanguage = "es-ES"
	require.NoError(t, c.Replace(ctx, p))
	got, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, p, got)

	// Both policies can go.
	p.VectorEmbeddingPolicy, p.FullTextPolicy, p.IndexingPolicy = nil, nil, nil
	require.NoError(t, c.Replace(ctx, p))
	got, err = c.Read(ctx)
	require.NoError(t, err)
	assert.Nil(t, got.VectorEmbeddingPolicy)
	assert.Nil(t, got.FullTextPolicy)
}

// TestSearchPolicyDurable: the policies are container properties, kept by
// the log and by snapshots, and a replacement of them too.
func TestSearchPolicyDurable(t *testing.T) {
	t.Parallel()
	for _, checkpoint := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint=%v", checkpoint), func(t *testing.T) {
			dir := t.TempDir()
			clock := lethe.NewManualClock(t0)
			s := openDurable(t, dir, clock)
			c := mustContainer(t, s, vectorProps("kept"))
			replaced := mustContainer(t, s, vectorProps("replaced"))
			p, err := replaced.Read(ctx)
			require.NoError(t, err)
			p.FullTextPolicy.FullTextPaths = p.FullTextPolicy.FullTextPaths[:1]
			p.IndexingPolicy.FullTextIndexes = p.IndexingPolicy.FullTextIndexes[:1]
			p.VectorEmbeddingPolicy.VectorEmbeddings = append(p.VectorEmbeddingPolicy.VectorEmbeddings, lethe.VectorEmbedding{Path: "/third", Dimensions: 2})
			require.NoError(t, replaced.Replace(ctx, p))
			if checkpoint {
				require.NoError(t, s.Checkpoint(ctx))
			}
			wantKept, err := c.Read(ctx)
			require.NoError(t, err)
			wantReplaced, err := replaced.Read(ctx)
			require.NoError(t, err)
			require.NoError(t, s.Close())

			s = openDurable(t, dir, clock)
			defer s.Close()
			if checkpoint {
				assert.NotEmpty(t, s.Recovery().Snapshot)
			}
			for _, want := range []lethe.ContainerProperties{wantKept, wantReplaced} {
				c, err := s.Container(want.ID)
				require.NoError(t, err)
				got, err := c.Read(ctx)
				require.NoError(t, err)
				assert.Equal(t, want, got)
			}
			assert.Len(t, wantReplaced.VectorEmbeddingPolicy.VectorEmbeddings, 3)
			assert.Len(t, wantReplaced.FullTextPolicy.FullTextPaths, 1)
		})
	}
}

// TestDurableOpensStoreWithoutSearchPolicies: testdata/store-v1 was written
// by lethe before containers had vector and full-text policies (a snapshot
// holding container "snap", a log creating and replacing "logged"). It
// opens, its containers have no such policies, and they can be given some.
func TestDurableOpensStoreWithoutSearchPolicies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyDir(t, "testdata/store-v1", dir)
	clock := lethe.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := openDurable(t, dir, clock)
	snap, err := s.Container("snap")
	require.NoError(t, err)
	p, err := snap.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, lethe.ContainerProperties{ID: "snap", DefaultTimeToLive: lethe.TTLNever,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}, Kind: lethe.PartitionKeyKindHash, Version: 2},
		IndexingPolicy: &lethe.IndexingPolicy{IndexingMode: lethe.IndexingModeConsistent, ExcludedPaths: []lethe.IndexPath{{Path: "/big/*"}},
			CompositeIndexes: [][]lethe.CompositeIndex{{{Path: "/a"}, {Path: "/b", Order: lethe.CompositeIndexDescending}}}},
		Throughput:       400,
		ChangeFeedPolicy: &lethe.ChangeFeedPolicy{MaxChanges: 100, MaxBytes: lethe.DefaultChangeFeedMaxBytes},
	}, p)
	logged, err := s.Container("logged")
	require.NoError(t, err)
	lp, err := logged.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, lethe.TTL(7200), lp.DefaultTimeToLive)
	assert.Nil(t, lp.VectorEmbeddingPolicy)
	assert.Nil(t, lp.FullTextPolicy)
	for id, c := range map[string]*lethe.Container{"s1": snap, "l1": logged} {
		pk := lethe.NewPartitionKey()
		if strings.HasPrefix(id, "s") {
			pk = pkS("p")
		}
		_, err := c.ReadItem(ctx, pk, id, nil)
		assert.NoError(t, err, id)
	}

	v := vectorProps("snap")
	p.VectorEmbeddingPolicy, p.FullTextPolicy = v.VectorEmbeddingPolicy, v.FullTextPolicy
	p.IndexingPolicy.VectorIndexes, p.IndexingPolicy.FullTextIndexes = v.IndexingPolicy.VectorIndexes, v.IndexingPolicy.FullTextIndexes
	require.NoError(t, snap.Replace(ctx, p))
	want, err := snap.Read(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s = openDurable(t, dir, clock)
	defer s.Close()
	snap, err = s.Container("snap")
	require.NoError(t, err)
	got, err := snap.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.NotNil(t, got.VectorEmbeddingPolicy)
}

// TestFullTextQueries: the full-text functions analyze each path's text in
// the language the container's full-text policy gives it (the policy's
// default for paths it does not list), on every way a query is evaluated
// (a scan, an index's candidates, an ordered walk), and never return an
// expired item.
func TestFullTextQueries(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	props := vectorProps("texts")
	props.DefaultTimeToLive = lethe.TTLNever
	c := mustContainer(t, s, props)
	for _, doc := range []string{
		`{"id":"1","pk":"a","n":1,"title":"Searching the archive","body":"Les voitures rouges","note":"red cars"}`,
		`{"id":"2","pk":"a","n":2,"title":"A search engine","body":"Une voiture","note":"a red car"}`,
		`{"id":"3","pk":"b","n":3,"title":"Searches","body":"voitures","ttl":60}`,
	} {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKeyString(doc[16:17]), []byte(doc), nil)
		require.NoError(t, err)
	}
	run := func(where string) []string {
		t.Helper()
		var out []string
		for _, q := range []string{
			`SELECT VALUE c.id FROM c WHERE ` + where,
			`SELECT TOP 10 VALUE c.id FROM c WHERE c.pk = "a" AND (` + where + `)`,
			`SELECT VALUE c.id FROM c WHERE ` + where + ` ORDER BY c.n`,
		} {
			got, _ := queryAll(t, c, q, nil, lethe.NewPartitionKey())
			for i := range got {
				got[i] = strings.Trim(got[i], `"`)
			}
			if strings.HasPrefix(q, "SELECT TOP") {
				var all []string
				for _, id := range out {
					if id != "3" {
						all = append(all, id)
					}
				}
				assert.Equal(t, all, got, q)
				continue
			}
			if out == nil {
				out = got
			}
			assert.Equal(t, out, got, q)
		}
		return out
	}
	// /title is English: stemmed, stop words removed.
	assert.Equal(t, []string{"1", "2", "3"}, run(`FullTextContains(c.title, "SEARCHED")`))
	assert.Empty(t, run(`FullTextContains(c.title, "the")`))
	// /body is French: folded, not stemmed.
	assert.Equal(t, []string{"1", "3"}, run(`FullTextContains(c.body, "Voitures")`))
	assert.Equal(t, []string{"2"}, run(`FullTextContainsAll(c.body, "voiture")`))
	// /note is not in the policy: its default language, English.
	assert.Equal(t, []string{"1", "2"}, run(`FullTextContainsAny(c.note, "car", "boat")`))

	// A new default language applies to the paths the policy does not
	// list.
	props, err := c.Read(ctx)
	require.NoError(t, err)
	props.FullTextPolicy.DefaultLanguage = "es-ES"
	require.NoError(t, c.Replace(ctx, props))
	assert.Equal(t, []string{"2"}, run(`FullTextContainsAny(c.note, "car", "boat")`))
	assert.Equal(t, []string{"1", "2", "3"}, run(`FullTextContains(c.title, "search")`))

	// An expired item is never a result.
	clock.Advance(time.Minute)
	assert.Equal(t, []string{"1", "2"}, run(`FullTextContains(c.title, "search")`))
}

// TestVectorIndexesRefusedOnSharedThroughput: Cosmos DB has no vector
// indexing in a database with shared throughput; lethe refuses a vector
// index there (create, replace, and turning shared throughput on under
// one), and changes nothing.
func TestVectorIndexesRefusedOnSharedThroughput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vectors := &lethe.VectorEmbeddingPolicy{VectorEmbeddings: []lethe.VectorEmbedding{{Path: "/v", DataType: lethe.VectorDataTypeFloat32, DistanceFunction: lethe.VectorDistanceFunctionCosine, Dimensions: 3}}}
	indexed := lethe.ContainerProperties{ID: "c", VectorEmbeddingPolicy: vectors,
		IndexingPolicy: &lethe.IndexingPolicy{VectorIndexes: []lethe.VectorIndex{{Path: "/v", Type: lethe.VectorIndexTypeFlat}}}}

	shared, err := lethe.Open(&lethe.Options{Throughput: 400})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	if _, err := shared.CreateContainer(ctx, indexed); !errors.Is(err, lethe.ErrBadRequest) || !strings.Contains(err.Error(), "shared throughput") {
		t.Fatalf("a vector index in a shared-throughput store: %v", err)
	}
	if ids := shared.ContainerIDs(); len(ids) != 0 {
		t.Fatalf("created %v", ids)
	}
	plain := indexed
	plain.IndexingPolicy = nil
	c, err := shared.CreateContainer(ctx, plain) // the embedding policy alone is fine
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Replace(ctx, indexed); !errors.Is(err, lethe.ErrBadRequest) {
		t.Fatalf("adding a vector index by replace: %v", err)
	}
	if p, _ := c.Read(ctx); p.IndexingPolicy != nil && len(p.IndexingPolicy.VectorIndexes) > 0 {
		t.Fatal("the refused replace added the index")
	}

	own, err := lethe.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if _, err := own.CreateContainer(ctx, indexed); err != nil {
		t.Fatal(err)
	}
	if err := own.ReplaceThroughput(ctx, 400, 0); !errors.Is(err, lethe.ErrBadRequest) || own.SharedThroughput() {
		t.Fatalf("shared throughput over a container with a vector index: %v (shared %v)", err, own.SharedThroughput())
	}
	if err := own.ReplaceThroughput(ctx, 0, 0); err != nil {
		t.Fatalf("removing shared throughput: %v", err)
	}
}

// TestVectorIndexSharedThroughputRace: a replace that adds a vector index
// and a ReplaceThroughput that turns shared throughput on, run at the same
// time, never both succeed: the store never ends with both.
func TestVectorIndexSharedThroughputRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vectors := &lethe.VectorEmbeddingPolicy{VectorEmbeddings: []lethe.VectorEmbedding{{Path: "/v", DataType: lethe.VectorDataTypeFloat32, DistanceFunction: lethe.VectorDistanceFunctionCosine, Dimensions: 3}}}
	plain := lethe.ContainerProperties{ID: "c", VectorEmbeddingPolicy: vectors}
	indexed := plain
	indexed.IndexingPolicy = &lethe.IndexingPolicy{VectorIndexes: []lethe.VectorIndex{{Path: "/v", Type: lethe.VectorIndexTypeFlat}}}
	for i := range 300 {
		s, err := lethe.Open(nil)
		if err != nil {
			t.Fatal(err)
		}
		var c *lethe.Container
		if i%2 == 0 { // a replace that adds the index
			if c, err = s.CreateContainer(ctx, plain); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		var errIndex, errShared error
		wg.Go(func() {
			if c != nil {
				errIndex = c.Replace(ctx, indexed)
			} else { // a create with the index
				c, errIndex = s.CreateContainer(ctx, indexed)
			}
		})
		wg.Go(func() { errShared = s.ReplaceThroughput(ctx, 400, 0) })
		wg.Wait()
		if errIndex == nil && errShared == nil {
			t.Fatalf("run %d: both the vector index and shared throughput were accepted", i)
		}
		if c, err := s.Container("c"); err == nil {
			if p, _ := c.Read(ctx); s.SharedThroughput() && p.IndexingPolicy != nil && len(p.IndexingPolicy.VectorIndexes) > 0 {
				t.Fatalf("run %d: the store has shared throughput and a container with a vector index", i)
			}
		}
		s.Close()
	}
}

// TestFullTextLanguageLCID: a full-text policy may name a language by its
// Windows locale id, as the service takes it ("1033" for en-US): kept as
// given, and the text analyzed in that language; an LCID of a language
// lethe does not analyze is a 400.
func TestFullTextLanguageLCID(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "lcid",
		FullTextPolicy: &lethe.FullTextPolicy{DefaultLanguage: "1033", FullTextPaths: []lethe.FullTextPath{{Path: "/title"}, {Path: "/body", Language: "1036"}}}})
	got, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, &lethe.FullTextPolicy{DefaultLanguage: "1033", FullTextPaths: []lethe.FullTextPath{{Path: "/title", Language: "1033"}, {Path: "/body", Language: "1036"}}}, got.FullTextPolicy)
	_, err = c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(`{"id":"1","title":"Searching the archive","body":"Les voitures rouges"}`), nil)
	require.NoError(t, err)
	count := func(where string) []string {
		got, _ := queryAll(t, c, "SELECT VALUE COUNT(1) FROM c WHERE "+where, nil, lethe.NewPartitionKey())
		return got
	}
	assert.Equal(t, []string{"1"}, count(`FullTextContains(c.title, "searched")`), "1033 is English: stemmed")
	assert.Equal(t, []string{"0"}, count(`FullTextContains(c.body, "voiture")`), "1036 is French: not stemmed as English")
	assert.Equal(t, []string{"1"}, count(`FullTextContains(c.body, "Voitures")`))

	_, err = s.CreateContainer(ctx, lethe.ContainerProperties{ID: "bad", FullTextPolicy: &lethe.FullTextPolicy{DefaultLanguage: "1041"}})
	require.ErrorIs(t, err, lethe.ErrBadRequest, "1041 (ja-JP) is not analyzed")
}
