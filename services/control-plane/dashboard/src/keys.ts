import { type Api, ApiFailure, type CreatedKey, DEFAULT_SETTINGS, type Key, type KeySettings } from "./api.ts";
import { openDialog } from "./dialog.ts";
import { clear, h } from "./dom.ts";
import { formatDateTime, formatInt, formatShort } from "./format.ts";
import { changedFields, keyForm, validateName } from "./keyform.ts";
import { showRawKey } from "./rawkey.ts";
import { type UsageSection, usageSection } from "./usage.ts";

// The keys screen: the table of every key (active and revoked, newest first as the API
// sends them), create, edit, rotate and revoke, and the usage chart below.

export interface KeysScreen {
  element: HTMLElement;
  refresh(): Promise<void>;
}

export function keysScreen(api: Api): KeysScreen {
  let keys: Key[] = [];
  const heading = h("h1", { id: "keys-heading", tabindex: "-1" }, "API keys");
  const status = h("p", { class: "status", role: "status", id: "status" });
  const listError = h("p", { class: "notice error", role: "alert", hidden: true });
  const createButton = h("button", { type: "button", class: "button primary", id: "create-key" }, "Create key");
  const tableBox = h("div", { class: "keys-box" });
  const usage: UsageSection = usageSection(api);
  const focusHeading = () => heading;

  createButton.addEventListener("click", () => openCreate());

  const element = h(
    "div",
    { class: "keys-screen" },
    h(
      "section",
      { class: "card", "aria-labelledby": "keys-heading" },
      h("div", { class: "section-head" }, heading, createButton),
      h(
        "p",
        { class: "hint" },
        "Service keys authenticate your applications to the terse proxy. Each key carries its own compression settings.",
      ),
      status,
      listError,
      tableBox,
    ),
    usage.element,
    usage.savings,
  );

  function say(message: string) {
    status.textContent = message;
  }

  async function refresh(): Promise<void> {
    try {
      keys = await api.listKeys();
      listError.hidden = true;
      renderTable();
      usage.setKeys(keys);
    } catch (err) {
      if (err instanceof ApiFailure && err.status === 401) return;
      listError.textContent = `The keys could not be loaded: ${messageOf(err)}`;
      listError.hidden = false;
    }
  }

  function renderTable() {
    clear(tableBox);
    if (keys.length === 0) {
      tableBox.append(h("p", { class: "empty" }, "No keys yet. Create one to start sending requests through terse."));
      return;
    }
    const active = keys.filter((k) => k.is_active).length;
    // Short headings for the wide table; each cell's data-label (shown on phones) is the long name.
    const columns = [
      "Name and prefix",
      "Intensity",
      "Auto input",
      "Smart detect",
      "Context",
      "Level",
      "Status",
      "Rate limit",
      "Created",
      "Last used",
      "Actions",
    ];
    const onOff = (v: boolean) => h("span", { class: v ? "flag on" : "flag off" }, v ? "On" : "Off");
    tableBox.append(
      h(
        "table",
        { class: "data keys", id: "keys-table" },
        h("caption", {}, `${active} active, ${keys.length - active} revoked`),
        h("thead", {}, h("tr", {}, ...columns.map((c) => h("th", { scope: "col" }, c)))),
        h(
          "tbody",
          {},
          ...keys.map((k) =>
            h(
              "tr",
              { class: k.is_active ? "key active" : "key revoked", "data-key-id": k.id },
              h(
                "th",
                { scope: "row", "data-label": "Name", class: "key-name" },
                h("span", { class: "key-name-text" }, k.name),
                h("code", { class: "key-prefix", title: "Key prefix" }, `${k.key_prefix}…`),
              ),
              h("td", { "data-label": "Intensity" }, k.intensity),
              h("td", { "data-label": "Auto-compress input" }, onOff(k.auto_compress_input)),
              h("td", { "data-label": "Smart detect" }, onOff(k.smart_detect_enabled)),
              h("td", { "data-label": "Context compress" }, onOff(k.context_compress)),
              h("td", { "data-label": "Context level" }, k.context_compress_level),
              h(
                "td",
                { "data-label": "Status" },
                h(
                  "span",
                  { class: k.is_active ? "badge active" : "badge revoked" },
                  k.is_active ? "Active" : "Revoked",
                ),
              ),
              h("td", { "data-label": "Rate limit" }, `${formatInt(k.rate_limit_rpm)} rpm`),
              h(
                "td",
                { "data-label": "Created" },
                h("time", { datetime: k.created_at, title: formatDateTime(k.created_at) }, formatShort(k.created_at)),
              ),
              h(
                "td",
                { "data-label": "Last used" },
                k.last_used_at
                  ? h(
                      "time",
                      { datetime: k.last_used_at, title: formatDateTime(k.last_used_at) },
                      formatShort(k.last_used_at),
                    )
                  : "never",
              ),
              h("td", { "data-label": "Actions", class: "row-actions" }, ...actionsFor(k)),
            ),
          ),
        ),
      ),
    );
  }

  function actionsFor(k: Key): HTMLElement[] {
    const button = (label: string, action: string, onClick: () => void, danger = false) =>
      h(
        "button",
        {
          type: "button",
          class: danger ? "button small danger" : "button small secondary",
          "data-action": action,
          "aria-label": `${label} key ${k.name}`,
          onclick: onClick,
        },
        label,
      );
    if (!k.is_active) return [h("span", { class: "muted" }, "none")];
    return [
      button("Edit", "edit", () => openEdit(k)),
      button("Rotate", "rotate", () => confirmRotate(k)),
      button("Revoke", "revoke", () => confirmRevoke(k), true),
    ];
  }

  function openCreate() {
    const form = keyForm(DEFAULT_SETTINGS, "Create key", () => dialog.close());
    const dialog = openDialog(
      { title: "Create a key", fallbackFocus: () => createButton },
      h("p", { class: "hint" }, "The defaults are the service's defaults; change any of them now or later."),
      form.form,
    );
    form.name.focus();
    form.name.select();
    form.form.addEventListener("submit", async (e) => {
      e.preventDefault();
      form.clearErrors();
      const settings = form.read();
      const invalid = validateName(settings.name);
      if (invalid) return form.showError(invalid, "name");
      form.setBusy(true);
      let created: CreatedKey | null = null;
      try {
        created = await api.createKey(settings);
      } catch (err) {
        form.setBusy(false);
        if (err instanceof ApiFailure && err.status === 401) return;
        return form.showError(await createMessage(err, settings), fieldOf(err));
      }
      dialog.close();
      const { name } = created;
      reveal(created, "Key created", `The key “${name}” is ready.`);
      created = null;
      say(`Key “${name}” created.`);
      await refresh();
    });
  }

  /** Hands the raw key to the one-time dialog and drops it from the answer object. */
  function reveal(created: CreatedKey, title: string, intro: string) {
    const raw = created.raw_key;
    created.raw_key = "";
    showRawKey({ title, intro, keyName: created.name, fallbackFocus: focusHeading }, raw);
  }

  async function createMessage(err: unknown, settings: KeySettings): Promise<string> {
    if (!(err instanceof ApiFailure)) return messageOf(err);
    if (err.code === "duplicate_name") {
      return `Duplicate name: an active key is already called “${settings.name}”. Choose another name, or revoke that key first.`;
    }
    if (err.code === "key_limit_reached") {
      // The API says no more than that: the active keys listed are the plan's limit.
      const active = keys.filter((k) => k.is_active).length;
      const limit = `You have ${formatInt(active)} active ${active === 1 ? "key" : "keys"}, the most your plan allows.`;
      return `API key limit reached. ${limit} Revoke a key you no longer use to create a new one.`;
    }
    return messageOf(err);
  }

  function openEdit(k: Key) {
    const before: KeySettings = {
      name: k.name,
      intensity: k.intensity,
      auto_compress_input: k.auto_compress_input,
      smart_detect_enabled: k.smart_detect_enabled,
      context_compress: k.context_compress,
      context_compress_level: k.context_compress_level,
    };
    const form = keyForm(before, "Save changes", () => dialog.close());
    const dialog = openDialog(
      { title: `Edit “${k.name}”`, fallbackFocus: focusHeading },
      h("p", { class: "hint" }, `Key ${k.key_prefix}…: changes apply to the next request made with it.`),
      form.form,
    );
    form.name.focus();
    form.form.addEventListener("submit", async (e) => {
      e.preventDefault();
      form.clearErrors();
      const after = form.read();
      const invalid = validateName(after.name);
      if (invalid) return form.showError(invalid, "name");
      const changes = changedFields(before, after);
      if (Object.keys(changes).length === 0) return form.showError("Nothing has changed.");
      form.setBusy(true);
      try {
        const updated = await api.updateKey(k.id, changes);
        dialog.close();
        say(`Key “${updated.name}” saved.`);
        await refresh();
      } catch (err) {
        form.setBusy(false);
        if (err instanceof ApiFailure && err.status === 401) return;
        if (err instanceof ApiFailure && err.code === "duplicate_name") {
          return form.showError(
            `Duplicate name: an active key is already called “${after.name}”. Choose another name.`,
            "name",
          );
        }
        form.showError(keyMessage(err), fieldOf(err));
        if (err instanceof ApiFailure && (err.status === 404 || err.status === 409)) void refresh();
      }
    });
  }

  function confirmRotate(k: Key) {
    confirm({
      title: `Rotate “${k.name}”?`,
      text: [
        `The current key ${k.key_prefix}… stops working at once: requests made with it are refused from the moment you confirm.`,
        "A new key with the same name and settings replaces it, and is shown once.",
      ],
      action: "Rotate key",
      run: async () => {
        const created = await api.rotateKey(k.id);
        say(`Key “${created.name}” rotated.`);
        // After the confirmation has closed, so the new dialog takes focus from the page.
        return () =>
          reveal(created, "Key rotated", `The old key for “${created.name}” no longer works. This is its replacement.`);
      },
    });
  }

  function confirmRevoke(k: Key) {
    confirm({
      title: `Revoke “${k.name}”?`,
      text: [
        `The key ${k.key_prefix}… stops working at once and cannot be turned back on.`,
        "Its usage history stays.",
      ],
      action: "Revoke key",
      run: async () => {
        const revoked = await api.revokeKey(k.id);
        say(`Key “${revoked.name}” revoked.`);
        return () => heading.focus();
      },
    });
  }

  function confirm(o: { title: string; text: string[]; action: string; run: () => Promise<() => void> }) {
    const error = h("p", { class: "notice error", role: "alert", hidden: true });
    const cancel = h("button", { type: "button", class: "button secondary" }, "Cancel");
    const go = h("button", { type: "button", class: "button danger" }, o.action);
    const dialog = openDialog(
      { title: o.title, role: "alertdialog", className: "confirm", fallbackFocus: focusHeading },
      ...o.text.map((t) => h("p", {}, t)),
      error,
      h("div", { class: "actions" }, cancel, go),
    );
    // The safe choice has focus: Enter on an unread dialog cancels.
    cancel.focus();
    cancel.addEventListener("click", () => dialog.close());
    go.addEventListener("click", async () => {
      go.disabled = true;
      error.hidden = true;
      try {
        const then = await o.run();
        dialog.close();
        then();
        await refresh();
      } catch (err) {
        go.disabled = false;
        if (err instanceof ApiFailure && err.status === 401) return;
        error.textContent = keyMessage(err);
        error.hidden = false;
        if (err instanceof ApiFailure && (err.status === 404 || err.status === 409)) void refresh();
      }
    });
  }

  return {
    element,
    async refresh() {
      await refresh();
      await usage.load();
    },
  };
}

function keyMessage(err: unknown): string {
  if (err instanceof ApiFailure) {
    if (err.code === "not_found") return "Not found: this key no longer exists. The list has been refreshed.";
    if (err.code === "key_revoked") return "Key is revoked: a revoked key cannot be changed or rotated.";
  }
  return messageOf(err);
}

function messageOf(err: unknown): string {
  if (err instanceof ApiFailure) return err.message;
  return "Something went wrong. Try again.";
}

function fieldOf(err: unknown): string | undefined {
  if (!(err instanceof ApiFailure)) return undefined;
  if (err.code === "duplicate_name") return "name";
  return err.param;
}
