// #/topics and #/alarms.

import { get } from "./api.js";
import { h, fmtInt, fmtTime, badge, timeEl, queueNameOf, qlink } from "./dom.js";

export async function topicsView(box) {
  const data = await get("/topics");
  const topics = data.topics || [];
  box.append(h("div", { class: "page-head" }, h("h1", null, "Topics"),
    h("span", { class: "sub" }, `${fmtInt(topics.length)} topics · ${fmtInt(topics.reduce((a, t) => a + (t.subscriptions || []).length, 0))} subscriptions`)));
  if (!topics.length) { box.append(h("p", { class: "empty" }, "No topics in this account.")); return { title: "Topics" }; }
  for (const t of topics) box.append(topic(t));
  return { title: "Topics" };
}

function topic(t) {
  const subs = t.subscriptions || [];
  const failing = subs.some((s) => (s.recentFailures || []).length);
  return h("section", { class: "panel flush topic", "data-topic": t.name },
    h("div", { class: "topic-head" },
      h("h3", null, t.name), t.fifo && badge("FIFO", "fifo"),
      failing && badge("failing deliveries", "bad"),
      h("span", { class: "arn" }, t.arn)),
    subs.length ? h("table", null,
      h("thead", null, h("tr", null,
        h("th", null, "Protocol"), h("th", null, "Endpoint"),
        h("th", { class: "num" }, "Delivered"), h("th", { class: "num" }, "Failed"), h("th", { class: "num" }, "Retried"),
        h("th", { class: "num" }, "Dead-lettered"), h("th", null, "Dead-letter queue"), h("th", null, "Recent failures"))),
      h("tbody", null, subs.flatMap((s) => {
        const fails = s.recentFailures || [];
        const failRow = fails.length ? h("tr", { class: "fail-row", hidden: true },
          h("td", { colspan: 8 }, h("ul", { class: "failures" }, fails.map((f) =>
            h("li", { title: f.error || "" }, h("b", null, fmtTime(f.at)), f.status ? ` HTTP ${f.status} ` : " ", f.error || ""))))) : null;
        const toggle = fails.length ? h("button", { type: "button", class: "linkish", "aria-expanded": "false", onclick: (e) => {
          const open = failRow.hidden;
          failRow.hidden = !open;
          e.target.setAttribute("aria-expanded", String(open));
          e.target.textContent = `${open ? "▾" : "▸"} ${fails.length} recent`;
        } }, `▸ ${fails.length} recent`) : null;
        return [h("tr", { class: fails.length ? "is-dlq-bad" : "", "data-subscription": s.arn },
          h("td", null, badge(s.protocol, "info"), s.rawDelivery ? " " : "", s.rawDelivery && badge("raw", ""), s.pending && " ", s.pending && badge("pending confirmation", "warn")),
          h("td", { class: "mono cell-body", title: s.endpoint }, s.endpoint,
            s.filterPolicy && h("div", { class: "faint", title: s.filterPolicy }, "filter: ", s.filterPolicy)),
          h("td", { class: ["num", !s.delivered && "zero"] }, fmtInt(s.delivered)),
          h("td", { class: ["num", s.failed ? "count-bad" : "zero"] }, fmtInt(s.failed)),
          h("td", { class: ["num", s.retried ? "count-warn" : "zero"] }, fmtInt(s.retried)),
          h("td", { class: ["num", s.deadLettered ? "count-bad" : "zero"] }, fmtInt(s.deadLettered)),
          h("td", null, s.deadLetterTargetArn ? qlink(queueNameOf(s.deadLetterTargetArn)) : h("span", { class: "faint" }, "none")),
          h("td", { class: "nowrap" }, toggle || h("span", { class: "faint" }, "–"))), failRow];
      })))
      : h("p", { class: "empty pad" }, "No subscriptions."));
}

export async function alarmsView(box) {
  const data = await get("/alarms");
  const alarms = [...(data.alarms || [])];
  const rank = { ALARM: 0, INSUFFICIENT_DATA: 1, OK: 2 };
  alarms.sort((a, b) => (rank[a.state] ?? 3) - (rank[b.state] ?? 3) || a.name.localeCompare(b.name));
  const n = (st) => alarms.filter((a) => a.state === st).length;
  box.append(h("div", { class: "page-head" }, h("h1", null, "Alarms"),
    h("span", { class: "sub" }, `${n("ALARM")} in alarm · ${n("OK")} ok · ${n("INSUFFICIENT_DATA")} insufficient data`)));
  if (!alarms.length) { box.append(h("p", { class: "empty" }, "No alarms in this account.")); return { title: "Alarms" }; }
  const ops = { GreaterThanThreshold: ">", GreaterThanOrEqualToThreshold: "≥", LessThanThreshold: "<", LessThanOrEqualToThreshold: "≤" };
  box.append(h("section", { class: "panel flush" }, h("table", { id: "alarm-table" },
    h("thead", null, h("tr", null,
      h("th", null, "State"), h("th", null, "Alarm"), h("th", null, "Metric"), h("th", null, "Condition"),
      h("th", null, "Since"), h("th", null, "Latest history"))),
    h("tbody", null, alarms.map((a) => {
      const dims = Object.entries(a.dimensions || {});
      const hist = a.history || [];
      return h("tr", { class: "alarm-" + a.state, "data-alarm": a.name },
        h("td", null, h("span", { class: ["alarm-state", "s-" + a.state] }, a.state === "INSUFFICIENT_DATA" ? "NO DATA" : a.state)),
        h("td", null, h("b", null, a.name), h("div", { class: "faint", title: a.stateReason }, a.stateReason)),
        h("td", { class: "mono" }, `${a.namespace} ${a.metricName}`,
          dims.map(([k, v]) => h("div", { class: "faint" }, `${k}=`, k === "QueueName" ? qlink(v) : v))),
        h("td", { class: "mono" }, `${a.statistic} ${ops[a.comparisonOperator] || a.comparisonOperator} ${a.threshold}`,
          h("div", { class: "faint" }, `${a.evaluationPeriods} × ${a.period}s`)),
        h("td", null, timeEl(a.stateUpdated)),
        h("td", null, hist.length
          ? h("details", null, h("summary", null, hist[0].summary),
            h("ul", { class: "hist" }, hist.map((e) => h("li", null, h("b", null, fmtTime(e.at)), ` ${e.type}: ${e.summary}`))))
          : h("span", { class: "faint" }, "–")));
    })))));
  return { title: "Alarms" };
}
