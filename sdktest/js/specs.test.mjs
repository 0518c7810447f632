// @azure/cosmos against the command cmd/lethe, as in sdk.test.mjs, on what
// running the SDK's own functional specs unchanged found (issue 49): a
// permission on a document's _self, the routing gateway's answer to a
// control character in an id, the system's partition key of a container
// made without one, an object at a partition key path, and the service's
// words for a partition key path without its '/', for a vector index
// off the vector embedding policy and for a change of a vector index's
// type. Each test does what the spec does, written here. Run with: npm ci
// && npm test. (run_specs.sh runs the specs themselves, for triage.)

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";

import { BulkOperationType, Constants, CosmosClient, HTTPMethod, PartitionKeyKind, PermissionMode, ResourceType } from "@azure/cosmos";

import { buildLethe, emulatorKey, startLethe, stopLethe } from "./harness.mjs";

const agent = new https.Agent({ rejectUnauthorized: false });

let lethe; // the command, built once
let server;
let client;
let database;

before(async () => {
  lethe = await buildLethe();
  server = await startLethe(lethe.bin);
  client = new CosmosClient({ endpoint: server.url, key: emulatorKey, agent, connectionPolicy: { enableEndpointDiscovery: false } });
  ({ database } = await client.databases.create({ id: "specs" }));
});

after(async () => {
  if (server) await stopLethe(server);
  await lethe?.remove();
});

describe("what the SDK's own specs found", () => {
  // authorization.spec.ts makes a permission on a document's _self in a
  // container the SDK partitions on /id, with no resourcePartitionKey.
  test("a permission on a document's _self needs no resourcePartitionKey, and reaches that document alone", async () => {
    const { container } = await database.containers.create({ id: "tokens", partitionKey: { paths: ["/pk"] } });
    const { resource: doc } = await container.items.create({ id: "d", pk: "a" });
    await container.items.create({ id: "d", pk: "b" });
    const { user } = await database.users.create({ id: "reader" });
    const { resource: permission } = await user.permissions.create({ id: "one doc", permissionMode: PermissionMode.All, resource: doc._self });
    assert.equal(permission.resourcePartitionKey, undefined);
    const scoped = new CosmosClient({
      endpoint: server.url,
      resourceTokens: { [`dbs/${database.id}/colls/${container.id}/docs/d`]: permission._token },
      agent,
      connectionPolicy: { enableEndpointDiscovery: false },
    });
    const { resource } = await scoped.database(database.id).container(container.id).item("d", "a").read();
    assert.equal(resource.pk, "a");
    await assert.rejects(scoped.database(database.id).container(container.id).item("d", "b").read(), (err) => err.code === 403);
  });

  // itemIdEncoding.spec.ts: RGW_idWithCarriageReturn, RGW_idWithTab and
  // RGW_idWithLineFeed expect an error without a status code.
  test("the routing gateway answers an id with a control character with http.sys's page, which the SDK cannot parse", async () => {
    const { container } = await database.containers.create({ id: "ids", partitionKey: { paths: ["/pk"] } });
    for (const id of ["With\rCarriageReturn", "With\tTab", "With\nLineFeed"]) {
      const created = await container.items.create({ id, pk: id });
      assert.equal(created.statusCode, 201);
      await assert.rejects(container.item(id, id).read(), (err) => {
        assert.equal(err.code, undefined, `${JSON.stringify(id)}: ${err}`);
        return true;
      });
    }
  });

  // npcontainer.spec.ts makes a container without a partition key through
  // an old API version, then runs bulk and batch on it.
  test("a container made without a partition key reads back with the system's, and bulk works on it", async () => {
    const legacy = new CosmosClient({
      endpoint: server.url,
      key: emulatorKey,
      agent,
      connectionPolicy: { enableEndpointDiscovery: false },
      plugins: [
        {
          on: "request",
          plugin: (context, _diagNode, next) => {
            if (context.resourceType === ResourceType.container && context.method === HTTPMethod.post) {
              context.body = JSON.stringify({ id: JSON.parse(context.body).id });
            }
            context.headers[Constants.HttpHeaders.Version] = "2018-06-18";
            return next(context);
          },
        },
      ],
    });
    const { container: made } = await legacy.database(database.id).containers.create({ id: "nonpartitioned" });
    const container = database.container(made.id);
    const { resource: props } = await container.read();
    assert.deepEqual(props.partitionKey, { paths: ["/_partitionKey"], kind: "Hash", systemKey: true });
    const { resource: old } = await made.read();
    assert.equal(old.partitionKey, undefined, "an old API version sees no partition key");
    const results = await container.items.bulk([
      { operationType: BulkOperationType.Create, resourceBody: { id: "1", key: 1 } },
      { operationType: BulkOperationType.Upsert, resourceBody: { id: "2", key: 2 } },
      { operationType: BulkOperationType.Read, id: "1" },
      { operationType: BulkOperationType.Delete, id: "2" },
    ]);
    assert.deepEqual(results.map((r) => r.statusCode), [201, 201, 200, 204]);
    const { resource: item } = await container.item("1", undefined).read();
    assert.equal(item.key, 1);
    legacy.dispose();
  });

  // container.spec.ts: "Is missing leading '/' - hierarchical partitions".
  test("a partition key path without its '/' is refused in the service's words", async () => {
    await assert.rejects(
      database.containers.create({ id: "badpath", partitionKey: { paths: ["id", "/id2"], version: 2, kind: PartitionKeyKind.MultiHash } }),
      (err) => err.code === 400 && err.message.includes("The partition key component definition path 'id' could not be accepted"),
    );
  });

  // bulk.item.spec.ts creates {key: undefined, key2: {}} under [{}, {}]
  // and reads it back by [undefined, undefined].
  test("an object at a partition key path is no value, as undefined is", async () => {
    const { container } = await database.containers.create({
      id: "objectkeys",
      partitionKey: { paths: ["/key", "/key2"], version: 2, kind: PartitionKeyKind.MultiHash },
    });
    const created = await container.items.create({ id: "o", key2: {}, class: "2010" });
    assert.equal(created.statusCode, 201);
    const [read] = await container.items.bulk([{ operationType: BulkOperationType.Read, id: "o", partitionKey: [undefined, undefined] }]);
    assert.equal(read.statusCode, 200);
    assert.equal(read.resourceBody.class, "2010");
  });

  // vectorEmbeddingPolicy.spec.ts: "should fail to create vector indexing policy".
  test("a vector index off the vector embedding policy is refused in the service's words", async () => {
    await assert.rejects(
      database.containers.create({ id: "vectors", indexingPolicy: { vectorIndexes: [{ path: "/vector1", type: "flat" }] } }),
      (err) => err.code === 400 && err.body.message.includes("Vector Indexing Policy's path::\\/vector1 not matching in Embedding's path"),
    );
  });

  // vectorEmbeddingPolicy.spec.ts: "should fail to replace vector indexing policy", whose
  // replace also leaves out the vector embedding policy.
  test("a replace that changes a vector index's type is refused in the service's words", async () => {
    const vectorEmbeddingPolicy = { vectorEmbeddings: [{ path: "/vector1", dataType: "float32", dimensions: 500, distanceFunction: "euclidean" }] };
    const { container } = await database.containers.create({
      id: "vectorreplace",
      indexingPolicy: { vectorIndexes: [{ path: "/vector1", type: "flat" }] },
      vectorEmbeddingPolicy,
    });
    await assert.rejects(
      container.replace({ id: container.id, indexingPolicy: { vectorIndexes: [{ path: "/vector1", type: "quantizedFlat" }] } }),
      (err) => err.code === 400 && err.body.message.includes("Vector Indexing Policy cannot be changed in Collection Replace"),
    );
  });
});
