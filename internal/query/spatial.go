package query

import (
	"math"

	"github.com/lethedb/lethe/internal/geo"
)

// The spatial functions ST_DISTANCE, ST_WITHIN, ST_INTERSECTS, ST_AREA,
// ST_ISVALID and ST_ISVALIDDETAILED over GeoJSON Points, LineStrings,
// Polygons and MultiPolygons (internal/geo), in the model of the
// container's geospatialConfig (Env.Geometry: in the plane; else on the
// earth). As in Cosmos DB, a value that is not a valid GeoJSON shape of
// those types makes the first four undefined; ST_ISVALID says whether an
// object is one, ST_ISVALIDDETAILED why not (both undefined for a value
// that is not an object).

func init() {
	defSpatial("ST_DISTANCE", 2, func(m geo.Model, s []*geo.Shape) value { return numVal(geo.Distance(s[0], s[1], m)) })
	defSpatial("ST_WITHIN", 2, func(m geo.Model, s []*geo.Shape) value { return boolVal(geo.Within(s[0], s[1], m)) })
	defSpatial("ST_INTERSECTS", 2, func(m geo.Model, s []*geo.Shape) value { return boolVal(geo.Intersects(s[0], s[1], m)) })
	defSpatial("ST_AREA", 1, func(m geo.Model, s []*geo.Shape) value { return numVal(geo.Area(s[0], m)) })
	def("ST_ISVALID", 1, 1, func(ev *evaluator, a []value) value {
		if a[0].k != kObj {
			return undef
		}
		_, reason := ev.shapeArg(0, a[0])
		return boolVal(reason == "")
	})
	def("ST_ISVALIDDETAILED", 1, 1, func(ev *evaluator, a []value) value {
		if a[0].k != kObj {
			return undef
		}
		if _, reason := ev.shapeArg(0, a[0]); reason != "" {
			return value{k: kObj, o: []field{{"valid", falseV}, {"reason", strVal(reason)}}}
		}
		return value{k: kObj, o: []field{{"valid", trueVal}}}
	})
	for _, name := range []string{"ST_DISTANCE", "ST_WITHIN", "ST_INTERSECTS", "ST_AREA", "ST_ISVALID", "ST_ISVALIDDETAILED"} {
		funcs[name].spatial = true
	}
}

// defSpatial registers a spatial function of n shapes: undefined unless
// every argument is a valid shape.
func defSpatial(name string, n int, f func(geo.Model, []*geo.Shape) value) {
	def(name, n, n, func(ev *evaluator, a []value) value {
		shapes := make([]*geo.Shape, n)
		for i := range a {
			s, reason := ev.shapeArg(i, a[i])
			if reason != "" {
				return undef
			}
			shapes[i] = s
		}
		ev.tick(len(shapes[0].Line) + len(shapes[0].Polys))
		return f(ev.geoModel(), shapes)
	})
}

// geoModel is the model the container's geospatialConfig gives.
func (ev *evaluator) geoModel() geo.Model {
	if ev.env.Geometry {
		return geo.Geometry
	}
	return geo.Geography
}

// shapeArg returns argument i of the spatial call being evaluated
// (ev.spatialCall), v, as a checked shape, or the reason it is not valid.
// An argument that is a constant of the query is read and checked once per
// evaluation.
func (ev *evaluator) shapeArg(i int, v value) (*geo.Shape, string) {
	arg := ev.spatialCall.args[i]
	if c, ok := ev.shapes[arg]; ok {
		return c.s, c.reason
	}
	s, reason := ShapeOf(v, ev.geoModel())
	if _, ok := constValue(arg, ev.params); ok {
		if ev.shapes == nil {
			ev.shapes = map[expr]checkedShape{}
		}
		ev.shapes[arg] = checkedShape{s, reason}
	}
	return s, reason
}

// checkedShape is a shape and the reason it is invalid ("" if valid).
type checkedShape struct {
	s      *geo.Shape
	reason string
}

// ShapeOf reads a GeoJSON object as a shape and checks it in model m: the
// shape, or the reason it is not valid (then the shape is nil).
func ShapeOf(v value, m geo.Model) (*geo.Shape, string) {
	const malformed = " input is not valid because its coordinates are not well formed."
	t := v.get("type")
	k, ok := geo.KindOf(t.s)
	if t.k != kStr || !ok {
		return nil, "The GeoJSON input is not valid because its type is not one of Point, LineString, Polygon or MultiPolygon."
	}
	s := &geo.Shape{Kind: k}
	c := v.get("coordinates")
	switch k {
	case geo.Point:
		p, ok := position(c)
		if !ok {
			return nil, "The Point" + malformed
		}
		s.Line = []geo.Pos{p}
	case geo.LineString:
		if s.Line, ok = positions(c); !ok {
			return nil, "The LineString" + malformed
		}
	case geo.Polygon:
		rings, ok := ringsOf(c)
		if !ok {
			return nil, "The Polygon" + malformed
		}
		s.Polys = [][]geo.Ring{rings}
	case geo.MultiPolygon:
		if c.k != kArr {
			return nil, "The MultiPolygon" + malformed
		}
		for _, p := range c.a {
			rings, ok := ringsOf(p)
			if !ok {
				return nil, "The MultiPolygon" + malformed
			}
			s.Polys = append(s.Polys, rings)
		}
	}
	if reason := s.Check(m); reason != "" {
		return nil, reason
	}
	return s, ""
}

// position reads a GeoJSON position: an array of at least two numbers.
func position(v value) (geo.Pos, bool) {
	if v.k != kArr || len(v.a) < 2 {
		return geo.Pos{}, false
	}
	for _, n := range v.a {
		if n.k != kNum {
			return geo.Pos{}, false
		}
	}
	return geo.Pos{v.a[0].n, v.a[1].n}, true
}

// positions reads an array of positions.
func positions(v value) ([]geo.Pos, bool) {
	if v.k != kArr {
		return nil, false
	}
	out := make([]geo.Pos, len(v.a))
	for i, e := range v.a {
		p, ok := position(e)
		if !ok {
			return nil, false
		}
		out[i] = p
	}
	return out, true
}

// ringsOf reads a polygon's rings: an array of arrays of positions.
func ringsOf(v value) ([]geo.Ring, bool) {
	if v.k != kArr {
		return nil, false
	}
	out := make([]geo.Ring, len(v.a))
	for i, e := range v.a {
		r, ok := positions(e)
		if !ok {
			return nil, false
		}
		out[i] = r
	}
	return out, true
}

// constValue returns the value of e when it is a constant of the query: a
// literal, a parameter, a negated number, or an object or array of
// constants.
func constValue(e expr, params []value) (value, bool) {
	switch x := e.(type) {
	case *unary:
		v, ok := constValue(x.x, params)
		if !ok || x.op != tMinus || v.k != kNum {
			return undef, false
		}
		return numVal(-v.n), true
	case *objectLit:
		fs := make([]field, 0, len(x.keys))
		for i, k := range x.keys {
			v, ok := constValue(x.vals[i], params)
			if !ok {
				return undef, false
			}
			if v.k != kUndef {
				fs = append(fs, field{k, v})
			}
		}
		return value{k: kObj, o: fs}, true
	case *arrayLit:
		as := make([]value, 0, len(x.elems))
		for _, y := range x.elems {
			v, ok := constValue(y, params)
			if !ok {
				return undef, false
			}
			if v.k != kUndef {
				as = append(as, v)
			}
		}
		return value{k: kArr, a: as}, true
	}
	return constant(e, params)
}

// ShapeAt returns the valid shape at path in doc (an item's JSON) in model
// m; ok is false when there is none there.
func ShapeAt(doc []byte, path []string, m geo.Model) (s *geo.Shape, ok bool) {
	raw := doc
	for _, name := range path {
		sub, found := lookupKey(raw, name)
		if !found {
			return nil, false
		}
		raw = sub
	}
	v := decodeRaw(raw)
	if v.k != kObj {
		return nil, false
	}
	s, reason := ShapeOf(v, m)
	return s, reason == ""
}

// A SpatialFilter is a condition of a WHERE clause that a spatial index can
// answer: ST_DISTANCE(path, shape) < Within (or <=, or with its arguments
// swapped), ST_WITHIN(path, shape), ST_WITHIN(shape, path) or
// ST_INTERSECTS of a path and a shape, the shape a constant. Only items
// whose shape at Path lies within Within meters (Within 0: meets) of Shape
// can satisfy it.
type SpatialFilter struct {
	Path   []string   // the property names of the items' shapes
	Shape  *geo.Shape // the constant shape
	Within float64    // the distance of the shape the items' must be within; 0: they must meet it
}

// SpatialFilters returns the conditions of q's WHERE clause, conjuncts
// joined by AND at the top, that a spatial index can answer in model m,
// with params bound. A call whose constant is not a valid shape (the
// condition is undefined for every item) is not one of them.
func (q *Query) SpatialFilters(params map[string]any, m geo.Model) []SpatialFilter {
	if q.from == nil || q.from.path != nil || q.where == nil {
		return nil
	}
	vals, err := bindParams(q, params)
	if err != nil {
		return nil
	}
	// pathAndShape reads the two arguments of a spatial call.
	pathAndShape := func(x *call) ([]string, *geo.Shape, bool) {
		for i := range 2 {
			path, ok := itemPath(x.args[i])
			if !ok {
				continue
			}
			v, ok := constValue(x.args[1-i], vals)
			if !ok || v.k != kObj {
				return nil, nil, false
			}
			s, reason := ShapeOf(v, m)
			return path, s, reason == ""
		}
		return nil, nil, false
	}
	var out []SpatialFilter
	conjuncts(q.where, func(e expr) {
		switch x := e.(type) {
		case *call:
			if x.fn.name != "ST_WITHIN" && x.fn.name != "ST_INTERSECTS" {
				return
			}
			if path, s, ok := pathAndShape(x); ok {
				out = append(out, SpatialFilter{Path: path, Shape: s})
			}
		case *binary:
			d, r, op := x.l, x.r, x.op
			if _, isCall := d.(*call); !isCall {
				d, r = r, d
				switch op { // r OP d is d OP' r
				case tGt:
					op = tLt
				case tGe:
					op = tLe
				default:
					return
				}
			}
			dc, ok := d.(*call)
			if !ok || dc.fn == nil || dc.fn.name != "ST_DISTANCE" || op != tLt && op != tLe {
				return
			}
			lim, ok := constValue(r, vals)
			if !ok || lim.k != kNum || math.IsNaN(lim.n) || math.IsInf(lim.n, 1) {
				return
			}
			if path, s, ok := pathAndShape(dc); ok {
				out = append(out, SpatialFilter{Path: path, Shape: s, Within: math.Max(lim.n, 0)})
			}
		}
	})
	return out
}
