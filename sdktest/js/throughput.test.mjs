// @azure/cosmos over a container whose throughput is raised, against
// cmd/lethe started as a user starts it: the raise splits the container's
// partition key ranges as the service splits them (10,000 → 40,000 RU/s:
// 1 → 4), and the SDK, which had the one range cached, finds the new ones
// (410/1002 on the gone range, then a fresh read) and reads every item
// once; with -dir the split ranges are the same after a restart.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { CosmosClient } from "@azure/cosmos";

const emulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

let tmp;
let bin;

// start starts the built lethe on dir and returns it with a client.
async function start(dir) {
  const proc = spawn(bin, ["-addr", "127.0.0.1:0", "-compute-addr", "", "-dir", dir], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  proc.stderr.setEncoding("utf8");
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`lethe did not start in 30 s: ${log}`)), 30_000);
    proc.stderr.on("data", (chunk) => {
      log += chunk;
      const m = /endpoint=(https:\/\/\S+\/)/.exec(log);
      if (m && /msg="lethe: ready"/.test(log)) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`lethe exited (${code ?? signal}): ${log}`));
    });
  });
  const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false });
  const client = new CosmosClient({ endpoint: url, key: emulatorKey, agent });
  return {
    client,
    async stop() {
      client.dispose();
      agent.destroy();
      if (proc.exitCode === null) {
        const exited = new Promise((resolve) => proc.once("exit", resolve));
        proc.kill("SIGTERM");
        await exited;
      }
    },
  };
}

before(async () => {
  tmp = await mkdtemp(join(tmpdir(), "lethe-throughput-"));
  bin = join(tmp, "lethe");
  await promisify(execFile)("go", ["build", "-o", bin, "."], { cwd: join(repoRoot, "cmd/lethe") });
});

after(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe("a container whose throughput is raised", { timeout: 120_000 }, () => {
  test("splits its ranges, and the SDK reads them all, before and after a restart", async () => {
    const dir = join(tmp, "data");
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
