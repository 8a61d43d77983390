// Page-wide pieces: the error banner and the modal dialog.

import { h, clear } from "./dom.js";

// showError puts an API error (or any error) in the banner, with its AWS
// code, until dismissed or replaced.
export function showError(err, kind = "error") {
  const banner = document.getElementById("banner");
  document.getElementById("banner-code").textContent = err.code || (kind === "info" ? "" : "Error");
  document.getElementById("banner-text").textContent = err.message || String(err);
  banner.dataset.kind = kind;
  banner.hidden = false;
}

export function showInfo(text) {
  showError({ code: "", message: text }, "info");
}

export function clearBanner() {
  document.getElementById("banner").hidden = true;
}

// modal shows a dialog built by build(close) and resolves with what the
// dialog closes with (undefined when cancelled with Escape or Cancel).
export function modal(build, { wide = false } = {}) {
  const dlg = document.getElementById("dialog");
  clear(dlg);
  dlg.className = wide ? "wide" : "";
  return new Promise((resolve) => {
    let result;
    const close = (v) => { result = v; dlg.close(); };
    dlg.append(build(close));
    dlg.addEventListener("close", () => { clear(dlg); resolve(result); }, { once: true });
    dlg.showModal();
    const first = dlg.querySelector("[autofocus]") || dlg.querySelector("input, select, textarea, button");
    first?.focus();
  });
}

// confirmDialog asks a yes/no question; danger colours the yes.
export function confirmDialog({ title, text, yes = "OK", danger = false, typeToConfirm = "" }) {
  return modal((close) => {
    const input = typeToConfirm ? h("input", { id: "confirm-input", name: "confirm", autocomplete: "off", spellcheck: "false", autofocus: true }) : null;
    const ok = h("button", { type: "submit", class: danger ? "danger solid" : "primary", disabled: Boolean(typeToConfirm) }, yes);
    input?.addEventListener("input", () => { ok.disabled = input.value !== typeToConfirm; });
    return h("form", { method: "dialog", onsubmit: (e) => { e.preventDefault(); close(input ? input.value : true); } },
      h("h3", null, title),
      h("p", null, text),
      input && h("div", { class: "field" }, h("label", { for: "confirm-input" }, "Type ", h("code", null, typeToConfirm), " to confirm"), input),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, "Cancel"),
        ok));
  });
}
