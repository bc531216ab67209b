import { type Child, h, uid } from "./dom.ts";

// Modal dialogs on the native <dialog>: showModal() makes the rest of the page inert and
// keeps Tab inside, Escape closes it. On close the element leaves the DOM (so nothing it
// showed, such as a raw key, stays in the page) and focus goes back where it came from.

export interface DialogHandle {
  dialog: HTMLDialogElement;
  body: HTMLElement;
  title: HTMLElement;
  close(): void;
}

export interface DialogOptions {
  title: string;
  /** For an alert-like dialog (confirmations): read out as such. */
  role?: "dialog" | "alertdialog";
  className?: string;
  /** Called once, after the dialog has left the page. */
  onClose?: () => void;
  /** Where focus goes when the opener is gone (the list re-rendered meanwhile). */
  fallbackFocus?: () => HTMLElement | null;
}

const open = new Set<DialogHandle>();

export function openDialog(options: DialogOptions, ...content: Child[]): DialogHandle {
  const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  const titleId = uid("dialog-title");
  const title = h("h2", { id: titleId, class: "dialog-title" }, options.title);
  const body = h("div", { class: "dialog-body" }, ...content);
  const dialog = h(
    "dialog",
    { class: `dialog ${options.className ?? ""}`.trim(), "aria-labelledby": titleId, role: options.role ?? "dialog" },
    title,
    body,
  );
  let closed = false;
  const handle: DialogHandle = {
    dialog,
    body,
    title,
    close() {
      if (!closed) dialog.close();
    },
  };
  dialog.addEventListener("close", () => {
    if (closed) return;
    closed = true;
    open.delete(handle);
    dialog.remove();
    options.onClose?.();
    const target = opener?.isConnected ? opener : options.fallbackFocus?.();
    target?.focus();
  });
  document.body.append(dialog);
  open.add(handle);
  dialog.showModal();
  return handle;
}

/** Closes every open dialog: on sign-out and when the session expires. */
export function closeAllDialogs(): void {
  for (const handle of [...open]) handle.close();
}
