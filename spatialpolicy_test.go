package lethe_test

import (
	"fmt"
	"testing"

	"github.com/lethedb/lethe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spatialProps is a container with a spatial index of /location, of the
// type typ (Geography when "") and with the bounding box bb.
func spatialProps(id string, typ lethe.GeospatialType, bb *lethe.BoundingBox) lethe.ContainerProperties {
	p := lethe.ContainerProperties{
		ID:                     id,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/pk"}},
		IndexingPolicy: &lethe.IndexingPolicy{SpatialIndexes: []lethe.SpatialIndex{
			{Path: "/location/?", Types: []lethe.SpatialType{lethe.SpatialPoint, lethe.SpatialPolygon}, BoundingBox: bb},
		}},
	}
	if typ != "" {
		p.GeospatialConfig = &lethe.GeospatialConfig{Type: typ}
	}
	return p
}

// TestSpatialPolicyRules: the geospatialConfig and spatial indexes Cosmos
// DB accepts and those it refuses (a Geometry container's indexes need a
// boundingBox, a Geography one's cannot have one), each refusal a bad
// request naming what was wrong and creating nothing.
func TestSpatialPolicyRules(t *testing.T) {
	t.Parallel()
	box := &lethe.BoundingBox{Xmin: 0, Ymin: 0, Xmax: 100, Ymax: 100}
	cases := []struct {
		name string
		p    lethe.ContainerProperties
		bad  []string // fragments of the refusal; none if accepted
	}{
		{"geography by default", spatialProps("", "", nil), nil},
		{"geography", spatialProps("", lethe.GeospatialGeography, nil), nil},
		{"geometry with a box", spatialProps("", lethe.GeospatialGeometry, box), nil},
		{"type in any case", spatialProps("", "geometry", box), nil},
		{"geometry without a box", spatialProps("", lethe.GeospatialGeometry, nil), []string{"boundingBox", "Geometry", `"/location/?"`}},
		{"geography with a box", spatialProps("", lethe.GeospatialGeography, &lethe.BoundingBox{Xmin: -180, Ymin: -90, Xmax: 180, Ymax: 90}), []string{"boundingBox", "Geography"}},
		{"default with a box", spatialProps("", "", box), []string{"boundingBox", "Geography"}},
		{"empty box", spatialProps("", lethe.GeospatialGeometry, &lethe.BoundingBox{Xmin: 1, Xmax: 1, Ymax: 1}), []string{"boundingBox", "xmin must be less than xmax"}},
		{"unknown type", spatialProps("", "Sphere", nil), []string{`geospatialConfig type "Sphere"`}},
		{"unknown spatial type", func() lethe.ContainerProperties {
			p := spatialProps("", "", nil)
			p.IndexingPolicy.SpatialIndexes[0].Types = []lethe.SpatialType{"MultiPoint"}
			return p
		}(), []string{`the type "MultiPoint"`}},
		{"bad path", func() lethe.ContainerProperties {
			p := spatialProps("", "", nil)
			p.IndexingPolicy.SpatialIndexes[0].Path = "location"
			return p
		}(), []string{`"location" is invalid`}},
		{"path twice", func() lethe.ContainerProperties {
			p := spatialProps("", "", nil)
			p.IndexingPolicy.SpatialIndexes = append(p.IndexingPolicy.SpatialIndexes, p.IndexingPolicy.SpatialIndexes[0])
			return p
		}(), []string{`spatial index path "/location/?" twice`}},
		{"mode none", func() lethe.ContainerProperties {
			p := spatialProps("", "", nil)
			p.IndexingPolicy.IndexingMode = lethe.IndexingModeNone
			return p
		}(), []string{"indexing mode is none"}},
		{"geometry without indexes", lethe.ContainerProperties{GeospatialConfig: &lethe.GeospatialConfig{Type: lethe.GeospatialGeometry}}, nil},
	}
	s, _ := newStore(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			p.ID = fmt.Sprint("c", i)
			_, err := s.CreateContainer(ctx, p)
			if len(tc.bad) == 0 {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, lethe.ErrBadRequest)
			for _, b := range tc.bad {
				assert.Contains(t, err.Error(), b)
			}
			_, err = s.Container(p.ID)
			assert.ErrorIs(t, err, lethe.ErrNotFound, "a refused container is not created")
		})
	}
}

// TestSpatialPolicyKept: the policy comes back as given (names in their
// canonical spelling), a copy the caller cannot change the container
// through, and a replacement changes it (Geography to Geometry, with a
// box) or is refused, changing nothing.
func TestSpatialPolicyKept(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	p := spatialProps("c", "GEOGRAPHY", nil)
	p.IndexingPolicy.SpatialIndexes[0].Types = []lethe.SpatialType{"point", "linestring"}
	c := mustContainer(t, s, p)
	got, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, &lethe.GeospatialConfig{Type: lethe.GeospatialGeography}, got.GeospatialConfig)
	assert.Equal(t, []lethe.SpatialIndex{{Path: "/location/?", Types: []lethe.SpatialType{lethe.SpatialPoint, lethe.SpatialLineString}}}, got.IndexingPolicy.SpatialIndexes)
	got.IndexingPolicy.SpatialIndexes[0].Types[0] = "x"
	got.GeospatialConfig.Type = "y"
	again, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, lethe.SpatialPoint, again.IndexingPolicy.SpatialIndexes[0].Types[0])
	assert.Equal(t, lethe.GeospatialGeography, again.GeospatialConfig.Type)

	bad := again
	bad.GeospatialConfig = &lethe.GeospatialConfig{Type: lethe.GeospatialGeometry}
	require.ErrorIs(t, c.Replace(ctx, bad), lethe.ErrBadRequest, "Geometry without a box")
	unchanged, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, again, unchanged)

	box := lethe.BoundingBox{Xmin: -10, Ymin: -20, Xmax: 10, Ymax: 20}
	bad.IndexingPolicy.SpatialIndexes[0].BoundingBox = &box
	require.NoError(t, c.Replace(ctx, bad))
	got, err = c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, lethe.GeospatialGeometry, got.GeospatialConfig.Type)
	assert.Equal(t, &box, got.IndexingPolicy.SpatialIndexes[0].BoundingBox)
}

// TestSpatialPolicyDurable: the geospatialConfig and spatial indexes are
// container properties, kept by the log and by snapshots.
func TestSpatialPolicyDurable(t *testing.T) {
	t.Parallel()
	for _, checkpoint := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint=%v", checkpoint), func(t *testing.T) {
			dir := t.TempDir()
			clock := lethe.NewManualClock(t0)
			s := openDurable(t, dir, clock)
			mustContainer(t, s, spatialProps("geography", "", nil))
			replaced := mustContainer(t, s, spatialProps("geometry", "", nil))
			p, err := replaced.Read(ctx)
			require.NoError(t, err)
			p.GeospatialConfig = &lethe.GeospatialConfig{Type: lethe.GeospatialGeometry}
			p.IndexingPolicy.SpatialIndexes[0].BoundingBox = &lethe.BoundingBox{Xmin: 0, Ymin: 0, Xmax: 100, Ymax: 100}
			require.NoError(t, replaced.Replace(ctx, p))
			if checkpoint {
				require.NoError(t, s.Checkpoint(ctx))
			}
			var want []lethe.ContainerProperties
			for _, id := range []string{"geography", "geometry"} {
				c, err := s.Container(id)
				require.NoError(t, err)
				p, err := c.Read(ctx)
				require.NoError(t, err)
				want = append(want, p)
			}
			require.NoError(t, s.Close())

			s = openDurable(t, dir, clock)
			defer s.Close()
			for _, w := range want {
				c, err := s.Container(w.ID)
				require.NoError(t, err)
				got, err := c.Read(ctx)
				require.NoError(t, err)
				assert.Equal(t, w, got)
			}
			assert.Equal(t, lethe.GeospatialGeometry, want[1].GeospatialConfig.Type)
			assert.NotNil(t, want[1].IndexingPolicy.SpatialIndexes[0].BoundingBox)
		})
	}
}

// TestSpatialPolicyModel: a container's queries compute in its
// geospatialConfig's model: meters on the earth for Geography, units of
// the coordinates in the plane for Geometry (where [30, 140] is a valid
// point), and a replacement of the config changes the model at once.
func TestSpatialPolicyModel(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	c := mustContainer(t, s, lethe.ContainerProperties{ID: "c"})
	for _, doc := range []string{`{"id":"a","loc":{"type":"Point","coordinates":[3,4]}}`, `{"id":"b","loc":{"type":"Point","coordinates":[30,140]}}`} {
		_, err := c.CreateItem(ctx, lethe.NewPartitionKey(), []byte(doc), nil)
		require.NoError(t, err)
	}
	const q = `SELECT VALUE [c.id, ST_DISTANCE(c.loc, {"type": "Point", "coordinates": [0, 0]})] FROM c`
	got, _ := queryAll(t, c, q, nil, lethe.NewPartitionKey())
	require.Len(t, got, 2)
	assert.Contains(t, got[0], `"a",55`) // about 555 km
	assert.Equal(t, `["b"]`, got[1], "latitude 140 is not on the earth")

	p, err := c.Read(ctx)
	require.NoError(t, err)
	p.GeospatialConfig = &lethe.GeospatialConfig{Type: lethe.GeospatialGeometry}
	require.NoError(t, c.Replace(ctx, p))
	got, _ = queryAll(t, c, q, nil, lethe.NewPartitionKey())
	assert.Equal(t, []string{`["a",5]`, `["b",143.17821063276352]`}, got)
}
