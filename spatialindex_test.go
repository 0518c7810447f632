package lethe_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spatialCorpus makes random GeoJSON for a differential test: points,
// lines and convex polygons (counterclockwise, now and then clockwise) in
// a region, shapes that are not valid, and other values.
type spatialCorpus struct {
	rng    *rand.Rand
	lo, hi float64 // the region's coordinates, both axes
}

func (sc spatialCorpus) coord() float64 { return sc.lo + sc.rng.Float64()*(sc.hi-sc.lo) }

func (sc spatialCorpus) point() map[string]any {
	return map[string]any{"type": "Point", "coordinates": []float64{sc.coord(), sc.coord()}}
}

// polygon is a convex polygon around a random center.
func (sc spatialCorpus) polygon(maxRadius float64, clockwise bool) map[string]any {
	cx, cy, r := sc.coord(), sc.coord(), maxRadius*(0.05+sc.rng.Float64())
	n := 3 + sc.rng.IntN(6)
	angles := make([]float64, n)
	for i := range angles {
		angles[i] = sc.rng.Float64() * 2 * math.Pi
	}
	slices.Sort(angles)
	angles = slices.Compact(angles)
	ring := make([][]float64, 0, len(angles)+1)
	for _, a := range angles {
		ring = append(ring, []float64{cx + r*math.Cos(a), cy + r*math.Sin(a)})
	}
	if clockwise {
		slices.Reverse(ring)
	}
	ring = append(ring, ring[0])
	return map[string]any{"type": "Polygon", "coordinates": [][][]float64{ring}}
}

func (sc spatialCorpus) shape() any {
	switch sc.rng.IntN(20) {
	case 0:
		return nil
	case 1:
		return map[string]any{"type": "Point", "coordinates": []float64{sc.coord(), 95}} // off the earth
	case 2:
		return "Point"
	case 3:
		return map[string]any{"type": "LineString", "coordinates": [][]float64{{sc.coord(), sc.coord()}, {sc.coord(), sc.coord()}}}
	case 4, 5:
		return sc.polygon((sc.hi-sc.lo)/10, sc.rng.IntN(8) == 0)
	case 6:
		return map[string]any{"type": "MultiPolygon", "coordinates": []any{sc.polygon((sc.hi-sc.lo)/20, false)["coordinates"]}}
	}
	return sc.point()
}

// TestSpatialIndexDifferential: random shapes, changed by random writes,
// deletes, expiries and purges on an injected clock, queried with random
// spatial filters: every query through the spatial index returns exactly
// what the scan returns (and so never an expired item), in both models,
// and the filters an index can serve use it.
func TestSpatialIndexDifferential(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		props  lethe.ContainerProperties
		lo, hi float64
		radii  []float64
	}{
		{"geography", lethe.ContainerProperties{IndexingPolicy: &lethe.IndexingPolicy{SpatialIndexes: []lethe.SpatialIndex{{Path: "/*", Types: []lethe.SpatialType{lethe.SpatialPoint}}}}},
			-2, 2, []float64{0, 500, 20000, 100000, 400000}},
		{"geometry", lethe.ContainerProperties{GeospatialConfig: &lethe.GeospatialConfig{Type: lethe.GeospatialGeometry},
			IndexingPolicy: &lethe.IndexingPolicy{SpatialIndexes: []lethe.SpatialIndex{{Path: "/loc/?", Types: []lethe.SpatialType{lethe.SpatialPolygon},
				BoundingBox: &lethe.BoundingBox{Xmin: -50, Ymin: -50, Xmax: 50, Ymax: 50}}}}},
			-60, 60, []float64{0, 1, 5, 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			seed := rand.Uint64()
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 2))
			sc := spatialCorpus{rng: rng, lo: tc.lo, hi: tc.hi}
			s, clock := newStore(t)
			props := tc.props
			props.ID, props.DefaultTimeToLive = "c", lethe.TTLNever
			props.PartitionKeyDefinition = lethe.PartitionKeyDefinition{Paths: []string{"/pk"}}
			c := mustContainer(t, s, props)
			write := func() {
				id := rng.IntN(300)
				d := map[string]any{"id": fmt.Sprint("i", id), "pk": fmt.Sprint("p", id%3), "loc": sc.shape(), "n": rng.IntN(10)}
				if rng.IntN(4) == 0 {
					d["ttl"] = 1 + rng.IntN(30)
				}
				b, err := json.Marshal(d)
				require.NoError(t, err)
				pk := lethe.NewPartitionKeyString(d["pk"].(string))
				if rng.IntN(10) == 0 {
					_, _ = c.DeleteItem(ctx, pk, d["id"].(string), nil)
					return
				}
				_, err = c.UpsertItem(ctx, pk, b, nil)
				require.NoError(t, err)
			}
			for range 200 {
				write()
			}
			queries := []string{
				`SELECT VALUE c.id FROM c WHERE ST_DISTANCE(c.loc, @p) < @r`,
				`SELECT c.id, c.n FROM c WHERE @r >= ST_DISTANCE(@p, c.loc) AND c.n > 3`,
				`SELECT VALUE c.id FROM c WHERE ST_WITHIN(c.loc, @poly)`,
				`SELECT VALUE c.id FROM c WHERE ST_WITHIN(@p, c.loc)`,
				`SELECT * FROM c WHERE ST_INTERSECTS(c.loc, @poly)`,
				`SELECT VALUE c.id FROM c WHERE ST_INTERSECTS(@poly, c.loc) AND ST_DISTANCE(c.loc, @p) <= @r`,
				`SELECT TOP 5 c.id FROM c WHERE ST_DISTANCE(c.loc, @p) < @r ORDER BY c.n`,
				`SELECT VALUE COUNT(1) FROM c WHERE ST_WITHIN(c.loc, @poly)`,
			}
			used := 0
			for step := range 300 {
				for range 1 + rng.IntN(4) {
					write()
				}
				switch rng.IntN(6) {
				case 0:
					clock.Advance(time.Duration(rng.IntN(8000)) * time.Millisecond)
				case 1:
					_, err := c.Purge(ctx)
					require.NoError(t, err)
				}
				q := queries[rng.IntN(len(queries))]
				params := []lethe.QueryParameter{
					{Name: "@p", Value: sc.point()},
					{Name: "@r", Value: tc.radii[rng.IntN(len(tc.radii))]},
					{Name: "@poly", Value: sc.polygon((tc.hi-tc.lo)/3, rng.IntN(10) == 0)},
				}
				var kept []lethe.QueryParameter
				for _, p := range params {
					if strings.Contains(q, p.Name) {
						kept = append(kept, p)
					}
				}
				pk := lethe.NewPartitionKey()
				if rng.IntN(3) == 0 {
					pk = lethe.NewPartitionKeyString(fmt.Sprint("p", rng.IntN(3)))
				}
				withIndex, metrics := queryAll(t, c, q, kept, pk)
				was := lethe.SetUseIndexes(c, false)
				scan, _ := queryAll(t, c, q, kept, pk)
				lethe.SetUseIndexes(c, was)
				require.Equal(t, scan, withIndex, "step %d: %s %v", step, q, kept)
				if strings.Contains(metrics, `"UtilizedSingleIndexes":[{`) {
					used++
				}
			}
			assert.Greater(t, used, 100, "the spatial index serves the filters")
		})
	}
}

// TestSpatialIndexExpiry: an item that expires is never returned through
// the index, purged or not, and a policy without a spatial index of the
// path leaves the query to the scan.
func TestSpatialIndexExpiry(t *testing.T) {
	t.Parallel()
	s, clock := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c", DefaultTimeToLive: lethe.TTLNever,
		IndexingPolicy: &lethe.IndexingPolicy{SpatialIndexes: []lethe.SpatialIndex{{Path: "/loc/?"}}}})
	for i, ttl := range []int{0, 5, 0} {
		d := map[string]any{"id": fmt.Sprint("i", i), "loc": map[string]any{"type": "Point", "coordinates": []float64{float64(i) / 100, 0}}}
		if ttl > 0 {
			d["ttl"] = ttl
		}
		b, _ := json.Marshal(d)
		_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), b, nil)
		require.NoError(t, err)
	}
	const q = `SELECT VALUE c.id FROM c WHERE ST_DISTANCE(c.loc, {"type": "Point", "coordinates": [0, 0]}) < 10000`
	got, metrics := queryAll(t, c, q, nil, lethe.NewPartitionKey())
	assert.Equal(t, []string{`"i0"`, `"i1"`, `"i2"`}, got)
	assert.Contains(t, metrics, `"UtilizedSingleIndexes":[{`)
	clock.Advance(6 * time.Second)
	got, _ = queryAll(t, c, q, nil, lethe.NewPartitionKey())
	assert.Equal(t, []string{`"i0"`, `"i2"`}, got, "expired, not purged")
	_, err := c.Purge(ctx)
	require.NoError(t, err)
	got, _ = queryAll(t, c, q, nil, lethe.NewPartitionKey())
	assert.Equal(t, []string{`"i0"`, `"i2"`}, got, "purged")

	_, metrics = queryAll(t, c, strings.Replace(q, "c.loc", "c.other", 1), nil, lethe.NewPartitionKey())
	assert.NotContains(t, metrics, `"UtilizedSingleIndexes":[{`, "no spatial index of /other")
	p, err := c.Read(ctx)
	require.NoError(t, err)
	p.IndexingPolicy.SpatialIndexes = nil
	require.NoError(t, c.Replace(ctx, p))
	got, metrics = queryAll(t, c, q, nil, lethe.NewPartitionKey())
	assert.Equal(t, []string{`"i0"`, `"i2"`}, got)
	assert.NotContains(t, metrics, `"UtilizedSingleIndexes":[{`, "the index is dropped with the policy")
}

// TestSpatialIndexTightRadius: for points in every direction from a
// center, at every latitude, a radius just past each point's distance
// finds it through the index, as the scan does: the index's cap is never
// narrower than the ellipsoid's distances (its radius is taken at the
// ellipsoid's least curvature).
func TestSpatialIndexTightRadius(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c",
		IndexingPolicy: &lethe.IndexingPolicy{SpatialIndexes: []lethe.SpatialIndex{{Path: "/loc/?"}}}})
	type target struct {
		center []float64
		id     string
	}
	var targets []target
	for i := range 60 {
		lat := -85 + 170*rng.Float64()
		lon := -180 + 360*rng.Float64()
		dlat, dlon := (rng.Float64()-0.5)*2, (rng.Float64()-0.5)*2
		if i%3 == 0 {
			dlon = 0 // along a meridian, where the ellipsoid curves least at the equator
		}
		p := []float64{math.Max(-180, math.Min(180, lon+dlon)), math.Max(-90, math.Min(90, lat+dlat))}
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprint("i", i), "loc": map[string]any{"type": "Point", "coordinates": p}})
		_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), b, nil)
		require.NoError(t, err)
		targets = append(targets, target{[]float64{lon, lat}, fmt.Sprint("i", i)})
	}
	for _, tg := range targets {
		center := map[string]any{"type": "Point", "coordinates": tg.center}
		d, _ := queryAll(t, c, `SELECT VALUE ST_DISTANCE(c.loc, @p) FROM c WHERE c.id = @id`, []lethe.QueryParameter{{Name: "@p", Value: center}, {Name: "@id", Value: tg.id}}, lethe.NewPartitionKey())
		require.Len(t, d, 1)
		var dist float64
		require.NoError(t, json.Unmarshal([]byte(d[0]), &dist))
		params := []lethe.QueryParameter{{Name: "@p", Value: center}, {Name: "@r", Value: math.Nextafter(dist, math.Inf(1))}}
		const q = `SELECT VALUE c.id FROM c WHERE ST_DISTANCE(c.loc, @p) < @r`
		got, metrics := queryAll(t, c, q, params, lethe.NewPartitionKey())
		assert.Contains(t, metrics, `"UtilizedSingleIndexes":[{`)
		assert.Contains(t, got, `"`+tg.id+`"`, "radius %v around %v", dist, tg.center)
	}
}

// TestSpatialIndexPolicyChange: a replacement of the geospatialConfig
// drops the index made in the old model; the next query makes one in the
// new model and returns what the scan returns in it.
func TestSpatialIndexPolicyChange(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c",
		IndexingPolicy: &lethe.IndexingPolicy{SpatialIndexes: []lethe.SpatialIndex{{Path: "/*"}}}})
	for i, p := range [][]float64{{0, 0}, {0.5, 0}, {3, 4}, {30, 140}} {
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprint("i", i), "loc": map[string]any{"type": "Point", "coordinates": p}})
		_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), b, nil)
		require.NoError(t, err)
	}
	const q = `SELECT VALUE c.id FROM c WHERE ST_DISTANCE(c.loc, {"type": "Point", "coordinates": [0, 0]}) < 60000`
	got, metrics := queryAll(t, c, q, nil, lethe.NewPartitionKey())
	assert.Equal(t, []string{`"i0"`, `"i1"`}, got, "meters on the earth")
	assert.Contains(t, metrics, `"UtilizedSingleIndexes":[{`)

	p, err := c.Read(ctx)
	require.NoError(t, err)
	p.GeospatialConfig = &lethe.GeospatialConfig{Type: lethe.GeospatialGeometry}
	p.IndexingPolicy.SpatialIndexes[0].BoundingBox = &lethe.BoundingBox{Xmin: -10, Ymin: -10, Xmax: 10, Ymax: 10}
	require.NoError(t, c.Replace(ctx, p))
	const plane = `SELECT VALUE c.id FROM c WHERE ST_DISTANCE(c.loc, {"type": "Point", "coordinates": [0, 0]}) <= 5`
	got, metrics = queryAll(t, c, plane, nil, lethe.NewPartitionKey())
	assert.Equal(t, []string{`"i0"`, `"i1"`, `"i2"`}, got, "units of the plane; [30, 140], outside the box, is a candidate and too far")
	assert.Contains(t, metrics, `"UtilizedSingleIndexes":[{`)
	got, _ = queryAll(t, c, strings.Replace(plane, "<= 5", "< 200", 1), nil, lethe.NewPartitionKey())
	assert.Equal(t, []string{`"i0"`, `"i1"`, `"i2"`, `"i3"`}, got, "a shape outside the box is found")
}
