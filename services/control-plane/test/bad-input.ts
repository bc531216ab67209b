import { expect } from "chai";
import { api, type ErrorBody, type Harness, snapshot } from "./harness.ts";

// The bad-input matrix of issue 2, shared by every endpoint with a body: each case
// gets its 4xx with the envelope (naming the field where there is one) and leaves
// Postgres and Redis exactly as they were.

export interface BadInput {
  name: string;
  /** Sent as JSON, unless `raw` is given. */
  body?: unknown;
  raw?: string;
  contentType?: string;
  contentEncoding?: string;
  status: number;
  param?: string;
  message?: string | RegExp;
}

export const NOT_JSON: BadInput[] = [
  { name: "a body that is not JSON", raw: "{name: 'x'", status: 400, message: "Request body is not valid JSON" },
  { name: "a truncated JSON body", raw: '{"name": "x"', status: 400, message: "Request body is not valid JSON" },
  { name: "a JSON array", raw: "[]", status: 400, message: "Request body must be a JSON object" },
  { name: "a JSON string", raw: '"name"', status: 400, message: "Request body must be a JSON object" },
  { name: "JSON null", raw: "null", status: 400, message: "Request body must be a JSON object" },
  { name: "a JSON number", raw: "7", status: 400, message: "Request body must be a JSON object" },
  {
    name: "the wrong content type",
    raw: '{"name":"x"}',
    contentType: "text/plain",
    status: 415,
    param: "Content-Type",
  },
  { name: "a form body", raw: "name=x", contentType: "application/x-www-form-urlencoded", status: 415 },
  { name: "an oversized body", raw: JSON.stringify({ name: "x".repeat(40_000) }), status: 413 },
  // A plain body that claims an encoding: the decoder fails on it (was a 500, before login).
  ...["gzip", "deflate", "br"].map((coding) => ({
    name: `a plain body sent as Content-Encoding: ${coding}`,
    raw: '{"name":"x"}',
    contentEncoding: coding,
    status: 400,
    message: `Request body is not valid ${coding} data`,
  })),
  {
    name: "an unknown content encoding",
    raw: '{"name":"x"}',
    contentEncoding: "zstd-ish",
    status: 415,
    message: "Unsupported content encoding",
  },
];

export const UNKNOWN_FIELD: BadInput = {
  name: "an unknown field",
  body: { colour: "red" },
  status: 400,
  param: "colour",
};

/** Field rules of the key settings (create and PATCH). */
export const BAD_SETTINGS: BadInput[] = [
  UNKNOWN_FIELD,
  { name: "name of the wrong type", body: { name: 7 }, status: 400, param: "name", message: "name must be a string" },
  { name: "name null", body: { name: null }, status: 400, param: "name" },
  { name: "an empty name", body: { name: "" }, status: 400, param: "name", message: "name must not be empty" },
  { name: "a blank name", body: { name: "   " }, status: 400, param: "name" },
  { name: "a 65-character name", body: { name: "n".repeat(65) }, status: 400, param: "name", message: /at most 64/ },
  { name: "a name with a line break", body: { name: "a\nb" }, status: 400, param: "name" },
  {
    name: "a name with a zero-width space (looks like another name)",
    body: { name: "main\u200B" },
    status: 400,
    param: "name",
    message: "name must not contain invisible or direction-changing characters",
  },
  { name: "a name with a right-to-left override", body: { name: "\u202Eniam" }, status: 400, param: "name" },
  {
    name: "a name with a variation selector (looks like another name)",
    body: { name: "main\uFE0F" },
    status: 400,
    param: "name",
    message: "name must not contain invisible or direction-changing characters",
  },
  { name: "a name of a Hangul filler (shows as blank)", body: { name: "\u3164" }, status: 400, param: "name" },
  {
    name: "a name of a blank braille cell",
    body: { name: "\u2800" },
    status: 400,
    param: "name",
    message: "name must contain a visible character",
  },
  {
    name: "a name that begins with a combining mark",
    body: { name: "\u0301main" },
    status: 400,
    param: "name",
    message: "name must not begin with a combining mark",
  },
  {
    name: "a name with a lone surrogate",
    body: { name: "key\ud800" },
    status: 400,
    param: "name",
    message: "name is not valid Unicode",
  },
  {
    name: "intensity outside the enum",
    body: { intensity: "max" },
    status: 400,
    param: "intensity",
    message: /lite, full, ultra/,
  },
  { name: "intensity of the wrong case", body: { intensity: "FULL" }, status: 400, param: "intensity" },
  { name: "intensity of the wrong type", body: { intensity: 2 }, status: 400, param: "intensity" },
  {
    name: "auto_compress_input as a string",
    body: { auto_compress_input: "true" },
    status: 400,
    param: "auto_compress_input",
  },
  {
    name: "smart_detect_enabled as a number",
    body: { smart_detect_enabled: 1 },
    status: 400,
    param: "smart_detect_enabled",
  },
  { name: "context_compress null", body: { context_compress: null }, status: 400, param: "context_compress" },
  {
    name: "context_compress_level outside the enum",
    body: { context_compress_level: "extreme" },
    status: 400,
    param: "context_compress_level",
    message: /conservative, standard, aggressive/,
  },
  { name: "one good and one bad field", body: { name: "fine", intensity: "nope" }, status: 400, param: "intensity" },
];

export function itRejectsBadInput(
  harness: () => Harness,
  request: () => { method: string; path: string; token?: string },
  cases: BadInput[],
): void {
  for (const c of cases) {
    it(`answers ${c.status} to ${c.name}, changing nothing`, async () => {
      const h = harness();
      const { method, path, token } = request();
      const before = await snapshot(h);
      const raw = c.raw ?? JSON.stringify(c.body);
      const res = await api<ErrorBody>(h, method, path, {
        ...(token ? { token } : {}),
        raw,
        headers: {
          "content-type": c.contentType ?? "application/json",
          ...(c.contentEncoding ? { "content-encoding": c.contentEncoding } : {}),
        },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(c.status);
      expect(res.body.error.type).to.equal("invalid_request_error");
      if (c.param !== undefined) expect(res.body.error.param).to.equal(c.param);
      if (c.param !== undefined && c.status === 400) expect(res.body.error.message).to.include(c.param);
      if (typeof c.message === "string") expect(res.body.error.message).to.equal(c.message);
      if (c.message instanceof RegExp) expect(res.body.error.message).to.match(c.message);
      expect(res.headers.get("x-request-id")).to.be.a("string");
      expect(await snapshot(h)).to.equal(before);
    });
  }
}
