import { openDialog } from "./dialog.ts";
import { h, uid } from "./dom.ts";

// The raw key, shown exactly once. The string goes into one readonly input (as its
// value, not an attribute) and nowhere else: the copy button reads it back from there.
// Closing the dialog empties the input and removes the dialog from the page, so the
// key is gone from the DOM and nothing in the app still refers to it.

export function showRawKey(
  options: { title: string; intro: string; keyName: string; fallbackFocus: () => HTMLElement | null },
  rawKey: string,
): void {
  const inputId = uid("raw-key");
  const warningId = uid("raw-key-warning");
  // A textarea, so the whole key is visible (wrapped) rather than scrolled out of sight.
  const input = h("textarea", {
    id: inputId,
    rows: 2,
    readonly: true,
    class: "raw-key mono",
    autocomplete: "off",
    spellcheck: "false",
    "aria-describedby": warningId,
    "data-raw-key": true,
  });
  input.value = rawKey;
  const copyStatus = h("p", { class: "copy-status", role: "status" });
  const copy = h("button", { type: "button", class: "button secondary" }, "Copy");
  copy.addEventListener("click", async () => {
    input.focus();
    input.select();
    try {
      await navigator.clipboard.writeText(input.value);
      copyStatus.textContent = "Copied to the clipboard.";
    } catch {
      copyStatus.textContent = "Copying was blocked by the browser: the key is selected, press Ctrl+C (⌘C) to copy it.";
    }
  });
  const done = h("button", { type: "button", class: "button primary" }, "I have stored the key");

  const handle = openDialog(
    {
      title: options.title,
      className: "raw-key-dialog",
      fallbackFocus: options.fallbackFocus,
      onClose: () => {
        input.value = "";
      },
    },
    h("p", {}, options.intro),
    h(
      "p",
      { class: "notice warning", id: warningId },
      h("strong", {}, "Copy this key now. "),
      "It is shown only once and cannot be shown again: terse keeps only a hash of it. If you lose it, rotate the key.",
    ),
    h("label", { for: inputId }, `API key for “${options.keyName}”`),
    h("div", { class: "copy-row" }, input, copy),
    copyStatus,
    h("div", { class: "actions" }, done),
  );
  done.addEventListener("click", () => handle.close());
  input.addEventListener("focus", () => input.select());
  input.focus();
}
