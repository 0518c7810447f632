package geo

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// box is the rectangle [x0, x1] × [y0, y1], counterclockwise.
func box(x0, y0, x1, y1 float64) *Shape {
	return &Shape{Kind: Polygon, Polys: [][]Ring{{{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}, {x0, y0}}}}}
}

func pt(x, y float64) *Shape { return &Shape{Kind: Point, Line: []Pos{{x, y}}} }

// TestVincenty: the geodesic distances of Vincenty's own example (Flinders
// Peak to Buninyong, 54972.271 m) and of the Cosmos DB documentation's
// ST_DISTANCE page, and a distance of zero.
func TestVincenty(t *testing.T) {
	dms := func(d, m, s float64) float64 { return d + m/60 + s/3600 }
	flinders := Pos{dms(144, 25, 29.52440), -dms(37, 57, 3.72030)}
	buninyong := Pos{dms(143, 55, 35.38390), -dms(37, 39, 10.15610)}
	assert.InDelta(t, 54972.271, Vincenty(flinders, buninyong), 0.001)
	ref := Pos{-122.11758113953535, 47.66901087006131}
	assert.InDelta(t, 3345.269817267368, Vincenty(Pos{-122.12826822304672, 47.63980239335718}, ref), 1e-3)
	assert.InDelta(t, 1907438.421299902, Vincenty(Pos{-96.84368664765994, 46.81297794314663}, ref), 1)
	assert.Equal(t, 0.0, Vincenty(ref, ref))
}

// TestArea: the documented ST_AREA figure (to 1e-6), on the earth, and the
// plane's.
func TestArea(t *testing.T) {
	s := box(31.8, -5, 32, -4.7)
	assert.Empty(t, s.Check(Geography))
	assert.InDelta(t, 1, Area(s, Geography)/735970283.0522614, 1e-6)
	p := box(0, 0, 3, 2)
	assert.Empty(t, p.Check(Geometry))
	assert.Equal(t, 6.0, Area(p, Geometry))
	assert.Equal(t, 0.0, Area(pt(1, 1), Geography))
}

// TestCheck: the reasons of invalid shapes, in each model.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		s      *Shape
		m      Model
		reason string
	}{
		{pt(0, 91), Geography, "Latitude values must be between -90 and 90 degrees."},
		{pt(181, 0), Geography, "Longitude values must be between -180 and 180 degrees."},
		{pt(181, 91), Geometry, ""},
		{&Shape{Kind: Polygon, Polys: [][]Ring{{{{0, 0}, {1, 0}, {1, 1}, {0, 1}}}}}, Geography,
			"The Polygon input is not valid because the start and end points of the ring number 1 are not the same. Each ring of a Polygon must have the same start and end points."},
		{&Shape{Kind: Polygon, Polys: [][]Ring{{{{0, 0}, {1, 1}, {1, 0}, {0, 1}, {0, 0}}}}}, Geography, selfIntersection(Polygon)},
		{&Shape{Kind: Polygon, Polys: [][]Ring{{{{0, 0}, {1, 1}, {1, 0}, {0, 1}, {0, 0}}}}}, Geometry, selfIntersection(Polygon)},
		{&Shape{Kind: LineString, Line: []Pos{{0, 0}}}, Geometry, "The LineString input is not valid because it has fewer than two points. A LineString must have at least two points."},
	} {
		assert.Equal(t, c.reason, c.s.Check(c.m), "%+v", c.s)
	}
}

// TestCells: an item's cells meet the cells of every filter it satisfies,
// on the earth and in the plane; a shape of the plane that leaves the box
// has none.
func TestCells(t *testing.T) {
	in := func(x, y CellID) bool { lo, hi := y.Span(); return x >= lo && x <= hi }
	meet := func(a, b []CellID) bool {
		for _, x := range a {
			for _, y := range b {
				if in(x, y) || in(y, x) {
					return true
				}
			}
		}
		return false
	}
	item, _ := Cells(pt(10, 10), Geography, Box{})
	assert.Len(t, item, 1)
	assert.True(t, meet(item, QueryCells(pt(10.1, 10), 11000, Geography, Box{})))
	assert.False(t, meet(item, QueryCells(pt(12, 10), 11000, Geography, Box{})))
	poly := box(9, 9, 11, 11)
	assert.Empty(t, poly.Check(Geography))
	assert.True(t, meet(item, QueryCells(poly, 0, Geography, Box{})))

	b := Box{Xmin: 0, Ymin: 0, Xmax: 100, Ymax: 100}
	item, ok := Cells(pt(50, 50), Geometry, b)
	assert.True(t, ok)
	assert.True(t, meet(item, QueryCells(pt(52, 50), 2.5, Geometry, b)))
	_, ok = Cells(pt(150, 50), Geometry, b)
	assert.False(t, ok)
	assert.Nil(t, QueryCells(pt(150, 50), 10, Geometry, b), "nothing in the box is that near")
}

// TestNoPanic: random shapes, valid and not, about the poles, the
// antimeridian and antipodes included, through every function in both
// models: none panics.
func TestNoPanic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	coords := []float64{0, 90, -90, 180, -180, 1e-12, 45, 89.9999999, 179.999999, -45}
	c := func() float64 {
		if rng.IntN(2) == 0 {
			return coords[rng.IntN(len(coords))]
		}
		return rng.Float64()*360 - 180
	}
	pos := func() Pos { return Pos{c(), c() / 2} }
	shape := func() *Shape {
		switch rng.IntN(4) {
		case 0:
			return &Shape{Kind: Point, Line: []Pos{pos()}}
		case 1:
			n := 2 + rng.IntN(3)
			l := make([]Pos, n)
			for i := range l {
				l[i] = pos()
			}
			return &Shape{Kind: LineString, Line: l}
		default:
			n := 3 + rng.IntN(4)
			r := make(Ring, n)
			for i := range r {
				r[i] = pos()
			}
			r = append(r, r[0])
			k := Polygon
			if rng.IntN(3) == 0 {
				k = MultiPolygon
			}
			return &Shape{Kind: k, Polys: [][]Ring{{r}}}
		}
	}
	for range 3000 {
		for _, m := range []Model{Geography, Geometry} {
			a, b := shape(), shape()
			if a.Check(m) != "" || b.Check(m) != "" {
				continue
			}
			Distance(a, b, m)
			Within(a, b, m)
			Intersects(a, b, m)
			Area(a, m)
			Cells(a, m, Box{-180, -90, 180, 90})
			QueryCells(a, rng.Float64()*1e7, m, Box{-180, -90, 180, 90})
		}
	}
}
