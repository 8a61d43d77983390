// #/ : every queue with its counts and last hour, the dead-letter queues
// with the queues that feed them, and the counts of topics and alarms.

import { get } from "./api.js";
import { h, s, clear, fmtInt, fmtAge, sparkline, badge, qlink, setServerNow, timeEl } from "./dom.js";
import { keepFocus } from "./focus.js";

// A queue's oldest message older than this is worth a look.
const STALE_SECONDS = 15 * 60;

export async function overviewView(box) {
  const data = await get("/overview");
  setServerNow(data.now);
  const body = h("div");
  box.append(body);
  const paint = (d) => keepFocus(body, () => clear(body).append(...renderOverview(d)));
  paint(data);
  return { title: "Overview", onOverview: paint };
}

function renderOverview(d) {
  const queues = d.queues || [];
  const dlqs = queues.filter((q) => q.deadLetterQueue);
  const waiting = dlqs.reduce((a, q) => a + q.visible + q.inflight + q.delayed, 0);
  const loaded = dlqs.filter((q) => q.visible + q.inflight + q.delayed > 0).length;
  const sum = (k) => queues.reduce((a, q) => a + (q[k] || 0), 0);
  const al = d.alarms || {};
  return [
    h("div", { class: "page-head" },
      h("h1", null, "Overview"),
      h("span", { class: "sub" }, `account ${d.account}`, " · updated ", timeEl(d.now))),
    h("div", { class: "tiles", id: "summary" },
      tile(fmtInt(queues.length), "queues", "", "tile-queues"),
      tile(fmtInt(waiting), loaded ? `dead letters in ${loaded} of ${dlqs.length} DLQs` : `dead letters (${dlqs.length} DLQs)`, waiting ? "bad" : "", "tile-dead"),
      tile(fmtInt(sum("visible")), "visible", "", "tile-visible"),
      tile(fmtInt(sum("inflight")), "in flight", "", "tile-inflight"),
      tile(fmtInt(sum("delayed")), "delayed", "", "tile-delayed"),
      h("a", { class: "tile", href: "#/topics", id: "tile-topics" },
        h("div", { class: "n" }, fmtInt(d.topics)),
        h("div", { class: "l" }, `topics · ${fmtInt(d.subscriptions)} subscriptions`)),
      h("a", { class: ["tile", al.ALARM ? "bad" : ""], href: "#/alarms", id: "tile-alarms" },
        h("div", { class: "n" }, fmtInt((al.OK || 0) + (al.ALARM || 0) + (al.INSUFFICIENT_DATA || 0))),
        h("div", { class: "parts" },
          h("b", { class: "s-alarm" }, fmtInt(al.ALARM || 0)), " alarm · ",
          h("b", { class: "s-ok" }, fmtInt(al.OK || 0)), " ok · ",
          h("b", null, fmtInt(al.INSUFFICIENT_DATA || 0)), " no data"))),
    h("div", { class: "overview-grid" },
      h("section", { class: "panel flush", "aria-labelledby": "queues-h" },
        h("h2", { id: "queues-h" }, "Queues"),
        queues.length ? queueTable(queues) : h("p", { class: "empty pad" }, "No queues in this account yet.")),
      h("section", { class: "panel", "aria-labelledby": "redrive-h" },
        h("h2", { id: "redrive-h" }, "Dead-letter queues"),
        redriveGraph(dlqs))),
  ];
}

function tile(n, label, cls, id) {
  return h("div", { class: ["tile", cls], id },
    h("div", { class: "n" }, n),
    h("div", { class: "l" }, label));
}

function queueTable(queues) {
  return h("table", { class: "queues", id: "queue-table" },
    h("thead", null, h("tr", null,
      h("th", null, "Queue"),
      h("th", { class: "num" }, "Visible"),
      h("th", { class: "num" }, "In flight"),
      h("th", { class: "num" }, "Delayed"),
      h("th", { class: "num" }, "Oldest"),
      h("th", null, h("span", { class: "legend" }, "Last hour", h("span", null, h("i", { class: "sent" }), "sent"), h("span", null, h("i", { class: "depth" }), "depth"))))),
    h("tbody", null, queues.map(queueRow)));
}

function queueRow(q) {
  const dead = q.deadLetterQueue && q.visible + q.inflight + q.delayed > 0;
  const stale = !q.deadLetterQueue && q.oldestAgeSeconds !== null && q.oldestAgeSeconds > STALE_SECONDS;
  const num = (n, cls) => h("td", { class: ["num", n ? cls : "zero"] }, fmtInt(n));
  const sentTotal = (q.sent || []).reduce((a, v) => a + (v || 0), 0);
  return h("tr", { class: [dead && "is-dlq-bad", stale && "is-warn"], "data-queue": q.name },
    h("td", { class: "name" },
      h("a", { href: `#/queues/${encodeURIComponent(q.name)}`, "data-key": "q:" + q.name }, q.name), " ",
      q.fifo && badge("FIFO", "fifo"),
      q.deadLetterQueue && badge(dead ? "DLQ" : "DLQ", dead ? "dlq" : "dlq quiet", `dead-letter queue of ${(q.sources || []).join(", ")}`),
      q.redrive && h("span", { class: "faint redrive-to", title: `after ${q.redrive.maxReceiveCount} receives, to ${q.redrive.target}` },
        h("span", { class: "arrow" }, "→"), q.redrive.target)),
    num(q.visible, dead ? "count-bad" : ""),
    num(q.inflight, ""),
    num(q.delayed, ""),
    h("td", { class: ["num", stale && "count-warn", q.oldestAgeSeconds === null && "zero"] }, fmtAge(q.oldestAgeSeconds)),
    h("td", null, h("div", { class: "spark-cell" }, sparkline(q.sent, q.depth), h("span", { class: "lbl" }, `${fmtInt(sentTotal)} sent`))));
}

// redriveGraph draws each dead-letter queue with the queues that send
// their dead letters to it, joined by curves.
function redriveGraph(dlqs) {
  if (!dlqs.length) return h("p", { class: "empty" }, "No queue has a redrive policy.");
  const sorted = [...dlqs].sort((a, b) => (b.visible + b.inflight) - (a.visible + a.inflight) || a.name.localeCompare(b.name));
  return h("div", { class: "redrive", id: "redrive-graph" }, sorted.map((q) => {
    const n = q.visible + q.inflight + q.delayed;
    const srcs = q.sources || [];
    const rowH = Math.max(1, srcs.length) * 26 - 4;
    const mid = rowH / 2;
    return h("div", { class: "rd-row", "data-dlq": q.name },
      h("div", { class: "rd-sources" }, srcs.length ? srcs.map((name) => h("a", { class: "rd-src", href: `#/queues/${encodeURIComponent(name)}`, "data-source": name }, name))
        : h("span", { class: "faint" }, "no sources")),
      s("svg", { class: ["rd-link", n && "bad"], width: 44, height: rowH, viewBox: `0 0 44 ${rowH}`, "aria-hidden": "true" },
        srcs.map((_, i) => {
          const y = i * 26 + 11;
          return s("path", { d: `M0 ${y} C22 ${y} 22 ${mid} 40 ${mid}` });
        }),
        s("path", { d: `M36 ${mid - 3} L41 ${mid} L36 ${mid + 3}` })),
      h("a", { class: ["rd-dlq", n && "bad"], href: `#/queues/${encodeURIComponent(q.name)}`, "data-key": "d:" + q.name },
        h("span", null, q.name),
        h("span", { class: ["cnt", !n && "zero"], title: `${fmtInt(q.visible)} visible, ${fmtInt(q.inflight)} in flight, ${fmtInt(q.delayed)} delayed` }, n ? fmtInt(n) : "empty")));
  }));
}
