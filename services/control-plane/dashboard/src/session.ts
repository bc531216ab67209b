// The access token lives in sessionStorage (this tab only, gone when it closes) and is
// only ever sent in the Authorization header: never in a URL, never in a cookie.

const STORAGE_KEY = "terse.session";

export interface Session {
  token: string;
  email: string;
  /** Epoch milliseconds when the token stops being accepted. */
  expiresAt: number;
}

export function loadSession(now = Date.now()): Session | null {
  let raw: string | null = null;
  try {
    raw = sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
  if (!raw) return null;
  try {
    const s = JSON.parse(raw) as Partial<Session>;
    if (typeof s.token !== "string" || typeof s.email !== "string" || typeof s.expiresAt !== "number") return null;
    if (s.expiresAt <= now) {
      clearSession();
      return null;
    }
    return { token: s.token, email: s.email, expiresAt: s.expiresAt };
  } catch {
    return null;
  }
}

export function saveSession(session: Session): void {
  try {
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
  } catch {
    // Storage disabled: the session still lives in memory for this page.
  }
}

export function clearSession(): void {
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // nothing stored
  }
}
