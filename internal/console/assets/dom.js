// DOM and formatting helpers. Everything from the server is put into the
// page as text (textContent, attributes), never as HTML: message bodies
// and attributes are whatever a producer sent.

const SVG = "http://www.w3.org/2000/svg";

// h builds an element: h("a", {href: "#/"}, "text", child, [more]).
// Attributes starting with "on" are listeners; false/null/undefined
// attributes and children are left out.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

// s builds an SVG element.
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.setAttribute("class", Array.isArray(v) ? v.filter(Boolean).join(" ") : v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "value" && "value" in el) el.value = v;
    else if (k === "checked" || k === "disabled" || k === "hidden" || k === "selected") el[k] = Boolean(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// fmtInt formats a count with thin group separators.
export function fmtInt(n) {
  if (n === null || n === undefined) return "–";
  return Number(n).toLocaleString("en-US");
}

// fmtAge turns seconds into "4m 12s", "3h 5m", "2d 4h".
export function fmtAge(sec) {
  if (sec === null || sec === undefined) return "–";
  sec = Math.max(0, Math.round(sec));
  if (sec < 60) return `${sec}s`;
  const m = Math.floor(sec / 60);
  if (m < 60) return `${m}m ${sec % 60}s`;
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return `${hrs}h ${m % 60}m`;
  return `${Math.floor(hrs / 24)}d ${hrs % 24}h`;
}

// The server's clock may differ from the browser's (or be a test's fake
// clock): relative times are taken against the server's "now".
let skewMs = 0;
export function setServerNow(iso) {
  const t = Date.parse(iso);
  if (!Number.isNaN(t)) skewMs = t - Date.now();
}
export function serverNow() { return Date.now() + skewMs; }

// fmtTime shows an RFC 3339 time as "2026-01-02 03:04:05Z".
export function fmtTime(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

// fmtAgo shows how long ago an RFC 3339 time was, by the server's clock.
export function fmtAgo(iso) {
  if (!iso) return "–";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const d = (serverNow() - t) / 1000;
  return d >= 0 ? `${fmtAge(d)} ago` : `in ${fmtAge(-d)}`;
}

// timeEl is a <time> with the relative time as text and the exact one as
// its title.
export function timeEl(iso) {
  if (!iso) return h("span", { class: "faint" }, "–");
  return h("time", { datetime: iso, title: fmtTime(iso) }, fmtAgo(iso));
}

export function badge(text, cls, title) {
  return h("span", { class: ["badge", cls], title }, text);
}

// sparkline draws the last hour: sent per minute as bars, depth as a line.
export function sparkline(sent, depth, { width = 120, height = 24 } = {}) {
  sent = sent || [];
  depth = depth || [];
  const n = Math.max(sent.length, depth.length, 1);
  const bw = width / n;
  const maxSent = Math.max(1, ...sent.map((v) => v || 0));
  const maxDepth = Math.max(1, ...depth.map((v) => v || 0));
  const bars = s("g", { class: "bars" });
  sent.forEach((v, i) => {
    if (!v) return;
    const bh = Math.max(1, (v / maxSent) * (height - 2));
    bars.append(s("rect", { x: (i * bw).toFixed(1), y: (height - bh).toFixed(1), width: Math.max(1, bw - 0.6).toFixed(1), height: bh.toFixed(1) }));
  });
  const paths = [];
  let cur = "";
  depth.forEach((v, i) => {
    if (v === null || v === undefined) { if (cur) paths.push(cur); cur = ""; return; }
    const x = (i * bw + bw / 2).toFixed(1);
    const y = (height - 1 - (v / maxDepth) * (height - 3)).toFixed(1);
    cur += (cur ? " L" : "M") + x + " " + y;
  });
  if (cur) paths.push(cur);
  const totalSent = sent.reduce((a, v) => a + (v || 0), 0);
  const lastDepth = [...depth].reverse().find((v) => v !== null && v !== undefined);
  const title = `Last hour: ${fmtInt(totalSent)} sent; depth now ${lastDepth === undefined ? "unknown" : fmtInt(lastDepth)}, peak ${fmtInt(Math.max(0, ...depth.map((v) => v || 0)))}`;
  return s("svg", { class: "spark", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title },
    s("title", null, title),
    s("line", { class: "base", x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5 }),
    bars,
    paths.map((d) => s("path", { class: "depth", d })));
}

// prettyBody renders a body, pretty-printed and coloured when it is JSON.
export function prettyBody(text) {
  let v;
  try {
    const t = text.trim();
    if (!t.startsWith("{") && !t.startsWith("[")) throw new Error("not JSON");
    v = JSON.parse(t);
  } catch {
    return { json: false, node: h("pre", { class: "body" }, text) };
  }
  const pre = h("pre", { class: "body" });
  const walk = (val, ind) => {
    const pad = "  ".repeat(ind);
    if (Array.isArray(val)) {
      if (!val.length) { pre.append("[]"); return; }
      pre.append("[\n");
      val.forEach((x, i) => { pre.append(pad + "  "); walk(x, ind + 1); pre.append(i < val.length - 1 ? ",\n" : "\n"); });
      pre.append(pad + "]");
    } else if (val && typeof val === "object") {
      const keys = Object.keys(val);
      if (!keys.length) { pre.append("{}"); return; }
      pre.append("{\n");
      keys.forEach((k, i) => {
        pre.append(pad + "  ", h("span", { class: "j-key" }, JSON.stringify(k)), ": ");
        walk(val[k], ind + 1);
        pre.append(i < keys.length - 1 ? ",\n" : "\n");
      });
      pre.append(pad + "}");
    } else if (typeof val === "string") pre.append(h("span", { class: "j-str" }, JSON.stringify(val)));
    else if (typeof val === "number") pre.append(h("span", { class: "j-num" }, String(val)));
    else pre.append(h("span", { class: "j-lit" }, String(val)));
  };
  walk(v, 0);
  return { json: true, node: pre };
}

// queueNameOf takes a queue's name from its ARN.
export function queueNameOf(arn) {
  if (!arn) return "";
  return arn.slice(arn.lastIndexOf(":") + 1);
}

export function qlink(name) {
  return h("a", { href: `#/queues/${encodeURIComponent(name)}` }, name);
}
