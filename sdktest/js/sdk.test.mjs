// The official Azure Cosmos DB JavaScript SDK (@azure/cosmos) against
// lethe's REST front, started as a user starts it: the command cmd/lethe,
// built once, on a free port, over HTTPS with its self-signed certificate
// (and once over plain HTTP, once durable with a restart), stopped with
// SIGTERM. The scenarios mirror sdktest/go/sdk_test.go. Run with:
// npm ci && npm test.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

import { ChangeFeedMode, ChangeFeedStartFrom, CosmosClient, PartitionKeyKind, StatusCodes } from "@azure/cosmos";

import { buildLethe, emulatorKey, signedRequest, startLethe, stopLethe } from "./harness.mjs";

// WireAgent is an https.Agent that records, for every request the SDK
// sends, where it went and the status it got: what the server did, seen
// from outside the SDK.
class WireAgent extends https.Agent {
  statuses = new Map(); // status code → count
  hosts = new Set(); // "host:port" of every request
  addRequest(req, options) {
    this.hosts.add(`${req.host}:${options.port}`);
    req.once("response", (res) => this.statuses.set(res.statusCode, this.count(res.statusCode) + 1));
    return super.addRequest(req, options);
  }
  count(status) {
    return this.statuses.get(status) ?? 0;
  }
}

let lethe; // the command, built once

before(async () => {
  lethe = await buildLethe();
});

after(async () => {
  await lethe?.remove();
});

// start runs the command, its compute gateway on another free port of
// 127.0.0.1, and reads its start line (log/slog's text format):
// level=INFO msg="lethe: serving the Cosmos DB REST API" endpoint=URL compute_gateway=URL key="K" storage=S [dir=D]
async function start(...args) {
  const server = await startLethe(lethe.bin, "-compute-addr", "127.0.0.1:0", ...args);
  const m = /level=INFO msg="lethe: serving the Cosmos DB REST API" endpoint=(\S+)(?: compute_gateway=\S+)? key="([^"]*)" storage=(\S+)(?: dir=(\S+))?$/m.exec(server.stderr());
  assert.ok(m, `the start line: ${server.stderr()}`);
  return { ...server, key: m[2] === "the emulator's well-known key" ? "default" : "custom", storage: m[4] ? `dir ${m[4]}` : m[3] };
}

// stop stops the command and asserts a graceful shutdown: exit status 0,
// after its shutdown line.
async function stop(server) {
  await stopLethe(server);
  assert.match(server.stderr(), /lethe: shutting down/);
}

// drain reads a query iterator page by page (fetchNext) and returns the
// items and the size of each page.
async function drain(iterator) {
  const items = [];
  const sizes = [];
  while (iterator.hasMoreResults()) {
    const page = await iterator.fetchNext();
    sizes.push(page.resources.length);
    items.push(...page.resources);
  }
  return { items, sizes };
}

// status returns the HTTP status of a settled SDK promise: the response's,
// or the error's code.
async function status(promise) {
  try {
    return (await promise).statusCode;
  } catch (err) {
    if (typeof err.code !== "number") throw err;
    return err.code;
  }
}

// rejectsWith asserts that promise fails with the SDK's error for status.
async function rejectsWith(promise, code, what) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, code, `${what}: ${err.message}`);
    assert.equal(typeof err.body?.code, "string", `${what}: error body ${JSON.stringify(err.body)}`);
    return true;
  });
}

describe("over HTTPS, with the SDK's default connection policy", { timeout: 120_000 }, () => {
  let server;
  let agent;
  let client;

  before(async () => {
    server = await start();
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+\/$/);
    assert.equal(server.key, "default");
    assert.equal(server.storage, "memory");
    // The certificate is self-signed and made at start: trust it, as the
    // emulator's users do.
    agent = new WireAgent({ keepAlive: true, rejectUnauthorized: false });
    client = new CosmosClient({ endpoint: server.url, key: emulatorKey, agent });
  });

  after(async () => {
    client?.dispose();
    agent?.destroy();
    if (server) await stop(server);
  });

  // container creates a database and a container in it.
  async function container(dbId, def, options) {
    const { database } = await client.databases.createIfNotExists({ id: dbId });
    const { container, statusCode } = await database.containers.create(def, options);
    assert.equal(statusCode, 201);
    return container;
  }

  test("the SDK stays on the address it was given", async () => {
    const { resource: account } = await client.getDatabaseAccount();
    assert.equal(account.consistencyPolicy, "Strong"); // one copy: every read sees every acknowledged write
    assert.equal(await client.getWriteEndpoint(), server.url);
    assert.equal(await client.getReadEndpoint(), server.url);
    const u = new URL(server.url);
    assert.deepEqual([...agent.hosts], [`${u.hostname}:${u.port}`]);
  });

  test("databases: create, read, list, query, createIfNotExists, delete", async () => {
    for (const id of ["one", "two"]) {
      const { resource, statusCode } = await client.databases.create({ id });
      assert.equal(statusCode, 201);
      assert.equal(resource.id, id);
      assert.ok(resource._rid, "no _rid");
      assert.ok(resource._etag, "no _etag");
      assert.equal(typeof resource._ts, "number");
    }
    await rejectsWith(client.databases.create({ id: "one" }), 409, "second create");
    // Database-level (shared) throughput: an offer of the database's own.
    const shared = await client.databases.create({ id: "shared", throughput: 400 });
    assert.equal(shared.statusCode, 201);
    assert.equal((await shared.database.readOffer()).resource.content.offerThroughput, 400);
    await rejectsWith(client.databases.create({ id: "too little", throughput: 300 }), 400, "database throughput under 400");
    await shared.database.delete();

    const existing = await client.databases.createIfNotExists({ id: "one" });
    assert.equal(existing.statusCode, 200);
    assert.equal(existing.resource.id, "one");
    const fresh = await client.databases.createIfNotExists({ id: "three" });
    assert.equal(fresh.statusCode, 201);

    const { resource: read } = await client.database("two").read();
    assert.equal(read.id, "two");

    const { resources: all } = await client.databases.readAll().fetchAll();
    const ids = all.map((d) => d.id).filter((id) => ["one", "two", "three"].includes(id));
    assert.deepEqual(ids.sort(), ["one", "three", "two"]);

    const { resources: queried } = await client.databases
      .query({ query: "SELECT VALUE d.id FROM d WHERE d.id = @id", parameters: [{ name: "@id", value: "two" }] })
      .fetchAll();
    assert.deepEqual(queried, ["two"]);

    for (const id of ["one", "two", "three"]) {
      assert.equal((await client.database(id).delete()).statusCode, 204);
    }
    await rejectsWith(client.database("two").read(), 404, "read a deleted database");
    await rejectsWith(client.database("two").delete(), 404, "delete a deleted database");
  });

  test("containers: partition keys, defaultTtl, read, replace, list, feed ranges, delete", async () => {
    const { database } = await client.databases.create({ id: "containers" });
    const def = { id: "c", defaultTtl: 3600, partitionKey: { paths: ["/tenant"], version: 2 } };
    const { resource: created, container: c } = await database.containers.create(def);
    assert.equal(created.defaultTtl, 3600);
    assert.equal(created.partitionKey.kind, "Hash");
    assert.deepEqual(created.partitionKey.paths, ["/tenant"]);
    assert.ok(created._rid, "no _rid");
    assert.ok(created.indexingPolicy, "no indexingPolicy");
    await rejectsWith(database.containers.create(def), 409, "second create");
    const again = await database.containers.createIfNotExists(def);
    assert.equal(again.statusCode, 200);
    assert.equal(again.resource._rid, created._rid);

    const { resource: read } = await c.read();
    assert.equal(read.defaultTtl, 3600);
    // Replace: a shorter default TTL, then none (time to live off).
    const { resource: shorter } = await c.replace({ ...read, defaultTtl: 60 });
    assert.equal(shorter.defaultTtl, 60);
    const { defaultTtl: _, ...off } = read;
    const { resource: none } = await c.replace(off);
    assert.equal(none.defaultTtl, undefined);
    assert.equal((await c.read()).resource.defaultTtl, undefined);
    // The partition key cannot change.
    await rejectsWith(c.replace({ ...off, partitionKey: { paths: ["/other"], version: 2 } }), 400, "new partition key");

    await database.containers.create({ id: "d", partitionKey: { paths: ["/id"] } });
    const { resources: list } = await database.containers.readAll().fetchAll();
    assert.deepEqual(list.map((x) => x.id).sort(), ["c", "d"]);
    const { resources: queried } = await database.containers.query("SELECT VALUE c.id FROM c WHERE c.id = 'd'").fetchAll();
    assert.deepEqual(queried, ["d"]);

    const ranges = await c.getFeedRanges();
    assert.equal(ranges.length, 1);
    assert.equal(ranges[0].minInclusive, "");
    assert.equal(ranges[0].maxExclusive, "FF");

    assert.equal((await c.delete()).statusCode, 204);
    await rejectsWith(c.read(), 404, "read a deleted container");
    await database.delete();
    await rejectsWith(database.container("d").read(), 404, "container of a deleted database");
  });

  test("items: create, read, replace, upsert, delete by partition key", async () => {
    const c = await container("items", { id: "c", partitionKey: { paths: ["/tenant"] } });
    const created = await c.items.create({ id: "1", tenant: "acme", n: 1 });
    assert.equal(created.statusCode, 201);
    assert.equal(created.resource.n, 1);
    assert.ok(created.etag, "no etag header");
    assert.ok(created.requestCharge > 0, "no request charge");
    assert.ok(created.headers["x-ms-session-token"], "no session token");

    // The same id in another partition is another item.
    await c.items.create({ id: "1", tenant: "globex", n: 100 });
    const read = await c.item("1", "acme").read();
    assert.equal(read.statusCode, 200);
    assert.equal(read.resource.n, 1);
    assert.equal(read.etag, created.etag);
    assert.equal(read.resource._etag.replaceAll('"', ""), read.etag.replaceAll('"', ""));
    assert.ok(read.resource._rid && read.resource._self, "no _rid/_self on a point read");
    assert.equal((await c.item("1", "globex").read()).resource.n, 100);
    // A read of a missing item is no exception in this SDK: statusCode 404.
    const missing = await c.item("nope", "acme").read();
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.resource, undefined);
    assert.equal((await c.item("1", "initech").read()).statusCode, 404);

    const replaced = await c.item("1", "acme").replace({ id: "1", tenant: "acme", n: 2 });
    assert.equal(replaced.statusCode, 200);
    assert.equal(replaced.resource.n, 2);
    assert.notEqual(replaced.etag, created.etag);

    const upNew = await c.items.upsert({ id: "2", tenant: "acme", n: 3 });
    assert.equal(upNew.statusCode, 201);
    const upOld = await c.items.upsert({ id: "2", tenant: "acme", n: 4 });
    assert.equal(upOld.statusCode, 200);
    assert.equal((await c.item("2", "acme").read()).resource.n, 4);

    assert.equal((await c.item("1", "acme").delete()).statusCode, 204);
    assert.equal((await c.item("1", "acme").read()).statusCode, 404);
    assert.equal((await c.item("1", "globex").read()).statusCode, 200);
    await rejectsWith(c.item("1", "acme").delete(), 404, "delete twice");
    await rejectsWith(c.item("1", "acme").replace({ id: "1", tenant: "acme" }), 404, "replace a deleted item");

    // Partition key values of other types: a number, a boolean, null.
    const typed = await container("items", { id: "typed", partitionKey: { paths: ["/k"] } });
    for (const k of [7, true, null]) {
      await typed.items.create({ id: `id-${k}`, k });
      const r = await typed.item(`id-${k}`, k).read();
      assert.equal(r.statusCode, 200, `partition key ${k}`);
      assert.equal(r.resource.k, k);
    }
    assert.equal((await typed.item("id-7", "7").read()).statusCode, 404, "the string \"7\" is not the number 7");
  });

  test("deleteAllItemsForPartitionKey: every item of one partition, none of another", async () => {
    const c = await container("items", { id: "bypk", partitionKey: { paths: ["/tenant"] } });
    for (const tenant of ["acme", "globex"]) {
      for (let i = 0; i < 5; i++) await c.items.create({ id: `${i}`, tenant });
    }
    const r = await c.deleteAllItemsForPartitionKey("acme");
    assert.equal(r.statusCode, 200);
    assert.ok(r.headers["x-ms-request-charge"] > 0, "no request charge");
    const count = async (tenant) =>
      (await c.items.query("SELECT VALUE COUNT(1) FROM c", { partitionKey: tenant }).fetchAll()).resources[0];
    assert.equal(await count("acme"), 0);
    assert.equal(await count("globex"), 5);
    assert.equal((await c.item("0", "acme").read()).statusCode, 404);
  });

  test("patch and transactional batch", async () => {
    const c = await container("patches", { id: "c", partitionKey: { paths: ["/tenant"] } });
    await c.items.create({ id: "1", tenant: "acme", n: 1, tags: ["a"] });

    const patched = await c.item("1", "acme").patch([
      { op: "set", path: "/status", value: "active" },
      { op: "incr", path: "/n", value: 41 },
      { op: "add", path: "/tags/-", value: "b" },
      { op: "move", from: "/status", path: "/state" },
    ]);
    assert.equal(patched.statusCode, 200);
    assert.equal(patched.resource.n, 42);
    assert.deepEqual(patched.resource.tags, ["a", "b"]);
    assert.equal(patched.resource.state, "active");
    assert.equal(patched.resource.status, undefined);
    // A condition that does not hold is 412, and changes nothing.
    await rejectsWith(
      c.item("1", "acme").patch({ condition: "FROM c WHERE c.n = 0", operations: [{ op: "set", path: "/n", value: 0 }] }),
      412, "a false condition");
    await rejectsWith(c.item("1", "acme").patch([{ op: "set", path: "/id", value: "2" }]), 400, "patching the id");
    assert.equal((await c.item("1", "acme").read()).resource.n, 42);

    // A batch: all or nothing, in one partition.
    const ok = await c.items.batch([
      { operationType: "Create", resourceBody: { id: "2", tenant: "acme" } },
      { operationType: "Upsert", resourceBody: { id: "3", tenant: "acme", n: 3 } },
      { operationType: "Read", id: "1" },
      { operationType: "Patch", id: "1", resourceBody: { operations: [{ op: "incr", path: "/n", value: 1 }] } },
      { operationType: "Delete", id: "2" },
    ], "acme");
    assert.equal(ok.code, 200);
    assert.deepEqual(ok.result.map((r) => r.statusCode), [201, 201, 200, 200, 204]);
    assert.equal(ok.result[2].resourceBody.n, 42);
    assert.equal((await c.item("1", "acme").read()).resource.n, 43);

    const failed = await c.items.batch([
      { operationType: "Create", resourceBody: { id: "4", tenant: "acme" } },
      { operationType: "Create", resourceBody: { id: "3", tenant: "acme" } }, // exists: 409
    ], "acme");
    assert.equal(failed.code, 207);
    assert.deepEqual(failed.result.map((r) => r.statusCode), [424, 409]);
    assert.equal((await c.item("4", "acme").read()).statusCode, 404, "nothing of a failed batch is applied");
  });

  test("bulk: executeBulkOperations and bulk, each operation on its own", async () => {
    const c = await container("bulk", { id: "c", partitionKey: { paths: ["/tenant"] } });
    await c.items.create({ id: "taken", tenant: "t0" });
    // 250 creates over three partition keys (the SDK sends them in requests
    // of at most 100), one that exists already, and reads, patches and a
    // delete of what was created.
    const ops = [];
    for (let i = 0; i < 250; i++) {
      ops.push({ operationType: "Create", partitionKey: `t${i % 3}`, resourceBody: { id: `d${i}`, tenant: `t${i % 3}`, n: i } });
    }
    ops.push({ operationType: "Create", partitionKey: "t0", resourceBody: { id: "taken", tenant: "t0" } });
    const results = await c.items.executeBulkOperations(ops);
    assert.equal(results.length, ops.length);
    assert.deepEqual(results.slice(0, 250).map((r) => r.response?.statusCode), Array(250).fill(201));
    assert.equal(results[250].error?.code, 409, "the existing item's create fails alone");
    const { resources: count } = await c.items.query("SELECT VALUE COUNT(1) FROM c").fetchAll();
    assert.equal(count[0], 251);

    const more = await c.items.executeBulkOperations([
      { operationType: "Read", id: "d1", partitionKey: "t1" },
      { operationType: "Patch", id: "d1", partitionKey: "t1", resourceBody: { operations: [{ op: "incr", path: "/n", value: 10 }] } },
      { operationType: "Replace", id: "d2", partitionKey: "t2", resourceBody: { id: "d2", tenant: "t2", n: -2 } },
      { operationType: "Delete", id: "d3", partitionKey: "t0" },
      { operationType: "Read", id: "nothing", partitionKey: "t0" },
      { operationType: "Upsert", partitionKey: "t1", resourceBody: { id: "u", tenant: "t1" } },
    ]);
    assert.deepEqual(more.map((r) => r.response?.statusCode ?? r.error?.code), [200, 200, 200, 204, 404, 201]);
    assert.equal(more[0].response.resourceBody.n, 1);
    assert.ok(more[0].response.requestCharge > 0);
    assert.equal((await c.item("d1", "t1").read()).resource.n, 11);
    assert.equal((await c.item("d3", "t0").read()).statusCode, 404);

    // The deprecated bulk call: results in order, 207 statuses per operation.
    const legacy = await c.items.bulk([
      { operationType: "Create", partitionKey: "t0", resourceBody: { id: "l1", tenant: "t0" } },
      { operationType: "Create", partitionKey: "t0", resourceBody: { id: "l1", tenant: "t0" } },
    ]);
    assert.deepEqual(legacy.map((r) => r.statusCode), [201, 409]);
  });

  // faults calls the command's fault-injection endpoint, signed with the
  // master key for the resource type "faults".
  async function faults(method, body) {
    const res = await signedRequest(agent, new URL("/_lethe/faults", server.url), {
      method,
      resType: "faults",
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: res.body ? JSON.parse(res.body) : undefined };
  }

  test("bulk with injected 429s: the SDK retries the throttled requests", async () => {
    const c = await container("bulk", { id: "faulted", partitionKey: { paths: ["/tenant"] } });
    const added = await faults("POST", {
      id: "bulk-429", condition: { operationType: "Batch", database: "bulk", container: "faulted" },
      result: { statusCode: 429, retryAfterMs: 20 }, hitLimit: 3,
    });
    assert.equal(added.status, 201);
    const ops = [];
    for (let i = 0; i < 30; i++) ops.push({ operationType: "Create", partitionKey: "t", resourceBody: { id: `d${i}`, tenant: "t" } });
    const results = await c.items.executeBulkOperations(ops);
    assert.deepEqual(results.map((r) => r.response?.statusCode ?? r.error?.code), Array(30).fill(201));
    const listed = await faults("GET");
    const rule = listed.body.rules.find((r) => r.id === "bulk-429");
    assert.equal(rule.hitCount, 3, "the rule fired three times and the SDK went on");
    assert.equal((await faults("DELETE")).status, 204);
  });

  test("bulk under a small throughput: throttled operations are retried by the SDK", async () => {
    const c = await container("bulk", { id: "throttled", partitionKey: { paths: ["/tenant"] }, throughput: 400 });
    const ops = [];
    for (let i = 0; i < 120; i++) {
      ops.push({ operationType: "Create", partitionKey: `t${i % 2}`, resourceBody: { id: `d${i}`, tenant: `t${i % 2}`, pad: "x".repeat(2000) } });
    }
    const before = agent.count(207);
    const results = await c.items.executeBulkOperations(ops);
    assert.deepEqual(results.map((r) => r.response?.statusCode ?? r.error?.code), Array(120).fill(201));
    // Every create succeeds in the end; the 207s on the wire are the
    // requests in which some operations were throttled (429 each).
    assert.ok(agent.count(207) > before, "no operation was throttled");
  });

  test("errors: 404, 409, 412, 400 as the SDK's errors", async () => {
    const c = await container("errors", { id: "c", partitionKey: { paths: ["/pk"] } });
    const { etag } = await c.items.create({ id: "1", pk: "p", n: 1 });
    await rejectsWith(c.items.create({ id: "1", pk: "p" }), 409, "create twice");

    const stale = { accessCondition: { type: "IfMatch", condition: '"0000000000000000"' } };
    await rejectsWith(c.item("1", "p").replace({ id: "1", pk: "p", n: 2 }, stale), 412, "replace with a stale etag");
    const current = await c.item("1", "p").replace({ id: "1", pk: "p", n: 2 }, { accessCondition: { type: "IfMatch", condition: etag } });
    assert.equal(current.statusCode, 200);
    await rejectsWith(c.item("1", "p").delete({ accessCondition: { type: "IfMatch", condition: etag } }), 412, "delete with an old etag");
    // An upsert with If-Match: the same rule.
    await rejectsWith(c.items.upsert({ id: "1", pk: "p", n: 3 }, { accessCondition: { type: "IfMatch", condition: etag } }), 412, "upsert with an old etag");
    assert.equal((await c.item("1", "p").read()).resource.n, 2, "a refused write changed the item");
    assert.equal((await c.item("1", "p").delete({ accessCondition: { type: "IfMatch", condition: current.etag } })).statusCode, 204);

    // A body whose partition key is not the one the request names.
    await c.items.create({ id: "3", pk: "p" });
    await rejectsWith(c.item("3", "p").replace({ id: "3", pk: "other" }), 400, "mismatched partition key");
    // ttl 0 is not a time to live Cosmos DB accepts.
    await rejectsWith(c.items.create({ id: "4", pk: "p", ttl: 0 }), 400, "ttl 0");
    // Items of a container, or database, that is not there.
    await rejectsWith(client.database("errors").container("nope").items.create({ id: "1", pk: "p" }), 404, "create in a missing container");
    const inMissingDb = await status(client.database("nope").container("c").item("1", "p").read());
    assert.equal(inMissingDb, 404);

    // A client with the wrong key gets 401, and no retries hide it.
    const bad = new CosmosClient({ endpoint: server.url, key: "dGhpcyBpcyBub3QgdGhlIGtleQ==", agent });
    try {
      const before401 = agent.count(401);
      await rejectsWith(bad.databases.create({ id: "x" }), 401, "wrong key");
      assert.ok(agent.count(401) > before401, "no 401 on the wire");
    } finally {
      bad.dispose();
    }
    await rejectsWith(client.database("x").read(), 404, "the wrong key created a database");
  });

  test("errors carry the service's code, substatus and message", async () => {
    const c = await container("messages", { id: "c", partitionKey: { paths: ["/pk"] } });
    await c.items.create({ id: "1", pk: "p" });
    const missing = client.database("messages").container("missing");
    const stale = { accessCondition: { type: "IfMatch", condition: '"0000000000000000"' } };
    const cases = [
      ["create twice", () => c.items.create({ id: "1", pk: "p" }), 409, "Conflict", 0, "Entity with the specified id already exists in the system."],
      ["replace of a missing item", () => c.item("9", "p").replace({ id: "9", pk: "p" }), 404, "NotFound", 0, "Entity with the specified id does not exist in the system."],
      ["item of a missing container", () => missing.item("1", "p").delete(), 404, "NotFound", 1003, "Owner resource does not exist"],
      ["missing container", () => missing.read(), 404, "NotFound", 0, "Resource Not Found."],
      ["stale etag", () => c.item("1", "p").replace({ id: "1", pk: "p" }, stale), 412, "PreconditionFailed", 0, "One of the specified pre-condition is not met."],
      ["mismatched partition key", () => c.item("1", "p").replace({ id: "1", pk: "q" }), 400, "BadRequest", 1001,
        "PartitionKey extracted from document doesn't match the one specified in the header."],
      ["ttl null", () => c.items.create({ id: "2", pk: "p", ttl: null }), 400, "BadRequest", 0, "The input ttl 'null' is invalid."],
    ];
    for (const [what, call, code, bodyCode, substatus, prefix] of cases) {
      await assert.rejects(call(), (err) => {
        assert.equal(err.code, code, `${what}: ${err.message}`);
        assert.equal(err.body?.code, bodyCode, what);
        assert.equal(err.substatus, substatus, what);
        assert.ok(err.message.startsWith(prefix), `${what}: ${JSON.stringify(err.message)}, want it to begin with ${JSON.stringify(prefix)}`);
        return true;
      });
    }
  });

  test("queries: parameters, paging, one partition and across, ORDER BY, aggregates", async () => {
    const c = await container("queries", { id: "orders", partitionKey: { paths: ["/tenant"] } });
    for (let i = 0; i < 20; i++) {
      const tenant = ["a", "b", "c"][i % 3];
      await c.items.create({ id: `o${String(i).padStart(2, "0")}`, tenant, total: i });
    }
    // Parameters, several pages, across partitions, ordered.
    const desc = await drain(
      c.items.query(
        { query: "SELECT VALUE c.total FROM c WHERE c.total >= @min ORDER BY c.total DESC", parameters: [{ name: "@min", value: 5 }] },
        { maxItemCount: 3 },
      ),
    );
    assert.deepEqual(desc.items, [19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5]);
    assert.deepEqual(desc.sizes, [3, 3, 3, 3, 3]);

    // One partition, paged.
    const b = await drain(c.items.query("SELECT VALUE c.id FROM c", { partitionKey: "b", maxItemCount: 2 }));
    assert.deepEqual(b.items, ["o01", "o04", "o07", "o10", "o13", "o16", "o19"]);
    assert.deepEqual(b.sizes, [2, 2, 2, 1]);
    const { resources: bCount } = await c.items.query("SELECT VALUE COUNT(1) FROM c", { partitionKey: "b" }).fetchAll();
    assert.deepEqual(bCount, [7]);

    // Aggregates, TOP, DISTINCT across partitions: lethe's results, passed through.
    const cases = [
      ["SELECT VALUE COUNT(1) FROM c", [20]],
      ["SELECT VALUE MAX(c.total) FROM c", [19]],
      ["SELECT VALUE SUM(c.total) FROM c WHERE c.tenant = 'c'", [2 + 5 + 8 + 11 + 14 + 17]],
      ["SELECT VALUE AVG(c.total) FROM c WHERE c.tenant = 'a'", [9]],
      ["SELECT TOP 2 c.id FROM c ORDER BY c.total", [{ id: "o00" }, { id: "o01" }]],
      ["SELECT DISTINCT VALUE c.tenant FROM c ORDER BY c.tenant", ["a", "b", "c"]],
      ["SELECT c.id, c.total FROM c WHERE c.tenant = 'c' ORDER BY c.total DESC OFFSET 1 LIMIT 2", [{ id: "o14", total: 14 }, { id: "o11", total: 11 }]],
    ];
    for (const [query, want] of cases) {
      const { resources } = await c.items.query(query).fetchAll();
      assert.deepEqual(resources, want, query);
    }
    // fetchAll over many small pages gathers everything.
    const { resources: ids } = await c.items.query("SELECT VALUE c.id FROM c ORDER BY c.id", { maxItemCount: 4 }).fetchAll();
    assert.equal(ids.length, 20);
    assert.deepEqual(ids, [...ids].sort());
    // The async iterator, page by page.
    let pages = 0;
    for await (const page of c.items.query("SELECT * FROM c", { maxItemCount: 7 }).getAsyncIterator()) {
      pages++;
      assert.ok(page.resources.length <= 7);
    }
    assert.equal(pages, 3);

    // A continuation token resumes the query in a new iterator. Across
    // partitions, an ORDER BY is refused by the gateway (as Cosmos DB's
    // is) and the SDK runs it range by range, without a token; for one
    // partition the server's token comes through.
    const first = await c.items.query("SELECT VALUE c.id FROM c ORDER BY c.id DESC", { partitionKey: "b", maxItemCount: 4 }).fetchNext();
    assert.deepEqual(first.resources, ["o19", "o16", "o13", "o10"]);
    assert.ok(first.continuationToken, "no continuation token after the first page");
    const rest = await drain(c.items.query("SELECT VALUE c.id FROM c ORDER BY c.id DESC", { partitionKey: "b", maxItemCount: 4, continuationToken: first.continuationToken }));
    assert.deepEqual(rest.items, ["o07", "o04", "o01"]);
    const across = await c.items.query("SELECT VALUE c.id FROM c ORDER BY c.id", { maxItemCount: 15 }).fetchNext();
    assert.deepEqual(across.resources, ids.slice(0, 15));

    // A bad query, or a missing parameter, is a 400: the query engine's
    // list of errors (after the gateway's words for a failed query plan,
    // when the SDK asked for one), then lethe's explanation.
    await rejectsWith(c.items.query("SELECT * FROM c WHERE").fetchAll(), 400, "bad query");
    await assert.rejects(c.items.query("SELECT * FROM c WHERE").fetchAll(), (err) => {
      const m = /^(?:Gateway Failed to Retrieve Query Plan: )?Message: (\{[^\r\n]*\})\r\nActivityId: [^,]+, lethe: (.*)$/.exec(err.body?.message ?? "");
      assert.ok(m, `bad query: ${err.body?.message}`);
      assert.deepEqual(JSON.parse(m[1]).errors, [
        { severity: "Error", location: { start: 21, end: 21 }, code: "SC1002", message: "Syntax error, unexpected end-of-file." },
      ]);
      assert.equal(m[2], "1:22: expected an expression, found end of query");
      return true;
    });
    await rejectsWith(c.items.query("SELECT * FROM c WHERE c.total = @nope").fetchAll(), 400, "missing parameter");
  });

  test("search: VectorDistance TOP k and ORDER BY RANK (FullTextScore, RRF), one partition and across", async () => {
    const c = await container("search", {
      id: "search",
      partitionKey: { paths: ["/pk"] },
      vectorEmbeddingPolicy: { vectorEmbeddings: [{ path: "/embedding", dataType: "float32", distanceFunction: "cosine", dimensions: 3 }] },
      fullTextPolicy: { defaultLanguage: "en-US", fullTextPaths: [{ path: "/title", language: "en-US" }] },
      indexingPolicy: {
        includedPaths: [{ path: "/*" }],
        excludedPaths: [{ path: "/embedding/*" }],
        vectorIndexes: [{ path: "/embedding", type: "flat" }],
        fullTextIndexes: [{ path: "/title" }],
      },
    });
    for (const it of [
      { id: "1", pk: "a", title: "red fox", embedding: [1, 0, 0] },
      { id: "2", pk: "a", title: "brown bear", embedding: [0, 1, 0] },
      { id: "3", pk: "b", title: "red apples, red cherries", embedding: [0.9, 0.1, 0] },
      { id: "4", pk: "b", title: "green apples", embedding: [1, 0] }, // another length: kept, not ranked by the vector
    ]) {
      assert.equal((await c.items.create(it)).statusCode, 201);
    }
    const parameters = [{ name: "@q", value: [1, 0, 0] }];
    const run = async (query, options) => (await c.items.query({ query, parameters }, options).fetchAll()).resources;
    // The SDK asks for the query plan, the service's: it runs its own
    // non-streaming ORDER BY and hybrid search over the ranges.
    assert.deepEqual(await run("SELECT TOP 2 c.id, VectorDistance(c.embedding, @q) AS score FROM c ORDER BY VectorDistance(c.embedding, @q)"), [
      { id: "1", score: 1 },
      { id: "3", score: 0.9938837 },
    ]);
    assert.deepEqual(await run("SELECT VALUE c.id FROM c ORDER BY VectorDistance(c.embedding, @q)", { partitionKey: "b" }), ["3", "4"]);
    assert.deepEqual(await run('SELECT TOP 10 VALUE c.id FROM c ORDER BY RANK FullTextScore(c.title, "red")'), ["3", "1", "2", "4"]);
    assert.deepEqual(await run('SELECT TOP 10 VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.title, "apples"), VectorDistance(c.embedding, @q))'), ["3", "1", "4", "2"]);
    assert.deepEqual(await run('SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.title, "bear")', { maxItemCount: 1 }), ["2", "1", "3", "4"]);
    await rejectsWith(run('SELECT FullTextScore(c.title, "red") AS s FROM c'), 400, "FullTextScore outside ORDER BY RANK");
  });

  test("hierarchical partition keys (MultiHash)", async () => {
    const c = await container("hierarchical", {
      id: "h",
      partitionKey: { kind: PartitionKeyKind.MultiHash, paths: ["/tenant", "/user"], version: 2 },
    });
    const { resource } = await c.read();
    assert.equal(resource.partitionKey.kind, "MultiHash");
    for (const user of ["ada", "bob"]) {
      await c.items.create({ id: "1", tenant: "acme", user });
    }
    await c.items.create({ id: "1", tenant: "globex", user: "ada" });
    const bob = await c.item("1", ["acme", "bob"]).read();
    assert.equal(bob.statusCode, 200);
    assert.equal(bob.resource.user, "bob");
    assert.equal((await c.item("1", ["acme", "cyd"]).read()).statusCode, 404);
    // The full key, then a prefix of it.
    const { resources: one } = await c.items.query("SELECT VALUE c.user FROM c", { partitionKey: ["acme", "ada"] }).fetchAll();
    assert.deepEqual(one, ["ada"]);
    const { resources: prefix } = await c.items.query("SELECT VALUE c.user FROM c ORDER BY c.user", { partitionKey: ["acme"] }).fetchAll();
    assert.deepEqual(prefix, ["ada", "bob"]);
    const { resources: all } = await c.items.query("SELECT VALUE COUNT(1) FROM c").fetchAll();
    assert.deepEqual(all, [3]);
    assert.equal((await c.item("1", ["acme", "ada"]).delete()).statusCode, 204);
    assert.equal((await c.item("1", ["globex", "ada"]).read()).statusCode, 200);
  });

  test("throughput: an offer read and replaced; none for an unlimited container", async () => {
    const c = await container("throughput", { id: "c", partitionKey: { paths: ["/id"] }, throughput: 400 });
    const { resource: offer } = await c.readOffer();
    assert.equal(offer.content.offerThroughput, 400);
    const { resource: replaced } = await client.offer(offer.id).replace({ ...offer, content: { ...offer.content, offerThroughput: 1000 } });
    assert.equal(replaced.content.offerThroughput, 1000);
    assert.equal((await c.readOffer()).resource.content.offerThroughput, 1000);
    const unlimited = await container("throughput", { id: "unlimited", partitionKey: { paths: ["/id"] } });
    assert.equal((await unlimited.readOffer()).resource, undefined);
  });

  test("users and permissions: clients built with resourceTokens and permissionFeed", async () => {
    const c = await container("tenants", { id: "c", partitionKey: { paths: ["/tenant"] } });
    await c.items.create({ id: "1", tenant: "acme" });
    await c.items.create({ id: "1", tenant: "globex" });
    const database = client.database("tenants");
    const { resource: userDef, statusCode } = await database.users.create({ id: "acme-app" });
    assert.equal(statusCode, 201);
    assert.equal(userDef.id, "acme-app");
    const user = database.user("acme-app");
    const { resource: perm } = await user.permissions.create(
      { id: "acme-only", permissionMode: "All", resource: c.url, resourcePartitionKey: ["acme"] },
      { resourceTokenExpirySeconds: 600 },
    );
    assert.match(perm._token, /^type=resource&ver=1\.0&sig=/);
    const { resources: users } = await database.users.readAll().fetchAll();
    assert.deepEqual(users.map((u) => u.id), ["acme-app"]);
    const { resources: perms } = await user.permissions.query("SELECT * FROM p WHERE p.permissionMode = 'All'").fetchAll();
    assert.deepEqual(perms.map((p) => p.id), ["acme-only"]);

    // A client holding only the token: its partition key, and nothing else.
    const scoped = new CosmosClient({ endpoint: server.url, resourceTokens: { [c.url]: perm._token }, agent });
    const sc = scoped.database("tenants").container("c");
    assert.equal((await sc.item("1", "acme").read()).resource.tenant, "acme");
    await sc.items.upsert({ id: "2", tenant: "acme" });
    const { resources: mine } = await sc.items.query("SELECT c.id FROM c", { partitionKey: "acme" }).fetchAll();
    assert.deepEqual(mine.map((r) => r.id).sort(), ["1", "2"]);
    await rejectsWith(sc.item("1", "globex").read(), 403, "another tenant's item");
    await rejectsWith(sc.items.create({ id: "3", tenant: "globex" }), 403, "a write in another tenant");
    // The SDK has no token for the list of databases, and sends none.
    await rejectsWith(scoped.databases.readAll().fetchAll(), 401, "the databases");
    scoped.dispose();

    // A Read permission through a permissionFeed: reads, never writes.
    const { resource: readPerm } = await database.user("acme-app").permissions.upsert({ id: "acme-only", permissionMode: "Read", resource: c.url, resourcePartitionKey: ["acme"] });
    const reader = new CosmosClient({ endpoint: server.url, permissionFeed: [readPerm], agent });
    const rc = reader.database("tenants").container("c");
    assert.equal((await rc.item("2", "acme").read()).statusCode, 200);
    await rejectsWith(rc.item("2", "acme").delete(), 403, "a delete under Read");
    // Its permission deleted, the token is refused.
    await user.permission("acme-only").delete();
    await rejectsWith(rc.item("2", "acme").read(), 401, "a token whose permission was deleted");
    reader.dispose();
    await user.delete();
  });

  test("conflicts: an empty feed on a single-region account, as the emulator's", async () => {
    const c = await container("conflicts", { id: "c", partitionKey: { paths: ["/id"] } });
    await c.items.create({ id: "1" });
    const { resources: all } = await c.conflicts.readAll().fetchAll();
    assert.deepEqual(all, []);
    const { resources: found } = await c.conflicts.query("SELECT * FROM c WHERE c.id = '1'").fetchAll();
    assert.deepEqual(found, []);
    await assert.rejects(c.conflict("1").delete(), (err) => err.code === 404);
    // Conflict.read in @azure/cosmos 4.9.3 signs its request as a read of a
    // "users" resource, so the signature does not cover the path it sends:
    // the service refuses it with 401, and so does lethe.
    await assert.rejects(c.conflict("1").read(), (err) => err.code === 401);
  });

  test("server-side scripts: stored procedures, triggers, UDFs", async () => {
    const c = await container("scripts", { id: "c", partitionKey: { paths: ["/pk"] } });
    const { resource: sproc, statusCode } = await c.scripts.storedProcedures.create({
      id: "bulk",
      body: function bulk(pk, n) {
        const coll = getContext().getCollection();
        let accepted = 0;
        for (let i = 0; i < n; i++) {
          if (!coll.createDocument(coll.getSelfLink(), { id: "item" + i, pk }, (err) => { if (err) throw err; })) break;
          accepted++;
        }
        console.log("accepted", accepted);
        getContext().getResponse().setBody({ accepted });
      },
    });
    assert.equal(statusCode, 201);
    assert.equal(sproc.id, "bulk");
    const run = await c.scripts.storedProcedure("bulk").execute("a", ["a", 5], { enableScriptLogging: true });
    assert.deepEqual(run.resource, { accepted: 5 });
    assert.equal(decodeURIComponent(run.headers["x-ms-documentdb-script-log-results"]), "accepted 5"); // no CRLF after the last entry, as the service's log
    assert.ok(run.requestCharge > 0);
    assert.equal((await c.item("item4", "a").read()).statusCode, 200);
    // A procedure that throws: the SDK's error, nothing written.
    await c.scripts.storedProcedures.create({ id: "boom", body: "function boom() { __.createDocument(__.getSelfLink(), {id: 'x', pk: 'a'}); throw new Error('boom'); }" });
    await rejectsWith(c.scripts.storedProcedure("boom").execute("a", []), 400, "a throw");
    assert.equal((await c.item("x", "a").read()).statusCode, 404);
    const { resources: sprocs } = await c.scripts.storedProcedures.readAll().fetchAll();
    assert.deepEqual(sprocs.map((s) => s.id).sort(), ["boom", "bulk"]);
    await c.scripts.storedProcedure("boom").delete();

    // A pre-trigger named by the request stamps the item; one that is not
    // named does not run.
    await c.scripts.triggers.create({
      id: "stamp",
      triggerType: "Pre",
      triggerOperation: "Create",
      body: "function stamp() { var r = getContext().getRequest(), d = r.getBody(); d.stamped = true; r.setBody(d); }",
    });
    const { resource: stamped } = await c.items.create({ id: "t1", pk: "a" }, { preTriggerInclude: ["stamp"] });
    assert.equal(stamped.stamped, true);
    const { resource: plain } = await c.items.create({ id: "t2", pk: "a" });
    assert.equal(plain.stamped, undefined);

    // UDFs: created and read as resources.
    const { resource: udf } = await c.scripts.userDefinedFunctions.create({ id: "tax", body: "function tax(x) { return x * 0.1; }" });
    assert.equal(udf.id, "tax");
    assert.equal((await c.scripts.userDefinedFunction("tax").read()).resource.body, "function tax(x) { return x * 0.1; }");
    // ... and called in a query.
    await c.items.create({ id: "p1", pk: "a", price: 30 });
    const { resources: taxes } = await c.items
      .query("SELECT VALUE udf.tax(c.price) FROM c WHERE IS_DEFINED(c.price)", { partitionKey: "a" })
      .fetchAll();
    assert.deepEqual(taxes, [3]);
  });

  // readChanges reads a change feed iterator until it has caught up (304),
  // and returns the changes and the last continuation.
  async function readChanges(iterator) {
    const changes = [];
    for (let i = 0; i < 100; i++) {
      const page = await iterator.readNext();
      if (page.statusCode === StatusCodes.NotModified) return { changes, continuation: page.continuationToken };
      assert.equal(page.statusCode, 200);
      assert.ok(page.requestCharge > 0, "a change feed page with no charge");
      changes.push(...page.result);
    }
    assert.fail("the change feed never caught up");
  }

  test("change feed, latest version: from the beginning, from now, a partition key, a continuation", async () => {
    const c = await container("changefeed", { id: "lv", partitionKey: { paths: ["/pk"] } });
    const now = c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
    assert.deepEqual((await readChanges(now)).changes, []);
    await c.items.create({ id: "a", pk: "x" });
    await c.items.create({ id: "b", pk: "y" });
    await c.items.upsert({ id: "a", pk: "x", v: 2 });

    const all = await readChanges(c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 1 }));
    assert.deepEqual(all.changes.map((d) => d.id), ["b", "a"]);
    assert.equal(all.changes[1].v, 2, "the latest version of a");
    assert.equal(typeof all.changes[1]._lsn, "number");
    // The iterator started from now sees what was written since.
    assert.deepEqual((await readChanges(now)).changes.map((d) => d.id), ["b", "a"]);
    // One partition key value.
    const x = await readChanges(c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning("x") }));
    assert.deepEqual(x.changes.map((d) => d.id), ["a"]);
    // A continuation token resumes where the reader was.
    await c.items.create({ id: "c", pk: "x" });
    const resumed = await readChanges(c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(all.continuation) }));
    assert.deepEqual(resumed.changes.map((d) => d.id), ["c"]);
    const resumedX = await readChanges(c.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(x.continuation) }));
    assert.deepEqual(resumedX.changes.map((d) => d.id), ["c"]);
  });

  // The slow ones wait for the real clock: they run side by side.
  describe("in real time", { concurrency: true }, () => {
    test("items expire: ttl seen through the SDK", async () => {
      const c = await container("expiry", { id: "sessions", defaultTtl: 3, partitionKey: { paths: ["/user"] } });
      // When each create was sent and answered: the item was written
      // in between, and its countdown started then.
      const created = {};
      for (const it of [
        { id: "default", user: "ada" }, // the container's 3 s
        { id: "never", user: "ada", ttl: -1 },
        { id: "short", user: "ada", ttl: 2 },
      ]) {
        const sent = performance.now();
        await c.items.create(it);
        created[it.id] = { sent, done: performance.now() };
      }
      const short = await c.item("short", "ada").read();
      const readMs = performance.now() - created.short.sent;
      assert.ok(readMs < 1900, `a create and a read took ${Math.round(readMs)} ms: too slow to see a 2 s ttl`);
      assert.equal(short.statusCode, 200, "the item was not readable right after its creation");
      assert.equal(short.resource.ttl, 2);
      assert.equal(typeof short.resource._ts, "number");

      // Poll until gone: not before its time to live, nor long after it.
      async function gone(id, ttlMs) {
        const { sent: writtenAfter, done: writtenBefore } = created[id];
        for (;;) {
          const sent = performance.now();
          const r = await c.item(id, "ada").read();
          const now = performance.now();
          if (r.statusCode === 404) {
            assert.ok(now - writtenAfter >= ttlMs - 50, `${id} gone ${Math.round(now - writtenAfter)} ms after its creation`);
            return;
          }
          assert.equal(r.statusCode, 200);
          assert.ok(sent - writtenBefore < ttlMs + 50, `${id} still there ${Math.round(sent - writtenBefore)} ms after its creation`);
          if (now - writtenAfter > 20_000) assert.fail(`${id} never expired`);
          await sleep(100);
        }
      }
      await gone("short", 2000);
      await gone("default", 3000);
      assert.equal((await c.item("never", "ada").read()).statusCode, 200, "the ttl -1 item expired");
      // Queries never see expired items.
      const { resources } = await c.items.query("SELECT VALUE c.id FROM c").fetchAll();
      assert.deepEqual(resources, ["never"]);
      // A create, or upsert, over an expired item makes it anew.
      const up = await c.items.upsert({ id: "short", user: "ada", ttl: 60 });
      assert.equal(up.statusCode, 201);
      assert.equal((await c.items.create({ id: "default", user: "ada" })).statusCode, 201);
    });

    test("change feed, all versions and deletes: writes, a delete, and a TTL expiry at its instant", async () => {
      const c = await container("changefeed", { id: "avad", defaultTtl: -1, partitionKey: { paths: ["/pk"] } });
      const iterator = c.items.getChangeFeedIterator({
        changeFeedStartFrom: ChangeFeedStartFrom.Now(),
        changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
      });
      assert.deepEqual((await readChanges(iterator)).changes, []);
      const written = performance.now();
      await c.items.create({ id: "short", pk: "p", ttl: 1 });
      await c.items.create({ id: "gone", pk: "p" });
      await c.items.upsert({ id: "gone", pk: "p", v: 2 });
      await c.item("gone", "p").delete();
      const seen = [];
      for (;;) {
        seen.push(...(await readChanges(iterator)).changes);
        if (seen.some((ch) => ch.metadata.timeToLiveExpired)) break;
        if (performance.now() - written > 20_000) assert.fail(`no expiry in the feed after 20 s: ${JSON.stringify(seen)}`);
        await sleep(100);
      }
      assert.ok(performance.now() - written >= 950, "the expiry came before the item's ttl");
      const ops = seen.map((ch) => `${ch.metadata.operationType}:${ch.current?.id ?? ch.metadata.id}`);
      assert.deepEqual(ops, ["create:short", "create:gone", "replace:gone", "delete:gone", "delete:short"]);
      const expiry = seen[4].metadata;
      assert.equal(expiry.timeToLiveExpired, true);
      assert.deepEqual(expiry.partitionKey, { pk: "p" });
      assert.equal(seen[3].metadata.timeToLiveExpired, false);
      assert.equal(seen[2].previous?.v, undefined, "the replace's previous image is the create");
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i].metadata.lsn > seen[i - 1].metadata.lsn, "lsns in order");
      // The expiry is dated when the item expired, to the second.
      assert.equal(expiry.crts, seen[0].current._ts + 1);
    });

    test("a container's TTL changed with container.replace applies at once", async () => {
      const c = await container("ttlchange", { id: "c", defaultTtl: 3600, partitionKey: { paths: ["/pk"] } });
      await c.items.create({ id: "old", pk: "p" });
      await c.items.create({ id: "never", pk: "p", ttl: -1 });
      await sleep(2500);
      const fresh = await c.items.create({ id: "fresh", pk: "p" });
      const freshAt = performance.now();
      // A default of 2 s: "old" is older than that, "fresh" is not.
      const { resource: def } = await c.read();
      const { resource: replaced } = await c.replace({ ...def, defaultTtl: 2 });
      assert.equal(replaced.defaultTtl, 2);
      assert.equal((await c.item("old", "p").read()).statusCode, 404, "an item older than the new default survived");
      const readFresh = await c.item("fresh", "p").read();
      if (performance.now() - freshAt < 1900) {
        assert.equal(readFresh.statusCode, 200, "an item younger than the new default vanished");
        assert.equal(readFresh.etag, fresh.etag);
      }
      assert.equal((await c.item("never", "p").read()).statusCode, 200);

      // Off: nothing expires, whatever the items' own ttl.
      const { defaultTtl: _, ...off } = def;
      await c.replace(off);
      await c.items.create({ id: "later", pk: "p", ttl: 1 });
      await sleep(1500);
      assert.equal((await c.item("later", "p").read()).statusCode, 200, "an item expired with time to live off");
      // On again without a default (-1): "later" expired half a second ago.
      await c.replace({ ...off, defaultTtl: -1 });
      assert.equal((await c.item("later", "p").read()).statusCode, 404, "with time to live on again");
      assert.equal((await c.item("never", "p").read()).statusCode, 200);
      const { resources } = await c.items.query("SELECT VALUE COUNT(1) FROM c").fetchAll();
      assert.ok(resources[0] === 1 || resources[0] === 2, `live items ${resources}`); // never, and fresh if not yet 2 s old
    });

    test("429: throttled writes, retried by the SDK itself", async (t) => {
      // 400 RU/s, the service's least: a create of a 900 KB item costs
      // more than that, so each create after the first is refused for
      // about a second and retried by the SDK after x-ms-retry-after-ms.
      const c = await container("throttled", { id: "small", partitionKey: { paths: ["/id"] }, throughput: 400 });
      const pad = "x".repeat(900 * 1024);
      const before429 = agent.count(429);
      const start = performance.now();
      let retries = 0;
      let waitedMs = 0;
      const n = 3;
      for (let i = 0; i < n; i++) {
        const r = await c.items.create({ id: String(i), pad });
        assert.equal(r.statusCode, 201, `create ${i}`);
        retries += Number(r.headers["x-ms-throttle-retry-count"] ?? 0);
        waitedMs += Number(r.headers["x-ms-throttle-retry-wait-time-ms"] ?? 0);
      }
      const elapsed = performance.now() - start;
      const sent = agent.count(429) - before429;
      assert.ok(sent > 0, "no 429 on the wire: throttling was not exercised");
      assert.ok(retries > 0, "the SDK reports no throttle retries");
      assert.ok(waitedMs > 0, "the SDK reports no wait");
      assert.ok(elapsed >= (n - 1) * 800, `${n} creates of 900 KB at 400 RU/s took only ${Math.round(elapsed)} ms`);
      const { resources } = await c.items.query("SELECT VALUE c.id FROM c").fetchAll();
      assert.deepEqual(resources.sort(), ["0", "1", "2"]);
      t.diagnostic(`429s retried by the SDK: ${sent}, waited ${waitedMs} ms`);
    });
  });
});

describe("over plain HTTP (-http), endpoint discovery off", { timeout: 60_000 }, () => {
  let server;
  let client;

  before(async () => {
    server = await start("-http");
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    // No agent of our own here: with one, the SDK refuses http:// URLs
    // (it allows insecure connections only with its default agents).
    // Session consistency asked for explicitly: the SDK then sends
    // x-ms-consistency-level and the session tokens it was given.
    client = new CosmosClient({
      endpoint: server.url,
      key: emulatorKey,
      consistencyLevel: "Session",
      connectionPolicy: { enableEndpointDiscovery: false },
    });
  });

  after(async () => {
    client?.dispose();
    if (server) await stop(server);
  });

  test("create, read, query, delete over HTTP", async () => {
    const { database } = await client.databases.createIfNotExists({ id: "plain" });
    const { container: c } = await database.containers.createIfNotExists({ id: "c", partitionKey: { paths: ["/pk"] }, defaultTtl: -1 });
    for (let i = 0; i < 5; i++) {
      const r = await c.items.create({ id: String(i), pk: i % 2 ? "odd" : "even" });
      assert.equal(r.statusCode, 201);
    }
    const read = await c.item("3", "odd").read();
    assert.equal(read.resource.id, "3");
    assert.ok(read.headers["x-ms-session-token"], "no session token");
    assert.deepEqual(read.diagnostics.clientSideRequestStatistics.locationEndpointsContacted, [server.url]);
    const q = await c.items.query("SELECT VALUE c.id FROM c WHERE c.pk = 'even' ORDER BY c.id").fetchAll();
    assert.deepEqual(q.resources, ["0", "2", "4"]);
    assert.deepEqual(q.diagnostics.clientSideRequestStatistics.locationEndpointsContacted, [server.url]);
    assert.equal((await c.item("0", "even").delete()).statusCode, 204);
    assert.equal((await c.item("0", "even").read()).statusCode, 404);
    await rejectsWith(database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } }), 409, "second create");
  });
});

describe("durable (-dir): what is written survives a restart", { timeout: 60_000 }, () => {
  let dir;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "lethe-sdktest-js-data-"));
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("stop with SIGTERM, start again on the same directory", async () => {
    const connect = (url) => new CosmosClient({ endpoint: url, key: emulatorKey, agent: new https.Agent({ rejectUnauthorized: false }) });
    let server = await start("-dir", dir);
    assert.equal(server.storage, `dir ${dir}`);
    let client = connect(server.url);
    try {
      const { database } = await client.databases.create({ id: "kept" });
      const { container: c } = await database.containers.create({ id: "c", defaultTtl: 3600, partitionKey: { paths: ["/pk"] } });
      await c.items.create({ id: "1", pk: "p", n: 1 });
      await c.items.create({ id: "2", pk: "p", n: 2, ttl: -1 });
      await c.item("1", "p").replace({ id: "1", pk: "p", n: 10 });
    } finally {
      client.dispose();
      await stop(server);
    }
    server = await start("-dir", dir);
    client = connect(server.url);
    try {
      const c = client.database("kept").container("c");
      const { resource } = await c.read();
      assert.equal(resource.defaultTtl, 3600);
      assert.deepEqual(resource.partitionKey.paths, ["/pk"]);
      assert.equal((await c.item("1", "p").read()).resource.n, 10);
      assert.equal((await c.item("2", "p").read()).resource.ttl, -1);
      const { resources } = await c.items.query("SELECT VALUE c.n FROM c ORDER BY c.n").fetchAll();
      assert.deepEqual(resources, [2, 10]);
    } finally {
      client.dispose();
      await stop(server);
    }
  });
});
