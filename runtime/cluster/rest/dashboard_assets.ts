/**
 * The web dashboard's static files (Flink's web UI, served by its
 * `WebMonitorEndpoint` beside the REST API): `GET /` answers
 * `ui/dist/index.html`, `GET /ui/<file>` answers `ui/dist/<file>`. The
 * files are built by `deno task ui:build` and committed; nothing is built
 * at run time.
 *
 * The files are read with `fetch` on URLs relative to this module's URL,
 * so the dashboard is served whether Weir was loaded from `file:` or
 * `http(s):` URLs.
 *
 * ## Invariants
 *
 * - Only names under the asset root are read: a name is a `/`-separated
 *   path of segments of `[A-Za-z0-9._-]`, none `.`, `..` or starting with
 *   `.`; anything else is answered as missing (404), never read.
 * - Only files of a known content type ({@linkcode contentTypeOf}) are served.
 * - Names longer than {@linkcode MAX_ASSET_NAME} characters or with a
 *   segment past 255 are refused; a name the file system cannot open as a
 *   file (through a file, a directory, too long) is missing, not an error.
 * - A file read once is kept in memory (the bytes never change while the
 *   process runs) with its strong `ETag` (the first 128 bits of its SHA-256,
 *   as hex), so a browser revalidating (`Cache-Control: no-cache`) gets a
 *   `304` ({@linkcode ifNoneMatchHits}); a missing file is not remembered,
 *   so a dashboard built while the server runs is found on the next request.
 *
 * @example
 * ```ts
 * import { assetUrl, contentTypeOf } from "./dashboard_assets.ts";
 * import assert from "node:assert/strict";
 *
 * const root = new URL("file:///weir/ui/dist/");
 * assert.equal(assetUrl(root, "app.js")?.href, "file:///weir/ui/dist/app.js");
 * assert.equal(assetUrl(root, "../deno.json"), undefined);
 * assert.equal(contentTypeOf("app.css"), "text/css; charset=utf-8");
 * ```
 *
 * @module
 */

import { pathToFileURL } from "node:url";

/** Where the built dashboard lives: `ui/dist/` of the repository. */
export const DEFAULT_DASHBOARD_ROOT: URL = new URL("../../../ui/dist/", import.meta.url);

/** The content type of each extension served (others are not served). */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  mjs: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  map: "application/json; charset=utf-8",
  json: "application/json; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  ico: "image/x-icon",
  woff2: "font/woff2",
};

/**
 * The content type of asset `name`, by its extension (html, js, mjs, css,
 * map, json, svg, png, ico, woff2).
 * @returns `undefined` for any other extension (not served).
 */
export function contentTypeOf(name: string): string | undefined {
  const dot = name.lastIndexOf(".");
  if (dot < 0) return undefined;
  return CONTENT_TYPES[name.slice(dot + 1).toLowerCase()];
}

const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/** The longest name served (characters); longer ones are refused, never read. */
export const MAX_ASSET_NAME = 1024;

/** The longest segment of a name served (Linux's `NAME_MAX`). */
const MAX_SEGMENT = 255;

/**
 * The URL of asset `name` under `root` (a directory URL ending in `/`).
 * Pure: it reads nothing.
 * @returns `undefined` when `name` is not a plain relative path of safe
 *   segments (see the module's invariants) or has no served content type.
 */
export function assetUrl(root: URL, name: string): URL | undefined {
  if (contentTypeOf(name) === undefined) return undefined;
  if (name.length > MAX_ASSET_NAME) return undefined;
  const segments = name.split("/");
  const safe = (s: string) => s.length <= MAX_SEGMENT && SEGMENT.test(s) && s !== "." && s !== "..";
  if (!segments.every(safe)) return undefined;
  const url = new URL(name, root);
  return url.href.startsWith(root.href) ? url : undefined;
}

/** One asset: its bytes and content type. */
export interface DashboardAsset {
  /** The file's bytes. */
  readonly body: Uint8Array;
  /** Its `Content-Type`. */
  readonly contentType: string;
  /** Its strong entity tag, quoted: `"<32 hex digits>"` (SHA-256 of the bytes, first 128 bits). */
  readonly etag: string;
}

/**
 * Whether an `If-None-Match` header value names entity tag `etag` (RFC 9110
 * §13.1.2: `*`, or a comma-separated list compared weakly, so `W/"x"`
 * matches `"x"`). Pure.
 * @param header the header's value; `null`/`undefined` when absent (never a hit).
 * @param etag a quoted strong tag, as {@linkcode DashboardAsset.etag}.
 */
export function ifNoneMatchHits(header: string | null | undefined, etag: string): boolean {
  if (header === null || header === undefined) return false;
  const trimmed = header.trim();
  if (trimmed === "*") return true;
  return trimmed.split(",").some((t) => t.trim().replace(/^W\//, "") === etag);
}

/** The dashboard's files under one root, read on first use and then kept (see the module docs). */
export class DashboardAssets {
  readonly #root: URL;
  readonly #cache = new Map<string, DashboardAsset>();

  /**
   * Serves the files under `root`.
   * @param root the directory of the built dashboard, as a URL or a file
   *   path; default {@linkcode DEFAULT_DASHBOARD_ROOT}. A trailing `/` is added when missing.
   */
  constructor(root: URL | string = DEFAULT_DASHBOARD_ROOT) {
    const url = typeof root === "string" ? directoryUrl(root) : new URL(root.href);
    if (!url.pathname.endsWith("/")) url.pathname += "/";
    this.#root = url;
  }

  /** The root directory's URL (ends with `/`). */
  get root(): URL {
    return new URL(this.#root.href);
  }

  /**
   * The asset `name` (e.g. `index.html`, `app.js`, `icons/logo.svg`).
   * @returns `undefined` when the name is refused (see {@linkcode assetUrl})
   *   or the file does not exist.
   * @throws {Error} (rejects) when the file exists but cannot be read (e.g.
   *   no read permission), naming its URL.
   */
  async get(name: string): Promise<DashboardAsset | undefined> {
    const cached = this.#cache.get(name);
    if (cached !== undefined) return cached;
    const url = assetUrl(this.#root, name);
    if (url === undefined) return undefined;
    const body = await read(url);
    if (body === undefined) return undefined;
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", body));
    const hex = Array.from(digest.subarray(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
    const asset = { body, contentType: contentTypeOf(name)!, etag: `"${hex}"` };
    this.#cache.set(name, asset);
    return asset;
  }
}

/** A file path (relative to the working directory) or URL text as a URL. */
function directoryUrl(path: string): URL {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(path)) return new URL(path);
  return pathToFileURL(path);
}

/**
 * Whether `error` (from `fetch` on a `file:` URL or reading its body) says
 * the URL is no file: missing (os error 2), through a file (20), a
 * directory (21, raised when the body is read), too long (36).
 */
function isNoFile(error: unknown): boolean {
  return error instanceof TypeError &&
    /not ?found|No such file|Not a directory|Is a directory|too long|os error (2|20|21|36)\)/i
      .test(String(error));
}

/** The bytes at `url`, or `undefined` when there is no such file. */
async function read(url: URL): Promise<Uint8Array<ArrayBuffer> | undefined> {
  try {
    const res = await fetch(url);
    if (res.status === 404) {
      await res.body?.cancel();
      return undefined;
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`Cannot read dashboard asset ${url.href}: HTTP ${res.status}`);
    }
    return new Uint8Array(await res.arrayBuffer());
  } catch (error) {
    if (isNoFile(error)) return undefined;
    if (error instanceof Error && error.message.startsWith("Cannot read dashboard asset")) {
      throw error;
    }
    throw new Error(`Cannot read dashboard asset ${url.href}: ${error}`, { cause: error });
  }
}
