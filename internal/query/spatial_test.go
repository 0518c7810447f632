package query

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/lethedb/lethe/internal/geo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runEnv is run with an Env.
func runEnv(t *testing.T, text string, docs []Doc, env *Env) string {
	t.Helper()
	q, err := Parse(text)
	require.NoError(t, err, text)
	r, err := ExecFrom(context.Background(), q, nil, docs, testNow, nil, env)
	require.NoError(t, err, text)
	parts := make([]string, len(r.Items))
	for i, it := range r.Items {
		parts[i] = string(it)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// offices are the items of the ST_DISTANCE page of the Cosmos DB docs.
var offices = []Doc{
	{ID: "hq", JSON: []byte(`{"id":"hq","name":"Headquarters","location":{"type":"Point","coordinates":[-122.12826822304672,47.63980239335718]},"category":"business-offices"}`)},
	{ID: "rd", JSON: []byte(`{"id":"rd","name":"Research and development","location":{"type":"Point","coordinates":[-96.84368664765994,46.81297794314663]},"category":"business-offices"}`)},
}

// spatialFamilies are families with the locations of the docs' geospatial
// query page, and an area.
var spatialFamilies = []Doc{
	{ID: "WakefieldFamily", JSON: []byte(`{"id":"WakefieldFamily","location":{"type":"Point","coordinates":[31.9,-4.8]}}`)},
	{ID: "AndersenFamily", JSON: []byte(`{"id":"AndersenFamily","location":{"type":"Point","coordinates":[-122.12,47.66]}}`)},
	{ID: "MyDesignatedLocation", JSON: []byte(`{"id":"MyDesignatedLocation","location":{"type":"Polygon","coordinates":[[[31.8,-5],[32,-5],[32,-4.7],[31.8,-4.7],[31.8,-5]]]}}`)},
}

// TestSpatialDocumented runs the examples of the Cosmos DB documentation's
// pages of the ST_ functions and of its geospatial query page: the
// distances and the area are the service's published figures to within
// 1e-6 (the goal is 0.1%), the rest exactly its results.
func TestSpatialDocumented(t *testing.T) {
	near := []struct {
		name string
		q    string
		docs []Doc
		want []float64
	}{
		{"ST_DISTANCE", `SELECT VALUE ST_DISTANCE(o.location, {"type": "Point", "coordinates": [-122.11758113953535, 47.66901087006131]}) / 1000 FROM offices o WHERE o.category = "business-offices"`,
			offices, []float64{3.345269817267368, 1907.438421299902}},
		{"ST_AREA", `SELECT VALUE ST_AREA({"type": "Polygon", "coordinates": [[[31.8, -5], [32, -5], [32, -4.7], [31.8, -4.7], [31.8, -5]]]})`,
			nil, []float64{735970283.0522614}},
	}
	for _, c := range near {
		t.Run(c.name, func(t *testing.T) {
			var got []float64
			require.NoError(t, json.Unmarshal([]byte(runEnv(t, c.q, c.docs, nil)), &got))
			require.Len(t, got, len(c.want))
			for i := range got {
				assert.InDelta(t, 1, got[i]/c.want[i], 1e-6, "got %v, want %v", got[i], c.want[i])
			}
		})
	}
	exact := []struct {
		name string
		q    string
		docs []Doc
		want string
	}{
		{"ST_WITHIN", `SELECT VALUE {isHeadquartersWithinCampus: ST_WITHIN({"type": "Point", "coordinates": [-122.12824857332558, 47.6395516675712]},
			{"type": "Polygon", "coordinates": [[[-122.13236581015025, 47.64606476313813], [-122.13221982500913, 47.633757091363975],
			[-122.11840598103835, 47.641749416109235], [-122.12061400629656, 47.64589264786028], [-122.13236581015025, 47.64606476313813]]]})}`,
			nil, `[{"isHeadquartersWithinCampus":true}]`},
		{"ST_INTERSECTS", `SELECT VALUE {highWayAndCampusIntersect: ST_INTERSECTS(
			{"type": "Polygon", "coordinates": [[[-122.13693695285855, 47.64996065621003], [-122.1351662656516, 47.64627863318731],
			[-122.13488295569863, 47.646326350048696], [-122.1366182291613, 47.650016321952904], [-122.13693695285855, 47.64996065621003]]]},
			{"type": "Polygon", "coordinates": [[[-122.14034847687708, 47.6494835188378], [-122.14014779899375, 47.64625477474044],
			[-122.13256925774829, 47.646207057813655], [-122.13254564858545, 47.64941990019193], [-122.14034847687708, 47.6494835188378]]]})}`,
			nil, `[{"highWayAndCampusIntersect":true}]`},
		{"ST_ISVALID", `SELECT VALUE {valid: ST_ISVALID({"type": "Point", "coordinates": [-84.38876194345323, 33.75682784306348]}),
			invalid: ST_ISVALID({"type": "Point", "coordinates": [133.75682784306348, -184.38876194345323]})}`,
			nil, `[{"valid":true,"invalid":false}]`},
		{"ST_ISVALIDDETAILED", `SELECT VALUE {valid: ST_ISVALIDDETAILED({"type": "Point", "coordinates": [-84.38876194345323, 33.75682784306348]}),
			invalid: ST_ISVALIDDETAILED({"type": "Point", "coordinates": [133.75682784306348, -184.38876194345323]})}`,
			nil, `[{"valid":{"valid":true},"invalid":{"valid":false,"reason":"Latitude values must be between -90 and 90 degrees."}}]`},
		// The geospatial query page.
		{"distance filter", `SELECT f.id FROM Families f WHERE ST_DISTANCE(f.location, {"type": "Point", "coordinates":[31.9, -4.8]}) < 30000`,
			spatialFamilies, `[{"id":"MyDesignatedLocation"},{"id":"WakefieldFamily"}]`},
		{"within filter", `SELECT f.id FROM Families f WHERE ST_WITHIN(f.location, {"type":"Polygon", "coordinates": [[[31.8, -5], [32, -5], [32, -4.7], [31.8, -4.7], [31.8, -5]]]})`,
			spatialFamilies, `[{"id":"MyDesignatedLocation"},{"id":"WakefieldFamily"}]`},
		{"inverse within", `SELECT a.id FROM Areas a WHERE ST_WITHIN({"type": "Point", "coordinates":[31.9, -4.8]}, a.location)`,
			spatialFamilies[2:], `[{"id":"MyDesignatedLocation"}]`},
		{"latitude out of range", `SELECT ST_ISVALID({ "type": "Point", "coordinates": [31.9, -132.8] })`, nil, `[{"$1":false}]`},
		{"ring not closed", `SELECT ST_ISVALIDDETAILED({ "type": "Polygon", "coordinates": [[ [ 31.8, -5 ], [ 31.8, -4.7 ], [ 32, -4.7 ], [ 32, -5 ] ]]})`, nil,
			`[{"$1":{"valid":false,"reason":"The Polygon input is not valid because the start and end points of the ring number 1 are not the same. Each ring of a Polygon must have the same start and end points."}}]`},
		// ST_AREA of a Point or a LineString is 0.
		{"area of lower dimensions", `SELECT VALUE [ST_AREA({"type": "Point", "coordinates": [1, 2]}), ST_AREA({"type": "LineString", "coordinates": [[1, 2], [3, 4]]})]`, nil, `[[0,0]]`},
	}
	for _, c := range exact {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, compact(t, c.want), compact(t, runEnv(t, c.q, c.docs, nil)))
		})
	}
}

// TestSpatialUndefined: a value that is not a valid shape makes
// ST_DISTANCE, ST_WITHIN, ST_INTERSECTS and ST_AREA undefined, and the
// query goes on; ST_ISVALID(DETAILED) is undefined for a value that is not
// an object and says why an object is not a shape.
func TestSpatialUndefined(t *testing.T) {
	const p = `{"type": "Point", "coordinates": [1, 2]}`
	for _, bad := range []string{
		`1`, `"Point"`, `{}`, `{"type": "Point"}`, `{"type": "point", "coordinates": [1, 2]}`, `{"type": "MultiPoint", "coordinates": [[1, 2]]}`,
		`{"type": "Point", "coordinates": [1]}`, `{"type": "Point", "coordinates": [1, "2"]}`, `{"type": "Point", "coordinates": [200, 0]}`,
		`{"type": "LineString", "coordinates": [[1, 2]]}`, `{"type": "LineString", "coordinates": [[1, 2], [1, 2]]}`,
		`{"type": "Polygon", "coordinates": []}`, `{"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [0, 0]]]}`,
		`{"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0.5]]]}`,
		`{"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}`,
		`{"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 0], [0, 0]]]}`,
		`{"type": "MultiPolygon", "coordinates": [[[[0, 0], [2, 0], [2, 2], [0, 2], [0, 0]]], [[[1, 1], [3, 1], [3, 3], [1, 3], [1, 1]]]]}`,
	} {
		q := `SELECT VALUE [ST_DISTANCE(` + bad + `, ` + p + `), ST_WITHIN(` + p + `, ` + bad + `), ST_INTERSECTS(` + bad + `, ` + p + `), ST_AREA(` + bad + `), ST_ISVALID(` + p + `)]`
		assert.Equal(t, `[[true]]`, runEnv(t, q, nil, nil), bad)
		got := runEnv(t, `SELECT VALUE [ST_ISVALID(`+bad+`), ST_ISVALIDDETAILED(`+bad+`).valid, IS_STRING(ST_ISVALIDDETAILED(`+bad+`).reason)]`, nil, nil)
		if strings.HasPrefix(bad, "{") {
			assert.Equal(t, `[[false,false,true]]`, got, bad)
		} else {
			assert.Equal(t, `[[false]]`, got, bad) // IS_STRING(undefined)
		}
	}
}

// TestSpatialGeography pins the round-earth semantics beyond the
// documented examples: meters on WGS-84, 0 for shapes that meet, a ring
// given clockwise standing for the rest of the earth, holes.
func TestSpatialGeography(t *testing.T) {
	const (
		square    = `{"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]}`
		clockwise = `{"type": "Polygon", "coordinates": [[[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]]]}`
		holed     = `{"type": "Polygon", "coordinates": [[[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]], [[1, 1], [1, 3], [3, 3], [3, 1], [1, 1]]]}`
		multi     = `{"type": "MultiPolygon", "coordinates": [[[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]], [[[5, 5], [6, 5], [6, 6], [5, 6], [5, 5]]]]}`
		line      = `{"type": "LineString", "coordinates": [[-1, 0.5], [2, 0.5]]}`
	)
	pt := func(x, y string) string { return `{"type": "Point", "coordinates": [` + x + `, ` + y + `]}` }
	runCasesEnv := func(cases [][2]string) {
		for _, c := range cases {
			assert.Equal(t, compact(t, c[1]), compact(t, runEnv(t, c[0], nil, nil)), c[0])
		}
	}
	runCasesEnv([][2]string{
		{`SELECT VALUE [ST_WITHIN(` + pt("0.5", "0.5") + `, ` + square + `), ST_WITHIN(` + pt("0.5", "0.5") + `, ` + clockwise + `), ST_WITHIN(` + pt("50", "50") + `, ` + clockwise + `)]`, `[[true,false,true]]`},
		{`SELECT VALUE [ST_WITHIN(` + pt("2", "2") + `, ` + holed + `), ST_WITHIN(` + pt("0.5", "0.5") + `, ` + holed + `), ST_AREA(` + holed + `) < ST_AREA({"type": "Polygon", "coordinates": [[[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]]]})]`, `[[false,true,true]]`},
		{`SELECT VALUE [ST_WITHIN(` + pt("5.5", "5.5") + `, ` + multi + `), ST_WITHIN(` + pt("3", "3") + `, ` + multi + `), ST_WITHIN(` + square + `, ` + multi + `), ST_WITHIN(` + multi + `, ` + square + `)]`, `[[true,false,true,false]]`},
		{`SELECT VALUE [ST_INTERSECTS(` + line + `, ` + square + `), ST_WITHIN(` + line + `, ` + square + `), ST_DISTANCE(` + line + `, ` + square + `), ST_DISTANCE(` + pt("0.5", "0.5") + `, ` + square + `)]`, `[[true,false,0,0]]`},
		{`SELECT VALUE [ST_WITHIN(` + pt("1", "2") + `, ` + pt("1", "2") + `), ST_WITHIN(` + pt("1", "2") + `, ` + pt("1", "3") + `), ST_INTERSECTS(` + pt("1", "2") + `, ` + pt("1", "2") + `), ST_WITHIN(` + square + `, ` + line + `)]`, `[[true,false,true,false]]`},
	})
	// A degree of latitude at the equator is 110574.4 m on WGS-84, of
	// longitude 111319.5 m; the closest point of a square is on its edge.
	var all [][]float64
	require.NoError(t, json.Unmarshal([]byte(runEnv(t, `SELECT VALUE [ST_DISTANCE(`+pt("0", "0")+`, `+pt("0", "1")+`), ST_DISTANCE(`+pt("0", "0")+`, `+pt("1", "0")+`),
		ST_DISTANCE(`+pt("0.5", "-1")+`, `+square+`), ST_DISTANCE(`+square+`, {"type": "Polygon", "coordinates": [[[2, 0], [3, 0], [3, 1], [2, 1], [2, 0]]]}),
		ST_DISTANCE(`+pt("0", "0")+`, `+pt("180", "0")+`)]`, nil, nil)), &all))
	require.Len(t, all, 1)
	got := all[0]
	require.Len(t, got, 5)
	assert.InDelta(t, 110574.4, got[0], 0.1)
	assert.InDelta(t, 111319.5, got[1], 0.1)
	assert.InDelta(t, 110574.4, got[2], 1)
	assert.InDelta(t, 111319.5, got[3], 20) // between [1, y] and [2, y], the closest pair at y = 0 or 1
	assert.InDelta(t, 20003931, got[4], 0.005*20003931)
}

// TestSpatialGeometry pins the plane: Euclidean distances and areas in the
// units of the coordinates, no range of latitudes, orientation ignored.
func TestSpatialGeometry(t *testing.T) {
	env := &Env{Geometry: true}
	const square = `{"type": "Polygon", "coordinates": [[[0, 0], [0, 10], [10, 10], [10, 0], [0, 0]]]}` // clockwise
	for _, c := range [][2]string{
		{`SELECT VALUE ST_DISTANCE({"type": "Point", "coordinates": [0, 0]}, {"type": "Point", "coordinates": [300, 400]})`, `[500]`},
		{`SELECT VALUE ST_DISTANCE({"type": "Point", "coordinates": [5, 20]}, ` + square + `)`, `[10]`},
		{`SELECT VALUE ST_DISTANCE({"type": "LineString", "coordinates": [[20, 0], [20, 10]]}, ` + square + `)`, `[10]`},
		{`SELECT VALUE [ST_AREA(` + square + `), ST_AREA({"type": "Polygon", "coordinates": [[[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]], [[1, 1], [1, 2], [2, 2], [2, 1], [1, 1]]]})]`, `[[100,15]]`},
		{`SELECT VALUE [ST_WITHIN({"type": "Point", "coordinates": [5, 5]}, ` + square + `), ST_WITHIN({"type": "Point", "coordinates": [50, 5]}, ` + square + `)]`, `[[true,false]]`},
		{`SELECT VALUE [ST_WITHIN({"type": "Polygon", "coordinates": [[[1, 1], [2, 1], [2, 2], [1, 1]]]}, ` + square + `), ST_WITHIN(` + square + `, {"type": "Polygon", "coordinates": [[[1, 1], [2, 1], [2, 2], [1, 1]]]})]`, `[[true,false]]`},
		{`SELECT VALUE [ST_INTERSECTS({"type": "LineString", "coordinates": [[-5, 5], [5, 5]]}, ` + square + `), ST_INTERSECTS({"type": "LineString", "coordinates": [[-5, 5], [-1, 5]]}, ` + square + `)]`, `[[true,false]]`},
		{`SELECT VALUE ST_ISVALID({"type": "Point", "coordinates": [500, -1000]})`, `[true]`},
	} {
		assert.Equal(t, c[1], runEnv(t, c[0], nil, env), c[0])
	}
}

// TestSpatialFilters: the conditions a spatial index can answer, each form
// of them, and those it cannot.
func TestSpatialFilters(t *testing.T) {
	const pt = `{"type": "Point", "coordinates": [1, 2]}`
	for _, c := range []struct {
		where  string
		path   string
		within float64
	}{
		{`ST_DISTANCE(c.loc, ` + pt + `) < 100`, "loc", 100},
		{`ST_DISTANCE(` + pt + `, c.a.b) <= @r`, "a/b", 250},
		{`100 > ST_DISTANCE(c["loc"], ` + pt + `)`, "loc", 100},
		{`ST_WITHIN(c.loc, ` + pt + `)`, "loc", 0},
		{`ST_WITHIN(` + pt + `, c.loc) AND c.x = 1`, "loc", 0},
		{`ST_INTERSECTS(c.loc, @shape)`, "loc", 0},
		{`ST_DISTANCE(c.loc, ` + pt + `) < -5`, "loc", 0},
		{`ST_DISTANCE(c.loc, {"type": "Point", "coordinates": [-1, -2]}) < 100`, "loc", 100},
	} {
		q, err := Parse(`SELECT * FROM c WHERE ` + c.where)
		require.NoError(t, err)
		fs := q.SpatialFilters(map[string]any{"@r": 250, "@shape": map[string]any{"type": "Point", "coordinates": []any{1, 2}}}, geo.Geography)
		require.Len(t, fs, 1, c.where)
		assert.Equal(t, strings.Split(c.path, "/"), fs[0].Path, c.where)
		assert.Equal(t, c.within, fs[0].Within, c.where)
		assert.Equal(t, geo.Point, fs[0].Shape.Kind, c.where)
	}
	for _, where := range []string{
		`ST_DISTANCE(c.loc, ` + pt + `) > 100`,
		`ST_DISTANCE(c.loc, ` + pt + `) < c.r`,
		`ST_DISTANCE(c.loc, c.other) < 100`,
		`ST_WITHIN(c.loc, {"type": "Point", "coordinates": [1, 200]})`,
		`NOT ST_WITHIN(c.loc, ` + pt + `)`,
		`ST_WITHIN(c.loc, ` + pt + `) OR c.x = 1`,
		`ST_DISTANCE(c.loc, ` + pt + `) < NaN`,
		`ST_AREA(c.loc) < 100`,
	} {
		q, err := Parse(`SELECT * FROM c WHERE ` + where)
		require.NoError(t, err)
		assert.Empty(t, q.SpatialFilters(nil, geo.Geography), where)
	}
}

// TestShapeAt reads the valid shape at a path of an item.
func TestShapeAt(t *testing.T) {
	doc := []byte(`{"a":{"loc":{"type":"Point","coordinates":[3,4]}},"bad":{"type":"Point","coordinates":[0,100]},"n":1}`)
	s, ok := ShapeAt(doc, []string{"a", "loc"}, geo.Geography)
	require.True(t, ok)
	assert.Equal(t, []geo.Pos{{3, 4}}, s.Line)
	for _, p := range [][]string{{"bad"}, {"n"}, {"missing"}, {"a", "loc", "type"}} {
		_, ok := ShapeAt(doc, p, geo.Geography)
		assert.False(t, ok, p)
	}
	_, ok = ShapeAt(doc, []string{"bad"}, geo.Geometry)
	assert.True(t, ok, "no range of latitudes in the plane")
	assert.False(t, math.IsNaN(geo.Vincenty(geo.Pos{0, 0}, geo.Pos{179.5, 0.5})))
}

func init() {
	fuzzSeeds = append(fuzzSeeds,
		`SELECT VALUE [ST_DISTANCE(c.x, {"type": "Point", "coordinates": [1, 2]}), ST_WITHIN(c.x, c.o), ST_INTERSECTS(c.o, c.x), ST_AREA(c.x), ST_ISVALIDDETAILED(c.o)] FROM c`,
	)
}
