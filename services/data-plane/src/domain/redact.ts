/**
 * Removes the provider key, and any echo of it, from text the proxy returns or logs
 * (DESIGN.md section 7): the whole key, and any token that begins with its first 6
 * characters or ends with its last 4 and contains `*` or `.` (OpenAI echoes `sk-ab***yz`).
 */
export function redactProviderKey(text: string, providerKey: string): string {
  if (!providerKey) return text;
  let out = withoutKeyForms(text, [providerKey]);
  const head = providerKey.slice(0, 6);
  const tail = providerKey.slice(-4);
  out = out.replace(/[^\s"'<>,;()[\]{}]+/g, (token) => {
    const echo = (token.includes("*") || token.includes(".")) && (token.startsWith(head) || token.endsWith(tail));
    return echo ? "[REDACTED]" : token;
  });
  // Short echoes that keep fewer than 6 leading characters (`sk-ab***yz`).
  const shortHead = providerKey.slice(0, 3);
  return out.replace(/[^\s"'<>,;()[\]{}]*\*{2,}[^\s"'<>,;()[\]{}]*/g, (token) =>
    token.startsWith(shortHead) || token.endsWith(providerKey.slice(-2)) ? "[REDACTED]" : token,
  );
}

/** For log lines: a URL with its `key` query parameter removed (the Gemini key travels there). */
export function redactUrl(url: string): string {
  return url.replace(/([?&]key=)[^&#]*/gi, "$1[REDACTED]");
}

/** The key as sent and, where it differs, percent-encoded (as a URL carries it: Gemini's `key`). */
export function providerKeyForms(providerKey: string): string[] {
  if (providerKey.length === 0) return [];
  const encoded = encodeURIComponent(providerKey);
  return encoded === providerKey ? [providerKey] : [providerKey, encoded];
}

/** `text` with every copy of each form of the key replaced: the cheap pass, for every header relayed. */
export function withoutKeyForms(text: string, forms: readonly string[]): string {
  let out = text;
  for (const form of forms) if (out.includes(form)) out = out.split(form).join("[REDACTED]");
  return out;
}
