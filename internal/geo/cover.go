package geo

import (
	"math"

	"github.com/golang/geo/r3"
	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// Cell coverings for a spatial index. An item's shape is indexed by the S2
// cells that cover it (Cells: a point's leaf cell, at most itemCells cells
// for other shapes); a filter's region by the cells that cover every shape
// that can satisfy it (QueryCells, at most queryCells of them, the
// service's maxSpatialQueryCells). A shape can satisfy the filter only if
// one of its cells and one of the filter's cells meet: one contains the
// other. Coverings cover: the index finds a superset of the items the
// filter keeps, and the query decides on those.
//
// Geometry shapes are mapped into S2 cells too: the plane's bounding box
// onto face 0 of the cube, whose gnomonic projection takes straight lines
// to geodesics, so a shape and its image meet the same cells. Shapes not
// entirely inside the box have no cells (the index keeps them apart).

// CellID is an S2 cell.
type CellID uint64

// Span returns the range of leaf cells c contains, lo to hi inclusive, as
// cell ids: a cell contains c or is contained by it when its id is in the
// span or is one of c's ancestors.
func (c CellID) Span() (lo, hi CellID) {
	id := s2.CellID(c)
	return CellID(id.RangeMin()), CellID(id.RangeMax())
}

// Ancestors returns the cells that contain c, from the face down.
func (c CellID) Ancestors() []CellID {
	id := s2.CellID(c)
	out := make([]CellID, id.Level())
	for l := range id.Level() {
		out[l] = CellID(id.Parent(l))
	}
	return out
}

const (
	itemCells  = 8
	queryCells = 12
	// minCurvature is the least radius of curvature of the WGS-84
	// ellipsoid (the meridian's at the equator, b²/a): no curve is shorter
	// on it, in meters, than this many times the angle it spans on the
	// sphere, so a shape within d meters of another is within
	// d / minCurvature radians of it there.
	minCurvature = wgs84B * wgs84B / wgs84A
)

// Box is the region of the plane a Geometry index covers.
type Box struct{ Xmin, Ymin, Xmax, Ymax float64 }

// inside reports whether every position of s is in the box.
func (b Box) inside(s *Shape) bool {
	for _, p := range s.positions() {
		if p[0] < b.Xmin || p[0] > b.Xmax || p[1] < b.Ymin || p[1] > b.Ymax {
			return false
		}
	}
	return true
}

// face0 maps a position of the box onto face 0 of the cube.
func (b Box) face0(p Pos) s2.Point {
	u := 2*(p[0]-b.Xmin)/(b.Xmax-b.Xmin) - 1
	v := 2*(p[1]-b.Ymin)/(b.Ymax-b.Ymin) - 1
	return s2.Point{Vector: r3.Vector{X: 1, Y: u, Z: v}.Normalize()}
}

// Cells returns the cells that cover a valid shape, on the earth
// (Geography) or, in the plane, in box; ok is false for a shape of the
// plane not entirely inside the box.
func Cells(s *Shape, m Model, box Box) (cells []CellID, ok bool) {
	ss := sphereOf(s)
	if m == Geometry {
		if !box.inside(s) {
			return nil, false
		}
		var reason string
		if ss, reason = buildSphere(s, box.face0, false); reason != "" {
			return nil, false // degenerate once mapped: no index can hold it
		}
	}
	return cover(ss, itemCells), true
}

// cover returns at most n cells that cover ss.
func cover(ss *sphereShape, n int) []CellID {
	if len(ss.polys) == 0 && ss.polyline == nil {
		return []CellID{CellID(s2.CellFromPoint(ss.line[0]).ID())}
	}
	rc := &s2.RegionCoverer{MaxLevel: 30, MaxCells: n}
	var u s2.CellUnion
	if ss.polyline != nil {
		u = rc.Covering(ss.polyline)
	}
	for _, p := range ss.polys {
		u = append(u, rc.Covering(p)...)
	}
	u.Normalize()
	return cellIDs(u)
}

// cellIDs converts a cell union.
func cellIDs(u s2.CellUnion) []CellID {
	out := make([]CellID, len(u))
	for i, c := range u {
		out[i] = CellID(c)
	}
	return out
}

// QueryCells returns cells that cover every shape that lies within within
// meters (Geography) or units (Geometry, in box) of the valid shape s: its
// own covering for within 0 (a shape that meets s, or lies within it, or
// holds it, meets one of its cells), else a cap around it (Geography) or
// its bounding rectangle, grown by within and clipped to the box
// (Geometry).
func QueryCells(s *Shape, within float64, m Model, box Box) []CellID {
	if m == Geometry {
		return planeQueryCells(s, within, box)
	}
	ss := sphereOf(s)
	if within == 0 {
		return cover(ss, queryCells)
	}
	var bound s2.Cap
	switch {
	case len(ss.polys) > 0:
		r := ss.polys[0].RectBound()
		for _, p := range ss.polys[1:] {
			r = r.Union(p.RectBound())
		}
		bound = r.CapBound()
	case ss.polyline != nil:
		bound = ss.polyline.CapBound()
	default:
		bound = s2.CapFromPoint(ss.line[0])
	}
	angle := within/minCurvature*(1+1e-9) + 1e-12
	if angle >= math.Pi {
		return cellIDs(s2.CellUnion{s2.CellIDFromFace(0), s2.CellIDFromFace(1), s2.CellIDFromFace(2), s2.CellIDFromFace(3), s2.CellIDFromFace(4), s2.CellIDFromFace(5)})
	}
	rc := &s2.RegionCoverer{MaxLevel: 30, MaxCells: queryCells}
	return cellIDs(rc.Covering(bound.Expanded(s1.Angle(angle))))
}

// planeQueryCells is QueryCells in the plane: the cells of the part of the
// box within within of s's bounding rectangle.
func planeQueryCells(s *Shape, within float64, box Box) []CellID {
	lo, hi := Pos{math.Inf(1), math.Inf(1)}, Pos{math.Inf(-1), math.Inf(-1)}
	for _, p := range s.positions() {
		lo = Pos{math.Min(lo[0], p[0]), math.Min(lo[1], p[1])}
		hi = Pos{math.Max(hi[0], p[0]), math.Max(hi[1], p[1])}
	}
	// Grown a little more than within (the query's own arithmetic rounds),
	// so that the rectangle is never empty.
	pad := within + 1e-9*(math.Abs(box.Xmax-box.Xmin)+math.Abs(box.Ymax-box.Ymin))
	lo = Pos{math.Max(lo[0]-pad, box.Xmin), math.Max(lo[1]-pad, box.Ymin)}
	hi = Pos{math.Min(hi[0]+pad, box.Xmax), math.Min(hi[1]+pad, box.Ymax)}
	if lo[0] > hi[0] || lo[1] > hi[1] {
		return nil // nothing in the box is that near
	}
	loop := s2.LoopFromPoints([]s2.Point{box.face0(lo), box.face0(Pos{hi[0], lo[1]}), box.face0(hi), box.face0(Pos{lo[0], hi[1]})})
	loop.Normalize()
	rc := &s2.RegionCoverer{MaxLevel: 30, MaxCells: queryCells}
	return cellIDs(rc.Covering(s2.PolygonFromLoops([]*s2.Loop{loop})))
}
