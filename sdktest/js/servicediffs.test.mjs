// @azure/cosmos against the command cmd/lethe, as in sdk.test.mjs, on the
// smaller differences from the service that the SDKs' own specs found
// (issue 49): the response's header names on the wire, values returned as
// sent, a document's _etag, the service's default indexing exclusion,
// stored procedures' appendValue and log format, script bodies checked
// when they run, and the gateway's form of a 413. Run with: npm ci && npm
// test.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";

import { BulkOperationType, CosmosClient, PermissionMode, TriggerOperation, TriggerType } from "@azure/cosmos";

import { buildLethe, emulatorKey, startLethe, stopLethe } from "./harness.mjs";

let lethe; // the command, built once
let server;
let client;
let database;

before(async () => {
  lethe = await buildLethe();
  server = await startLethe(lethe.bin);
  client = new CosmosClient({
    endpoint: server.url,
    key: emulatorKey,
    agent: new https.Agent({ rejectUnauthorized: false }),
    connectionPolicy: { enableEndpointDiscovery: false },
  });
  ({ database } = await client.databases.create({ id: "diffs" }));
});

after(async () => {
  if (server) await stopLethe(server);
  await lethe?.remove();
});

// rawHeaderNames returns the header names of an answer to GET path as the
// bytes came (Node's rawHeaders keeps their case), for an unsigned
// request: its 401 is a response of the front like any other.
function rawHeaderNames(path) {
  return new Promise((resolve, reject) => {
    const req = https.get(new URL(path, server.url), { rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(res.rawHeaders.filter((_, i) => i % 2 === 0));
    });
    req.on("error", reject);
  });
}

describe("the service's forms", () => {
  test("response header names: x-ms-* in lower case on the wire, as the service sends them", async () => {
    const names = await rawHeaderNames("/dbs");
    const xms = names.filter((n) => n.toLowerCase().startsWith("x-ms-"));
    assert.ok(xms.includes("x-ms-activity-id"), `names ${names}`);
    assert.deepEqual(xms.filter((n) => n !== n.toLowerCase()), [], `names ${names}`);
    assert.ok(names.includes("Content-Type"), `standard names keep their form: ${names}`);
  });

  test("a document's _etag is its etag header's string, quoted", async () => {
    const { container } = await database.containers.create({ id: "etags", partitionKey: { paths: ["/pk"] } });
    const created = await container.items.create({ id: "a", pk: "a" });
    assert.match(created.resource._etag, /^".+"$/);
    assert.equal(created.resource._etag, created.headers.etag);
    const read = await container.item("a", "a").read();
    assert.equal(read.resource._etag, read.headers.etag);
    const replaced = await container.item("a", "a").replace({ id: "a", pk: "a", n: 1 }, { accessCondition: { type: "IfMatch", condition: read.resource._etag } });
    assert.equal(replaced.statusCode, 200);
  });

  test("triggerType, triggerOperation and permissionMode come back as sent", async () => {
    const { container } = await database.containers.create({ id: "spelling", partitionKey: { paths: ["/pk"] } });
    const { resource: trigger } = await container.scripts.triggers.create({
      id: "t", body: "function () {}", triggerType: TriggerType.Pre, triggerOperation: TriggerOperation.All,
    });
    assert.equal(trigger.triggerType, TriggerType.Pre);
    assert.equal(trigger.triggerOperation, TriggerOperation.All);
    const { user } = await database.users.create({ id: "u" });
    const { resource: permission } = await user.permissions.create({ id: "p", permissionMode: PermissionMode.All, resource: container.url });
    assert.equal(permission.permissionMode, PermissionMode.All);
  });

  test("indexing policies: the service's /\"_etag\"/? exclusion, and the legacy root path", async () => {
    for (const [id, indexingPolicy, excluded] of [
      ["empty", {}, 1],
      ["included", { includedPaths: [{ path: "/*" }] }, 1],
      ["excluded", { includedPaths: [{ path: "/*" }], excludedPaths: [{ path: '/"systemMetadata"/*' }] }, 2],
    ]) {
      const { resource } = await database.containers.create({ id, partitionKey: { paths: ["/pk"] }, indexingPolicy });
      assert.equal(resource.indexingPolicy.excludedPaths.length, excluded, `${id}: ${JSON.stringify(resource.indexingPolicy)}`);
      assert.equal(resource.indexingPolicy.excludedPaths.at(-1).path, '/"_etag"/?');
    }
    const { resource } = await database.containers.create({
      id: "legacy", partitionKey: { paths: ["/pk"] },
      indexingPolicy: { includedPaths: [{ path: "/", indexes: [{ kind: "Range", dataType: "Number", precision: -1 }] }] },
    });
    assert.equal(resource.indexingPolicy.includedPaths[0].path, "/*");
  });

  test("stored procedures: appendValue, console.log's format, a body checked when it runs", async () => {
    const { container } = await database.containers.create({ id: "scripts", partitionKey: { paths: ["/pk"] } });
    const { resource: append } = await container.scripts.storedProcedures.create({
      id: "append", body: "function () { for (var i = 0; i < 10; i++) getContext().getResponse().appendValue('Body', i); }",
    });
    assert.equal((await container.scripts.storedProcedure(append.id).execute("a")).resource, "0123456789");
    const { resource: logs } = await container.scripts.storedProcedures.create({
      id: "logs", body: "function () { console.log('The value of %s is %s.', 'x', 1); getContext().getResponse().setBody('Success!'); }",
    });
    const run = await container.scripts.storedProcedure(logs.id).execute("a", [], { enableScriptLogging: true });
    assert.equal(run.resource, "Success!");
    assert.equal(decodeURIComponent(run.headers["x-ms-documentdb-script-log-results"]), "The value of x is 1.");
    const { resource: trigger } = await container.scripts.triggers.create({
      id: "later", body: "serverScript() { var x = 10; }", triggerType: TriggerType.Pre, triggerOperation: TriggerOperation.All,
    });
    assert.equal(trigger.body, "serverScript() { var x = 10; }");
    await container.scripts.storedProcedures.create({ id: "bad", body: "function ( {" });
    await assert.rejects(container.scripts.storedProcedure("bad").execute("a"), (err) => err.code === 400);
  });

  test("a bulk operation over the request's limit gets the gateway's 413 message", async () => {
    const { container } = await database.containers.create({ id: "bulk", partitionKey: { paths: ["/pk"] } });
    const big = { id: "big", pk: "a", v: "x".repeat(3 << 20) };
    const results = await container.items.executeBulkOperations([{ operationType: BulkOperationType.Create, partitionKey: "a", resourceBody: big }]);
    assert.equal(results.length, 1);
    assert.equal(results[0].error?.code, 413, JSON.stringify(results[0]).slice(0, 300));
    assert.ok(results[0].error.message.includes('Message: {"Errors":["Request size is too large"]}\r\n'), results[0].error.message.slice(0, 300));
  });
});
