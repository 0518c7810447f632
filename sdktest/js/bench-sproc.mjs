// bench-sproc measures stored procedures through cmd/lethe and
// @azure/cosmos, from one client, side by side in one run:
//   - a procedure that creates 100 items in one call, against 100 single
//     items.create calls, one after another;
//   - a procedure that does nothing, against a point read.
// The two sides alternate in rounds, so that both see the same moments
// of a shared machine. Run with
//
//	cd sdktest/js && npm ci && node bench-sproc.mjs [rounds]   # default 30
//
// Then it reads an item while a runaway procedure spins until it is
// stopped, against the same reads idle. It builds the command, starts it
// on a free port in memory, and prints each side's figures and their
// ratio.
import { startBenchServer } from "./bench-server.mjs";

const rounds = Number(process.argv[2] ?? 30);
const batch = 100; // items per round of creates
const calls = 200; // calls per round of the no-op and the read

const { client, stop } = await startBenchServer();
const { database } = await client.databases.createIfNotExists({ id: "bench" });
const { container: c } = await database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } });
await c.scripts.storedProcedures.create({
  id: "create100",
  body: function create100(pk, prefix, n) {
    const coll = getContext().getCollection();
    let created = 0;
    for (let i = 0; i < n; i++) {
      if (!coll.createDocument(coll.getSelfLink(), { id: prefix + i, pk, n: i, name: "name " + i, tags: ["a", "b"] }, (err) => { if (err) throw err; created++; })) break;
    }
    getContext().getResponse().setBody(n);
  },
});
await c.scripts.storedProcedures.create({ id: "noop", body: "function noop() {}" });
await c.items.create({ id: "read-me", pk: "p", n: 1, name: "name 1", tags: ["a", "b"] });

const now = () => Number(process.hrtime.bigint()) / 1e6; // ms
const createMs = { sproc: 0, single: 0 };
const lat = { noop: [], read: [] };
for (let r = 0; r < rounds; r++) {
  let t = now();
  const res = await c.scripts.storedProcedure("create100").execute("p", ["p", `s${r}-`, batch]);
  if (res.resource !== batch) throw new Error(`the procedure created ${res.resource}`);
  createMs.sproc += now() - t;
  t = now();
  for (let i = 0; i < batch; i++) await c.items.create({ id: `c${r}-${i}`, pk: "p", n: i, name: "name " + i, tags: ["a", "b"] });
  createMs.single += now() - t;
  for (let i = 0; i < calls; i++) {
    t = now();
    await c.scripts.storedProcedure("noop").execute("p", []);
    lat.noop.push(now() - t);
    t = now();
    await c.item("read-me", "p").read();
    lat.read.push(now() - t);
  }
}
const items = rounds * batch;
const perSec = (ms) => Math.round(items / (ms / 1000));
console.log(`creates: a procedure creating ${batch} per call: ${perSec(createMs.sproc)} items/s; ${batch} single items.create: ${perSec(createMs.single)} items/s; ratio ${(createMs.single / createMs.sproc).toFixed(1)}x`);
const q = (a, p) => a.slice().sort((x, y) => x - y)[Math.floor(a.length * p)];
const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
for (const [name, a] of Object.entries(lat)) {
  console.log(`${name}: mean ${(mean(a) * 1000).toFixed(0)} us, p50 ${(q(a, 0.5) * 1000).toFixed(0)} us, p99 ${(q(a, 0.99) * 1000).toFixed(0)} us (${a.length} calls)`);
}
console.log(`no-op procedure / point read: mean ${(mean(lat.noop) / mean(lat.read)).toFixed(2)}x, p50 ${(q(lat.noop, 0.5) / q(lat.read, 0.5)).toFixed(2)}x`);

// Point reads while a runaway procedure spins until stopped (5 s and its
// grace), against the same reads idle.
await c.scripts.storedProcedures.create({ id: "spin", body: "function spin() { while (true) {} }" });
async function reads(until) {
  const out = [];
  while (until()) {
    const t = now();
    await c.item("read-me", "p").read();
    out.push(now() - t);
  }
  return out;
}
const idleEnd = now() + 3000;
const idle = await reads(() => now() < idleEnd);
let spinning = true;
const spinStart = now();
const spin = c.scripts.storedProcedure("spin").execute("p", []).then(
  () => { throw new Error("the runaway procedure succeeded"); },
  (err) => { spinning = false; return err.code; },
);
const busy = await reads(() => spinning);
const code = await spin;
console.log(`runaway procedure: stopped with ${code} after ${((now() - spinStart) / 1000).toFixed(2)} s`);
console.log(`point reads: idle p50 ${(q(idle, 0.5) * 1000).toFixed(0)} us, p99 ${(q(idle, 0.99) * 1000).toFixed(0)} us (${idle.length}); during the runaway p50 ${(q(busy, 0.5) * 1000).toFixed(0)} us, p99 ${(q(busy, 0.99) * 1000).toFixed(0)} us (${busy.length}); p99 ratio ${(q(busy, 0.99) / q(idle, 0.99)).toFixed(2)}x`);
await stop();
