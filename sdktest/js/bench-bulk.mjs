// bench-bulk measures loading items into cmd/lethe through @azure/cosmos,
// in one run: with executeBulkOperations, and with one items.create per
// item (as many in flight at once as the bulk path's requests). Run with
//
//	cd sdktest/js && npm ci && node bench-bulk.mjs [items]   # default 100000
//
// It builds the command, starts it on a free port in memory, and prints
// items per second for each way and their ratio.
import { startBenchServer } from "./bench-server.mjs";

const n = Number(process.argv[2] ?? 100_000);
const concurrency = 50; // single creates in flight at once

const { client, stop } = await startBenchServer();
const { database } = await client.databases.createIfNotExists({ id: "bench" });

function doc(i) {
  return { id: `item-${i}`, tenant: `t${i % 100}`, n: i, name: `name ${i}`, tags: ["a", "b"] };
}

async function timed(name, load) {
  const { container } = await database.containers.create({ id: name, partitionKey: { paths: ["/tenant"] } });
  const start = process.hrtime.bigint();
  await load(container);
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  const { resources } = await container.items.query("SELECT VALUE COUNT(1) FROM c").fetchAll();
  if (resources[0] !== n) throw new Error(`${name}: ${resources[0]} items, want ${n}`);
  console.log(`${name}: ${n} items in ${secs.toFixed(2)} s, ${Math.round(n / secs)} items/s`);
  return secs;
}

const bulk = await timed("executeBulkOperations", async (c) => {
  const ops = [];
  for (let i = 0; i < n; i++) ops.push({ operationType: "Create", partitionKey: `t${i % 100}`, resourceBody: doc(i) });
  const results = await c.items.executeBulkOperations(ops);
  const failed = results.filter((r) => r.error);
  if (failed.length) throw new Error(`${failed.length} bulk operations failed: ${failed[0].error.message}`);
});
const single = await timed("items.create", async (c) => {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) {
      const i = next++;
      await c.items.create(doc(i));
    }
  }));
});
console.log(`bulk is ${(single / bulk).toFixed(1)}x faster than one create per item (${concurrency} in flight)`);
await stop();
