import { CONTEXT_LEVELS, type ContextLevel, INTENSITIES, type Intensity, type KeySettings } from "./api.ts";
import { h, uid } from "./dom.ts";

// The form for every settable field of a key (spec 2.1), shared by create and edit.

export const MAX_NAME_LENGTH = 64;

const INTENSITY_HINTS: Record<Intensity, string> = {
  lite: "lite: light touch, safest for any prompt",
  full: "full: the default balance",
  ultra: "ultra: the most savings",
};

export interface KeyForm {
  form: HTMLFormElement;
  name: HTMLInputElement;
  /** The values as the form shows them now. */
  read(): KeySettings;
  /** Shows a message under one field (by its API name) or, without a field, for the whole form. */
  showError(message: string, field?: string): void;
  clearErrors(): void;
  setBusy(busy: boolean): void;
}

export function keyForm(initial: KeySettings, submitLabel: string, onCancel: () => void): KeyForm {
  const fieldErrors = new Map<string, HTMLElement>();
  const controls = new Map<string, HTMLInputElement | HTMLSelectElement>();

  function field(apiName: string, label: string, control: HTMLInputElement | HTMLSelectElement, hint?: string) {
    const id = uid(`key-${apiName}`);
    control.id = id;
    control.name = apiName;
    const error = h("p", { class: "field-error", id: `${id}-error`, hidden: true });
    const hintEl = hint ? h("p", { class: "hint", id: `${id}-hint` }, hint) : null;
    control.setAttribute("aria-describedby", [hintEl?.id, error.id].filter(Boolean).join(" "));
    fieldErrors.set(apiName, error);
    controls.set(apiName, control);
    const isCheckbox = control instanceof HTMLInputElement && control.type === "checkbox";
    return isCheckbox
      ? h("div", { class: "field checkbox" }, control, h("label", { for: id }, label), hintEl, error)
      : h("div", { class: "field" }, h("label", { for: id }, label), control, hintEl, error);
  }

  function select(values: readonly string[], selected: string, labels?: Record<string, string>) {
    return h("select", {}, ...values.map((v) => h("option", { value: v, selected: v === selected }, labels?.[v] ?? v)));
  }

  function checkbox(checked: boolean) {
    const input = h("input", { type: "checkbox" });
    input.checked = checked;
    return input;
  }

  const name = h("input", {
    type: "text",
    required: true,
    maxlength: MAX_NAME_LENGTH,
    autocomplete: "off",
    spellcheck: "false",
  });
  name.value = initial.name;
  const intensity = select(INTENSITIES, initial.intensity, INTENSITY_HINTS);
  const autoCompress = checkbox(initial.auto_compress_input);
  const smartDetect = checkbox(initial.smart_detect_enabled);
  const contextCompress = checkbox(initial.context_compress);
  const level = select(CONTEXT_LEVELS, initial.context_compress_level);

  const formError = h("p", { class: "notice error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "button primary" }, submitLabel);
  const cancel = h("button", { type: "button", class: "button secondary", onclick: () => onCancel() }, "Cancel");

  const form = h(
    "form",
    { class: "key-form", novalidate: true },
    field("name", "Name", name, `Unique among your active keys, up to ${MAX_NAME_LENGTH} characters.`),
    field("intensity", "Compression intensity", intensity),
    h(
      "fieldset",
      { class: "switches" },
      h("legend", {}, "Compression"),
      field("auto_compress_input", "Compress input automatically", autoCompress),
      field("smart_detect_enabled", "Smart detection (skip content that should not be compressed)", smartDetect),
      field("context_compress", "Compress conversation context", contextCompress),
    ),
    field("context_compress_level", "Context compression level", level),
    formError,
    h("div", { class: "actions" }, cancel, submit),
  );

  function showError(message: string, fieldName?: string) {
    const target = fieldName ? fieldErrors.get(fieldName) : undefined;
    const control = fieldName ? controls.get(fieldName) : undefined;
    if (target && control) {
      target.textContent = message;
      target.hidden = false;
      control.setAttribute("aria-invalid", "true");
      control.focus();
      // Also announced, since a field's description is not read out when it changes.
      formError.textContent = message;
      formError.hidden = false;
      return;
    }
    formError.textContent = message;
    formError.hidden = false;
  }

  return {
    form,
    name,
    read: () => ({
      name: name.value.trim(),
      intensity: intensity.value as Intensity,
      auto_compress_input: autoCompress.checked,
      smart_detect_enabled: smartDetect.checked,
      context_compress: contextCompress.checked,
      context_compress_level: level.value as ContextLevel,
    }),
    showError,
    clearErrors() {
      formError.hidden = true;
      formError.textContent = "";
      for (const [apiName, el] of fieldErrors) {
        el.hidden = true;
        el.textContent = "";
        controls.get(apiName)?.removeAttribute("aria-invalid");
      }
    },
    setBusy(busy: boolean) {
      submit.disabled = busy;
      form.setAttribute("aria-busy", String(busy));
    },
  };
}

/** The fields whose value differs: what a PATCH sends. */
export function changedFields(before: KeySettings, after: KeySettings): Partial<KeySettings> {
  const out: Partial<KeySettings> = {};
  for (const k of Object.keys(after) as (keyof KeySettings)[]) {
    if (after[k] !== before[k]) (out as Record<string, unknown>)[k] = after[k];
  }
  return out;
}

/** Client-side check before any request; the server checks again. */
export function validateName(name: string): string | null {
  if (name.length === 0) return "Enter a name for the key.";
  if (name.length > MAX_NAME_LENGTH) return `The name may be at most ${MAX_NAME_LENGTH} characters.`;
  return null;
}
