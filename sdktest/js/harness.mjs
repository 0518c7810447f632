// harness is what the tests here share: cmd/lethe built into a temporary
// directory, started on a free port of 127.0.0.1 and stopped with SIGTERM,
// and requests of the REST API signed with the master key as the SDKs
// sign them, for the command's own endpoints (/_lethe/...).

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";

// The Cosmos DB emulator's well-known key, lethe's default.
export const emulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

// The repository's root directory, with a trailing slash.
export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

// How long the command may take to start, and to stop after SIGTERM.
const patience = 30_000;

// buildLethe builds cmd/lethe (a module of its own) into a temporary
// directory and returns the command's path, the directory (free for the
// test's other files) and remove, which deletes the directory.
export async function buildLethe() {
  const dir = await mkdtemp(join(tmpdir(), "lethe-sdktest-js-"));
  const remove = () => rm(dir, { recursive: true, force: true });
  const bin = join(dir, "lethe");
  try {
    await promisify(execFile)("go", ["build", "-o", bin, "."], { cwd: join(repoRoot, "cmd", "lethe") });
  } catch (err) {
    await remove();
    throw err;
  }
  return { bin, dir, remove };
}

// startLethe runs the command bin on a free port of 127.0.0.1 with no
// compute gateway, then args (a flag of args given again wins, as Go's
// flag package reads them), and waits for its start line and its ready
// line. It returns the endpoint the start line names (url), the process,
// a promise of its exit ({code, signal}) and what it logged so far.
export async function startLethe(bin, ...args) {
  const proc = spawn(bin, ["-addr", "127.0.0.1:0", "-compute-addr", "", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => proc.once("exit", (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`lethe was not ready in ${patience / 1000} s: ${stderr}`));
    }, patience);
    const look = () => {
      // log/slog's text format: the start line, then the ready line.
      const m = /level=INFO msg="lethe: serving the Cosmos DB REST API" endpoint=(\S+)/m.exec(stderr);
      if (m && /level=INFO msg="lethe: ready"$/m.test(stderr)) {
        clearTimeout(timer);
        proc.stderr.off("data", look);
        resolve(m[1]);
      }
    };
    proc.stderr.on("data", look);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`lethe exited (${code ?? signal}) before serving: ${stderr}`));
    });
  });
  return { url, proc, exited, stderr: () => stderr };
}

// stopLethe sends SIGTERM to a command startLethe started and asserts a
// graceful shutdown: exit status 0 within 30 s (else it kills it).
export async function stopLethe(server) {
  server.proc.kill("SIGTERM");
  const result = await Promise.race([server.exited, sleep(patience, null, { ref: false })]);
  if (result === null) {
    server.proc.kill("SIGKILL");
    assert.fail(`lethe did not exit within ${patience / 1000} s of SIGTERM: ${server.stderr()}`);
  }
  assert.deepEqual(result, { code: 0, signal: null }, server.stderr());
}

// masterToken returns the authorization of a request signed with key (in
// base64) for method, resource type resType and resource link at date (an
// HTTP date), as the SDKs sign it: not yet URL-encoded.
export function masterToken(key, method, resType, link, date) {
  const text = `${method.toLowerCase()}\n${resType.toLowerCase()}\n${link}\n${date.toLowerCase()}\n\n`;
  return `type=master&ver=1.0&sig=${createHmac("sha256", Buffer.from(key, "base64")).update(text).digest("base64")}`;
}

// signedRequest sends one request to url through agent (the command's
// certificate is self-signed), signed with key (the emulator's by
// default) for resType and link, with headers and body (a string) if
// given, and resolves with its status and body text.
export function signedRequest(agent, url, { method, resType, link = "", key = emulatorKey, headers = {}, body }) {
  const date = new Date().toUTCString();
  const authorization = encodeURIComponent(masterToken(key, method, resType, link, date));
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method, agent, headers: { "x-ms-date": date, authorization, ...headers } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

// regionEndpoints returns the endpoint of each region of a command started
// with -regions, by name, from its regions line:
//
//	level=INFO msg="lethe: regions" "East US"=https://127.0.0.1:P/ "West US"=https://127.0.0.1:Q/
export function regionEndpoints(server) {
  const m = /msg="lethe: regions"(.*)$/m.exec(server.stderr());
  assert.ok(m, `lethe printed no regions line: ${server.stderr()}`);
  return Object.fromEntries([...m[1].matchAll(/"([^"]+)"=(https?:\/\/\S+\/)/g)].map((r) => [r[1], r[2]]));
}
