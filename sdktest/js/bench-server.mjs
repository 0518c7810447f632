// bench-server builds cmd/lethe, starts it on a free port in memory, and
// returns an @azure/cosmos client of it: what the benchmarks here share.
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

// startBenchServer returns { client, stop }: stop disposes of the client,
// stops the server and removes the binary.
export async function startBenchServer() {
  const dir = await mkdtemp(join(tmpdir(), "lethe-bench-"));
  const bin = join(dir, "lethe");
  await promisify(execFile)("go", ["build", "-o", bin, "."], { cwd: join(repoRoot, "cmd/lethe") }); // a module of its own
  const proc = spawn(bin, ["-addr", "127.0.0.1:0", "-compute-addr", ""], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  proc.stderr.setEncoding("utf8");
  const url = await new Promise((resolve, reject) => {
    proc.stderr.on("data", (chunk) => {
      stderr += chunk;
      const m = /serving the Cosmos DB REST API" endpoint=(\S+)/.exec(stderr);
      if (m) resolve(m[1]);
    });
    proc.once("exit", () => reject(new Error(stderr)));
  });
  const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false });
  const client = new CosmosClient({ endpoint: url, key: emulatorKey, agent });
  async function stop() {
    client.dispose();
    agent.destroy();
    proc.kill("SIGTERM");
    await new Promise((resolve) => proc.once("exit", resolve));
    await rm(dir, { recursive: true, force: true });
  }
  return { client, stop };
}
