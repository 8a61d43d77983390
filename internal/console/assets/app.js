// The console's entry point: the session, the hash router, the top bar and
// the live stream that keeps the page current.

import { state, loadSession, logout, setAccount, Live, ApiError } from "./api.js";
import { h, clear, setServerNow } from "./dom.js";
import { showError, clearBanner } from "./ui.js";
import { overviewView } from "./overview.js";
import { queueView } from "./queue.js";
import { messageView } from "./message.js";
import { topicsView, alarmsView } from "./pages.js";
import { loginView } from "./login.js";

const main = document.getElementById("main");
let current = null; // the view on screen: {onOverview, onQueue, dispose}
let renderSeq = 0;

const live = new Live({
  onStatus(st) {
    const el = document.getElementById("live");
    el.dataset.state = st;
    document.getElementById("live-text").textContent =
      { live: "live", reconnecting: "reconnecting…", connecting: "connecting…", paused: "paused", off: "offline" }[st] || st;
  },
});

function parseRoute() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query);
  if (parts.length === 0) return { name: "overview", params };
  if (parts[0] === "queues" && parts.length === 2) return { name: "queue", queue: parts[1], params };
  if (parts[0] === "queues" && parts.length === 4 && parts[2] === "messages") return { name: "message", queue: parts[1], ref: parts[3], params };
  if (parts[0] === "topics" && parts.length === 1) return { name: "topics", params };
  if (parts[0] === "alarms" && parts.length === 1) return { name: "alarms", params };
  if (parts[0] === "login" && parts.length === 1) return { name: "login", params };
  return { name: "notfound", params };
}

const views = { overview: overviewView, queue: queueView, message: messageView, topics: topicsView, alarms: alarmsView, login: loginView };

// toLogin remembers where the page was and shows the login form.
export function toLogin() {
  if (state.session) state.session.loggedIn = false;
  const back = location.hash && !location.hash.startsWith("#/login") ? location.hash : "#/";
  sessionStorage.setItem("ferry.back", back);
  live.stop();
  if (location.hash !== "#/login") location.hash = "#/login";
  else route();
}

// afterLogin returns to the page the login interrupted.
export async function afterLogin() {
  const back = sessionStorage.getItem("ferry.back") || "#/";
  sessionStorage.removeItem("ferry.back");
  renderTopbar();
  location.hash = back;
}

// fail shows err in the banner, or the login page when the session is
// missing.
export function fail(err) {
  if (err instanceof ApiError && err.code === "LoginRequired") { toLogin(); return; }
  showError(err);
}

function renderTopbar() {
  const sess = state.session || {};
  const route = parseRoute();
  for (const a of document.querySelectorAll("[data-nav]")) {
    const on = a.dataset.nav === route.name || (a.dataset.nav === "overview" && (route.name === "queue" || route.name === "message"));
    if (on) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const picker = document.getElementById("account-picker");
  const sel = document.getElementById("account-select");
  const accounts = sess.accounts || [];
  picker.hidden = accounts.length < 2;
  if (accounts.length >= 2) {
    clear(sel);
    const cur = state.account || sess.account;
    for (const id of accounts) sel.append(h("option", { value: id, selected: id === cur }, id));
  }
  document.getElementById("meta").textContent = [sess.region, sess.version && `v${sess.version}`].filter(Boolean).join(" · ");
  document.getElementById("logout").hidden = !(sess.authRequired && sess.loggedIn);
}

async function route() {
  const r = parseRoute();
  const seq = ++renderSeq;
  current?.dispose?.();
  current = null;
  renderTopbar();
  if (r.name !== "login" && state.session?.authRequired && !state.session?.loggedIn) { toLogin(); return; }
  const view = views[r.name];
  const box = h("div", { class: "view" });
  if (!view) {
    clear(main).append(h("div", { class: "empty" }, "No such page. ", h("a", { href: "#/" }, "Back to the overview")));
    return;
  }
  clear(main).append(h("p", { class: "loading" }, "Loading…"));
  try {
    const v = await view(box, r, { fail, afterLogin, isCurrent: () => seq === renderSeq });
    if (seq !== renderSeq) { v?.dispose?.(); return; }
    current = v || {};
    clear(main).append(box);
    // A mark per page shown: the time from navigation to a page, as the
    // browser's performance timeline tells it.
    performance.mark("ferry:view", { detail: r.name });
    document.title = (current.title ? current.title + " · " : "") + "Ferry console";
    if (r.name === "login") { live.stop(); return; }
    live.open(current.liveQueue || "", {
      overview: (data) => { setServerNow(data.now); current?.onOverview?.(data); },
      queue: (data) => current?.onQueue?.(data),
    });
  } catch (err) {
    if (seq !== renderSeq) return;
    clear(main).append(h("div", { class: "empty" }, "This page could not be loaded."));
    fail(err);
  }
}

async function boot() {
  document.getElementById("banner-close").addEventListener("click", clearBanner);
  document.getElementById("account-select").addEventListener("change", (e) => {
    setAccount(e.target.value === state.session?.account ? "" : e.target.value);
    live.close();
    route();
  });
  document.getElementById("logout").addEventListener("click", async () => {
    try { await logout(); } catch (err) { showError(err); }
    try { await loadSession(); } catch (err) { showError(err); }
    toLogin();
  });
  // Keyboard: g o / g t / g a go to the overview, topics, alarms; "/"
  // focuses the page's search field.
  let g = false;
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey || t.matches?.("input, textarea, select") || t.isContentEditable) return;
    if (document.querySelector("dialog[open]")) return;
    if (e.key === "/") {
      const f = document.querySelector("[data-search-focus]");
      if (f) { e.preventDefault(); f.focus(); }
      return;
    }
    if (g) {
      g = false;
      const to = { o: "#/", t: "#/topics", a: "#/alarms" }[e.key];
      if (to) { e.preventDefault(); location.hash = to; }
      return;
    }
    if (e.key === "g") g = true;
  });
  window.addEventListener("hashchange", route);
  document.addEventListener("visibilitychange", () => (document.hidden ? live.pause() : live.resume()));
  window.addEventListener("pagehide", () => live.pause());
  window.addEventListener("pageshow", (e) => { if (e.persisted) live.resume(); });
  try {
    await loadSession();
  } catch (err) {
    showError(err);
  }
  route();
}

boot();
