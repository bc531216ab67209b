import { get } from "node:http";
import { expect } from "chai";
import { DASHBOARD_CSP } from "../../src/routes/dashboard.ts";
import { type Stack, startStack } from "./harness.ts";

// What the server says around the page: the security headers, the redirect, the assets
// and nothing else, and the HTML itself free of inline script and style.

// createApp registers routes/dashboard.ts: these go to the real app.
describe("dashboard: the routes", () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack("routes");
  });

  after(async () => {
    await stack?.stop();
  });

  it("serves /dashboard/keys with the security headers and no caching", async () => {
    const res = await fetch(`${stack.url}/dashboard/keys`);
    expect(res.status).to.equal(200);
    expect(res.headers.get("content-type")).to.equal("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).to.equal(DASHBOARD_CSP);
    expect(res.headers.get("x-frame-options")).to.equal("DENY");
    expect(res.headers.get("cache-control")).to.equal("no-store");
    expect(res.headers.get("x-content-type-options")).to.equal("nosniff");
    expect(res.headers.get("referrer-policy")).to.equal("no-referrer");
    const html = await res.text();
    expect(html).to.include('<script type="module" src="/dashboard/assets/app.js"></script>');
    // Every script is external, no style attribute or element: nothing the CSP would block.
    expect(html.match(/<script\b[^>]*>/g)).to.deep.equal(['<script type="module" src="/dashboard/assets/app.js">']);
    expect(html).not.to.match(/\sstyle=|<style|\son[a-z]+=/i);
  });

  it("has a CSP without inline script or style, framing or foreign origins", () => {
    const directives = Object.fromEntries(
      DASHBOARD_CSP.split(";").map((d) => {
        const [name, ...values] = d.trim().split(/\s+/);
        return [name, values.join(" ")];
      }),
    );
    expect(directives).to.include({
      "default-src": "'none'",
      "script-src": "'self'",
      "style-src": "'self'",
      "connect-src": "'self'",
      "frame-ancestors": "'none'",
      "form-action": "'none'",
    });
    expect(DASHBOARD_CSP).not.to.match(/unsafe-inline|unsafe-eval|\*|https?:/);
  });

  it("redirects /dashboard to /dashboard/keys", async () => {
    const res = await fetch(`${stack.url}/dashboard`, { redirect: "manual" });
    expect(res.status).to.equal(302);
    expect(res.headers.get("location")).to.equal("/dashboard/keys");
  });

  it("serves the bundle and the stylesheet, revalidated on every load", async () => {
    for (const [file, type] of [
      ["app.js", "text/javascript; charset=utf-8"],
      ["app.css", "text/css; charset=utf-8"],
    ]) {
      const res = await fetch(`${stack.url}/dashboard/assets/${file}`);
      expect(res.status, file).to.equal(200);
      expect(res.headers.get("content-type")).to.equal(type);
      expect(res.headers.get("cache-control")).to.equal("no-cache");
      expect(res.headers.get("x-content-type-options")).to.equal("nosniff");
      const etag = res.headers.get("etag");
      expect(etag).to.be.a("string");
      expect((await res.text()).length).to.be.greaterThan(1000);
      // node:http, since fetch adds Cache-Control: no-cache to a conditional request.
      expect(await statusOf(`${stack.url}/dashboard/assets/${file}`, { "if-none-match": etag ?? "" })).to.equal(304);
    }
  });

  it("serves nothing else from the build folder or beside it", async () => {
    for (const path of [
      "/dashboard/assets/index.html",
      "/dashboard/assets/..%2F..%2Fpackage.json",
      "/dashboard/assets/%2e%2e%2fsrc%2fapp.ts",
      "/dashboard/assets/constructor",
      "/dashboard/assets/",
    ]) {
      const res = await fetch(`${stack.url}${path}`);
      expect(res.status, path).to.equal(404);
      expect(((await res.json()) as { error: { message: string } }).error.message).to.equal("Not found");
    }
  });

  it("answers the API as before beside it", async () => {
    const res = await fetch(`${stack.url}/v1/auth/keys`);
    expect(res.status).to.equal(401);
  });
});

function statusOf(url: string, headers: Record<string, string>): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on("error", reject);
  });
}
