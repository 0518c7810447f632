package geo

import (
	"math"
	"strconv"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// The WGS-84 ellipsoid: the semi-major axis in meters and the flattening.
const (
	wgs84A = 6378137.0
	wgs84F = 1 / 298.257223563
	wgs84B = wgs84A * (1 - wgs84F)
)

// sphereShape is a Shape on the sphere: its S2 shapes in one index, for
// the distance and crossing queries, and its polygons, for containment.
type sphereShape struct {
	index    *s2.ShapeIndex
	polys    []*s2.Polygon
	line     []s2.Point   // a Point's one point or a LineString's vertices
	polyline *s2.Polyline // a LineString's
}

// point returns the S2 point of a position.
func point(p Pos) s2.Point {
	return s2.PointFromLatLng(s2.LatLngFromDegrees(p[1], p[0]))
}

// checkSphere makes s's sphereShape and returns "" or the reason s is not
// a valid shape on the sphere: a ring of fewer than three distinct
// positions, or rings that cross.
func (s *Shape) checkSphere() string {
	if s.Kind == Point {
		return "" // its S2 shape is made when a function needs it (sphereOf)
	}
	ss, reason := buildSphere(s, point, true)
	s.sphere = ss
	return reason
}

// buildSphere makes the sphereShape of s, its positions mapped to the
// sphere by pt, or returns the reason it cannot. oriented says whether a
// ring's orientation says which side is inside (else the smaller side is).
func buildSphere(s *Shape, pt func(Pos) s2.Point, oriented bool) (*sphereShape, string) {
	ss := &sphereShape{index: s2.NewShapeIndex()}
	switch s.Kind {
	case Point:
		ss.line = []s2.Point{pt(s.Line[0])}
		pv := s2.PointVector(ss.line)
		ss.index.Add(&pv)
	case LineString:
		for _, p := range s.Line {
			q := pt(p)
			if n := len(ss.line); n > 0 && ss.line[n-1] == q {
				continue
			}
			ss.line = append(ss.line, q)
		}
		if len(ss.line) < 2 {
			return nil, "The LineString input is not valid because it has fewer than two distinct points. A LineString must have at least two points."
		}
		pl := s2.Polyline(ss.line)
		ss.polyline = &pl
		ss.index.Add(&pl)
	default:
		var edges [][2]s2.Point
		for _, rings := range s.Polys {
			loops := make([]*s2.Loop, 0, len(rings))
			for i, r := range rings {
				var pts []s2.Point
				for _, p := range r[:len(r)-1] {
					q := pt(p)
					if n := len(pts); n > 0 && pts[n-1] == q {
						continue
					}
					pts = append(pts, q)
				}
				if len(pts) > 1 && pts[0] == pts[len(pts)-1] {
					pts = pts[:len(pts)-1]
				}
				if len(pts) < 3 {
					return nil, "The " + s.Kind.String() + " input is not valid because the ring number " + strconv.Itoa(i+1) + " has fewer than three distinct points. Each ring of a Polygon must have at least three distinct points."
				}
				for j := range pts {
					edges = append(edges, [2]s2.Point{pts[j], pts[(j+1)%len(pts)]})
				}
				l := s2.LoopFromPoints(pts)
				if !oriented {
					l.Normalize()
				}
				loops = append(loops, l)
			}
			if crossing(edges) {
				return nil, selfIntersection(s.Kind)
			}
			var p *s2.Polygon
			if oriented {
				p = s2.PolygonFromOrientedLoops(loops)
			} else {
				p = s2.PolygonFromLoops(loops)
			}
			if p.Validate() != nil {
				return nil, selfIntersection(s.Kind)
			}
			ss.polys = append(ss.polys, p)
			ss.index.Add(p)
		}
		if s.Kind == MultiPolygon && polygonsCross(ss.polys) {
			return nil, "The MultiPolygon input is not valid because its polygons overlap. The polygons of a MultiPolygon must not have any common area."
		}
	}
	return ss, ""
}

// crossing reports whether two edges of a set cross at a point interior to
// both (edges that share a vertex do not).
func crossing(edges [][2]s2.Point) bool {
	for i := range edges {
		c := s2.NewEdgeCrosser(edges[i][0], edges[i][1])
		for j := i + 1; j < len(edges); j++ {
			if c.CrossingSign(edges[j][0], edges[j][1]) == s2.Cross {
				return true
			}
		}
	}
	return false
}

// polygonsCross reports whether two of the polygons share interior.
func polygonsCross(ps []*s2.Polygon) bool {
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			if ps[i].Intersects(ps[j]) {
				// Touching at points is allowed: share interior only if a
				// vertex of one is strictly inside the other or they
				// contain one another.
				if ps[i].Contains(ps[j]) || ps[j].Contains(ps[i]) || interiorVertex(ps[i], ps[j]) || interiorVertex(ps[j], ps[i]) {
					return true
				}
			}
		}
	}
	return false
}

// interiorVertex reports whether a vertex of b lies inside a, off its
// boundary.
func interiorVertex(a, b *s2.Polygon) bool {
	for _, l := range b.Loops() {
		for _, v := range l.Vertices() {
			if a.ContainsPoint(v) && !onBoundary(a, v) {
				return true
			}
		}
	}
	return false
}

// onBoundary reports whether v is a vertex of a's loops.
func onBoundary(a *s2.Polygon, v s2.Point) bool {
	for _, l := range a.Loops() {
		for _, w := range l.Vertices() {
			if w == v {
				return true
			}
		}
	}
	return false
}

// sphereOf returns s's sphereShape, making it if Check has not.
func sphereOf(s *Shape) *sphereShape {
	if s.sphere == nil {
		s.sphere, _ = buildSphere(s, point, true)
	}
	return s.sphere
}

// sphereIntersects reports whether a and b meet on the sphere.
func sphereIntersects(a, b *Shape) bool {
	sa, sb := sphereOf(a), sphereOf(b)
	q := s2.NewClosestEdgeQuery(sa.index, s2.NewClosestEdgeQueryOptions().IncludeInteriors(true))
	return q.Distance(s2.NewMinDistanceToShapeIndexTarget(sb.index)) == 0
}

// sphereDistance returns the distance in meters between a and b: 0 when
// they meet, else that between the closest points of the two on the
// sphere, measured on the WGS-84 ellipsoid.
func sphereDistance(a, b *Shape) float64 {
	if a.Kind == Point && b.Kind == Point {
		return Vincenty(a.Line[0], b.Line[0])
	}
	if b.Kind == Point {
		a, b = b, a
	}
	sa, sb := sphereOf(a), sphereOf(b)
	opts := s2.NewClosestEdgeQueryOptions().IncludeInteriors(true).MaxResults(1)
	var pa, pb s2.Point
	if a.Kind == Point {
		pa = sa.line[0]
		r := s2.NewClosestEdgeQuery(sb.index, opts).FindEdges(s2.NewMinDistanceToPointTarget(pa))
		if len(r) == 0 || r[0].IsInterior() || r[0].Distance() == 0 {
			return 0
		}
		e := sb.index.Shape(r[0].ShapeID()).Edge(int(r[0].EdgeID()))
		pb = closestOnEdge(pa, e)
	} else {
		ra := s2.NewClosestEdgeQuery(sa.index, opts).FindEdges(s2.NewMinDistanceToShapeIndexTarget(sb.index))
		if len(ra) == 0 || ra[0].IsInterior() || ra[0].Distance() == 0 {
			return 0
		}
		ea := sa.index.Shape(ra[0].ShapeID()).Edge(int(ra[0].EdgeID()))
		rb := s2.NewClosestEdgeQuery(sb.index, opts).FindEdges(s2.NewMinDistanceToEdgeTarget(ea))
		if len(rb) == 0 || rb[0].IsInterior() || rb[0].Distance() == 0 {
			return 0
		}
		eb := sb.index.Shape(rb[0].ShapeID()).Edge(int(rb[0].EdgeID()))
		pa, pb = s2.EdgePairClosestPoints(ea.V0, ea.V1, eb.V0, eb.V1)
	}
	return Vincenty(posOf(pa), posOf(pb))
}

// closestOnEdge returns the point of edge e closest to p.
func closestOnEdge(p s2.Point, e s2.Edge) s2.Point {
	if e.V0 == e.V1 {
		return e.V0
	}
	return s2.Project(p, e.V0, e.V1)
}

// posOf returns the position of an S2 point.
func posOf(p s2.Point) Pos {
	ll := s2.LatLngFromPoint(p)
	return Pos{ll.Lng.Degrees(), ll.Lat.Degrees()}
}

// sphereWithin reports whether a lies within b on the sphere.
func sphereWithin(a, b *Shape) bool {
	sa, sb := sphereOf(a), sphereOf(b)
	switch b.Kind {
	case Point:
		return a.Kind == Point && sa.line[0] == sb.line[0]
	case LineString:
		if a.Kind != Point && a.Kind != LineString {
			return false
		}
		q := s2.NewClosestEdgeQuery(sb.index, s2.NewClosestEdgeQueryOptions())
		for _, p := range sa.line {
			if q.Distance(s2.NewMinDistanceToPointTarget(p)) != 0 {
				return false
			}
		}
		return a.Kind == Point || len(sa.line) == 2 && len(sb.line) == 2 && sameEdge(sa.line, sb.line)
	}
	switch a.Kind {
	case Point:
		return containedIn(sb.polys, sa.line[0])
	case LineString:
		for _, p := range sa.line {
			if !containedIn(sb.polys, p) {
				return false
			}
		}
		for i := 0; i+1 < len(sa.line); i++ {
			c := s2.NewEdgeCrosser(sa.line[i], sa.line[i+1])
			for _, p := range sb.polys {
				for _, l := range p.Loops() {
					vs := l.Vertices()
					for j := range vs {
						if c.CrossingSign(vs[j], vs[(j+1)%len(vs)]) == s2.Cross {
							return false
						}
					}
				}
			}
		}
		return true
	}
	for _, pa := range sa.polys {
		inside := false
		for _, pb := range sb.polys {
			if pb.Contains(pa) {
				inside = true
				break
			}
		}
		if !inside {
			return false
		}
	}
	return true
}

// sameEdge reports whether two one-edge lines are the same edge, in
// either direction.
func sameEdge(a, b []s2.Point) bool {
	return a[0] == b[0] && a[1] == b[1] || a[0] == b[1] && a[1] == b[0]
}

// containedIn reports whether one of the polygons contains p.
func containedIn(ps []*s2.Polygon, p s2.Point) bool {
	for _, poly := range ps {
		if poly.ContainsPoint(p) {
			return true
		}
	}
	return false
}

// sphereArea returns the area of s's polygons on the WGS-84 ellipsoid, in
// square meters: that of their rings mapped to the authalic sphere (the
// sphere of the ellipsoid's area, latitudes replaced by authalic ones, an
// equal-area map), the rings' edges geodesics of that sphere.
func sphereArea(s *Shape) float64 {
	qp := authalicQ(1)
	r2 := wgs84A * wgs84A * qp / 2
	total := 0.0
	for _, rings := range s.Polys {
		loops := make([]*s2.Loop, 0, len(rings))
		for _, r := range rings {
			var pts []s2.Point
			for _, p := range r[:len(r)-1] {
				beta := math.Asin(math.Max(-1, math.Min(1, authalicQ(math.Sin(p[1]*math.Pi/180))/qp)))
				q := s2.PointFromLatLng(s2.LatLng{Lat: s1.Angle(beta), Lng: s1.Angle(p[0] * math.Pi / 180)})
				if n := len(pts); n > 0 && pts[n-1] == q {
					continue
				}
				pts = append(pts, q)
			}
			if len(pts) > 1 && pts[0] == pts[len(pts)-1] {
				pts = pts[:len(pts)-1]
			}
			loops = append(loops, s2.LoopFromPoints(pts))
		}
		total += s2.PolygonFromOrientedLoops(loops).Area()
	}
	return total * r2
}

// authalicQ is the function q of the authalic latitude on WGS-84, of the
// sine of the geodetic latitude, without its factor (1 - e²).
func authalicQ(sin float64) float64 {
	e2 := wgs84F * (2 - wgs84F)
	e := math.Sqrt(e2)
	return (1 - e2) * (sin/(1-e2*sin*sin) - math.Log((1-e*sin)/(1+e*sin))/(2*e))
}

// Vincenty returns the length in meters of the geodesic between two
// positions on the WGS-84 ellipsoid, by Vincenty's inverse formula (to
// within a millimeter). For the nearly antipodal positions where the
// iteration does not converge, it returns the great-circle distance on
// the sphere of the ellipsoid's mean radius (within 0.5%).
func Vincenty(p, q Pos) float64 {
	const rad = math.Pi / 180
	l := (q[0] - p[0]) * rad
	u1 := math.Atan((1 - wgs84F) * math.Tan(p[1]*rad))
	u2 := math.Atan((1 - wgs84F) * math.Tan(q[1]*rad))
	su1, cu1 := math.Sincos(u1)
	su2, cu2 := math.Sincos(u2)
	lambda := l
	for range 200 {
		sl, cl := math.Sincos(lambda)
		sinSigma := math.Hypot(cu2*sl, cu1*su2-su1*cu2*cl)
		if sinSigma == 0 {
			return 0 // the same point
		}
		cosSigma := su1*su2 + cu1*cu2*cl
		sigma := math.Atan2(sinSigma, cosSigma)
		sinAlpha := cu1 * cu2 * sl / sinSigma
		cos2Alpha := 1 - sinAlpha*sinAlpha
		cos2SigmaM := 0.0
		if cos2Alpha != 0 {
			cos2SigmaM = cosSigma - 2*su1*su2/cos2Alpha
		}
		c := wgs84F / 16 * cos2Alpha * (4 + wgs84F*(4-3*cos2Alpha))
		prev := lambda
		lambda = l + (1-c)*wgs84F*sinAlpha*(sigma+c*sinSigma*(cos2SigmaM+c*cosSigma*(-1+2*cos2SigmaM*cos2SigmaM)))
		if math.Abs(lambda-prev) < 1e-12 {
			u2 := cos2Alpha * (wgs84A*wgs84A - wgs84B*wgs84B) / (wgs84B * wgs84B)
			a := 1 + u2/16384*(4096+u2*(-768+u2*(320-175*u2)))
			b := u2 / 1024 * (256 + u2*(-128+u2*(74-47*u2)))
			ds := b * sinSigma * (cos2SigmaM + b/4*(cosSigma*(-1+2*cos2SigmaM*cos2SigmaM)-b/6*cos2SigmaM*(-3+4*sinSigma*sinSigma)*(-3+4*cos2SigmaM*cos2SigmaM)))
			return wgs84B * a * (sigma - ds)
		}
	}
	return float64(point(p).Distance(point(q))) * meanRadius
}

// meanRadius is the WGS-84 ellipsoid's mean radius, (2a + b) / 3.
const meanRadius = (2*wgs84A + wgs84B) / 3
