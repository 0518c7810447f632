// The data explorer's page: databases and containers, items counting down
// to their expiry, queries, the expiry histogram, the reaper and the
// change feed; in an account of several regions, the regions and each
// container's conflicts. Plain DOM code, no library; every request goes
// through cosmos.js, signed with the key the user gives.

import { Client, expiryOf, parsePairs, partitionKeyOf, ttlIgnored } from "./cosmos.js";
import { RANGES, bin, draw } from "./chart.js";
import { Query } from "./query.js";

// fill replaces the children of e with kids: nodes, strings and arrays of
// them, at any depth; undefined, null and false are nothing (the DOM's own
// append and replaceChildren would show them as text, "null"). Every list
// of children on the page goes through fill, or through h, which uses it.
function fill(e, ...kids) {
  e.replaceChildren(...kids.flat(Infinity).filter((k) => k !== undefined && k !== null && k !== false));
  return e;
}

// h makes an element: attrs sets attributes ("class", "data-…", …),
// properties ("value", "checked") and listeners ("onclick"); kids are as
// fill takes them.
function h(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "value" || k === "checked") e[k] = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  return fill(e, ...kids);
}

const $ = (sel, root = document) => root.querySelector(sel);

let client = null; // the signed client, once connected
let databases = []; // [{id, colls: [container]}]
let selection = null; // {db} or {db, coll}
let account = null; // the account's regions (accountOf), null with one region
let stops = []; // stop the timers of the view on screen

function stopTimers() {
  for (const stop of stops) stop();
  stops = [];
}

// every runs fn now and then every ms while the view is on screen.
function every(ms, fn) {
  const id = setInterval(fn, ms);
  stops.push(() => clearInterval(id));
}

// notice shows a message (an error, or what happened) at the top of the view.
function notice(msg, kind = "error") {
  const n = $("#notice");
  if (!n) return;
  n.className = kind;
  n.textContent = msg instanceof Error ? msg.message : msg;
}

// guard runs an async action and shows its error, if any.
async function guard(fn) {
  try {
    notice("", "");
    return await fn();
  } catch (err) {
    notice(err);
    return undefined;
  }
}

function fmtTime(ms) {
  if (!Number.isFinite(ms)) return "never";
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function fmtLeft(ms) {
  if (!Number.isFinite(ms)) return "never";
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${String(Math.floor(s / 60) % 60).padStart(2, "0")} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor(s / 3600) % 24} h`;
}

function fmtTTL(t) {
  if (t === undefined || t === null) return "off";
  if (t === -1) return "on, no default (-1)";
  return `${t} s`;
}

// ignoredHint is a tag element saying that doc's ttl is ignored by its
// container (ttlIgnored), with the rule as its tooltip; null for any other
// item.
function ignoredHint(doc, defaultTtl, tag = "span", id = undefined) {
  if (!ttlIgnored(doc, defaultTtl)) return null;
  return h(tag, { class: "ttl-ignored", id,
    title: "Time to live is off in this container (no default time to live): no item expires, whatever its own ttl says. " +
      "The ttl is kept as written, and counts once time to live is turned on (Settings: on, no default, or seconds)." },
  `ttl ${doc.ttl} ignored: the container's TTL is off`);
}

function fmtRU(ru) {
  return `${Math.round(ru * 100) / 100} RU`;
}

function fmtLag(ms) {
  return ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : fmtLeft(ms);
}

// ---- connecting ----

// The key the user typed is remembered in this tab's session storage, so
// that a reload connects again; Disconnect, or closing the tab, forgets it.
// The emulator's well-known key is not remembered: the server gives it.
const KEY_ITEM = "lethe-explorer-key";

// showConnect shows the connect form, with the key filled in when the
// server gives it (the emulator's well-known key, public anyway) or this
// tab remembers it; with auto, a filled-in key connects at once, without a
// click. Disconnect shows the form without auto, and stays there.
async function showConnect({ auto = false } = {}) {
  stopTimers();
  client = null;
  account = null;
  fill($("#tree"));
  fill($("#account"), h("span", { class: "muted" }, "not connected"));
  const key = h("input", { id: "key", type: "password", autocomplete: "off", spellcheck: "false", size: 60 });
  const hint = h("p", { class: "muted" });
  let served = "";
  const go = h("button", { id: "connect", class: "primary", onclick: async () => {
    go.disabled = true;
    await connect(key.value, served);
    go.disabled = false;
  } }, "Connect");
  key.addEventListener("keydown", (e) => e.key === "Enter" && !go.disabled && go.click());
  fill($("#view"),
    h("div", { id: "notice" }),
    h("section", { class: "card connect" },
      h("h2", {}, "Connect"),
      h("p", {}, "The explorer calls the server's Cosmos DB REST API, as the SDKs do, and signs every request in this page with the account key. The key stays in this browser tab."),
      h("label", {}, "Endpoint", h("input", { value: location.origin, readonly: true, size: 60 })),
      h("label", {}, "Key", key),
      h("div", { class: "actions" }, go),
      hint));
  try {
    const res = await fetch("config.json", { cache: "no-store" });
    served = (await res.json()).key || "";
  } catch {
    // no config: the user types the key
  }
  const remembered = sessionStorage.getItem(KEY_ITEM);
  if (served) {
    key.value = served;
    hint.textContent = "The server runs with the emulator's well-known key, filled in above.";
  } else if (remembered) {
    key.value = remembered;
    hint.textContent = "The key you gave in this tab, remembered until you disconnect or close the tab.";
  } else {
    hint.textContent = "The server runs with its own key: type it (lethe -key), then Enter.";
  }
  if (auto && key.value) go.click();
  else key.focus();
}

// connect connects with key, and remembers it in this tab unless it is
// served, the key the server gives the page, which needs no remembering;
// a key refused is forgotten.
async function connect(key, served) {
  await guard(async () => {
    const c = new Client(key);
    let acct;
    try {
      await c.init();
      acct = (await c.request("GET", [])).body; // the account: proves the key
    } catch (err) {
      sessionStorage.removeItem(KEY_ITEM);
      throw err;
    }
    if (key === served) sessionStorage.removeItem(KEY_ITEM);
    else sessionStorage.setItem(KEY_ITEM, key);
    client = c;
    account = accountOf(acct);
    fill($("#account"),
      h("span", { id: "connected" }, "connected to ", h("b", {}, location.host), account?.here ? ` (${account.here})` : null),
      h("button", { onclick: disconnect }, "Disconnect"));
    await loadTree();
    showHome();
  });
}

// accountOf reads the account resource: null for an account of one
// region; else the regions' endpoints by name, whether every region
// accepts writes, and the region this page is served by (its endpoint's
// origin, or port: a page opened at localhost is named 127.0.0.1).
function accountOf(body) {
  const readable = body?.readableLocations ?? [];
  if (readable.length < 2) return null;
  const url = (l) => new URL(l.databaseAccountEndpoint);
  const here = readable.find((l) => url(l).origin === location.origin) ?? readable.find((l) => url(l).port === location.port);
  return {
    endpoints: new Map(readable.map((l) => [l.name, l.databaseAccountEndpoint])),
    multi: body.enableMultipleWriteLocations === true,
    here: here?.name ?? "",
  };
}

// disconnect forgets the key and shows the connect form.
function disconnect() {
  sessionStorage.removeItem(KEY_ITEM);
  showConnect();
}

// ---- the tree of databases and containers ----

async function loadTree() {
  const dbs = (await client.request("GET", ["dbs"])).body.Databases || [];
  databases = await Promise.all(dbs.map(async (db) => {
    const colls = (await client.request("GET", ["dbs", db.id, "colls"])).body.DocumentCollections || [];
    colls.sort((a, b) => a.id.localeCompare(b.id));
    return { id: db.id, db, colls };
  }));
  databases.sort((a, b) => a.id.localeCompare(b.id));
  drawTree();
}

function drawTree() {
  const isSel = (db, coll) => selection && selection.db === db && selection.coll === coll;
  fill($("#tree"),
    h("div", { class: "tree-head" },
      h("a", { href: "#", onclick: (e) => (e.preventDefault(), showHome()) }, "Databases"),
      h("button", { class: "small", title: "Reload", onclick: () => guard(loadTree) }, "↻")),
    h("ul", {}, databases.map((d) => h("li", { class: "db" },
      h("a", { href: "#", "data-db": d.id, class: isSel(d.id, undefined) ? "sel" : "", onclick: (e) => (e.preventDefault(), showDatabase(d.id)) }, d.id),
      h("ul", {}, d.colls.map((c) => h("li", { class: "coll" },
        h("a", { href: "#", "data-db": d.id, "data-coll": c.id, class: isSel(d.id, c.id) ? "sel" : "", onclick: (e) => (e.preventDefault(), showContainer(d.id, c.id)) }, c.id))))))));
}

// ---- the home page: databases ----

function showHome() {
  stopTimers();
  selection = null;
  drawTree();
  const id = h("input", { id: "new-db-id", placeholder: "database id" });
  const tp = h("input", { id: "new-db-throughput", type: "number", min: 400, step: 100, placeholder: "none" });
  fill($("#view"),
    h("div", { id: "notice" }),
    h("h2", {}, "Databases"),
    databases.length === 0 ? null : h("table", { class: "grid" },
      h("thead", {}, h("tr", {}, h("th", {}, "id"), h("th", {}, "containers"), h("th", {}, "_ts"))),
      h("tbody", {}, databases.map((d) => h("tr", {},
        h("td", {}, h("a", { href: "#", onclick: (e) => (e.preventDefault(), showDatabase(d.id)) }, d.id)),
        h("td", {}, String(d.colls.length)),
        h("td", {}, fmtTime(d.db._ts * 1000)))))),
    databases.length ? null : h("p", { class: "muted" }, "No database yet."),
    regionsCard(),
    h("section", { class: "card" },
      h("h3", {}, "New database"),
      h("label", {}, "Id", id),
      h("label", {}, "Shared throughput (RU/s, optional)", tp),
      h("div", { class: "actions" }, h("button", { id: "new-db-create", class: "primary", onclick: () => guard(async () => {
        const headers = tp.value ? { "x-ms-offer-throughput": tp.value } : {};
        await client.request("POST", ["dbs"], { body: { id: id.value.trim() }, headers });
        const created = id.value.trim();
        await loadTree();
        showDatabase(created);
      }) }, "Create database"))));
}

// ---- the account's regions ----

// regionsCard shows the account's regions (GET /_lethe/regions): each
// one's endpoint, state, the changes on their way to it, its replication
// lag and the conflicts it met, read again every 2 s while the view is on
// screen; nothing for an account of one region. It shows nothing to
// change: regions go down, come up and fail over through the signed
// endpoint, or lethetest. A failed read is said in the card, not in the
// view's notice, which the view's own actions use.
function regionsCard() {
  if (!account) return null;
  const tbody = h("tbody");
  const caption = h("p", { class: "muted", id: "regions-caption" });
  async function load() {
    let st;
    try {
      st = await client.regions();
    } catch (err) {
      caption.className = "error";
      caption.textContent = `The regions could not be read: ${err.message}`;
      return;
    }
    caption.className = "muted";
    caption.textContent = `${st.consistency} consistency; ` +
      (account.multi ? "every region accepts writes." : `${st.writeRegion} is the write region.`);
    fill(tbody, st.regions.map(regionRow));
  }
  load();
  every(2000, load);
  return h("section", { class: "card", id: "regions" },
    h("h3", {}, "Regions"),
    caption,
    h("table", { class: "grid", id: "regions-table" },
      h("thead", {}, h("tr", {}, ["region", "endpoint", "state", "pending", "lag", "conflicts"].map((t) => h("th", {}, t)))),
      tbody));
}

// regionRow is one region's row of the regions card, its figures also in
// data attributes.
function regionRow(r) {
  const endpoint = account.endpoints.get(r.name) ?? "";
  return h("tr", { "data-region": r.name, "data-state": r.down ? "down" : "up", "data-down": r.down ?? "", "data-write": String(r.write),
    "data-pending": String(r.pending), "data-lag-ms": String(r.lagMs), "data-conflicts": String(r.conflicts) },
  h("td", {}, r.name, r.name === account.here ? h("span", { class: "muted" }, " (this page)") : null),
  h("td", { class: "mono" }, endpoint ? h("a", { href: endpoint + "_explorer/", title: "this region's explorer" }, endpoint) : ""),
  h("td", { class: "state" },
    r.down ? h("span", { class: "region down", title: "the region fails every request so" }, `down: ${r.down}`) : h("span", { class: "region up" }, "up"),
    r.write ? h("span", { class: "region write" }, "write") : null),
  h("td", { class: "num", title: "changes sent to the region and not yet applied" }, String(r.pending)),
  h("td", { class: "num", title: "how long ago the oldest change not yet applied there was written" }, r.pending ? fmtLag(r.lagMs) : "—"),
  h("td", { class: "num", title: "replicated changes that conflicted with the region's version of their item" }, String(r.conflicts)));
}

// ---- a database ----

function showDatabase(dbId) {
  stopTimers();
  selection = { db: dbId };
  drawTree();
  const d = databases.find((x) => x.id === dbId);
  if (!d) return showHome();
  const id = h("input", { id: "new-coll-id", placeholder: "container id" });
  const pk = h("input", { id: "new-coll-pk", value: "/pk", title: "one path, or several separated by commas (hierarchical)" });
  const ttl = ttlInput("new-coll-ttl", undefined);
  const tp = h("input", { id: "new-coll-throughput", type: "number", min: 400, step: 100, placeholder: "none" });
  fill($("#view"),
    h("div", { id: "notice" }),
    h("h2", {}, h("span", { class: "muted" }, "database "), dbId),
    d.colls.length === 0 ? null : h("table", { class: "grid" },
      h("thead", {}, h("tr", {}, h("th", {}, "container"), h("th", {}, "partition key"), h("th", {}, "default TTL"))),
      h("tbody", {}, d.colls.map((c) => h("tr", {},
        h("td", {}, h("a", { href: "#", onclick: (e) => (e.preventDefault(), showContainer(dbId, c.id)) }, c.id)),
        h("td", {}, (c.partitionKey?.paths ?? []).join(", ")),
        h("td", {}, fmtTTL(c.defaultTtl)))))),
    d.colls.length ? null : h("p", { class: "muted" }, "No container yet."),
    h("section", { class: "card" },
      h("h3", {}, "New container"),
      h("label", {}, "Id", id),
      h("label", {}, "Partition key", pk),
      h("label", {}, "Default time to live", ttl.node),
      h("label", {}, "Throughput (RU/s, optional)", tp),
      h("div", { class: "actions" }, h("button", { id: "new-coll-create", class: "primary", onclick: () => guard(async () => {
        const paths = pk.value.split(",").map((s) => s.trim()).filter(Boolean);
        const body = { id: id.value.trim(), partitionKey: { paths, kind: paths.length > 1 ? "MultiHash" : "Hash", version: 2 } };
        const t = ttl.value();
        if (t !== undefined) body.defaultTtl = t;
        const headers = tp.value ? { "x-ms-offer-throughput": tp.value } : {};
        await client.request("POST", ["dbs", dbId, "colls"], { body, headers });
        await loadTree();
        showContainer(dbId, body.id);
      }) }, "Create container"))),
    h("section", { class: "card danger" },
      h("h3", {}, "Delete the database"),
      h("p", {}, "Deletes every container in it, with their items."),
      h("button", { onclick: () => guard(async () => {
        if (!confirm(`Delete the database ${dbId} and everything in it?`)) return;
        await client.request("DELETE", ["dbs", dbId]);
        await loadTree();
        showHome();
      }) }, "Delete database")));
}

// ttlInput is a default-TTL editor: off, on without a default (-1), or n
// seconds. value() gives undefined (off), -1 or n.
function ttlInput(idPrefix, current) {
  const mode = h("select", { id: idPrefix + "-mode" },
    h("option", { value: "off" }, "off"),
    h("option", { value: "never" }, "on, no default (-1)"),
    h("option", { value: "seconds" }, "seconds"));
  const secs = h("input", { id: idPrefix, type: "number", min: 1, placeholder: "seconds" });
  if (current === -1) mode.value = "never";
  else if (typeof current === "number") (mode.value = "seconds"), (secs.value = current);
  // Typing a number means seconds.
  secs.addEventListener("focus", () => (mode.value = "seconds"));
  return {
    node: h("span", { class: "ttl" }, mode, secs),
    value() {
      if (mode.value === "off") return undefined;
      if (mode.value === "never") return -1;
      return Number(secs.value);
    },
  };
}

// ---- a container ----

const TABS = [
  ["items", "Items"],
  ["query", "Query"],
  ["expiries", "Expiries"],
  ["reaper", "Reaper"],
  ["feed", "Change feed"],
  ["conflicts", "Conflicts"], // in an account of several regions
  ["settings", "Settings"],
];

async function showContainer(dbId, collId, tab = "items") {
  stopTimers();
  selection = { db: dbId, coll: collId };
  drawTree();
  const ctx = { db: dbId, coll: collId, segs: ["dbs", dbId, "colls", collId] };
  const read = await guard(() => client.request("GET", ctx.segs));
  if (!read) return;
  ctx.props = read.body;
  ctx.reaper = read.headers.get("x-ms-lethe-reaper");
  const body = h("div", { id: "tab-body" });
  fill($("#view"),
    h("div", { id: "notice" }),
    h("h2", {}, h("span", { class: "muted" }, dbId + " › "), collId,
      h("span", { class: "badge", id: "coll-ttl" }, "default TTL: " + fmtTTL(ctx.props.defaultTtl))),
    h("div", { class: "tabs", role: "tablist" }, TABS.filter(([name]) => account || name !== "conflicts").map(([name, label]) =>
      h("button", { role: "tab", "data-tab": name, class: name === tab ? "sel" : "", onclick: () => showContainer(dbId, collId, name) }, label))),
    body);
  await ({ items: itemsTab, query: queryTab, expiries: expiriesTab, reaper: reaperTab, feed: feedTab, conflicts: conflictsTab, settings: settingsTab })[tab](body, ctx);
}

// ---- items ----

async function itemsTab(body, ctx) {
  const paths = ctx.props.partitionKey?.paths ?? [];
  const defaultTtl = ctx.props.defaultTtl;
  const rows = new Map(); // id + pk → row state
  const tbody = h("tbody");
  const count = h("span", { class: "muted", id: "item-count" });
  const json = h("textarea", { id: "item-json", rows: 6, spellcheck: "false" });
  const template = { id: "item-1" };
  for (const p of paths) template[p.split("/").pop()] = "a";
  if (defaultTtl !== undefined && defaultTtl !== null) template.ttl = 60;
  json.value = JSON.stringify(template, null, 2);
  const editor = h("section", { class: "card hidden", id: "item-editor" },
    h("h3", {}, "New item"),
    json,
    h("div", { class: "actions" },
      h("button", { id: "item-create", class: "primary", onclick: () => guard(async () => {
        const doc = JSON.parse(json.value);
        await client.request("POST", [...ctx.segs, "docs"], { body: doc, headers: { "x-ms-documentdb-partitionkey": partitionKeyOf(doc, paths) } });
        notice(`Created ${doc.id}.`, "info");
        await load();
      }) }, "Create"),
      h("button", { onclick: () => editor.classList.add("hidden") }, "Close")));
  const viewer = h("pre", { class: "json hidden", id: "item-view" });
  const viewerHint = h("div");
  function view(doc) {
    fill(viewerHint, ignoredHint(doc, defaultTtl, "p", "item-view-hint"));
    viewer.textContent = JSON.stringify(doc, null, 2);
    viewer.classList.remove("hidden");
  }

  const setCount = () => (count.textContent = `${rows.size} item${rows.size === 1 ? "" : "s"}${more ? " shown (more in the container)" : ""}`);
  let more = false;

  function drawRow(r) {
    const d = r.doc;
    const ttl = typeof d.ttl === "number" ? `${d.ttl === -1 ? "-1 (never)" : d.ttl + " s"}` : defaultTtl === undefined || defaultTtl === null ? "—" : `default (${fmtTTL(defaultTtl)})`;
    r.left = h("td", { class: "left" });
    r.tr = h("tr", { "data-id": d.id },
      h("td", {}, d.id),
      h("td", { class: "mono" }, r.pk),
      h("td", { title: `_ts ${d._ts}` }, fmtTime(d._ts * 1000)),
      h("td", {}, ignoredHint(d, defaultTtl) || ttl),
      h("td", { title: "_ts is in whole seconds: the item goes within a second after" }, fmtTime(r.exp)),
      r.left,
      h("td", { class: "row-actions" },
        h("button", { class: "small", onclick: () => view(r.doc) }, "View"),
        h("button", { class: "small", onclick: () => guard(async () => {
          await client.request("DELETE", [...ctx.segs, "docs", d.id], { headers: { "x-ms-documentdb-partitionkey": r.pk }, allow: [404] });
          drop(r);
        }) }, "Delete")));
    return r.tr;
  }

  function drop(r) {
    rows.delete(r.key);
    r.tr.classList.add("gone");
    setTimeout(() => r.tr.remove(), 600);
    setCount();
  }

  async function load() {
    const res = await client.request("GET", [...ctx.segs, "docs"], { headers: { "x-ms-max-item-count": "100" } });
    more = !!res.headers.get("x-ms-continuation");
    rows.clear();
    fill(tbody);
    for (const doc of res.body.Documents || []) {
      const pk = partitionKeyOf(doc, paths);
      const r = { key: doc.id + "\u0000" + pk, doc, pk, exp: expiryOf(doc, defaultTtl), checking: false };
      rows.set(r.key, r);
      tbody.append(drawRow(r));
    }
    setCount();
    tick();
  }

  // check asks the server for an item whose time is up: gone, it leaves
  // the table; still there (its _ts is rounded down, or it was written
  // again), it is asked for again shortly.
  async function check(r) {
    r.checking = true;
    try {
      const res = await client.request("GET", [...ctx.segs, "docs", r.doc.id], { headers: { "x-ms-documentdb-partitionkey": r.pk }, allow: [404] });
      if (res.status === 404) return drop(r);
      r.doc = res.body;
      r.exp = expiryOf(r.doc, defaultTtl);
      setTimeout(() => (r.checking = false), 300);
    } catch (err) {
      notice(err);
      setTimeout(() => (r.checking = false), 2000);
    }
  }

  function tick() {
    const now = client.now();
    for (const r of rows.values()) {
      const left = r.exp - now;
      r.left.textContent = left > 0 ? fmtLeft(left) : "expiring…";
      r.left.dataset.seconds = Number.isFinite(left) ? Math.max(0, Math.ceil(left / 1000)) : "";
      r.tr.classList.toggle("soon", left > 0 && left <= 10_000);
      r.tr.classList.toggle("expiring", left <= 0);
      if (left <= 0 && !r.checking) check(r);
    }
  }

  fill(body,
    h("div", { class: "toolbar" },
      h("button", { id: "items-refresh", onclick: () => guard(load) }, "Refresh"),
      h("button", { id: "new-item", onclick: () => editor.classList.toggle("hidden") }, "New item"),
      count),
    editor,
    h("table", { class: "grid", id: "items" },
      h("thead", {}, h("tr", {}, ["id", "partition key", "_ts", "ttl", "expires", "time left", ""].map((t) => h("th", {}, t)))),
      tbody),
    viewerHint,
    viewer);
  await guard(load);
  every(250, tick);
  every(15_000, () => guard(load));
}

// ---- queries ----

async function queryTab(body, ctx) {
  const text = h("textarea", { id: "query-text", rows: 4, spellcheck: "false", value: "SELECT * FROM c" });
  const pk = h("input", { id: "query-pk", placeholder: "all partitions", title: "a partition key value, JSON: \"a\", 3, [\"a\", 1] for a hierarchical key" });
  const out = h("div", { id: "query-out" });
  let reader = null; // the query being read (query.js)
  let total = { charge: 0, count: 0, pages: 0 };
  // run runs the query, or reads its next page with more. A new run
  // clears the results of the one before as it starts, so that a query
  // that fails leaves only its error; a next page that fails keeps the
  // pages read. Without a partition key the query reads every partition
  // key range of the container, one after another.
  const run = (more) => guard(async () => {
    if (!more) {
      total = { charge: 0, count: 0, pages: 0 };
      reader = null;
      results.length = 0;
      fill(out);
      let key = null;
      if (pk.value.trim()) {
        const v = JSON.parse(pk.value);
        key = JSON.stringify(Array.isArray(v) ? v : [v]);
      }
      const headers = { "x-ms-documentdb-populatequerymetrics": "True", "x-ms-max-item-count": "100" };
      reader = new Query(client.request.bind(client), ctx.segs, { query: text.value, parameters: [] }, headers, key);
    }
    const page = await reader.next();
    total.charge += page.charge;
    total.count += page.docs.length;
    total.pages++;
    showResults(page, more);
  });
  const results = []; // {doc, range}
  function showResults(page, append) {
    if (!append) results.length = 0;
    page.docs.forEach((doc, i) => results.push({ doc, range: page.ranges[i] }));
    const cols = [];
    const objects = results.every(({ doc: d }) => d !== null && typeof d === "object" && !Array.isArray(d));
    if (objects) for (const { doc: d } of results) for (const k of Object.keys(d)) if (!cols.includes(k)) cols.push(k);
    const cell = (v) => (v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v));
    const m = parsePairs(page.metrics);
    const row = ({ doc: d, range }) => h("tr", { "data-range": range, title: range === "" ? null : `partition key range ${range}` },
      objects ? cols.map((c) => h("td", {}, cell(d[c]))) : h("td", {}, cell(d)));
    fill(out,
      h("p", { class: "stats" },
        h("span", { id: "query-count" }, `${total.count} result${total.count === 1 ? "" : "s"}`), " · ",
        h("span", { id: "query-charge" }, fmtRU(total.charge)), " · ",
        `${total.pages} page${total.pages === 1 ? "" : "s"}`,
        reader.rangeCount > 1 ? [" · ", h("span", { id: "query-ranges", title: "ORDER BY, DISTINCT, TOP, OFFSET LIMIT and aggregates apply within each range: an SDK merges the ranges' results" },
          `${reader.rangeCount} partition key ranges, read one after another`)] : null,
        reader.done ? null : h("button", { class: "small", id: "query-more", onclick: () => run(true) }, "More")),
      h("table", { class: "grid", id: "query-results" },
        h("thead", {}, h("tr", {}, objects ? cols.map((c) => h("th", {}, c)) : h("th", {}, "value"))),
        h("tbody", {}, results.map(row))),
      Object.keys(m).length ? h("details", { open: true },
        h("summary", {}, "Query metrics (x-ms-documentdb-query-metrics, last page)"),
        h("table", { class: "grid metrics", id: "query-metrics" },
          h("tbody", {}, Object.entries(m).map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", { class: "num" }, v)))))) : null,
      h("details", {}, h("summary", {}, "JSON"), h("pre", { class: "json" }, JSON.stringify(results.map((r) => r.doc), null, 2))));
  }
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) run();
  });
  fill(body,
    h("section", { class: "card" },
      text,
      h("div", { class: "actions" },
        h("label", { class: "inline" }, "Partition key ", pk),
        h("button", { id: "query-run", class: "primary", onclick: () => run() }, "Run"),
        h("span", { class: "muted" }, "Ctrl+Enter"))),
    out);
}

// ---- the expiry histogram ----

async function expiriesTab(body, ctx) {
  const defaultTtl = ctx.props.defaultTtl;
  let range = RANGES[0];
  let expiries = [];
  let summary = { live: 0, never: 0, truncated: false };
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.id = "expiry-chart";
  svg.setAttribute("role", "img");
  const caption = h("p", { id: "chart-caption" });
  const buttons = h("div", { class: "toolbar" }, "Next ", RANGES.map((r) =>
    h("button", { class: r === range ? "sel small" : "small", "data-range": r.name, onclick: (e) => {
      range = r;
      for (const b of buttons.querySelectorAll("button")) b.classList.toggle("sel", b === e.target);
      redraw();
    } }, r.name)));

  async function load() {
    const all = [];
    let next = null;
    do {
      const headers = {
        "content-type": "application/query+json",
        "x-ms-documentdb-isquery": "True",
        // Across partitions, whole: the gateway serves a plain SELECT so,
        // whatever the container's partition key ranges.
        "x-ms-documentdb-query-enablecrosspartition": "True",
        "x-ms-max-item-count": "1000",
      };
      if (next) headers["x-ms-continuation"] = next;
      const res = await client.request("POST", [...ctx.segs, "docs"], { body: { query: "SELECT c._ts, c.ttl FROM c", parameters: [] }, headers });
      all.push(...(res.body.Documents || []));
      next = res.headers.get("x-ms-continuation");
    } while (next && all.length < 20000);
    const exp = all.map((d) => expiryOf(d, defaultTtl));
    expiries = exp.filter(Number.isFinite);
    summary = { live: all.length, never: exp.length - expiries.length, truncated: !!next };
    redraw();
  }

  function redraw() {
    const binned = bin(expiries, client.now(), range);
    draw(svg, binned, range);
    const within = expiries.length - binned.later;
    caption.textContent = (defaultTtl === undefined || defaultTtl === null ? "Time to live is off in this container: no item expires. " : "") +
      `${summary.live} item${summary.live === 1 ? "" : "s"}${summary.truncated ? " (the first 20,000)" : ""}: ` +
      `${within} expire within ${range.name}, ${binned.later} later, ${summary.never} never.`;
    svg.dataset.bars = String(binned.counts.filter((n) => n > 0).length);
  }

  fill(body,
    h("p", { class: "muted" }, "When the container's items will expire, from each item's _ts and time to live; each bar is an interval of the range ahead."),
    buttons,
    h("div", { class: "chart" }, svg),
    caption);
  await guard(load);
  every(1000, redraw);
  every(5000, () => guard(load));
}

// ---- the reaper ----

async function reaperTab(body, ctx) {
  const history = []; // backlog samples, one every 2 s
  const spark = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  spark.id = "reaper-backlog";
  const vals = {};
  const card = (key, label, help) =>
    h("div", { class: "stat" }, h("div", { class: "label", title: help }, label), (vals[key] = h("div", { class: "value", id: "reaper-" + key }, "…")));

  function show(reaper, usage) {
    const r = parsePairs(reaper);
    const u = parsePairs(usage);
    vals.items.textContent = u.documentsCount ?? "?";
    vals.backlog.textContent = r.expiredPending ?? "?";
    vals.lag.textContent = r.purgeLagMs === undefined ? "?" : `${(Number(r.purgeLagMs) / 1000).toFixed(1)} s`;
    vals.purged.textContent = r.purged ?? "?";
    vals.charge.textContent = r.requestCharge === undefined ? "?" : fmtRU(Number(r.requestCharge));
    history.push(Number(r.expiredPending || 0));
    if (history.length > 90) history.shift();
    drawSpark();
  }

  function drawSpark() {
    const W = 600, H = 90, left = 30, top = 8, bottom = 8, n = 90, max = Math.max(1, ...history);
    const y = (v) => H - bottom - (v / max) * (H - top - bottom);
    const svgEl = (name, attrs, text) => {
      const e = document.createElementNS("http://www.w3.org/2000/svg", name);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      if (text !== undefined) e.textContent = text;
      return e;
    };
    spark.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const x0 = W - ((history.length - 1) / (n - 1)) * (W - left); // the newest sample on the right
    const pts = history.map((v, i) => `${x0 + (i / (n - 1)) * (W - left)},${y(v)}`).join(" ");
    fill(spark,
      svgEl("line", { x1: left, x2: W, y1: y(0), y2: y(0), class: "axis" }),
      svgEl("line", { x1: left, x2: W, y1: y(max), y2: y(max), class: "grid" }),
      svgEl("text", { x: left - 6, y: y(0) + 4, class: "tick", "text-anchor": "end" }, "0"),
      svgEl("text", { x: left - 6, y: y(max) + 4, class: "tick", "text-anchor": "end" }, String(max)),
      svgEl("polyline", { points: pts, class: "spark" }));
  }

  async function load() {
    const res = await client.request("GET", ctx.segs);
    show(res.headers.get("x-ms-lethe-reaper"), res.headers.get("x-ms-resource-usage"));
  }

  fill(body,
    h("p", { class: "muted" }, "An expired item is gone for every read at its instant; the reaper deletes it from storage later, on throughput the container is not using, oldest expiry first. From the x-ms-lethe-reaper header of container reads."),
    h("div", { class: "stats-row", id: "reaper" },
      card("items", "live items", "documentsCount of x-ms-resource-usage"),
      card("backlog", "expired, awaiting purge", "expiredPending: the reaper's backlog"),
      card("lag", "purge lag", "how long ago the oldest item awaiting purge expired"),
      card("purged", "purged since start", "items the reaper (or a purge) deleted since the store opened"),
      card("charge", "RU spent purging", "request units the reaper has spent")),
    h("h3", {}, "Backlog, last 3 minutes"),
    h("div", { class: "chart small" }, spark));
  show(ctx.reaper, null);
  await guard(load);
  every(2000, () => guard(load));
}

// ---- the change feed ----

async function feedTab(body, ctx) {
  const keep = 100;
  let entries = []; // newest last
  let etag = null;
  const tbody = h("tbody");
  const status = h("span", { class: "muted", id: "feed-status" });
  const headers = () => {
    // The whole container's feed (no partition key range named). All
    // versions and deletes do not start from the beginning, as on the
    // service: the first read starts from the earliest point in time.
    const hd = {
      "a-im": "Full-Fidelity Feed",
      "x-ms-cosmos-changefeed-wire-format-version": "2021-09-15",
      "x-ms-max-item-count": "1000",
    };
    if (etag) hd["if-none-match"] = etag;
    else hd["if-modified-since"] = new Date(0).toUTCString();
    return hd;
  };

  // read reads pages until the feed has no more (304), at most pages of
  // them; a feed too long to read from its beginning is followed from now.
  async function read(pages) {
    for (let i = 0; i < pages; i++) {
      const res = await client.request("GET", [...ctx.segs, "docs"], { headers: headers() });
      etag = res.headers.get("etag") || etag;
      if (res.status === 304) return true;
      entries.push(...(res.body.Documents || []));
      if (entries.length > keep) entries = entries.slice(-keep);
    }
    return false;
  }

  function drawFeed() {
    fill(tbody, ...entries.slice().reverse().map((e) => {
      const m = e.metadata || {};
      const doc = m.operationType === "delete" ? e.previous || {} : e.current || {};
      const expired = m.timeToLiveExpired === true;
      const op = expired ? "expired" : m.operationType;
      return h("tr", { class: expired ? "expired" : "", "data-lsn": m.lsn },
        h("td", { class: "num" }, String(m.lsn)),
        h("td", {}, fmtTime(m.crts * 1000)),
        h("td", {}, h("span", { class: "op " + op }, op), expired ? h("span", { class: "muted" }, " (time to live)") : null),
        h("td", {}, m.id ?? doc.id ?? ""),
        h("td", { class: "mono" }, m.partitionKey ? JSON.stringify(Object.values(m.partitionKey)) : partitionKeyOf(doc, ctx.props.partitionKey?.paths ?? [])),
        h("td", { class: "mono clip" }, JSON.stringify(doc)));
    }));
    status.textContent = `the latest ${entries.length} change${entries.length === 1 ? "" : "s"}, newest first; following`;
  }

  fill(body,
    h("p", { class: "muted" }, "All versions and deletes (A-IM: Full-Fidelity Feed): creates, replaces, deletes, and expiries, which the feed records at the instant the item expired."),
    h("div", { class: "toolbar" }, status),
    h("table", { class: "grid", id: "feed" },
      h("thead", {}, h("tr", {}, ["lsn", "time", "operation", "id", "partition key", "document"].map((t) => h("th", {}, t)))),
      tbody));
  await guard(async () => {
    if (!(await read(20))) {
      etag = "*"; // too long to read from the start: follow it from now
      await read(1);
    }
    drawFeed();
  });
  every(2000, () => guard(async () => {
    await read(5);
    drawFeed();
  }));
}

// ---- conflicts ----

// policyText says what the container's conflict resolution policy does.
function policyText(p) {
  if (!p || p.mode !== "Custom") return `Last Writer Wins on ${p?.conflictResolutionPath || "/_ts"}: the regions keep the version with the higher value there, and no conflict is recorded.`;
  if (p.conflictResolutionProcedure) return `Custom, merged by ${p.conflictResolutionProcedure}: a conflict is recorded, in the first write region, only when the procedure is missing or fails.`;
  return "Custom without a procedure: every region records here the loser of each conflict it sees; the item keeps the Last Writer Wins winner by _ts.";
}

// conflictContent is a conflict's content, the losing version, which the
// service gives as a JSON text; the text itself if it is not JSON.
function conflictContent(c) {
  try {
    return JSON.parse(c.content);
  } catch {
    return c.content;
  }
}

async function conflictsTab(body, ctx) {
  const paths = ctx.props.partitionKey?.paths ?? [];
  const tbody = h("tbody");
  const count = h("span", { class: "muted", id: "conflict-count" });
  const viewer = h("pre", { class: "json hidden", id: "conflict-view" });
  function view(c) {
    viewer.textContent = JSON.stringify(conflictContent(c), null, 2);
    viewer.dataset.id = c.id;
    viewer.classList.remove("hidden");
  }

  function row(c) {
    const content = conflictContent(c);
    const doc = content !== null && typeof content === "object" ? content : {};
    return h("tr", { "data-id": c.id },
      h("td", { class: "mono" }, c.id),
      h("td", {}, h("span", { class: "op " + c.operationType }, c.operationType)),
      h("td", {}, c.resourceType),
      h("td", {}, doc.id ?? ""),
      h("td", { class: "mono" }, partitionKeyOf(doc, paths)),
      h("td", { title: `_ts ${c._ts}` }, fmtTime(c._ts * 1000)),
      h("td", { class: "num", title: "the change's number in its write region's feed" }, String(c.conflict_lsn ?? "")),
      h("td", { class: "row-actions" }, h("button", { class: "small", onclick: () => view(c) }, "View")));
  }

  // load reads the whole feed (at most 1,000 conflicts), page by page.
  async function load() {
    const all = [];
    let next = null;
    do {
      const headers = { "x-ms-max-item-count": "100" };
      if (next) headers["x-ms-continuation"] = next;
      const res = await client.request("GET", [...ctx.segs, "conflicts"], { headers });
      all.push(...(res.body.Conflicts || []));
      next = res.headers.get("x-ms-continuation");
    } while (next && all.length < 1000);
    fill(tbody, all.map(row));
    count.textContent = `${all.length} conflict${all.length === 1 ? "" : "s"}${next ? " (the first 1,000)" : ""}`;
  }

  fill(body,
    h("p", { class: "muted" }, `The conflicts feed of this container in ${account.here || "this region"}: the versions that lost a conflict between two write regions, as this region recorded them (each region's feed is its own).`),
    h("p", { id: "conflict-policy" }, policyText(ctx.props.conflictResolutionPolicy)),
    h("div", { class: "toolbar" }, count),
    h("table", { class: "grid", id: "conflicts" },
      h("thead", {}, h("tr", {}, ["id", "operation", "resource", "item", "partition key", "_ts", "lsn", ""].map((t) => h("th", {}, t)))),
      tbody),
    viewer);
  await guard(load);
  every(2000, () => guard(load));
}

// ---- settings ----

async function settingsTab(body, ctx) {
  const p = ctx.props;
  const ttl = ttlInput("ttl", p.defaultTtl);
  const offers = (await guard(() => client.request("GET", ["offers"])))?.body.Offers || [];
  const offer = offers.find((o) => o.offerResourceId === p._rid);
  const dbOffer = databases.find((d) => d.id === ctx.db) && offers.find((o) => o.offerResourceId === databases.find((d) => d.id === ctx.db).db._rid);
  const autoscale = offer && offer.content.offerAutopilotSettings;
  const tp = h("input", { id: "throughput", type: "number", min: autoscale ? 1000 : 400, step: autoscale ? 1000 : 100,
    value: offer ? (autoscale ? autoscale.maxThroughput : offer.content.offerThroughput) : "" });

  const throughput = offer
    ? h("div", {},
      h("p", {}, autoscale ? `Autoscale, up to ${autoscale.maxThroughput} RU/s (now ${offer.content.offerThroughput} RU/s).` : `Manual: ${offer.content.offerThroughput} RU/s.`),
      h("label", {}, autoscale ? "Maximum RU/s" : "RU/s", tp),
      h("div", { class: "actions" }, h("button", { id: "throughput-save", class: "primary", onclick: () => guard(async () => {
        const next = structuredClone(offer);
        if (autoscale) next.content.offerAutopilotSettings.maxThroughput = Number(tp.value);
        else next.content.offerThroughput = Number(tp.value);
        await client.request("PUT", ["offers", offer.id], { body: next });
        await showContainer(ctx.db, ctx.coll, "settings");
        notice(`Throughput set to ${tp.value} RU/s.`, "info");
      }) }, "Save throughput")))
    : h("p", { class: "muted", id: "no-offer" }, dbOffer
      ? `No throughput of its own: it shares its database's (${dbOffer.content.offerThroughput} RU/s).`
      : "No throughput of its own and none shared: lethe does not limit it.");

  fill(body,
    h("section", { class: "card" },
      h("h3", {}, "Time to live"),
      h("p", { class: "muted" }, "Off: no item expires. On without a default (-1): only items with their own ttl expire. Seconds: every item without its own ttl expires that long after its last write."),
      h("label", {}, "Default time to live", ttl.node),
      h("div", { class: "actions" }, h("button", { id: "ttl-save", class: "primary", onclick: () => guard(async () => {
        const next = structuredClone(p);
        for (const k of Object.keys(next)) if (k.startsWith("_")) delete next[k];
        const t = ttl.value();
        if (t === undefined) delete next.defaultTtl;
        else next.defaultTtl = t;
        await client.request("PUT", ctx.segs, { body: next });
        await loadTree();
        await showContainer(ctx.db, ctx.coll, "settings");
        notice(`Default time to live: ${fmtTTL(t)}.`, "info");
      }) }, "Save time to live"))),
    h("section", { class: "card" }, h("h3", {}, "Throughput"), throughput),
    h("section", { class: "card" },
      h("h3", {}, "Properties"),
      h("dl", { class: "props" },
        h("dt", {}, "partition key"), h("dd", {}, (p.partitionKey?.paths ?? []).join(", ")),
        h("dt", {}, "indexing"), h("dd", {}, p.indexingPolicy ? p.indexingPolicy.indexingMode : ""),
        h("dt", {}, "_rid"), h("dd", { class: "mono" }, p._rid),
        h("dt", {}, "_ts"), h("dd", {}, fmtTime(p._ts * 1000))),
      h("details", {}, h("summary", {}, "JSON"), h("pre", { class: "json" }, JSON.stringify(p, null, 2)))),
    h("section", { class: "card danger" },
      h("h3", {}, "Delete the container"),
      h("button", { onclick: () => guard(async () => {
        if (!confirm(`Delete the container ${ctx.coll} and its items?`)) return;
        await client.request("DELETE", ctx.segs);
        await loadTree();
        showDatabase(ctx.db);
      }) }, "Delete container")));
}

showConnect({ auto: true });
