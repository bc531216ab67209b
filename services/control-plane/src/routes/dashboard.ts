import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { Express, NextFunction, Request, Response } from "express";
import type { AppContext } from "../context.ts";

// GET /dashboard/keys: the key-management UI (issue 6), a static page plus its bundle,
// built from services/control-plane/dashboard/ into public/build/ by
// `node services/control-plane/dashboard/build.mjs` (run by scripts/bootstrap.mjs).
// The page calls the same /v1/auth/* and /v1/usage endpoints as any client, with the
// token in the Authorization header, so it needs no server state of its own.

const BUILD_DIR = fileURLToPath(new URL("../../public/build/", import.meta.url));

/** The only files served under /dashboard/assets/. */
const ASSETS: Record<string, string> = {
  "app.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
};

/**
 * No inline script or style, nothing from another origin, no framing, forms that can
 * never submit by themselves (the page's forms are handled by script, so a failed
 * script load cannot post a password in a URL).
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

function securityHeaders(res: Response): void {
  res.set({
    "Content-Security-Policy": DASHBOARD_CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
  });
}

async function readBuilt(name: string): Promise<Buffer | null> {
  try {
    return await readFile(`${BUILD_DIR}${name}`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

const NOT_BUILT =
  "The dashboard has not been built. Run `node services/control-plane/dashboard/build.mjs` (or `npm start`, which does).\n";

export function register(app: Express, _ctx: AppContext): void {
  const toKeys = (_req: Request, res: Response) => {
    securityHeaders(res);
    res.redirect(302, "/dashboard/keys");
  };
  app.get("/dashboard", toKeys);

  app.get("/dashboard/keys", async (_req: Request, res: Response) => {
    securityHeaders(res);
    // The page may show a raw key: never kept by a browser or a proxy.
    res.set({ "Cache-Control": "no-store", Pragma: "no-cache" });
    // Read per request: a few kB, and a rebuilt bundle shows up without a restart.
    const html = await readBuilt("index.html");
    if (!html) {
      res.status(503).type("text/plain; charset=utf-8").send(NOT_BUILT);
      return;
    }
    res.status(200).type("text/html; charset=utf-8").send(html);
  });

  app.get("/dashboard/assets/:file", async (req: Request, res: Response, next: NextFunction) => {
    const file = String(req.params.file);
    const type = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
    if (!type) return next();
    const body = await readBuilt(file);
    if (!body) return next();
    securityHeaders(res);
    // No secrets in the bundle; revalidated by ETag on every load so a new build shows at once.
    res.set("Cache-Control", "no-cache");
    res.status(200).type(type).send(body);
  });
}
