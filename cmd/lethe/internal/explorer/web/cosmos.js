// The explorer's client of the Cosmos DB REST API: the requests the SDKs
// send, signed in the browser with the master key (HMAC-SHA256 over the
// string-to-sign of cosmosrest/auth.go, with WebCrypto).

// CosmosError is a request the server refused: its status, substatus and
// message, as Cosmos DB gives them.
export class CosmosError extends Error {
  constructor(status, substatus, message, activityId) {
    super(`${status}${substatus ? "/" + substatus : ""}: ${readableMessage(message)}`);
    this.status = status;
    this.substatus = substatus;
    this.activityId = activityId;
  }
}

// readableMessage gives a query error in the service's shape,
// `Message: {"errors":[{code, message, ...}]}` then a line with the
// ActivityId and lethe's line:column explanation, as its codes and messages
// and that explanation; any other message as it is.
export function readableMessage(message) {
  const m = /^Message: (\{.*?\})\r?\n(.*)$/s.exec(message ?? "");
  if (!m) return message;
  let errors;
  try {
    errors = JSON.parse(m[1]).errors;
  } catch {
    return message;
  }
  if (!Array.isArray(errors) || errors.length === 0) return message;
  const lethe = /, lethe: (.*)$/s.exec(m[2]);
  return errors.map((e) => (e.code ? `${e.code}: ${e.message}` : e.message)).join("; ") + (lethe ? ` (${lethe[1].trim()})` : "");
}

function base64ToBytes(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function bytesToBase64(bytes) {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

// escapeId escapes an id for a request path twice, so that the routing
// gateway, which unescapes a path twice, reads every id as it was signed
// (the cosmosrest package documentation, "Two gateways"). Dots are escaped
// too, or the browser would read "." and ".." as path steps.
function escapeId(id) {
  return encodeURIComponent(encodeURIComponent(id).replace(/\./g, "%2E"));
}

// resourceOf returns the resource type and link that a request on the path
// segments segs signs, by the REST API's rule.
export function resourceOf(segs) {
  const n = segs.length;
  if (n === 0) return ["", ""];
  if (n === 2 && segs[0] === "offers") return ["offers", segs[1].toLowerCase()];
  if (n % 2 === 0) return [segs[n - 2], segs.join("/")];
  return [segs[n - 1], segs.slice(0, n - 1).join("/")];
}

// stringToSign is the text a master-key signature covers.
export function stringToSign(verb, resType, link, date) {
  return `${verb.toLowerCase()}\n${resType.toLowerCase()}\n${link}\n${date.toLowerCase()}\n\n`;
}

// Client sends signed requests to the origin the page came from.
export class Client {
  // key is the account's master key, base64.
  constructor(key) {
    this.key = key;
    this.skewMs = 0; // the server's clock minus ours, when they differ by more than a second
    this.cryptoKey = null;
  }

  // init checks that the key is base64 and that the page can sign.
  async init() {
    if (!globalThis.crypto || !crypto.subtle) {
      throw new Error("this page cannot sign requests: WebCrypto needs HTTPS, or plain HTTP on localhost");
    }
    let raw;
    try {
      raw = base64ToBytes(this.key.trim());
    } catch {
      throw new Error("the key is not base64");
    }
    if (raw.length === 0) throw new Error("the key is empty");
    this.cryptoKey = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  }

  // regions returns the state of the account's regions, from lethe's
  // control endpoint GET /_lethe/regions: {writeRegion, consistency,
  // regions: [{name, write, down, pending, lagMs, conflicts}]}. An account
  // of one region has no such endpoint.
  async regions() {
    return (await this.request("GET", ["_lethe", "regions"], { sign: ["regions", ""] })).body;
  }

  // now is the server's time, as far as the page knows it, in ms.
  now() {
    return Date.now() + this.skewMs;
  }

  async authorization(verb, resType, link, date) {
    const text = stringToSign(verb, resType, link, date);
    const sig = await crypto.subtle.sign("HMAC", this.cryptoKey, new TextEncoder().encode(text));
    return encodeURIComponent("type=master&ver=1.0&sig=" + bytesToBase64(new Uint8Array(sig)));
  }

  // request sends method to the resource at segs (["dbs", id, "colls", id,
  // ...]) with a JSON body (an object, or a string sent as it is) and extra
  // headers. It returns {status, headers, body, charge}; a status of 400 or
  // more (but 304 and, with allow, the statuses listed) throws CosmosError.
  // sign, [type, link], is what a request to one of lethe's control
  // endpoints (["_lethe", ...]) signs, where the REST API's rule does not
  // apply.
  async request(method, segs, { body, headers = {}, allow = [], sign } = {}) {
    const [resType, link] = sign ?? resourceOf(segs);
    const date = new Date(this.now()).toUTCString();
    const h = new Headers({
      "x-ms-date": date,
      "x-ms-version": "2020-07-15",
      authorization: await this.authorization(method, resType, link, date),
      accept: "application/json",
    });
    for (const [k, v] of Object.entries(headers)) h.set(k, v);
    let payload;
    if (body !== undefined) {
      payload = typeof body === "string" ? body : JSON.stringify(body);
      if (!h.has("content-type")) h.set("content-type", "application/json");
    }
    const path = "/" + segs.map((s, i) => (i % 2 === 1 && !(segs[0] === "offers") ? escapeId(s) : encodeURIComponent(s))).join("/");
    const res = await fetch(path, { method, headers: h, body: payload, cache: "no-store", credentials: "omit" });
    this.learnSkew(res.headers.get("date"));
    const text = await res.text();
    let parsed = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    const charge = Number(res.headers.get("x-ms-request-charge") || 0);
    if (res.status >= 400 && !allow.includes(res.status)) {
      const msg = (parsed && parsed.message) || (typeof parsed === "string" ? parsed : res.statusText);
      throw new CosmosError(res.status, Number(res.headers.get("x-ms-substatus") || 0), msg, res.headers.get("x-ms-activity-id"));
    }
    return { status: res.status, headers: res.headers, body: parsed, charge };
  }

  // learnSkew follows the server's clock from a Date header (whole
  // seconds): only a difference of more than 1.5 s is taken, the rest is
  // the header's rounding.
  learnSkew(date) {
    const t = Date.parse(date || "");
    if (Number.isNaN(t)) return;
    const skew = t + 500 - Date.now();
    this.skewMs = Math.abs(skew) > 1500 ? skew : 0;
  }
}

// parsePairs reads a header of "name=value;" pairs (x-ms-lethe-reaper,
// x-ms-resource-usage, x-ms-documentdb-query-metrics) into an object of
// strings.
export function parsePairs(v) {
  const out = {};
  for (const part of (v || "").split(";")) {
    const i = part.indexOf("=");
    if (i > 0) out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return out;
}

// partitionKeyOf returns the x-ms-documentdb-partitionkey header value of a
// document: the values at the container's partition key paths, {} for one
// that is missing.
export function partitionKeyOf(doc, paths) {
  const values = paths.map((p) => {
    let v = doc;
    for (const seg of p.split("/").slice(1)) {
      if (v === null || typeof v !== "object" || !(seg in v)) return {};
      v = v[seg];
    }
    return v;
  });
  return JSON.stringify(values);
}

// expiryOf returns when a document expires, in ms since the epoch, from
// its _ts and ttl and its container's defaultTtl (SPEC: effective TTL), or
// Infinity if it never does. _ts is in whole seconds, so the item goes
// within a second after.
export function expiryOf(doc, defaultTtl) {
  if (defaultTtl === undefined || defaultTtl === null) return Infinity;
  let ttl = defaultTtl;
  if (typeof doc.ttl === "number") ttl = doc.ttl;
  if (ttl === -1 || typeof doc._ts !== "number") return Infinity;
  return (doc._ts + ttl) * 1000;
}

// ttlIgnored reports whether a document's own ttl is one its container
// ignores: a positive ttl while the container's time to live is off
// (defaultTtl absent or null), where no item expires, whatever its own ttl
// says. The ttl is kept as written and counts once time to live is on.
export function ttlIgnored(doc, defaultTtl) {
  return (defaultTtl === undefined || defaultTtl === null) && typeof doc.ttl === "number" && doc.ttl > 0;
}
