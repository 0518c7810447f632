package cosmosrest_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lethedb/lethe/cosmosrest"
)

// spatialParts returns the geospatialConfig and spatial indexes of a
// container's JSON.
func spatialParts(t *testing.T, body []byte) [2]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	ip, _ := m["indexingPolicy"].(map[string]any)
	return [2]any{m["geospatialConfig"], ip["spatialIndexes"]}
}

// TestContainerSpatialPolicy: geospatialConfig and spatialIndexes go in and
// come back out in Cosmos DB's JSON through create, read and replace (a
// container without them is Geography, without spatial indexes); a Geometry
// index without a boundingBox, or a Geography one with one, is a 400 naming
// both, as @azure/cosmos's spatialIndexBoundingBox spec expects.
func TestContainerSpatialPolicy(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	geography := `{"id":"geo","partitionKey":{"paths":["/id"]},"geospatialConfig":{"type":"Geography"},
		"indexingPolicy":{"spatialIndexes":[{"path":"/location/?","types":["Point"]}]}}`
	created := must(t, c.do("POST", "/dbs/db/colls", geography), 201)
	want := [2]any{map[string]any{"type": "Geography"}, []any{map[string]any{"path": "/location/?", "types": []any{"Point"}}}}
	if got := spatialParts(t, created.body); !reflect.DeepEqual(got, want) {
		t.Errorf("created:\n got %v\nwant %v", got, want)
	}
	read := must(t, c.do("GET", "/dbs/db/colls/geo", nil), 200)
	if got := spatialParts(t, read.body); !reflect.DeepEqual(got, want) {
		t.Errorf("read:\n got %v\nwant %v", got, want)
	}
	plain := must(t, c.do("POST", "/dbs/db/colls", map[string]any{"id": "plain"}), 201)
	if got := spatialParts(t, plain.body); !reflect.DeepEqual(got, [2]any{map[string]any{"type": "Geography"}, nil}) {
		t.Errorf("plain: %v", got)
	}

	geometry := `{"id":"geom","partitionKey":{"paths":["/id"]},"geospatialConfig":{"type":"Geometry"},
		"indexingPolicy":{"spatialIndexes":[{"path":"/location/?","types":["Point","Polygon"],"boundingBox":{"xmin":0,"ymin":0,"xmax":100,"ymax":100}}]}}`
	created = must(t, c.do("POST", "/dbs/db/colls", geometry), 201)
	want = [2]any{map[string]any{"type": "Geometry"}, []any{map[string]any{"path": "/location/?", "types": []any{"Point", "Polygon"},
		"boundingBox": map[string]any{"xmin": 0.0, "ymin": 0.0, "xmax": 100.0, "ymax": 100.0}}}}
	if got := spatialParts(t, created.body); !reflect.DeepEqual(got, want) {
		t.Errorf("geometry:\n got %v\nwant %v", got, want)
	}
	// The plane: a distance in the units of the coordinates.
	must(t, c.do("POST", "/dbs/db/colls/geom/docs", map[string]any{"id": "a", "location": map[string]any{"type": "Point", "coordinates": []any{30, 40}}}, "x-ms-documentdb-partitionkey", `["a"]`), 201)
	q := c.do("POST", "/dbs/db/colls/geom/docs", map[string]any{"query": `SELECT VALUE ST_DISTANCE(c.location, {"type": "Point", "coordinates": [0, 0]}) FROM c`},
		"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True", "x-ms-documentdb-query-enablecrosspartition", "True")
	if q.status != 200 || !strings.Contains(string(q.body), `"Documents":[50]`) {
		t.Errorf("query: %d %s", q.status, q.body)
	}

	// Replace: Geometry to Geography keeps the box: refused, nothing changed.
	m := created.json(t)
	m["geospatialConfig"] = map[string]any{"type": "Geography"}
	if r := c.do("PUT", "/dbs/db/colls/geom", m); r.status != 400 || !strings.Contains(string(r.body), "boundingBox") {
		t.Errorf("replace to Geography with a box: %d %s", r.status, r.body)
	}
	again := must(t, c.do("GET", "/dbs/db/colls/geom", nil), 200)
	if got := spatialParts(t, again.body); !reflect.DeepEqual(got, want) {
		t.Errorf("a refused replace changed the container: %v", got)
	}

	for _, tc := range []struct{ body, geoType string }{
		{`{"id":"x","partitionKey":{"paths":["/id"]},"geospatialConfig":{"type":"Geometry"},"indexingPolicy":{"spatialIndexes":[{"path":"/location/?","types":["Point"]}]}}`, "Geometry"},
		{`{"id":"x","partitionKey":{"paths":["/id"]},"geospatialConfig":{"type":"Geography"},"indexingPolicy":{"spatialIndexes":[{"path":"/location/?","types":["Point"],"boundingBox":{"xmin":-180,"ymin":-90,"xmax":180,"ymax":90}}]}}`, "Geography"},
	} {
		r := c.do("POST", "/dbs/db/colls", tc.body)
		if r.status != 400 || !strings.Contains(string(r.body), "boundingBox") || !strings.Contains(string(r.body), tc.geoType) {
			t.Errorf("%s: status %d, body %s; want 400 naming boundingBox and %s", tc.body, r.status, r.body, tc.geoType)
		}
	}
	must(t, c.do("GET", "/dbs/db/colls/x", nil), 404)
}

// TestLegacySpatialIncludedPath: a policy of Cosmos DB's first API
// versions, a spatial index in includedPaths and the root spelled "/", as
// @azure/cosmos's spatial spec sends it, makes a container whose root is
// "/*", and ST_DISTANCE filters its items (an invalid Point is none).
func TestLegacySpatialIncludedPath(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	createDB(t, c, "db")
	created := must(t, c.do("POST", "/dbs/db/colls", `{"id":"legacy","indexingPolicy":{"includedPaths":[
		{"path":"/\"Location\"/?","indexes":[{"kind":"Spatial","dataType":"Point"}]},{"path":"/"}]}}`), 201)
	if !strings.Contains(string(created.body), `{"path":"/*"}`) {
		t.Errorf("the root path: %s", created.body)
	}
	for _, doc := range []string{`{"id":"location1","Location":{"type":"Point","coordinates":[20,20]}}`, `{"id":"location2","Location":{"type":"Point","coordinates":[100,100]}}`} {
		must(t, c.do("POST", "/dbs/db/colls/legacy/docs", doc), 201)
	}
	q := c.do("POST", "/dbs/db/colls/legacy/docs", map[string]any{"query": `SELECT VALUE root.id FROM root WHERE (ST_DISTANCE(root.Location, {type: 'Point', coordinates: [20.1, 20]}) < 20000)`},
		"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True")
	if q.status != 200 || !strings.Contains(string(q.body), `"Documents":["location1"]`) {
		t.Errorf("query: %d %s", q.status, q.body)
	}
}
