/**
 * Removes the provider key, and any echo of it, from text the proxy returns or logs
 * (DESIGN.md section 7): the whole key, and any token that begins with its first 6
 * characters or ends with its last 4 and contains `*` or `.` (OpenAI echoes `sk-ab***yz`).
 */
export function redactProviderKey(text: string, providerKey: string): string {
  if (!providerKey) return text;
  let out = text.split(providerKey).join("[REDACTED]");
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
