// #/queues/NAME : a queue's counts, redrive policy and move tasks (live),
// and the message browser: one page of at most 50 messages at a time,
// peeked (viewing changes nothing), searched on the server.

import { get, post } from "./api.js";
import { h, clear, fmtInt, fmtAge, sparkline, badge, qlink, timeEl, queueNameOf } from "./dom.js";
import { showError, showInfo, clearBanner, modal, confirmDialog } from "./ui.js";
import { keepFocus } from "./focus.js";

const PAGE = 50;

// shortId is the start of a message id, enough to tell a page's apart;
// the whole id is the link's title and on the message's page.
const shortId = (id) => (id.length > 13 ? id.slice(0, 13) + "…" : id);
const enc = encodeURIComponent;
const terminal = (st) => st === "COMPLETED" || st === "CANCELLED" || st === "FAILED";

export async function queueView(box, route, { fail }) {
  const name = route.queue;
  const base = `/queues/${enc(name)}`;
  // The queue and its first page are asked for at once.
  const firstPage = get(`${base}/messages?limit=${PAGE}`);
  firstPage.catch(() => {}); // its error is shown by loadPage
  let detail = await get(base);

  const st = {
    filter: { body: "", attribute: "", value: "", id: "", state: "" },
    cursors: [""], // the cursor of each page so far: [0] is the first page's
    page: null,
    selected: new Set(),
  };

  const head = h("div");
  const counts = h("div", { class: "counts", id: "queue-counts" });
  const side = h("div", { class: "stack" });
  const tasks = h("div", { class: "tasks", id: "move-tasks" });
  const tableBox = h("div", { id: "messages" });
  const pager = h("div", { class: "pager", id: "pager" });
  const selInfo = h("span", { class: "sel", id: "selection" });

  const btn = (label, id, onclick, cls) => h("button", { type: "button", id, class: cls, onclick }, label);
  const redriveSel = btn("Redrive selected", "redrive-selected", () => redrive([...st.selected]));
  const redriveAll = btn("Redrive all…", "redrive-all", () => redrive(null));
  const deleteSel = btn("Delete selected", "delete-selected", () => del(), "danger");
  const purgeBtn = btn("Purge…", "purge", () => purge(), "danger");
  const refreshBtn = btn("Refresh", "refresh", () => loadPage(st.cursors.length - 1));

  const searchForm = h("form", { class: "search", id: "search", role: "search", onsubmit: (e) => { e.preventDefault(); search(); } },
    field("Body contains", h("input", { name: "body", type: "search", placeholder: "text in the body", "data-search-focus": true })),
    field("Attribute", h("input", { name: "attribute", placeholder: "name" })),
    field("Value", h("input", { name: "value", placeholder: "value" })),
    field("Message id", h("input", { name: "id", placeholder: "exact message id", spellcheck: "false" })),
    field("State", h("select", { name: "state" },
      h("option", { value: "" }, "any"),
      h("option", { value: "visible" }, "visible"),
      h("option", { value: "inflight" }, "in flight"),
      h("option", { value: "delayed" }, "delayed"))),
    h("button", { type: "submit", class: "primary" }, "Search"),
    h("button", { type: "button", onclick: () => { searchForm.reset(); search(); } }, "Clear"));

  function field(label, input) {
    return h("label", null, label, input);
  }

  function paintHead() {
    const d = detail;
    const n = d.visible + d.inflight + d.delayed;
    clear(head).append(
      h("div", { class: "crumbs" }, h("a", { href: "#/" }, "Overview"), " / queues"),
      h("div", { class: "page-head" },
        h("h1", { id: "queue-name" }, d.name),
        d.fifo && badge("FIFO", "fifo"),
        d.deadLetterQueue && badge("dead-letter queue", n ? "dlq" : "dlq quiet"),
        h("span", { class: "sub mono" }, d.arn)));
  }

  function paintCounts() {
    const d = detail;
    const dead = d.deadLetterQueue && d.visible > 0;
    const sentTotal = (d.sent || []).reduce((a, v) => a + (v || 0), 0);
    keepFocus(counts, () => clear(counts).append(
      tileN(d.visible, "visible", dead ? "bad" : "", "count-visible"),
      tileN(d.inflight, "in flight", "", "count-inflight"),
      tileN(d.delayed, "delayed", "", "count-delayed"),
      h("div", { class: "tile" }, h("div", { class: "n" }, fmtAge(d.oldestAgeSeconds)), h("div", { class: "l" }, "oldest message")),
      h("div", { class: "tile" },
        sparkline(d.sent, d.depth, { width: 240, height: 34 }),
        h("div", { class: "l legend" }, `${fmtInt(sentTotal)} sent in the last hour`, h("span", null, h("i", { class: "sent" }), "sent"), h("span", null, h("i", { class: "depth" }), "depth")))));
    const isDLQ = d.deadLetterQueue;
    redriveSel.disabled = !isDLQ || st.selected.size === 0;
    redriveAll.disabled = !isDLQ || d.visible === 0;
    const why = isDLQ ? "" : "only a dead-letter queue's messages can be redriven";
    redriveSel.title = why; redriveAll.title = why;
  }

  function tileN(n, label, cls, id) {
    return h("div", { class: ["tile", cls], id }, h("div", { class: "n" }, fmtInt(n)), h("div", { class: "l" }, label));
  }

  function paintSide() {
    const d = detail;
    const attrs = d.attributes || {};
    clear(side).append(
      h("section", { class: "panel", id: "redrive-policy" },
        h("h2", null, "Redrive"),
        d.redrive
          ? h("p", null, "After ", h("b", null, String(d.redrive.maxReceiveCount)), d.redrive.maxReceiveCount === 1 ? " receive" : " receives", ", messages move to ", qlink(d.redrive.target), ".")
          : !d.deadLetterQueue && h("p", { class: "muted" }, "No redrive policy: messages stay here however often they are received."),
        d.deadLetterQueue && h("p", null, "Dead-letter queue of ", (d.sources || []).flatMap((s, i) => [i ? ", " : "", qlink(s)]), ".")),
      h("section", { class: "panel" },
        h("h2", null, "Move tasks"),
        tasks),
      h("details", { class: "panel", id: "attributes" },
        h("summary", null, `Attributes (${Object.keys(attrs).length})`),
        h("dl", { class: "kv" }, Object.keys(attrs).sort().flatMap((k) => [h("dt", null, k), h("dd", null, attrs[k])]))));
    paintTasks();
  }

  function paintTasks() {
    const list = detail.moveTasks || [];
    keepFocus(tasks, () => {
      clear(tasks);
      if (!list.length) { tasks.append(h("p", { class: "muted" }, "None yet.")); return; }
      for (const t of list.slice(0, 5)) {
        const total = t.toMove ?? null;
        const dest = t.destinationArn ? queueNameOf(t.destinationArn) : "each message's source";
        tasks.append(h("div", { class: "task", "data-status": t.status, "data-handle": t.taskHandle || "" },
          badge(t.status, t.status === "RUNNING" ? "info" : t.status === "COMPLETED" ? "ok" : t.status === "FAILED" ? "bad" : ""),
          h("progress", { max: total || 1, value: total ? Math.min(t.moved, total) : (terminal(t.status) ? 1 : 0), "aria-label": "moved" }),
          t.status === "RUNNING" && t.taskHandle
            ? h("button", { type: "button", class: "danger cancel-task", "data-key": "cancel:" + t.taskHandle, onclick: () => cancel(t.taskHandle) }, "Cancel")
            : h("span", { class: "mono task-moved" }, `${fmtInt(t.moved)}${total !== null ? " / " + fmtInt(total) : ""}`),
          h("div", { class: "detail" },
            `${fmtInt(t.moved)}${total !== null ? " of " + fmtInt(total) : ""} moved to ${dest}`,
            t.maxPerSecond ? ` at ${t.maxPerSecond}/s` : "",
            " · started ", timeEl(t.started),
            t.failureReason ? ` · ${t.failureReason}` : "")));
      }
    });
  }

  async function loadPage(i, prefetched) {
    const cursor = st.cursors[i] ?? "";
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (cursor) q.set("after", cursor);
    for (const [k, v] of Object.entries(st.filter)) if (v) q.set(k, v);
    tableBox.setAttribute("aria-busy", "true");
    try {
      const page = await (prefetched || get(`${base}/messages?${q}`));
      st.page = page;
      st.cursors.length = i + 1;
      if (page.next) st.cursors.push(page.next);
      st.pageIndex = i;
      st.selected.clear();
      paintTable();
    } catch (err) {
      fail(err);
    } finally {
      tableBox.removeAttribute("aria-busy");
    }
  }

  function search() {
    const f = new FormData(searchForm);
    for (const k of Object.keys(st.filter)) st.filter[k] = String(f.get(k) || "").trim();
    st.cursors = [""];
    loadPage(0);
  }

  function paintTable() {
    const msgs = st.page?.messages || [];
    const all = h("input", { type: "checkbox", id: "select-all", "aria-label": "select every message on this page",
      onchange: (e) => { for (const m of msgs) e.target.checked ? st.selected.add(m.ref) : st.selected.delete(m.ref); paintTable(); } });
    all.checked = msgs.length > 0 && msgs.every((m) => st.selected.has(m.ref));
    const filtered = Object.values(st.filter).some(Boolean);
    clear(tableBox).append(msgs.length
      ? h("table", { class: "messages", id: "message-table" },
        h("thead", null, h("tr", null,
          h("th", null, all),
          h("th", null, "Message"),
          h("th", null, "State"),
          h("th", { class: "num" }, "Receives"),
          h("th", null, "Sent"),
          h("th", null, "First received"),
          h("th", null, "From"),
          h("th", null, "Body"))),
        h("tbody", null, msgs.map(row)))
      : h("p", { class: "empty pad", id: "no-messages" }, filtered ? "No message matches this search." : "This queue holds no messages."));
    const i = st.pageIndex || 0;
    clear(pager).append(
      h("button", { type: "button", id: "first-page", disabled: i === 0, onclick: () => loadPage(0) }, "« First"),
      h("button", { type: "button", id: "prev-page", disabled: i === 0, onclick: () => loadPage(i - 1) }, "‹ Previous"),
      h("button", { type: "button", id: "next-page", disabled: !st.page?.next, onclick: () => loadPage(i + 1) }, "Next page ›"),
      h("span", null, `Page ${i + 1} · ${fmtInt(msgs.length)} shown · ${fmtInt(st.page?.scanned ?? 0)} scanned`));
    paintSelection();
  }

  function row(m) {
    const href = `#/queues/${enc(name)}/messages/${enc(m.ref)}`;
    const cb = h("input", { type: "checkbox", class: "select", "aria-label": `select message ${m.messageId}`, "data-ref": m.ref, checked: st.selected.has(m.ref),
      onchange: (e) => { e.target.checked ? st.selected.add(m.ref) : st.selected.delete(m.ref); e.target.closest("tr").classList.toggle("selected", e.target.checked); paintSelection(); } });
    return h("tr", { class: st.selected.has(m.ref) && "selected", "data-ref": m.ref, "data-id": m.messageId },
      h("td", null, cb),
      h("td", { class: "cell-id" }, h("a", { href, "data-key": "m:" + m.ref, title: m.messageId }, shortId(m.messageId))),
      h("td", null, badge(m.state === "inflight" ? "in flight" : m.state, "state-" + m.state)),
      h("td", { class: ["num", m.receiveCount > 1 && "count-warn"] }, fmtInt(m.receiveCount)),
      h("td", null, timeEl(m.sentAt)),
      h("td", null, timeEl(m.firstReceiveAt)),
      h("td", { class: "mono" }, m.deadLetterSourceArn ? queueNameOf(m.deadLetterSourceArn) : h("span", { class: "faint" }, "–")),
      h("td", { class: "cell-body", title: m.truncated ? `${fmtInt(m.bodySize)} bytes; open the message for all of it` : "" },
        m.body, m.truncated ? "…" : ""));
  }

  function paintSelection() {
    const n = st.selected.size;
    selInfo.textContent = n ? `${n} selected` : "";
    redriveSel.disabled = !detail.deadLetterQueue || n === 0;
    deleteSel.disabled = n === 0;
    const all = document.getElementById("select-all");
    const msgs = st.page?.messages || [];
    if (all) all.checked = msgs.length > 0 && msgs.every((m) => st.selected.has(m.ref));
  }

  async function refreshDetail() {
    try {
      detail = await get(base);
      paintCounts();
      paintTasks();
      noteFinished();
    } catch (err) { fail(err); }
  }

  // A move task that finished since the page opened changed the queue:
  // say so and show the page anew. Finished tasks have no handle, so a
  // task is known by when it started and where it sends.
  const taskKey = (t) => `${t.started}|${t.sourceArn}|${t.destinationArn || ""}`;
  const seenDone = new Set((detail.moveTasks || []).filter((t) => terminal(t.status)).map(taskKey));
  function noteFinished() {
    for (const t of detail.moveTasks || []) {
      if (!terminal(t.status) || seenDone.has(taskKey(t))) continue;
      seenDone.add(taskKey(t));
      showInfo(`Move task ${t.status.toLowerCase()}: ${fmtInt(t.moved)} message${t.moved === 1 ? "" : "s"} moved.`);
      loadPage(st.pageIndex || 0);
    }
  }

  async function redrive(refs) {
    let overview;
    try { overview = await get("/overview"); } catch (err) { fail(err); return; }
    const others = (overview.queues || []).filter((q) => q.name !== name);
    const count = refs ? refs.length : detail.visible;
    const res = await modal((close) => {
      const destSel = h("select", { id: "redrive-dest-queue", name: "queue", disabled: true },
        others.map((q) => h("option", { value: q.arn }, q.name)));
      const rate = h("input", { id: "redrive-rate", name: "rate", type: "number", min: 1, max: 500, step: 1, placeholder: "as fast as it goes" });
      const radio = (value, label, checked) => h("label", { class: "radio" },
        h("input", { type: "radio", name: "dest", value, checked, onchange: () => { destSel.disabled = value !== "other"; } }), " ", label);
      return h("form", { id: "redrive-form", onsubmit: (e) => {
        e.preventDefault();
        const other = e.target.elements.dest.value === "other";
        const body = {};
        if (refs) body.refs = refs;
        if (other) body.destinationArn = destSel.value;
        if (rate.value) body.maxPerSecond = Number(rate.value);
        close(body);
      } },
        h("h3", null, refs ? `Redrive ${count} selected message${count === 1 ? "" : "s"}` : `Redrive all ${fmtInt(count)} messages`),
        h("p", null, "A move task sends them back and shows its progress on this page; it can be cancelled while it runs."),
        h("div", { class: "field" }, h("span", { class: "flabel" }, "Destination"),
          radio("source", "Each message's original source queue", true),
          radio("other", "Another queue:", false), destSel),
        h("div", { class: "field" }, h("label", { for: "redrive-rate" }, "Velocity (messages per second)"), rate,
          h("span", { class: "hint" }, "1 to 500; empty moves as fast as Ferry can.")),
        h("div", { class: "actions" },
          h("button", { type: "button", onclick: () => close(undefined) }, "Cancel"),
          h("button", { type: "submit", class: "primary", id: "redrive-go" }, "Start redrive")));
    });
    if (!res) return;
    try {
      const out = await post(`${base}/redrive`, res);
      clearBanner();
      showInfo(`Move task started${out.task?.toMove != null ? ` for ${fmtInt(out.task.toMove)} messages` : ""}.`);
      st.selected.clear();
      paintSelection();
      await refreshDetail();
    } catch (err) { fail(err); }
  }

  async function cancel(handle) {
    try {
      const out = await post(`${base}/cancel-move`, { taskHandle: handle });
      showInfo(`Move task cancelled after ${fmtInt(out.moved)} messages.`);
      await refreshDetail();
    } catch (err) { fail(err); }
  }

  async function del() {
    const refs = [...st.selected];
    const ok = await confirmDialog({ title: `Delete ${refs.length} message${refs.length === 1 ? "" : "s"}?`,
      text: `They are removed from ${name} for good.`, yes: "Delete", danger: true });
    if (!ok) return;
    try {
      const out = await post(`${base}/delete`, { refs });
      showInfo(`Deleted ${fmtInt(out.deleted)} message${out.deleted === 1 ? "" : "s"}.`);
      await loadPage(st.pageIndex || 0);
      await refreshDetail();
    } catch (err) { fail(err); }
  }

  async function purge() {
    const typed = await confirmDialog({ title: `Purge ${name}?`,
      text: `Every message of ${name} (${fmtInt(detail.visible + detail.inflight + detail.delayed)} now) is deleted. This cannot be undone.`,
      yes: "Purge queue", danger: true, typeToConfirm: name });
    if (typed === undefined) return;
    try {
      await post(`${base}/purge`, { confirm: typed });
      showInfo(`${name} purged.`);
      st.cursors = [""];
      await loadPage(0);
      await refreshDetail();
    } catch (err) { fail(err); }
  }

  paintHead();
  paintCounts();
  paintSide();
  await loadPage(0, firstPage);

  box.append(head,
    h("div", { class: "queue-grid" },
      h("div", { class: "stack" },
        counts,
        h("section", { class: "panel flush", "aria-labelledby": "msgs-h" },
          h("h2", { id: "msgs-h" }, "Messages"),
          searchForm,
          h("div", { class: "toolbar" }, selInfo, redriveSel, redriveAll, deleteSel, h("span", { class: "spacer" }), refreshBtn, purgeBtn),
          tableBox,
          pager)),
      side));

  return {
    title: name,
    liveQueue: name,
    onQueue(d) {
      if (d.name !== name) return;
      detail = d;
      paintCounts();
      paintTasks();
      noteFinished();
    },
  };
}
