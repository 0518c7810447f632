package lethe

import (
	"math"
	"slices"

	"github.com/lethedb/lethe/internal/geo"
)

// GeospatialConfig says how a container reads its GeoJSON: as Geography
// (on the round earth, the default) or as Geometry (in the plane, each
// spatial index with a BoundingBox).
type GeospatialConfig struct {
	Type GeospatialType `json:"type"`
}

// GeospatialType is Geography or Geometry.
type GeospatialType string

// The geospatial types.
const (
	GeospatialGeography GeospatialType = "Geography"
	GeospatialGeometry  GeospatialType = "Geometry"
)

// SpatialType is a GeoJSON type a spatial index indexes.
type SpatialType string

// The GeoJSON types of a spatial index.
const (
	SpatialPoint        SpatialType = "Point"
	SpatialLineString   SpatialType = "LineString"
	SpatialPolygon      SpatialType = "Polygon"
	SpatialMultiPolygon SpatialType = "MultiPolygon"
)

// SpatialIndex indexes the GeoJSON shapes at the paths Path covers ("/*",
// "/location/?", "/places/*"), for the ST_DISTANCE, ST_WITHIN and
// ST_INTERSECTS filters of queries (spatialindex.go). As in Cosmos DB, an
// index of any of the Types indexes every type. BoundingBox is required
// when the container's GeospatialConfig is Geometry, and refused when it is
// Geography.
type SpatialIndex struct {
	Path        string        `json:"path"`
	Types       []SpatialType `json:"types"`
	BoundingBox *BoundingBox  `json:"boundingBox,omitempty"`
}

// BoundingBox is the region of the plane a Geometry spatial index covers.
type BoundingBox struct {
	Xmin float64 `json:"xmin"`
	Ymin float64 `json:"ymin"`
	Xmax float64 `json:"xmax"`
	Ymax float64 `json:"ymax"`
}

// geoModel returns the model of the container's geospatialConfig.
func (p *ContainerProperties) geoModel() geo.Model {
	if p.GeospatialConfig != nil && p.GeospatialConfig.Type == GeospatialGeometry {
		return geo.Geometry
	}
	return geo.Geography
}

// normalizeSpatialPolicy checks p's geospatialConfig and spatial indexes
// as Cosmos DB does, and gives their names their canonical spellings: a
// Geometry container's spatial indexes need a bounding box, a Geography
// one's may not have one. p's policies are its own copies.
func normalizeSpatialPolicy(p *ContainerProperties) *Error {
	typ := GeospatialGeography
	if gc := p.GeospatialConfig; gc != nil {
		var ok bool
		if gc.Type, ok = canonical(gc.Type, GeospatialGeography, GeospatialGeometry); !ok {
			return badRequest("the geospatialConfig type %q is invalid: use Geography or Geometry", gc.Type)
		}
		typ = gc.Type
	}
	ip := p.IndexingPolicy
	if ip == nil || len(ip.SpatialIndexes) == 0 {
		return nil
	}
	if ip.IndexingMode == IndexingModeNone {
		return badRequest("a container whose indexing mode is none keeps no indexes: it cannot have spatial indexes")
	}
	seen := map[string]bool{}
	for i := range ip.SpatialIndexes {
		si := &ip.SpatialIndexes[i]
		if _, err := parseIndexPath(si.Path); err != nil {
			return err
		}
		if seen[si.Path] {
			return badRequest("the indexing policy lists the spatial index path %q twice", si.Path)
		}
		seen[si.Path] = true
		if si.Types == nil {
			si.Types = []SpatialType{}
		}
		for j, t := range si.Types {
			var ok bool
			if si.Types[j], ok = canonical(t, SpatialPoint, SpatialLineString, SpatialPolygon, SpatialMultiPolygon); !ok {
				return badRequest("the spatial index of path %q has the type %q: use Point, LineString, Polygon or MultiPolygon", si.Path, t)
			}
		}
		bb := si.BoundingBox
		switch {
		case typ == GeospatialGeometry && bb == nil:
			return badRequest("the spatial index of path %q has no boundingBox: a container whose geospatialConfig type is Geometry needs one for each spatial index", si.Path)
		case typ == GeospatialGeography && bb != nil:
			return badRequest("the spatial index of path %q has a boundingBox: a container whose geospatialConfig type is Geography cannot have one (set the type to Geometry first)", si.Path)
		case bb != nil && !(bb.Xmin < bb.Xmax && bb.Ymin < bb.Ymax && finiteBox(bb)):
			return badRequest("the boundingBox of the spatial index of path %q is invalid: xmin must be less than xmax and ymin less than ymax", si.Path)
		}
	}
	return nil
}

// finiteBox reports whether bb's bounds are finite numbers.
func finiteBox(bb *BoundingBox) bool {
	for _, x := range []float64{bb.Xmin, bb.Ymin, bb.Xmax, bb.Ymax} {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
	}
	return true
}

// cloneSpatialPolicy makes p's geospatialConfig and spatial indexes copies
// of their own. p.IndexingPolicy is already p's own.
func cloneSpatialPolicy(p *ContainerProperties) {
	if gc := p.GeospatialConfig; gc != nil {
		c := *gc
		p.GeospatialConfig = &c
	}
	if ip := p.IndexingPolicy; ip != nil && ip.SpatialIndexes != nil {
		ip.SpatialIndexes = slices.Clone(ip.SpatialIndexes)
		for i := range ip.SpatialIndexes {
			si := &ip.SpatialIndexes[i]
			si.Types = slices.Clone(si.Types)
			if si.BoundingBox != nil {
				bb := *si.BoundingBox
				si.BoundingBox = &bb
			}
		}
	}
}
