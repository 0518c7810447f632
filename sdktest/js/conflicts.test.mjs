// @azure/cosmos against cmd/lethe serving an account of two write regions
// (-regions "East US,West US" -multi-write), changes replicated after
// 400 ms: a client preferring East US and one preferring West US create the
// same item within the lag, in a container whose conflictResolutionPolicy
// is Custom without a procedure. Both regions keep the same winner (Last
// Writer Wins by _ts), and each region's conflicts feed holds the loser,
// which the SDK reads (container.conflicts.readAll, query) and deletes
// (container.conflict(id, partitionKey).delete()).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { setTimeout as sleep } from "node:timers/promises";

import { CosmosClient } from "@azure/cosmos";

import { buildLethe, emulatorKey, regionEndpoints, startLethe, stopLethe } from "./harness.mjs";


let build;
let server;
let regions; // name → URL
let agent;
const clients = [];

before(async () => {
  build = await buildLethe();
  server = await startLethe(build.bin, "-regions", "East US,West US", "-multi-write", "-lag", "400ms", "-consistency", "Eventual");
  regions = regionEndpoints(server);
  agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false });
});

after(async () => {
  for (const c of clients) c.dispose();
  agent?.destroy();
  if (server) await stopLethe(server);
  await build?.remove();
});

// clientIn returns a client that prefers region name (multi-write: it
// writes there too).
function clientIn(name) {
  const c = new CosmosClient({ endpoint: regions["East US"], key: emulatorKey, agent, connectionPolicy: { preferredLocations: [name] } });
  clients.push(c);
  return c;
}

describe("conflicts of two write regions", { timeout: 120_000 }, () => {
  let east;
  let west;
  before(async () => {
    const { database } = await clientIn("East US").databases.createIfNotExists({ id: "app" });
    await database.containers.createIfNotExists({ id: "carts", partitionKey: { paths: ["/user"] }, conflictResolutionPolicy: { mode: "Custom" } });
    east = clientIn("East US").database("app").container("carts");
    west = clientIn("West US").database("app").container("carts");
  });

  test("the container returns its policy", async () => {
    const { resource } = await east.read();
    assert.equal(resource.conflictResolutionPolicy.mode, "Custom");
    assert.equal(resource.conflictResolutionPolicy.conflictResolutionProcedure, "");
  });

  test("a create in each region within the lag: one winner, the loser in each region's conflicts feed", async () => {
    await east.items.create({ id: "x", user: "ann", v: "east" });
    await sleep(5); // West US's write is the later by its instant
    await west.items.create({ id: "x", user: "ann", v: "west" });
    await sleep(1500);
    for (const c of [east, west]) {
      const { resource } = await c.item("x", "ann").read();
      assert.equal(resource.v, "west");
    }
    for (const c of [east, west]) {
      const { resources } = await c.conflicts.readAll().fetchAll();
      assert.equal(resources.length, 1, JSON.stringify(resources));
      const [conflict] = resources;
      assert.equal(conflict.operationType, "create");
      assert.equal(conflict.resourceType, "document");
      assert.equal(JSON.parse(conflict.content).v, "east");
    }
  });

  test("query, read by id and delete a conflict", async () => {
    const { resources } = await west.conflicts.query("SELECT * FROM c WHERE c.operationType = 'create'").fetchAll();
    assert.equal(resources.length, 1);
    const id = resources[0].id;
    // @azure/cosmos 4.9.3's Conflict.read signs its GET for the resource
    // type "users", not "conflicts" (Conflict.js): the signature does not
    // match the request, and lethe refuses it, as it refuses any such.
    await assert.rejects(west.conflict(id, "ann").read(), (e) => e.code === 401);
    const byId = await west.conflicts.query({ query: "SELECT * FROM c WHERE c.id = @id", parameters: [{ name: "@id", value: id }] }).fetchAll();
    assert.equal(byId.resources.length, 1);
    assert.equal(JSON.parse(byId.resources[0].content).v, "east");
    await west.conflict(id, "ann").delete();
    const left = await west.conflicts.readAll().fetchAll();
    assert.equal(left.resources.length, 0);
    const gone = await west.conflicts.query({ query: "SELECT * FROM c WHERE c.id = @id", parameters: [{ name: "@id", value: id }] }).fetchAll();
    assert.equal(gone.resources.length, 0);
    // East US's feed is its own.
    assert.equal((await east.conflicts.readAll().fetchAll()).resources.length, 1);
  });
});
