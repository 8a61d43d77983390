// keepFocus re-renders a live region without losing the keyboard focus:
// the element with the same data-key gets it back.
export function keepFocus(root, render) {
  const active = document.activeElement;
  const key = active && root.contains(active) ? active.getAttribute("data-key") : null;
  render();
  if (key) root.querySelector(`[data-key="${CSS.escape(key)}"]`)?.focus();
}
