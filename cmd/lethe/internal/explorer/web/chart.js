// The expiry histogram: how many items expire in each interval of the
// range ahead, drawn as SVG by hand.

const SVG = "http://www.w3.org/2000/svg";

function el(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// The ranges the chart offers: its span, its bins and the labels of its
// time axis.
export const RANGES = [
  { name: "5 min", span: 5 * 60e3, bins: 60, ticks: 5 },
  { name: "1 hour", span: 60 * 60e3, bins: 60, ticks: 6 },
  { name: "24 hours", span: 24 * 3600e3, bins: 48, ticks: 6 },
  { name: "7 days", span: 7 * 24 * 3600e3, bins: 84, ticks: 7 },
];

// fmtOffset writes a duration ahead, in ms, shortly: "+30 s", "+5 min",
// "+2 h", "+3 d".
export function fmtOffset(ms) {
  const s = Math.round(ms / 1000);
  if (s < 60) return `+${s} s`;
  if (s < 3600) return `+${Math.round(s / 6) / 10} min`;
  if (s < 86400) return `+${Math.round(s / 360) / 10} h`;
  return `+${Math.round(s / 8640) / 10} d`;
}

// bin counts the expiries (ms since the epoch) that fall in each bin of
// range from now: the counts, and how many are later.
export function bin(expiries, now, range) {
  const counts = new Array(range.bins).fill(0);
  const width = range.span / range.bins;
  let later = 0;
  for (const t of expiries) {
    const d = t - now;
    if (d >= range.span) later++;
    else counts[Math.max(0, Math.floor(d / width))]++;
  }
  return { counts, later, width };
}

// draw replaces the children of svg with the histogram of counts.
export function draw(svg, { counts, width }, range) {
  const W = 800, H = 260, left = 44, right = 30, top = 12, bottom = 36;
  const plotW = W - left - right, plotH = H - top - bottom;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.replaceChildren();
  const max = Math.max(1, ...counts);
  // Up to five round ticks on the count axis.
  const step = Math.max(1, niceStep(max / 4));
  for (let v = 0; v <= max; v += step) {
    const y = top + plotH - (v / max) * plotH;
    svg.append(el("line", { x1: left, x2: W - right, y1: y, y2: y, class: "grid" }));
    svg.append(el("text", { x: left - 6, y: y + 4, class: "tick", "text-anchor": "end" }, String(v)));
  }
  const bw = plotW / counts.length;
  counts.forEach((n, i) => {
    if (n === 0) return;
    const h = (n / max) * plotH;
    const r = el("rect", { x: left + i * bw + 1, y: top + plotH - h, width: Math.max(1, bw - 2), height: h, class: "bar" });
    r.append(el("title", {}, `${fmtOffset(i * width)} to ${fmtOffset((i + 1) * width)}: ${n} item${n === 1 ? "" : "s"}`));
    svg.append(r);
  });
  for (let k = 0; k <= range.ticks; k++) {
    const x = left + (k / range.ticks) * plotW;
    svg.append(el("line", { x1: x, x2: x, y1: top + plotH, y2: top + plotH + 5, class: "axis" }));
    svg.append(el("text", { x, y: H - 14, class: "tick", "text-anchor": "middle" }, k === 0 ? "now" : fmtOffset((k / range.ticks) * range.span)));
  }
  svg.append(el("line", { x1: left, x2: W - right, y1: top + plotH, y2: top + plotH, class: "axis" }));
}

function niceStep(x) {
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}
