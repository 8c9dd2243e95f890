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
 * - A file read once is kept in memory (the bytes never change while the
 *   process runs); a missing file is not remembered, so a dashboard built
 *   while the server runs is found on the next request.
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

/**
 * The URL of asset `name` under `root` (a directory URL ending in `/`).
 * Pure: it reads nothing.
 * @returns `undefined` when `name` is not a plain relative path of safe
 *   segments (see the module's invariants) or has no served content type.
 */
export function assetUrl(root: URL, name: string): URL | undefined {
  if (contentTypeOf(name) === undefined) return undefined;
  const segments = name.split("/");
  if (!segments.every((s) => SEGMENT.test(s) && s !== "." && s !== "..")) return undefined;
  const url = new URL(name, root);
  return url.href.startsWith(root.href) ? url : undefined;
}

/** One asset: its bytes and content type. */
export interface DashboardAsset {
  /** The file's bytes. */
  readonly body: Uint8Array;
  /** Its `Content-Type`. */
  readonly contentType: string;
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
    const asset = { body, contentType: contentTypeOf(name)! };
    this.#cache.set(name, asset);
    return asset;
  }
}

/** A file path (relative to the working directory) or URL text as a URL. */
function directoryUrl(path: string): URL {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(path)) return new URL(path);
  return pathToFileURL(path);
}

/** The bytes at `url`, or `undefined` when there is no such file. */
async function read(url: URL): Promise<Uint8Array | undefined> {
  let res: Response;
  try {
    res = await fetch(url);
  } catch (error) {
    // fetch on a missing `file:` URL rejects with a TypeError wrapping NotFound.
    if (error instanceof TypeError && /not ?found|No such file|os error 2/i.test(String(error))) {
      return undefined;
    }
    throw new Error(`Cannot read dashboard asset ${url.href}: ${error}`, { cause: error });
  }
  if (res.status === 404) {
    await res.body?.cancel();
    return undefined;
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`Cannot read dashboard asset ${url.href}: HTTP ${res.status}`);
  }
  return new Uint8Array(await res.arrayBuffer());
}
