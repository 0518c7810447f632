// Package geo is the geometry of lethe's spatial queries: GeoJSON Points,
// LineStrings, Polygons and MultiPolygons, checked as Cosmos DB checks them
// (Check), and the measures and predicates of the ST_ functions (Distance,
// Within, Intersects, Area) in the two models of a container's
// geospatialConfig: Geography, on the WGS-84 earth, and Geometry, in the
// plane.
//
// Geography: positions are [longitude, latitude] in degrees. Edges are
// geodesics of the sphere (Google's S2 library, github.com/golang/geo,
// decides containment, crossings and the closest points of two shapes), and
// a ring's interior is on its left: a ring given clockwise stands for the
// rest of the earth, as the service documents. Distances are then measured
// between those closest points on the WGS-84 ellipsoid (Vincenty's inverse
// formula), and areas on the ellipsoid through its authalic sphere: the
// service's published figures, to within 1e-6 (geo_test.go).
//
// Geometry: positions are [x, y] in the plane; distances and areas are
// Euclidean, in the units of the coordinates, and a ring's orientation does
// not matter.
//
// Every function takes shapes Check found valid; a query gives undefined
// for an invalid one before it gets here.
package geo

import (
	"math"
	"strconv"
)

// Kind is a GeoJSON geometry type.
type Kind uint8

// The GeoJSON types Cosmos DB stores and queries.
const (
	Point Kind = iota + 1
	LineString
	Polygon
	MultiPolygon
)

// String returns the GeoJSON name of k.
func (k Kind) String() string {
	switch k {
	case Point:
		return "Point"
	case LineString:
		return "LineString"
	case Polygon:
		return "Polygon"
	case MultiPolygon:
		return "MultiPolygon"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// KindOf returns the Kind a GeoJSON "type" names; ok is false for any
// other name (GeoJSON's names are case-sensitive).
func KindOf(name string) (k Kind, ok bool) {
	for k := Point; k <= MultiPolygon; k++ {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}

// Pos is a position: [longitude, latitude] in degrees for Geography, [x,
// y] for Geometry. A GeoJSON position's further elements (altitude) are
// not kept.
type Pos [2]float64

// A Ring is a closed line of a polygon: its first and last positions are
// the same.
type Ring []Pos

// A Shape is one GeoJSON geometry. A Point has one position in Line, a
// LineString its positions; a Polygon has one element in Polys (its rings,
// the outer first, then the holes), a MultiPolygon one per polygon.
type Shape struct {
	Kind  Kind
	Line  []Pos
	Polys [][]Ring

	sphere *sphereShape // the shape on the sphere, made once (sphere.go)
}

// Model says how coordinates are read: on the earth or in the plane.
type Model uint8

// The two models of a container's geospatialConfig.
const (
	Geography Model = iota
	Geometry
)

// Check returns "" for a valid shape, or the reason it is not, as
// ST_ISVALIDDETAILED words it. The service documents two reasons (the range
// of latitudes and the closing of a ring); the others are worded alike.
func (s *Shape) Check(m Model) string {
	for _, p := range s.positions() {
		if math.IsNaN(p[0]) || math.IsNaN(p[1]) || math.IsInf(p[0], 0) || math.IsInf(p[1], 0) {
			return "Coordinate values must be finite numbers."
		}
		if m == Geography {
			if p[1] < -90 || p[1] > 90 {
				return "Latitude values must be between -90 and 90 degrees."
			}
			if p[0] < -180 || p[0] > 180 {
				return "Longitude values must be between -180 and 180 degrees."
			}
		}
	}
	switch s.Kind {
	case Point:
		if len(s.Line) != 1 {
			return "The Point input is not valid because it does not have exactly one position."
		}
	case LineString:
		if len(s.Line) < 2 {
			return "The LineString input is not valid because it has fewer than two points. A LineString must have at least two points."
		}
	case Polygon, MultiPolygon:
		if s.Kind == Polygon && len(s.Polys) != 1 {
			return "The Polygon input is not valid because it does not have exactly one list of rings."
		}
		for _, rings := range s.Polys {
			if reason := checkRings(s.Kind, rings); reason != "" {
				return reason
			}
		}
	default:
		return "The GeoJSON type is not supported: use Point, LineString, Polygon or MultiPolygon."
	}
	if m == Geography {
		return s.checkSphere()
	}
	return s.checkPlane()
}

// checkRings checks what every polygon's rings must be, in either model.
func checkRings(k Kind, rings []Ring) string {
	if len(rings) == 0 {
		return "The " + k.String() + " input is not valid because it has a polygon without rings. A Polygon must have at least one ring."
	}
	for i, r := range rings {
		n := strconv.Itoa(i + 1)
		if len(r) < 4 {
			return "The " + k.String() + " input is not valid because the ring number " + n + " has fewer than four points. Each ring of a Polygon must have at least four points."
		}
		if r[0] != r[len(r)-1] {
			return "The " + k.String() + " input is not valid because the start and end points of the ring number " + n + " are not the same. Each ring of a Polygon must have the same start and end points."
		}
	}
	return ""
}

// positions returns every position of s.
func (s *Shape) positions() []Pos {
	if len(s.Polys) == 0 {
		return s.Line
	}
	var all []Pos
	for _, rings := range s.Polys {
		for _, r := range rings {
			all = append(all, r...)
		}
	}
	return all
}

// selfIntersection is the reason of a polygon whose rings cross.
func selfIntersection(k Kind) string {
	return "The " + k.String() + " input is not valid because its rings intersect themselves or each other. The rings of a Polygon must not cross."
}

// Distance returns the distance between two valid shapes: meters on the
// earth (Geography), units of the coordinates in the plane (Geometry); 0
// when they intersect.
func Distance(a, b *Shape, m Model) float64 {
	if m == Geography {
		return sphereDistance(a, b)
	}
	return planeDistance(a, b)
}

// Intersects reports whether two valid shapes have a point in common.
func Intersects(a, b *Shape, m Model) bool {
	if m == Geography {
		return sphereIntersects(a, b)
	}
	return planeMeet(a, b)
}

// Within reports whether the valid shape a lies within b: every point of a
// is a point of b. A Point is within a Point equal to it, a LineString
// within a LineString only when every vertex lies on it and no edge leaves
// it (a Polygon or MultiPolygon within a LineString or Point never is).
func Within(a, b *Shape, m Model) bool {
	if m == Geography {
		return sphereWithin(a, b)
	}
	return planeWithin(a, b)
}

// Area returns the area of a valid shape: square meters on the earth,
// square units in the plane; 0 for a Point or a LineString.
func Area(s *Shape, m Model) float64 {
	if s.Kind == Point || s.Kind == LineString {
		return 0
	}
	if m == Geography {
		return sphereArea(s)
	}
	return planeArea(s)
}
