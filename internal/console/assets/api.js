// The console's JSON API: the session and its CSRF token, the account the
// page looks at, errors as ApiError, and the live event stream.

const BASE = "/console/api";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code || `HTTP${status}`;
  }
}

export const state = {
  session: null,
  // account is the account the page looks at, when the session may see
  // several; "" means the session's own.
  account: sessionStorage.getItem("ferry.account") || "",
};

export function setAccount(id) {
  state.account = id || "";
  if (state.account) sessionStorage.setItem("ferry.account", state.account);
  else sessionStorage.removeItem("ferry.account");
}

function withAccount(path) {
  if (!state.account || !state.session?.accounts?.length) return path;
  return path + (path.includes("?") ? "&" : "?") + "account=" + encodeURIComponent(state.account);
}

// call does one request. GETs change nothing; anything else carries the
// session's CSRF token.
export async function call(path, { method = "GET", body, account = true } = {}) {
  const headers = { Accept: "application/json" };
  const init = { method, headers, credentials: "same-origin", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  if (method !== "GET" && method !== "HEAD") headers["X-Ferry-Console-CSRF"] = state.session?.csrfToken || "";
  let resp;
  try {
    resp = await fetch(BASE + (account ? withAccount(path) : path), init);
  } catch (err) {
    throw new ApiError(0, "NetworkError", `Ferry did not answer: ${err.message}`);
  }
  if (resp.status === 204) return {};
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : {}; } catch { data = null; }
  if (!resp.ok) {
    throw new ApiError(resp.status, data?.code, data?.error || text.slice(0, 200) || resp.statusText);
  }
  if (data === null) throw new ApiError(resp.status, "BadResponse", "the answer is not JSON");
  return data;
}

export const get = (path) => call(path);
export const post = (path, body) => call(path, { method: "POST", body: body ?? {} });

export async function loadSession() {
  state.session = await call("/session", { account: false });
  const accounts = state.session.accounts || [];
  if (state.account && !accounts.includes(state.account)) setAccount("");
  return state.session;
}

export async function login(creds) {
  state.session = await call("/login", { method: "POST", body: creds, account: false });
  return state.session;
}

export async function logout() {
  await call("/logout", { method: "POST", account: false });
  state.session = null;
}

// Live is the event stream: one EventSource at a time, reopened with a
// growing delay when it fails (the browser's own retry gives up once the
// server answers with an error status, e.g. after a restart lost the
// session).
export class Live {
  constructor({ onStatus }) {
    this.onStatus = onStatus;
    this.handlers = {};
    this.queue = "";
    this.es = null;
    this.retry = 0;
    this.timer = 0;
  }

  // open (re)opens the stream for queue ("" for the overview alone) with
  // handlers by event name.
  open(queue, handlers) {
    this.handlers = handlers;
    this.paused = false;
    const want = queue || "";
    if (this.es && this.queue === want && this.es.readyState !== EventSource.CLOSED) return;
    this.queue = want;
    this.connect();
  }

  connect() {
    this.close();
    let url = BASE + "/events";
    if (this.queue) url += "?queue=" + encodeURIComponent(this.queue);
    url = withAccount(url);
    const es = new EventSource(url, { withCredentials: true });
    this.es = es;
    this.onStatus(this.retry ? "reconnecting" : "connecting");
    es.addEventListener("open", () => { this.retry = 0; this.onStatus("live"); });
    for (const name of ["overview", "queue"]) {
      es.addEventListener(name, (ev) => {
        let data;
        try { data = JSON.parse(ev.data); } catch { return; }
        this.onStatus("live");
        this.handlers[name]?.(data);
      });
    }
    es.addEventListener("error", () => {
      if (this.es !== es) return;
      this.onStatus("reconnecting");
      if (es.readyState === EventSource.CLOSED) {
        this.retry++;
        const delay = Math.min(15000, 500 * 2 ** Math.min(this.retry, 5));
        this.timer = setTimeout(() => { if (this.es === es) this.connect(); }, delay);
      }
    });
  }

  close() {
    clearTimeout(this.timer);
    if (this.es) { this.es.close(); this.es = null; }
  }

  // pause lets the connection go while the tab is hidden or left (kept in
  // the back-forward cache): a browser opens only six connections to one
  // host, and streams held by hidden tabs would starve the others.
  pause() {
    if (!this.es) return;
    this.close();
    this.paused = true;
    this.onStatus("paused");
  }

  // resume reconnects after pause; the stream's first events bring the
  // page up to date.
  resume() {
    if (!this.paused) return;
    this.paused = false;
    this.retry = 0;
    this.connect();
  }

  stop() {
    this.paused = false;
    this.close();
    this.onStatus("off");
  }
}
