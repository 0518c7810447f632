// @azure/cosmos over a container whose throughput is raised, against
// cmd/lethe started as a user starts it: the raise splits the container's
// partition key ranges as the service splits them (10,000 → 40,000 RU/s:
// 1 → 4), and the SDK, which had the one range cached, finds the new ones
// (410/1002 on the gone range, then a fresh read) and reads every item
// once; with -dir the split ranges are the same after a restart.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { join } from "node:path";

import { CosmosClient } from "@azure/cosmos";

import { buildLethe, emulatorKey, startLethe, stopLethe } from "./harness.mjs";

let lethe; // the command, built once

// start starts the built lethe on dir and returns it with a client.
async function start(dir) {
  const server = await startLethe(lethe.bin, "-dir", dir);
  const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false });
  const client = new CosmosClient({ endpoint: server.url, key: emulatorKey, agent });
  return {
    client,
    async stop() {
      client.dispose();
      agent.destroy();
      await stopLethe(server);
    },
  };
}

before(async () => {
  lethe = await buildLethe();
});

after(async () => {
  await lethe?.remove();
});

describe("a container whose throughput is raised", { timeout: 120_000 }, () => {
  test("splits its ranges, and the SDK reads them all, before and after a restart", async () => {
    const dir = join(lethe.dir, "data");
    let server = await start(dir);
    try {
      const { database } = await server.client.databases.createIfNotExists({ id: "raise" });
      const { container } = await database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } }, { offerThroughput: 10000 });
      const ids = [];
      for (let i = 0; i < 40; i++) {
        await container.items.create({ id: `i${i}`, pk: `k${i}` });
        ids.push(`i${i}`);
      }
      // The SDK caches the one range.
      assert.equal((await container.getFeedRanges()).length, 1);
      assert.equal((await container.items.query("SELECT * FROM c").fetchAll()).resources.length, 40);

      const { resource: offer } = await container.readOffer();
      await server.client.offer(offer.id).replace({ ...offer, content: { ...offer.content, offerThroughput: 40000 } });
      const { resources: ranges } = await container.readPartitionKeyRanges().fetchAll();
      assert.deepEqual(ranges.map((r) => r.id), ["3", "4", "5", "6"]);
      assert.deepEqual(ranges.map((r) => r.parents), [["0", "1"], ["0", "1"], ["0", "2"], ["0", "2"]]);

      const { resources: all } = await container.items.query("SELECT * FROM c").fetchAll();
      assert.deepEqual(all.map((d) => d.id).sort(), [...ids].sort());
      const seen = new Set();
      for (let i = 0; i < 40; i++) {
        const r = await container.item(`i${i}`, `k${i}`).read();
        seen.add(r.headers["x-ms-documentdb-partitionkeyrangeid"]);
      }
      assert.deepEqual([...seen].sort(), ["3", "4", "5", "6"]);
      await server.stop();

      server = await start(dir);
      const again = server.client.database("raise").container("c");
      const { resources: after } = await again.readPartitionKeyRanges().fetchAll();
      // All but _ts, which is the container's, and the server's start for
      // a container found on disk.
      const withoutTS = (rs) => rs.map(({ _ts, ...r }) => r);
      assert.deepEqual(withoutTS(after), withoutTS(ranges));
      assert.equal((await again.getFeedRanges()).length, 4);
      const { resources: allAfter } = await again.items.query("SELECT * FROM c").fetchAll();
      assert.deepEqual(allAfter.map((d) => d.id).sort(), [...ids].sort());
    } finally {
      await server.stop();
    }
  });
});
