package main

import (
	"encoding/json"

	"github.com/lethedb/lethe"
)

// containerResource is a container's properties as an export writes
// them: with the names of Cosmos DB's REST resource for a container (as
// cosmosrest renders one), without its system properties (_rid, _ts,
// _self, _etag and the like, which the server derives) or what lethe does
// not keep (automatic, conflictResolutionPolicy). What
// a container has outside its resource (throughput, lethe's change feed
// bounds) are members of the export's record beside it.
type containerResource struct {
	ID                    string                       `json:"id"`
	DefaultTTL            lethe.TTL                    `json:"defaultTtl,omitempty"`
	PartitionKey          *partitionKeyResource        `json:"partitionKey,omitempty"`
	IndexingPolicy        *indexingPolicyResource      `json:"indexingPolicy,omitempty"`
	VectorEmbeddingPolicy *lethe.VectorEmbeddingPolicy `json:"vectorEmbeddingPolicy,omitempty"`
	FullTextPolicy        *lethe.FullTextPolicy        `json:"fullTextPolicy,omitempty"`
	GeospatialConfig      *lethe.GeospatialConfig      `json:"geospatialConfig,omitempty"`
	UniqueKeyPolicy       *lethe.UniqueKeyPolicy       `json:"uniqueKeyPolicy,omitempty"`
}

// partitionKeyResource is a container's partitionKey.
type partitionKeyResource struct {
	Paths   []string               `json:"paths"`
	Kind    lethe.PartitionKeyKind `json:"kind,omitempty"`
	Version int                    `json:"version,omitempty"`
}

// indexingPolicyResource is a container's indexingPolicy.
type indexingPolicyResource struct {
	IndexingMode     lethe.IndexingMode       `json:"indexingMode,omitempty"`
	IncludedPaths    []lethe.IndexPath        `json:"includedPaths,omitempty"`
	ExcludedPaths    []lethe.IndexPath        `json:"excludedPaths,omitempty"`
	CompositeIndexes [][]lethe.CompositeIndex `json:"compositeIndexes,omitempty"`
	VectorIndexes    []lethe.VectorIndex      `json:"vectorIndexes,omitempty"`
	FullTextIndexes  []lethe.FullTextIndex    `json:"fullTextIndexes,omitempty"`
	SpatialIndexes   []lethe.SpatialIndex     `json:"spatialIndexes,omitempty"`
}

// changeFeedResource is lethe's change feed policy of a container: how
// many changes, and bytes of them, its feed keeps (absent: the default).
type changeFeedResource struct {
	MaxChanges int   `json:"maxChanges,omitempty"`
	MaxBytes   int64 `json:"maxBytes,omitempty"`
}

// toResource returns p's resource, and its change feed policy (nil:
// none).
func toResource(p lethe.ContainerProperties) (containerResource, *changeFeedResource) {
	r := containerResource{ID: p.ID, DefaultTTL: p.DefaultTimeToLive,
		VectorEmbeddingPolicy: p.VectorEmbeddingPolicy, FullTextPolicy: p.FullTextPolicy, GeospatialConfig: p.GeospatialConfig,
		UniqueKeyPolicy: p.UniqueKeyPolicy}
	if d := p.PartitionKeyDefinition; len(d.Paths) > 0 || d.Kind != "" || d.Version != 0 {
		r.PartitionKey = &partitionKeyResource{Paths: d.Paths, Kind: d.Kind, Version: d.Version}
	}
	if ip := p.IndexingPolicy; ip != nil {
		r.IndexingPolicy = &indexingPolicyResource{IndexingMode: ip.IndexingMode, IncludedPaths: ip.IncludedPaths,
			ExcludedPaths: ip.ExcludedPaths, CompositeIndexes: ip.CompositeIndexes, VectorIndexes: ip.VectorIndexes,
			FullTextIndexes: ip.FullTextIndexes, SpatialIndexes: ip.SpatialIndexes}
	}
	var feed *changeFeedResource
	if cf := p.ChangeFeedPolicy; cf != nil {
		feed = &changeFeedResource{MaxChanges: cf.MaxChanges, MaxBytes: cf.MaxBytes}
	}
	return r, feed
}

// properties returns the container's properties that r, its change feed
// policy feed and its throughput say.
func (r containerResource) properties(feed *changeFeedResource, throughput, autoscale int32) lethe.ContainerProperties {
	p := lethe.ContainerProperties{ID: r.ID, DefaultTimeToLive: r.DefaultTTL, Throughput: throughput, AutoscaleMaxThroughput: autoscale,
		VectorEmbeddingPolicy: r.VectorEmbeddingPolicy, FullTextPolicy: r.FullTextPolicy, GeospatialConfig: r.GeospatialConfig,
		UniqueKeyPolicy: r.UniqueKeyPolicy}
	if pk := r.PartitionKey; pk != nil {
		p.PartitionKeyDefinition = lethe.PartitionKeyDefinition{Paths: pk.Paths, Kind: pk.Kind, Version: pk.Version}
	}
	if ip := r.IndexingPolicy; ip != nil {
		p.IndexingPolicy = &lethe.IndexingPolicy{IndexingMode: ip.IndexingMode, IncludedPaths: ip.IncludedPaths,
			ExcludedPaths: ip.ExcludedPaths, CompositeIndexes: ip.CompositeIndexes, VectorIndexes: ip.VectorIndexes,
			FullTextIndexes: ip.FullTextIndexes, SpatialIndexes: ip.SpatialIndexes}
	}
	if feed != nil {
		p.ChangeFeedPolicy = &lethe.ChangeFeedPolicy{MaxChanges: feed.MaxChanges, MaxBytes: feed.MaxBytes}
	}
	return p
}

// containerOf reads the container of rec, an export's record of a
// container in the format of version: version 1 wrote
// lethe.ContainerProperties whole, with Go's names ("ID",
// "DefaultTimeToLive"); later ones a containerResource.
func containerOf(rec exportRecord, version int) (lethe.ContainerProperties, error) {
	if version == 1 {
		var p lethe.ContainerProperties
		err := json.Unmarshal(rec.Properties, &p)
		return p, err
	}
	var r containerResource
	if err := json.Unmarshal(rec.Properties, &r); err != nil {
		return lethe.ContainerProperties{}, err
	}
	return r.properties(rec.ChangeFeed, rec.Throughput, rec.AutoscaleMaxThroughput), nil
}
