// #/queues/NAME/messages/REF : one message, whole, with its failure
// history as a timeline; "Edit and resend" sends an edited copy and
// deletes the original.

import { get, post } from "./api.js";
import { h, clear, fmtInt, fmtTime, badge, qlink, timeEl, prettyBody, queueNameOf } from "./dom.js";
import { showInfo, modal, confirmDialog } from "./ui.js";

const enc = encodeURIComponent;

export async function messageView(box, route, { fail }) {
  const name = route.queue;
  const base = `/queues/${enc(name)}`;
  const m = await get(`${base}/messages/${enc(route.ref)}`);
  const body = prettyBody(m.body);
  const source = m.deadLetterSourceArn ? queueNameOf(m.deadLetterSourceArn) : "";

  async function resend() {
    let overview;
    try { overview = await get("/overview"); } catch (err) { fail(err); return; }
    const queues = overview.queues || [];
    const dest = source || name;
    const res = await modal((close) => {
      const text = h("textarea", { id: "resend-body", name: "body", spellcheck: "false", autofocus: true });
      // The body as it was sent, byte for byte: pretty-printing it here
      // would change what is resent even when nothing is edited.
      text.value = m.body;
      const rows = h("div", { class: "attr-rows", id: "resend-attrs" });
      const addRow = (k = "", a = { dataType: "String", stringValue: "" }) => {
        const binary = a.binaryValue !== undefined;
        const row = h("div", { class: "attr-row" },
          h("input", { name: "k", value: k, placeholder: "name", "aria-label": "attribute name" }),
          h("select", { name: "t", "aria-label": "attribute type", disabled: binary },
            ["String", "Number", "Binary"].map((t) => h("option", { value: t, selected: a.dataType.split(".")[0] === t }, t))),
          h("input", { name: "v", value: binary ? a.binaryValue : a.stringValue, placeholder: binary ? "base64" : "value", "aria-label": "attribute value", "data-type": a.dataType }),
          h("button", { type: "button", "aria-label": "remove attribute", onclick: () => row.remove() }, "×"));
        rows.append(row);
      };
      for (const [k, a] of Object.entries(m.attributes || {})) addRow(k, a);
      const destSel = h("select", { id: "resend-dest", name: "destination" },
        queues.map((q) => h("option", { value: q.name, selected: q.name === dest }, q.name + (q.name === source ? " (source)" : q.name === name ? " (this queue)" : ""))));
      const fifo = queues.find((q) => q.name === dest)?.fifo;
      const group = h("input", { id: "resend-group", name: "groupId", value: m.groupId || "" });
      return h("form", { id: "resend-form", onsubmit: (e) => {
        e.preventDefault();
        const attributes = {};
        for (const r of rows.querySelectorAll(".attr-row")) {
          const k = r.querySelector("[name=k]").value.trim();
          if (!k) continue;
          const v = r.querySelector("[name=v]");
          const t = r.querySelector("[name=t]").value;
          const dataType = v.dataset.type && v.dataset.type.split(".")[0] === t ? v.dataset.type : t;
          attributes[k] = t === "Binary" ? { dataType, binaryValue: v.value } : { dataType, stringValue: v.value };
        }
        const out = { ref: m.ref, body: text.value, attributes, destination: destSel.value };
        if (group.value) out.groupId = group.value;
        close(out);
      } },
        h("h3", null, "Edit and resend"),
        h("p", null, "Sends the edited message to the destination, then deletes this one."),
        h("div", { class: "field" }, h("label", { for: "resend-body" }, "Body"), text),
        h("div", { class: "field" }, h("span", { class: "flabel" }, "Attributes"), rows,
          h("div", null, h("button", { type: "button", onclick: () => addRow() }, "+ Attribute"))),
        h("div", { class: "field" }, h("label", { for: "resend-dest" }, "Destination"), destSel),
        (fifo || m.groupId) && h("div", { class: "field" }, h("label", { for: "resend-group" }, "Message group (FIFO)"), group),
        h("div", { class: "actions" },
          h("button", { type: "button", onclick: () => close(undefined) }, "Cancel"),
          h("button", { type: "submit", class: "primary", id: "resend-go" }, "Send and delete original")));
    }, { wide: true });
    if (!res) return;
    try {
      const out = await post(`${base}/resend`, res);
      showInfo(`Sent to ${res.destination} as ${out.messageId}; the original is deleted.`);
      location.hash = `#/queues/${enc(name)}`;
    } catch (err) { fail(err); }
  }

  async function del() {
    const ok = await confirmDialog({ title: "Delete this message?", text: `${m.messageId} is removed from ${name} for good.`, yes: "Delete", danger: true });
    if (!ok) return;
    try {
      await post(`${base}/delete`, { refs: [m.ref] });
      showInfo(`Deleted ${m.messageId}.`);
      location.hash = `#/queues/${enc(name)}`;
    } catch (err) { fail(err); }
  }

  const attrs = Object.entries(m.attributes || {});
  const sys = Object.entries(m.systemAttributes || {});
  box.append(
    h("div", { class: "crumbs" }, h("a", { href: "#/" }, "Overview"), " / ", qlink(name), " / message"),
    h("div", { class: "page-head" },
      h("h1", { class: "mono", id: "message-id" }, m.messageId),
      badge(m.state === "inflight" ? "in flight" : m.state, "state-" + m.state),
      source && h("span", { class: "sub" }, "dead-lettered from ", qlink(source)),
      h("span", { class: "spacer" }),
      h("button", { type: "button", class: "primary", id: "resend", onclick: resend }, "Edit and resend…"),
      h("button", { type: "button", class: "danger", id: "delete-message", onclick: del }, "Delete")),
    h("div", { class: "grid-2" },
      h("div", { class: "stack" },
        h("section", { class: "panel" },
          h("h2", null, `Body · ${fmtInt(m.bodySize)} bytes${body.json ? " · JSON" : ""}`),
          body.node),
        h("section", { class: "panel", id: "message-attributes" },
          h("h2", null, `Message attributes (${attrs.length})`),
          attrs.length ? h("dl", { class: "kv" }, attrs.flatMap(([k, a]) => [
            h("dt", null, k, " ", h("span", { class: "faint" }, a.dataType)),
            h("dd", null, a.binaryValue !== undefined ? `(base64) ${a.binaryValue}` : a.stringValue)]))
            : h("p", { class: "muted" }, "None.")),
        h("section", { class: "panel", id: "system-attributes" },
          h("h2", null, "System attributes"),
          h("dl", { class: "kv" },
            sys.flatMap(([k, v]) => [h("dt", null, k), h("dd", null, /Timestamp$/.test(k) && /^\d+$/.test(v) ? `${v} (${fmtTime(new Date(Number(v)).toISOString())})` : v)]),
            [["MD5OfBody", m.md5OfBody], ["MD5OfMessageAttributes", m.md5OfMessageAttributes], ["Ref", m.ref]]
              .filter(([, v]) => v).flatMap(([k, v]) => [h("dt", null, k), h("dd", null, v)])))),
      h("section", { class: "panel", id: "history" },
        h("h2", null, "Failure history"),
        timeline(m))));
  return { title: m.messageId };
}

// timeline lists what happened to the message, oldest first: its sending,
// receives (by whom), visibility expiries and moves.
function timeline(m) {
  const hist = m.history;
  const ul = h("ol", { class: "timeline" });
  ul.append(h("li", { class: "ev-sent" }, h("span", { class: "ev-title" }, "Sent"), h("span", { class: "ev-time" }, fmtTime(m.sentAt)), " ", timeEl(m.sentAt)));
  if (!hist) {
    return h("div", null, ul, h("p", { class: "muted" }, "No history is kept for this message (nobody has received it since the failure history was on, or Ferry runs without it)."));
  }
  for (const ev of hist.events || []) ul.append(event(ev));
  return h("div", null,
    hist.dropped ? h("p", { class: "muted" }, `${fmtInt(hist.dropped)} older events were dropped.`) : null,
    ul);
}

const moveTitle = {
  "redrive": "Moved to the dead-letter queue",
  "move-task": "Moved by a move task",
  "sns-dead-letter": "SNS gave up: moved to the dead-letter queue",
};

function event(ev) {
  const t = h("span", { class: "ev-time" }, fmtTime(ev.at));
  const d = (...parts) => h("div", { class: "ev-detail" }, ...parts);
  switch (ev.kind) {
    case "receive":
      return h("li", { class: "ev-receive", "data-kind": "receive" },
        h("span", { class: "ev-title" }, `Received (#${ev.receiveCount})`), t,
        d([ev.sourceIp && `from ${ev.sourceIp}`, ev.accessKeyId && `key ${ev.accessKeyId}`].filter(Boolean).join(" · ") || "consumer unknown"),
        ev.userAgent && d(ev.userAgent),
        ev.visibleAt && d(`invisible until ${fmtTime(ev.visibleAt)}`));
    case "expiry":
      return h("li", { class: "ev-expiry", "data-kind": "expiry" },
        h("span", { class: "ev-title" }, "Visibility expired"), t,
        d(`not deleted after receive #${ev.receiveCount}: visible again`));
    case "move":
      return h("li", { class: "ev-move", "data-kind": "move" },
        h("span", { class: "ev-title" }, moveTitle[ev.cause] || `Moved (${ev.cause || "unknown cause"})`), t,
        d(`${ev.from ? queueNameOf(ev.from) : "?"} → ${ev.to ? queueNameOf(ev.to) : "?"}`, ev.receiveCount ? ` after ${ev.receiveCount} receive${ev.receiveCount === 1 ? "" : "s"}` : ""),
        ev.previousMessageId && d(`was ${ev.previousMessageId}`));
    case "delivery":
      return h("li", { class: "ev-delivery", "data-kind": "delivery" },
        h("span", { class: "ev-title" }, `Delivery ${ev.status ? ev.status : ""} ${ev.phase || ""}`.trim()), t,
        d([ev.endpoint, ev.latency, ev.error, ev.fault].filter(Boolean).join(" · ")));
    default:
      return h("li", { "data-kind": ev.kind }, h("span", { class: "ev-title" }, ev.kind), t);
  }
}
