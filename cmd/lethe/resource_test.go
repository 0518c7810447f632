package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lethedb/lethe"
)

// TestResourceKeepsEveryProperty: a container's properties come back from
// their export resource as they were, every field of ContainerProperties
// and IndexingPolicy set, so that a field lethe gains cannot be dropped
// by export and import unnoticed (set it here, and map it in resource.go).
func TestResourceKeepsEveryProperty(t *testing.T) {
	p := lethe.ContainerProperties{
		ID:                     "c",
		DefaultTimeToLive:      100,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}, Kind: lethe.PartitionKeyKindHash, Version: 2},
		IndexingPolicy: &lethe.IndexingPolicy{
			IndexingMode:     lethe.IndexingModeConsistent,
			IncludedPaths:    []lethe.IndexPath{{Path: "/*"}},
			ExcludedPaths:    []lethe.IndexPath{{Path: "/u/*"}},
			CompositeIndexes: [][]lethe.CompositeIndex{{{Path: "/a"}, {Path: "/b", Order: "descending"}}},
			VectorIndexes:    []lethe.VectorIndex{{Path: "/v", Type: lethe.VectorIndexTypeFlat}},
			FullTextIndexes:  []lethe.FullTextIndex{{Path: "/text"}},
			SpatialIndexes:   []lethe.SpatialIndex{{Path: "/loc/?", Types: []lethe.SpatialType{lethe.SpatialPoint}, BoundingBox: &lethe.BoundingBox{Xmin: -10, Ymin: -10, Xmax: 10, Ymax: 10}}},
		},
		Throughput:             500,
		AutoscaleMaxThroughput: 4000,
		ChangeFeedPolicy:       &lethe.ChangeFeedPolicy{MaxChanges: 10, MaxBytes: 1000},
		VectorEmbeddingPolicy: &lethe.VectorEmbeddingPolicy{VectorEmbeddings: []lethe.VectorEmbedding{{Path: "/v",
			DataType: lethe.VectorDataTypeFloat32, DistanceFunction: lethe.VectorDistanceFunctionCosine, Dimensions: 3}}},
		FullTextPolicy:   &lethe.FullTextPolicy{DefaultLanguage: "en-US", FullTextPaths: []lethe.FullTextPath{{Path: "/text", Language: "en-US"}}},
		GeospatialConfig: &lethe.GeospatialConfig{Type: lethe.GeospatialGeometry},
		UniqueKeyPolicy:  &lethe.UniqueKeyPolicy{UniqueKeys: []lethe.UniqueKey{{Paths: []string{"/email"}}}},
	}
	for _, v := range []any{p, *p.IndexingPolicy} {
		rv := reflect.ValueOf(v)
		for i := range rv.NumField() {
			if rv.Field(i).IsZero() {
				t.Fatalf("%s.%s is not set in this test: set it, and keep it in resource.go", rv.Type().Name(), rv.Type().Field(i).Name)
			}
		}
	}
	r, feed := toResource(p)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back containerResource
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got := back.properties(feed, p.Throughput, p.AutoscaleMaxThroughput)
	if !reflect.DeepEqual(got, p) {
		t.Errorf("through %s:\n got %+v\nwant %+v", b, got, p)
	}
}
