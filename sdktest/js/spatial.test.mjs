// @azure/cosmos's own spatial specs (test/public/functional/spatial.spec.ts
// and spatialIndexBoundingBox.spec.ts in Azure/azure-sdk-for-js), written
// again for node --test against cmd/lethe started as a user starts it (in
// memory, HTTPS): a spatial index declared the legacy way serves
// ST_DISTANCE, a Geography spatial index needs no boundingBox and a
// Geometry one comes back with its own, and a Geometry index without a
// boundingBox or a Geography one with one is a 400 naming both. Also: the
// documented ST_DISTANCE figures, through the SDK, within 0.1%.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";

import { CosmosClient, DataType, GeospatialType, IndexKind, SpatialType } from "@azure/cosmos";

import { buildLethe, emulatorKey, startLethe, stopLethe } from "./harness.mjs";

let lethe; // the command, built once
let server;
let agent;
let client;

before(async () => {
  lethe = await buildLethe();
  server = await startLethe(lethe.bin, "-compute-addr", "127.0.0.1:0");
  agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false }); // its self-signed certificate
  client = new CosmosClient({ endpoint: server.url, key: emulatorKey, agent });
});

after(async () => {
  client?.dispose();
  agent?.destroy();
  if (server) await stopLethe(server);
  await lethe?.remove();
});

// database creates a database of its own for a test.
async function database(id) {
  const { database } = await client.databases.createIfNotExists({ id });
  return database;
}

describe("Spatial Indexes (spatial.spec.ts)", { timeout: 60_000 }, () => {
  for (const upsert of [false, true]) {
    test(`a spatial index named in includedPaths serves ST_DISTANCE (${upsert ? "upsert" : "create"})`, async () => {
      const db = await database(`validate spatial index ${upsert}`);
      const indexingPolicy = {
        includedPaths: [{ path: '/"Location"/?', indexes: [{ kind: IndexKind.Spatial, dataType: DataType.Point }] }, { path: "/" }],
      };
      const { resource: def } = await db.containers.create({ id: `sample container${Math.floor(Math.random() * 10000)}`, indexingPolicy });
      const container = db.container(def.id);
      for (const item of [
        { id: "location1", Location: { type: "Point", coordinates: [20.0, 20.0] } },
        { id: "location2", Location: { type: "Point", coordinates: [100.0, 100.0] } }, // latitude 100: not a shape
      ]) {
        if (upsert) await container.items.upsert(item);
        else await container.items.create(item);
      }
      const query = "SELECT * FROM root WHERE (ST_DISTANCE(root.Location, {type: 'Point', coordinates: [20.1, 20]}) < 20000) ";
      const { resources } = await container.items.query(query).fetchAll();
      assert.equal(resources.length, 1);
      assert.equal(resources[0].id, "location1");
    });
  }
});

describe("Spatial Index - boundingBox behavior (spatialIndexBoundingBox.spec.ts)", { timeout: 60_000 }, () => {
  test("a Geography spatial index without a boundingBox is created", async () => {
    const db = await database("geo-no-bbox");
    const { resource } = await db.containers.create({
      id: "geo-no-bbox-container",
      partitionKey: { paths: ["/id"] },
      indexingPolicy: { spatialIndexes: [{ path: "/location/?", types: [SpatialType.Point] }] },
      geospatialConfig: { type: GeospatialType.Geography },
    });
    assert.equal(resource.id, "geo-no-bbox-container");
    const spatialIndexes = resource.indexingPolicy?.spatialIndexes;
    assert.equal(spatialIndexes?.length, 1);
    assert.equal(spatialIndexes[0].path, "/location/?");
    assert.equal(spatialIndexes[0].boundingBox, undefined);
    assert.equal(resource.geospatialConfig.type, "Geography");
  });

  test("a Geometry spatial index with a boundingBox is created, and comes back with it", async () => {
    const db = await database("geom-with-bbox");
    const { resource } = await db.containers.create({
      id: "geom-with-bbox-container",
      partitionKey: { paths: ["/id"] },
      indexingPolicy: {
        spatialIndexes: [{ path: "/location/?", types: [SpatialType.Point, SpatialType.Polygon], boundingBox: { xmin: 0, ymin: 0, xmax: 100, ymax: 100 } }],
      },
      geospatialConfig: { type: GeospatialType.Geometry },
    });
    assert.equal(resource.id, "geom-with-bbox-container");
    const spatialIndexes = resource.indexingPolicy?.spatialIndexes;
    assert.equal(spatialIndexes?.length, 1);
    assert.deepEqual(spatialIndexes[0].boundingBox, { xmin: 0, ymin: 0, xmax: 100, ymax: 100 });
    const { resource: read } = await db.container("geom-with-bbox-container").read();
    assert.deepEqual(read.indexingPolicy.spatialIndexes, spatialIndexes);
    assert.equal(read.geospatialConfig.type, "Geometry");
  });

  for (const [type, boundingBox] of [
    [GeospatialType.Geometry, undefined],
    [GeospatialType.Geography, { xmin: -180, ymin: -90, xmax: 180, ymax: 90 }],
  ]) {
    test(`a ${type} spatial index ${boundingBox ? "with" : "without"} a boundingBox is a 400 naming both`, async () => {
      const db = await database(`${type}-bbox-refused`);
      await assert.rejects(
        db.containers.create({
          id: "refused",
          partitionKey: { paths: ["/id"] },
          indexingPolicy: { spatialIndexes: [{ path: "/location/?", types: [SpatialType.Point], ...(boundingBox && { boundingBox }) }] },
          geospatialConfig: { type },
        }),
        (err) => {
          assert.equal(err.code, 400, err.message);
          assert.match(err.message, /boundingBox/);
          assert.match(err.message, new RegExp(type));
          return true;
        },
      );
    });
  }
});

test("ST_DISTANCE through the SDK: the documented figures within 0.1%", { timeout: 60_000 }, async () => {
  const db = await database("offices");
  const { container } = await db.containers.create({ id: "offices", partitionKey: { paths: ["/id"] } });
  await container.items.create({ id: "hq", name: "Headquarters", location: { type: "Point", coordinates: [-122.12826822304672, 47.63980239335718] } });
  await container.items.create({ id: "rd", name: "Research and development", location: { type: "Point", coordinates: [-96.84368664765994, 46.81297794314663] } });
  const { resources } = await container.items
    .query(`SELECT o.name, ST_DISTANCE(o.location, {"type": "Point", "coordinates": [-122.11758113953535, 47.66901087006131]}) / 1000 AS distanceKilometers FROM offices o`)
    .fetchAll();
  const want = { Headquarters: 3.345269817267368, "Research and development": 1907.438421299902 };
  assert.equal(resources.length, 2);
  for (const r of resources) {
    assert.ok(Math.abs(r.distanceKilometers / want[r.name] - 1) < 0.001, `${r.name}: ${r.distanceKilometers} km, want ${want[r.name]}`);
  }
});
