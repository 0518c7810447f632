package geo

import "math"

// Shapes in the plane (Geometry): Euclidean measures, orientation ignored.

// segments returns the edges of s: a Point's one degenerate edge, a
// LineString's, and every ring's.
func (s *Shape) segments() [][2]Pos {
	var out [][2]Pos
	switch s.Kind {
	case Point:
		out = append(out, [2]Pos{s.Line[0], s.Line[0]})
	case LineString:
		for i := 0; i+1 < len(s.Line); i++ {
			out = append(out, [2]Pos{s.Line[i], s.Line[i+1]})
		}
	default:
		for _, rings := range s.Polys {
			for _, r := range rings {
				for i := 0; i+1 < len(r); i++ {
					out = append(out, [2]Pos{r[i], r[i+1]})
				}
			}
		}
	}
	return out
}

// checkPlane returns "" or the reason s is not a valid shape in the plane:
// rings whose edges cross.
func (s *Shape) checkPlane() string {
	for _, rings := range s.Polys {
		var edges [][2]Pos
		for _, r := range rings {
			for i := 0; i+1 < len(r); i++ {
				edges = append(edges, [2]Pos{r[i], r[i+1]})
			}
		}
		for i := range edges {
			for j := i + 1; j < len(edges); j++ {
				if properCross(edges[i], edges[j]) {
					return selfIntersection(s.Kind)
				}
			}
		}
	}
	return ""
}

// orient is the sign of the turn a, b, c: positive counterclockwise.
func orient(a, b, c Pos) float64 {
	return (b[0]-a[0])*(c[1]-a[1]) - (b[1]-a[1])*(c[0]-a[0])
}

// properCross reports whether two segments cross at a point interior to
// both.
func properCross(e, f [2]Pos) bool {
	d1, d2 := orient(e[0], e[1], f[0]), orient(e[0], e[1], f[1])
	d3, d4 := orient(f[0], f[1], e[0]), orient(f[0], f[1], e[1])
	return (d1 > 0 && d2 < 0 || d1 < 0 && d2 > 0) && (d3 > 0 && d4 < 0 || d3 < 0 && d4 > 0)
}

// onSegment reports whether p, collinear with e, lies within its bounds.
func onSegment(p Pos, e [2]Pos) bool {
	return math.Min(e[0][0], e[1][0]) <= p[0] && p[0] <= math.Max(e[0][0], e[1][0]) &&
		math.Min(e[0][1], e[1][1]) <= p[1] && p[1] <= math.Max(e[0][1], e[1][1])
}

// segmentsMeet reports whether two segments have a point in common.
func segmentsMeet(e, f [2]Pos) bool {
	if properCross(e, f) {
		return true
	}
	return orient(e[0], e[1], f[0]) == 0 && onSegment(f[0], e) || orient(e[0], e[1], f[1]) == 0 && onSegment(f[1], e) ||
		orient(f[0], f[1], e[0]) == 0 && onSegment(e[0], f) || orient(f[0], f[1], e[1]) == 0 && onSegment(e[1], f)
}

// pointSegment returns the distance from p to segment e.
func pointSegment(p Pos, e [2]Pos) float64 {
	dx, dy := e[1][0]-e[0][0], e[1][1]-e[0][1]
	t := 0.0
	if l := dx*dx + dy*dy; l > 0 {
		t = math.Max(0, math.Min(1, ((p[0]-e[0][0])*dx+(p[1]-e[0][1])*dy)/l))
	}
	return math.Hypot(p[0]-(e[0][0]+t*dx), p[1]-(e[0][1]+t*dy))
}

// inRings reports whether p is inside a polygon's rings by the even-odd
// rule (a point on an edge may go either way).
func inRings(p Pos, rings []Ring) bool {
	in := false
	for _, r := range rings {
		for i := 0; i+1 < len(r); i++ {
			a, b := r[i], r[i+1]
			if (a[1] > p[1]) != (b[1] > p[1]) && p[0] < (b[0]-a[0])*(p[1]-a[1])/(b[1]-a[1])+a[0] {
				in = !in
			}
		}
	}
	return in
}

// inPlaneShape reports whether p lies in one of s's polygons (their
// interior, or their boundary).
func inPlaneShape(p Pos, s *Shape) bool {
	for _, rings := range s.Polys {
		if inRings(p, rings) {
			return true
		}
		for _, r := range rings {
			for i := 0; i+1 < len(r); i++ {
				if pointSegment(p, [2]Pos{r[i], r[i+1]}) == 0 {
					return true
				}
			}
		}
	}
	return false
}

// planeMeet reports whether a and b have a point in common.
func planeMeet(a, b *Shape) bool {
	sa, sb := a.segments(), b.segments()
	for _, e := range sa {
		for _, f := range sb {
			if segmentsMeet(e, f) {
				return true
			}
		}
	}
	return len(b.Polys) > 0 && inPlaneShape(sa[0][0], b) || len(a.Polys) > 0 && inPlaneShape(sb[0][0], a)
}

// planeDistance returns the Euclidean distance between a and b, 0 when they
// meet.
func planeDistance(a, b *Shape) float64 {
	if planeMeet(a, b) {
		return 0
	}
	d := math.Inf(1)
	for _, e := range a.segments() {
		for _, f := range b.segments() {
			d = math.Min(d, math.Min(math.Min(pointSegment(e[0], f), pointSegment(e[1], f)), math.Min(pointSegment(f[0], e), pointSegment(f[1], e))))
		}
	}
	return d
}

// planeWithin reports whether every point of a is a point of b.
func planeWithin(a, b *Shape) bool {
	sa := a.segments()
	switch b.Kind {
	case Point:
		return a.Kind == Point && a.Line[0] == b.Line[0]
	case LineString:
		if a.Kind != Point && a.Kind != LineString {
			return false
		}
		on := func(p Pos) bool { return planeDistance(&Shape{Kind: Point, Line: []Pos{p}}, b) == 0 }
		for _, e := range sa {
			if !on(e[0]) || !on(e[1]) || !on(Pos{(e[0][0] + e[1][0]) / 2, (e[0][1] + e[1][1]) / 2}) {
				return false
			}
		}
		return true
	}
	for _, e := range sa {
		if !inPlaneShape(e[0], b) || !inPlaneShape(e[1], b) || !inPlaneShape(Pos{(e[0][0] + e[1][0]) / 2, (e[0][1] + e[1][1]) / 2}, b) {
			return false
		}
		for _, f := range b.segments() {
			if properCross(e, f) {
				return false
			}
		}
	}
	if a.Kind == Polygon || a.Kind == MultiPolygon {
		// A hole of b inside a's outer ring leaves part of a outside b.
		for _, rings := range b.Polys {
			for _, hole := range rings[1:] {
				for _, p := range hole {
					if inPlaneShape(p, a) && !onBoundaryOf(p, a) {
						return false
					}
				}
			}
		}
	}
	return true
}

// onBoundaryOf reports whether p lies on an edge of s.
func onBoundaryOf(p Pos, s *Shape) bool {
	for _, e := range s.segments() {
		if pointSegment(p, e) == 0 {
			return true
		}
	}
	return false
}

// planeArea returns the area of s's polygons: each outer ring's less its
// holes'.
func planeArea(s *Shape) float64 {
	total := 0.0
	for _, rings := range s.Polys {
		for i, r := range rings {
			a := 0.0
			for j := 0; j+1 < len(r); j++ {
				a += r[j][0]*r[j+1][1] - r[j+1][0]*r[j][1]
			}
			if i == 0 {
				total += math.Abs(a) / 2
			} else {
				total -= math.Abs(a) / 2
			}
		}
	}
	return total
}
