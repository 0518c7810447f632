// @azure/cosmos against the command cmd/lethe, as in sdk.test.mjs: every
// refusal reaches the SDK, even of a body it is still writing (a 3 MB or a
// 10 MB item got ECONNRESET instead of 413 on a loaded machine), and the
// reset endpoint, POST /_lethe/reset, drops every database between tests.
// The reset was not seen here against the server before the fix, even with
// the client's loop held as LoadedAgent holds it: it needs a machine as
// loaded as the issue's; cosmosrest's TestRefusalReachesSlowWriter, a raw
// client that reads the answer only once it has written the body, sees it
// every time. Run with: npm ci && npm test.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";

import { CosmosClient } from "@azure/cosmos";

import { buildLethe, emulatorKey, masterToken, signedRequest, startLethe, stopLethe } from "./harness.mjs";

const otherKey = Buffer.from("another key").toString("base64");

let lethe; // the command, built once

before(async () => {
  lethe = await buildLethe();
});

after(async () => {
  await lethe?.remove();
});

// LoadedAgent is an https.Agent whose event loop is held, a moment after
// it sends a POST, for longer than the server waits between answering and
// closing (net/http's 500 ms), as a client on a loaded machine is held:
// the answer is not read before the server closes. It counts the statuses
// the server sent, by method: what reached the server, seen from outside
// the SDK.
class LoadedAgent extends https.Agent {
  statuses = new Map(); // "POST 401" → count
  stalls = 0;
  #pending = false;
  addRequest(req, options) {
    req.once("response", (res) => {
      const k = `${req.method} ${res.statusCode}`;
      this.statuses.set(k, (this.statuses.get(k) ?? 0) + 1);
    });
    if (req.method === "POST" && !this.#pending) {
      this.#pending = true;
      setTimeout(() => {
        const end = Date.now() + 600;
        while (Date.now() < end); // the client's loop held
        this.stalls++;
        this.#pending = false;
      }, 50);
    }
    return super.addRequest(req, options);
  }
}

// refusedWith asserts that every settled result is the SDK's error for
// status, with Cosmos DB's error body: never a connection reset.
function refusedWith(results, status, code, what) {
  for (const r of results) {
    assert.equal(r.status, "rejected", `${what}: created`);
    const err = r.reason;
    assert.notEqual(err.code, "ECONNRESET", `${what}: the connection was reset: ${err.message}`);
    assert.equal(err.code, status, `${what}: ${err.code} ${err.message}`);
    assert.equal(err.body?.code, code, `${what}: error body ${JSON.stringify(err.body)}`);
  }
}

// signed sends a request of the REST API signed with key for resource type
// resType and link, as the SDKs sign it, and returns its status and body.
async function signed(agent, server, { method, path, resType, link, key }) {
  const res = await signedRequest(agent, new URL(path, server.url), { method, resType, link, key, headers: { "x-ms-version": "2020-11-05" } });
  return { status: res.status, body: res.body ? JSON.parse(res.body) : undefined };
}

describe("refusals and the reset, over HTTPS", { timeout: 300_000 }, () => {
  let server;
  let agent;
  let client;

  before(async () => {
    server = await startLethe(lethe.bin);
    agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false });
    client = new CosmosClient({ endpoint: server.url, key: emulatorKey, agent });
  });

  after(async () => {
    client?.dispose();
    agent?.destroy();
    if (server) await stopLethe(server);
  });

  // bigItems creates, several at once and again and again, items of each
  // size, and returns every result, settled.
  async function bigItems(container, sizes, rounds) {
    const out = [];
    for (const size of sizes) {
      const item = { id: `big-${size}`, pk: "a", s: "x".repeat(size) };
      for (let i = 0; i < rounds; i++) {
        // Three at once: the client is busy writing, as on a loaded
        // machine, while the server answers.
        const results = await Promise.allSettled([0, 1, 2].map(() => container.items.create(item)));
        out.push({ size, results });
      }
    }
    return out;
  }

  test("an item of 3 MB or 10 MB is refused with 413, never a reset", async () => {
    const { database } = await client.databases.createIfNotExists({ id: "big" });
    await database.containers.createIfNotExists({ id: "c", partitionKey: { paths: ["/pk"] } });
    const loaded = new LoadedAgent({ keepAlive: true, rejectUnauthorized: false });
    const busy = new CosmosClient({ endpoint: server.url, key: emulatorKey, agent: loaded });
    try {
      const container = busy.database("big").container("c");
      const rounds = 4;
      for (const { size, results } of await bigItems(container, [3 << 20, 10 << 20], rounds)) {
        refusedWith(results, 413, "RequestEntityTooLarge", `a ${size >> 20} MB item`);
      }
      assert.equal(loaded.statuses.get("POST 413"), 2 * 3 * rounds);
      assert.ok(loaded.stalls > 0, "the client was never held");
      // The connection pool is sound afterwards.
      const { statusCode } = await container.items.create({ id: "small", pk: "a" });
      assert.equal(statusCode, 201);
    } finally {
      busy.dispose();
      loaded.destroy();
    }
  });

  test("a 3 MB item signed with another key is refused with 401, never a reset", async () => {
    const { database } = await client.databases.createIfNotExists({ id: "big" });
    await database.containers.createIfNotExists({ id: "c", partitionKey: { paths: ["/pk"] } });
    // The SDK's own reads are signed with the key, its creates of items
    // with another: the 401 answers the create, before its body is read.
    const wire = new LoadedAgent({ keepAlive: true, rejectUnauthorized: false });
    const tokenProvider = async ({ verb, resourceId, resourceType, headers }) => {
      const date = new Date().toUTCString();
      headers["x-ms-date"] = date;
      const key = verb === "POST" && resourceType === "docs" ? otherKey : emulatorKey;
      return masterToken(key, verb, resourceType ?? "", resourceId ?? "", date);
    };
    const stranger = new CosmosClient({ endpoint: server.url, tokenProvider, agent: wire });
    try {
      const container = stranger.database("big").container("c");
      const rounds = 4;
      for (const { size, results } of await bigItems(container, [3 << 20], rounds)) {
        refusedWith(results, 401, "Unauthorized", `a ${size >> 20} MB item with another key`);
      }
      assert.equal(wire.statuses.get("POST 401"), 3 * rounds, `the creates reached the server: ${JSON.stringify([...wire.statuses])}`);
    } finally {
      stranger.dispose();
      wire.destroy();
    }
  });

  test("POST /_lethe/reset drops every database; the SDK works on", async () => {
    for (const id of ["r1", "r2"]) {
      const { database } = await client.databases.createIfNotExists({ id });
      const { container } = await database.containers.createIfNotExists({ id: "c", partitionKey: { paths: ["/pk"] } });
      await container.items.create({ id: "d", pk: "a" });
    }
    // Refused, and nothing dropped: another key, or a GET.
    assert.equal((await signed(agent, server, { method: "POST", path: "/_lethe/reset", resType: "reset", key: otherKey })).status, 401);
    assert.equal((await signed(agent, server, { method: "GET", path: "/_lethe/reset", resType: "reset" })).status, 405);
    const before = (await client.databases.readAll().fetchAll()).resources.map((d) => d.id);
    assert.ok(before.includes("r1") && before.includes("r2"), `databases ${before}`);

    const reset = await signed(agent, server, { method: "POST", path: "/_lethe/reset", resType: "reset" });
    assert.equal(reset.status, 200);
    assert.deepEqual(reset.body.dropped, [...before].sort());
    assert.deepEqual((await client.databases.readAll().fetchAll()).resources, []);

    const { database, statusCode } = await client.databases.createIfNotExists({ id: "r1" });
    assert.equal(statusCode, 201, "created again");
    const { container } = await database.containers.createIfNotExists({ id: "c", partitionKey: { paths: ["/pk"] } });
    assert.equal((await container.item("d", "a").read()).statusCode, 404);
    assert.equal((await container.items.create({ id: "d", pk: "a" })).statusCode, 201);
  });
});
