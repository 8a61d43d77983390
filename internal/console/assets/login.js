// #/login : an access key id and secret (the session sees that key's
// account), or the admin token (every account).

import { login } from "./api.js";
import { h } from "./dom.js";
import { showError, clearBanner } from "./ui.js";

export async function loginView(box, route, { afterLogin }) {
  let mode = "key";
  const keyId = h("input", { id: "login-key", name: "accessKeyId", autocomplete: "username", spellcheck: "false", required: true, autofocus: true });
  const secret = h("input", { id: "login-secret", name: "secretAccessKey", type: "password", autocomplete: "current-password", required: true });
  const token = h("input", { id: "login-token", name: "adminToken", type: "password", autocomplete: "current-password" });
  const keyFields = h("div", null,
    h("div", { class: "field" }, h("label", { for: "login-key" }, "Access key id"), keyId),
    h("div", { class: "field" }, h("label", { for: "login-secret" }, "Secret access key"), secret));
  const tokenFields = h("div", { hidden: true },
    h("div", { class: "field" }, h("label", { for: "login-token" }, "Admin token"), token,
      h("span", { class: "hint" }, "Ferry's --admin-token: sees every account.")));
  const tabKey = h("button", { type: "button", role: "tab", id: "tab-key", "aria-selected": "true", onclick: () => pick("key") }, "Access key");
  const tabToken = h("button", { type: "button", role: "tab", id: "tab-token", "aria-selected": "false", onclick: () => pick("token") }, "Admin token");
  const submit = h("button", { type: "submit", class: "primary", id: "login-submit" }, "Log in");
  function pick(m) {
    mode = m;
    tabKey.setAttribute("aria-selected", String(m === "key"));
    tabToken.setAttribute("aria-selected", String(m === "token"));
    keyFields.hidden = m !== "key";
    tokenFields.hidden = m !== "token";
    keyId.required = secret.required = m === "key";
    token.required = m === "token";
    (m === "key" ? keyId : token).focus();
  }
  const form = h("form", { id: "login-form", onsubmit: async (e) => {
    e.preventDefault();
    submit.disabled = true;
    try {
      await login(mode === "key" ? { accessKeyId: keyId.value.trim(), secretAccessKey: secret.value } : { adminToken: token.value });
      clearBanner();
      afterLogin();
    } catch (err) {
      showError(err);
      (mode === "key" ? secret : token).select();
    } finally {
      submit.disabled = false;
    }
  } },
    h("h1", null, "Log in to Ferry"),
    h("p", { class: "muted" }, "This Ferry checks signatures: log in with one of its keys."),
    h("div", { class: "tabs", role: "tablist" }, tabKey, tabToken),
    keyFields, tokenFields,
    h("div", { class: "actions" }, submit));
  box.append(h("div", { class: "login" }, h("div", { class: "panel" }, form)));
  return { title: "Log in" };
}
