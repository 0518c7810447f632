// The Node program of docs/connect.md, run as written but for the server's
// port, in a child node process with NODE_EXTRA_CA_CERTS naming the
// certificate downloaded from /_explorer/emulator.pem, against cmd/lethe
// started as a user starts it (in memory, HTTPS): so that the document
// cannot drift from what connects.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import https from "node:https";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { buildLethe, repoRoot, startLethe, stopLethe } from "./harness.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const endpoint = "https://localhost:8081/";

let lethe; // the command, built once, and the certificate beside it
let server;
let addr; // "127.0.0.1:port", from its start line

before(async () => {
  lethe = await buildLethe();
  server = await startLethe(lethe.bin, "-compute-addr", "127.0.0.1:0");
  addr = new URL(server.url).host;
});

after(async () => {
  if (server) await stopLethe(server);
  await lethe?.remove();
});

// docBlock returns the code of the one fenced block of language lang that
// follows, in docs/connect.md, the comment naming this test.
async function docBlock(lang) {
  const doc = await readFile(join(repoRoot, "docs", "connect.md"), "utf8");
  const re = new RegExp("^<!-- tested: sdktest/js/connect\\.test\\.mjs .*-->\\n```" + lang + "\\n([\\s\\S]*?)^```$", "gm");
  const blocks = [...doc.matchAll(re)].map((m) => m[1]);
  assert.equal(blocks.length, 1, `docs/connect.md: ${blocks.length} ${lang} blocks marked for this test, want 1`);
  return blocks[0];
}

// download fetches the certificate without verifying it, as curl -k does.
function download(url) {
  return new Promise((resolve, reject) => {
    https
      .get(url, { rejectUnauthorized: false }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (body += chunk));
        res.on("end", () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${res.statusCode}: ${body}`))));
      })
      .on("error", reject);
  });
}

// runNode runs a module in a child node process with the environment env
// and returns its exit code and output.
function runNode(file, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [file], { cwd: here, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (out += chunk));
    child.once("exit", (code) => resolve({ code, out }));
  });
}

test("docs/connect.md's Node program connects with NODE_EXTRA_CA_CERTS", { timeout: 120_000 }, async () => {
  let src = await docBlock("js");
  assert.equal(src.split(endpoint).length, 2, `the program does not name ${endpoint} once:\n${src}`);
  src = src.replace(endpoint, `https://localhost:${addr.split(":")[1]}/`);

  const pem = join(lethe.dir, "emulator.pem");
  await writeFile(pem, await download(`https://${addr}/_explorer/emulator.pem`));
  // In this directory, so that it finds @azure/cosmos in node_modules.
  const dir = await mkdtemp(join(here, ".connect-"));
  try {
    const file = join(dir, "hello.mjs");
    await writeFile(file, src);
    const env = { ...process.env };
    delete env.NODE_TLS_REJECT_UNAUTHORIZED;
    delete env.NODE_EXTRA_CA_CERTS;
    // Without the certificate trusted, it fails as a default client does.
    const refused = await runNode(file, env);
    assert.notEqual(refused.code, 0, refused.out);
    assert.match(refused.out, /self-signed certificate/);
    const { code, out } = await runNode(file, { ...env, NODE_EXTRA_CA_CERTS: pem });
    assert.equal(code, 0, out);
    assert.equal(out.trim(), "created database hello");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
