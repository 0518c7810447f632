// @azure/cosmos against the command cmd/lethe, as in sdk.test.mjs: the
// SDK's own cross-partition query pipeline over the service's query plans.
// Every query of the table runs across the partitions of a container of 4
// partition key ranges (40,000 RU/s), the SDK asking for the plan and
// sending the plan's rewritten query to each range, then merging what the ranges return (ORDER BY
// items, partial aggregates, GROUP BY items, the non-streaming ORDER BY of
// VectorDistance, the hybrid search of ORDER BY RANK); each must give
// exactly what lethe answers when it evaluates the whole query itself: the
// same query over a copy of the items in one logical partition, which the
// gateway serves whole. Run with: npm ci && npm test.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";

import { CosmosClient } from "@azure/cosmos";

import { buildLethe, emulatorKey, startLethe, stopLethe } from "./harness.mjs";

let lethe; // the command, built once

// PlanAgent is an https.Agent that counts the query plan requests the SDK
// sends and records the range of each query it sends to a partition key
// range.
class PlanAgent extends https.Agent {
  plans = 0;
  ranges = []; // the x-ms-documentdb-partitionkeyrangeid of each request naming one
  addRequest(req, options) {
    if (req.getHeader("x-ms-cosmos-is-query-plan-request")) this.plans++;
    const range = req.getHeader("x-ms-documentdb-partitionkeyrangeid");
    if (range) this.ranges.push(range);
    return super.addRequest(req, options);
  }
  // rangesSince returns the distinct ranges asked since the agent had
  // recorded n.
  rangesSince(n) {
    return new Set(this.ranges.slice(n));
  }
}

// The container: its items' partition key, the vector and full-text
// policies and the composite index the queries need.
function containerDef(id) {
  return {
    id,
    partitionKey: { paths: ["/pk"], kind: "Hash", version: 2 },
    vectorEmbeddingPolicy: { vectorEmbeddings: [{ path: "/v", dataType: "float32", distanceFunction: "cosine", dimensions: 3 }] },
    fullTextPolicy: { defaultLanguage: "en-US", fullTextPaths: [{ path: "/text", language: "en-US" }] },
    indexingPolicy: {
      indexingMode: "consistent",
      automatic: true,
      includedPaths: [{ path: "/*" }],
      excludedPaths: [{ path: '/"_etag"/?' }, { path: "/v/*" }],
      compositeIndexes: [[{ path: "/g", order: "ascending" }, { path: "/n", order: "descending" }]],
      vectorIndexes: [{ path: "/v", type: "flat" }],
      fullTextIndexes: [{ path: "/text" }],
    },
  };
}

// items are 24 items with no ties in any order the queries use: n, the
// similarity of v to [1, 0, 0], and the relevance of text to "swim" and
// "run" (each text has both, in counts of their own, and a length of its
// own).
const items = Array.from({ length: 24 }, (_, i) => ({
  id: `i${String(i).padStart(2, "0")}`,
  g: `g${i % 3}`,
  n: (i * 7) % 24,
  v: [Math.cos(i * 0.05), Math.sin(i * 0.05), 0],
  text: [...Array(1 + (i % 4)).fill("swim"), ...Array(1 + (i % 3)).fill("run"), ...Array(i).fill("lake")].join(" "),
}));

// The queries; whether their results come in an order of their own (else
// they are compared as sets: GROUP BY and DISTINCT without ORDER BY merge
// the ranges' results in no order of the service's); the SDK's outermost
// pipeline component the plan makes it choose (a plan that asks nothing of
// the SDK leaves it a ParallelQueryExecutionContext), or for ORDER BY RANK
// its execution context.
const vector = "[1, 0, 0]";
const queries = [
  { name: "ORDER BY", query: "SELECT * FROM c ORDER BY c.n", ordered: true, endpoint: "OrderByEndpointComponent" },
  { name: "ORDER BY DESC, projected", query: "SELECT c.id, c.n FROM c ORDER BY c.n DESC", ordered: true, endpoint: "OrderByEndpointComponent" },
  { name: "ORDER BY two paths", query: "SELECT c.id, c.g, c.n FROM c ORDER BY c.g, c.n DESC", ordered: true, endpoint: "OrderByEndpointComponent" },
  { name: "ORDER BY with a filter, TOP", query: "SELECT TOP 5 VALUE c.id FROM c WHERE c.n > 3 ORDER BY c.n", ordered: true, endpoint: "OffsetLimitEndpointComponent" },
  { name: "OFFSET LIMIT", query: "SELECT c.id FROM c ORDER BY c.n OFFSET 3 LIMIT 6", ordered: true, endpoint: "OffsetLimitEndpointComponent" },
  { name: "DISTINCT", query: "SELECT DISTINCT VALUE c.g FROM c", ordered: false, endpoint: "UnorderedDistinctEndpointComponent" },
  { name: "DISTINCT ORDER BY", query: "SELECT DISTINCT VALUE c.g FROM c ORDER BY c.g", ordered: true, endpoint: "OrderedDistinctEndpointComponent" },
  { name: "VALUE COUNT", query: "SELECT VALUE COUNT(1) FROM c", ordered: true, endpoint: "GroupByValueEndpointComponent" },
  { name: "VALUE SUM", query: "SELECT VALUE SUM(c.n) FROM c", ordered: true, endpoint: "GroupByValueEndpointComponent" },
  { name: "VALUE AVG", query: "SELECT VALUE AVG(c.n) FROM c WHERE c.g = 'g1'", ordered: true, endpoint: "GroupByValueEndpointComponent" },
  { name: "VALUE MIN", query: "SELECT VALUE MIN(c.n) FROM c", ordered: true, endpoint: "GroupByValueEndpointComponent" },
  { name: "VALUE MAX", query: "SELECT VALUE MAX(c.id) FROM c", ordered: true, endpoint: "GroupByValueEndpointComponent" },
  { name: "VALUE COUNTIF", query: "SELECT VALUE COUNTIF(c.n > 10) FROM c", ordered: true, endpoint: "GroupByValueEndpointComponent" },
  { name: "aggregates without VALUE", query: "SELECT COUNT(1) AS n, MAX(c.n) AS most FROM c", ordered: true, endpoint: "GroupByEndpointComponent" },
  { name: "GROUP BY", query: "SELECT c.g, COUNT(1) AS n, SUM(c.n) AS total, MIN(c.n) AS least FROM c GROUP BY c.g", ordered: false, endpoint: "GroupByEndpointComponent" },
  { name: "GROUP BY VALUE", query: "SELECT VALUE AVG(c.n) FROM c GROUP BY c.g", ordered: false, endpoint: "GroupByValueEndpointComponent" },
  {
    name: "VectorDistance",
    query: `SELECT TOP 7 c.id, VectorDistance(c.v, ${vector}) AS score FROM c ORDER BY VectorDistance(c.v, ${vector})`,
    ordered: true,
    endpoint: "NonStreamingOrderByEndpointComponent",
  },
  {
    name: "VectorDistance DISTINCT",
    query: `SELECT DISTINCT TOP 2 VALUE c.g FROM c ORDER BY VectorDistance(c.v, ${vector})`,
    ordered: true,
    endpoint: "NonStreamingOrderByDistinctEndpointComponent",
  },
  {
    name: "FullTextScore",
    query: `SELECT TOP 6 c.id, c.text FROM c ORDER BY RANK FullTextScore(c.text, "swim", "run")`,
    ordered: true,
    context: "HybridQueryExecutionContext",
  },
  {
    name: "RRF",
    query: `SELECT TOP 8 * FROM c ORDER BY RANK RRF(FullTextScore(c.text, "swim"), VectorDistance(c.v, ${vector}), [1, 0.37])`,
    ordered: true,
    context: "HybridQueryExecutionContext",
  },
  {
    name: "FullTextScore with a filter",
    query: `SELECT TOP 5 c.id FROM c WHERE c.n > 4 ORDER BY RANK FullTextScore(c.text, "swim")`,
    ordered: true,
    context: "HybridQueryExecutionContext",
  },
  {
    name: "FullTextScore, SELECT VALUE of the item",
    query: `SELECT TOP 6 VALUE c FROM c ORDER BY RANK FullTextScore(c.text, "swim", "run")`,
    ordered: true,
    context: "HybridQueryExecutionContext",
  },
  {
    name: "RRF, SELECT VALUE of an object",
    query: `SELECT TOP 7 VALUE {"id": c.id, "n": c.n} FROM c WHERE c.n > 2 ORDER BY RANK RRF(FullTextScore(c.text, "run"), VectorDistance(c.v, ${vector}))`,
    ordered: true,
    context: "HybridQueryExecutionContext",
  },
  {
    name: "RRF, SELECT VALUE of an object, the plan without the optimization",
    query: `SELECT TOP 7 VALUE {"id": c.id} FROM c ORDER BY RANK RRF(FullTextScore(c.text, "swim"), VectorDistance(c.v, ${vector}))`,
    ordered: true,
    context: "HybridQueryExecutionContext",
    options: { disableHybridSearchQueryPlanOptimization: true },
  },
  {
    name: "RRF, the plan without the hybrid search optimization",
    query: `SELECT TOP 8 c.id, c.n FROM c ORDER BY RANK RRF(FullTextScore(c.text, "run"), VectorDistance(c.v, ${vector}))`,
    ordered: true,
    context: "HybridQueryExecutionContext",
    options: { disableHybridSearchQueryPlanOptimization: true },
  },
];

// plain drops what differs between the two containers from results that
// are items: their system properties and partition key.
function plain(result) {
  if (result === null || typeof result !== "object" || Array.isArray(result)) return result;
  const { _rid, _self, _etag, _ts, _attachments, pk, ...rest } = result;
  return rest;
}

before(async () => {
  lethe = await buildLethe();
});

after(async () => {
  await lethe?.remove();
});

describe("the SDK's pipeline over the service's query plans", { timeout: 180_000 }, () => {
  let server;
  let agent;
  let client;
  let spread; // the items over 8 logical partitions and 4 ranges
  let whole; // the items in one logical partition

  before(async () => {
    server = await startLethe(lethe.bin);
    agent = new PlanAgent({ keepAlive: true, rejectUnauthorized: false });
    client = new CosmosClient({ endpoint: server.url, key: emulatorKey, agent });
    const { database } = await client.databases.create({ id: "plans" });
    spread = (await database.containers.create(containerDef("spread"), { offerThroughput: 40_000 })).container;
    whole = (await database.containers.create(containerDef("whole"))).container;
    const { resources: ranges } = await spread.readPartitionKeyRanges().fetchAll();
    assert.equal(ranges.length, 4, "the spread container's ranges");
    const holding = new Set(); // the ranges that hold items
    for (const [i, item] of items.entries()) {
      const { headers } = await spread.items.create({ ...item, pk: `p${i % 8}` });
      holding.add(headers["x-ms-documentdb-partitionkeyrangeid"]);
      await whole.items.create({ ...item, pk: "one" });
    }
    assert.equal(holding.size, 4, "the ranges that hold items");
  });

  after(async () => {
    client?.dispose();
    agent?.destroy();
    if (server) await stopLethe(server);
  });

  for (const { name, query, ordered, endpoint, context, options } of queries) {
    test(name, async () => {
      const { resources: want } = await whole.items.query(query, { partitionKey: "one" }).fetchAll();
      const plans = agent.plans;
      const asked = agent.ranges.length;
      const iterator = spread.items.query(query, { maxItemCount: 4, ...options });
      const { resources: got } = await iterator.fetchAll();
      assert.ok(agent.plans > plans, "the SDK asked for the plan");
      assert.equal(agent.rangesSince(asked).size, 4, "the SDK sent the query to every range");
      const context_ = iterator.queryExecutionContext;
      if (context) assert.equal(context_.constructor.name, context);
      else assert.equal(context_.constructor.name, "PipelinedQueryExecutionContext");
      if (endpoint) assert.equal(context_.endpoint.constructor.name, endpoint);
      assert.ok(want.length > 0, "lethe's own answer is not empty");
      const a = got.map(plain);
      const b = want.map(plain);
      if (ordered) assert.deepEqual(a, b);
      else assert.deepEqual(a.map((r) => JSON.stringify(r)).sort(), b.map((r) => JSON.stringify(r)).sort());
    });
  }

  // With enableQueryControl, the SDK resumes an ORDER BY from its token:
  // each range's continuation, and the rewritten query with the filter of
  // what follows the last result it returned (for one ORDER BY path: for
  // several, @azure/cosmos 4.9.3 joins a bound on each path by AND, which
  // drops results, against the service too; after an OFFSET LIMIT's last
  // result it gives a token with limit 0 again and again).
  test("a continuation token resumes an ORDER BY where it stopped", async () => {
    for (const query of ["SELECT c.id, c.n FROM c ORDER BY c.n DESC", "SELECT VALUE c.id FROM c WHERE c.n > 2 ORDER BY c.n"]) {
      const { resources: want } = await whole.items.query(query, { partitionKey: "one" }).fetchAll();
      const got = [];
      let continuationToken;
      do {
        const page = await spread.items.query(query, { maxItemCount: 5, continuationToken, enableQueryControl: true }).fetchNext();
        got.push(...page.resources);
        continuationToken = page.continuationToken;
      } while (continuationToken && got.length <= items.length);
      assert.deepEqual(got.map(plain), want.map(plain), query);
    }
  });

  // A filter that pins the partition key (a hierarchical key's whole)
  // narrows the plan's query ranges to that key's point, as the service's
  // plan does, so the SDK, made to ask for the plan, asks the one range
  // that holds the key; one that pins a prefix, to the prefix's keys.
  test("a query pinned to a partition key or a prefix asks one range", async () => {
    const tree = (
      await client.database("plans").containers.create(
        { ...containerDef("tree"), partitionKey: { paths: ["/g", "/pk"], kind: "MultiHash", version: 2 } },
        { offerThroughput: 40_000 },
      )
    ).container;
    for (const [i, item] of items.entries()) await tree.items.create({ ...item, pk: `p${i % 8}` });
    for (const [container, query, partitionKey] of [
      [spread, "SELECT * FROM c WHERE c.pk = 'p3' ORDER BY c.n DESC", "p3"],
      [spread, "SELECT VALUE COUNT(1) FROM c WHERE c.n > 2 AND c.pk = 'p5'", "p5"],
      [spread, "SELECT DISTINCT VALUE c.g FROM c WHERE c.pk IN ('p1', 'p1')", "p1"],
      [tree, "SELECT c.id, c.n FROM c WHERE c.g = 'g1' AND c.pk = 'p4' ORDER BY c.n", ["g1", "p4"]],
    ]) {
      const { resources: want } = await container.items.query(query, { partitionKey }).fetchAll();
      const asked = agent.ranges.length;
      const { resources: got } = await container.items.query(query, { forceQueryPlan: true, maxItemCount: 2 }).fetchAll();
      assert.equal(agent.rangesSince(asked).size, 1, `the ranges asked for ${query}`);
      assert.ok(want.length > 0, query);
      assert.deepEqual(got, want, query);
    }
    // A hierarchical key's prefix narrows them to the prefix's keys: the
    // same results as a filter the plan cannot narrow (under OR), from
    // fewer ranges.
    const prefixed = "SELECT VALUE c.id FROM c WHERE c.g = 'g2' ORDER BY c.id";
    const { resources: want } = await tree.items.query(prefixed.replace("c.g = 'g2'", "(c.g = 'g2' OR false)")).fetchAll();
    const asked = agent.ranges.length;
    const { resources: got } = await tree.items.query(prefixed, { maxItemCount: 2 }).fetchAll();
    assert.equal(agent.rangesSince(asked).size, 1, "the ranges asked for a prefix");
    assert.equal(want.length, items.length / 3);
    assert.deepEqual(got, want);
  });

  test("ORDER BY's items carry their system properties, as a point read's", async () => {
    const { resources } = await spread.items.query("SELECT * FROM c ORDER BY c.n DESC").fetchAll();
    const { resource: read } = await spread.item(resources[0].id, resources[0].pk).read();
    for (const name of ["_rid", "_self", "_etag", "_ts", "_attachments"]) {
      assert.equal(resources[0][name], read[name], name);
    }
  });
});
