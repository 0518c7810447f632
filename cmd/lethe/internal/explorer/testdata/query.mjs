// Runs the query tab's Query (web/query.js) with the page's own Client
// (web/cosmos.js) against the server at LETHE_URL, whose master key is
// LETHE_KEY, and prints what it read as JSON: TestQueryEveryRange checks
// it. Node's fetch stands in for the browser's, given the server's origin.
import { Client } from "../web/cosmos.js";
import { Query } from "../web/query.js";

const base = process.env.LETHE_URL;
const browserFetch = globalThis.fetch;
globalThis.fetch = (path, opts) => browserFetch(base + path, opts);

const client = new Client(process.env.LETHE_KEY);
await client.init();
const request = client.request.bind(client);
const segs = ["dbs", "db", "colls", "c"];

await request("POST", ["dbs"], { body: { id: "db" } });
await request("POST", ["dbs", "db", "colls"], {
  body: { id: "c", partitionKey: { paths: ["/pk"], kind: "Hash", version: 2 } },
  headers: { "x-ms-offer-throughput": "40000" },
});
for (let i = 0; i < 60; i++) {
  await request("POST", [...segs, "docs"], { body: { id: String(i), pk: `p${i}` }, headers: { "x-ms-documentdb-partitionkey": JSON.stringify([`p${i}`]) } });
}

// split splits a range of the container, as POST /_lethe/split does.
async function split(range) {
  const date = new Date().toUTCString();
  const res = await browserFetch(base + "/_lethe/split", {
    method: "POST",
    headers: { "x-ms-date": date, "x-ms-version": "2020-07-15", authorization: await client.authorization("POST", "split", "", date), "content-type": "application/json" },
    body: JSON.stringify({ database: "db", container: "c", range }),
  });
  if (res.status !== 200) throw new Error(`split: ${res.status} ${await res.text()}`);
}

// readAll reads every page of q, calling afterFirst after the first one.
async function readAll(q, afterFirst) {
  const out = { docs: [], ranges: [], pages: 0 };
  do {
    const page = await q.next();
    out.pages++;
    out.docs.push(...page.docs);
    out.ranges.push(...page.ranges);
    if (out.pages === 1 && afterFirst) await afterFirst();
  } while (!q.done);
  out.rangeCount = q.rangeCount;
  return out;
}

const all = { query: "SELECT c.id FROM c", parameters: [] };
console.log(JSON.stringify({
  all: await readAll(new Query(request, segs, all, { "x-ms-max-item-count": "7" })),
  key: await readAll(new Query(request, segs, all, {}, JSON.stringify(["p3"]))),
  count: await readAll(new Query(request, segs, { query: "SELECT VALUE COUNT(1) FROM c", parameters: [] }, {})),
  split: await readAll(new Query(request, segs, all, { "x-ms-max-item-count": "7" }), () => split("0")),
}));
