// @azure/cosmos against cmd/lethe serving an account of two regions
// (-regions "East US,West US"), changes replicated after an hour's lag, so
// that West US holds nothing new until a failover: with preferredLocations
// the SDK reads from West US, which answers a session read it cannot serve
// yet 404 substatus 1002, reads from East US while West US is down, and
// after a manual
// failover (POST /_lethe/regions/West US/failover) finds the new write
// region by itself (403 substatus 3, then the account again), losing no
// acknowledged write and making none twice. In each case the response's
// diagnostics name the regions the SDK contacted, as the topology implies.
//
// A second account, of three regions, has a change feed iterator move to
// another region when its own goes down.
//
// (@azure/cosmos in a single-write account retries a session read answered
// 404/1002 once, in the same region, without its token: see below.)

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";

import { ChangeFeedStartFrom, CosmosClient, StatusCodes } from "@azure/cosmos";

import { buildLethe, emulatorKey, regionEndpoints, signedRequest, startLethe, stopLethe } from "./harness.mjs";


// WireAgent records every request the SDK sends: the port it went to, its
// method, path and session token, and the status and substatus it got.
class WireAgent extends https.Agent {
  wire = [];
  addRequest(req, options) {
    const entry = { port: String(options.port), method: req.method, path: req.path, token: req.getHeader("x-ms-session-token") };
    this.wire.push(entry);
    req.once("response", (res) => {
      entry.status = res.statusCode;
      entry.substatus = res.headers["x-ms-substatus"];
    });
    return super.addRequest(req, options);
  }
  // since returns the requests sent after the first n, for a document path.
  since(n, path) {
    return this.wire.slice(n).filter((e) => e.path.includes(path));
  }
}

let build;
let server;
let regions; // name → URL
let agent;
let client;

before(async () => {
  build = await buildLethe();
  server = await startLethe(build.bin, "-regions", "East US,West US", "-lag", "1h", "-consistency", "Session");
  regions = regionEndpoints(server);
  agent = new WireAgent({ keepAlive: true, rejectUnauthorized: false });
  // consistencyLevel "Session": the SDK sends its session tokens only on
  // requests that name it.
  client = new CosmosClient({ endpoint: regions["East US"], key: emulatorKey, agent, consistencyLevel: "Session",
    connectionPolicy: { preferredLocations: ["West US"] } });
});

after(async () => {
  client?.dispose();
  agent?.destroy();
  if (server) await stopLethe(server);
  await build?.remove();
});

const port = (name) => new URL(regions[name]).port;

// contacted returns what a response's diagnostics say of the regions the
// SDK contacted for it: the regions whose endpoints it sent the request
// to, in order (an endpoint that is no region's as itself), and the
// status of each attempt that failed. (@azure/cosmos 4.9.3 records no
// substatus there: retry/retryUtility.js reads err.subsstatusCode.)
function contacted(response) {
  const stats = response.diagnostics.clientSideRequestStatistics;
  const byEndpoint = Object.fromEntries(Object.entries(regions).map(([name, url]) => [url, name]));
  return {
    regions: stats.locationEndpointsContacted.map((e) => byEndpoint[e] ?? e),
    failed: stats.retryDiagnostics.failedAttempts.map((a) => a.statusCode),
  };
}

// control sends a signed POST to the regions control endpoint (of the
// server whose endpoint base is, by default the first one's).
async function control(region, action, body, base = regions["East US"]) {
  const url = new URL(`/_lethe/regions/${encodeURIComponent(region)}/${action}`, base);
  const res = await signedRequest(agent, url, {
    method: "POST", resType: "regions", link: region,
    headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: JSON.parse(res.body) };
}

describe("an account of two regions", { timeout: 120_000 }, () => {
  let container;
  before(async () => {
    const { database } = await client.databases.createIfNotExists({ id: "app" });
    ({ container } = await database.containers.createIfNotExists({ id: "carts", partitionKey: { paths: ["/user"] } }));
  });

  test("the account names both regions, East US the write region", async () => {
    const { resource } = await client.getDatabaseAccount();
    assert.deepEqual(resource.writableLocations.map((l) => l.name), ["East US"]);
    assert.deepEqual(resource.readableLocations.map((l) => l.name), ["East US", "West US"]);
    assert.equal(resource.consistencyPolicy, "Session");
  });

  test("preferredLocations: writes go to East US, reads to West US", async () => {
    let n = agent.wire.length;
    const created = await container.items.create({ id: "c1", user: "ann" });
    assert.deepEqual(contacted(created), { regions: ["East US"], failed: [] });
    assert.deepEqual(agent.since(n, "/docs").map((e) => [e.method, e.port, e.status]), [["POST", port("East US"), 201]]);
    n = agent.wire.length;
    // Eventual: West US answers what it has, nothing yet.
    const read = await container.item("c1", "ann").read({ consistencyLevel: "Eventual" });
    assert.equal(read.statusCode, 404);
    assert.deepEqual(contacted(read), { regions: ["West US"], failed: [] });
    assert.deepEqual(agent.since(n, "/docs/c1").map((e) => [e.port, e.status]), [[port("West US"), 404]]);
  });

  // @azure/cosmos 4.9.3 in a single-write account retries a 404/1002 once,
  // in the same region, without its session token
  // (retry/sessionRetryPolicy.js, retry/retryUtility.js): West US then
  // answers what it holds.
  test("a session read West US cannot serve gets 404/1002, and the SDK retries it without its token", async () => {
    const written = await container.items.upsert({ id: "c2", user: "ann", v: 1 });
    const token = written.headers["x-ms-session-token"];
    const n = agent.wire.length;
    const read = await container.item("c2", "ann").read();
    assert.equal(read.statusCode, 404);
    // West US alone, which failed the first attempt 404 (1002).
    assert.deepEqual(contacted(read), { regions: ["West US"], failed: [404] });
    const tries = agent.since(n, "/docs/c2").map((e) => [e.port, e.token, e.status, e.substatus]);
    assert.deepEqual(tries, [[port("West US"), token, 404, "1002"], [port("West US"), undefined, 404, "0"]]);
    // The write region holds the client's writes: a read sent there with the token is served.
    const east = new CosmosClient({ endpoint: regions["East US"], key: emulatorKey, agent, consistencyLevel: "Session" });
    try {
      const read = await east.database("app").container("carts").item("c2", "ann").read({ sessionToken: token });
      assert.equal(read.statusCode, 200);
      assert.equal(read.resource.v, 1);
    } finally {
      east.dispose();
    }
  });

  // West US answering 503 (mode "unavailable"): @azure/cosmos 4.9.3 fails
  // over on a 503, a timeout or a request it could not send
  // (retry/retryUtility.js), not on a refused connection (ECONNREFUSED,
  // which its default policy retries in the same region), and only to the
  // next of its preferredLocations (retry/timeoutFailoverRetryPolicy.js).
  test("West US down (503): a client preferring West US, then East US, reads from East US", async () => {
    const both = new CosmosClient({ endpoint: regions["East US"], key: emulatorKey, agent, consistencyLevel: "Session",
      connectionPolicy: { preferredLocations: ["West US", "East US"] } });
    const c = both.database("app").container("carts");
    await c.item("c1", "ann").read({ consistencyLevel: "Eventual" }); // the account and the container, read once
    assert.equal((await control("West US", "down", { mode: "unavailable" })).status, 200);
    try {
      const n = agent.wire.length;
      const read = await c.item("c1", "ann").read({ consistencyLevel: "Eventual" });
      assert.equal(read.statusCode, 200);
      assert.equal(read.resource.id, "c1");
      // Its diagnostics name West US, which failed it 503, then East US.
      assert.deepEqual(contacted(read), { regions: ["West US", "East US"], failed: [503] });
      const tries = agent.since(n, "/docs/c1").map((e) => [e.port, e.status]);
      assert.deepEqual(tries[0], [port("West US"), 503]);
      assert.deepEqual(tries.at(-1), [port("East US"), 200]);
    } finally {
      both.dispose();
      assert.equal((await control("West US", "up")).status, 200);
    }
  });

  test("after a manual failover the SDK writes in West US by itself, losing nothing", async () => {
    const acked = [];
    for (let i = 0; i < 5; i++) {
      await container.items.create({ id: `f${i}`, user: "bob" });
      acked.push(`f${i}`);
    }
    const failover = await control("West US", "failover");
    assert.equal(failover.status, 200);
    assert.equal(failover.body.writeRegion, "West US");
    const n = agent.wire.length;
    for (let i = 5; i < 10; i++) {
      const written = await container.items.create({ id: `f${i}`, user: "bob" });
      // The diagnostics name the regions the topology implies: East US,
      // which refused the first write 403, then West US; West US alone
      // from then on.
      assert.deepEqual(contacted(written), i === 5 ? { regions: ["East US", "West US"], failed: [403] } : { regions: ["West US"], failed: [] });
      acked.push(`f${i}`);
    }
    const writes = agent.since(n, "/docs").filter((e) => e.method === "POST").map((e) => [e.port, e.status, e.substatus]);
    assert.deepEqual(writes[0], [port("East US"), 403, "3"], "the first write went to the old write region");
    assert.deepEqual(writes.at(-1).slice(0, 2), [port("West US"), 201]);
    assert.equal(writes.filter((w) => w[1] === 201).length, 5, "each write made once");
    // West US, the new write region, holds every acknowledged write.
    const { resources } = await container.items.query("SELECT VALUE c.id FROM c WHERE c.user = 'bob'").fetchAll();
    assert.deepEqual(resources.sort(), acked.sort());
  });
});

// Three regions without lag: a change feed iterator preferring West US,
// then North Europe, reads from West US; when West US goes down (503) the
// SDK sends its continuation, a position in West US's feed, to North
// Europe, which reads on from what it names (the last write the client
// was given), so that no acknowledged write is missed.
describe("a change feed iterator whose region goes down", { timeout: 120_000 }, () => {
  let feedServer;
  let feedRegions;
  let feedClient;
  before(async () => {
    feedServer = await startLethe(build.bin, "-regions", "East US,West US,North Europe", "-consistency", "Eventual");
    feedRegions = regionEndpoints(feedServer);
    feedClient = new CosmosClient({ endpoint: feedRegions["East US"], key: emulatorKey, agent,
      connectionPolicy: { preferredLocations: ["West US", "North Europe"] } });
  });
  after(async () => {
    feedClient?.dispose();
    if (feedServer) await stopLethe(feedServer);
  });

  test("reads on in North Europe, missing no acknowledged write", async () => {
    const { database } = await feedClient.databases.createIfNotExists({ id: "app" });
    const { container } = await database.containers.createIfNotExists({ id: "orders", partitionKey: { paths: ["/user"] } });
    const acked = [];
    for (let i = 0; i < 6; i++) {
      await container.items.create({ id: `o${i}`, user: `u${i % 2}` });
      acked.push(`o${i}`);
    }
    const portOf = (name) => new URL(feedRegions[name]).port;
    const iterator = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 2 });
    const seen = [];
    let n = agent.wire.length;
    while (seen.length < 3) {
      const page = await iterator.readNext();
      if (page.statusCode !== StatusCodes.NotModified) seen.push(...page.result.map((d) => d.id));
    }
    const before = agent.since(n, "/colls/orders/docs").filter((e) => e.method === "GET");
    assert.ok(before.length > 0 && before.every((e) => e.port === portOf("West US")), `the first pages came from ${JSON.stringify(before)}`);

    assert.equal((await control("West US", "down", { mode: "unavailable" }, feedRegions["East US"])).status, 200);
    try {
      for (let i = 6; i < 10; i++) {
        await container.items.create({ id: `o${i}`, user: `u${i % 2}` });
        acked.push(`o${i}`);
      }
      n = agent.wire.length;
      for (let empty = 0; empty < 3 && iterator.hasMoreResults; ) {
        const page = await iterator.readNext();
        if (page.statusCode === StatusCodes.NotModified) {
          empty++;
          continue;
        }
        seen.push(...page.result.map((d) => d.id));
      }
      const later = agent.since(n, "/colls/orders/docs").filter((e) => e.method === "GET");
      assert.ok(later.some((e) => e.port === portOf("West US") && e.status === 503), "West US answered 503");
      assert.ok(later.some((e) => e.port === portOf("North Europe") && e.status === 200), `North Europe read on: ${JSON.stringify(later)}`);
      assert.ok(!later.some((e) => e.status === 400), `a continuation was refused: ${JSON.stringify(later)}`);
      // Every acknowledged write, some perhaps twice (at least once).
      assert.deepEqual([...new Set(seen)].sort(), acked.sort());
    } finally {
      assert.equal((await control("West US", "up", undefined, feedRegions["East US"])).status, 200);
    }
  });
});
